//! Redis Cluster support for `RespCore`: one lazily made cluster
//! connection, the cached slot map (`CLUSTER SLOTS`), the masters
//! (`CLUSTER NODES`), and batches that run one `MULTI ... EXEC` per slot on
//! every master at once.

use super::{is_broken, RespCore};
use futures_util::future::try_join_all;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::{Pipeline, RedisError, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use tiercache_engine::StoreError;
use tokio::sync::Mutex;

/// One cluster connection (it follows slot moves and reconnects to nodes
/// itself), made on first use and remade after a connection failure.
pub(super) struct ClusterLazy {
    client: redis::cluster::ClusterClient,
    conn: Mutex<Option<ClusterConnection>>,
    /// Which master serves each slot (from `CLUSTER SLOTS`), to send one
    /// pipeline per master; dropped when a pipeline meets a redirect.
    slots: parking_lot::RwLock<Option<Arc<SlotMap>>>,
}

/// A slot and the indices of the batch's items in it.
type SlotGroup = (u16, Vec<usize>);

/// `(first slot, last slot, master)`, sorted by first slot.
struct SlotMap(Vec<(u16, u16, (String, u16))>);

impl SlotMap {
    fn master(&self, slot: u16) -> Option<&(String, u16)> {
        let i = self.0.partition_point(|(_, end, _)| *end < slot);
        self.0
            .get(i)
            .filter(|(start, _, _)| *start <= slot)
            .map(|(_, _, m)| m)
    }
}

impl ClusterLazy {
    pub(super) fn new(client: redis::cluster::ClusterClient) -> Self {
        ClusterLazy {
            client,
            conn: Mutex::new(None),
            slots: parking_lot::RwLock::new(None),
        }
    }

    async fn conn(&self) -> Result<ClusterConnection, RedisError> {
        let mut guard = self.conn.lock().await;
        if let Some(conn) = &*guard {
            return Ok(conn.clone());
        }
        let conn = self.client.get_async_connection().await?;
        *guard = Some(conn.clone());
        Ok(conn)
    }

    async fn invalidate(&self) {
        *self.conn.lock().await = None;
    }
}

impl RespCore {
    pub(super) async fn cluster_conn(
        &self,
        cluster: &ClusterLazy,
    ) -> Result<ClusterConnection, RedisError> {
        cluster.conn().await
    }

    pub(super) async fn cluster_fail<T>(
        &self,
        cluster: &ClusterLazy,
        r: Result<T, RedisError>,
    ) -> Result<T, RedisError> {
        if let Err(e) = &r {
            if is_broken(e) {
                cluster.invalidate().await;
            }
        }
        r
    }

    /// A cluster batch: one pipeline per master, holding one
    /// `MULTI ... EXEC` per slot (a transaction cannot span slots), all
    /// masters at once. Slots whose master was wrong (a redirect: the slot
    /// map changed) go again one pipeline per slot, routed by the `redis`
    /// crate, which follows redirects.
    pub(super) async fn cluster_batch<'a, T>(
        &self,
        cluster: &ClusterLazy,
        conn: &ClusterConnection,
        items: &'a [T],
        by_slot: BTreeMap<u16, Vec<usize>>,
        build: &impl Fn(&mut Pipeline, &[&'a T]),
    ) -> Result<Vec<(Vec<usize>, Vec<Value>)>, RedisError> {
        let map = self.slot_map(cluster, conn).await?;
        let mut by_master: BTreeMap<(String, u16), Vec<SlotGroup>> = BTreeMap::new();
        let mut redo: Vec<SlotGroup> = Vec::new();
        for (slot, indices) in by_slot {
            match map.master(slot) {
                Some(m) => by_master
                    .entry(m.clone())
                    .or_default()
                    .push((slot, indices)),
                None => redo.push((slot, indices)),
            }
        }
        let per_master = by_master.into_iter().map(|((host, port), slots)| {
            let mut pipe = redis::pipe();
            let mut counts = Vec::with_capacity(slots.len());
            for (_, indices) in &slots {
                let refs: Vec<&T> = indices.iter().map(|&i| &items[i]).collect();
                pipe.cmd("MULTI");
                let before = pipe.len();
                build(&mut pipe, &refs);
                counts.push(pipe.len() - before);
                pipe.cmd("EXEC");
            }
            let mut conn = conn.clone();
            async move {
                let route = SingleNodeRoutingInfo::ByAddress { host, port };
                let r = conn.route_pipeline(&pipe, 0, pipe.len(), route).await;
                (slots, counts, r)
            }
        });
        let mut out = Vec::new();
        for (slots, counts, result) in futures_util::future::join_all(per_master).await {
            let replies = match result {
                Ok(replies) => replies,
                Err(e) if is_broken(&e) => return Err(e),
                // A redirect or another server error: redo these slots.
                Err(_) => {
                    redo.extend(slots);
                    continue;
                }
            };
            let mut replies = replies.into_iter();
            for ((slot, indices), n) in slots.into_iter().zip(counts) {
                // OK, n × QUEUED, then EXEC's array.
                let exec = replies.by_ref().nth(n + 1);
                match exec {
                    Some(Value::Array(values)) if values.len() == n => out.push((indices, values)),
                    _ => redo.push((slot, indices)),
                }
            }
        }
        if !redo.is_empty() {
            *cluster.slots.write() = None;
            let queries = redo.into_iter().map(|(_, indices)| {
                let refs: Vec<&T> = indices.iter().map(|&i| &items[i]).collect();
                let mut pipe = redis::pipe();
                pipe.atomic();
                build(&mut pipe, &refs);
                let mut conn = conn.clone();
                async move {
                    let values = pipe.query_async::<Vec<Value>>(&mut conn).await?;
                    Ok::<_, RedisError>((indices, values))
                }
            });
            out.extend(try_join_all(queries).await?);
        }
        Ok(out)
    }

    /// The cached slot map, or a fresh one from `CLUSTER SLOTS`.
    async fn slot_map(
        &self,
        cluster: &ClusterLazy,
        conn: &ClusterConnection,
    ) -> Result<Arc<SlotMap>, RedisError> {
        if let Some(map) = cluster.slots.read().clone() {
            return Ok(map);
        }
        let mut conn = conn.clone();
        let reply = conn
            .route_command(
                redis::cmd("CLUSTER").arg("SLOTS"),
                RoutingInfo::SingleNode(SingleNodeRoutingInfo::Random),
            )
            .await?;
        let map = Arc::new(parse_cluster_slots(reply));
        *cluster.slots.write() = Some(map.clone());
        Ok(map)
    }

    /// The masters of the cluster, from `CLUSTER NODES`.
    pub(super) async fn masters(
        &self,
        cluster: &ClusterLazy,
    ) -> Result<Vec<SingleNodeRoutingInfo>, StoreError> {
        let op = async {
            let mut conn = self.cluster_conn(cluster).await?;
            let r = conn
                .route_command(
                    redis::cmd("CLUSTER").arg("NODES"),
                    RoutingInfo::SingleNode(SingleNodeRoutingInfo::Random),
                )
                .await;
            self.cluster_fail(cluster, r).await
        };
        let reply = self.timed("cluster nodes", op).await?;
        let text = match reply {
            Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
            Value::VerbatimString { text, .. } => text,
            Value::SimpleString(s) => s,
            other => return Err(self.error("cluster nodes", format!("unexpected reply {other:?}"))),
        };
        let masters = parse_cluster_masters(&text);
        if masters.is_empty() {
            return Err(self.error("cluster nodes", "no master with slots"));
        }
        Ok(masters
            .into_iter()
            .map(|(host, port)| SingleNodeRoutingInfo::ByAddress { host, port })
            .collect())
    }
}

/// The slot map in a `CLUSTER SLOTS` reply: `[[start, end, [host, port,
/// id, ...], replicas...], ...]`. Malformed ranges are skipped (their slots
/// then go through the per-slot path).
fn parse_cluster_slots(reply: Value) -> SlotMap {
    let text = |v: &Value| match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    };
    let mut ranges = Vec::new();
    if let Value::Array(entries) = reply {
        for entry in entries {
            let Value::Array(parts) = entry else { continue };
            let (Some(Value::Int(start)), Some(Value::Int(end)), Some(Value::Array(master))) =
                (parts.first(), parts.get(1), parts.get(2))
            else {
                continue;
            };
            let (Some(host), Some(Value::Int(port))) =
                (master.first().and_then(text), master.get(1))
            else {
                continue;
            };
            if let (Ok(start), Ok(end), Ok(port)) = (
                u16::try_from(*start),
                u16::try_from(*end),
                u16::try_from(*port),
            ) {
                ranges.push((start, end, (host, port)));
            }
        }
    }
    ranges.sort_unstable();
    SlotMap(ranges)
}

/// `(host, port)` of every master that serves slots, from the text of
/// `CLUSTER NODES` (`<id> <ip:port@cport[,hostname]> <flags> <master> ...
/// <slot ranges>`), skipping failed ones.
fn parse_cluster_masters(text: &str) -> Vec<(String, u16)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 9 {
            continue; // no slots
        }
        let flags = fields[2];
        if !flags.split(',').any(|f| f == "master") || flags.contains("fail") {
            continue;
        }
        let addr = fields[1].split(['@', ',']).next().unwrap_or("");
        if let Some((host, port)) = addr.rsplit_once(':') {
            if let Ok(port) = port.parse() {
                out.push((host.to_string(), port));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{parse_cluster_masters, parse_cluster_slots};
    use redis::Value;

    #[test]
    fn cluster_slots_map() {
        let node = |p: i64| {
            Value::Array(vec![
                Value::BulkString(b"127.0.0.1".to_vec()),
                Value::Int(p),
                Value::BulkString(b"id".to_vec()),
            ])
        };
        let reply = Value::Array(vec![
            Value::Array(vec![Value::Int(5461), Value::Int(10922), node(2)]),
            Value::Array(vec![Value::Int(0), Value::Int(5460), node(1)]),
            Value::Array(vec![Value::Int(10923), Value::Int(16383), node(3), node(4)]),
        ]);
        let map = parse_cluster_slots(reply);
        let port = |slot| map.master(slot).map(|m| m.1);
        assert_eq!(port(0), Some(1));
        assert_eq!(port(5460), Some(1));
        assert_eq!(port(5461), Some(2));
        assert_eq!(port(16383), Some(3));
        let gap = parse_cluster_slots(Value::Array(vec![Value::Array(vec![
            Value::Int(10),
            Value::Int(20),
            node(1),
        ])]));
        assert_eq!(gap.master(5), None);
        assert_eq!(gap.master(21), None);
        assert!(gap.master(15).is_some());
    }

    #[test]
    fn cluster_nodes_masters() {
        let text = "\
a1 127.0.0.1:30001@40001 myself,master - 0 0 1 connected 0-5460
b2 127.0.0.1:30002@40002 master - 0 1 2 connected 5461-10922
c3 127.0.0.1:30003@40003 master,fail - 0 1 3 connected 10923-16383
d4 127.0.0.1:30004@40004 slave a1 0 1 1 connected
e5 127.0.0.1:30005@40005 master - 0 1 0 connected
";
        assert_eq!(
            parse_cluster_masters(text),
            vec![
                ("127.0.0.1".to_string(), 30001),
                ("127.0.0.1".to_string(), 30002)
            ]
        );
    }
}
