//! Indexes of big stored collections, so that looking up one field or
//! member ([`find_entry`](crate::packed::find_entry): `HGET`, `HEXISTS`,
//! `HSTRLEN`, `HINCRBY`'s read, `SISMEMBER`, `ZSCORE`) costs a hash probe
//! instead of a scan.
//!
//! A collection is one immutable engine value, scanned item by item. At
//! 60,000 fields a scan takes about 200 µs (the bytes stream through
//! memory), 20× what Redis's hash table takes. An index maps each item's
//! hash to its offset in the stored bytes. It is built the second time
//! the same stored value is looked up, never the first: a value that is
//! written between lookups (a write makes a new value) keeps being
//! scanned and pays nothing for an index it would throw away. A value
//! read again and again is indexed once, then probed.
//!
//! The indexes live in a small table per thread (no lock on the request
//! path; a server runs one or two worker threads), most recently used
//! first. Each index holds a clone of the value it indexes: the buffer
//! stays allocated, so its address and length name it (no other value can
//! take its place), at the price of keeping a replaced value alive until
//! its index is dropped: a table holds at most [`SLOTS`] indexes and pins
//! at most [`PINNED_MAX`] bytes of values. Values seen once are only
//! remembered by address and length, unpinned: if another value takes
//! the same place, the worst that happens is an index built one read
//! early, of the value actually read.
//!
//! Not here: writes still scan and copy (`Hash::set_stored` and the
//! like); a collection that is written as often as it is read gains
//! nothing.

use crate::packed::{same, Corrupt, Reader};
use bytes::Bytes;
use std::cell::RefCell;

/// Collections with fewer items are scanned: at 1,000 a scan is as fast
/// as Redis's lookup (BENCHMARKS.md, session 38).
pub const MIN_ITEMS: usize = 1024;

/// Indexes kept (and values pinned) at most, and values remembered as
/// seen once.
const SLOTS: usize = 16;

/// Bytes of values the indexes of one thread may keep alive; the least
/// recently used indexes go first (the newest is always kept).
pub const PINNED_MAX: usize = 64 << 20;

/// The answer of an indexed lookup.
pub enum Lookup {
    /// Not indexed (yet): scan.
    Scan,
    /// Found: the position just after the key's item.
    At(usize),
    /// Not in the collection.
    Absent,
}

struct Index {
    /// The value indexed (its buffer's address and length name it).
    value: Bytes,
    /// Items per entry (2 for a hash's field and value).
    width: u64,
    /// Open addressing: an entry's item offset + 1, 0 for empty.
    table: Vec<u32>,
}

struct Indexes {
    hasher: ahash::RandomState,
    /// Most recently used first.
    built: Vec<Index>,
    /// Values looked up once, not yet indexed: address and length.
    seen: Vec<(usize, usize)>,
}

thread_local! {
    static INDEXES: RefCell<Indexes> = RefCell::new(Indexes {
        hasher: ahash::RandomState::new(),
        built: Vec::new(),
        seen: Vec::new(),
    });
}

fn name(value: &Bytes) -> (usize, usize) {
    (value.as_ptr() as usize, value.len())
}

/// Looks `key` up in the stored collection `raw` of `count` entries of
/// `width` items, through its index if it has one (or builds it, if this
/// value was looked up before).
pub fn lookup(raw: &Bytes, width: u64, count: usize, key: &[u8]) -> Result<Lookup, Corrupt> {
    if count < MIN_ITEMS || raw.len() >= u32::MAX as usize {
        return Ok(Lookup::Scan);
    }
    INDEXES.with(|all| lookup_in(&mut all.borrow_mut(), raw, width, count, key))
}

fn lookup_in(
    all: &mut Indexes,
    raw: &Bytes,
    width: u64,
    count: usize,
    key: &[u8],
) -> Result<Lookup, Corrupt> {
    let hasher = all.hasher.clone();
    let at = match all
        .built
        .iter()
        .position(|i| name(&i.value) == name(raw) && i.width == width)
    {
        Some(at) => at,
        None => {
            let Some(seen) = all.seen.iter().position(|&v| v == name(raw)) else {
                all.seen.insert(0, name(raw));
                all.seen.truncate(SLOTS);
                return Ok(Lookup::Scan);
            };
            all.seen.remove(seen);
            let index = build(raw, width, count, &hasher)?;
            all.built.insert(0, index);
            all.built.truncate(SLOTS);
            keep_within(&mut all.built, PINNED_MAX);
            0
        }
    };
    if at > 0 {
        let index = all.built.remove(at);
        all.built.insert(0, index);
    }
    probe(&all.built[0], key, &hasher)
}

/// Drops the least recently used indexes (the last) until the values the
/// rest pin add up to at most `max` bytes; the first is always kept.
fn keep_within(built: &mut Vec<Index>, max: usize) {
    let mut pinned = 0;
    let mut keep = 0;
    for (n, i) in built.iter().enumerate() {
        pinned += i.value.len();
        if n > 0 && pinned > max {
            break;
        }
        keep = n + 1;
    }
    built.truncate(keep);
}

