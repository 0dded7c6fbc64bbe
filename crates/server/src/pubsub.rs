//! Pub/sub: who listens to which channel, pattern or shard channel, and
//! the mailbox through which each subscribed connection gets its messages.
//!
//! `PUBLISH` runs on the publisher's connection; the subscribers are other
//! connections, each in its own task, perhaps on another thread. A
//! publish therefore never writes to a socket: it posts the message to
//! each subscriber's [`Mailbox`] (a queue and a wake-up) and counts the
//! receivers. The subscriber's connection drains its mailbox into its
//! output buffer before each command it runs and whenever it is woken
//! while waiting for requests, so messages reach the client in the order
//! they were published.
//!
//! A subscriber that does not read cannot make the server hold messages
//! without bound: a mailbox holding more than its byte limit (Redis's
//! `client-output-buffer-limit pubsub` hard limit, 32 MiB) drops what it
//! holds and is marked overflowed, and the connection closes, as Redis
//! closes a client over its output buffer limit.
//!
//! Not here: keyspace notifications (`notify-keyspace-events`); shard
//! channels behave as ordinary channels in their own name space (there is
//! one shard).

use crate::glob::glob_match;
use crate::resp::{reply, Proto};
use bytes::{Bytes, BytesMut};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, RwLock};

/// The bytes of messages a subscriber may have waiting before it is
/// disconnected: Redis's default hard limit for pub/sub clients.
pub const MAILBOX_LIMIT: usize = 32 << 20;

/// Which name space a subscription lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    /// `SUBSCRIBE`/`PUBLISH` channels.
    Channel,
    /// `PSUBSCRIBE` glob patterns, matched against `PUBLISH` channels.
    Pattern,
    /// `SSUBSCRIBE`/`SPUBLISH` shard channels.
    Shard,
}

impl Space {
    fn index(self) -> usize {
        self as usize
    }

    /// The kind word of a subscribe confirmation (`subscribe`...).
    pub fn subscribe_word(self) -> &'static str {
        match self {
            Space::Channel => "subscribe",
            Space::Pattern => "psubscribe",
            Space::Shard => "ssubscribe",
        }
    }

    /// The kind word of an unsubscribe confirmation.
    pub fn unsubscribe_word(self) -> &'static str {
        match self {
            Space::Channel => "unsubscribe",
            Space::Pattern => "punsubscribe",
            Space::Shard => "sunsubscribe",
        }
    }
}

/// One delivered message.
#[derive(Debug)]
enum Message {
    /// A publish.
    Published {
        /// The pattern that matched (`pmessage`), if any.
        pattern: Option<Bytes>,
        channel: Bytes,
        payload: Bytes,
        shard: bool,
    },
    /// A reply encoded by its sender, the same in every protocol
    /// (`MONITOR`'s status lines).
    Encoded(Bytes),
}

impl Message {
    /// What the message costs against the mailbox limit.
    fn size(&self) -> usize {
        64 + match self {
            Message::Published {
                pattern,
                channel,
                payload,
                ..
            } => pattern.as_ref().map_or(0, Bytes::len) + channel.len() + payload.len(),
            Message::Encoded(bytes) => bytes.len(),
        }
    }

    /// Encodes it as Redis does: an array (RESP2) or a push (RESP3) of
    /// `message channel payload`, `pmessage pattern channel payload` or
    /// `smessage channel payload`.
    fn encode(&self, out: &mut BytesMut, proto: Proto) {
        let (pattern, channel, payload, shard) = match self {
            Message::Published {
                pattern,
                channel,
                payload,
                shard,
            } => (pattern, channel, payload, *shard),
            Message::Encoded(bytes) => return out.extend_from_slice(bytes),
        };
        match pattern {
            Some(pattern) => {
                reply::push(out, 4, proto);
                reply::bulk(out, b"pmessage");
                reply::bulk(out, pattern);
            }
            None => {
                reply::push(out, 3, proto);
                reply::bulk(out, if shard { b"smessage" } else { b"message" });
            }
        }
        reply::bulk(out, channel);
        reply::bulk(out, payload);
    }
}

