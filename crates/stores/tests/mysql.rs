//! `MysqlStore` against a real, temporary MariaDB server (skipped loudly
//! when MariaDB is not installed; see `tiercache-testkit`).

use bytes::Bytes;
use mysql_async::prelude::Queryable;
use std::ops::Bound;
use std::time::{Duration, Instant};
use tiercache_engine::testing::conformance::{check_store, Capabilities};
use tiercache_engine::{now_ms, Entry, Mutation, Store, ValueKind};
use tiercache_stores::{MysqlStore, SqlOptions};
use tiercache_testkit::Mariadb;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn opts(timeout_ms: u64) -> SqlOptions {
    SqlOptions {
        pool_size: 4,
        timeout: Some(Duration::from_millis(timeout_ms)),
    }
}

fn store(db: &Mariadb, table: &str) -> MysqlStore {
    MysqlStore::new("my", &db.url(), table, opts(5_000)).expect("new store")
}

async fn raw_conn(db: &Mariadb) -> mysql_async::Conn {
    mysql_async::Conn::from_url(db.url())
        .await
        .expect("raw connect")
}

#[tokio::test]
async fn conformance() {
    let Some(db) = Mariadb::start() else { return };
    check_store(&store(&db, "kv"), Capabilities::FULL).await;
}

#[tokio::test]
async fn data_persists_across_store_objects_and_tables_are_independent() {
    let Some(db) = Mariadb::start() else { return };
    let a = store(&db, "cache_a");
    let other = store(&db, "cache_b");
    a.set_many(&[(
        b("k"),
        Entry::with_flags("a", Some(now_ms() + 60_000), u32::MAX),
    )])
    .await
    .unwrap();
    other.set_many(&[(b("k"), Entry::new("b"))]).await.unwrap();
    other.delete_many(&[b("k")]).await.unwrap();
    assert_eq!(a.count().await.unwrap(), 1);
    assert_eq!(other.count().await.unwrap(), 0);
    drop(a);

    // A new store object (as after a process restart) sees the data.
    let reopened = store(&db, "cache_a");
    let got = reopened.get_many(&[b("k")]).await.unwrap();
    assert_eq!(
        got[0].as_ref().map(|e| (&e.value[..], e.flags)),
        Some((&b"a"[..], u32::MAX))
    );

    // The schema version is recorded once, for the whole database.
    let mut conn = raw_conn(&db).await;
    let rows: Vec<(String, i64)> = conn
        .query("SELECT name, value FROM tiercache_meta")
        .await
        .unwrap();
    assert_eq!(
        rows,
        vec![(
            "mysql_schema_version".to_string(),
            tiercache_stores::mysql::SCHEMA_VERSION
        )]
    );
}

#[tokio::test]
async fn data_survives_a_server_restart() {
    let Some(mut db) = Mariadb::start() else {
        return;
    };
    let s = store(&db, "kv");
    s.set_many(&[(b("k"), Entry::new("v"))]).await.unwrap();
    db.restart();
    let got = s.get_many(&[b("k")]).await.unwrap();
    assert_eq!(got[0].as_ref().map(|e| e.value.clone()), Some(b("v")));
}

#[tokio::test]
async fn newer_schema_versions_are_refused() {
    let Some(db) = Mariadb::start() else { return };
    store(&db, "kv").count().await.unwrap();
    let mut conn = raw_conn(&db).await;
    conn.query_drop("UPDATE tiercache_meta SET value = 99 WHERE name = 'mysql_schema_version'")
        .await
        .unwrap();
    let e = store(&db, "kv").count().await.unwrap_err();
    assert!(e.to_string().contains("schema version 99"), "{e}");
}

