//! `FileStore` on a real directory: conformance, reopen, rotation, torn
//! tails, the `current` symlink and the ordered replay.

use bytes::Bytes;
use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tiercache_engine::testing::conformance::{check_store, Capabilities};
use tiercache_engine::{Entry, Mutation, Store};
use tiercache_stores::{FileStore, FileStoreOptions, LogPosition, Logged, ReplayLog, RotatePeriod};

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn open(dir: &Path, opts: FileStoreOptions) -> FileStore {
    FileStore::open("spool", dir, opts).expect("open")
}

fn names(store: &FileStore) -> Vec<String> {
    store
        .segments()
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_owned())
        .collect()
}

async fn replay_all(store: &FileStore) -> Vec<Mutation> {
    let mut out = Vec::new();
    let mut pos = LogPosition::START;
    loop {
        let (chunk, next) = store.read_from(pos, 7).await.unwrap();
        if chunk.is_empty() {
            return out;
        }
        out.extend(chunk);
        pos = next;
    }
}

#[tokio::test]
async fn conformance() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(
        dir.path(),
        FileStoreOptions {
            max_size: Some(64 << 10),
            ..Default::default()
        },
    );
    check_store(&store, Capabilities::FULL).await;
}

#[tokio::test]
async fn reopen_rebuilds_the_index_and_keeps_appending() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), FileStoreOptions::default());
    store
        .set_many(&[
            (b("a"), Entry::new("1")),
            (b("b"), Entry::with_flags("2", Some(u64::MAX - 1), 9)),
            (b("c"), Entry::new("3")),
        ])
        .await
        .unwrap();
    store.delete_many(&[b("c")]).await.unwrap();
    store.set_many(&[(b("a"), Entry::new("1b"))]).await.unwrap();
    drop(store);

    let store = open(dir.path(), FileStoreOptions::default());
    let got = store.get_many(&[b("a"), b("b"), b("c")]).await.unwrap();
    assert_eq!(got[0], Some(Entry::new("1b")));
    assert_eq!(got[1], Some(Entry::with_flags("2", Some(u64::MAX - 1), 9)));
    assert_eq!(got[2], None);
    assert_eq!(store.count().await.unwrap(), 2);
    assert_eq!(store.logged(), 5);
    assert_eq!(
        names(&store),
        vec!["tiercache_00001"],
        "one segment, reused"
    );
    store.set_many(&[(b("d"), Entry::new("4"))]).await.unwrap();
    assert_eq!(names(&store), vec!["tiercache_00001"]);
    assert_eq!(
        store.lookup(&[b("c"), b("d"), b("zz")]).await.unwrap(),
        vec![
            Logged::Deleted,
            Logged::Set(Entry::new("4")),
            Logged::NotLogged
        ]
    );
}

#[tokio::test]
async fn rotation_by_size_and_the_current_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let opts = FileStoreOptions {
        base_filename: "spool".into(),
        max_size: Some(1_000),
        ..Default::default()
    };
    let store = open(dir.path(), opts.clone());
    for i in 0..50 {
        let value = format!("{i:0>100}");
        store
            .set_many(&[(Bytes::from(format!("k{i}")), Entry::new(value))])
            .await
            .unwrap();
    }
    let segs = names(&store);
    assert!(segs.len() >= 6, "rotated by size: {segs:?}");
    for seg in &store.segments() {
        assert!(fs::metadata(seg).unwrap().len() <= 1_000, "{seg:?}");
    }
    let link = store.current_link();
    assert_eq!(link.file_name().unwrap(), "spool_current");
    assert_eq!(
        fs::read_link(&link).unwrap().to_str().unwrap(),
        segs.last().unwrap(),
        "the symlink points at the segment being written"
    );
    // A batch bigger than max_size gets a segment of its own.
    let big = Entry::new(vec![7u8; 3_000]);
    store.set_many(&[(b("big"), big.clone())]).await.unwrap();
    assert_eq!(names(&store).len(), segs.len() + 1);
    drop(store);

    let store = open(dir.path(), opts);
    assert_eq!(store.count().await.unwrap(), 51);
    let got = store
        .get_many(&[b("k0"), b("k49"), b("big")])
        .await
        .unwrap();
    assert_eq!(got[0].as_ref().unwrap().value, format!("{:0>100}", 0));
    assert_eq!(got[1].as_ref().unwrap().value, format!("{:0>100}", 49));
    assert_eq!(got[2], Some(big));
    let log = replay_all(&store).await;
    assert_eq!(log.len(), 51);
    assert_eq!(log[0].key(), "k0");
    assert_eq!(log[50].key(), "big");
}

