//! The encoding of a Redis sorted set inside one engine value.
//!
//! A sorted set is one [`Entry`](tiercache_engine::Entry) of kind
//! [`ValueKind::ZSet`](tiercache_engine::ValueKind::ZSet) whose value is
//! [`packed`](crate::packed)'s layout with two items per member: the
//! member, then its score as 8 bytes (an `f64`, little-endian). Members are
//! stored in Redis's order, by score then by member bytes, so ranks and
//! score and lexicographic ranges are binary searches over the decoded
//! vector. The engine and the stores carry the value as opaque bytes. A
//! sorted set decoded from a stored value records its writes, so that
//! write-back journals a `ZADD` to a big one as the member and its score
//! ([`ZSet::take_patch`], `oplog`). One member's score is read or
//! set without decoding: [`ZSet::find_score`], [`ZSet::insert_stored`].
//!
//! ```
//! use tiercache_server::zset::ZSet;
//! let mut z = ZSet::default();
//! z.insert("b".into(), 2.0);
//! z.insert("a".into(), 2.0);
//! z.insert("c".into(), 1.0);
//! let back = ZSet::decode(&z.encode()).unwrap();
//! let order: Vec<_> = back.iter().map(|(m, s)| (&m[..], s)).collect();
//! assert_eq!(order, [(&b"c"[..], 1.0), (b"a", 2.0), (b"b", 2.0)]);
//! assert_eq!(back.rank(b"b"), Some(2));
//! ```

use crate::oplog::{self, OpLog};
use crate::packed::{find_entry_indexed, put_item, splice, Corrupt, Reader};
use crate::slot::{encode_runs, Slot};
use bytes::Bytes;
use std::cmp::Ordering;
use std::collections::HashMap;

/// Redis's default `zset-max-listpack-entries`.
pub const LISTPACK_MAX_ENTRIES: i64 = 128;
/// Redis's default `zset-max-listpack-value`.
pub const LISTPACK_MAX_VALUE: i64 = 64;

/// The patch operations: `INSERT member score` (the score as 8 bytes),
/// `REMOVE member...`.
const INSERT: u8 = 1;
const REMOVE: u8 = 2;

/// The bytes a stored score takes: its length (8, one byte) and the
/// `f64`. A stored member is followed by these.
const SCORE_ITEM: usize = 9;

/// A sorted set's members and scores, in Redis's order.
#[derive(Clone, Debug, Default)]
pub struct ZSet {
    /// The stored bytes the members were decoded from (empty for a sorted
    /// set built from nothing): [`Slot`]s point into them.
    raw: Bytes,
    /// A member still [`Slot::Stored`] has its stored score, right after
    /// it in `raw`: a new score makes it [`Slot::New`].
    entries: Vec<(Slot, f64)>,
    /// The writes since it was decoded (`None` for a sorted set built from
    /// nothing; see [`ZSet::take_patch`]).
    ops: Option<OpLog>,
}

/// Two sorted sets are equal when their members and scores are.
impl PartialEq for ZSet {
    fn eq(&self, other: &ZSet) -> bool {
        self.iter().eq(other.iter())
    }
}

/// Reads a stored score: exactly [`SCORE_ITEM`] bytes (which `encode`
/// relies on when it copies an entry), not NaN.
fn read_score(r: &mut Reader<'_>, raw: &[u8]) -> Result<f64, Corrupt> {
    let before = r.position();
    let (at, end) = r.item_span()?;
    if at != before + 1 || end != at + 8 {
        return Err(Corrupt("bad score"));
    }
    let score = f64::from_le_bytes(raw[at..end].try_into().expect("8 bytes"));
    if score.is_nan() {
        return Err(Corrupt("bad score"));
    }
    Ok(score)
}

/// Redis's order: by score, then by member bytes.
fn order(a: (&[u8], f64), b: (&[u8], f64)) -> Ordering {
    a.1.total_cmp(&b.1).then_with(|| a.0.cmp(b.0))
}