#[tokio::test]
async fn a_version_1_database_is_migrated_in_place() {
    let Some(db) = Mariadb::start() else { return };
    // What a version-1 build created: a 32-bit flags column.
    let mut conn = raw_conn(&db).await;
    conn.query_drop(
        "CREATE TABLE tiercache_meta (name VARCHAR(64) NOT NULL PRIMARY KEY, value BIGINT NOT NULL); \
         INSERT INTO tiercache_meta VALUES ('mysql_schema_version', 1); \
         CREATE TABLE old (`key` VARBINARY(1056) NOT NULL PRIMARY KEY, long_key MEDIUMBLOB NULL, \
         value LONGBLOB NOT NULL, expires_at BIGINT NULL, flags INT UNSIGNED NOT NULL DEFAULT 0); \
         INSERT INTO old (`key`, value, flags) VALUES ('k', 'v', 4294967295)",
    )
    .await
    .unwrap();
    let s = store(&db, "old");
    let got = s.get_many(&[b("k")]).await.unwrap();
    assert_eq!(
        got[0],
        Some(Entry::with_flags("v", None, u32::MAX)),
        "old rows read as strings"
    );
    let h = Entry::with_kind("fields", None, 7, ValueKind::Hash);
    s.set_many(&[(b("h"), h.clone())]).await.unwrap();
    assert_eq!(s.get_many(&[b("h")]).await.unwrap()[0], Some(h));
    let (ty, version): (String, i64) = conn
        .query_first(
            "SELECT c.DATA_TYPE, m.value FROM information_schema.COLUMNS c, tiercache_meta m \
             WHERE c.TABLE_SCHEMA = DATABASE() AND c.TABLE_NAME = 'old' \
             AND c.COLUMN_NAME = 'flags' AND m.name = 'mysql_schema_version'",
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!((ty.as_str(), version), ("bigint", 2));
}

#[tokio::test]
async fn bad_table_names_are_refused() {
    for bad in ["", "kv; DROP TABLE x", "a`b", "1kv", "tiercache_meta"] {
        let e = MysqlStore::new("my", "mysql://u@127.0.0.1:1/db", bad, opts(100)).expect_err(bad);
        assert!(e.to_string().contains("invalid table name"), "{e}");
    }
}

#[tokio::test]
async fn long_keys_round_trip_and_list_in_byte_order() {
    let Some(db) = Mariadb::start() else { return };
    let s = store(&db, "kv");
    // Up to SPEC's 64 KiB, beyond InnoDB's 3072-byte index limit; several
    // share their first 1024 bytes (a tie group in the index).
    let head = vec![b'k'; 1024];
    let mut keys: Vec<Bytes> = vec![Bytes::from(head.clone())];
    for (i, len) in [1025usize, 3073, 65_536, 1030, 2000].iter().enumerate() {
        let mut k = head.clone();
        k.resize(*len, b'a' + i as u8);
        keys.push(Bytes::from(k));
    }
    let entries: Vec<(Bytes, Entry)> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.clone(), Entry::new(format!("v{i}"))))
        .collect();
    s.set_many(&entries).await.unwrap();
    let got = s.get_many(&keys).await.unwrap();
    for (i, g) in got.iter().enumerate() {
        assert_eq!(
            g.as_ref().map(|e| e.value.clone()),
            Some(b(&format!("v{i}")))
        );
    }
    let mut near = keys[3].to_vec();
    *near.last_mut().unwrap() ^= 1;
    assert!(s.get_many(&[Bytes::from(near)]).await.unwrap()[0].is_none());

    let mut sorted = keys.clone();
    sorted.sort();
    for page in 1..=keys.len() {
        let mut listed = Vec::new();
        let mut start: Option<Bytes> = None;
        loop {
            let bound = start.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
            let got = s.scan_keys(bound, b"kk", page, now_ms()).await.unwrap();
            listed.extend(got.iter().cloned());
            if got.len() < page {
                break;
            }
            start = got.last().cloned();
        }
        assert_eq!(listed, sorted, "pages of {page}");
    }
    s.apply(&[Mutation::Delete(keys[3].clone())]).await.unwrap();
    assert_eq!(s.count().await.unwrap(), keys.len() as u64 - 1);
}

