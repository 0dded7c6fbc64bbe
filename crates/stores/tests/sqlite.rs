//! Behaviour of `SqliteStore` against a real file.

use bytes::Bytes;
use std::path::Path;
use std::sync::Arc;
use tiercache_engine::{now_ms, Entry, Mutation, Store};
use tiercache_stores::SqliteStore;

fn open(path: &Path) -> SqliteStore {
    SqliteStore::open("main", path, "kv").expect("open")
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn values(got: &[Option<Entry>]) -> Vec<Option<Bytes>> {
    got.iter()
        .map(|e| e.as_ref().map(|e| e.value.clone()))
        .collect()
}

#[tokio::test]
async fn round_trip_binary_and_empty() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("nested/dir/cache.db"));
    let binary_key = Bytes::from_static(&[0, 255, 0, 1, 0xfe]);
    let binary_val = Bytes::from((0..=255u8).collect::<Vec<_>>());
    let expiry = now_ms() + 3_600_000;
    store
        .set_many(&[
            (binary_key.clone(), Entry::new(binary_val.clone())),
            (b("empty"), Entry::new(Bytes::new())),
            (
                Bytes::new(),
                Entry::with_expiry(b("empty key"), Some(expiry)),
            ),
        ])
        .await
        .unwrap();
    let got = store
        .get_many(&[binary_key, b("empty"), Bytes::new(), b("absent")])
        .await
        .unwrap();
    assert_eq!(got[0], Some(Entry::new(binary_val)));
    assert_eq!(got[1], Some(Entry::new(Bytes::new())));
    assert_eq!(
        got[2],
        Some(Entry::with_expiry(b("empty key"), Some(expiry)))
    );
    assert_eq!(got[3], None);
    assert_eq!(store.count().await.unwrap(), 3);
    assert_eq!(store.get_many(&[]).await.unwrap(), vec![]);
}

#[tokio::test]
async fn get_many_keeps_input_order_and_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("c.db"));
    store
        .set_many(&[(b("a"), Entry::new("1")), (b("b"), Entry::new("2"))])
        .await
        .unwrap();
    let got = store
        .get_many(&[b("b"), b("x"), b("a"), b("b"), b("a")])
        .await
        .unwrap();
    assert_eq!(
        values(&got),
        vec![Some(b("2")), None, Some(b("1")), Some(b("2")), Some(b("1"))]
    );
}

#[tokio::test]
async fn expiry_honoured_by_reads_count_and_purge() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("c.db"));
    let now = now_ms();
    store
        .set_many(&[
            (b("past"), Entry::with_expiry("p", Some(now - 1))),
            (b("exactly"), Entry::with_expiry("e", Some(now))),
            (b("future"), Entry::with_expiry("f", Some(now + 3_600_000))),
            (b("forever"), Entry::new("n")),
            (b("huge"), Entry::with_expiry("h", Some(u64::MAX))),
        ])
        .await
        .unwrap();
    let got = store
        .get_many(&[
            b("past"),
            b("exactly"),
            b("future"),
            b("forever"),
            b("huge"),
        ])
        .await
        .unwrap();
    assert_eq!(
        values(&got),
        vec![None, None, Some(b("f")), Some(b("n")), Some(b("h"))]
    );
    assert_eq!(store.count().await.unwrap(), 3);

    // Expired rows are still on disk until purged.
    let rows = || {
        let conn = rusqlite::Connection::open(store.path()).unwrap();
        conn.query_row("SELECT count(*) FROM kv", [], |r| r.get::<_, i64>(0))
            .unwrap()
    };
    assert_eq!(rows(), 5);
    assert_eq!(store.purge_expired(now).await.unwrap(), 2);
    assert_eq!(rows(), 3);
    assert_eq!(store.purge_expired(now).await.unwrap(), 0);
    // Purging at a later instant takes the entry that has expired by then.
    assert_eq!(store.purge_expired(now + 3_600_000).await.unwrap(), 1);
    assert_eq!(store.count().await.unwrap(), 2);
}

