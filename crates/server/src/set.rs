//! The encoding of a Redis set inside one engine value.
//!
//! A set is one [`Entry`](tiercache_engine::Entry) of kind
//! [`ValueKind::Set`](tiercache_engine::ValueKind::Set) whose value is
//! [`packed`](crate::packed)'s layout, one item per member. The engine and
//! the stores carry it as opaque bytes.
//!
//! Order: a set whose members are all integers is kept sorted by value,
//! as Redis lists an `intset`; any other set keeps insertion order (Redis's
//! `hashtable` order is arbitrary, so any order is as good beyond the
//! `intset` limit). Most commands decode the whole set: membership is a
//! scan while small, a temporary index beyond [`INDEX_ABOVE`] members
//! touched at once. A set decoded from a stored value records its writes,
//! so that write-back journals a `SADD` to a big set as the members added
//! ([`Set::take_patch`], `oplog`). One member is looked up or
//! added without decoding: [`Set::find`], [`Set::add_stored`].
//!
//! ```
//! use tiercache_server::set::Set;
//! let mut s = Set::default();
//! assert_eq!(s.add_many(["3".into(), "1".into(), "3".into()]), 2);
//! let back = Set::decode(&s.encode()).unwrap();
//! assert_eq!(back.iter().collect::<Vec<_>>(), [b"1", b"3"]);
//! assert_eq!(back.encoding(512), "intset");
//! ```

use crate::oplog::{self, OpLog};
use crate::packed::{find_entry_indexed, put_item, splice, Corrupt, Reader};
use crate::slot::{encode_slots, read_slots, Slot};
use bytes::Bytes;
use std::collections::HashSet;
use tiercache_engine::parse_i64;

/// Redis's default `set-max-intset-entries`.
pub const INTSET_MAX_ENTRIES: i64 = 512;

/// Above this many members times members looked up, lookups go through a
/// temporary hash index instead of a scan per member.
pub const INDEX_ABOVE: usize = 256;

/// The patch operations: `ADD member...`, `REMOVE member...`.
const ADD: u8 = 1;
const REMOVE: u8 = 2;

/// A set's members (see the module doc for their order).
#[derive(Clone, Debug, Default)]
pub struct Set {
    /// The stored bytes the members were decoded from (empty for a set
    /// built from nothing): [`Slot`]s point into them.
    raw: Bytes,
    members: Vec<Slot>,
    /// The writes since it was decoded (`None` for a set built from
    /// nothing; see [`Set::take_patch`]).
    ops: Option<OpLog>,
}

/// Two sets are equal when their members are, in order.
impl PartialEq for Set {
    fn eq(&self, other: &Set) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Set {}

impl Set {
    /// Decodes a stored set (one pass, bounds-checked; no copy: a member
    /// is read from `raw` when asked for).
    pub fn decode(raw: &Bytes) -> Result<Set, Corrupt> {
        Ok(Set {
            members: read_slots(raw)?,
            raw: raw.clone(),
            ops: Some(OpLog::default()),
        })
    }

    /// True when `member` is in the stored set `raw`, found without
    /// decoding it ([`find_entry_indexed`]).
    pub fn find(raw: &Bytes, member: &[u8]) -> Result<bool, Corrupt> {
        Ok(find_entry_indexed(raw, 1, member)?.is_some())
    }

    /// [`Set::add_many`] of one member on the stored set `raw` without
    /// decoding it: `None` when `member` is there already, else the stored
    /// set after and the patch `Set::apply_patch` makes it with. The
    /// member goes where `add_many` puts it (in order in a set of integers,
    /// else last), the rest copied in at most two pieces; the bytes are
    /// those `Set::decode(raw)`, `add_many`, `encode` would write.
    pub fn add_stored(raw: &Bytes, member: &[u8]) -> Result<Option<(Bytes, Bytes)>, Corrupt> {
        let (mut r, count) = Reader::open(raw, 1)?;
        let header_end = r.position();
        let number = parse_i64(member);
        // While every member is an integer: where `member` goes in order.
        let mut integers = true;
        let mut before = None;
        for _ in 0..count {
            let start = r.position();
            let (at, end) = r.item_span()?;
            let m = &raw[at..end];
            if crate::packed::same(m, member) {
                return Ok(None);
            }
            if integers {
                match parse_i64(m) {
                    None => integers = false,
                    Some(v) if before.is_none() && number.is_some_and(|n| v > n) => {
                        before = Some(start)
                    }
                    Some(_) => {}
                }
            }
        }
        r.finish()?;
        let at = match (integers, number) {
            (true, Some(_)) => before.unwrap_or(raw.len()),
            _ => raw.len(),
        };
        let value = splice(
            raw,
            header_end,
            count + 1,
            None,
            at,
            member.len() + 10,
            |out| put_item(out, member),
        );
        Ok(Some((value, oplog::one(ADD, &[member]))))
    }

