//! [`RedisStore`]: entries as Redis strings, on one server (TCP or unix
//! socket) or a Redis Cluster.
//!
//! Layout (see [`codec`] for the details and the alternatives weighed):
//!
//! ```text
//! SET <key> <value> [PXAT <expires_at ms>]     flags 0: the value's own bytes
//! SET <key> FF 74 63 01 <flags u32 BE> <value>  flags ≠ 0: an 8-byte envelope
//! SET <key> FF 74 63 02 <flags> <kind u8> <value>  not a string (a hash): 9 bytes
//! ```
//!
//! - Keys are the entry's key, unchanged (binary-safe).
//! - The expiry is the key's own (`PXAT`), so Redis expires entries itself,
//!   and is read back to the millisecond with `PEXPIRETIME` (Redis ≥ 7.0).
//!   An entry already past its expiry is deleted instead of set.
//!
//! Batches, each one round trip per node:
//! - [`get_many`](tiercache_engine::Store::get_many): `MGET k1..kn` plus `PEXPIRETIME` per key,
//!   in one `MULTI`/`EXEC` so value and expiry come from the same write.
//! - [`set_many`](tiercache_engine::Store::set_many), [`delete_many`](tiercache_engine::Store::delete_many),
//!   [`apply`](tiercache_engine::Store::apply): `SET`/`DEL` per key in one `MULTI`/`EXEC`
//!   (atomic on one server).
//! - On a cluster, keys are grouped by hash slot (CRC16, hash tags
//!   honoured) and the slots by master (the slot map from `CLUSTER SLOTS`,
//!   cached): one pipeline per master, holding one `MULTI`/`EXEC` per slot
//!   (a transaction cannot span slots), all masters at once. A batch is
//!   atomic per slot, not as a whole. Slots whose master changed (a
//!   redirect after resharding) are sent again one pipeline per slot through
//!   the `redis` crate's cluster routing, which follows redirects, and the
//!   slot map is refreshed.
//!
//! Listing: Redis keeps no ordered index, so [`scan_keys`](tiercache_engine::Store::scan_keys)
//! walks the whole key space with `SCAN ... MATCH prefix*` (every master of
//! a cluster) and keeps the `limit` smallest keys in range: O(keys with the
//! prefix) per page. [`count`](tiercache_engine::Store::count) is a full `SCAN` as well
//! (exact, where `DBSIZE` would count keys past their expiry that Redis has
//! not reclaimed yet), and [`key_stats`](tiercache_engine::Store::key_stats) adds one
//! pipelined `PEXPIRETIME` per page. [`clear`](tiercache_engine::Store::clear) is `FLUSHDB` on
//! every master: the store owns its database.
//!
//! Connections: `pool_size` multiplexed connections to the server, used
//! round robin; a cluster uses the `redis` crate's cluster connection.
//! Nothing connects at construction (a `buffer` store
//! may start while its primary is down): the first operation does, and a
//! connection that fails with an I/O error is dropped, and a pooled
//! connection found broken is replaced and the batch sent once more (every
//! batch is idempotent), so the first operation after a server restart
//! already succeeds. Every operation has the store's
//! timeout ([`DEFAULT_TIMEOUT`] unless configured): a stopped or unreachable
//! server gives a [`StoreError`] naming the store and the server, never a
//! hang.

pub mod codec;
pub(crate) mod core;

use self::core::{Dialect, RespCore, Target};
use redis::{ConnectionInfo, IntoConnectionInfo};
use std::time::Duration;
use tiercache_engine::StoreError;

/// Operation timeout when none is configured.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);

/// Connections per server when none is configured (as in the config's
/// default `pool_size`).
pub const DEFAULT_POOL_SIZE: usize = 8;

/// A [`Store`](tiercache_engine::Store) on a Redis server or Redis Cluster. See the
/// [module docs](self) for the layout and costs.
///
/// ```no_run
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use tiercache_engine::{Entry, Store};
/// use tiercache_stores::RedisStore;
/// // Nothing connects yet: the first operation does.
/// let store = RedisStore::open("cache", "redis://127.0.0.1:6379/0", 8, None).unwrap();
/// store.set_many(&[("k".into(), Entry::with_flags("v", None, 7))]).await.unwrap();
/// let got = store.get_many(&["k".into()]).await.unwrap();
/// assert_eq!(got[0].as_ref().unwrap().flags, 7);
/// # });
/// ```
pub struct RedisStore {
    core: RespCore,
}

