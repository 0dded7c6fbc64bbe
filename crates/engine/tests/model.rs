//! Model-based property test: the engine against a `HashMap`, under random
//! sets, deletes, TTLs, memory pressure, flushes, store outages, clean
//! restarts and crashes (drop without shutdown), in every write mode.

use bytes::Bytes;
use proptest::prelude::*;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tiercache_engine::testing::{FlakyStore, MemoryStore};
use tiercache_engine::{
    now_ms, Engine, EngineError, NamespaceConfig, SetExpiry, SetOptions, WriteMode,
};

#[derive(Clone, Debug)]
enum Ttl {
    None,
    Future,
    Past,
}

#[derive(Clone, Debug)]
enum Op {
    Set(u8, u8, Ttl),
    Del(Vec<u8>),
    Get(u8),
    MGet(Vec<u8>),
    Incr(u8),
    Expire(u8, bool),
    Flush,
    DbSize,
    Reopen { crash: bool },
    StoreDown(bool),
}

const VALUES: [&str; 6] = [
    "0",
    "41",
    "-7",
    "x",
    "",
    "a-longer-value-that-adds-memory-pressure-to-the-tier",
];

fn key(k: u8) -> Bytes {
    Bytes::from(format!("k{k}"))
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0u8..24;
    let ttl = prop_oneof![4 => Just(Ttl::None), 1 => Just(Ttl::Future), 1 => Just(Ttl::Past)];
    prop_oneof![
        8 => (k.clone(), 0u8..6, ttl).prop_map(|(k, v, t)| Op::Set(k, v, t)),
        3 => prop::collection::vec(k.clone(), 1..4).prop_map(Op::Del),
        6 => k.clone().prop_map(Op::Get),
        2 => prop::collection::vec(k.clone(), 1..6).prop_map(Op::MGet),
        2 => k.clone().prop_map(Op::Incr),
        1 => (k, any::<bool>()).prop_map(|(k, f)| Op::Expire(k, f)),
        1 => Just(Op::Flush),
        1 => Just(Op::DbSize),
        1 => any::<bool>().prop_map(|crash| Op::Reopen { crash }),
        1 => any::<bool>().prop_map(Op::StoreDown),
    ]
}

async fn open(dir: &Path, store: &Arc<FlakyStore<MemoryStore>>, mode: WriteMode) -> Engine {
    Engine::builder(dir)
        // Small enough that 24 keys do not all fit: eviction runs constantly.
        .memory_bytes(2_500)
        .backpressure_wait(Duration::from_millis(50))
        .namespace(
            NamespaceConfig::new("default", mode)
                .store(store.clone())
                .flush(Duration::from_millis(5), 4),
        )
        .build()
        .await
        .expect("engine opens")
}

fn is_int(v: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(v).ok()?;
    if s.is_empty() || s.starts_with('+') || (s.len() > 1 && s.starts_with('0')) || s == "-0" {
        return None;
    }
    s.parse().ok()
}

