//! The primary's side of Redis replication: the connections that asked
//! for the replication stream (`SYNC`, `PSYNC`) and the stream itself.
//!
//! A replica gets a snapshot of the data as an RDB file (`rdb::file`),
//! then every write that changed something, in the form Redis 7.0
//! propagates it: relative expiries as absolute ones (`SET .. PXAT`,
//! `PEXPIREAT`, `RESTORE .. ABSTTL`), `GETDEL` as `DEL`, `INCRBYFLOAT` as
//! `SET .. KEEPTTL`, a transaction or script as `MULTI` .. `EXEC` around
//! the writes it made. A real Redis replica (`REPLICAOF`) follows it, and
//! so does Redis's test harness (`attach_to_replication_stream`).
//!
//! Ordering: while a replica is attached, each write command holds
//! [`Replicas::order`] from before it runs until its propagated form is
//! posted, so two connections writing the same key on two threads are fed
//! in the order they wrote. Transactions and scripts run alone (the
//! engine's gate) and post their block at the end. With no replica, a
//! command pays one atomic load.
//!
//! Keys the engine's active expiry removes reach replicas as `DEL`s
//! ([`Replicas::feed_expired`]), as Redis's expiry propagates them: a
//! replica hides an expired key from reads but frees it only then.
//!
//! Writes made through the memcached protocol are fed as the state they
//! left (`memcache/replicate.rs`): the two listeners share one `Replicas`
//! (`ServerConfig::replicas`).
//!
//! Not here: partial resynchronisation (every `PSYNC` is a full one, there
//! is no backlog), acting as a replica (`REPLICAOF host port` is refused),
//! and `DEL`s for keys that expire only in a store or that the lookup of an
//! expired key removes: replicas get absolute expiry times and hide those
//! keys by them.

use crate::pubsub::Mailbox;
use bytes::{Bytes, BytesMut};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// One attached replica.
#[derive(Debug)]
struct Replica {
    client: u64,
    addr: String,
    /// The port it listens on (`REPLCONF listening-port`), 0 if not said.
    port: u16,
    mailbox: Arc<Mailbox>,
    /// The offset it acknowledged last (`REPLCONF ACK`).
    acked: Arc<AtomicU64>,
    /// When it attached or acknowledged last.
    heard: Mutex<Instant>,
    /// Whether its stream has had its `SELECT 0` (before its first write).
    selected: AtomicBool,
}

/// The replicas attached now and the stream they are fed.
#[derive(Debug)]
pub struct Replicas {
    count: AtomicUsize,
    list: Mutex<Vec<Replica>>,
    /// Held by a write command from before it runs until its effect is
    /// posted (see the module doc).
    order: tokio::sync::Mutex<()>,
    /// Bytes of stream produced since start (`master_repl_offset`).
    offset: AtomicU64,
    /// `master_replid`: 40 hex digits, new at each start.
    replid: String,
    /// Whether the periodic `PING` task runs.
    pinging: AtomicBool,
    /// Whether the [`Replicas::feed_expired`] task runs.
    expiring: AtomicBool,
    /// `min-replicas-to-write` (0: off).
    min_to_write: AtomicU32,
    /// `min-replicas-max-lag`, seconds (0: off).
    max_lag: AtomicU32,
    /// Keys active expiry removed, not yet fed as `DEL`s.
    expired: Mutex<Vec<Bytes>>,
    expired_ready: tokio::sync::Notify,
    /// Woken by every acknowledgement (`WAIT` waits on it).
    acks: tokio::sync::Notify,
}

impl Default for Replicas {
    fn default() -> Self {
        Replicas {
            count: AtomicUsize::new(0),
            list: Mutex::new(Vec::new()),
            order: tokio::sync::Mutex::new(()),
            offset: AtomicU64::new(0),
            replid: new_replid(),
            pinging: Default::default(),
            expiring: Default::default(),
            min_to_write: AtomicU32::new(0),
            max_lag: AtomicU32::new(10),
            expired: Mutex::new(Vec::new()),
            expired_ready: tokio::sync::Notify::new(),
            acks: tokio::sync::Notify::new(),
        }
    }
}