    /// The writes made since this set was decoded, as a patch that turns
    /// those bytes into [`Set::encode`]'s; `None` for a set built from
    /// nothing or left unchanged. Taking it starts a new record.
    pub fn take_patch(&mut self) -> Option<Bytes> {
        self.ops.as_mut()?.take()
    }

    /// Applies a patch from [`Set::take_patch`] to the stored set `base`:
    /// the stored set after.
    pub(crate) fn apply_patch(base: &Bytes, patch: &Bytes) -> Result<Bytes, Corrupt> {
        let mut set = Set::decode(base)?;
        oplog::replay(patch, |tag, args| {
            match tag {
                ADD => {
                    set.add_many(args);
                }
                REMOVE => {
                    let members: Vec<&[u8]> = args.iter().map(|m| &m[..]).collect();
                    set.remove_many(&members);
                }
                _ => return Err(Corrupt("unknown set operation")),
            }
            Ok(())
        })?;
        Ok(set.encode())
    }

    /// The stored form: unchanged members are copied from the stored bytes
    /// in runs (`slot::encode_slots`).
    pub fn encode(&self) -> Bytes {
        encode_slots(&self.raw, self.members.len(), self.members.iter())
    }

    /// A set of `members` (repeats counted once).
    pub fn from_members(members: impl IntoIterator<Item = Bytes>) -> Set {
        let mut s = Set::default();
        s.add_many(members);
        s
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// True without members (such a set does not exist in Redis).
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Members in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> + Clone + '_ {
        self.members.iter().map(|m| m.get(&self.raw))
    }

    /// Members in order, as shared buffers (slices of the stored bytes,
    /// no copy), for a set built from them.
    pub fn iter_bytes(&self) -> impl ExactSizeIterator<Item = Bytes> + '_ {
        self.members.iter().map(|m| m.to_bytes(&self.raw))
    }

    /// The `i`th member.
    pub fn at(&self, i: usize) -> Option<&[u8]> {
        self.members.get(i).map(|m| m.get(&self.raw))
    }

    /// True when `member` is in the set.
    pub fn contains(&self, member: &[u8]) -> bool {
        self.iter().any(|m| crate::packed::same(m, member))
    }

    /// For each of `members`, whether it is in the set.
    pub fn contains_each(&self, members: &[&[u8]]) -> Vec<bool> {
        if members.len() * self.members.len() <= INDEX_ABOVE * INDEX_ABOVE {
            return members.iter().map(|m| self.contains(m)).collect();
        }
        let index = self.index();
        members.iter().map(|m| index.contains(m)).collect()
    }

    /// A hash index of the members, for many lookups.
    pub fn index(&self) -> HashSet<&[u8]> {
        self.iter().collect()
    }

    /// Adds `members` (repeats and members already there count once);
    /// returns how many are new.
    pub fn add_many(&mut self, members: impl IntoIterator<Item = Bytes>) -> usize {
        let members: Vec<Bytes> = members.into_iter().collect();
        if let Some(ops) = &mut self.ops {
            ops.push(ADD, &members);
        }
        let mut fresh: Vec<Bytes> = Vec::new();
        if members.len() <= 16 && members.len() * self.len() <= INDEX_ABOVE * INDEX_ABOVE {
            for m in members {
                if !self.contains(&m) && !fresh.contains(&m) {
                    fresh.push(m);
                }
            }
        } else {
            let mut seen = self.index();
            for m in &members {
                if seen.insert(m) {
                    fresh.push(m.clone());
                }
            }
        }
        let added = fresh.len();
        self.members.extend(fresh.into_iter().map(Slot::New));
        if added > 0 {
            self.order();
        }
        added
    }

    /// Removes `members`; returns how many were there.
    pub fn remove_many(&mut self, members: &[&[u8]]) -> usize {
        if let Some(ops) = &mut self.ops {
            ops.push(REMOVE, members);
        }
        let before = self.members.len();
        let raw = &self.raw;
        if members.len() * before <= INDEX_ABOVE * INDEX_ABOVE {
            self.members.retain(|m| !members.contains(&m.get(raw)));
        } else {
            let gone: HashSet<&[u8]> = members.iter().copied().collect();
            self.members.retain(|m| !gone.contains(m.get(raw)));
        }
        let removed = before - self.members.len();
        if removed > 0 {
            self.order();
        }
        removed
    }

