use super::record::{FIXED_PAYLOAD, HEADER, OP_SET_KIND};
use super::*;
use crate::entry::ValueKind;
use bytes::Bytes;

#[test]
fn records_round_trip_through_replay() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (j, r) = WriteBackJournal::open(dir.path(), FsyncPolicy::No).unwrap();
        assert!(r.records.is_empty());
        j.append_set(b"a", &Entry::with_expiry("1", Some(42)));
        let s = j.append_delete(b"b");
        j.commit(s).unwrap();
    }
    let (_, r) = WriteBackJournal::open(dir.path(), FsyncPolicy::No).unwrap();
    assert_eq!(
        r.records,
        vec![
            Record::Set {
                seq: 1,
                key: "a".into(),
                entry: Entry::with_expiry("1", Some(42))
            },
            Record::Delete {
                seq: 2,
                key: "b".into()
            },
        ]
    );
}

#[test]
fn flags_survive_replay_and_flagless_sets_keep_the_old_format() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (j, _) = WriteBackJournal::open(dir.path(), FsyncPolicy::No).unwrap();
        j.append_set(b"plain", &Entry::with_expiry("1", Some(7)));
        j.append_set(b"flagged", &Entry::with_flags("22", Some(9), 0xdead_beef));
        let s = j.append_set(b"empty", &Entry::with_flags("", None, 1));
        j.commit(s).unwrap();
    }
    let data = fs::read(segment_path(dir.path(), 1)).unwrap();
    // The flag-less record is exactly the version-1 layout: op 1, no flags field.
    assert_eq!(data[8], OP_SET);
    assert_eq!(
        u32::from_le_bytes(data[0..4].try_into().unwrap()) as usize,
        FIXED_PAYLOAD + b"plain".len() + 1
    );
    let (_, r) = WriteBackJournal::open(dir.path(), FsyncPolicy::No).unwrap();
    let entries: Vec<(Bytes, Entry)> = r
        .records
        .into_iter()
        .map(|rec| match rec {
            Record::Set { key, entry, .. } => (key, entry),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        entries,
        vec![
            ("plain".into(), Entry::with_expiry("1", Some(7))),
            (
                "flagged".into(),
                Entry::with_flags("22", Some(9), 0xdead_beef)
            ),
            ("empty".into(), Entry::with_flags("", None, 1)),
        ]
    );
}

