//! Keyspace notifications: Redis's `notify-keyspace-events`.
//!
//! A command that changes a key calls [`KeyspaceEvents::notify`] with the
//! event's class and name, as Redis's `notifyKeyspaceEvent`; when the
//! class is enabled, the event is published on
//! `__keyspace@0__:<key>` (message: the event) and
//! `__keyevent@0__:<event>` (message: the key), through the ordinary
//! pub/sub registry, so subscribers receive it like any message. With
//! notifications off (the default) a call is one relaxed atomic load.
//!
//! Expired keys are reported by the engine's active and lazy expiry
//! ([`tiercache_engine::ExpiryListener`]); see `docs/redis-compat.md` for
//! what is not reported (evictions, and keys that expire after leaving the
//! memory tier).
//!
//! Not here: the events themselves, which each command file raises where
//! Redis raises them.

use crate::pubsub::PubSub;
use std::sync::atomic::{AtomicU32, Ordering};

/// Notification classes: Redis's `NOTIFY_*` bits (`server.h`).
pub mod class {
    /// `K`: publish on `__keyspace@<db>__:<key>`.
    pub const KEYSPACE: u32 = 1 << 0;
    /// `E`: publish on `__keyevent@<db>__:<event>`.
    pub const KEYEVENT: u32 = 1 << 1;
    /// `g`: generic commands (`DEL`, `EXPIRE`, `RENAME`...).
    pub const GENERIC: u32 = 1 << 2;
    /// `$`: string commands.
    pub const STRING: u32 = 1 << 3;
    /// `l`: list commands.
    pub const LIST: u32 = 1 << 4;
    /// `s`: set commands.
    pub const SET: u32 = 1 << 5;
    /// `h`: hash commands.
    pub const HASH: u32 = 1 << 6;
    /// `z`: sorted set commands.
    pub const ZSET: u32 = 1 << 7;
    /// `x`: a key expired.
    pub const EXPIRED: u32 = 1 << 8;
    /// `e`: a key was evicted.
    pub const EVICTED: u32 = 1 << 9;
    /// `t`: stream commands.
    pub const STREAM: u32 = 1 << 10;
    /// `m`: a read found no key (not part of `A`).
    pub const KEY_MISS: u32 = 1 << 11;
    /// `d`: module events (no modules here; accepted and kept).
    pub const MODULE: u32 = 1 << 13;
    /// `n`: a key was created (not part of `A`).
    pub const NEW: u32 = 1 << 14;
    /// `A`: every class but `m` and `n`.
    pub const ALL: u32 =
        GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;
}

/// The classes enabled (`CONFIG SET notify-keyspace-events`).
#[derive(Debug, Default)]
pub struct KeyspaceEvents {
    flags: AtomicU32,
}

impl KeyspaceEvents {
    /// The enabled classes.
    #[inline]
    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }

    /// Replaces the enabled classes.
    pub fn set_flags(&self, flags: u32) {
        self.flags.store(flags, Ordering::Relaxed);
    }

    /// Whether an event of `class` would be published: the class is on,
    /// and so is at least one of `K` and `E`.
    #[inline]
    pub fn wants(&self, class: u32) -> bool {
        let flags = self.flags();
        flags & class != 0 && flags & (class::KEYSPACE | class::KEYEVENT) != 0
    }

    /// Publishes `event` on `key` through `pubsub` if `class` is enabled.
    #[inline]
    pub fn notify(&self, pubsub: &PubSub, class: u32, event: &str, key: &[u8]) {
        if self.wants(class) {
            self.publish(pubsub, event, key);
        }
    }

    #[cold]
    fn publish(&self, pubsub: &PubSub, event: &str, key: &[u8]) {
        let flags = self.flags();
        // This server has one database: 0.
        if flags & class::KEYSPACE != 0 {
            let mut channel = Vec::with_capacity(15 + key.len());
            channel.extend_from_slice(b"__keyspace@0__:");
            channel.extend_from_slice(key);
            pubsub.publish(&channel, event.as_bytes(), false);
        }
        if flags & class::KEYEVENT != 0 {
            let mut channel = Vec::with_capacity(15 + event.len());
            channel.extend_from_slice(b"__keyevent@0__:");
            channel.extend_from_slice(event.as_bytes());
            pubsub.publish(&channel, key, false);
        }
    }
}