impl ZSet {
    /// Decodes a stored sorted set (one pass, bounds-checked, members are
    /// slices of `raw`); the order is checked, not trusted.
    pub fn decode(raw: &Bytes) -> Result<ZSet, Corrupt> {
        // Each member takes two length bytes and an 8-byte score.
        let (mut r, count) = Reader::open(raw, 10)?;
        let mut entries = Vec::with_capacity(count);
        for _ in 0..count {
            let member = Slot::read(&mut r)?;
            let score = read_score(&mut r, raw)?;
            entries.push((member, score));
        }
        r.finish()?;
        let z = ZSet {
            raw: raw.clone(),
            entries,
            ops: Some(OpLog::default()),
        };
        let sorted = z
            .iter()
            .zip(z.iter().skip(1))
            .all(|(a, b)| order(a, b) == Ordering::Less);
        if !sorted {
            return Err(Corrupt("members out of order"));
        }
        Ok(z)
    }

    /// The score of `member` in the stored sorted set `raw`, found
    /// without decoding it ([`find_entry_indexed`]).
    pub fn find_score(raw: &Bytes, member: &[u8]) -> Result<Option<f64>, Corrupt> {
        match find_entry_indexed(raw, 2, member)? {
            Some(mut r) => read_score(&mut r, raw).map(Some),
            None => Ok(None),
        }
    }

    /// [`ZSet::insert`] on the stored sorted set `raw` without decoding
    /// it: `decide` gets `member`'s score (`None` when absent) and returns
    /// its new one, or `None` to leave the set alone. Returns the stored
    /// set after and the patch `ZSet::apply_patch` makes it with, or
    /// `None` for no change. `guess` is the score `decide` will return if
    /// any (a `ZADD` without `INCR`), so that one scan finds both the
    /// member and its new place and stops there; without it, or when
    /// `decide` returns another, a second scan finds the place. At most
    /// three copies; the bytes are those `ZSet::decode(raw)`, `insert`,
    /// `encode` would write.
    pub fn insert_stored(
        raw: &Bytes,
        member: &[u8],
        guess: Option<f64>,
        decide: impl FnOnce(Option<f64>) -> Option<f64>,
    ) -> Result<Option<(Bytes, Bytes)>, Corrupt> {
        // Where (member, score) goes: before the first entry ordered after
        // it. The member's old entry may be that one; then the next entry
        // is after it too, and removing the old one puts the new one in
        // the same place.
        let after = |m: &[u8], s: f64, score: f64| order((m, s), (member, score)).is_gt();
        let (mut r, count) = Reader::open(raw, 10)?;
        let header_end = r.position();
        let guess = guess.map(|g| g + 0.0);
        // The member's entry (its bytes, length prefix to score) and score.
        let mut old = None;
        let mut guessed_place = None;
        let mut read = 0;
        while read < count && (old.is_none() || (guess.is_some() && guessed_place.is_none())) {
            let start = r.position();
            let (at, end) = r.item_span()?;
            let score = read_score(&mut r, raw)?;
            let m = &raw[at..end];
            if old.is_none() && crate::packed::same(m, member) {
                old = Some((start..r.position(), score));
            }
            if guessed_place.is_none() && guess.is_some_and(|g| after(m, score, g)) {
                guessed_place = Some(start);
            }
            read += 1;
        }
        if read == count {
            r.finish()?;
        }
        let Some(score) = decide(old.as_ref().map(|(_, s)| *s)) else {
            return Ok(None);
        };
        let score = score + 0.0;
        let old = old.map(|(span, _)| span);
        let place = if guess.is_some_and(|g| g.to_bits() == score.to_bits()) {
            guessed_place.unwrap_or(raw.len())
        } else {
            let (mut r, _) = Reader::open(raw, 10)?;
            let mut place = raw.len();
            for _ in 0..count {
                let start = r.position();
                let (at, end) = r.item_span()?;
                if after(&raw[at..end], read_score(&mut r, raw)?, score) {
                    place = start;
                    break;
                }
            }
            place
        };
        let count = count + usize::from(old.is_none());
        let value = splice(
            raw,
            header_end,
            count,
            old,
            place,
            member.len() + 20,
            |out| {
                put_item(out, member);
                put_item(out, &score.to_le_bytes());
            },
        );
        let patch = oplog::one(INSERT, &[member, &score.to_le_bytes()[..]]);
        Ok(Some((value, patch)))
    }