#[test]
fn kinds_survive_replay_and_strings_keep_their_layouts() {
    let dir = tempfile::tempdir().unwrap();
    let hash = Entry::with_kind("fields", Some(11), 0, ValueKind::Hash);
    let flagged_hash = Entry::with_kind("", None, 7, ValueKind::Hash);
    {
        let (j, _) = WriteBackJournal::open(dir.path(), FsyncPolicy::No).unwrap();
        j.append_set(b"plain", &Entry::new("1"));
        j.append_set(b"h", &hash);
        let s = j.append_set(b"fh", &flagged_hash);
        j.commit(s).unwrap();
    }
    let data = fs::read(segment_path(dir.path(), 1)).unwrap();
    assert_eq!(data[8], OP_SET, "a string still uses op 1");
    let second = HEADER + FIXED_PAYLOAD + b"plain".len() + 1;
    assert_eq!(data[second + 8], OP_SET_KIND);
    let (_, r) = WriteBackJournal::open(dir.path(), FsyncPolicy::No).unwrap();
    let got: Vec<Entry> = r
        .records
        .into_iter()
        .map(|rec| match rec {
            Record::Set { entry, .. } => entry,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(got, vec![Entry::new("1"), hash, flagged_hash]);
}

#[test]
fn an_unknown_kind_is_corruption_not_a_string() {
    let mut payload = vec![OP_SET_KIND];
    payload.extend_from_slice(&1u64.to_le_bytes());
    payload.extend_from_slice(&0u64.to_le_bytes());
    payload.extend_from_slice(&1u32.to_le_bytes());
    payload.extend_from_slice(b"k");
    payload.extend_from_slice(&0u32.to_le_bytes());
    payload.push(99);
    payload.extend_from_slice(b"v");
    let mut record = (payload.len() as u32).to_le_bytes().to_vec();
    record.extend_from_slice(&checksum::crc32c(&payload).to_le_bytes());
    record.extend_from_slice(&payload);
    assert_eq!(decode(&record), Err("unknown value kind"));
}

#[test]
fn records_carry_a_crc32c_and_a_changed_byte_is_caught() {
    let mut buf = Vec::new();
    encode(&mut buf, OP_SET, 7, b"key:000042", Some(&Entry::new("xyz")));
    let stored = u32::from_le_bytes(buf[4..8].try_into().unwrap());
    let payload = &buf[HEADER..];
    assert_eq!(stored, checksum::crc32c(payload));
    assert_ne!(stored, crc32fast::hash(payload), "not the older CRC-32");
    assert!(decode(&buf).unwrap().is_some());
    for i in HEADER..buf.len() {
        let mut damaged = buf.clone();
        damaged[i] ^= 0x10;
        assert_eq!(decode(&damaged), Err("checksum mismatch"), "byte {i}");
    }
}

#[test]
fn a_version_1_record_written_by_hand_replays_with_flags_zero() {
    // Bytes as an older build wrote them (CRC-32, not CRC-32C): op 1, seq
    // 1, no expiry, key "k", value "v".
    let mut payload = vec![OP_SET];
    payload.extend_from_slice(&1u64.to_le_bytes());
    payload.extend_from_slice(&0u64.to_le_bytes());
    payload.extend_from_slice(&1u32.to_le_bytes());
    payload.extend_from_slice(b"kv");
    let mut record = (payload.len() as u32).to_le_bytes().to_vec();
    record.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
    record.extend_from_slice(&payload);
    let dir = tempfile::tempdir().unwrap();
    fs::write(segment_path(dir.path(), 1), &record).unwrap();
    let (_, r) = WriteBackJournal::open(dir.path(), FsyncPolicy::No).unwrap();
    assert_eq!(
        r.records,
        vec![Record::Set {
            seq: 1,
            key: "k".into(),
            entry: Entry::new("v")
        }]
    );
}

#[test]
fn an_append_is_in_the_kernel_before_any_commit() {
    // A crash right after the append (no commit, no destructor) keeps the
    // record: it was copied into the segment's mapped pages.
    let dir = tempfile::tempdir().unwrap();
    for policy in [FsyncPolicy::No, FsyncPolicy::EverySec] {
        let (j, _) = WriteBackJournal::open(dir.path(), policy).unwrap();
        let seq = j.append_set(b"a", &Entry::new("1"));
        assert!(j.is_durable(seq), "{policy:?}: nothing left to commit");
        std::mem::forget(j);
    }
    let (j, r) = WriteBackJournal::open(dir.path(), FsyncPolicy::Always).unwrap();
    assert_eq!(r.records.len(), 2);
    assert!(
        !r.truncated_tail,
        "the allocated zeros are the end, not damage"
    );
    // Under `always` an append is durable only once a commit fsynced it.
    let seq = j.append_set(b"b", &Entry::new("2"));
    assert!(!j.is_durable(seq));
    j.commit(seq).unwrap();
    assert!(j.is_durable(seq));
}

#[test]
fn replay_trims_the_space_allocated_ahead_of_the_records() {
    let dir = tempfile::tempdir().unwrap();
    let (j, _) = WriteBackJournal::open(dir.path(), FsyncPolicy::No).unwrap();
    j.append_set(b"a", &Entry::new("1"));
    std::mem::forget(j); // a crash: the segment is not trimmed
    let seg = segment_path(dir.path(), 1);
    let record = layout(OP_SET, b"a", Some(&Entry::new("1"))).1 as u64;
    assert!(
        fs::metadata(&seg).unwrap().len() > record,
        "allocated ahead"
    );
    let (j, r) = WriteBackJournal::open(dir.path(), FsyncPolicy::No).unwrap();
    assert_eq!(r.records.len(), 1);
    assert_eq!(fs::metadata(&seg).unwrap().len(), record);
    assert_eq!(
        j.disk_bytes(),
        record,
        "the new segment's allocation not counted"
    );
    drop(j);
    let closed = segment_path(dir.path(), 2);
    assert_eq!(fs::metadata(closed).unwrap().len(), 0, "closing trims");
}

#[cfg(unix)]
#[test]
fn torn_tail_is_truncated_and_earlier_records_kept() {
    use std::os::unix::fs::FileExt;
    let dir = tempfile::tempdir().unwrap();
    {
        let (j, _) = WriteBackJournal::open(dir.path(), FsyncPolicy::No).unwrap();
        let s = j.append_set(b"a", &Entry::new("1"));
        j.commit(s).unwrap();
    }
    let seg = segment_path(dir.path(), 1);
    let end = layout(OP_SET, b"a", Some(&Entry::new("1"))).1;
    let f = OpenOptions::new().write(true).open(&seg).unwrap();
    f.write_all_at(&[40, 0, 0, 0, 1, 2], end as u64).unwrap(); // half a record
    drop(f);
    let (_, r) = WriteBackJournal::open(dir.path(), FsyncPolicy::No).unwrap();
    assert!(r.truncated_tail);
    assert_eq!(r.records.len(), 1);
    assert_eq!(fs::metadata(&seg).unwrap().len(), end as u64);
}

#[cfg(unix)]
#[test]
fn a_second_process_cannot_open_the_journal() {
    // The lock is a POSIX record lock, owned by the process: the same test
    // binary, run again as a child on this one test, is the second process.
    const CHILD_DIR: &str = "TIERCACHE_TEST_JOURNAL_LOCK_DIR";
    if let Some(dir) = std::env::var_os(CHILD_DIR) {
        match WriteBackJournal::open(Path::new(&dir), FsyncPolicy::No) {
            Ok(_) => println!("child: opened"),
            Err(e) => println!("child: {e}"),
        }
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (_j, _) = WriteBackJournal::open(dir.path(), FsyncPolicy::No).unwrap();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "journal::tests::a_second_process_cannot_open_the_journal",
            "--nocapture",
        ])
        .env(CHILD_DIR, dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("child: ") && stdout.contains("in use by another process"),
        "the child must be refused: {stdout}"
    );
}

#[test]
fn a_full_disk_holds_appends_back_and_the_commit_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let big = Entry::new(Bytes::from(vec![b'v'; segment::MIN_CAPACITY]));
    {
        let (j, _) = WriteBackJournal::open(dir.path(), FsyncPolicy::EverySec).unwrap();
        let first = j.append_set(b"fits", &Entry::new("1"));
        assert!(j.is_durable(first));
        j.inner.lock().segment.growth_limit = Some(segment::MIN_CAPACITY);
        let held = j.append_set(b"big", &big);
        let after = j.append_delete(b"fits");
        assert!(!j.is_durable(held) && !j.is_durable(after));
        let err = j.commit(after).unwrap_err().to_string();
        assert!(err.contains("No space left"), "{err}");
        assert!(!j.is_durable(after), "not acknowledged while held back");
        j.inner.lock().segment.growth_limit = None;
        j.commit(after).unwrap();
        assert!(j.is_durable(after));
    }
    let (_, r) = WriteBackJournal::open(dir.path(), FsyncPolicy::No).unwrap();
    let seqs: Vec<u64> = r.records.iter().map(Record::seq).collect();
    assert_eq!(seqs, vec![1, 2, 3], "in order, nothing lost");
    assert!(
        matches!(&r.records[1], Record::Set { entry, .. } if entry.value.len() == segment::MIN_CAPACITY)
    );
}