/// A subscribed connection's incoming messages.
#[derive(Debug)]
pub struct Mailbox {
    queue: Mutex<Queue>,
    wake: tokio::sync::Notify,
    /// Signalled once, when the mailbox overflows: it stops a write to a
    /// client that does not read.
    overflow: tokio::sync::Notify,
    limit: usize,
}

#[derive(Debug, Default)]
struct Queue {
    messages: VecDeque<Message>,
    bytes: usize,
    overflowed: bool,
}

/// The mailbox went over its limit: its connection must close.
#[derive(Debug, PartialEq, Eq)]
pub struct Overflowed;

/// Logs why `client`'s connection closes: its mailbox overflowed.
#[cold]
pub fn log_overflow(client: u64) {
    tracing::warn!(client, "closing subscriber: over its pub/sub output limit");
}

impl Mailbox {
    /// An empty mailbox holding at most `limit` bytes of messages.
    pub fn new(limit: usize) -> Self {
        Mailbox {
            queue: Mutex::default(),
            wake: tokio::sync::Notify::new(),
            overflow: tokio::sync::Notify::new(),
            limit,
        }
    }

    fn post(&self, message: Message) {
        let overflowed = {
            let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            if q.overflowed {
                return;
            }
            let size = message.size();
            if q.bytes + size > self.limit {
                // The connection closes; what it holds will never be read.
                q.overflowed = true;
                q.messages = VecDeque::new();
                q.bytes = 0;
                true
            } else {
                q.bytes += size;
                q.messages.push_back(message);
                false
            }
        };
        if overflowed {
            self.overflow.notify_one();
        }
        self.wake.notify_one();
    }

    /// Waits until the mailbox overflows.
    pub async fn overflowed(&self) {
        self.overflow.notified().await
    }

    /// Posts a reply its sender encoded (`MONITOR`).
    pub fn post_encoded(&self, reply: Bytes) {
        self.post(Message::Encoded(reply));
    }

    /// Waits until a message is posted (returns at once if one was posted
    /// since the last wait).
    pub async fn posted(&self) {
        self.wake.notified().await
    }

    /// Encodes every waiting message into `out`; `Err` when the mailbox
    /// overflowed.
    pub fn drain_into(&self, out: &mut BytesMut, proto: Proto) -> Result<(), Overflowed> {
        let messages = {
            let mut q = self.queue.lock().unwrap_or_else(|e| e.into_inner());
            if q.overflowed {
                return Err(Overflowed);
            }
            q.bytes = 0;
            std::mem::take(&mut q.messages)
        };
        for m in &messages {
            m.encode(out, proto);
        }
        Ok(())
    }
}

/// One connection's subscriptions (their messages go to the
/// connection's mailbox).
#[derive(Debug, Default)]
pub struct Subscriptions {
    names: [HashSet<Bytes>; 3],
}

impl Subscriptions {
    /// Subscriptions in `space`.
    pub fn count(&self, space: Space) -> usize {
        self.names[space.index()].len()
    }

    /// The count a (un)subscribe confirmation reports, as Redis 7.0:
    /// channels and patterns together, shard channels on their own.
    pub fn reported_count(&self, space: Space) -> usize {
        match space {
            Space::Shard => self.count(Space::Shard),
            _ => self.count(Space::Channel) + self.count(Space::Pattern),
        }
    }

    /// Subscriptions in every space.
    pub fn total(&self) -> usize {
        self.names.iter().map(HashSet::len).sum()
    }

    /// The names subscribed to in `space`.
    pub fn names(&self, space: Space) -> Vec<Bytes> {
        self.names[space.index()].iter().cloned().collect()
    }
}

/// A subscriber as the registry holds it.
#[derive(Clone, Debug)]
struct Subscriber {
    client: u64,
    mailbox: Arc<Mailbox>,
}

/// Every subscription of the server, by name.
#[derive(Debug, Default)]
pub struct PubSub {
    spaces: RwLock<[HashMap<Bytes, Vec<Subscriber>>; 3]>,
}