/// Redis's `keyspaceEventsStringToFlags`: `None` for a character that
/// names no class.
///
/// ```
/// use tiercache_server::notify::{parse_flags, class};
/// assert_eq!(parse_flags("KEl"), Some(class::KEYSPACE | class::KEYEVENT | class::LIST));
/// assert_eq!(parse_flags("KQ"), None);
/// ```
pub fn parse_flags(text: &str) -> Option<u32> {
    text.chars().try_fold(0, |flags, c| {
        let bit = match c {
            'A' => class::ALL,
            'g' => class::GENERIC,
            '$' => class::STRING,
            'l' => class::LIST,
            's' => class::SET,
            'h' => class::HASH,
            'z' => class::ZSET,
            'x' => class::EXPIRED,
            'e' => class::EVICTED,
            'K' => class::KEYSPACE,
            'E' => class::KEYEVENT,
            't' => class::STREAM,
            'm' => class::KEY_MISS,
            'd' => class::MODULE,
            'n' => class::NEW,
            _ => return None,
        };
        Some(flags | bit)
    })
}

/// Redis's `keyspaceEventsFlagsToString`: `A` when every class of it is
/// on, else the classes one by one; then `K`, `E`, `m`.
///
/// ```
/// use tiercache_server::notify::{format_flags, parse_flags};
/// assert_eq!(format_flags(parse_flags("KA").unwrap()), "AK");
/// assert_eq!(format_flags(parse_flags("gKE").unwrap()), "gKE");
/// ```
pub fn format_flags(flags: u32) -> String {
    let mut s = String::new();
    if flags & class::ALL == class::ALL {
        s.push('A');
    } else {
        for (bit, c) in [
            (class::GENERIC, 'g'),
            (class::STRING, '$'),
            (class::LIST, 'l'),
            (class::SET, 's'),
            (class::HASH, 'h'),
            (class::ZSET, 'z'),
            (class::EXPIRED, 'x'),
            (class::EVICTED, 'e'),
            (class::STREAM, 't'),
            (class::MODULE, 'd'),
            (class::NEW, 'n'),
        ] {
            if flags & bit != 0 {
                s.push(c);
            }
        }
    }
    for (bit, c) in [
        (class::KEYSPACE, 'K'),
        (class::KEYEVENT, 'E'),
        (class::KEY_MISS, 'm'),
    ] {
        if flags & bit != 0 {
            s.push(c);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_round_trip_as_redis_prints_them() {
        for (set, shown) in [
            ("", ""),
            ("gKE", "gKE"),
            ("$lshzxeKE", "$lshzxeKE"),
            ("KA", "AK"),
            ("EA", "AE"),
            ("AKEmn", "AKEm"),
            ("nE", "nE"),
            ("tdx", "xtd"),
        ] {
            assert_eq!(format_flags(parse_flags(set).unwrap()), shown, "{set}");
        }
        assert_eq!(parse_flags("KEy"), None);
        // `A` alone does not include `n` or `m`; both print beside it.
        assert_eq!(
            parse_flags("A").unwrap() & (class::NEW | class::KEY_MISS),
            0
        );
    }

    #[test]
    fn events_need_a_class_and_a_channel_kind() {
        let events = KeyspaceEvents::default();
        assert!(!events.wants(class::STRING));
        events.set_flags(parse_flags("$").unwrap());
        assert!(!events.wants(class::STRING), "neither K nor E");
        events.set_flags(parse_flags("K$").unwrap());
        assert!(events.wants(class::STRING));
        assert!(!events.wants(class::LIST));
    }
}
