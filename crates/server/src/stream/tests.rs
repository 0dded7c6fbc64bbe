use super::*;
use crate::packed::Corrupt;
use crate::test_rng::Lcg;

fn fields(pairs: &[(&str, &str)]) -> Vec<Bytes> {
    pairs
        .iter()
        .flat_map(|(f, v)| [Bytes::from(f.to_string()), Bytes::from(v.to_string())])
        .collect()
}

fn stream(n: u64, limits: Limits) -> Stream {
    let mut s = Stream::default();
    for i in 1..=n {
        s.append(
            StreamId::new(i, 0),
            &fields(&[("item", "2"), ("value", "b")]),
            limits,
        )
        .unwrap();
    }
    s
}

fn ids(s: &Stream) -> Vec<u64> {
    s.range(StreamId::MIN, StreamId::MAX, usize::MAX)
        .unwrap()
        .iter()
        .map(|i| i.id.ms)
        .collect()
}

#[test]
fn nodes_close_at_the_entry_limit_deleted_entries_included() {
    let s = stream(250, Limits::default());
    assert_eq!(s.node_count(), 3);
    let mut s = stream(100, Limits::default());
    assert!(s.delete(StreamId::new(50, 0)).unwrap());
    s.append(
        StreamId::new(101, 0),
        &fields(&[("a", "1")]),
        Limits::default(),
    )
    .unwrap();
    assert_eq!(s.node_count(), 2, "99 live + 1 deleted fill the node");
    assert_eq!(s.len(), 100);
}

#[test]
fn nodes_close_at_the_byte_limit() {
    let mut s = Stream::default();
    let big = "x".repeat(1000);
    for i in 1..=8 {
        s.append(
            StreamId::new(i, 0),
            &fields(&[("f", &big)]),
            Limits::default(),
        )
        .unwrap();
    }
    // Each entry is about 1 KB: four fit under 4096 bytes with the header.
    assert_eq!(s.node_count(), 2);
    let unlimited = Limits {
        max_entries: 0,
        max_bytes: 0,
    };
    let mut s = Stream::default();
    for i in 1..=300 {
        s.append(StreamId::new(i, 0), &fields(&[("f", "v")]), unlimited)
            .unwrap();
    }
    assert_eq!(s.node_count(), 1);
}

#[test]
fn delete_removes_an_emptied_node_and_keeps_the_largest_deleted_id() {
    let mut s = stream(150, Limits::default());
    for i in 101..=150 {
        assert!(s.delete(StreamId::new(i, 0)).unwrap());
    }
    assert!(!s.delete(StreamId::new(150, 0)).unwrap());
    assert_eq!(s.node_count(), 1);
    assert_eq!(s.max_deleted_id(), StreamId::new(150, 0));
    assert!(s.delete(StreamId::new(3, 0)).unwrap());
    assert_eq!(s.max_deleted_id(), StreamId::new(150, 0));
    assert_eq!(s.first_id(), StreamId::new(1, 0));
    assert_eq!(s.last_valid_id(), StreamId::new(100, 0));
    assert_eq!(s.last_id(), StreamId::new(150, 0));
}

#[test]
fn ranges_both_ways() {
    let mut s = stream(250, Limits::default());
    s.delete(StreamId::new(120, 0)).unwrap();
    let fwd: Vec<u64> = s
        .range(StreamId::new(118, 0), StreamId::new(122, 0), usize::MAX)
        .unwrap()
        .iter()
        .map(|i| i.id.ms)
        .collect();
    assert_eq!(fwd, [118, 119, 121, 122]);
    let rev: Vec<u64> = s
        .range_rev(StreamId::new(99, 5), StreamId::new(102, 0), usize::MAX)
        .unwrap()
        .iter()
        .map(|i| i.id.ms)
        .collect();
    assert_eq!(rev, [102, 101, 100]);
    assert_eq!(
        s.range(StreamId::new(300, 0), StreamId::MAX, 9)
            .unwrap()
            .len(),
        0
    );
    assert_eq!(
        s.range_rev(StreamId::MIN, StreamId::MAX, usize::MAX)
            .unwrap()
            .len(),
        249
    );
    assert_eq!(
        s.range(StreamId::MIN, StreamId::MAX, 150).unwrap().len(),
        150
    );
}