#[tokio::test]
async fn outage_fails_promptly_and_recovers_without_a_new_store() {
    let Some(mut db) = Mariadb::start() else {
        return;
    };
    let s = MysqlStore::new("my", &db.url(), "kv", opts(2_000)).unwrap();
    s.set_many(&[(b("k"), Entry::new("v"))]).await.unwrap();
    // Several pooled connections, all about to break.
    let reads: Vec<_> = (0..4)
        .map(|_| {
            let s = s.clone();
            tokio::spawn(async move { s.get_many(&[b("k")]).await.map(drop) })
        })
        .collect();
    for r in reads {
        r.await.unwrap().unwrap();
    }

    db.kill();
    let t = Instant::now();
    let e = s.get_many(&[b("k")]).await.unwrap_err();
    assert!(
        t.elapsed() < Duration::from_millis(2_500),
        "{:?}",
        t.elapsed()
    );
    let msg = e.to_string();
    eprintln!("outage error: {msg}");
    assert!(msg.starts_with("store 'my': mysql 127.0.0.1:"), "{msg}");
    assert!(msg.contains("(get_many)"), "{msg}");
    assert!(
        msg.contains("connection refused") || msg.contains("connection closed"),
        "{msg}"
    );
    let e = s.set_many(&[(b("k2"), Entry::new("v"))]).await.unwrap_err();
    assert!(e.to_string().contains("connection refused"), "{e}");

    db.restart();
    // The same store object: broken pooled connections are replaced.
    for _ in 0..6 {
        let got = s.get_many(&[b("k")]).await.expect("after restart");
        assert_eq!(got[0].as_ref().map(|e| e.value.clone()), Some(b("v")));
    }
    s.set_many(&[(b("k2"), Entry::new("w"))]).await.unwrap();
    assert_eq!(s.count().await.unwrap(), 2);
}

#[tokio::test]
async fn construction_does_not_need_the_server_and_the_schema_comes_later() {
    let Some(mut db) = Mariadb::start() else {
        return;
    };
    db.kill();
    let s = MysqlStore::new("my", &db.url(), "late", opts(1_000)).unwrap();
    assert!(s.count().await.is_err());
    db.restart();
    s.set_many(&[(b("k"), Entry::new("v"))]).await.unwrap();
    assert_eq!(s.count().await.unwrap(), 1);
}

#[tokio::test]
async fn a_hung_server_times_out_and_recovers() {
    let Some(db) = Mariadb::start() else { return };
    let s = MysqlStore::new("my", &db.url(), "kv", opts(700)).unwrap();
    s.set_many(&[(b("k"), Entry::new("v"))]).await.unwrap();

    db.pause();
    for op in ["get", "set"] {
        let t = Instant::now();
        let e = match op {
            "get" => s.get_many(&[b("k")]).await.map(drop).unwrap_err(),
            _ => s.set_many(&[(b("k"), Entry::new("w"))]).await.unwrap_err(),
        };
        let took = t.elapsed();
        eprintln!("{op} on a paused server: {e} after {took:?}");
        assert!(
            took >= Duration::from_millis(600) && took < Duration::from_millis(1_500),
            "{op}: {took:?}"
        );
        assert!(e.to_string().contains("timed out"), "{op}: {e}");
    }
    db.resume();
    let got = s.get_many(&[b("k")]).await.unwrap();
    assert_eq!(got[0].as_ref().map(|e| e.value.clone()), Some(b("v")));
}

#[tokio::test]
async fn a_locked_table_times_out() {
    let Some(db) = Mariadb::start() else { return };
    let s = MysqlStore::new("my", &db.url(), "kv", opts(700)).unwrap();
    s.set_many(&[(b("k"), Entry::new("v"))]).await.unwrap();
    let mut locker = raw_conn(&db).await;
    locker.query_drop("LOCK TABLES kv WRITE").await.unwrap();
    let t = Instant::now();
    let e = s.get_many(&[b("k")]).await.map(drop).unwrap_err();
    let took = t.elapsed();
    assert!(took < Duration::from_millis(1_500), "{took:?}");
    assert!(e.to_string().contains("timed out"), "{e}");
    locker.query_drop("UNLOCK TABLES").await.unwrap();
    let got = s.get_many(&[b("k")]).await.unwrap();
    assert_eq!(got[0].as_ref().map(|e| e.value.clone()), Some(b("v")));
}

#[tokio::test]
async fn authentication_failure_is_named() {
    let Some(db) = Mariadb::start() else { return };
    let url = db.url().replace(":tiercache@", ":wrong@");
    let s = MysqlStore::new("my", &url, "kv", opts(2_000)).unwrap();
    let e = s.count().await.unwrap_err().to_string();
    assert!(e.contains("authentication failed"), "{e}");
    assert!(!e.contains("wrong"), "no password in errors: {e}");
}