impl PubSub {
    /// Subscribes `client` (whose subscriptions are `subs`) to `name` in
    /// `space`; false when it already was.
    pub fn subscribe(
        &self,
        client: u64,
        mailbox: &Arc<Mailbox>,
        subs: &mut Subscriptions,
        space: Space,
        name: &[u8],
    ) -> bool {
        if subs.names[space.index()].contains(name) {
            return false;
        }
        let name = Bytes::copy_from_slice(name);
        subs.names[space.index()].insert(name.clone());
        let mut spaces = self.spaces.write().unwrap_or_else(|e| e.into_inner());
        spaces[space.index()]
            .entry(name)
            .or_default()
            .push(Subscriber {
                client,
                mailbox: mailbox.clone(),
            });
        true
    }

    /// Unsubscribes `client` from `name` in `space`; false when it was not
    /// subscribed.
    pub fn unsubscribe(
        &self,
        client: u64,
        subs: &mut Subscriptions,
        space: Space,
        name: &[u8],
    ) -> bool {
        if !subs.names[space.index()].remove(name) {
            return false;
        }
        let mut spaces = self.spaces.write().unwrap_or_else(|e| e.into_inner());
        let map = &mut spaces[space.index()];
        if let Some(list) = map.get_mut(name) {
            list.retain(|s| s.client != client);
            if list.is_empty() {
                // No empty entries: `PUBSUB CHANNELS` lists live channels
                // only, and abandoned names cost nothing.
                map.remove(name);
            }
        }
        true
    }

    /// Unsubscribes `client` from everything (its connection closed, or
    /// `RESET`).
    pub fn unsubscribe_all(&self, client: u64, subs: &mut Subscriptions) {
        for space in [Space::Channel, Space::Pattern, Space::Shard] {
            for name in subs.names(space) {
                self.unsubscribe(client, subs, space, &name);
            }
        }
    }

    /// Posts `payload` to every subscriber of `channel` (and, unless
    /// `shard`, of every pattern matching it); the number of receivers.
    pub fn publish(&self, channel: &[u8], payload: &[u8], shard: bool) -> usize {
        let spaces = self.spaces.read().unwrap_or_else(|e| e.into_inner());
        let space = if shard { Space::Shard } else { Space::Channel };
        let direct = spaces[space.index()].get(channel);
        let patterns = &spaces[Space::Pattern.index()];
        if direct.is_none() && (shard || patterns.is_empty()) {
            return 0;
        }
        // One copy of the bytes, shared by every receiver.
        let channel = Bytes::copy_from_slice(channel);
        let payload = Bytes::copy_from_slice(payload);
        let mut receivers = 0;
        for s in direct.into_iter().flatten() {
            s.mailbox.post(Message::Published {
                pattern: None,
                channel: channel.clone(),
                payload: payload.clone(),
                shard,
            });
            receivers += 1;
        }
        if shard {
            return receivers;
        }
        for (pattern, subscribers) in patterns {
            if !glob_match(pattern, &channel, false) {
                continue;
            }
            for s in subscribers {
                s.mailbox.post(Message::Published {
                    pattern: Some(pattern.clone()),
                    channel: channel.clone(),
                    payload: payload.clone(),
                    shard: false,
                });
                receivers += 1;
            }
        }
        receivers
    }

    /// The names with subscribers in `space` that match `pattern` (all
    /// without one): `PUBSUB CHANNELS`, `SHARDCHANNELS`.
    pub fn active(&self, space: Space, pattern: Option<&[u8]>) -> Vec<Bytes> {
        let spaces = self.spaces.read().unwrap_or_else(|e| e.into_inner());
        spaces[space.index()]
            .keys()
            .filter(|name| pattern.map_or(true, |p| glob_match(p, name, false)))
            .cloned()
            .collect()
    }

    /// Subscribers of `name` in `space` (`PUBSUB NUMSUB`).
    pub fn subscribers(&self, space: Space, name: &[u8]) -> usize {
        let spaces = self.spaces.read().unwrap_or_else(|e| e.into_inner());
        spaces[space.index()].get(name).map_or(0, Vec::len)
    }

