use super::*;

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
fn uncommitted_appends_are_not_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (j, _) = WriteBackJournal::open(dir.path(), FsyncPolicy::No).unwrap();
        j.append_set(b"a", &Entry::new("1"));
        std::mem::forget(j); // a crash: no destructor, no flush
    }
    let (_, r) = WriteBackJournal::open(dir.path(), FsyncPolicy::No).unwrap();
    assert!(r.records.is_empty());
}

#[test]
fn torn_tail_is_truncated_and_earlier_records_kept() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (j, _) = WriteBackJournal::open(dir.path(), FsyncPolicy::No).unwrap();
        let s = j.append_set(b"a", &Entry::new("1"));
        j.commit(s).unwrap();
    }
    let seg = segment_path(dir.path(), 1);
    let mut f = OpenOptions::new().append(true).open(&seg).unwrap();
    f.write_all(&[40, 0, 0, 0, 1, 2]).unwrap(); // half a record
    drop(f);
    let (_, r) = WriteBackJournal::open(dir.path(), FsyncPolicy::No).unwrap();
    assert!(r.truncated_tail);
    assert_eq!(r.records.len(), 1);
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
