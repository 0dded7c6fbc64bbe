//! The RESP machinery shared by [`RedisStore`](super::RedisStore) and
//! [`NetworkStore`](crate::NetworkStore): connections (a lazily connected,
//! self-healing pool of multiplexed connections to one node, or one cluster
//! connection), the batched commands, and timeouts.

/// The [`Store`](tiercache_engine::Store) impl of a type whose `core`
/// field is a [`RespCore`]: [`RedisStore`](crate::RedisStore) and
/// [`NetworkStore`](crate::NetworkStore) differ only in how the core is
/// built, so both delegate every operation through this one definition.
macro_rules! delegate_store_to_core {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl tiercache_engine::Store for $store {
            fn name(&self) -> &str {
                &self.core.name
            }

            async fn get_many(
                &self,
                keys: &[bytes::Bytes],
            ) -> Result<Vec<Option<tiercache_engine::Entry>>, tiercache_engine::StoreError> {
                self.core.get_many(keys).await
            }

            async fn set_many(
                &self,
                entries: &[(bytes::Bytes, tiercache_engine::Entry)],
            ) -> Result<(), tiercache_engine::StoreError> {
                self.core.set_many(entries).await
            }

            async fn delete_many(
                &self,
                keys: &[bytes::Bytes],
            ) -> Result<(), tiercache_engine::StoreError> {
                self.core.delete_many(keys).await
            }

            async fn apply(
                &self,
                batch: &[tiercache_engine::Mutation],
            ) -> Result<(), tiercache_engine::StoreError> {
                self.core.apply(batch).await
            }

            async fn count(&self) -> Result<u64, tiercache_engine::StoreError> {
                self.core.count().await
            }

            async fn clear(&self) -> Result<(), tiercache_engine::StoreError> {
                self.core.clear().await
            }

            async fn scan_keys(
                &self,
                start: std::ops::Bound<&[u8]>,
                prefix: &[u8],
                limit: usize,
                _now_ms: u64,
            ) -> Result<Vec<bytes::Bytes>, tiercache_engine::StoreError> {
                self.core.scan_keys(start, prefix, limit).await
            }

            async fn key_stats(
                &self,
                now_ms: u64,
            ) -> Result<tiercache_engine::KeyStats, tiercache_engine::StoreError> {
                self.core.key_stats(now_ms).await
            }
        }
    };
}
pub(crate) use delegate_store_to_core;

use super::codec;
use bytes::Bytes;
use redis::aio::MultiplexedConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::{AsyncConnectionConfig, Cmd, ConnectionInfo, Pipeline, RedisError, Value};
use std::collections::{BTreeMap, BinaryHeap};
use std::future::Future;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use tiercache_engine::store::in_scan_range;
use tiercache_engine::{now_ms, Entry, KeyStats, Mutation, StoreError};
use tokio::sync::Mutex;

mod cluster;

use cluster::ClusterLazy;

/// Keys asked per `SCAN` call.
const SCAN_COUNT: usize = 1000;

/// What the server on the other end can do.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dialect {
    /// `MULTI`/`EXEC` (real Redis; tiercache's server has no transactions).
    pub transactions: bool,
    /// The product name used in error messages.
    pub product: &'static str,
}

/// A pool of multiplexed connections to one node, each connected on first
/// use and dropped after an I/O error so the next use reconnects.
struct NodePool {
    client: redis::Client,
    config: AsyncConnectionConfig,
    slots: Vec<Mutex<Option<(u64, MultiplexedConnection)>>>,
    next: AtomicUsize,
    generation: AtomicU64,
}

/// A connection handed out by [`NodePool::conn`], with what
/// [`NodePool::invalidate`] needs to drop exactly it.
struct Lease {
    slot: usize,
    generation: u64,
    conn: MultiplexedConnection,
    /// Connected for this lease (not reused from the pool).
    fresh: bool,
}

impl NodePool {
    async fn conn(&self) -> Result<Lease, RedisError> {
        let slot = self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len();
        let mut guard = self.slots[slot].lock().await;
        if let Some((generation, conn)) = &*guard {
            return Ok(Lease {
                slot,
                generation: *generation,
                conn: conn.clone(),
                fresh: false,
            });
        }
        let conn = self
            .client
            .get_multiplexed_async_connection_with_config(&self.config)
            .await?;
        let generation = self.generation.fetch_add(1, Ordering::Relaxed);
        *guard = Some((generation, conn.clone()));
        Ok(Lease {
            slot,
            generation,
            conn,
            fresh: true,
        })
    }