    /// Names with at least one subscriber in `space` (`PUBSUB NUMPAT`,
    /// `INFO`'s `pubsub_channels`).
    pub fn len(&self, space: Space) -> usize {
        self.spaces.read().unwrap_or_else(|e| e.into_inner())[space.index()].len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection's side: its subscriptions and mailbox.
    struct Conn {
        id: u64,
        mailbox: Arc<Mailbox>,
        subs: Subscriptions,
    }

    impl Conn {
        fn new(id: u64, limit: usize) -> Self {
            Conn {
                id,
                mailbox: Arc::new(Mailbox::new(limit)),
                subs: Subscriptions::default(),
            }
        }

        fn subscribe(&mut self, ps: &PubSub, space: Space, name: &[u8]) -> bool {
            ps.subscribe(self.id, &self.mailbox, &mut self.subs, space, name)
        }
    }

    fn drained(c: &Conn) -> Vec<u8> {
        let mut out = BytesMut::new();
        c.mailbox.drain_into(&mut out, Proto::Resp2).unwrap();
        out.to_vec()
    }

    #[test]
    fn publish_reaches_channel_and_pattern_subscribers_once_each() {
        let ps = PubSub::default();
        let mut a = Conn::new(1, MAILBOX_LIMIT);
        let mut b = Conn::new(2, MAILBOX_LIMIT);
        assert!(a.subscribe(&ps, Space::Channel, b"news"));
        assert!(!a.subscribe(&ps, Space::Channel, b"news"));
        assert!(a.subscribe(&ps, Space::Pattern, b"n*"));
        assert!(b.subscribe(&ps, Space::Shard, b"news"));
        assert_eq!(a.subs.reported_count(Space::Pattern), 2);
        assert_eq!(b.subs.reported_count(Space::Shard), 1);
        assert_eq!(ps.publish(b"news", b"hi", false), 2);
        assert_eq!(
            drained(&a),
            b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$2\r\nhi\r\n*4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$2\r\nhi\r\n"
        );
        assert!(drained(&b).is_empty(), "shard channels are another space");
        assert_eq!(ps.publish(b"news", b"s", true), 1);
        assert_eq!(
            drained(&b),
            b"*3\r\n$8\r\nsmessage\r\n$4\r\nnews\r\n$1\r\ns\r\n"
        );
        assert_eq!(ps.publish(b"other", b"x", false), 0);
    }

    #[test]
    fn unsubscribing_removes_empty_names() {
        let ps = PubSub::default();
        let mut a = Conn::new(1, MAILBOX_LIMIT);
        a.subscribe(&ps, Space::Channel, b"c1");
        a.subscribe(&ps, Space::Channel, b"c2");
        a.subscribe(&ps, Space::Pattern, b"p*");
        assert_eq!(ps.len(Space::Channel), 2);
        assert!(ps.unsubscribe(a.id, &mut a.subs, Space::Channel, b"c1"));
        assert!(!ps.unsubscribe(a.id, &mut a.subs, Space::Channel, b"c1"));
        assert_eq!(
            ps.active(Space::Channel, None),
            vec![Bytes::from_static(b"c2")]
        );
        ps.unsubscribe_all(a.id, &mut a.subs);
        assert_eq!(a.subs.total(), 0);
        assert_eq!(ps.len(Space::Channel) + ps.len(Space::Pattern), 0);
        assert_eq!(ps.publish(b"c2", b"x", false), 0);
    }

    #[test]
    fn a_mailbox_over_its_limit_overflows_and_frees_what_it_held() {
        let ps = PubSub::default();
        let mut a = Conn::new(1, 2000);
        a.subscribe(&ps, Space::Channel, b"c");
        for _ in 0..5 {
            ps.publish(b"c", &[b'x'; 150], false);
        }
        assert!(drained(&a).len() > 750, "under the limit, everything waits");
        for _ in 0..10 {
            ps.publish(b"c", &[b'x'; 150], false);
        }
        let mut out = BytesMut::new();
        assert_eq!(
            a.mailbox.drain_into(&mut out, Proto::Resp2),
            Err(Overflowed)
        );
        assert!(out.is_empty());
        assert_eq!(a.mailbox.queue.lock().unwrap().messages.len(), 0);
    }

    #[test]
    fn resp3_messages_are_pushes() {
        let ps = PubSub::default();
        let mut a = Conn::new(1, MAILBOX_LIMIT);
        a.subscribe(&ps, Space::Channel, b"c");
        ps.publish(b"c", b"m", false);
        let mut out = BytesMut::new();
        a.mailbox.drain_into(&mut out, Proto::Resp3).unwrap();
        assert_eq!(&out[..], b">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n");
    }
}