/// A random 40-hex-digit replication id, as Redis's `changeReplicationId`.
fn new_replid() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut id = String::with_capacity(40);
    while id.len() < 40 {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        id.push_str(&format!("{:016x}", h.finish()));
    }
    id.truncate(40);
    id
}

/// What `ROLE` and `INFO replication` show of a replica.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplicaInfo {
    /// Its address as seen from here, without the port.
    pub ip: String,
    /// The port it said it listens on.
    pub port: u16,
    /// The offset it acknowledged last.
    pub acked: u64,
}

impl Replicas {
    /// True when at least one replica is attached.
    #[inline]
    pub fn any(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    /// `master_replid`.
    pub fn replid(&self) -> &str {
        &self.replid
    }

    /// `master_repl_offset`: the bytes of stream produced so far.
    pub fn offset(&self) -> u64 {
        self.offset.load(Ordering::Relaxed)
    }

    /// The lock a write command holds while it runs and is fed.
    pub async fn order(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.order.lock().await
    }

    /// Attaches `client`, which already has its snapshot in its output;
    /// its first write comes after a `SELECT 0`, as Redis's does for a
    /// replica that has none selected (a `PING` before needs none).
    /// Returns whether the tasks that run while replicas are attached ([`Replicas::ping_while_attached`],
    /// [`Replicas::feed_expired`]) must be started: each was stopped.
    pub fn attach(
        &self,
        client: u64,
        addr: &str,
        port: u16,
        mailbox: Arc<Mailbox>,
    ) -> (bool, bool) {
        let mut list = self.list.lock().unwrap_or_else(|e| e.into_inner());
        list.retain(|r| r.client != client);
        list.push(Replica {
            client,
            addr: addr.to_owned(),
            port,
            mailbox,
            acked: Arc::new(AtomicU64::new(0)),
            heard: Mutex::new(Instant::now()),
            selected: AtomicBool::new(false),
        });
        self.count.store(list.len(), Ordering::Relaxed);
        (
            !self.pinging.swap(true, Ordering::Relaxed),
            !self.expiring.swap(true, Ordering::Relaxed),
        )
    }

    /// A task that runs while replicas are attached stops, unless one
    /// attached meanwhile (it found the task's flag still set).
    fn may_stop(&self, running: &AtomicBool) -> bool {
        running.store(false, Ordering::Relaxed);
        !self.any() || running.swap(true, Ordering::Relaxed)
    }

    /// Detaches `client` (its connection closed, or `RESET`); true if it
    /// was a replica.
    pub fn detach(&self, client: u64) -> bool {
        let mut list = self.list.lock().unwrap_or_else(|e| e.into_inner());
        let before = list.len();
        list.retain(|r| r.client != client);
        self.count.store(list.len(), Ordering::Relaxed);
        list.len() != before
    }

    /// Whether `client` is an attached replica.
    pub fn is_replica(&self, client: u64) -> bool {
        self.list
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|r| r.client == client)
    }