    /// The writes made since this sorted set was decoded, as a patch that
    /// turns those bytes into [`ZSet::encode`]'s; `None` for one built
    /// from nothing or left unchanged. Taking it starts a new record.
    pub fn take_patch(&mut self) -> Option<Bytes> {
        self.ops.as_mut()?.take()
    }

    /// Applies a patch from [`ZSet::take_patch`] to the stored sorted set
    /// `base`: the stored sorted set after.
    pub(crate) fn apply_patch(base: &Bytes, patch: &Bytes) -> Result<Bytes, Corrupt> {
        let mut z = ZSet::decode(base)?;
        oplog::replay(patch, |tag, args| {
            match tag {
                INSERT => {
                    let [member, score] = oplog::exactly(args)?;
                    let score: [u8; 8] = score[..].try_into().map_err(|_| Corrupt("bad score"))?;
                    let score = f64::from_le_bytes(score);
                    if score.is_nan() {
                        return Err(Corrupt("bad score"));
                    }
                    z.insert(member, score);
                }
                REMOVE => {
                    for m in &args {
                        z.remove(m);
                    }
                }
                _ => return Err(Corrupt("unknown sorted set operation")),
            }
            Ok(())
        })?;
        Ok(z.encode())
    }

    fn record_insert(&mut self, member: &[u8], score: f64) {
        if let Some(ops) = &mut self.ops {
            ops.push(INSERT, &[member, &score.to_le_bytes()[..]]);
        }
    }

