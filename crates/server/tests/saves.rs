//! `SAVE`, `BGSAVE` and `LASTSAVE` over real TCP: a save is the write-back
//! flush, so after `SAVE` the store holds every write made before it (the
//! flusher's own interval is an hour here, so nothing else flushes), a
//! store that is down makes `SAVE` fail and leaves `LASTSAVE` alone, and
//! `BGSAVE` replies at once and flushes behind it. (`SHUTDOWN` through the
//! real binary: `crates/tiercache/tests/crash.rs`.)

mod common;

use common::{Client, Reply, TestServer};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tiercache_engine::testing::{FlakyStore, MemoryStore};
use tiercache_engine::{NamespaceConfig, WriteMode};
use tiercache_server::ServerConfig;

/// A server whose one write-back namespace, on `store`, flushes only when
/// told to.
async fn start(store: Arc<FlakyStore<MemoryStore>>) -> (Client, TestServer) {
    let server = TestServer::start_with_namespace(ServerConfig::default(), |_| {
        NamespaceConfig::new("default", WriteMode::Back)
            .store(store)
            .flush(Duration::from_secs(3600), 1000)
    })
    .await;
    (server.client().await, server)
}

/// `INFO persistence`'s `rdb_changes_since_last_save`.
async fn changes(c: &mut Client) -> u64 {
    let info = c.cmd(&["INFO", "persistence"]).await.text();
    info.lines()
        .find_map(|l| l.strip_prefix("rdb_changes_since_last_save:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("rdb_changes_since_last_save in INFO")
}

fn int(r: Reply) -> i64 {
    match r {
        Reply::Int(n) => n,
        other => panic!("not an integer: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn save_writes_everything_to_the_store_and_moves_lastsave() {
    let store = Arc::new(FlakyStore::new(Arc::new(MemoryStore::new("main"))));
    let (mut c, _server) = start(store.clone()).await;
    let started = int(c.cmd(&["LASTSAVE"]).await);
    assert!(started > 1_700_000_000, "a Unix time: {started}");
    c.cmd(&["SET", "a", "1"]).await;
    c.cmd(&["HSET", "h", "f", "v"]).await;
    c.cmd(&["RPUSH", "l", "x", "y"]).await;
    assert_eq!(store.inner().len(), 0, "nothing flushed yet");

    // Down: the save fails, says why, and LASTSAVE does not move.
    store.set_down(true);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let r = c.cmd(&["SAVE"]).await;
    assert!(r.is_error_starting("ERR"), "{r:?}");
    assert_eq!(int(c.cmd(&["LASTSAVE"]).await), started);
    let info = c.cmd(&["INFO", "persistence"]).await.text();
    assert!(info.contains("rdb_last_bgsave_status:err"), "{info}");

    // Three keys written, none saved; the failed save changed nothing.
    assert_eq!(changes(&mut c).await, 3);

    store.set_down(false);
    assert_eq!(c.cmd(&["SAVE"]).await, Reply::ok());
    assert_eq!(changes(&mut c).await, 0);
    // A write counts once per key it changes; one that changes nothing
    // (SETBIT of the bit already there) counts nothing.
    c.cmd(&["SETBIT", "bits", "3", "1"]).await;
    c.cmd(&["SETBIT", "bits", "3", "1"]).await;
    c.cmd(&["MSET", "m1", "1", "m2", "2"]).await;
    assert_eq!(changes(&mut c).await, 3);
    assert_eq!(c.cmd(&["SAVE"]).await, Reply::ok());
    let snapshot = store.inner().snapshot();
    assert_eq!(snapshot.len(), 6, "every key is in the store");
    assert_eq!(&snapshot[&b"a"[..]].value[..], b"1");
    let saved = int(c.cmd(&["LASTSAVE"]).await);
    assert!(saved > started, "LASTSAVE moved: {saved} vs {started}");
    let info = c.cmd(&["INFO", "persistence"]).await.text();
    assert!(
        info.contains(&format!("rdb_last_save_time:{saved}")),
        "{info}"
    );
    assert!(info.contains("rdb_last_bgsave_status:ok"), "{info}");
    assert!(info.contains("rdb_bgsave_in_progress:0"), "{info}");

    // Not inside a transaction: the transaction is aborted.
    assert_eq!(c.cmd(&["MULTI"]).await, Reply::ok());
    c.cmd(&["SET", "b", "2"]).await;
    let r = c.cmd(&["SAVE"]).await;
    assert_eq!(
        r,
        Reply::Error("ERR Command not allowed inside a transaction".into())
    );
    assert!(c.cmd(&["EXEC"]).await.is_error_starting("EXECABORT"));
    assert_eq!(c.cmd(&["EXISTS", "b"]).await, Reply::Int(0));

    // A server embedded without a shutdown hook refuses SHUTDOWN and stays.
    let r = c.cmd(&["SHUTDOWN"]).await;
    assert_eq!(
        r,
        Reply::Error("ERR SHUTDOWN is not enabled on this listener".into())
    );
    assert_eq!(c.cmd(&["PING"]).await, Reply::Simple("PONG".into()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bgsave_replies_at_once_and_flushes_behind() {
    let store = Arc::new(FlakyStore::new(Arc::new(MemoryStore::new("main"))));
    let (mut c, _server) = start(store.clone()).await;
    for i in 0..100 {
        c.cmd(&["SET", &format!("k{i}"), "v"]).await;
    }
    // Slow writes: the flush is still running when BGSAVE replies.
    store.set_write_delay(Duration::from_millis(300));
    let sent = Instant::now();
    assert_eq!(
        c.cmd(&["BGSAVE"]).await,
        Reply::Simple("Background saving started".into())
    );
    assert!(
        sent.elapsed() < Duration::from_millis(300),
        "did not wait for the flush"
    );
    let r = c.cmd(&["BGSAVE"]).await;
    assert_eq!(
        r,
        Reply::Error("ERR Background save already in progress".into())
    );
    assert!(c
        .cmd(&["INFO", "persistence"])
        .await
        .text()
        .contains("rdb_bgsave_in_progress:1"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while store.inner().len() < 100 {
        assert!(Instant::now() < deadline, "BGSAVE never flushed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    while c
        .cmd(&["INFO", "persistence"])
        .await
        .text()
        .contains("rdb_bgsave_in_progress:1")
    {
        assert!(Instant::now() < deadline, "BGSAVE never finished");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Inside EXEC Redis words it as scheduled.
    c.cmd(&["MULTI"]).await;
    c.cmd(&["BGSAVE"]).await;
    let r = c.cmd(&["EXEC"]).await;
    assert_eq!(
        r,
        Reply::Array(Some(vec![Reply::Simple(
            "Background saving scheduled".into()
        )]))
    );
}