    /// Records a replica's `REPLCONF ACK offset`.
    pub fn set_ack(&self, client: u64, offset: u64) {
        for r in self.list.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            if r.client == client {
                r.acked.fetch_max(offset, Ordering::Relaxed);
                *r.heard.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
            }
        }
        self.acks.notify_waiters();
    }

    /// Waits until `wanted` replicas acknowledged `offset` or `deadline`
    /// passes (`None`: no deadline); returns how many did. Woken by each
    /// acknowledgement, not polled.
    pub async fn wait_for_acks(
        &self,
        offset: u64,
        wanted: i64,
        deadline: Option<tokio::time::Instant>,
    ) -> i64 {
        loop {
            // Registered before the count is read: an acknowledgement in
            // between still wakes this wait.
            let woken = self.acks.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let acked = self.acked_at_least(offset) as i64;
            if acked >= wanted || deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                return acked;
            }
            match deadline {
                Some(d) => {
                    tokio::select! {
                        _ = woken => {}
                        _ = tokio::time::sleep_until(d) => {}
                    }
                }
                None => woken.await,
            }
        }
    }

    /// The attached replicas.
    pub fn list(&self) -> Vec<ReplicaInfo> {
        self.list
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|r| ReplicaInfo {
                ip: ip_of(&r.addr),
                port: r.port,
                acked: r.acked.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// How many replicas acknowledged `offset` or beyond.
    pub fn acked_at_least(&self, offset: u64) -> usize {
        self.list
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|r| r.acked.load(Ordering::Relaxed) >= offset)
            .count()
    }

    /// `min-replicas-to-write`.
    pub fn set_min_to_write(&self, n: u32) {
        self.min_to_write.store(n, Ordering::Relaxed);
    }

    /// `min-replicas-max-lag`.
    pub fn set_max_lag(&self, seconds: u32) {
        self.max_lag.store(seconds, Ordering::Relaxed);
    }

    /// Whether writes are refused now (Redis's `NOREPLICAS`): with
    /// `min-replicas-to-write` and `min-replicas-max-lag` both set, fewer
    /// replicas than the first were heard from within the second. One
    /// atomic load while it is off.
    #[inline]
    pub fn refuse_writes(&self) -> bool {
        let min = self.min_to_write.load(Ordering::Relaxed);
        min > 0 && self.good_replicas() < min as usize
    }

    #[cold]
    fn good_replicas(&self) -> usize {
        let lag = self.max_lag.load(Ordering::Relaxed);
        if lag == 0 {
            return usize::MAX;
        }
        let lag = std::time::Duration::from_secs(u64::from(lag));
        self.list
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|r| r.heard.lock().unwrap_or_else(|e| e.into_inner()).elapsed() <= lag)
            .count()
    }

    /// Feeds encoded commands (one or several, whole) to every replica.
    pub fn feed(&self, stream: Bytes) {
        self.post(stream, true);
    }

    /// Posts `stream` to every replica, after the `SELECT 0` of one that
    /// has not had it when `selecting` (a write).
    fn post(&self, stream: Bytes, selecting: bool) {
        let list = self.list.lock().unwrap_or_else(|e| e.into_inner());
        self.offset
            .fetch_add(stream.len() as u64, Ordering::Relaxed);
        for r in list.iter() {
            // Read, then set once: the list's lock is held, and a write
            // should not pay an atomic swap per replica.
            if selecting && !r.selected.load(Ordering::Relaxed) {
                r.selected.store(true, Ordering::Relaxed);
                r.mailbox.post_encoded(encode_command(&[b"SELECT", b"0"]));
            }
            r.mailbox.post_encoded(stream.clone());
        }
    }

    /// Keys the engine's active expiry removed (an `ExpiryListener`
    /// call): queued for [`Replicas::feed_expired`].
    pub fn note_expired(&self, keys: &[Bytes]) {
        if self.any() {
            let mut queue = self.expired.lock().unwrap_or_else(|e| e.into_inner());
            queue.extend(keys.iter().cloned());
            self.expired_ready.notify_one();
        }
    }

    /// While replicas are attached, feeds a `DEL` for each key active
    /// expiry removed. Under [`Replicas::order`], so no write runs
    /// meanwhile, and only for a key still absent: a key written again
    /// since it expired was fed that write, which a `DEL` now would undo.
    pub async fn feed_expired(self: Arc<Self>, engine: Arc<tiercache_engine::Engine>) {
        loop {
            let woken = tokio::time::timeout(
                std::time::Duration::from_secs(1),
                self.expired_ready.notified(),
            )
            .await;
            if woken.is_err() && !self.any() && self.may_stop(&self.expiring) {
                self.expired
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clear();
                return;
            }
            let keys = std::mem::take(&mut *self.expired.lock().unwrap_or_else(|e| e.into_inner()));
            if keys.is_empty() {
                continue;
            }
            let _order = self.order().await;
            let mut session = engine.session();
            for key in keys {
                // A store that fails to answer: the replica keeps hiding
                // the key by its expiry time.
                if let Ok(None) = session.get(&key).await {
                    self.feed_command(&[b"DEL", &key]);
                }
            }
        }
    }

    /// Feeds one command.
    pub fn feed_command(&self, argv: &[&[u8]]) {
        self.feed(encode_command(argv));
    }

    /// Feeds a command that is not a write (`PING`, `REPLCONF GETACK`):
    /// Redis feeds those without a `SELECT`.
    pub fn feed_control(&self, argv: &[&[u8]]) {
        self.post(encode_command(argv), false);
    }

    /// Every `period`, while replicas are attached, a `PING` in the
    /// stream, as Redis's `repl-ping-replica-period` (a replica hearing
    /// nothing for `repl-timeout` disconnects). Ends when the last replica
    /// detaches.
    pub async fn ping_while_attached(self: Arc<Self>, period: std::time::Duration)
    where
        Self: Send + Sync,
    {
        loop {
            tokio::time::sleep(period).await;
            if !self.any() && self.may_stop(&self.pinging) {
                return;
            }
            self.feed_control(&[b"PING"]);
        }
    }
}