    /// Drops the connection of `lease` (unless it was replaced already).
    async fn invalidate(&self, lease: &Lease) {
        let mut guard = self.slots[lease.slot].lock().await;
        if matches!(&*guard, Some((g, _)) if *g == lease.generation) {
            *guard = None;
        }
    }
}

enum Backend {
    Node(NodePool),
    Cluster(ClusterLazy),
}

/// Where to send commands, as the shared implementation sees it.
pub(crate) enum Target {
    /// One server.
    Node(ConnectionInfo),
    /// A Redis Cluster reached through these seed nodes.
    Cluster(Vec<ConnectionInfo>),
}

/// The shared implementation of a RESP key/value store.
pub(crate) struct RespCore {
    pub name: String,
    /// Where, for error messages (never with a password).
    pub target: String,
    pub timeout: Duration,
    dialect: Dialect,
    backend: Backend,
}

/// True for errors after which a connection is no good any more.
fn is_broken(e: &RedisError) -> bool {
    e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal()
}

impl RespCore {
    /// Builds the store without connecting: the first operation connects.
    pub fn new(
        name: &str,
        target: Target,
        pool_size: usize,
        timeout: Duration,
        dialect: Dialect,
    ) -> Result<RespCore, StoreError> {
        let err = |e: RedisError| StoreError::new(name, format!("{}: {e}", dialect.product));
        let (backend, shown) = match target {
            Target::Node(info) => {
                let shown = match &info.addr {
                    redis::ConnectionAddr::Unix(p) => format!("unix:{}", p.display()),
                    other => format!("{other}/{}", info.redis.db),
                };
                let client = redis::Client::open(info).map_err(err)?;
                let config = AsyncConnectionConfig::new()
                    .set_connection_timeout(timeout)
                    .set_response_timeout(timeout);
                let pool = NodePool {
                    client,
                    config,
                    slots: (0..pool_size.max(1)).map(|_| Mutex::new(None)).collect(),
                    next: AtomicUsize::new(0),
                    generation: AtomicU64::new(0),
                };
                (Backend::Node(pool), shown)
            }
            Target::Cluster(seeds) => {
                let shown = format!(
                    "cluster {}",
                    seeds
                        .iter()
                        .map(|s| s.addr.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                );
                let client = redis::cluster::ClusterClientBuilder::new(seeds)
                    .connection_timeout(timeout)
                    .response_timeout(timeout)
                    .retries(1)
                    .min_retry_wait(10)
                    .max_retry_wait(100)
                    .build()
                    .map_err(err)?;
                (Backend::Cluster(ClusterLazy::new(client)), shown)
            }
        };
        Ok(RespCore {
            name: name.to_string(),
            target: shown,
            timeout,
            dialect,
            backend,
        })
    }

    fn error(&self, what: &str, cause: impl std::fmt::Display) -> StoreError {
        StoreError::new(
            &self.name,
            format!("{} {}: {what}: {cause}", self.dialect.product, self.target),
        )
    }

    /// Runs `op` under the store's timeout, mapping errors.
    async fn timed<T>(
        &self,
        what: &str,
        op: impl Future<Output = Result<T, RedisError>>,
    ) -> Result<T, StoreError> {
        match tokio::time::timeout(self.timeout, op).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(self.error(what, e)),
            Err(_) => Err(self.error(
                what,
                format!("timed out after {} ms", self.timeout.as_millis()),
            )),
        }
    }

    /// Sends `pipe` to the single node (one round trip). A pooled
    /// connection found broken (the server restarted since it was made) is
    /// dropped and the pipeline sent once more on a new connection: every
    /// batch this store sends is idempotent.
    async fn node_query(&self, pool: &NodePool, pipe: &Pipeline) -> Result<Vec<Value>, RedisError> {
        loop {
            let mut lease = pool.conn().await?;
            let result = pipe.query_async::<Vec<Value>>(&mut lease.conn).await;
            match &result {
                Err(e) if is_broken(e) => {
                    pool.invalidate(&lease).await;
                    if !lease.fresh {
                        continue;
                    }
                }
                _ => {}
            }
            return result;
        }
    }