fn build(
    raw: &Bytes,
    width: u64,
    count: usize,
    hasher: &ahash::RandomState,
) -> Result<Index, Corrupt> {
    let slots = (count * 2).next_power_of_two();
    let mut table = vec![0u32; slots];
    let mask = slots - 1;
    let (mut r, _) = Reader::open(raw, width)?;
    for _ in 0..count {
        let start = r.position();
        let (at, end) = r.item_span()?;
        let mut i = hasher.hash_one(&raw[at..end]) as usize & mask;
        while table[i] != 0 {
            i = (i + 1) & mask;
        }
        table[i] = start as u32 + 1;
        for _ in 1..width {
            r.skip_item()?;
        }
    }
    r.finish()?;
    Ok(Index {
        value: raw.clone(),
        width,
        table,
    })
}

fn probe(index: &Index, key: &[u8], hasher: &ahash::RandomState) -> Result<Lookup, Corrupt> {
    let mask = index.table.len() - 1;
    let mut i = hasher.hash_one(key) as usize & mask;
    loop {
        let Some(start) = index.table[i].checked_sub(1) else {
            return Ok(Lookup::Absent);
        };
        let mut r = Reader::new(&index.value);
        r.seek(start as usize);
        let (at, end) = r.item_span()?;
        if same(&index.value[at..end], key) {
            return Ok(Lookup::At(end));
        }
        i = (i + 1) & mask;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packed::find_entry;

    fn hash_of(n: usize) -> Bytes {
        let mut h = crate::hash::Hash::default();
        h.set_many((0..n).map(|i| {
            (
                Bytes::from(format!("field:{i}")),
                Bytes::from(format!("v{i}")),
            )
        }));
        h.encode()
    }

    fn value_of(raw: &Bytes, field: &str) -> Option<Vec<u8>> {
        find_entry(raw, 2, field.as_bytes()).unwrap().map(|mut r| {
            let (at, end) = r.item_span().unwrap();
            raw[at..end].to_vec()
        })
    }

    #[test]
    fn the_second_lookup_builds_and_every_answer_matches_a_scan() {
        let raw = hash_of(3000);
        let (_, count) = Reader::open(&raw, 2).unwrap();
        assert!(
            matches!(lookup(&raw, 2, count, b"field:1").unwrap(), Lookup::Scan),
            "first: scan"
        );
        assert!(
            matches!(lookup(&raw, 2, count, b"field:1").unwrap(), Lookup::At(_)),
            "then indexed"
        );
        for i in (0..3000).step_by(7) {
            assert_eq!(
                value_of(&raw, &format!("field:{i}")),
                Some(format!("v{i}").into_bytes())
            );
        }
        for absent in ["field:3000", "", "v1", "field:-1", "field:10 "] {
            assert_eq!(value_of(&raw, absent), None, "{absent:?}");
        }
        // Another value (a write made it) is scanned first, then indexed.
        let mut h = crate::hash::Hash::decode(&raw).unwrap();
        h.set(Bytes::from("field:1"), Bytes::from("changed"));
        let next = h.encode();
        assert!(matches!(
            lookup(&next, 2, count, b"field:1").unwrap(),
            Lookup::Scan
        ));
        assert_eq!(value_of(&next, "field:1"), Some(b"changed".to_vec()));
        assert_eq!(
            value_of(&raw, "field:1"),
            Some(b"v1".to_vec()),
            "the old value's index"
        );
    }

    #[test]
    fn indexes_pin_a_bounded_number_of_bytes() {
        let index = |len: usize| Index {
            value: Bytes::from(vec![0u8; len]),
            width: 1,
            table: vec![0; 2],
        };
        let mut built = vec![index(50), index(30), index(30), index(10)];
        keep_within(&mut built, 100);
        assert_eq!(
            built.iter().map(|i| i.value.len()).collect::<Vec<_>>(),
            [50, 30]
        );
        let mut one_big = vec![index(500), index(1)];
        keep_within(&mut one_big, 100);
        assert_eq!(one_big.len(), 1, "the newest stays, whatever its size");
    }

    #[test]
    fn small_collections_are_scanned() {
        let raw = hash_of(100);
        for _ in 0..3 {
            assert!(matches!(
                lookup(&raw, 2, 100, b"field:1").unwrap(),
                Lookup::Scan
            ));
        }
    }

    #[test]
    fn sets_and_sorted_sets_too() {
        let set =
            crate::set::Set::from_members((0..2000).map(|i| Bytes::from(format!("m{i}")))).encode();
        let mut z = crate::zset::ZSet::default();
        z.update_many(
            (0..2000).map(|i| (Bytes::from(format!("m{i}")), i as f64)),
            |_, s| Some(s),
        );
        let z = z.encode();
        for _ in 0..2 {
            assert!(crate::set::Set::find(&set, b"m1999").unwrap());
            assert!(!crate::set::Set::find(&set, b"m2000").unwrap());
            assert_eq!(
                crate::zset::ZSet::find_score(&z, b"m1234").unwrap(),
                Some(1234.0)
            );
            assert_eq!(crate::zset::ZSet::find_score(&z, b"x").unwrap(), None);
        }
    }
}