/// The address without its port (`127.0.0.1:5000` → `127.0.0.1`).
fn ip_of(addr: &str) -> String {
    match addr.rsplit_once(':') {
        Some((ip, _)) => ip.trim_start_matches('[').trim_end_matches(']').to_owned(),
        None => addr.to_owned(),
    }
}

/// A command as a RESP array of bulk strings.
///
/// ```
/// use tiercache_server::replication::encode_command;
/// assert_eq!(&encode_command(&[b"DEL", b"k"])[..], b"*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n");
/// ```
pub fn encode_command(argv: &[&[u8]]) -> Bytes {
    let mut out = BytesMut::with_capacity(16 + argv.iter().map(|a| a.len() + 16).sum::<usize>());
    append_command(&mut out, argv);
    out.freeze()
}

/// Appends `argv` as a RESP array of bulk strings: on the wire a
/// request is what a reply of that shape is (also `MIGRATE`'s requests).
pub fn append_command(out: &mut BytesMut, argv: &[&[u8]]) {
    crate::resp::reply::array(out, argv.len());
    for a in argv {
        crate::resp::reply::bulk(out, a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feed_reaches_every_replica_after_its_select_and_counts_the_offset() {
        let r = Replicas::default();
        assert!(!r.any());
        let a = Arc::new(Mailbox::new(1 << 20));
        let b = Arc::new(Mailbox::new(1 << 20));
        assert_eq!(
            r.attach(1, "127.0.0.1:4000", 6380, a.clone()),
            (true, true),
            "first attach starts the tasks"
        );
        assert_eq!(r.attach(2, "[::1]:4001", 0, b.clone()), (false, false));
        r.feed_command(&[b"SET", b"k", b"v"]);
        let set = encode_command(&[b"SET", b"k", b"v"]);
        assert_eq!(r.offset(), set.len() as u64);
        let mut out = BytesMut::new();
        a.drain_into(&mut out, crate::resp::reply::Proto::Resp2)
            .unwrap();
        let mut want = BytesMut::new();
        append_command(&mut want, &[b"SELECT", b"0"]);
        want.extend_from_slice(&set);
        assert_eq!(out, want);
        assert_eq!(r.list()[1].ip, "::1");
        r.set_ack(1, 7);
        assert_eq!(r.acked_at_least(7), 1);
        assert!(r.detach(2));
        assert!(!r.detach(2));
        assert!(r.any() && r.is_replica(1) && !r.is_replica(2));
        assert!(!r.refuse_writes(), "off by default");
        r.set_min_to_write(2);
        assert!(r.refuse_writes(), "one replica for two");
        r.set_min_to_write(1);
        assert!(!r.refuse_writes());
        r.set_max_lag(0);
        r.set_min_to_write(5);
        assert!(
            !r.refuse_writes(),
            "a lag of 0 turns the check off, as in Redis"
        );
        assert_eq!(new_replid().len(), 40);
    }
}