    fn record_removals<'a>(&mut self, gone: impl IntoIterator<Item = &'a [u8]>) {
        if let Some(ops) = &mut self.ops {
            let gone: Vec<&[u8]> = gone.into_iter().collect();
            if !gone.is_empty() {
                ops.push(REMOVE, &gone);
            }
        }
    }

    /// The stored form: unchanged members are copied with their scores
    /// from the stored bytes, in runs (`slot::encode_runs`).
    pub fn encode(&self) -> Bytes {
        let raw = &self.raw;
        let size: usize = self
            .entries
            .iter()
            .map(|(m, _)| m.encoded_len() + SCORE_ITEM)
            .sum();
        encode_runs(
            raw,
            self.entries.len(),
            size,
            self.entries.iter(),
            |(m, _)| m.span().map(|span| span.start..span.end + SCORE_ITEM),
            |out, (m, s)| {
                put_item(out, m.get(raw));
                put_item(out, &s.to_le_bytes());
            },
        )
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True without members (such a key does not exist in Redis).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Members and scores in order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], f64)> + ExactSizeIterator {
        self.entries.iter().map(|(m, s)| (m.get(&self.raw), *s))
    }

    /// Members (as shared buffers: slices of the stored bytes, no copy)
    /// and scores in order.
    pub fn iter_bytes(&self) -> impl ExactSizeIterator<Item = (Bytes, f64)> + '_ {
        self.entries
            .iter()
            .map(|(m, s)| (m.to_bytes(&self.raw), *s))
    }

    /// The member and score at rank `i`.
    pub fn at(&self, i: usize) -> Option<(&[u8], f64)> {
        self.entries.get(i).map(|(m, s)| (m.get(&self.raw), *s))
    }

    /// The score of `member`.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.iter().find(|(m, _)| *m == member).map(|(_, s)| s)
    }

    /// The rank (0-based, lowest score first) of `member`.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let score = self.score(member)?;
        Some(self.partition_point(|m, s| order((m, s), (member, score)) == Ordering::Less))
    }

    /// The first rank for which `below` is false (`below` true for a
    /// prefix of the ranks).
    fn partition_point(&self, mut below: impl FnMut(&[u8], f64) -> bool) -> usize {
        let raw = &self.raw;
        self.entries.partition_point(|(m, s)| below(m.get(raw), *s))
    }

    /// Sets `member`'s score (adding it if new); returns its old score.
    /// A score of `-0` is stored as `0`, as Redis's listpack stores it.
    pub fn insert(&mut self, member: Bytes, score: f64) -> Option<f64> {
        let score = score + 0.0;
        self.record_insert(&member, score);
        let old = self.remove_unrecorded(&member);
        let at = self.partition_point(|m, s| order((m, s), (&member, score)) == Ordering::Less);
        self.entries.insert(at, (Slot::New(member), score));
        old
    }

    /// Applies many score changes at once: `f` gets each member's current
    /// score (or `None`) and returns the new one (or `None` to leave it).
    /// One rebuild, not one shift per member: a large `ZADD` costs
    /// `O((n + m) log(n + m))`.
    pub fn update_many<T>(
        &mut self,
        members: impl IntoIterator<Item = (Bytes, T)>,
        mut f: impl FnMut(Option<f64>, T) -> Option<f64>,
    ) {
        let raw = &self.raw;
        // Members left alone keep their stored slot; a new score makes a
        // new one (the invariant on `entries`).
        let mut scores: HashMap<Bytes, (Slot, f64)> = self
            .entries
            .drain(..)
            .map(|(m, s)| (m.to_bytes(raw), (m, s)))
            .collect();
        for (member, arg) in members {
            let current = scores.get(&member).map(|(_, s)| *s);
            if let Some(new) = f(current, arg) {
                let new = new + 0.0;
                if let Some(ops) = &mut self.ops {
                    ops.push(INSERT, &[&member[..], &new.to_le_bytes()[..]]);
                }
                scores.insert(member.clone(), (Slot::New(member), new));
            }
        }
        self.entries = scores.into_values().collect();
        self.entries
            .sort_by(|a, b| order((a.0.get(raw), a.1), (b.0.get(raw), b.1)));
    }

    /// Removes `member`; returns its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let score = self.remove_unrecorded(member)?;
        self.record_removals([member]);
        Some(score)
    }

    fn remove_unrecorded(&mut self, member: &[u8]) -> Option<f64> {
        let i = self.iter().position(|(m, _)| m == member)?;
        Some(self.entries.remove(i).1)
    }

    /// Removes the members at ranks `range`; returns them.
    pub fn remove_ranks(&mut self, range: std::ops::Range<usize>) -> Vec<(Bytes, f64)> {
        let raw = &self.raw;
        let gone: Vec<(Bytes, f64)> = self
            .entries
            .drain(range)
            .map(|(m, s)| (m.to_bytes(raw), s))
            .collect();
        self.record_removals(gone.iter().map(|(m, _)| &m[..]));
        gone
    }

    /// Removes every member for which `gone` is true; returns how many.
    pub fn remove_where(&mut self, mut gone: impl FnMut(&[u8], f64) -> bool) -> usize {
        let before = self.entries.len();
        let recording = self.ops.is_some();
        let raw = &self.raw;
        let mut removed = Vec::new();
        self.entries.retain(|(m, s)| {
            let go = gone(m.get(raw), *s);
            if go && recording {
                removed.push(m.to_bytes(raw));
            }
            !go
        });
        self.record_removals(removed.iter().map(|m| &m[..]));
        before - self.entries.len()
    }

    /// The ranks whose scores are within `range`.
    pub fn score_span(&self, range: &ScoreRange) -> std::ops::Range<usize> {
        let lo = self.partition_point(|_, s| !range.above_min(s));
        let hi = self.partition_point(|_, s| range.below_max(s));
        lo..hi.max(lo)
    }

    /// The ranks whose members are within `range` (meaningful, as in
    /// Redis, when all scores are equal).
    pub fn lex_span(&self, range: &LexRange) -> std::ops::Range<usize> {
        let lo = self.partition_point(|m, _| !range.above_min(m));
        let hi = self.partition_point(|m, _| range.below_max(m));
        lo..hi.max(lo)
    }

    /// Redis's encoding for these contents under `zset-max-listpack-entries`
    /// and `zset-max-listpack-value`: `listpack` while small, else `skiplist`.
    pub fn encoding(&self, max_entries: i64, max_value: i64) -> &'static str {
        let small = i64::try_from(self.entries.len()).is_ok_and(|n| n <= max_entries)
            && self
                .iter()
                .all(|(m, _)| i64::try_from(m.len()).is_ok_and(|n| n <= max_value));
        if small {
            "listpack"
        } else {
            "skiplist"
        }
    }
}

