//! Payloads written by redis-server 7.0.15's `DUMP` (one per encoding it
//! picks), read back here; payloads written here, read back; and damaged
//! payloads refused.

use super::*;
use crate::stream::StreamId;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

const MAX: usize = 1 << 20;

/// `DUMP` replies of redis-server 7.0.15 (`scripts`-free: captured once,
/// with the commands beside each).
const REDIS_7_0: &[(&str, &str)] = &[
    // SET s-raw bar
    ("s-raw", "00036261720a00e6be4960ee66fd17"),
    // SET s-int -12345
    ("s-int", "00c1c7cf0a0067eda236b4db26d0"),
    // SET s-lzf <100 a, 5 b> (LZF-compressed)
    ("s-lzf", "00c30c4069016161e059000062200000620a00262f61c8089a93d3"),
    // RPUSH l-lp x 12 -7 <80 bytes> (quicklist of one listpack)
    ("l-lp", "120102c3184062106200000004008178020c01dff902e05079e046000152ff0a00d7633971fcbc125b"),
    // SADD set-int 3 -1 100000 (intset)
    ("set-int", "0b140400000003000000ffffffff03000000a08601000a000a790cc55b1dc8c5"),
    // SADD set-str apple pear (hashtable: plain SET)
    ("set-str", "02020470656172056170706c650a002b8657885a6173c6"),
    // ZADD z-lp 1.5 a -2 b 1e20 c (listpack)
    ("z-lp", "111f1f0000000600816202dffe0281610283312e35048163028531652b323006ff0a00bdec2ac6bd8f2d62"),
    // HSET h-lp f1 v1 n 42 (listpack)
    ("h-lp", "10141400000004008266310382763103816e022a01ff0a003138f0c7327a23d3"),
    // ZADD z-sl 2.5 m inf n, zset-max-listpack-entries 0 (ZSET_2)
    ("z-sl", "0502016e000000000000f07f016d00000000000004400a00bbf852b01b1e4d4d"),
    // HSET h-ht k v num 7, hash-max-listpack-entries 0 (plain HASH)
    ("h-ht", "0402016b0176036e756dc0070a00ae233a944785c488"),
    // RPUSH l-multi a b c d e, list-max-listpack-size 2 (three nodes)
    ("l-multi", "1203020d0d0000000200816102816202ff020d0d0000000200816302816402ff020a0a0000000100816502ff0a00ec5236a76020a1db"),
];

fn redis_payload(name: &str) -> Vec<u8> {
    hex(REDIS_7_0.iter().find(|(n, _)| *n == name).unwrap().1)
}