#[tokio::test]
async fn batches_larger_than_the_parameter_limit() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("c.db"));
    let n = 70_000;
    let entries: Vec<(Bytes, Entry)> = (0..n)
        .map(|i| {
            (
                Bytes::from(format!("key{i}")),
                Entry::new(Bytes::from(format!("val{i}"))),
            )
        })
        .collect();
    store.set_many(&entries).await.unwrap();
    assert_eq!(store.count().await.unwrap(), n as u64);

    // Reverse order plus absent keys, to check mapping back across chunks.
    let mut keys: Vec<Bytes> = entries.iter().rev().map(|(k, _)| k.clone()).collect();
    keys.push(b("nope"));
    let got = store.get_many(&keys).await.unwrap();
    assert_eq!(got.len(), n + 1);
    for (i, e) in got[..n].iter().enumerate() {
        assert_eq!(
            e.as_ref().unwrap().value,
            format!("val{}", n - 1 - i),
            "slot {i}"
        );
    }
    assert!(got[n].is_none());

    let even: Vec<Bytes> = (0..n)
        .step_by(2)
        .map(|i| Bytes::from(format!("key{i}")))
        .collect();
    store.delete_many(&even).await.unwrap();
    assert_eq!(store.count().await.unwrap(), (n / 2) as u64);
}

#[tokio::test]
async fn apply_mixes_sets_and_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("c.db"));
    store
        .set_many(&[(b("a"), Entry::new("1")), (b("b"), Entry::new("2"))])
        .await
        .unwrap();
    store
        .apply(&[
            Mutation::Delete(b("a")),
            Mutation::Set(b("b"), Entry::new("22")),
            Mutation::Set(b("c"), Entry::new("3")),
            Mutation::Delete(b("absent")),
        ])
        .await
        .unwrap();
    let got = store.get_many(&[b("a"), b("b"), b("c")]).await.unwrap();
    assert_eq!(values(&got), vec![None, Some(b("22")), Some(b("3"))]);
    assert_eq!(store.count().await.unwrap(), 2);

    // Same key set then deleted (and the reverse) within one batch: the last one counts.
    store
        .apply(&[
            Mutation::Set(b("x"), Entry::new("x")),
            Mutation::Delete(b("x")),
            Mutation::Delete(b("y")),
            Mutation::Set(b("y"), Entry::new("y")),
        ])
        .await
        .unwrap();
    let got = store.get_many(&[b("x"), b("y")]).await.unwrap();
    assert_eq!(values(&got), vec![None, Some(b("y"))]);
}

#[tokio::test]
async fn last_write_wins_within_one_batch() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("c.db"));
    store
        .set_many(&[
            (b("k"), Entry::new("first")),
            (b("other"), Entry::new("o")),
            (b("k"), Entry::with_expiry("last", Some(now_ms() + 60_000))),
        ])
        .await
        .unwrap();
    let got = store.get_many(&[b("k")]).await.unwrap();
    assert_eq!(got[0].as_ref().unwrap().value, "last");
    assert!(got[0].as_ref().unwrap().expires_at.is_some());
    assert_eq!(store.count().await.unwrap(), 2);
}

#[tokio::test]
async fn clear_removes_everything() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("c.db"));
    store
        .set_many(&[(b("a"), Entry::new("1")), (b("b"), Entry::new("2"))])
        .await
        .unwrap();
    store.clear().await.unwrap();
    assert_eq!(store.count().await.unwrap(), 0);
    assert_eq!(store.get_many(&[b("a")]).await.unwrap(), vec![None]);
}

#[tokio::test]
async fn reopen_persists_and_file_is_plain_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    {
        let store = open(&path);
        store
            .set_many(&[(b("a"), Entry::new("1")), (b("b"), Entry::new("2"))])
            .await
            .unwrap();
        store.delete_many(&[b("b")]).await.unwrap();
    }
    let store = open(&path);
    let got = store.get_many(&[b("a"), b("b")]).await.unwrap();
    assert_eq!(values(&got), vec![Some(b("1")), None]);

    // Any SQLite client can read it; the schema version is recorded.
    let conn = rusqlite::Connection::open(&path).unwrap();
    assert_eq!(
        conn.query_row("SELECT count(*) FROM kv", [], |r| r.get::<_, i64>(0))
            .unwrap(),
        1
    );
    let version: i64 = conn
        .query_row(
            "SELECT value FROM tiercache_meta WHERE name = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(version, 2);
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[tokio::test]
async fn two_tables_in_one_file_are_independent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    let one = SqliteStore::open("one", &path, "one").unwrap();
    let two = SqliteStore::open("two", &path, "two").unwrap();
    one.set_many(&[(b("k"), Entry::new("1"))]).await.unwrap();
    assert_eq!(two.get_many(&[b("k")]).await.unwrap(), vec![None]);
    assert_eq!(one.count().await.unwrap(), 1);
    assert_eq!(two.count().await.unwrap(), 0);
}