    /// Runs one pipeline per group of keys: one for a single node, one per
    /// slot on a cluster (all sent at once). `build` fills a pipeline for
    /// the items of a group; the answer holds each group's replies, with
    /// the indices of its items.
    async fn run_grouped<'a, T>(
        &self,
        what: &str,
        items: &'a [T],
        key: impl Fn(&T) -> &[u8],
        build: impl Fn(&mut Pipeline, &[&'a T]),
    ) -> Result<Vec<(Vec<usize>, Vec<Value>)>, StoreError> {
        match &self.backend {
            Backend::Node(pool) => {
                let refs: Vec<&T> = items.iter().collect();
                let mut pipe = redis::pipe();
                if self.dialect.transactions {
                    pipe.atomic();
                }
                build(&mut pipe, &refs);
                let values = self.timed(what, self.node_query(pool, &pipe)).await?;
                Ok(vec![((0..items.len()).collect(), values)])
            }
            Backend::Cluster(cluster) => {
                let mut by_slot: BTreeMap<u16, Vec<usize>> = BTreeMap::new();
                for (i, item) in items.iter().enumerate() {
                    by_slot.entry(codec::slot(key(item))).or_default().push(i);
                }
                let op = async {
                    let conn = self.cluster_conn(cluster).await?;
                    let r = self
                        .cluster_batch(cluster, &conn, items, by_slot, &build)
                        .await;
                    self.cluster_fail(cluster, r).await
                };
                self.timed(what, op).await
            }
        }
    }

    pub async fn get_many(&self, keys: &[Bytes]) -> Result<Vec<Option<Entry>>, StoreError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let groups = self
            .run_grouped(
                "get",
                keys,
                |k| k,
                |pipe, group| {
                    // One MGET for the values, one PEXPIRETIME per key for the
                    // exact expiry; atomic, so both describe the same write.
                    let mut mget = redis::cmd("MGET");
                    for k in group {
                        mget.arg(&k[..]);
                    }
                    pipe.add_command(mget);
                    for k in group {
                        pipe.cmd("PEXPIRETIME").arg(&k[..]);
                    }
                },
            )
            .await?;
        let now = now_ms();
        let mut out = vec![None; keys.len()];
        for (indices, values) in groups {
            let n = indices.len();
            let mut values = values.into_iter();
            let got = match values.next() {
                Some(Value::Array(v)) if v.len() == n => v,
                other => return Err(self.error("get", format!("unexpected MGET reply {other:?}"))),
            };
            let expiries: Vec<Value> = values.collect();
            if expiries.len() != n {
                return Err(self.error("get", "short PEXPIRETIME replies"));
            }
            for ((i, value), expiry) in indices.into_iter().zip(got).zip(expiries) {
                let raw = match value {
                    Value::Nil => continue,
                    Value::BulkString(b) => Bytes::from(b),
                    other => return Err(self.error("get", format!("unexpected value {other:?}"))),
                };
                let expires_at = match expiry {
                    Value::Int(-1) => None,
                    Value::Int(t) if t >= 0 => Some(t as u64),
                    // -2: gone meanwhile (only without transactions).
                    Value::Int(_) => continue,
                    other => {
                        return Err(
                            self.error("get", format!("unexpected PEXPIRETIME reply {other:?}"))
                        )
                    }
                };
                let (value, flags, kind) =
                    codec::decode(raw).map_err(|e| self.error("get", e.to_string()))?;
                let entry = Entry::with_kind(value, expires_at, flags, kind);
                if !entry.is_expired_at(now) {
                    out[i] = Some(entry);
                }
            }
        }
        Ok(out)
    }