#[test]
fn corruption_in_a_sealed_segment_refuses_to_open() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (j, _) = WriteBackJournal::open(dir.path(), FsyncPolicy::No).unwrap();
        j.append_set(b"a", &Entry::new("1"));
        j.rotate(|| ()).unwrap();
        let s = j.append_set(b"b", &Entry::new("2"));
        j.commit(s).unwrap();
    }
    let seg = segment_path(dir.path(), 1);
    let mut data = fs::read(&seg).unwrap();
    let last = data.len() - 1;
    data[last] ^= 0xff;
    fs::write(&seg, data).unwrap();
    let err = WriteBackJournal::open(dir.path(), FsyncPolicy::No)
        .err()
        .expect("must refuse");
    let msg = err.to_string();
    assert!(
        msg.contains("journal-0000000000000001.log") && msg.contains("checksum"),
        "{msg}"
    );
}

#[test]
fn clear_voids_earlier_records_and_rotation_removes_sealed() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (j, _) = WriteBackJournal::open(dir.path(), FsyncPolicy::Always).unwrap();
        j.append_set(b"a", &Entry::new("1"));
        j.append_clear();
        let s = j.append_set(b"c", &Entry::new("3"));
        j.commit(s).unwrap();
    }
    let (j, r) = WriteBackJournal::open(dir.path(), FsyncPolicy::No).unwrap();
    assert!(r.clear_stores);
    assert_eq!(r.records.len(), 1);
    let (sealed, ()) = j.rotate(|| ()).unwrap();
    j.remove_sealed_through(sealed).unwrap();
    assert_eq!(list_segments(dir.path()).unwrap().len(), 1);
    assert_eq!(
        j.append_delete(b"x"),
        4,
        "sequence numbers continue after replay"
    );
}

#[test]
fn a_patch_follows_a_whole_value_of_its_key_in_the_same_segment() {
    let dir = tempfile::tempdir().unwrap();
    let whole = Entry::with_kind("whole", Some(9), 3, ValueKind::Stream);
    let next = Entry::with_kind("whole+1", Some(9), 3, ValueKind::Stream);
    {
        let (j, _) = WriteBackJournal::open(dir.path(), FsyncPolicy::No).unwrap();
        let keep = |seq, _, _| seq;
        // No whole value of "s" in the segment yet: written whole.
        j.append_patch_one_with("s".into(), whole.clone(), "+0".into(), keep);
        j.append_patch_one_with("s".into(), next.clone(), "+1".into(), keep);
        // A new segment: whole again, then a patch.
        j.rotate(|| ()).unwrap();
        j.append_patch_one_with("s".into(), whole.clone(), "+2".into(), keep);
        let s = j.append_patch_one_with("s".into(), next.clone(), "+3".into(), keep);
        j.commit(s).unwrap();
    }
    let (_, r) = WriteBackJournal::open(dir.path(), FsyncPolicy::No).unwrap();
    let patch = |seq: u64, p: &str| Record::Patch {
        seq,
        key: "s".into(),
        patch: Entry::with_kind(p.to_string(), Some(9), 3, ValueKind::Stream),
    };
    let set = |seq: u64| Record::Set {
        seq,
        key: "s".into(),
        entry: whole.clone(),
    };
    assert_eq!(r.records, [set(1), patch(2, "+1"), set(3), patch(4, "+3")]);
}