#[test]
fn trim_exact_and_approximate() {
    let mut s = stream(250, Limits::default());
    let approx = |n| Trim {
        by: TrimBy::MaxLen(n),
        approx: true,
        limit: 10_000,
    };
    assert_eq!(s.trim(approx(120)).unwrap(), 100, "one whole node only");
    assert_eq!(s.len(), 150);
    assert_eq!(s.trim(approx(120)).unwrap(), 0);
    let exact = Trim {
        by: TrimBy::MaxLen(120),
        approx: false,
        limit: 0,
    };
    assert_eq!(s.trim(exact).unwrap(), 30);
    assert_eq!(ids(&s)[0], 131);
    assert_eq!(s.node_count(), 2, "the partly trimmed node stays");
    let minid = Trim {
        by: TrimBy::MinId(StreamId::new(205, 0)),
        approx: false,
        limit: 0,
    };
    assert_eq!(s.trim(minid).unwrap(), 74);
    assert_eq!(ids(&s)[0], 205);
    let limited = Trim {
        by: TrimBy::MaxLen(0),
        approx: true,
        limit: 10,
    };
    assert_eq!(
        s.trim(limited).unwrap(),
        0,
        "the next node has more than the limit"
    );
}

#[test]
fn round_trip_with_groups() {
    let mut s = stream(130, Limits::default());
    s.delete(StreamId::new(7, 0)).unwrap();
    let mut g = Group::new(StreamId::new(3, 0), Some(3));
    g.touch_consumer(b"alice", 1000);
    g.touch_consumer(b"bob", 2000);
    g.assign(StreamId::new(1, 0), b"alice", 10, 1);
    g.assign(StreamId::new(2, 0), b"bob", 20, 2);
    g.assign(StreamId::new(3, 0), b"alice", 30, 1);
    g.assign(StreamId::new(3, 0), b"bob", 40, 5);
    s.groups_mut().unwrap().insert(Bytes::from("g1"), g);
    s.groups_mut()
        .unwrap()
        .insert(Bytes::from("g0"), Group::new(StreamId::MIN, None));
    let back = Stream::decode(&s.encode()).unwrap();
    assert_eq!(back, s);
    let g = &back.groups().unwrap()[&b"g1"[..]];
    assert_eq!(g.consumers[&b"bob"[..]].pel.len(), 2);
    assert_eq!(g.consumers[&b"alice"[..]].pel.len(), 1);
    assert_eq!(g.pel[&StreamId::new(3, 0)].delivery_count, 5);
}

#[test]
fn every_cut_is_an_error() {
    let mut s = stream(3, Limits::default());
    let mut g = Group::new(StreamId::new(1, 0), None);
    g.touch_consumer(b"c", 5);
    g.assign(StreamId::new(1, 0), b"c", 5, 1);
    s.groups_mut().unwrap().insert(Bytes::from("g"), g);
    let raw = s.encode();
    // A cut shows at decode, or when the parts are read.
    let whole_read = |b: &Bytes| -> Result<(), Corrupt> {
        let s = Stream::decode(b)?;
        s.range(StreamId::MIN, StreamId::MAX, usize::MAX)?;
        s.groups()?;
        Ok(())
    };
    assert!(whole_read(&raw).is_ok());
    for cut in 0..raw.len() {
        assert!(whole_read(&raw.slice(..cut)).is_err(), "cut at {cut}");
    }
    // Damage inside a node's entries or the groups shows when they are
    // used, not before.
    let mut bytes = raw.to_vec();
    // The second "item" is the first entry's first field (the first is
    // the node header's master field).
    let at = bytes
        .windows(4)
        .enumerate()
        .filter(|(_, w)| *w == b"item")
        .nth(1)
        .unwrap()
        .0;
    bytes[at - 1] = 200;
    let damaged = Stream::decode(&Bytes::from(bytes)).unwrap();
    assert_eq!(damaged.len(), 3, "the header is fine");
    assert!(damaged.range(StreamId::MIN, StreamId::MAX, 9).is_err());
    let mut bytes = raw.to_vec();
    let g = bytes.len() - 1;
    bytes[g] = 0x80; // a number that never ends
    let damaged = Stream::decode(&Bytes::from(bytes)).unwrap();
    assert!(damaged.groups().is_err());
    // A byte after the groups: they no longer decode.
    let mut trailing = raw.to_vec();
    trailing.push(0);
    assert!(whole_read(&Bytes::from(trailing)).is_err());
    assert!(Stream::decode(&Bytes::from_static(b"\x02")).is_err());
}