    /// Applies `batch` (one transaction on a single Redis node; one per slot
    /// on a cluster). An entry whose expiry has passed is deleted.
    pub async fn apply(&self, batch: &[Mutation]) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        let now = now_ms();
        let groups = self
            .run_grouped(
                "write",
                batch,
                |m| m.key(),
                |pipe, group| {
                    for m in group {
                        match m {
                            Mutation::Set(k, e) => match e.expires_at {
                                Some(t) if t <= now => {
                                    pipe.cmd("DEL").arg(&k[..]);
                                }
                                Some(t) => {
                                    pipe.cmd("SET")
                                        .arg(&k[..])
                                        .arg(&codec::encode_kind(&e.value, e.flags, e.kind)[..])
                                        .arg("PXAT")
                                        .arg(t);
                                }
                                None => {
                                    pipe.cmd("SET")
                                        .arg(&k[..])
                                        .arg(&codec::encode_kind(&e.value, e.flags, e.kind)[..]);
                                }
                            },
                            Mutation::Delete(k) => {
                                pipe.cmd("DEL").arg(&k[..]);
                            }
                        }
                    }
                },
            )
            .await?;
        // Errors inside a pipeline come back as values.
        for (_, values) in groups {
            if let Some(Value::ServerError(e)) =
                values.iter().find(|v| matches!(v, Value::ServerError(_)))
            {
                return Err(self.error("write", format!("{e:?}")));
            }
        }
        Ok(())
    }

    pub async fn set_many(&self, entries: &[(Bytes, Entry)]) -> Result<(), StoreError> {
        let batch: Vec<Mutation> = Mutation::sets(entries);
        self.apply(&batch).await
    }

    pub async fn delete_many(&self, keys: &[Bytes]) -> Result<(), StoreError> {
        let batch: Vec<Mutation> = Mutation::deletes(keys);
        self.apply(&batch).await
    }

    /// `FLUSHDB` (on every master of a cluster).
    pub async fn clear(&self) -> Result<(), StoreError> {
        match &self.backend {
            Backend::Node(pool) => {
                let mut pipe = redis::pipe();
                pipe.cmd("FLUSHDB");
                self.timed("clear", self.node_query(pool, &pipe)).await?;
            }
            Backend::Cluster(cluster) => {
                let op = async {
                    let mut conn = self.cluster_conn(cluster).await?;
                    let r = redis::cmd("FLUSHDB").query_async::<Value>(&mut conn).await;
                    self.cluster_fail(cluster, r).await
                };
                self.timed("clear", op).await?;
            }
        }
        Ok(())
    }

    /// Calls `visit` with every page of keys matching `glob` on every node
    /// (every master of a cluster), and the node's routing for follow-up
    /// commands. Each `SCAN` call has the store's timeout; the whole walk
    /// has none (it is O(keys)).
    async fn scan_all(
        &self,
        glob: &[u8],
        mut visit: impl FnMut(Option<&SingleNodeRoutingInfo>, Vec<Vec<u8>>),
    ) -> Result<(), StoreError> {
        let scan_cmd = |cursor: u64| {
            let mut c = redis::cmd("SCAN");
            c.arg(cursor)
                .arg("MATCH")
                .arg(glob)
                .arg("COUNT")
                .arg(SCAN_COUNT);
            c
        };
        match &self.backend {
            Backend::Node(pool) => {
                let mut cursor = 0u64;
                loop {
                    let mut pipe = redis::pipe();
                    pipe.add_command(scan_cmd(cursor));
                    let reply = self.timed("scan", self.node_query(pool, &pipe)).await?;
                    let (next, keys) = self.scan_reply(reply.into_iter().next())?;
                    visit(None, keys);
                    cursor = next;
                    if cursor == 0 {
                        return Ok(());
                    }
                }
            }
            Backend::Cluster(cluster) => {
                for node in self.masters(cluster).await? {
                    let mut cursor = 0u64;
                    loop {
                        let routing = RoutingInfo::SingleNode(node.clone());
                        let cmd = scan_cmd(cursor);
                        let op = async {
                            let mut conn = self.cluster_conn(cluster).await?;
                            let r = conn.route_command(&cmd, routing).await;
                            self.cluster_fail(cluster, r).await
                        };
                        let reply = self.timed("scan", op).await?;
                        let (next, keys) = self.scan_reply(Some(reply))?;
                        visit(Some(&node), keys);
                        cursor = next;
                        if cursor == 0 {
                            break;
                        }
                    }
                }
                Ok(())
            }
        }
    }

    fn scan_reply(&self, reply: Option<Value>) -> Result<(u64, Vec<Vec<u8>>), StoreError> {
        let bad =
            |v: &dyn std::fmt::Debug| self.error("scan", format!("unexpected SCAN reply {v:?}"));
        let Some(Value::Array(mut parts)) = reply else {
            return Err(bad(&reply));
        };
        if parts.len() != 2 {
            return Err(bad(&parts));
        }
        let keys = parts.pop().unwrap_or(Value::Nil);
        let cursor = parts.pop().unwrap_or(Value::Nil);
        let cursor = match &cursor {
            Value::BulkString(b) => std::str::from_utf8(b).ok().and_then(|s| s.parse().ok()),
            Value::SimpleString(s) => s.parse().ok(),
            Value::Int(n) => u64::try_from(*n).ok(),
            _ => None,
        }
        .ok_or_else(|| bad(&cursor))?;
        let Value::Array(keys) = keys else {
            return Err(bad(&keys));
        };
        let keys = keys
            .into_iter()
            .map(|k| match k {
                Value::BulkString(b) => Ok(b),
                other => Err(bad(&other)),
            })
            .collect::<Result<_, _>>()?;
        Ok((cursor, keys))
    }

    /// Up to `limit` keys in byte order from `start` with `prefix`: a full
    /// `SCAN ... MATCH prefix*` of every node, keeping the `limit` smallest
    /// keys in range in a bounded heap. O(keys matching the prefix) per
    /// page; Redis has no ordered key index.
    pub async fn scan_keys(
        &self,
        start: Bound<&[u8]>,
        prefix: &[u8],
        limit: usize,
    ) -> Result<Vec<Bytes>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut heap: BinaryHeap<Vec<u8>> = BinaryHeap::new();
        self.scan_all(&codec::prefix_glob(prefix), |_, keys| {
            for k in keys {
                if !in_scan_range(&k, start, prefix) {
                    continue;
                }
                if heap.len() < limit {
                    heap.push(k);
                } else if heap.peek().is_some_and(|top| k < *top) {
                    heap.pop();
                    heap.push(k);
                }
            }
        })
        .await?;
        let mut keys = heap.into_vec();
        keys.sort_unstable();
        keys.dedup();
        Ok(keys.into_iter().map(Bytes::from).collect())
    }

    /// Live keys: a full `SCAN` (exact: unlike `DBSIZE`, `SCAN` never
    /// returns a key past its expiry). O(keys).
    pub async fn count(&self) -> Result<u64, StoreError> {
        let mut n = 0u64;
        self.scan_all(b"*", |_, keys| n += keys.len() as u64)
            .await?;
        Ok(n)
    }

    /// A full `SCAN` plus one pipelined `PEXPIRETIME` per page of keys.
    pub async fn key_stats(&self, now: u64) -> Result<KeyStats, StoreError> {
        let mut pages: Vec<(Option<SingleNodeRoutingInfo>, Vec<Vec<u8>>)> = Vec::new();
        self.scan_all(b"*", |node, keys| {
            if !keys.is_empty() {
                pages.push((node.cloned(), keys));
            }
        })
        .await?;
        let mut stats = KeyStats::default();
        let mut ttl_sum: u128 = 0;
        for (node, keys) in pages {
            let mut pipe = redis::pipe();
            for k in &keys {
                pipe.cmd("PEXPIRETIME").arg(&k[..]);
            }
            let replies = match (&self.backend, node) {
                (Backend::Node(pool), _) => {
                    self.timed("key stats", self.node_query(pool, &pipe))
                        .await?
                }
                (Backend::Cluster(cluster), Some(node)) => {
                    let op = async {
                        let mut conn = self.cluster_conn(cluster).await?;
                        let r = conn.route_pipeline(&pipe, 0, keys.len(), node).await;
                        self.cluster_fail(cluster, r).await
                    };
                    self.timed("key stats", op).await?
                }
                (Backend::Cluster(_), None) => unreachable!("cluster pages name their node"),
            };
            for reply in replies {
                match reply {
                    Value::Int(-1) => stats.keys += 1,
                    Value::Int(t) if t >= 0 => {
                        let t = t as u64;
                        if t > now {
                            stats.keys += 1;
                            stats.expires += 1;
                            ttl_sum += (t - now) as u128;
                        }
                    }
                    _ => {} // gone meanwhile
                }
            }
        }
        if stats.expires > 0 {
            stats.avg_ttl_ms = (ttl_sum / stats.expires as u128) as u64;
        }
        Ok(stats)
    }

    /// Sends one command to the single node, or routes it by its own keys on
    /// a cluster (used by tests and `PING`-style checks).
    pub async fn command(&self, cmd: &Cmd) -> Result<Value, StoreError> {
        match &self.backend {
            Backend::Node(pool) => {
                let mut pipe = redis::pipe();
                pipe.add_command(cmd.clone());
                let mut v = self.timed("command", self.node_query(pool, &pipe)).await?;
                Ok(v.pop().unwrap_or(Value::Nil))
            }
            Backend::Cluster(cluster) => {
                let op = async {
                    let mut conn = self.cluster_conn(cluster).await?;
                    let r = cmd.query_async::<Value>(&mut conn).await;
                    self.cluster_fail(cluster, r).await
                };
                self.timed("command", op).await
            }
        }
    }
}
