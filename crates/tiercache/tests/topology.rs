//! Store topologies from configuration: nested combinators (a bucket of
//! buffers of SQLite + file), named stores shared, children named after
//! where they sit, and a round trip through `open_engine` and `serve`.

mod support;

use std::sync::Arc;
use std::time::Duration;
use support::{Reply, Server};
use tiercache::stores::SqliteStore;
use tiercache::{Assembler, Store};

const TOPOLOGY: &str = r#"
[memory]
max_bytes = "1MiB"

[namespace.default]
tiers = ["shards"]
write = "through"

[namespace."user:"]
tiers = [{ type = "multi", report_success = "any", stores = ["shared", { type = "sqlite", path = "u2.db" }] }]
write = "back"
flush_interval = "50ms"

[store.shared]
type = "sqlite"
path = "shared.db"

[store.shards]
type = "bucket"
hash = "key_hash"
buckets = [
  { type = "buffer", primary = { type = "sqlite", path = "s0.db" }, secondary = { type = "file", path = "spool0", max_size = "1MiB" }, retry_interval = "1s", timeout = "5s" },
  { type = "buffer", primary = { type = "sqlite", path = "s1.db", timeout = "2s" }, secondary = { type = "file", path = "spool1", rotate_period = "hourly" } },
]
"#;

fn config() -> tiercache::Config {
    tiercache::config::parse(TOPOLOGY, "topology.toml").unwrap()
}

#[tokio::test]
async fn a_bucket_of_buffers_round_trips_through_open_engine() {
    let dir = tempfile::tempdir().unwrap();
    let config = config();
    tiercache::check_supported(&config).unwrap();
    let engine = tiercache::open_engine(&config, dir.path()).await.unwrap();
    for i in 0..100 {
        engine.set(format!("k{i}"), format!("v{i}")).await.unwrap();
        engine
            .set(format!("user:{i}"), format!("u{i}"))
            .await
            .unwrap();
    }
    engine.shutdown().await.unwrap();
    drop(engine);

    // Both shards hold part of the keys; both replicas hold all users.
    let mut total = 0;
    for shard in ["s0.db", "s1.db"] {
        let s = SqliteStore::open("check", &dir.path().join(shard), "kv").unwrap();
        let n = s.count().await.unwrap();
        assert!(n > 20, "{shard} has {n} keys");
        total += n;
    }
    assert_eq!(total, 100);
    for replica in ["shared.db", "u2.db"] {
        let s = SqliteStore::open("check", &dir.path().join(replica), "kv").unwrap();
        assert_eq!(s.count().await.unwrap(), 100, "{replica}");
    }
    assert!(dir.path().join("spool0").is_dir() && dir.path().join("spool1").is_dir());

    // A new engine over the same files reads everything back from the stores.
    let engine = tiercache::open_engine(&config, dir.path()).await.unwrap();
    for i in [0, 37, 99] {
        let got = engine
            .get(format!("k{i}").as_bytes())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got.value, format!("v{i}"));
        let got = engine
            .get(format!("user:{i}").as_bytes())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got.value, format!("u{i}"));
    }
    assert!(engine.get(b"k100").await.unwrap().is_none());
    engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_named_store_is_one_instance_wherever_it_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let config = tiercache::config::parse(
        r#"
[namespace.default]
tiers = ["both"]
[namespace."a:"]
tiers = ["x"]
[store.x]
type = "sqlite"
path = "x.db"
[store.both]
type = "multi"
stores = ["x", { type = "null" }]
"#,
        "shared.toml",
    )
    .unwrap();
    let mut stores = Assembler::new(&config, dir.path());
    let x1 = stores.named_store("x").await.unwrap();
    let both = stores.named_store("both").await.unwrap();
    let x2 = stores.named_store("x").await.unwrap();
    assert!(Arc::ptr_eq(&x1, &x2));
    assert_eq!(x1.name(), "x");
    assert_eq!(both.name(), "both");
    // Writes through the multi land in the one `x`.
    both.set_many(&[("k".into(), tiercache::Entry::new("v"))])
        .await
        .unwrap();
    assert_eq!(x1.count().await.unwrap(), 1);
}

#[tokio::test]
async fn errors_name_the_nested_store_at_fault() {
    let dir = tempfile::tempdir().unwrap();
    // A directory where the SQLite file should be.
    std::fs::create_dir_all(dir.path().join("s1.db")).unwrap();
    let err = tiercache::open_engine(&config(), dir.path())
        .await
        .err()
        .expect("cannot open a directory as SQLite");
    assert!(
        err.to_string().contains("'shards.buckets[1].primary'"),
        "{err}"
    );
}

#[test]
fn serve_round_trips_through_the_topology() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let config = dir.path().join("topology.toml");
    std::fs::write(&config, TOPOLOGY).unwrap();
    let cfg = config.to_str().unwrap();

    let server = Server::start_with(&data, &["--config", cfg]);
    let mut c = server.client();
    for i in 0..50 {
        let k = format!("key:{i}");
        let v = format!("value-{i}");
        assert_eq!(
            c.call(&[b"SET", k.as_bytes(), v.as_bytes()]),
            Reply::Simple("OK".into())
        );
    }
    assert_eq!(c.call(&[b"DEL", b"key:7"]), Reply::Int(1));
    assert_eq!(c.call(&[b"DBSIZE"]), Reply::Int(49));
    assert!(server.sigterm(Duration::from_secs(20)).success());

    let server = Server::start_with(&data, &["--config", cfg]);
    let mut c = server.client();
    assert_eq!(
        c.call(&[b"GET", b"key:42"]),
        Reply::Bulk(Some(b"value-42".to_vec()))
    );
    assert_eq!(c.call(&[b"GET", b"key:7"]), Reply::Bulk(None));
    assert_eq!(c.call(&[b"DBSIZE"]), Reply::Int(49));
    assert!(server.sigterm(Duration::from_secs(20)).success());
}