#[tokio::test]
async fn rotation_by_period_with_an_injected_clock() {
    let dir = tempfile::tempdir().unwrap();
    // 2024-02-29T22:59:59.500Z
    let now = Arc::new(AtomicU64::new(1_709_247_599_500));
    let clock = {
        let now = now.clone();
        Arc::new(move || now.load(Ordering::SeqCst))
    };
    let hourly = FileStoreOptions {
        base_filename: "h".into(),
        rotate_period: RotatePeriod::Hourly,
        clock: clock.clone(),
        ..Default::default()
    };
    let store = open(dir.path(), hourly.clone());
    store.set_many(&[(b("a"), Entry::new("1"))]).await.unwrap();
    store.set_many(&[(b("b"), Entry::new("2"))]).await.unwrap();
    now.fetch_add(1_000, Ordering::SeqCst); // 23:00:00.500
    store.set_many(&[(b("c"), Entry::new("3"))]).await.unwrap();
    now.fetch_add(3_600_000, Ordering::SeqCst); // next day 00:00
    store.delete_many(&[b("a")]).await.unwrap();
    assert_eq!(
        names(&store),
        vec![
            "h-2024-02-29-22_00001",
            "h-2024-02-29-23_00002",
            "h-2024-03-01-00_00003"
        ]
    );
    drop(store);
    // Reopened in the same hour: appends to the last segment.
    let store = open(dir.path(), hourly);
    store.set_many(&[(b("d"), Entry::new("4"))]).await.unwrap();
    assert_eq!(names(&store).len(), 3);
    let keys: Vec<Bytes> = replay_all(&store)
        .await
        .iter()
        .map(|m| m.key().clone())
        .collect();
    assert_eq!(keys, vec![b("a"), b("b"), b("c"), b("a"), b("d")]);

    let daily_dir = tempfile::tempdir().unwrap();
    let daily = open(
        daily_dir.path(),
        FileStoreOptions {
            base_filename: "d".into(),
            rotate_period: RotatePeriod::Daily,
            clock,
            ..Default::default()
        },
    );
    daily.set_many(&[(b("a"), Entry::new("1"))]).await.unwrap();
    now.fetch_add(3_600_000, Ordering::SeqCst); // same day, next hour
    daily.set_many(&[(b("b"), Entry::new("1"))]).await.unwrap();
    now.fetch_add(86_400_000, Ordering::SeqCst);
    daily.set_many(&[(b("c"), Entry::new("1"))]).await.unwrap();
    assert_eq!(
        names(&daily),
        vec!["d-2024-03-01_00001", "d-2024-03-02_00002"]
    );
}

#[tokio::test]
async fn a_torn_tail_is_truncated_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), FileStoreOptions::default());
    store
        .set_many(&[(b("a"), Entry::new("1")), (b("b"), Entry::new("2"))])
        .await
        .unwrap();
    store
        .set_many(&[(b("c"), Entry::new("333333"))])
        .await
        .unwrap();
    let seg = store.segments().pop().unwrap();
    drop(store);
    // A crash mid-append: the last record is cut short...
    let len = fs::metadata(&seg).unwrap().len();
    let f = fs::OpenOptions::new().write(true).open(&seg).unwrap();
    f.set_len(len - 3).unwrap();
    drop(f);
    let store = open(dir.path(), FileStoreOptions::default());
    let got = store.get_many(&[b("a"), b("b"), b("c")]).await.unwrap();
    assert!(
        got[0].is_some() && got[1].is_some() && got[2].is_none(),
        "{got:?}"
    );
    // ... and the file was truncated so that appends continue cleanly.
    store.set_many(&[(b("d"), Entry::new("4"))]).await.unwrap();
    drop(store);
    // Garbage (a record whose CRC does not match) is treated the same way.
    let mut bytes = fs::read(&seg).unwrap();
    bytes.extend_from_slice(&[20, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7]);
    fs::write(&seg, bytes).unwrap();
    let store = open(dir.path(), FileStoreOptions::default());
    assert_eq!(store.count().await.unwrap(), 3);
    assert_eq!(replay_all(&store).await.len(), 3);
}