fn restored(name: &str) -> (ValueKind, Bytes) {
    restore(&redis_payload(name), MAX).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn reads_redis_7_strings() {
    assert_eq!(restored("s-raw"), (ValueKind::String, b("bar")));
    assert_eq!(restored("s-int"), (ValueKind::String, b("-12345")));
    let lzf = format!("{}{}", "a".repeat(100), "b".repeat(5));
    assert_eq!(restored("s-lzf"), (ValueKind::String, b(&lzf)));
}

#[test]
fn reads_redis_7_collections() {
    let (kind, v) = restored("l-lp");
    assert_eq!(kind, ValueKind::List);
    let items: Vec<Bytes> = List::decode(&v).unwrap().to_items().unwrap().into();
    assert_eq!(items, [b("x"), b("12"), b("-7"), b(&"yy".repeat(40))]);

    let (kind, v) = restored("l-multi");
    assert_eq!(kind, ValueKind::List);
    let items: Vec<Bytes> = List::decode(&v).unwrap().to_items().unwrap().into();
    assert_eq!(items, ["a", "b", "c", "d", "e"].map(b));

    for (name, members) in [
        ("set-int", &["-1", "3", "100000"][..]),
        ("set-str", &["apple", "pear"]),
    ] {
        let (kind, v) = restored(name);
        assert_eq!(kind, ValueKind::Set);
        let set = Set::decode(&v).unwrap();
        let mut got: Vec<&[u8]> = set.iter().collect();
        got.sort();
        let mut want: Vec<&[u8]> = members.iter().map(|m| m.as_bytes()).collect();
        want.sort();
        assert_eq!(got, want, "{name}");
    }

    let (kind, v) = restored("z-lp");
    assert_eq!(kind, ValueKind::ZSet);
    let z = ZSet::decode(&v).unwrap();
    let got: Vec<(&[u8], f64)> = z.iter().collect();
    assert_eq!(got, [(&b"b"[..], -2.0), (b"a", 1.5), (b"c", 1e20)]);

    let (_, v) = restored("z-sl");
    let z = ZSet::decode(&v).unwrap();
    let got: Vec<(&[u8], f64)> = z.iter().collect();
    assert_eq!(got, [(&b"m"[..], 2.5), (b"n", f64::INFINITY)]);

    for (name, fields) in [
        ("h-lp", [("f1", "v1"), ("n", "42")]),
        ("h-ht", [("k", "v"), ("num", "7")]),
    ] {
        let (kind, v) = restored(name);
        assert_eq!(kind, ValueKind::Hash);
        let h = Hash::decode(&v).unwrap();
        for (f, val) in fields {
            assert_eq!(h.get(f.as_bytes()), Some(val.as_bytes()), "{name} {f}");
        }
        assert_eq!(h.len(), 2);
    }
}

#[test]
fn writes_what_redis_writes_for_a_string() {
    // Same object bytes as Redis 7.0's DUMP; only the version differs.
    for (name, value) in [("s-raw", "bar"), ("s-int", "-12345")] {
        let ours = dump(ValueKind::String, &b(value)).unwrap();
        let theirs = redis_payload(name);
        assert_eq!(
            ours[..ours.len() - 10],
            theirs[..theirs.len() - 10],
            "{name}"
        );
        assert_eq!(
            ours[ours.len() - 10..ours.len() - 8],
            DUMP_VERSION.to_le_bytes()
        );
    }
}

#[test]
fn every_kind_round_trips() {
    let mut list = List::default();
    for i in 0..300 {
        list.push(crate::list::End::Right, b(&format!("item-{i}")))
            .unwrap();
    }
    let mut hash = Hash::default();
    hash.set_many((0..200).map(|i| (b(&format!("f{i}")), b(&"v".repeat(i)))));
    let set = Set::from_members((0..100).map(|i| b(&i.to_string())));
    let words = Set::from_members(["a", "", "long ".repeat(30).as_str()].map(b));
    let mut z = ZSet::default();
    for (i, s) in [f64::NEG_INFINITY, -0.5, 0.0, 3.25, f64::INFINITY]
        .iter()
        .enumerate()
    {
        z.insert(b(&format!("m{i}")), *s);
    }
    let values = [
        (ValueKind::String, b("")),
        (ValueKind::String, b("2147483648")),
        (ValueKind::String, Bytes::from(vec![0u8, 255, 13, 10])),
        (ValueKind::List, list.encode()),
        (ValueKind::Hash, hash.encode()),
        (ValueKind::Set, set.encode()),
        (ValueKind::Set, words.encode()),
        (ValueKind::ZSet, z.encode()),
    ];
    for (kind, value) in values {
        let payload = dump(kind, &value).unwrap();
        let (k, v) = restore(&payload, MAX).unwrap();
        assert_eq!(k, kind);
        assert_eq!(v, value, "{kind:?}");
    }
}

#[test]
fn refuses_damaged_payloads() {
    let good = redis_payload("h-lp");
    assert!(restore(&good, MAX).is_ok());
    // Any flipped bit is caught by the CRC.
    for i in 0..good.len() {
        let mut bad = good.clone();
        bad[i] ^= 0x10;
        assert!(restore(&bad, MAX).is_err(), "byte {i}");
    }
    assert_eq!(restore(b"short", MAX), Err(RestoreError::VersionOrChecksum));
    // A newer RDB version than Redis 7.4's.
    let mut newer = dump(ValueKind::String, &b("x")).unwrap();
    let n = newer.len();
    newer[n - 10] = (MAX_VERSION + 1) as u8;
    assert_eq!(restore(&newer, MAX), Err(RestoreError::VersionOrChecksum));
}

/// A payload around `object` bytes, with a good footer.
fn framed(object: &[u8]) -> Vec<u8> {
    frame(object, DUMP_VERSION)
}

#[test]
fn refuses_bad_objects_with_a_good_checksum() {
    let cases: &[(&str, &[u8])] = &[
        ("unknown type", &[99, 0]),
        (
            "string longer than the payload",
            &[0, 0x80, 0xFF, 0xFF, 0xFF, 0xFF, b'x'],
        ),
        ("trailing bytes", &[0, 1, b'x', b'y']),
        ("empty set", &[2, 0]),
        (
            "count beyond the bytes",
            &[1, 0x81, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
        ),
        ("repeated set member", &[2, 2, 1, b'a', 1, b'a']),
        (
            "repeated hash field",
            &[4, 2, 1, b'f', 1, b'1', 1, b'f', 1, b'2'],
        ),
        (
            "repeated zset member",
            &[3, 2, 1, b'm', 1, b'1', 1, b'm', 1, b'2'],
        ),
        ("NaN score", &[3, 1, 1, b'm', 253]),
        (
            "score that is not a number",
            &[3, 1, 1, b'm', 2, b'x', b'y'],
        ),
        ("bad string encoding", &[0, 0xC5]),
        (
            "LZF claiming more than the limit",
            &[0, 0xC3, 1, 0x81, 0, 0, 0, 1, 0, 0, 0, 0, 0],
        ),
        ("quicklist container 3", &[18, 1, 3, 1, b'x']),
    ];
    for (what, object) in cases {
        assert_eq!(
            restore(&framed(object), MAX),
            Err(RestoreError::BadFormat),
            "{what}"
        );
    }
    assert_eq!(
        restore(&framed(&[6, 0]), MAX),
        Err(RestoreError::Unsupported("module"))
    );
    let big = framed(&[0, 0x40, 200, b'x']);
    let mut big = big;
    big.splice(4..4, vec![b'x'; 199]);
    let n = big.len();
    let crc = CRC.checksum(&big[..n - 8]);
    big[n - 8..].copy_from_slice(&crc.to_le_bytes());
    assert_eq!(restore(&big, MAX).unwrap().1.len(), 200);
    assert_eq!(restore(&big, 100), Err(RestoreError::TooBig(100)));
}

/// The payload of Redis's `stream-cgroups.tcl` "Loading from legacy
/// (Redis <= v6.2.x, rdb_ver < 10) persistence", `DUMP`ed by Redis 5
/// after XADD x 1-0 .. 6-0 data a..f, XDEL x 3-0, XGROUP CREATE x g1 0,
/// XGROUP CREATE x g2 0, XREADGROUP GROUP g1 c11 COUNT 4 STREAMS x >,
/// XTRIM x MAXLEN = 2.
const REDIS_5_STREAM: &str = concat!(
    "0f011000000000000000010000000000000000c3404a40571657000000230002",
    "0104010101846461746105000103010020010381610204200a0001400a006260",
    "0a0002400a0063600a4022018164200a4039200a0065600a0005400a0066200a",
    "00ff02060002026731050004000000000000000100000000000000003ef78343",
    "7a01000001000000000000000200000000000000003ef783437a010000010000",
    "00000000000400000000000000003ef783437a01000001000000000000000500",
    "000000000000003ef783437a0100000101036331313ef783437a010000040000",
    "0000000000010000000000000000000000000000000200000000000000000000",
    "0000000000040000000000000000000000000000000500000000000000000267",
    "320000000009003d52ef6867521dfa",
);

#[test]
fn reads_a_redis_5_stream_with_groups() {
    let (kind, value) = restore(&hex(REDIS_5_STREAM), MAX).unwrap();
    assert_eq!(kind, ValueKind::Stream);
    let s = Stream::decode(&value).unwrap();
    let entries: Vec<(u64, Vec<Bytes>)> = s
        .range(StreamId::MIN, StreamId::MAX, 100)
        .unwrap()
        .into_iter()
        .map(|i| (i.id.ms, i.fields))
        .collect();
    assert_eq!(
        entries,
        [(5, vec![b("data"), b("e")]), (6, vec![b("data"), b("f")])]
    );
    assert_eq!(s.last_id(), StreamId::new(6, 0));
    // As Redis 7 loads a legacy stream: entries added = its length.
    assert_eq!(s.entries_added(), 2);
    let groups = s.groups().unwrap();
    let g1 = &groups[&b("g1")];
    assert_eq!(g1.last_id, StreamId::new(5, 0)); // read 1, 2, 4, 5
    assert_eq!(g1.entries_read, Some(1));
    assert_eq!(g1.pel.len(), 4);
    assert!(g1
        .pel
        .values()
        .all(|n| n.consumer == b("c11") && n.delivery_count == 1));
    assert_eq!(g1.consumers[&b("c11")].pel.len(), 4);
    assert_eq!(groups[&b("g2")].entries_read, Some(0));
}

#[test]
fn streams_round_trip_with_their_groups() {
    let limits = crate::stream::Limits::default();
    let mut s = Stream::default();
    for i in 1..=250u64 {
        // Mostly one shape (SAMEFIELDS), some others; numbers and text.
        let fields: Vec<Bytes> = if i % 7 == 0 {
            vec![b("other"), b(&i.to_string()), b("x"), b("")]
        } else {
            vec![
                b("n"),
                b(&(i as i64 - 100).to_string()),
                b("text"),
                b(&"t".repeat(i as usize)),
            ]
        };
        s.append(
            StreamId::new(1_700_000_000_000 + i / 3, i % 3),
            &fields,
            limits,
        )
        .unwrap();
    }
    assert!(s.delete(StreamId::new(1_700_000_000_010, 0)).unwrap());
    let now = 1_700_000_123_456;
    let mut g = crate::stream::Group::new(StreamId::new(1_700_000_000_020, 1), Some(61));
    g.create_consumer(b"alice", now);
    g.create_consumer(b"bob", now);
    g.assign(StreamId::new(1_700_000_000_001, 1), b"alice", now, 1);
    g.assign(StreamId::new(1_700_000_000_002, 0), b"bob", now + 5, 3);
    g.create_consumer(b"idle", now);
    let fresh = crate::stream::Group::new(StreamId::MIN, None);
    let groups = s.groups_mut().unwrap();
    groups.insert(b("workers"), g);
    groups.insert(b("fresh"), fresh);
    let deleted = StreamId::new(1_700_000_000_010, 0);
    s.set_id(
        StreamId::new(1_800_000_000_000, 0),
        Some(300),
        Some(deleted),
    );
    let value = s.encode();

    let payload = dump(ValueKind::Stream, &value).unwrap();
    let n = payload.len();
    assert_eq!(payload[n - 10..n - 8], STREAM_DUMP_VERSION.to_le_bytes());
    let (kind, back) = restore(&payload, MAX).unwrap();
    assert_eq!(kind, ValueKind::Stream);
    let back = Stream::decode(&back).unwrap();
    let all = |s: &Stream| s.range(StreamId::MIN, StreamId::MAX, usize::MAX).unwrap();
    assert_eq!(all(&back), all(&s));
    assert_eq!(back.len(), 249);
    assert_eq!(back.last_id(), s.last_id());
    assert_eq!(back.entries_added(), 300);
    assert_eq!(back.max_deleted_id(), deleted);
    assert_eq!(back.groups().unwrap(), s.groups().unwrap());
}