    /// Removes and returns the member at `i`.
    pub fn take(&mut self, i: usize) -> Bytes {
        let m = self.members.remove(i).to_bytes(&self.raw);
        if let Some(ops) = &mut self.ops {
            ops.push(REMOVE, &[&m]);
        }
        self.order();
        m
    }

    /// Keeps only the members for which `keep` is true.
    pub fn retain(&mut self, mut keep: impl FnMut(&[u8]) -> bool) {
        let recording = self.ops.is_some();
        let raw = &self.raw;
        let mut gone = Vec::new();
        self.members.retain(|m| {
            let kept = keep(m.get(raw));
            if !kept && recording {
                gone.push(m.to_bytes(raw));
            }
            kept
        });
        if let (Some(ops), false) = (&mut self.ops, gone.is_empty()) {
            ops.push(REMOVE, &gone);
        }
        self.order();
    }

    /// Redis's encoding for these contents (`OBJECT ENCODING`) under
    /// `set-max-intset-entries`: `intset` while every member is an integer
    /// and there are at most that many, else `hashtable` (Redis 7.0 has no
    /// `listpack` sets).
    pub fn encoding(&self, max_intset: i64) -> &'static str {
        if self.is_intset(max_intset) {
            "intset"
        } else {
            "hashtable"
        }
    }

    fn is_intset(&self, max_intset: i64) -> bool {
        i64::try_from(self.members.len()).is_ok_and(|n| n <= max_intset) && self.all_integers()
    }

    fn all_integers(&self) -> bool {
        self.iter().all(|m| parse_i64(m).is_some())
    }

    /// Keeps a set of integers sorted by value (the module doc's order):
    /// a removal can leave one unsorted, when its last string goes.
    fn order(&mut self) {
        if self.all_integers() {
            let raw = &self.raw;
            self.members.sort_by_cached_key(|m| parse_i64(m.get(raw)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn integers_sort_until_a_string_or_the_limit() {
        let mut s = Set::from_members(["10", "-2", "3"].map(b));
        assert_eq!(s.iter().collect::<Vec<_>>(), [&b"-2"[..], b"3", b"10"]);
        assert_eq!(s.encoding(512), "intset");
        assert_eq!(s.encoding(2), "hashtable");
        assert_eq!(s.add_many(["a", "1"].map(b)), 2);
        assert_eq!(
            s.iter().collect::<Vec<_>>(),
            [&b"-2"[..], b"3", b"10", b"a", b"1"]
        );
        assert_eq!(s.encoding(512), "hashtable");
        // Without its string, it is a set of integers again, in order.
        assert_eq!(s.remove_many(&[b"a"]), 1);
        assert_eq!(
            s.iter().collect::<Vec<_>>(),
            [&b"-2"[..], b"1", b"3", b"10"]
        );
        // "01" is not an integer to Redis.
        assert_eq!(Set::from_members(["01"].map(b)).encoding(512), "hashtable");
    }

    #[test]
    fn large_adds_and_removes_agree_with_a_model() {
        let mut s = Set::default();
        let mut model = std::collections::BTreeSet::new();
        for round in 0..20u32 {
            let batch: Vec<Bytes> = (0..400u32)
                .map(|i| b(&format!("m{}", (i * 7 + round * 13) % 900)))
                .collect();
            let fresh = batch.iter().filter(|m| !model.contains(*m)).count();
            let fresh_distinct: HashSet<_> = batch.iter().filter(|m| !model.contains(*m)).collect();
            assert!(fresh >= fresh_distinct.len());
            assert_eq!(s.add_many(batch.clone()), fresh_distinct.len());
            model.extend(batch);
            let gone: Vec<Vec<u8>> = (0..300u32)
                .map(|i| format!("m{}", (i * 11 + round) % 900).into_bytes())
                .collect();
            let gone_refs: Vec<&[u8]> = gone.iter().map(|g| &g[..]).collect();
            let present: HashSet<&[u8]> = gone_refs
                .iter()
                .copied()
                .filter(|g| model.contains(*g))
                .collect();
            assert_eq!(s.remove_many(&gone_refs), present.len());
            for g in &gone {
                model.remove(&g[..]);
            }
            assert_eq!(s.len(), model.len());
        }
        let back = Set::decode(&s.encode()).unwrap();
        let got: std::collections::BTreeSet<Bytes> = back.iter_bytes().collect();
        assert_eq!(got, model);
        let probe: Vec<&[u8]> = vec![b"m1", b"nope"];
        assert_eq!(
            back.contains_each(&probe),
            [model.contains(&b"m1"[..]), false]
        );
    }

    #[test]
    fn a_patch_applied_to_the_bytes_before_gives_the_bytes_after() {
        let mut rng = crate::test_rng::Lcg(11);
        let mut bytes = Set::default().encode();
        // Integers only at first (a sorted intset), then any member.
        let member = |rng: &mut crate::test_rng::Lcg, round: u64| {
            let n = rng.next(80);
            if round < 100 || n % 3 > 0 {
                b(&n.to_string())
            } else {
                b(&format!("m{n}"))
            }
        };
        for round in 0..300 {
            let mut s = Set::decode(&bytes).unwrap();
            for _ in 0..1 + rng.next(4) {
                match rng.next(5) {
                    0 => {
                        let n = 1 + rng.next(40);
                        s.add_many((0..n).map(|_| member(&mut rng, round)).collect::<Vec<_>>());
                    }
                    1 => {
                        let gone: Vec<Bytes> = (0..1 + rng.next(10))
                            .map(|_| member(&mut rng, round))
                            .collect();
                        let gone: Vec<&[u8]> = gone.iter().map(|m| &m[..]).collect();
                        s.remove_many(&gone);
                    }
                    2 if !s.is_empty() => {
                        s.take(rng.next(s.len() as u64) as usize);
                    }
                    3 => {
                        let cut = rng.next(80).to_string();
                        s.retain(|m| m < cut.as_bytes());
                    }
                    _ => {
                        s.add_many([member(&mut rng, round)]);
                    }
                }
            }
            let after = s.encode();
            // Stored runs and new items encode to what was meant.
            assert_eq!(Set::decode(&after).unwrap(), s, "round {round}");
            if let Some(patch) = s.take_patch() {
                assert_eq!(
                    Set::apply_patch(&bytes, &patch).unwrap(),
                    after,
                    "round {round}"
                );
            } else {
                assert_eq!(after, bytes, "no patch, no change (round {round})");
            }
            bytes = after;
        }
        assert!(Set::from_members([b("x")]).take_patch().is_none());
        assert!(Set::apply_patch(&bytes, &Bytes::from_static(b"\x09\x00")).is_err());
    }

    #[test]
    fn find_reads_what_decode_reads_without_decoding() {
        for members in [vec!["3", "1", "2"], vec!["a", "10", "b"]] {
            let raw = Set::from_members(members.iter().map(|m| b(m))).encode();
            for m in &members {
                assert!(Set::find(&raw, m.as_bytes()).unwrap(), "{m}");
            }
            assert!(!Set::find(&raw, b"4").unwrap());
            assert!(Set::find(&raw.slice(..raw.len() - 1), b"4").is_err());
        }
        assert!(!Set::find(&Set::default().encode(), b"x").unwrap());
    }

    #[test]
    fn add_stored_writes_what_decode_add_encode_writes() {
        let mut rng = crate::test_rng::Lcg(19);
        let mut raw = Set::default().encode();
        // Integers only (kept in order) for a while, then strings too,
        // then integers again after the strings are removed.
        for round in 0..900u64 {
            let n = rng.next(400);
            let member = if (300..600).contains(&round) && n % 3 == 0 {
                format!("m{n}")
            } else {
                (n as i64 - 200).to_string()
            };
            let mut s = Set::decode(&raw).unwrap();
            if round == 600 {
                s.retain(|m| !m.starts_with(b"m"));
                raw = s.encode();
                continue;
            }
            let added = s.add_many([b(&member)]) == 1;
            let want = s.encode();
            match Set::add_stored(&raw, member.as_bytes()).unwrap() {
                Some((value, patch)) => {
                    assert!(added, "round {round}: {member} was there");
                    assert_eq!(value, want, "round {round}: {member}");
                    assert_eq!(Set::apply_patch(&raw, &patch).unwrap(), want);
                }
                None => assert!(!added, "round {round}: {member} was not there"),
            }
            raw = want;
        }
        let s = Set::decode(&raw).unwrap();
        assert!(s.len() > 200 && s.encoding(i64::MAX) == "intset");
        assert!(Set::add_stored(&raw.slice(..raw.len() - 1), b"x").is_err());
    }
}