#[tokio::test]
async fn newer_schema_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    drop(open(&path));
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "UPDATE tiercache_meta SET value = 7 WHERE name = 'schema_version'",
        [],
    )
    .unwrap();
    drop(conn);

    let err = SqliteStore::open("main", &path, "kv").unwrap_err();
    assert_eq!(err.store, "main");
    let msg = err.to_string();
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(msg.contains("version 7"), "{msg}");
    assert!(msg.contains("version 2"), "{msg}");
}

#[tokio::test]
async fn flags_round_trip_through_upserts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    let store = open(&path);
    store
        .set_many(&[
            (b("a"), Entry::with_flags("1", None, u32::MAX)),
            (b("b"), Entry::with_flags("2", Some(u64::MAX / 4), 7)),
        ])
        .await
        .unwrap();
    // An upsert replaces the flags too (a Redis SET writes 0).
    store
        .apply(&[tiercache_engine::Mutation::Set(b("b"), Entry::new("3"))])
        .await
        .unwrap();
    drop(store);
    let got = open(&path).get_many(&[b("a"), b("b")]).await.unwrap();
    assert_eq!(got[0], Some(Entry::with_flags("1", None, u32::MAX)));
    assert_eq!(got[1], Some(Entry::new("3")));
}

/// A database as schema version 1 wrote it: no flags column.
fn create_version_1(path: &std::path::Path, tables: &[&str]) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(
        "CREATE TABLE tiercache_meta (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL);
         INSERT INTO tiercache_meta VALUES ('schema_version', 1);",
    )
    .unwrap();
    for t in tables {
        conn.execute_batch(&format!(
            "CREATE TABLE {t} (key BLOB PRIMARY KEY NOT NULL, value BLOB NOT NULL, expires_at INTEGER) WITHOUT ROWID;
             INSERT INTO {t} VALUES (x'6f6c64', x'7631', NULL);"
        ))
        .unwrap();
    }
}

#[tokio::test]
async fn version_1_files_are_migrated_in_place_table_by_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    create_version_1(&path, &["kv", "other"]);
    let kv = SqliteStore::open("main", &path, "kv").unwrap();
    // The old row reads back with flags 0, and new rows keep theirs.
    assert_eq!(
        kv.get_many(&[b("old")]).await.unwrap(),
        vec![Some(Entry::new("v1"))]
    );
    kv.set_many(&[(b("new"), Entry::with_flags("x", None, 9))])
        .await
        .unwrap();
    assert_eq!(
        kv.get_many(&[b("new")]).await.unwrap()[0]
            .as_ref()
            .unwrap()
            .flags,
        9
    );
    // The second table of the same file is migrated when its store opens,
    // although the file's version was already bumped by the first.
    let other = SqliteStore::open("other", &path, "other").unwrap();
    other
        .set_many(&[(b("o"), Entry::with_flags("y", None, 3))])
        .await
        .unwrap();
    assert_eq!(
        other.get_many(&[b("old"), b("o")]).await.unwrap(),
        vec![
            Some(Entry::new("v1")),
            Some(Entry::with_flags("y", None, 3))
        ]
    );
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn
        .query_row(
            "SELECT value FROM tiercache_meta WHERE name = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(version, 2);
    // Reopening a migrated file is a no-op.
    drop((kv, other));
    let kv = SqliteStore::open("main", &path, "kv").unwrap();
    assert_eq!(kv.count().await.unwrap(), 2);
}

#[tokio::test]
async fn bad_table_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["", "kv; DROP TABLE x", "1kv", "tiercache_meta"] {
        let err = SqliteStore::open("main", &dir.path().join("c.db"), bad).unwrap_err();
        assert!(
            err.to_string().contains("invalid table name"),
            "{bad}: {err}"
        );
    }
}