/// A score interval, each end inclusive or exclusive (`ZRANGEBYSCORE`'s
/// `min`/`max`, `(` for exclusive).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScoreRange {
    /// Lower end.
    pub min: f64,
    /// True when `min` itself is outside.
    pub min_exclusive: bool,
    /// Upper end.
    pub max: f64,
    /// True when `max` itself is outside.
    pub max_exclusive: bool,
}

impl ScoreRange {
    fn above_min(&self, s: f64) -> bool {
        if self.min_exclusive {
            s > self.min
        } else {
            s >= self.min
        }
    }

    fn below_max(&self, s: f64) -> bool {
        if self.max_exclusive {
            s < self.max
        } else {
            s <= self.max
        }
    }

    /// True when `s` is inside.
    pub fn contains(&self, s: f64) -> bool {
        self.above_min(s) && self.below_max(s)
    }
}

/// One end of a lexicographic range: `-`, `+`, `[member` or `(member`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LexBound {
    /// Below every member (`-`).
    Least,
    /// Above every member (`+`).
    Greatest,
    /// This member, itself inside (`[`).
    Inclusive(Bytes),
    /// This member, itself outside (`(`).
    Exclusive(Bytes),
}

/// A lexicographic interval (`ZRANGEBYLEX`'s `min`/`max`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LexRange {
    /// Lower end.
    pub min: LexBound,
    /// Upper end.
    pub max: LexBound,
}

impl LexRange {
    fn above_min(&self, m: &[u8]) -> bool {
        match &self.min {
            LexBound::Least => true,
            LexBound::Greatest => false,
            LexBound::Inclusive(b) => m >= &b[..],
            LexBound::Exclusive(b) => m > &b[..],
        }
    }

    fn below_max(&self, m: &[u8]) -> bool {
        match &self.max {
            LexBound::Least => false,
            LexBound::Greatest => true,
            LexBound::Inclusive(b) => m <= &b[..],
            LexBound::Exclusive(b) => m < &b[..],
        }
    }

