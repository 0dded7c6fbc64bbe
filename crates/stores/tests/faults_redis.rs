//! Issue 5's fault tests against a real Redis that is killed and restarted:
//! a buffer over Redis keeps accepting writes while Redis is down and, once
//! it is back, every set and delete is there exactly; `multi(all)` with a
//! dead child reports failure and catches the child up (never silently
//! diverges); `multi(any)` keeps serving.
//!
//! Redis runs with `appendfsync always`, so what it acknowledged before
//! the kill survives it (otherwise a restart would lose data by Redis's
//! own choice, which is not what these tests are about).

use bytes::Bytes;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tiercache_engine::{Entry, Mutation, Store};
use tiercache_stores::{
    BufferMode, BufferOptions, BufferStore, ChildState, FileStore, FileStoreOptions, MultiStore,
    RedisStore, ReportSuccess, SqliteStore,
};
use tiercache_testkit::RedisServer;

const DURABLE: &[&str] = &["--appendonly", "yes", "--appendfsync", "always"];

fn key(i: usize) -> Bytes {
    Bytes::from(format!("k{i:05}"))
}

/// A killed server refuses connections at once, so the timeout only
/// matters for a slow machine: keep it generous (a loaded CI box must not
/// turn a live Redis into a "failed" write).
fn redis_store(redis: &RedisServer) -> Arc<RedisStore> {
    Arc::new(RedisStore::open("redis", &redis.url(), 2, Some(Duration::from_secs(5))).unwrap())
}

/// Everything `store` holds for keys `0..n`, as a map.
async fn contents(store: &dyn Store, n: usize) -> BTreeMap<Bytes, Bytes> {
    let keys: Vec<Bytes> = (0..n).map(key).collect();
    let got = store.get_many(&keys).await.unwrap();
    keys.into_iter()
        .zip(got)
        .filter_map(|(k, e)| e.map(|e| (k, e.value)))
        .collect()
}

async fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffer_over_redis_loses_nothing_while_redis_is_killed() {
    let Some(mut redis) = RedisServer::start(DURABLE) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let primary = redis_store(&redis);
    let spool = Arc::new(
        FileStore::open(
            "spool",
            &dir.path().join("spool"),
            FileStoreOptions::default(),
        )
        .unwrap(),
    );
    let opts = BufferOptions {
        retry_interval: Duration::from_millis(300),
        retry_interval_range: Duration::from_millis(100),
        ..BufferOptions::default()
    };
    let buffer = BufferStore::open("buffer", primary.clone(), spool, opts)
        .await
        .unwrap();
    let mut model: BTreeMap<Bytes, Bytes> = BTreeMap::new();
    let n = 2_000;

    // 1. Primary up: 1,000 sets land in Redis.
    let sets: Vec<(Bytes, Entry)> = (0..1_000)
        .map(|i| (key(i), Entry::new(format!("v1-{i}"))))
        .collect();
    buffer.set_many(&sets).await.unwrap();
    for (k, e) in &sets {
        model.insert(k.clone(), e.value.clone());
    }
    assert_eq!(buffer.status().mode, BufferMode::Primary);

    // 2. Redis killed: sets, overwrites and deletes are still accepted.
    redis.kill();
    for round in 0..10 {
        let mut batch = Vec::new();
        for i in (round * 200)..(round * 200 + 200) {
            batch.push(Mutation::Set(key(i), Entry::new(format!("v2-{i}-{round}"))));
            model.insert(key(i), Bytes::from(format!("v2-{i}-{round}")));
        }
        // Delete some keys Redis has, and some written while it was down.
        for i in (round * 37..1_000).step_by(97).take(5) {
            batch.push(Mutation::Delete(key(i)));
            model.remove(&key(i));
        }
        buffer
            .apply(&batch)
            .await
            .unwrap_or_else(|e| panic!("write {round} refused while Redis is down: {e}"));
    }
    assert_ne!(buffer.status().mode, BufferMode::Primary);
    // Reads while failed over see the logged writes, deletes included.
    let seen = contents(&buffer, n).await;
    assert_eq!(seen, model, "reads while failed over");

    // 3. Redis back: the log is replayed in order, then Redis holds exactly
    // the model (count and values).
    redis.restart();
    wait_until("the buffer to replay", Duration::from_secs(30), || {
        let s = buffer.status();
        s.mode == BufferMode::Primary && s.queued == 0
    })
    .await;
    let in_redis = contents(primary.as_ref(), n).await;
    assert_eq!(in_redis.len(), model.len(), "key count in Redis");
    assert_eq!(in_redis, model, "values in Redis");
    assert_eq!(primary.count().await.unwrap(), model.len() as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_all_reports_a_dead_child_and_catches_it_up() {
    let Some(mut redis) = RedisServer::start(DURABLE) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Arc::new(SqliteStore::open("sqlite", &dir.path().join("a.db"), "kv").unwrap());
    let red = redis_store(&redis);
    let multi = MultiStore::new(
        "both",
        vec![sqlite.clone() as Arc<dyn Store>, red.clone()],
        ReportSuccess::All,
    );
    let first: Vec<(Bytes, Entry)> = (0..100).map(|i| (key(i), Entry::new("a"))).collect();
    multi.set_many(&first).await.unwrap();

    redis.kill();
    let second: Vec<(Bytes, Entry)> = (100..200).map(|i| (key(i), Entry::new("b"))).collect();
    let err = multi
        .set_many(&second)
        .await
        .expect_err("multi(all) must report a write a child missed");
    assert!(err.to_string().contains("redis"), "{err}");
    multi.delete_many(&[key(0)]).await.expect_err("still down");
    let behind = multi
        .status()
        .into_iter()
        .find(|c| c.name == "redis")
        .unwrap();
    assert!(
        matches!(behind.state, ChildState::CatchingUp { .. }),
        "{behind:?}"
    );

    redis.restart();
    wait_until("redis to catch up", Duration::from_secs(30), || {
        multi
            .status()
            .iter()
            .all(|c| c.state == ChildState::Healthy)
    })
    .await;
    let a = contents(sqlite.as_ref(), 200).await;
    let b = contents(red.as_ref(), 200).await;
    assert_eq!(a.len(), 199, "the delete reached sqlite");
    assert_eq!(a, b, "the children hold the same data after catch-up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_any_keeps_serving_with_redis_down() {
    let Some(mut redis) = RedisServer::start(DURABLE) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Arc::new(SqliteStore::open("sqlite", &dir.path().join("a.db"), "kv").unwrap());
    let red = redis_store(&redis);
    let multi = MultiStore::new(
        "either",
        vec![red.clone() as Arc<dyn Store>, sqlite.clone()],
        ReportSuccess::Any,
    );
    redis.kill();
    let sets: Vec<(Bytes, Entry)> = (0..50).map(|i| (key(i), Entry::new("x"))).collect();
    multi
        .set_many(&sets)
        .await
        .expect("multi(any) accepts writes");
    let got = contents(&multi, 50).await;
    assert_eq!(
        got.len(),
        50,
        "multi(any) answers reads from the live child"
    );

    redis.restart();
    wait_until("redis to catch up", Duration::from_secs(30), || {
        multi
            .status()
            .iter()
            .all(|c| c.state == ChildState::Healthy)
    })
    .await;
    assert_eq!(contents(red.as_ref(), 50).await.len(), 50);
}