#[tokio::test]
async fn unopenable_paths_give_errors() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, b"not a directory").unwrap();
    let err = SqliteStore::open("main", &file.join("sub/c.db"), "kv").unwrap_err();
    assert_eq!(err.store, "main");
    assert!(err.to_string().contains("plain-file"), "{err}");

    // A file that is not a database at all.
    let junk = dir.path().join("junk.db");
    std::fs::write(&junk, vec![0x42u8; 8192]).unwrap();
    let err = SqliteStore::open("main", &junk, "kv").unwrap_err();
    assert!(err.to_string().contains("junk.db"), "{err}");

    // A directory where the file should be.
    let err = SqliteStore::open("main", dir.path(), "kv").unwrap_err();
    assert_eq!(err.store, "main");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_reads_while_writing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open(&dir.path().join("c.db")));
    let base: Vec<(Bytes, Entry)> = (0..500)
        .map(|i| (Bytes::from(format!("base{i}")), Entry::new("base")))
        .collect();
    store.set_many(&base).await.unwrap();
    let keys: Vec<Bytes> = base.iter().map(|(k, _)| k.clone()).collect();

    let writer = {
        let store = Arc::clone(&store);
        tokio::spawn(async move {
            for round in 0..50 {
                let batch: Vec<(Bytes, Entry)> = (0..200)
                    .map(|i| (Bytes::from(format!("w{round}-{i}")), Entry::new("w")))
                    .collect();
                store.set_many(&batch).await.unwrap();
            }
        })
    };
    let readers: Vec<_> = (0..8)
        .map(|_| {
            let store = Arc::clone(&store);
            let keys = keys.clone();
            tokio::spawn(async move {
                for _ in 0..30 {
                    let got = store.get_many(&keys).await.unwrap();
                    assert!(got
                        .iter()
                        .all(|e| e.as_ref().is_some_and(|e| e.value == "base")));
                    assert!(store.count().await.unwrap() >= 500);
                }
            })
        })
        .collect();
    writer.await.unwrap();
    for r in readers {
        r.await.unwrap();
    }
    assert_eq!(store.count().await.unwrap(), 500 + 50 * 200);
}

#[tokio::test]
async fn scan_keys_in_byte_order_with_prefix_range_and_expiry() {
    use std::ops::Bound;
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("scan.db"));
    let now = now_ms();
    let mut entries: Vec<(Bytes, Entry)> =
        ["b", "a", "ab", "a\u{7f}", "c", "user:2", "user:1", "user;"]
            .iter()
            .map(|k| (b(k), Entry::new(b("v"))))
            .collect();
    entries.push((Bytes::from_static(&[b'a', 0xff]), Entry::new(b("v"))));
    entries.push((b("a-expired"), Entry::with_expiry(b("v"), Some(now - 1))));
    entries.push((b("a-later"), Entry::with_expiry(b("v"), Some(now + 60_000))));
    store.set_many(&entries).await.unwrap();

    let all = store
        .scan_keys(Bound::Unbounded, b"", 100, now)
        .await
        .unwrap();
    let mut expected: Vec<Bytes> = entries
        .iter()
        .filter(|(_, e)| !e.is_expired_at(now))
        .map(|(k, _)| k.clone())
        .collect();
    expected.sort();
    assert_eq!(all, expected, "memcmp order, expired left out");

    let page = store
        .scan_keys(Bound::Excluded(b"a-later"), b"", 2, now)
        .await
        .unwrap();
    assert_eq!(page, vec![b("ab"), b("a\u{7f}")]);
    let a = store
        .scan_keys(Bound::Included(b"a"), b"a", 100, now)
        .await
        .unwrap();
    assert!(
        a.iter().all(|k| k.starts_with(b"a")) && a.len() == 5,
        "{a:?}"
    );
    let users = store
        .scan_keys(Bound::Unbounded, b"user:", 100, now)
        .await
        .unwrap();
    assert_eq!(users, vec![b("user:1"), b("user:2")]);
    let high = store
        .scan_keys(Bound::Unbounded, &[b'a', 0xff], 100, now)
        .await
        .unwrap();
    assert_eq!(high, vec![Bytes::from_static(&[b'a', 0xff])]);

    let stats = store.key_stats(now).await.unwrap();
    assert_eq!((stats.keys, stats.expires), (expected.len() as u64, 1));
    assert!(stats.avg_ttl_ms > 50_000 && stats.avg_ttl_ms <= 60_000);
}

#[tokio::test]
async fn sqlite_meets_the_store_contract() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("c.db"));
    tiercache_engine::testing::conformance::check_store(
        &store,
        tiercache_engine::testing::conformance::Capabilities::FULL,
    )
    .await;
}