#[tokio::test]
async fn corruption_in_a_sealed_segment_refuses_to_open() {
    let dir = tempfile::tempdir().unwrap();
    let opts = FileStoreOptions {
        max_size: Some(100),
        ..Default::default()
    };
    let store = open(dir.path(), opts.clone());
    for i in 0..5 {
        store
            .set_many(&[(Bytes::from(format!("k{i}")), Entry::new(vec![1u8; 60]))])
            .await
            .unwrap();
    }
    let first = store.segments().remove(0);
    drop(store);
    let mut bytes = fs::read(&first).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    fs::write(&first, bytes).unwrap();
    let err = FileStore::open("spool", dir.path(), opts).err().unwrap();
    assert_eq!(err.store, "spool");
    assert!(err.message.contains("corrupt record at"), "{err}");
    assert!(err.message.contains("tiercache_00001:0"), "{err}");
}

#[tokio::test]
async fn replay_is_ordered_and_discard_is_durable() {
    let dir = tempfile::tempdir().unwrap();
    let opts = FileStoreOptions {
        max_size: Some(200),
        ..Default::default()
    };
    let store = open(dir.path(), opts.clone());
    let mut want = Vec::new();
    for i in 0..40 {
        let k = Bytes::from(format!("k{}", i % 7));
        let m = if i % 3 == 0 {
            Mutation::Delete(k)
        } else {
            Mutation::Set(k, Entry::new(format!("v{i}")))
        };
        store.apply(std::slice::from_ref(&m)).await.unwrap();
        want.push(m);
    }
    assert_eq!(replay_all(&store).await, want);
    // Reading from the middle, across segments, continues where it stopped.
    let (first, pos) = store.read_from(LogPosition::START, 25).await.unwrap();
    let (rest, end) = store.read_from(pos, 1_000).await.unwrap();
    assert_eq!([first, rest].concat(), want);
    assert_eq!(store.read_from(end, 10).await.unwrap().0, vec![]);
    store
        .set_many(&[(b("late"), Entry::new("x"))])
        .await
        .unwrap();
    assert_eq!(
        store.read_from(end, 10).await.unwrap().0,
        vec![Mutation::Set(b("late"), Entry::new("x"))],
        "later writes append after the end"
    );

    store.discard().await.unwrap();
    assert_eq!(store.logged(), 0);
    assert_eq!(store.count().await.unwrap(), 0);
    assert_eq!(replay_all(&store).await, vec![]);
    assert_eq!(store.segments().len(), 1, "older segments are gone");
    store
        .set_many(&[(b("after"), Entry::new("y"))])
        .await
        .unwrap();
    drop(store);
    let store = open(dir.path(), opts);
    assert_eq!(
        replay_all(&store).await,
        vec![Mutation::Set(b("after"), Entry::new("y"))]
    );
    assert_eq!(
        store.lookup(&[b("k1")]).await.unwrap(),
        vec![Logged::NotLogged]
    );
}

#[tokio::test]
async fn a_clear_interrupted_by_a_crash_is_finished_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), FileStoreOptions::default());
    store
        .set_many(&[(b("old"), Entry::new("1"))])
        .await
        .unwrap();
    let old = store.segments();
    // Keep a copy of the old segment, clear, then put it back: as if the
    // process died after writing the clear record but before deleting.
    let saved = fs::read(&old[0]).unwrap();
    store.clear().await.unwrap();
    store
        .set_many(&[(b("new"), Entry::new("2"))])
        .await
        .unwrap();
    drop(store);
    fs::write(&old[0], saved).unwrap();
    let store = open(dir.path(), FileStoreOptions::default());
    let got = store.get_many(&[b("old"), b("new")]).await.unwrap();
    assert_eq!(got, vec![None, Some(Entry::new("2"))]);
    assert!(!old[0].exists(), "the voided segment was deleted at open");
}

/// The index keeps keys, not values: a written key that shares its
/// allocation with its value (`copy_key_value`, as the servers write) is
/// copied into the index, so the value's bytes are not held in memory.
#[tokio::test]
async fn the_index_does_not_keep_a_written_value_alive() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), FileStoreOptions::default());
    // The first write adds the key to the index; the second rewrites a key
    // the index knows, which keeps its own copy.
    for byte in [7u8, 8] {
        let (key, value) = tiercache_engine::copy_key_value(b"k", &[byte; 1000]);
        let probe = value.clone();
        store
            .apply(&[Mutation::Set(key, Entry::new(value))])
            .await
            .unwrap();
        assert!(probe.is_unique(), "the index holds the write's buffer");
    }
    let got = store.get_many(&[b("k")]).await.unwrap();
    assert_eq!(got[0].as_ref().unwrap().value[..], [8u8; 1000][..]);
}
