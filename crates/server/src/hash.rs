//! The encoding of a Redis hash inside one engine value.
//!
//! A hash is stored as one [`Entry`](tiercache_engine::Entry) of kind
//! [`ValueKind::Hash`](tiercache_engine::ValueKind::Hash) whose value is
//! this encoding; the engine and the stores carry it as opaque bytes. Fields
//! keep their insertion order, as Redis's listpack does for small hashes:
//! `HGETALL` lists them in the order they were first set, an overwritten
//! field keeps its place, a deleted one leaves.
//!
//! The layout is [`packed`](crate::packed)'s, the count being the number
//! of fields and each field followed by its value:
//!
//! ```text
//! [version: u8 = 1][count: varint] then count × ([len: varint][field][len: varint][value])
//! ```
//!
//! Decoding is one pass, bounds-checked: a corrupt value from a store is a
//! [`Corrupt`] error, never a panic or a huge allocation. Fields and values
//! are read from the stored buffer (no copy).
//!
//! A hash decoded from a stored value records its writes, so that
//! write-back journals an `HSET` to a big hash as the field set, not the
//! hash ([`Hash::take_patch`], `oplog`). One field is read or set
//! without decoding: [`Hash::find`], [`Hash::set_stored`].
//!
//! ```
//! use tiercache_server::hash::Hash;
//! let stored = Hash::default().encode();
//! let one = Hash::set_stored(&stored, b"f", b"v").unwrap();
//! assert!(one.added);
//! assert_eq!(Hash::find(&one.value, b"f").unwrap(), Some(&b"v"[..]));
//! ```
//!
//! ```
//! use tiercache_server::hash::Hash;
//! let mut h = Hash::default();
//! assert!(h.set("b".into(), "1".into()));
//! assert!(h.set("a".into(), "2".into()));
//! assert!(!h.set("b".into(), "3".into()), "an overwrite is not a new field");
//! let back = Hash::decode(&h.encode()).unwrap();
//! let fields: Vec<_> = back.iter().map(|(f, v)| (&f[..], &v[..])).collect();
//! assert_eq!(fields, [(&b"b"[..], &b"3"[..]), (&b"a"[..], &b"2"[..])]);
//! assert!(Hash::decode(&bytes::Bytes::from_static(b"\x01\x05")).is_err());
//! ```

use crate::oplog::{self, OpLog};
pub use crate::packed::Corrupt;
use crate::packed::{find_entry, find_entry_indexed, put_item, splice, Reader};
use crate::slot::{encode_slots, Slot};
use bytes::Bytes;
use std::collections::HashMap;

/// The patch operations: `SET field value`, `REMOVE field...`.
const SET: u8 = 1;
const REMOVE: u8 = 2;

/// Above this many fields, lookups of several fields at once go through a
/// temporary index instead of a linear scan per field.
const INDEX_ABOVE: usize = 16;

/// Redis's default `hash-max-listpack-entries`: more fields make it a `hashtable`.
pub const LISTPACK_MAX_ENTRIES: i64 = 128;
/// Redis's default `hash-max-listpack-value`: a longer field or value makes
/// it a `hashtable`.
pub const LISTPACK_MAX_VALUE: i64 = 64;

/// A write made on a stored hash without decoding it
/// ([`Hash::set_stored`]).
#[derive(Debug)]
pub struct Stored {
    /// The stored hash after.
    pub value: Bytes,
    /// The patch from the stored hash before to `value`.
    pub patch: Bytes,
    /// True when the field is new.
    pub added: bool,
}

/// Where a field's value lies in a stored hash ([`Hash::locate`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueAt {
    /// The value's item: its length, then its bytes.
    pub item: std::ops::Range<usize>,
    /// The value's bytes.
    pub bytes: std::ops::Range<usize>,
}

