//! [`NetworkStore`]: another tiercache server as a store, over RESP.
//!
//! It is the [Redis store](crate::redis)'s single-node implementation
//! pointed at a tiercache server (`url = "redis://host:port"` or a unix
//! socket), restricted to commands tiercache's server implements: `MGET`,
//! `PEXPIRETIME` (exact expiries), `SET ... PXAT`, `DEL`, `SCAN`,
//! `FLUSHDB`. The layout is the Redis store's ([`codec`](crate::redis::codec)):
//! values as they are, flags other than 0 in the 8-byte envelope.
//!
//! Differences from [`RedisStore`](crate::RedisStore):
//! - tiercache has no `MULTI`/`EXEC`, so a batch is one pipeline (one round
//!   trip) but not one transaction: each command is atomic on its own. A
//!   `get_many` racing a write of the same key on the other server may pair
//!   the old value with the new expiry; a key deleted between the two reads
//!   as a miss.
//! - `clear` is the other server's `FLUSHDB`, which empties every
//!   namespace there.
//! - [`CONNECTIONS`] multiplexed connections (the config has no
//!   `pool_size` for this type).

use crate::redis::core::{Dialect, RespCore, Target};
use crate::redis::{parse_url, DEFAULT_TIMEOUT};
use async_trait::async_trait;
use bytes::Bytes;
use std::ops::Bound;
use std::time::Duration;
use tiercache_engine::{Entry, KeyStats, Mutation, Store, StoreError};

/// Multiplexed connections to the other server.
pub const CONNECTIONS: usize = 4;

/// A [`Store`] on another tiercache server. See the [module docs](self).
///
/// ```no_run
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use tiercache_engine::{Entry, Store};
/// use tiercache_stores::NetworkStore;
/// let store = NetworkStore::open("upstream", "redis://127.0.0.1:6380", None).unwrap();
/// store.set_many(&[("k".into(), Entry::new("v"))]).await.unwrap();
/// # });
/// ```
pub struct NetworkStore {
    core: RespCore,
}

impl NetworkStore {
    /// A store on the tiercache server at `url` (`redis://host:port`,
    /// `redis://:password@host:port`, `unix:/path`). Does not connect: the
    /// first operation does, and a broken connection is remade.
    pub fn open(
        name: &str,
        url: &str,
        timeout: Option<Duration>,
    ) -> Result<NetworkStore, StoreError> {
        let info = parse_url(url).map_err(|e| StoreError::new(name, e))?;
        let dialect = Dialect {
            transactions: false,
            product: "tiercache",
        };
        Ok(NetworkStore {
            core: RespCore::new(
                name,
                Target::Node(info),
                CONNECTIONS,
                timeout.unwrap_or(DEFAULT_TIMEOUT),
                dialect,
            )?,
        })
    }

    /// Where this store connects, for messages (no password).
    pub fn target(&self) -> &str {
        &self.core.target
    }
}

#[async_trait]
impl Store for NetworkStore {
    fn name(&self) -> &str {
        &self.core.name
    }

    async fn get_many(&self, keys: &[Bytes]) -> Result<Vec<Option<Entry>>, StoreError> {
        self.core.get_many(keys).await
    }

    async fn set_many(&self, entries: &[(Bytes, Entry)]) -> Result<(), StoreError> {
        self.core.set_many(entries).await
    }

    async fn delete_many(&self, keys: &[Bytes]) -> Result<(), StoreError> {
        self.core.delete_many(keys).await
    }

    async fn apply(&self, batch: &[Mutation]) -> Result<(), StoreError> {
        self.core.apply(batch).await
    }

    async fn count(&self) -> Result<u64, StoreError> {
        self.core.count().await
    }

    async fn clear(&self) -> Result<(), StoreError> {
        self.core.clear().await
    }

    async fn scan_keys(
        &self,
        start: Bound<&[u8]>,
        prefix: &[u8],
        limit: usize,
        _now_ms: u64,
    ) -> Result<Vec<Bytes>, StoreError> {
        self.core.scan_keys(start, prefix, limit).await
    }

    async fn key_stats(&self, now_ms: u64) -> Result<KeyStats, StoreError> {
        self.core.key_stats(now_ms).await
    }
}