/// Parses a store URL: `redis://[:password@]host[:port][/db]`,
/// `rediss://...` is refused (this build has no TLS), and unix sockets as
/// `unix:/path`, `unix:///path` or `redis+unix:///path` (`?db=N&pass=...`
/// allowed).
pub fn parse_url(url: &str) -> Result<ConnectionInfo, String> {
    let normalised = if let Some(rest) = url.strip_prefix("unix:") {
        if rest.starts_with("//") {
            format!("redis+unix:{rest}")
        } else {
            format!("redis+unix://{rest}")
        }
    } else {
        url.to_string()
    };
    if !normalised.starts_with("redis://") && !normalised.starts_with("redis+unix://") {
        return Err(format!(
            "unsupported URL '{}': expected redis://host:port/db or unix:/path",
            redact(url)
        ));
    }
    normalised
        .as_str()
        .into_connection_info()
        .map_err(|e| format!("bad URL '{}': {e}", redact(url)))
}

/// `url` with any password replaced by `***` (for messages).
pub(crate) fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.find(':') {
                Some(colon) => format!(
                    "{}{}:***{}",
                    &url[..scheme + 3],
                    &userinfo[..colon],
                    &url[at..]
                ),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

impl RedisStore {
    /// A store on the server at `url` (see [`parse_url`]) with `pool_size`
    /// connections. Does not connect.
    pub fn open(
        name: &str,
        url: &str,
        pool_size: usize,
        timeout: Option<Duration>,
    ) -> Result<RedisStore, StoreError> {
        let info = parse_url(url).map_err(|e| StoreError::new(name, e))?;
        Self::build(name, Target::Node(info), pool_size, timeout)
    }

    /// A store on the Redis Cluster reached through `nodes` (`host:port`
    /// seeds; the rest of the cluster is discovered). Does not connect.
    pub fn open_cluster(
        name: &str,
        nodes: &[String],
        timeout: Option<Duration>,
    ) -> Result<RedisStore, StoreError> {
        if nodes.is_empty() {
            return Err(StoreError::new(
                name,
                "a Redis Cluster needs at least one node",
            ));
        }
        let seeds = nodes
            .iter()
            .map(|n| {
                let url = if n.contains("://") {
                    n.clone()
                } else {
                    format!("redis://{n}")
                };
                parse_url(&url).map_err(|e| StoreError::new(name, e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Self::build(name, Target::Cluster(seeds), 1, timeout)
    }

    fn build(
        name: &str,
        target: Target,
        pool_size: usize,
        timeout: Option<Duration>,
    ) -> Result<RedisStore, StoreError> {
        let dialect = Dialect {
            transactions: true,
            product: "redis",
        };
        Ok(RedisStore {
            core: RespCore::new(
                name,
                target,
                pool_size,
                timeout.unwrap_or(DEFAULT_TIMEOUT),
                dialect,
            )?,
        })
    }

    /// Where this store connects, for messages (no password).
    pub fn target(&self) -> &str {
        &self.core.target
    }

    /// Sends one raw command (routed by its key on a cluster), with the
    /// store's timeout. For tests and diagnostics.
    pub async fn command(&self, cmd: &redis::Cmd) -> Result<redis::Value, StoreError> {
        self.core.command(cmd).await
    }
}

crate::redis::core::delegate_store_to_core!(RedisStore);

#[cfg(test)]
mod tests {
    use super::*;
    use tiercache_engine::Store;

    #[test]
    fn urls() {
        let info = parse_url("redis://:secret@127.0.0.1:6390/3").unwrap();
        assert_eq!(info.addr.to_string(), "127.0.0.1:6390");
        assert_eq!(info.redis.db, 3);
        assert_eq!(info.redis.password.as_deref(), Some("secret"));
        for unix in [
            "unix:/tmp/r.sock",
            "unix:///tmp/r.sock",
            "redis+unix:///tmp/r.sock",
        ] {
            let info = parse_url(unix).unwrap();
            assert!(
                matches!(&info.addr, redis::ConnectionAddr::Unix(p) if p.to_str() == Some("/tmp/r.sock")),
                "{unix}: {:?}",
                info.addr
            );
        }
        assert_eq!(parse_url("unix:/tmp/r.sock?db=2").unwrap().redis.db, 2);
        assert!(parse_url("http://x").is_err());
        assert!(parse_url("rediss://x").is_err());
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redact("redis://user:secret@h:1/0"),
            "redis://user:***@h:1/0"
        );
        assert_eq!(redact("redis://h:1"), "redis://h:1");
        let err = parse_url("ftp://:pw@h").unwrap_err();
        assert!(!err.contains("pw@"), "{err}");
    }

    #[tokio::test]
    async fn construction_does_not_connect() {
        // Nothing listens on port 1: building must still work, and an
        // operation fails promptly with the store's name.
        let store = RedisStore::open("r", "redis://127.0.0.1:1", 2, None).unwrap();
        let err = store.get_many(&["k".into()]).await.unwrap_err();
        assert_eq!(err.store, "r");
        assert!(err.message.contains("127.0.0.1:1"), "{err}");
    }
}