#[test]
fn lying_counts_and_orders_are_errors() {
    let decode = |b: Vec<u8>| Stream::decode(&Bytes::from(b)).map(|_| ());
    // Damage found when a command reads the node.
    let read = |b: Vec<u8>| {
        Stream::decode(&Bytes::from(b))
            .unwrap()
            .range(StreamId::MIN, StreamId::MAX, usize::MAX)
            .map(|_| ())
    };
    let raw = stream(150, Limits::default()).encode().to_vec();
    const RECORDS: usize = 65;
    // The node count (bytes 49..57) far beyond the value.
    let mut b = raw.clone();
    b[49..57].copy_from_slice(&u64::MAX.to_le_bytes());
    assert_eq!(decode(b), Err(Corrupt("item count exceeds the value")));
    // The groups' length beyond the value.
    let mut b = raw.clone();
    b[57..65].copy_from_slice(&(1u64 << 40).to_le_bytes());
    assert_eq!(decode(b), Err(Corrupt("length exceeds the value")));
    // The last node's last ID above the stream's.
    let mut s = stream(2, Limits::default());
    s.set_id(StreamId::new(1, 0), None, None);
    assert_eq!(
        Stream::decode(&s.encode()).map(|_| ()),
        Err(Corrupt("entry above the last ID"))
    );
    // The first node's first ID above its last.
    let mut b = raw.clone();
    b[RECORDS..RECORDS + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    assert_eq!(read(b), Err(Corrupt("nodes out of order")));
    // A body past the end of the bodies.
    let mut b = raw.clone();
    b[RECORDS + 96..RECORDS + 104].copy_from_slice(&(1u64 << 40).to_le_bytes());
    assert_eq!(read(b.clone()), Err(Corrupt("length exceeds the value")));
    // Encoding such a stream keeps the damaged node unreadable, and the
    // others whole.
    let mut damaged = Stream::decode(&Bytes::from(b)).unwrap();
    damaged
        .append(
            StreamId::new(151, 0),
            &fields(&[("a", "1")]),
            Limits::default(),
        )
        .unwrap();
    let again = Stream::decode(&damaged.encode()).unwrap();
    assert!(again.range(StreamId::MIN, StreamId::MAX, 9).is_err());
    assert_eq!(
        again
            .range(StreamId::new(101, 0), StreamId::MAX, usize::MAX)
            .unwrap()
            .len(),
        51
    );
    // Two entries of a node swapped: found by a read of either direction.
    let mut b = stream(2, Limits::default()).encode().to_vec();
    let at: Vec<usize> = b
        .windows(7)
        .enumerate()
        .filter(|(_, w)| *w == b"\x00\x04\x04item")
        .map(|(i, _)| i - 1)
        .collect();
    b.swap(at[0], at[1]);
    let swapped = Stream::decode(&Bytes::from(b)).unwrap();
    assert!(swapped.range(StreamId::MIN, StreamId::MAX, 9).is_err());
    assert!(swapped.range_rev(StreamId::MIN, StreamId::MAX, 9).is_err());
    assert!(swapped.first().is_err());
}

#[test]
fn unchanged_nodes_and_groups_are_copied_not_decoded() {
    let mut s = stream(250, Limits::default());
    s.groups_mut()
        .unwrap()
        .insert(Bytes::from("g"), Group::new(StreamId::new(3, 0), None));
    let raw = s.encode();
    let mut back = Stream::decode(&raw).unwrap();
    // An append touches only the tail node: the others and the groups
    // stay undecoded and are copied as they were.
    back.append(
        StreamId::new(251, 0),
        &fields(&[("item", "2"), ("value", "b")]),
        Limits::default(),
    )
    .unwrap();
    assert!(matches!(back.nodes[0], Slot::Stored(0)));
    assert!(matches!(back.nodes[1], Slot::Stored(1)));
    assert!(back.groups.decoded().is_none());
    let again = back.encode();
    s.append(
        StreamId::new(251, 0),
        &fields(&[("item", "2"), ("value", "b")]),
        Limits::default(),
    )
    .unwrap();
    assert_eq!(again, s.encode(), "the same bytes as a full re-encoding");
    // An approximate trim drops whole nodes without decoding them.
    let mut t = Stream::decode(&again).unwrap();
    let approx = Trim {
        by: TrimBy::MaxLen(100),
        approx: true,
        limit: 10_000,
    };
    assert_eq!(t.trim(approx).unwrap(), 100);
    assert!(matches!(t.nodes[0], Slot::Stored(1)));
    assert!(t.nodes.iter().take(1).all(|n| matches!(n, Slot::Stored(_))));
    // An exact trim edits only the head node's bytes.
    let exact = Trim {
        by: TrimBy::MaxLen(140),
        approx: false,
        limit: 0,
    };
    assert_eq!(t.trim(exact).unwrap(), 11);
    assert!(matches!(t.nodes[0], Slot::Owned(_)));
    assert!(matches!(t.nodes[1], Slot::Stored(2)));
    assert_eq!(ids(&t)[0], 112);
    let reread = Stream::decode(&t.encode()).unwrap();
    assert_eq!(ids(&reread), ids(&t));
    assert_eq!(reread.node_count(), 2);
}

#[test]
fn entries_read_estimates_follow_redis() {
    let mut s = stream(10, Limits::default());
    assert_eq!(s.estimate_entries_read(StreamId::new(10, 0)), Some(10));
    assert_eq!(s.estimate_entries_read(StreamId::new(1, 0)), Some(1));
    assert_eq!(s.estimate_entries_read(StreamId::MIN), Some(0));
    assert_eq!(s.estimate_entries_read(StreamId::new(5, 0)), None);
    assert_eq!(s.estimate_entries_read(StreamId::new(11, 0)), None);
    s.delete(StreamId::new(5, 0)).unwrap();
    assert!(s.range_has_tombstones(Some(StreamId::new(2, 0)), None));
    assert!(!s.range_has_tombstones(Some(StreamId::new(6, 0)), None));
    let g = Group::new(StreamId::new(2, 0), Some(2));
    assert_eq!(s.lag(&g), None, "a tombstone ahead and no estimate");
    let g = Group::new(StreamId::new(6, 0), Some(6));
    assert_eq!(s.lag(&g), Some(4));
}

#[test]
fn a_patch_applied_to_the_bytes_before_gives_the_bytes_after() {
    let mut rng = Lcg(7);
    let mut bytes = Stream::default().encode();
    let mut next_ms = 1;
    for round in 0..400 {
        let mut s = Stream::decode(&bytes).unwrap();
        let limits = Limits {
            max_entries: [100, 10, 0][rng.next(3) as usize],
            max_bytes: [4096, 300, 0][rng.next(3) as usize],
        };
        for _ in 0..1 + rng.next(4) {
            match rng.next(10) {
                0..=5 => {
                    let value = "v".repeat(rng.next(60) as usize);
                    let f = if rng.next(3) == 0 {
                        fields(&[("a", &value), ("b", "12")])
                    } else {
                        fields(&[("item", &value)])
                    };
                    next_ms += 1 + rng.next(3);
                    s.append(StreamId::new(next_ms, rng.next(2)), &f, limits)
                        .unwrap();
                }
                6 => {
                    let by = if rng.next(2) == 0 {
                        TrimBy::MaxLen(rng.next(s.len() + 5))
                    } else {
                        TrimBy::MinId(StreamId::new(rng.next(next_ms + 1), 0))
                    };
                    let approx = rng.next(2) == 0;
                    let limit = if approx { rng.next(150) } else { 0 };
                    s.trim(Trim { by, approx, limit }).unwrap();
                }
                7 => {
                    let id = StreamId::new(rng.next(next_ms + 1), rng.next(2));
                    s.delete(id).unwrap();
                }
                8 => {
                    let g = s.groups_mut().unwrap();
                    let name = Bytes::from(format!("g{}", rng.next(3)));
                    let group = g
                        .entry(name)
                        .or_insert_with(|| Group::new(StreamId::MIN, None));
                    let consumer = format!("c{}", rng.next(3));
                    group.touch_consumer(consumer.as_bytes(), round);
                    let id = StreamId::new(rng.next(next_ms + 1), 0);
                    group.assign(id, consumer.as_bytes(), round, 1 + rng.next(3));
                }
                _ => {
                    let last = s.last_id();
                    s.set_id(
                        StreamId::new(last.ms + 1, 0),
                        Some(s.entries_added() + 1),
                        None,
                    );
                    next_ms = next_ms.max(last.ms + 1);
                }
            }
        }
        let patch = s.take_patch();
        let after = s.encode();
        if let Some(patch) = patch {
            let replayed = super::patch::apply(&bytes, &patch).unwrap();
            assert_eq!(replayed, after, "round {round}");
        } else {
            assert_eq!(after, bytes, "no change, no patch (round {round})");
        }
        bytes = after;
    }
    assert!(!Stream::decode(&bytes).unwrap().is_empty());
}

#[test]
fn a_damaged_patch_is_an_error() {
    let mut s = stream(3, Limits::default());
    let before = s.encode();
    let mut s2 = Stream::decode(&before).unwrap();
    s2.append(
        StreamId::new(9, 0),
        &fields(&[("a", "1")]),
        Limits::default(),
    )
    .unwrap();
    let patch = s2.take_patch().unwrap();
    for cut in 1..patch.len() {
        assert!(
            super::patch::apply(&before, &patch.slice(..cut)).is_err(),
            "cut {cut}"
        );
    }
    let mut unknown = patch.to_vec();
    unknown[0] = 99;
    assert!(super::patch::apply(&before, &Bytes::from(unknown)).is_err());
    // An append at or below the last ID cannot come from a real command.
    s.append(
        StreamId::new(10, 0),
        &fields(&[("a", "1")]),
        Limits::default(),
    )
    .unwrap();
    assert!(super::patch::apply(&s.encode(), &patch).is_err());
}

#[test]
fn ranges_agree_with_a_plain_filter_over_every_entry() {
    let mut rng = Lcg(11);
    let mut s = Stream::default();
    for i in 1..=700u64 {
        let f = if i % 3 == 0 {
            fields(&[("a", "1"), ("b", "2")])
        } else {
            fields(&[("item", &"x".repeat((i % 40) as usize))])
        };
        s.append(StreamId::new(i * 2, i % 2), &f, Limits::default())
            .unwrap();
    }
    for i in (1..=700u64).filter(|i| i % 7 == 0) {
        s.delete(StreamId::new(i * 2, i % 2)).unwrap();
    }
    // Read back from bytes, as commands do.
    let s = Stream::decode(&s.encode()).unwrap();
    let all = s.range(StreamId::MIN, StreamId::MAX, usize::MAX).unwrap();
    assert_eq!(all.len(), 600);
    for _ in 0..300 {
        let a = StreamId::new(rng.next(1500), rng.next(2));
        let b = StreamId::new(rng.next(1500), rng.next(2));
        let (start, end) = (a.min(b), a.max(b));
        let limit = [1, 3, 10, 150, usize::MAX][rng.next(5) as usize];
        let want: Vec<_> = all
            .iter()
            .filter(|i| i.id >= start && i.id <= end)
            .take(limit)
            .cloned()
            .collect();
        assert_eq!(s.range(start, end, limit).unwrap(), want);
        let want_rev: Vec<_> = all
            .iter()
            .rev()
            .filter(|i| i.id >= start && i.id <= end)
            .take(limit)
            .cloned()
            .collect();
        assert_eq!(s.range_rev(start, end, limit).unwrap(), want_rev);
    }
}