#[tokio::test]
async fn purge_removes_only_expired_rows() {
    let Some(db) = Mariadb::start() else { return };
    let s = store(&db, "kv");
    let now = now_ms();
    s.set_many(&[
        (b("old"), Entry::with_expiry("x", Some(now - 10))),
        (b("live"), Entry::with_expiry("y", Some(now + 60_000))),
        (b("forever"), Entry::new("z")),
    ])
    .await
    .unwrap();
    assert_eq!(s.purge_expired(now_ms()).await.unwrap(), 1);
    assert_eq!(s.count().await.unwrap(), 2);
    let mut conn = raw_conn(&db).await;
    let n: Option<u64> = conn.query_first("SELECT count(*) FROM kv").await.unwrap();
    assert_eq!(n, Some(2), "the expired row is physically gone");
}

#[tokio::test]
async fn large_values_are_split_across_statements() {
    let Some(db) = Mariadb::start() else { return };
    let s = store(&db, "kv");
    // 20 values of 1 MiB: over the 8 MiB statement budget, one transaction.
    let big = Bytes::from(vec![7u8; 1 << 20]);
    let entries: Vec<(Bytes, Entry)> = (0..20)
        .map(|i| (b(&format!("big{i}")), Entry::new(big.clone())))
        .collect();
    s.set_many(&entries).await.unwrap();
    let keys: Vec<Bytes> = entries.iter().map(|(k, _)| k.clone()).collect();
    let got = s.get_many(&keys).await.unwrap();
    assert!(got
        .iter()
        .all(|g| g.as_ref().map(|e| e.value.len()) == Some(1 << 20)));
}

#[tokio::test]
async fn connections_are_reused() {
    let Some(db) = Mariadb::start() else { return };
    let s = store(&db, "kv"); // a pool of 4
    s.set_many(&[(b("k"), Entry::new("v"))]).await.unwrap();
    let mut raw = raw_conn(&db).await;
    let connections = |row: Option<(String, u64)>| row.expect("status row").1;
    let before = connections(
        raw.query_first("SHOW GLOBAL STATUS LIKE 'Connections'")
            .await
            .unwrap(),
    );
    for _ in 0..50 {
        s.get_many(&[b("k")]).await.unwrap();
    }
    let after = connections(
        raw.query_first("SHOW GLOBAL STATUS LIKE 'Connections'")
            .await
            .unwrap(),
    );
    assert!(
        after - before <= 4,
        "50 sequential calls opened {} connections",
        after - before
    );
}

#[tokio::test]
async fn a_constraint_violation_is_named_and_rolls_back_the_batch() {
    let Some(db) = Mariadb::start() else { return };
    let s = store(&db, "kv");
    s.count().await.unwrap(); // creates the table
    let mut conn = raw_conn(&db).await;
    conn.query_drop("ALTER TABLE kv ADD CONSTRAINT small CHECK (length(value) < 10)")
        .await
        .unwrap();
    let e = s
        .apply(&[
            Mutation::Set(b("ok"), Entry::new("fine")),
            Mutation::Set(b("big"), Entry::new("far too long a value")),
        ])
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("constraint violation"), "{e}");
    assert!(e.contains("(apply)"), "{e}");
    assert_eq!(s.count().await.unwrap(), 0, "all or nothing");
}

#[tokio::test]
async fn a_dropped_table_is_created_again() {
    let Some(db) = Mariadb::start() else { return };
    let s = store(&db, "kv");
    s.set_many(&[(b("k"), Entry::new("v"))]).await.unwrap();
    raw_conn(&db)
        .await
        .query_drop("DROP TABLE kv")
        .await
        .unwrap();
    // The same store (with statements prepared against the old table).
    assert_eq!(s.get_many(&[b("k")]).await.unwrap(), vec![None]);
    s.set_many(&[(b("k"), Entry::new("w"))]).await.unwrap();
    let got = s.get_many(&[b("k")]).await.unwrap();
    assert_eq!(got[0].as_ref().map(|e| e.value.clone()), Some(b("w")));
}