/// A hash's fields and values, in insertion order.
#[derive(Clone, Debug, Default)]
pub struct Hash {
    /// The stored bytes it was decoded from, which stored slots point into.
    raw: Bytes,
    fields: Vec<(Slot, Slot)>,
    /// The writes since it was decoded (`None` for a hash built from
    /// nothing; see [`Hash::take_patch`]).
    ops: Option<OpLog>,
}

/// Two hashes are equal when their fields and values are, in order.
impl PartialEq for Hash {
    fn eq(&self, other: &Hash) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Hash {}

impl Hash {
    /// Decodes a stored hash (one pass, bounds-checked; no copy: a field
    /// is read from `raw` when asked for).
    pub fn decode(raw: &Bytes) -> Result<Hash, Corrupt> {
        // Each field takes at least two length bytes.
        let (mut r, count) = Reader::open(raw, 2)?;
        let mut fields = Vec::with_capacity(count);
        for _ in 0..count {
            let f = Slot::read(&mut r)?;
            let v = Slot::read(&mut r)?;
            fields.push((f, v));
        }
        r.finish()?;
        Ok(Hash {
            raw: raw.clone(),
            fields,
            ops: Some(OpLog::default()),
        })
    }

    /// The value of `field` in the stored hash `raw`, found without
    /// decoding it ([`find_entry_indexed`]).
    pub fn find<'a>(raw: &'a Bytes, field: &[u8]) -> Result<Option<&'a [u8]>, Corrupt> {
        let Some(mut r) = find_entry_indexed(raw, 2, field)? else {
            return Ok(None);
        };
        let (at, end) = r.item_span()?;
        Ok(Some(&raw[at..end]))
    }

    /// [`Hash::set`] on the stored hash `raw` without decoding it: the
    /// stored hash after, the patch `Hash::apply_patch` makes it with,
    /// and whether the field is new. The bytes left alone are copied in at
    /// most two pieces; they are the bytes `Hash::decode(raw)`, `set`,
    /// `encode` would write.
    pub fn set_stored(raw: &Bytes, field: &[u8], value: &[u8]) -> Result<Stored, Corrupt> {
        let found = Hash::locate(raw, field)?;
        Hash::set_located(raw, found.as_ref(), field, value)
    }

    /// Where the value of `field` is in the stored hash `raw` (`None` when
    /// absent), found without decoding it ([`find_entry`]).
    pub fn locate(raw: &Bytes, field: &[u8]) -> Result<Option<ValueAt>, Corrupt> {
        let Some(mut r) = find_entry(raw, 2, field)? else {
            return Ok(None);
        };
        let start = r.position();
        let (at, end) = r.item_span()?;
        Ok(Some(ValueAt {
            item: start..end,
            bytes: at..end,
        }))
    }

    /// [`Hash::set_stored`] where [`Hash::locate`] found `field`'s value
    /// (`found`), so that a write decided from the value scans once.
    pub fn set_located(
        raw: &Bytes,
        found: Option<&ValueAt>,
        field: &[u8],
        value: &[u8],
    ) -> Result<Stored, Corrupt> {
        let (header, count) = Reader::open(raw, 2)?;
        let header_end = header.position();
        let stored = match found {
            // The old value's item out, the new one in its place.
            Some(ValueAt { item, .. }) => splice(
                raw,
                header_end,
                count,
                Some(item.clone()),
                item.start,
                value.len() + 10,
                |out| put_item(out, value),
            ),
            // One more field, after every other.
            None => splice(
                raw,
                header_end,
                count + 1,
                None,
                raw.len(),
                field.len() + value.len() + 20,
                |out| {
                    put_item(out, field);
                    put_item(out, value);
                },
            ),
        };
        Ok(Stored {
            value: stored,
            patch: oplog::one(SET, &[field, value]),
            added: found.is_none(),
        })
    }

    /// The writes made since this hash was decoded, as a patch that turns
    /// those bytes into [`Hash::encode`]'s; `None` for a hash built from
    /// nothing or left unchanged. Taking it starts a new record.
    pub fn take_patch(&mut self) -> Option<Bytes> {
        self.ops.as_mut()?.take()
    }

    /// Applies a patch from [`Hash::take_patch`] to the stored hash
    /// `base`: the stored hash after.
    pub(crate) fn apply_patch(base: &Bytes, patch: &Bytes) -> Result<Bytes, Corrupt> {
        let mut hash = Hash::decode(base)?;
        oplog::replay(patch, |tag, args| match tag {
            SET => {
                let [field, value] = oplog::exactly(args)?;
                hash.set(field, value);
                Ok(())
            }
            REMOVE => {
                let fields: Vec<&[u8]> = args.iter().map(|f| &f[..]).collect();
                hash.remove_many(&fields);
                Ok(())
            }
            _ => Err(Corrupt("unknown hash operation")),
        })?;
        Ok(hash.encode())
    }

    /// The stored form: unchanged fields are copied from the stored bytes
    /// in runs (`slot::encode_slots`).
    pub fn encode(&self) -> Bytes {
        encode_slots(
            &self.raw,
            self.fields.len(),
            self.fields.iter().flat_map(|(f, v)| [f, v]),
        )
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// True without fields (such a hash does not exist in Redis: the key is deleted).
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        self.position(field)
            .map(|i| self.fields[i].1.get(&self.raw))
    }

    /// Sets `field`; true when it is new (appended), false when it was
    /// overwritten in place.
    pub fn set(&mut self, field: Bytes, value: Bytes) -> bool {
        if let Some(ops) = &mut self.ops {
            ops.push(SET, &[&field, &value]);
        }
        match self.position(&field) {
            Some(i) => {
                self.fields[i].1 = Slot::New(value);
                false
            }
            None => {
                self.fields.push((Slot::New(field), Slot::New(value)));
                true
            }
        }
    }

    /// Sets every pair in order (a field named twice takes its last value);
    /// returns how many fields are new.
    pub fn set_many(&mut self, pairs: impl IntoIterator<Item = (Bytes, Bytes)>) -> usize {
        let pairs: Vec<(Bytes, Bytes)> = pairs.into_iter().collect();
        // A few fields: a scan each (building an index of a big hash for
        // one field costs far more than the scan).
        if pairs.len() <= INDEX_ABOVE
            || pairs.len() * self.fields.len() <= INDEX_ABOVE * INDEX_ABOVE
        {
            return pairs
                .into_iter()
                .map(|(f, v)| usize::from(self.set(f, v)))
                .sum();
        }
        let mut index: HashMap<Bytes, usize> = self
            .fields
            .iter()
            .enumerate()
            .map(|(i, (f, _))| (f.to_bytes(&self.raw), i))
            .collect();
        let mut added = 0;
        for (f, v) in pairs {
            if let Some(ops) = &mut self.ops {
                ops.push(SET, &[&f, &v]);
            }
            match index.get(&f) {
                Some(&i) => self.fields[i].1 = Slot::New(v),
                None => {
                    index.insert(f.clone(), self.fields.len());
                    self.fields.push((Slot::New(f), Slot::New(v)));
                    added += 1;
                }
            }
        }
        added
    }

    /// Removes `fields` (the others keep their order); returns how many existed.
    pub fn remove_many(&mut self, fields: &[&[u8]]) -> usize {
        if let Some(ops) = &mut self.ops {
            ops.push(REMOVE, fields);
        }
        let before = self.fields.len();
        let raw = &self.raw;
        if fields.len() <= INDEX_ABOVE {
            self.fields.retain(|(f, _)| !fields.contains(&f.get(raw)));
        } else {
            let gone: std::collections::HashSet<&[u8]> = fields.iter().copied().collect();
            self.fields.retain(|(f, _)| !gone.contains(f.get(raw)));
        }
        before - self.fields.len()
    }

    /// Fields and values in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&[u8], &[u8])> {
        self.fields
            .iter()
            .map(|(f, v)| (f.get(&self.raw), v.get(&self.raw)))
    }

    /// The `i`th field and value (insertion order).
    pub fn at(&self, i: usize) -> Option<(&[u8], &[u8])> {
        self.fields
            .get(i)
            .map(|(f, v)| (f.get(&self.raw), v.get(&self.raw)))
    }

    /// Redis's encoding for these contents (`OBJECT ENCODING`) under the
    /// thresholds `hash-max-listpack-entries` and `hash-max-listpack-value`:
    /// `listpack` while small, else `hashtable`.
    pub fn encoding(&self, max_entries: i64, max_value: i64) -> &'static str {
        let fits = |n: usize| i64::try_from(n).is_ok_and(|n| n <= max_value);
        let small = i64::try_from(self.fields.len()).is_ok_and(|n| n <= max_entries)
            && self.iter().all(|(f, v)| fits(f.len()) && fits(v.len()));
        if small {
            "listpack"
        } else {
            "hashtable"
        }
    }

    fn position(&self, field: &[u8]) -> Option<usize> {
        let raw = &self.raw;
        self.fields
            .iter()
            .position(|(f, _)| crate::packed::same(f.get(raw), field))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn order_is_insertion_order_and_overwrites_keep_their_place() {
        let mut h = Hash::default();
        assert_eq!(
            h.set_many([(b("x"), b("1")), (b("y"), b("2")), (b("z"), b("3"))]),
            3
        );
        assert_eq!(
            h.set_many([(b("y"), b("two")), (b("w"), b("4")), (b("w"), b("5"))]),
            1
        );
        assert_eq!(h.remove_many(&[b"x", b"nope"]), 1);
        let h = Hash::decode(&h.encode()).unwrap();
        let got: Vec<(&[u8], &[u8])> = h.iter().collect();
        assert_eq!(got, [(&b"y"[..], &b"two"[..]), (b"z", b"3"), (b"w", b"5")]);
        assert_eq!(h.get(b"z"), Some(&b"3"[..]));
        assert_eq!(h.get(b"x"), None);
    }

    #[test]
    fn large_hashes_use_the_index_and_agree_with_the_scan() {
        let mut big = Hash::default();
        let pairs: Vec<(Bytes, Bytes)> = (0..200)
            .map(|i| (b(&format!("f{i}")), b(&i.to_string())))
            .collect();
        assert_eq!(big.set_many(pairs.clone()), 200);
        assert_eq!(big.set_many(pairs[..50].to_vec()), 0);
        assert_eq!(big.set_many([(b("new"), b("v"))]), 1);
        let gone: Vec<Vec<u8>> = (0..100)
            .map(|i| format!("f{}", i * 2).into_bytes())
            .collect();
        let gone: Vec<&[u8]> = gone.iter().map(|g| &g[..]).collect();
        assert_eq!(big.remove_many(&gone), 100);
        assert_eq!(big.len(), 101);
        assert_eq!(big.at(0).unwrap().0, b"f1");
        let defaults = (LISTPACK_MAX_ENTRIES, LISTPACK_MAX_VALUE);
        assert_eq!(big.encoding(defaults.0, defaults.1), "listpack");
        assert_eq!(big.encoding(100, 64), "hashtable");
        big.set(b("long"), Bytes::from(vec![b'x'; 65]));
        assert_eq!(big.encoding(defaults.0, defaults.1), "hashtable");
        assert_eq!(big.encoding(defaults.0, 65), "listpack");
    }

    #[test]
    fn corruption_is_an_error() {
        let mut h = Hash::default();
        h.set(b("field"), b("value"));
        let good = h.encode();
        for cut in 0..good.len() {
            assert!(Hash::decode(&good.slice(..cut)).is_err(), "cut at {cut}");
        }
        let mut trailing = good.to_vec();
        trailing.push(0);
        assert_eq!(
            Hash::decode(&Bytes::from(trailing)),
            Err(Corrupt("trailing bytes"))
        );
        let mut version = good.to_vec();
        version[0] = 9;
        assert!(Hash::decode(&Bytes::from(version)).is_err());
        // A count of 2^63 claims more than any value could hold.
        let huge = Bytes::from_static(b"\x01\xff\xff\xff\xff\xff\xff\xff\xff\x7f");
        assert_eq!(
            Hash::decode(&huge),
            Err(Corrupt("item count exceeds the value"))
        );
        let overflow = Bytes::from_static(b"\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02");
        assert_eq!(Hash::decode(&overflow), Err(Corrupt("length overflows")));
        // A field length past the end.
        assert!(Hash::decode(&Bytes::from_static(b"\x01\x01\x05ab\x00")).is_err());
    }

    #[test]
    fn empty_hash_encodes_to_two_bytes() {
        let e = Hash::default().encode();
        assert_eq!(&e[..], b"\x01\x00");
        assert!(Hash::decode(&e).unwrap().is_empty());
    }

    /// A deterministic xorshift stream: the crate has no proptest, and a
    /// seeded loop reproduces any failure by its iteration number.
    fn rng(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    #[test]
    fn random_hashes_round_trip_against_a_model() {
        let mut next = rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..300 {
            let mut h = Hash::default();
            let mut model: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            for _ in 0..next() % 40 {
                let f = vec![(next() % 8) as u8; (next() % 3) as usize];
                let v: Vec<u8> = (0..next() % 300).map(|_| next() as u8).collect();
                if next() % 5 == 0 {
                    model.retain(|(mf, _)| *mf != f);
                    h.remove_many(&[&f]);
                    continue;
                }
                match model.iter_mut().find(|(mf, _)| *mf == f) {
                    Some(slot) => slot.1 = v.clone(),
                    None => model.push((f.clone(), v.clone())),
                }
                h.set(f.into(), v.into());
            }
            let back = Hash::decode(&h.encode()).unwrap();
            let got: Vec<(Vec<u8>, Vec<u8>)> =
                back.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect();
            assert_eq!(got, model, "round {round}");
        }
    }

    #[test]
    fn arbitrary_and_mutated_bytes_never_panic() {
        let mut next = rng(42);
        let mut h = Hash::default();
        for i in 0..20 {
            h.set(b(&format!("f{i}")), b(&"v".repeat(i * 20)));
        }
        let good = h.encode().to_vec();
        for _ in 0..20_000 {
            let mut raw = if next() % 2 == 0 {
                good.clone()
            } else {
                (0..next() % 64).map(|_| next() as u8).collect()
            };
            for _ in 0..1 + next() % 4 {
                if !raw.is_empty() {
                    let i = (next() as usize) % raw.len();
                    raw[i] = next() as u8;
                }
            }
            let _ = Hash::decode(&Bytes::from(raw));
        }
    }

    #[test]
    fn a_patch_applied_to_the_bytes_before_gives_the_bytes_after() {
        let mut rng = crate::test_rng::Lcg(5);
        let mut bytes = Hash::default().encode();
        // What the hash must hold, in order.
        let mut model: Vec<(Bytes, Bytes)> = Vec::new();
        let model_set = |model: &mut Vec<(Bytes, Bytes)>, f: &Bytes, v: &Bytes| match model
            .iter_mut()
            .find(|(mf, _)| mf == f)
        {
            Some(pair) => pair.1 = v.clone(),
            None => model.push((f.clone(), v.clone())),
        };
        for round in 0..300 {
            let mut h = Hash::decode(&bytes).unwrap();
            for _ in 0..1 + rng.next(4) {
                match rng.next(4) {
                    // Many pairs at once take the indexed path.
                    0 => {
                        let n = 1 + rng.next(40);
                        let pairs: Vec<_> = (0..n)
                            .map(|_| (b(&format!("f{}", rng.next(60))), b(&format!("v{round}"))))
                            .collect();
                        for (f, v) in &pairs {
                            model_set(&mut model, f, v);
                        }
                        h.set_many(pairs);
                    }
                    1 => {
                        let gone: Vec<String> = (0..1 + rng.next(20))
                            .map(|_| format!("f{}", rng.next(60)))
                            .collect();
                        let gone: Vec<&[u8]> = gone.iter().map(|f| f.as_bytes()).collect();
                        model.retain(|(f, _)| !gone.contains(&&f[..]));
                        h.remove_many(&gone);
                    }
                    _ => {
                        let (f, v) = (b(&format!("f{}", rng.next(60))), b(&format!("{round}")));
                        model_set(&mut model, &f, &v);
                        h.set(f, v);
                    }
                }
            }
            let after = h.encode();
            let back = Hash::decode(&after).unwrap();
            let want: Vec<(&[u8], &[u8])> = model.iter().map(|(f, v)| (&f[..], &v[..])).collect();
            assert_eq!(back.iter().collect::<Vec<_>>(), want, "round {round}");
            let patch = h.take_patch().expect("a decoded hash records its writes");
            assert_eq!(
                Hash::apply_patch(&bytes, &patch).unwrap(),
                after,
                "round {round}"
            );
            bytes = after;
        }
        assert!(Hash::default().take_patch().is_none(), "nothing to patch");
        let mut h = Hash::decode(&bytes).unwrap();
        assert!(h.take_patch().is_none(), "unchanged");
        assert!(Hash::apply_patch(&bytes, &Bytes::from_static(b"\x09")).is_err());
        assert!(Hash::apply_patch(&bytes, &Bytes::from_static(b"\x01\x05ab")).is_err());
    }

    #[test]
    fn find_reads_what_decode_reads_without_decoding() {
        let mut h = Hash::default();
        for i in 0..200 {
            h.set(b(&format!("f{i}")), b(&"v".repeat(i % 7)));
        }
        let raw = h.encode();
        for i in [0, 1, 99, 199] {
            let f = format!("f{i}");
            assert_eq!(Hash::find(&raw, f.as_bytes()).unwrap(), h.get(f.as_bytes()));
        }
        assert_eq!(Hash::find(&raw, b"f200").unwrap(), None);
        assert_eq!(Hash::find(&Hash::default().encode(), b"f").unwrap(), None);
        // A field before the damage is found; one not found has to read
        // through the damage, which is an error.
        let cut = raw.slice(..raw.len() - 1);
        assert_eq!(Hash::find(&cut, b"f0").unwrap(), Some(&b""[..]));
        assert!(Hash::find(&cut, b"absent").is_err());
    }

    #[test]
    fn set_stored_writes_what_decode_set_encode_writes() {
        let mut rng = crate::test_rng::Lcg(17);
        let mut raw = Hash::default().encode();
        // Past 127 fields the count takes two bytes; past 16 KiB the
        // buffer is placed apart.
        for round in 0..400 {
            let field = format!("f{}", rng.next(300));
            let value = "v".repeat(rng.next(200) as usize);
            let mut h = Hash::decode(&raw).unwrap();
            let added = h.set(b(&field), b(&value));
            let want = h.encode();
            let s = Hash::set_stored(&raw, field.as_bytes(), value.as_bytes()).unwrap();
            assert_eq!(s.value, want, "round {round}");
            assert_eq!(s.added, added, "round {round}");
            assert_eq!(Hash::apply_patch(&raw, &s.patch).unwrap(), want);
            raw = want;
        }
        assert!(raw.len() > 16 * 1024 && Hash::decode(&raw).unwrap().len() > 127);
        // Damage the scan reaches is an error, not a write.
        assert!(Hash::set_stored(&raw.slice(..raw.len() - 1), b"new", b"v").is_err());
        assert!(Hash::set_stored(&Bytes::from_static(b"\x01\x09\x01f"), b"f", b"v").is_err());
    }
}