    /// True when `m` is inside.
    pub fn contains(&self, m: &[u8]) -> bool {
        self.above_min(m) && self.below_max(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn z(pairs: &[(&str, f64)]) -> ZSet {
        let mut z = ZSet::default();
        for (m, s) in pairs {
            z.insert(Bytes::copy_from_slice(m.as_bytes()), *s);
        }
        z
    }

    #[test]
    fn order_ranks_and_ranges() {
        let z = z(&[
            ("c", 3.0),
            ("a", 1.0),
            ("b", 1.0),
            ("d", f64::INFINITY),
            ("e", -0.5),
        ]);
        let members: Vec<&[u8]> = z.iter().map(|(m, _)| m).collect();
        assert_eq!(members, [&b"e"[..], b"a", b"b", b"c", b"d"]);
        assert_eq!(z.rank(b"c"), Some(3));
        assert_eq!(z.rank(b"x"), None);
        let r = ScoreRange {
            min: 1.0,
            min_exclusive: true,
            max: 3.0,
            max_exclusive: false,
        };
        assert_eq!(z.score_span(&r), 3..4);
        let all = ScoreRange {
            min: f64::NEG_INFINITY,
            min_exclusive: false,
            max: f64::INFINITY,
            max_exclusive: false,
        };
        assert_eq!(z.score_span(&all), 0..5);
        let empty = ScoreRange {
            min: 5.0,
            min_exclusive: false,
            max: 2.0,
            max_exclusive: false,
        };
        assert!(z.score_span(&empty).is_empty());
        let flat = self::z(&[("a", 0.0), ("b", 0.0), ("c", 0.0), ("d", 0.0)]);
        let lex = LexRange {
            min: LexBound::Exclusive("a".into()),
            max: LexBound::Inclusive("c".into()),
        };
        assert_eq!(flat.lex_span(&lex), 1..3);
        let lex = LexRange {
            min: LexBound::Least,
            max: LexBound::Greatest,
        };
        assert_eq!(flat.lex_span(&lex), 0..4);
        let lex = LexRange {
            min: LexBound::Greatest,
            max: LexBound::Least,
        };
        assert!(flat.lex_span(&lex).is_empty());
    }

    #[test]
    fn updates_keep_the_order_and_round_trip() {
        let mut z = z(&[("a", 1.0), ("b", 2.0)]);
        assert_eq!(z.insert("a".into(), 5.0), Some(1.0));
        let more: Vec<(Bytes, f64)> = (0..300)
            .map(|i| (Bytes::from(format!("m{i}")), (i % 7) as f64))
            .collect();
        z.update_many(more, |old, new| Some(old.unwrap_or(0.0) + new));
        assert_eq!(z.len(), 302);
        let back = ZSet::decode(&z.encode()).unwrap();
        assert_eq!(back, z);
        assert!(back
            .iter()
            .zip(back.iter().skip(1))
            .all(|(a, b)| order((a.0, a.1), (b.0, b.1)).is_lt()));
        assert_eq!(back.score(b"a"), Some(5.0));
    }

    #[test]
    fn corruption_is_an_error() {
        let good = z(&[("a", 1.0), ("b", 2.0)]).encode();
        for cut in 0..good.len() {
            assert!(ZSet::decode(&good.slice(..cut)).is_err(), "cut at {cut}");
        }
        // Swapped members: out of order.
        let swapped = ZSet {
            raw: Bytes::new(),
            entries: vec![(Slot::New("b".into()), 2.0), (Slot::New("a".into()), 1.0)],
            ops: None,
        }
        .encode();
        assert_eq!(ZSet::decode(&swapped), Err(Corrupt("members out of order")));
        let nan = ZSet {
            raw: Bytes::new(),
            entries: vec![(Slot::New("a".into()), f64::NAN)],
            ops: None,
        }
        .encode();
        assert_eq!(ZSet::decode(&nan), Err(Corrupt("bad score")));
        // A score whose length is written in two bytes (0x88 0x00 for 8)
        // reads as 8 bytes, but `encode` copies a member with exactly
        // SCORE_ITEM bytes after it: refused.
        let one = z(&[("a", 1.0)]).encode();
        let at = one.len() - SCORE_ITEM;
        assert_eq!(one[at], 8);
        let long = [&one[..at], &[0x88, 0x00], &one[at + 1..]].concat();
        assert_eq!(ZSet::decode(&Bytes::from(long)), Err(Corrupt("bad score")));
    }

    #[test]
    fn a_patch_applied_to_the_bytes_before_gives_the_bytes_after() {
        let mut rng = crate::test_rng::Lcg(13);
        let mut bytes = ZSet::default().encode();
        let member = |rng: &mut crate::test_rng::Lcg| Bytes::from(format!("m{}", rng.next(60)));
        for round in 0..300 {
            let mut z = ZSet::decode(&bytes).unwrap();
            for _ in 0..1 + rng.next(4) {
                match rng.next(6) {
                    0 => {
                        let n = 1 + rng.next(30);
                        let changes: Vec<_> =
                            (0..n).map(|_| (member(&mut rng), rng.next(9))).collect();
                        // Like ZINCRBY: the new score depends on the old.
                        z.update_many(changes, |old, by| {
                            Some(old.unwrap_or(0.0) + by as f64 - 4.0)
                        });
                    }
                    1 => {
                        z.remove(&member(&mut rng));
                    }
                    2 => {
                        let from = rng.next(z.len() as u64 + 1) as usize;
                        let to = (from + rng.next(4) as usize).min(z.len());
                        z.remove_ranks(from..to);
                    }
                    3 => {
                        let cut = rng.next(9) as f64;
                        z.remove_where(|_, s| s > cut);
                    }
                    4 => {
                        // Scores of -0 and of 0 are one score.
                        z.insert(member(&mut rng), if rng.next(2) == 0 { -0.0 } else { 0.0 });
                    }
                    _ => {
                        z.insert(member(&mut rng), rng.next(9) as f64 - 4.0);
                    }
                }
            }
            let after = z.encode();
            // Stored runs and new items encode to what was meant.
            assert_eq!(ZSet::decode(&after).unwrap(), z, "round {round}");
            if let Some(patch) = z.take_patch() {
                assert_eq!(
                    ZSet::apply_patch(&bytes, &patch).unwrap(),
                    after,
                    "round {round}"
                );
            } else {
                assert_eq!(after, bytes, "no patch, no change (round {round})");
            }
            bytes = after;
        }
        let mut nan = OpLog::default();
        nan.push(INSERT, &[&b"m"[..], &f64::NAN.to_le_bytes()[..]]);
        assert!(ZSet::apply_patch(&bytes, &nan.take().unwrap()).is_err());
        let mut short = OpLog::default();
        short.push(INSERT, &[&b"m"[..], b"1234"]);
        assert!(ZSet::apply_patch(&bytes, &short.take().unwrap()).is_err());
    }

    #[test]
    fn find_score_reads_what_decode_reads_without_decoding() {
        let z = z(&[("a", 1.5), ("b", -2.0), ("c", f64::INFINITY)]);
        let raw = z.encode();
        for m in ["a", "b", "c"] {
            assert_eq!(
                ZSet::find_score(&raw, m.as_bytes()).unwrap(),
                z.score(m.as_bytes())
            );
        }
        assert_eq!(ZSet::find_score(&raw, b"d").unwrap(), None);
        assert!(ZSet::find_score(&raw.slice(..raw.len() - 1), b"d").is_err());
        // A score of the wrong size is an error, not a misread.
        let at = raw.len() - SCORE_ITEM;
        let short = [&raw[..at], &[4u8], &raw[at + 1..at + 5]].concat();
        assert!(ZSet::find_score(&Bytes::from(short), b"c").is_err());
    }

    #[test]
    fn insert_stored_writes_what_decode_insert_encode_writes() {
        let mut rng = crate::test_rng::Lcg(23);
        let mut raw = ZSet::default().encode();
        let mut changed = 0;
        // Past 127 members the count takes two bytes; past 16 KiB the
        // buffer is placed apart.
        for round in 0..1500 {
            let member = format!("member:{:0>width$}", rng.next(700), width = 20);
            let by = rng.next(9) as f64 - 4.0;
            // Like ZADD's flags: sometimes an increment, sometimes -0,
            // sometimes no change, sometimes above every other score.
            let kind = rng.next(5);
            let top = 1000.0 + round as f64;
            let decide = |current: Option<f64>| match kind {
                0 => Some(current.unwrap_or(0.0) + by),
                1 => Some(-0.0),
                2 if current.is_some() => None,
                4 => Some(top),
                _ => Some(by),
            };
            let mut z = ZSet::decode(&raw).unwrap();
            let want = match decide(z.score(member.as_bytes())) {
                Some(score) => {
                    z.insert(Bytes::from(member.clone()), score);
                    Some(z.encode())
                }
                None => None,
            };
            // The right guess, none, or a wrong one.
            let guess = match (kind, rng.next(3)) {
                (1, 0) => Some(0.0),
                (3, 0) => Some(by),
                (4, 0) => Some(top),
                (_, 1) => None,
                _ => Some(by + 0.5),
            };
            let got = ZSet::insert_stored(&raw, member.as_bytes(), guess, decide).unwrap();
            match (got, want) {
                (Some((value, patch)), Some(want)) => {
                    assert_eq!(value, want, "round {round}: {member}");
                    assert_eq!(ZSet::apply_patch(&raw, &patch).unwrap(), want);
                    raw = want;
                    changed += 1;
                }
                (None, None) => {}
                (got, want) => panic!("round {round}: {got:?} against {want:?}"),
            }
        }
        assert!(changed > 1000 && raw.len() > 16 * 1024);
        assert!(ZSet::decode(&raw).unwrap().len() > 127);
        let cut = raw.slice(..raw.len() - 1);
        assert!(ZSet::insert_stored(&cut, b"x", Some(1.0), |_| Some(1.0)).is_err());
    }
}