async fn run(ops: Vec<Op>, mode: WriteMode) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FlakyStore::new(Arc::new(MemoryStore::new("sor"))));
    let mut engine = open(dir.path(), &store, mode).await;
    let mut model: HashMap<Bytes, Bytes> = HashMap::new();
    let mut down = false;
    for op in ops {
        // In write-back mode a down store only affects reads that miss every
        // upper tier; in the other modes writes fail too. Errors are allowed
        // only while the store is down, and a failed write changes nothing.
        match op {
            Op::Set(k, v, ttl) => {
                let expiry = match ttl {
                    Ttl::None => SetExpiry::Default,
                    Ttl::Future => SetExpiry::At(now_ms() + 3_600_000),
                    Ttl::Past => SetExpiry::At(now_ms().saturating_sub(1)),
                };
                let mut s = engine.session();
                let r = s
                    .set(
                        key(k),
                        Bytes::from_static(VALUES[v as usize].as_bytes()),
                        SetOptions {
                            expiry,
                            ..Default::default()
                        },
                    )
                    .await;
                let r = match r {
                    Ok(_) => s.commit().await,
                    Err(e) => Err(e),
                };
                match r {
                    Ok(()) => {
                        if matches!(ttl, Ttl::Past) {
                            model.remove(&key(k));
                        } else {
                            model.insert(key(k), Bytes::from_static(VALUES[v as usize].as_bytes()));
                        }
                    }
                    Err(e) => assert!(down, "set failed while the store was up: {e}"),
                }
            }
            Op::Del(ks) => {
                let keys: Vec<Bytes> = ks.iter().map(|k| key(*k)).collect();
                match engine.delete(&keys).await {
                    Ok(n) => {
                        let mut distinct = keys.clone();
                        distinct.sort();
                        distinct.dedup();
                        let expected = distinct
                            .iter()
                            .filter(|k| model.remove(*k).is_some())
                            .count();
                        assert_eq!(n, expected as u64, "DEL count");
                    }
                    Err(e) => assert!(down, "delete failed while the store was up: {e}"),
                }
            }
            Op::Get(k) => match engine.get(&key(k)).await {
                Ok(v) => assert_eq!(v.map(|e| e.value), model.get(&key(k)).cloned(), "GET {k}"),
                Err(e) => assert!(down, "get failed while the store was up: {e}"),
            },
            Op::MGet(ks) => {
                let keys: Vec<Bytes> = ks.iter().map(|k| key(*k)).collect();
                match engine.session().get_many(&keys).await {
                    Ok(vs) => {
                        let got: Vec<Option<Bytes>> =
                            vs.into_iter().map(|e| e.map(|e| e.value)).collect();
                        let want: Vec<Option<Bytes>> =
                            keys.iter().map(|k| model.get(k).cloned()).collect();
                        assert_eq!(got, want, "MGET {ks:?}");
                    }
                    Err(e) => assert!(down, "mget failed while the store was up: {e}"),
                }
            }
            Op::Incr(k) => {
                let mut s = engine.session();
                let r = s.incr_by(key(k), 1).await;
                let r = match r {
                    Ok(n) => s.commit().await.map(|_| n),
                    Err(e) => Err(e),
                };
                let expected = match model.get(&key(k)) {
                    None => Some(0),
                    Some(v) => is_int(v),
                };
                match (r, expected) {
                    (Ok(n), Some(old)) => {
                        assert_eq!(n, old + 1);
                        model.insert(key(k), Bytes::from((old + 1).to_string()));
                    }
                    (Err(EngineError::NotAnInteger), None) => {}
                    (Err(e), _) if down => {
                        let _ = e;
                    }
                    (r, want) => panic!("INCR {k}: got {r:?}, model {want:?}"),
                }
            }
            Op::Expire(k, future) => {
                let at = if future {
                    now_ms() + 3_600_000
                } else {
                    now_ms().saturating_sub(1)
                };
                let mut s = engine.session();
                let r = s.expire(&key(k), Some(at)).await;
                let r = match r {
                    Ok(b) => s.commit().await.map(|_| b),
                    Err(e) => Err(e),
                };
                match r {
                    Ok(existed) => {
                        assert_eq!(existed, model.contains_key(&key(k)), "EXPIRE existence");
                        if !future {
                            model.remove(&key(k));
                        }
                    }
                    Err(e) => assert!(down, "expire failed while the store was up: {e}"),
                }
            }
            Op::Flush => {
                let r = engine.flush().await;
                assert!(
                    r.is_ok() || down,
                    "flush failed while the store was up: {r:?}"
                );
            }
            Op::DbSize => match engine.session().dbsize().await {
                Ok(n) => assert_eq!(n, model.len() as u64, "DBSIZE"),
                Err(e) => assert!(down, "dbsize failed while the store was up: {e}"),
            },
            Op::Reopen { crash } => {
                if crash {
                    drop(engine); // kill -9: no flush, no journal sync beyond commit
                } else {
                    let r = engine.shutdown().await;
                    assert!(
                        r.is_ok() || down,
                        "clean shutdown failed while the store was up: {r:?}"
                    );
                    drop(engine);
                }
                tokio::time::sleep(Duration::from_millis(2)).await; // let the old tasks see the stop
                engine = open(dir.path(), &store, mode).await;
            }
            Op::StoreDown(d) => {
                down = d;
                store.set_down(d);
            }
        }
        assert!(engine.memory().used_bytes() <= engine.memory().max_bytes());
    }
    // Finally: store up, clean shutdown, and the store alone holds the model.
    store.set_down(false);
    engine
        .shutdown()
        .await
        .expect("final shutdown flushes everything");
    let now = now_ms();
    let stored: HashMap<Bytes, Bytes> = store
        .inner()
        .snapshot()
        .into_iter()
        .filter(|(_, e)| !e.is_expired_at(now))
        .map(|(k, e)| (k, e.value))
        .collect();
    assert_eq!(stored, model, "system of record after clean shutdown");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn write_back_matches_model(ops in prop::collection::vec(op(), 1..80)) {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(run(ops, WriteMode::Back));
    }

    #[test]
    fn write_through_matches_model(ops in prop::collection::vec(op(), 1..80)) {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(run(ops, WriteMode::Through));
    }

    #[test]
    fn write_around_matches_model(ops in prop::collection::vec(op(), 1..80)) {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(run(ops, WriteMode::Around));
    }
}
