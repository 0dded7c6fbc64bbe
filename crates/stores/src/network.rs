//! [`NetworkStore`]: another tiercache server as a store, over RESP.
//!
//! It is the [Redis store](crate::redis)'s single-node implementation
//! pointed at a tiercache server (`url = "redis://host:port"` or a unix
//! socket), restricted to commands tiercache's server implements: `MGET`,
//! `PEXPIRETIME` (exact expiries), `SET ... PXAT`, `DEL`, `SCAN`,
//! `FLUSHDB`. The layout is the Redis store's ([`codec`](crate::redis::codec)):
//! values as they are, flags other than 0 in the 8-byte envelope, values
//! that are not strings (hashes) in the 9-byte kind envelope.
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
use std::time::Duration;
use tiercache_engine::StoreError;

/// Multiplexed connections to the other server.
pub const CONNECTIONS: usize = 4;

/// A [`Store`](tiercache_engine::Store) on another tiercache server. See the [module docs](self).
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

crate::redis::core::delegate_store_to_core!(NetworkStore);
