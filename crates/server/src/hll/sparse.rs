//! The sparse encoding: the registers as runs, one to two bytes each.
//! - `ZERO` `00xxxxxx`: 1 to 64 registers at zero;
//! - `XZERO` `01xxxxxx yyyyyyyy`: 1 to 16384 registers at zero;
//! - `VAL` `1vvvvvxx`: 1 to 4 registers at 1 to 32.
//!
//! [`set`] is a port of Redis's `hllSparseSet`, in-place splits, merges
//! of adjacent `VAL`s and promotion included, so the bytes it writes are
//! Redis's. Redis reads one byte past a trailing `XZERO`'s first byte
//! (the string's terminating zero); so do these functions, as zero, and
//! [`set`] works in a copy padded with that zero and Redis's 3 spare
//! bytes. Every other read and write is bounds-checked: a bad value is
//! [`Corrupt`], never a panic.

use super::{dense, Corrupt, DENSE_SIZE, HDR_SIZE, REGISTERS};

/// Longest run of a `ZERO`.
pub const ZERO_MAX_LEN: usize = 64;
/// Longest run of an `XZERO`.
pub const XZERO_MAX_LEN: usize = 16384;
/// Largest value of a `VAL`.
pub const VAL_MAX_VALUE: u8 = 32;
/// Longest run of a `VAL`.
pub const VAL_MAX_LEN: usize = 4;

#[inline]
fn is_zero(op: u8) -> bool {
    op & 0xc0 == 0
}

#[inline]
fn is_xzero(op: u8) -> bool {
    op & 0xc0 == 0x40
}

#[inline]
fn is_val(op: u8) -> bool {
    op & 0x80 != 0
}

#[inline]
fn zero_len(op: u8) -> usize {
    (op & 0x3f) as usize + 1
}

#[inline]
fn xzero_len(op: u8, next: u8) -> usize {
    ((((op & 0x3f) as usize) << 8) | next as usize) + 1
}

#[inline]
fn val_value(op: u8) -> u8 {
    ((op >> 2) & 0x1f) + 1
}

#[inline]
fn val_len(op: u8) -> usize {
    (op & 0x3) as usize + 1
}

/// A `VAL` opcode (`value` 1..=32, `len` 1..=4).
#[inline]
fn val(value: u8, len: usize) -> u8 {
    (((value as usize - 1) << 2 | (len - 1)) | 0x80) as u8
}

/// A `ZERO` opcode (`len` 1..=64).
#[inline]
fn zero(len: usize) -> u8 {
    (len - 1) as u8
}

/// An `XZERO` opcode (`len` 1..=16384).
pub fn xzero(len: usize) -> [u8; 2] {
    let l = len - 1;
    [((l >> 8) as u8) | 0x40, (l & 0xff) as u8]
}

/// One opcode read at `p` of `ops`: registers it covers, its value, its
/// size in bytes. The second byte of an `XZERO` past the end reads as
/// the zero that ends Redis's strings.
#[inline]
fn opcode(ops: &[u8], p: usize) -> (usize, u8, usize) {
    let op = ops[p];
    if is_zero(op) {
        (zero_len(op), 0, 1)
    } else if is_xzero(op) {
        let next = ops.get(p + 1).copied().unwrap_or(0);
        (xzero_len(op, next), 0, 2)
    } else {
        (val_len(op), val_value(op), 1)
    }
}

/// Calls `f(first register, run length, value)` for each opcode of
/// `ops` (the bytes after the header), in order, until it returns false.
fn runs(ops: &[u8], mut f: impl FnMut(usize, usize, u8) -> bool) {
    let mut p = 0;
    let mut idx = 0usize;
    while p < ops.len() {
        let (run, value, size) = opcode(ops, p);
        if !f(idx, run, value) {
            return;
        }
        idx = idx.saturating_add(run);
        p += size;
    }
}

/// `hllSparseRegHisto`: adds the registers of `ops` to `histogram`;
/// [`Corrupt`] when the runs do not cover exactly [`REGISTERS`].
pub fn histogram(ops: &[u8], histogram: &mut [i64; 64]) -> Result<(), Corrupt> {
    let mut total = 0usize;
    runs(ops, |_, run, value| {
        histogram[value as usize] += run as i64;
        total = total.saturating_add(run);
        true
    });
    if total == REGISTERS {
        Ok(())
    } else {
        Err(Corrupt)
    }
}

/// The sparse half of `hllMerge`: raises `max` to the registers of `ops`.
/// [`Corrupt`] (with `max` partly raised, as in Redis) when a run passes
/// the last register or the runs end before it.
///
/// As the installed Redis 7.0.15 (Debian's fix for CVE-2025-32023, also
/// in later Redis releases): every opcode is checked against the
/// register count, not only `VAL`s, so a `VAL` after a full value is
/// corrupt too.
pub fn merge_into(max: &mut [u8; REGISTERS], ops: &[u8]) -> Result<(), Corrupt> {
    covering_runs(ops, |first, run, value| {
        for m in &mut max[first..first + run] {
            *m = (*m).max(value);
        }
    })
}

/// Calls `f(first, run, value)` for each `VAL` run of `ops`, after
/// checking that it ends within the registers; [`Corrupt`] at the first
/// run that passes them or when the runs do not cover them all.
fn covering_runs(ops: &[u8], mut f: impl FnMut(usize, usize, u8)) -> Result<(), Corrupt> {
    let mut end = 0usize;
    let mut valid = true;
    runs(ops, |first, run, value| {
        if first + run > REGISTERS {
            valid = false;
            return false;
        }
        if value > 0 {
            f(first, run, value);
        }
        end = first + run;
        true
    });
    if valid && end == REGISTERS {
        Ok(())
    } else {
        Err(Corrupt)
    }
}

/// `hllSparseToDense`: the dense value of the sparse `value`, whose
/// header it keeps (cached cardinality included) but for the encoding.
pub fn to_dense(value: &[u8]) -> Result<Vec<u8>, Corrupt> {
    let mut dense = vec![0u8; DENSE_SIZE];
    dense[..HDR_SIZE].copy_from_slice(&value[..HDR_SIZE]);
    dense[4] = super::Encoding::Dense as u8;
    let regs = &mut dense[HDR_SIZE..];
    covering_runs(&value[HDR_SIZE..], |first, run, value| {
        for i in first..first + run {
            dense::put(regs, i, value);
        }
    })?;
    Ok(dense)
}

/// `PFDEBUG DECODE`: the opcodes as `z:len`, `Z:len`, `v:value,len`,
/// separated by spaces.
pub fn decode(ops: &[u8]) -> String {
    let mut out = Vec::new();
    let mut p = 0;
    while p < ops.len() {
        let (run, value, size) = opcode(ops, p);
        out.push(if value > 0 {
            format!("v:{value},{run}")
        } else if size == 1 {
            format!("z:{run}")
        } else {
            format!("Z:{run}")
        });
        p += size;
    }
    out.join(" ")
}

/// What the in-place part of [`set`] ended with.
enum Outcome {
    /// The register was already at least `count` (0) or is set (1).
    Done(bool),
    /// The runs do not cover the register.
    Invalid,
    /// The value must become dense first.
    Promote,
}

/// `hllSparseSet`: raises register `index` of the sparse `value` to
/// `count`. `Ok(true)` when it changed (the cache is then invalidated);
/// a count over 32, or a value growing past `max_bytes`, makes `value`
/// dense first.
pub fn set(
    value: &mut Vec<u8>,
    index: usize,
    count: u8,
    max_bytes: usize,
) -> Result<bool, Corrupt> {
    if count > VAL_MAX_VALUE {
        return promote(value, index, count);
    }
    let len = value.len();
    // The terminating zero and `sdsMakeRoomFor(o->ptr, 3)`'s room.
    value.resize(len + 4, 0);
    let mut new_len = len;
    let outcome = set_in_place(value, &mut new_len, index as i64, count, max_bytes);
    match outcome {
        Outcome::Done(changed) => {
            value.truncate(new_len);
            Ok(changed)
        }
        Outcome::Invalid => {
            value.truncate(len);
            Err(Corrupt)
        }
        Outcome::Promote => {
            value.truncate(len);
            promote(value, index, count)
        }
    }
}

/// Redis's `promote:` label: to dense, then the register set there.
fn promote(value: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, Corrupt> {
    *value = to_dense(value)?;
    Ok(dense::set(&mut value[HDR_SIZE..], index, count))
}

/// Steps 1 to 4 of `hllSparseSet` on `b` (the value followed by at least
/// four zero bytes; its length in `len`, updated as Redis's `sdsIncrLen`).
fn set_in_place(b: &mut [u8], len: &mut usize, index: i64, count: u8, max_bytes: usize) -> Outcome {
    let sparse = HDR_SIZE;
    let mut end = *len;
    // Step 1: find the opcode covering `index`.
    let mut p = sparse;
    let mut first: i64 = 0;
    let mut prev: Option<usize> = None;
    let mut span: i64 = 0;
    while p < end {
        let op = b[p];
        let mut oplen = 1;
        if is_zero(op) {
            span = zero_len(op) as i64;
        } else if is_val(op) {
            span = val_len(op) as i64;
        } else {
            span = xzero_len(op, b[p + 1]) as i64;
            oplen = 2;
        }
        // Redis: `index <= first+span-1`.
        if index < first + span {
            break;
        }
        prev = Some(p);
        p += oplen;
        first += span;
    }
    if span == 0 || p >= end {
        return Outcome::Invalid;
    }
    let op = b[p];
    let next = if is_xzero(op) { p + 2 } else { p + 1 };
    let next = (next < end).then_some(next);
    let (is_zero_op, is_xzero_op) = (is_zero(op), is_xzero(op));
    let runlen = if is_zero_op {
        zero_len(op)
    } else if is_xzero_op {
        xzero_len(op, b[p + 1])
    } else {
        val_len(op)
    };

    // Step 2: the trivial cases, in place.
    let mut updated = false;
    if !is_zero_op && !is_xzero_op {
        // Case A: already at least `count`.
        if val_value(op) >= count {
            return Outcome::Done(false);
        }
        // Case B: a VAL of one register.
        if runlen == 1 {
            b[p] = val(count, 1);
            updated = true;
        }
    }
    // Case C: a ZERO of one register.
    if !updated && is_zero_op && runlen == 1 {
        b[p] = val(count, 1);
        updated = true;
    }

    /// Appends the opcode for `len` zero registers to `seq`.
    fn push_zeros(seq: &mut [u8; 5], n: &mut usize, len: usize) {
        if len > ZERO_MAX_LEN {
            seq[*n..*n + 2].copy_from_slice(&xzero(len));
            *n += 2;
        } else {
            seq[*n] = zero(len);
            *n += 1;
        }
    }

    if !updated {
        // Case D: split the opcode into up to three.
        let mut seq = [0u8; 5];
        let mut n = 0;
        let last = first + span - 1;
        if is_zero_op || is_xzero_op {
            if index != first {
                push_zeros(&mut seq, &mut n, (index - first) as usize);
            }
            seq[n] = val(count, 1);
            n += 1;
            if index != last {
                push_zeros(&mut seq, &mut n, (last - index) as usize);
            }
        } else {
            let curval = val_value(op);
            if index != first {
                seq[n] = val(curval, (index - first) as usize);
                n += 1;
            }
            seq[n] = val(count, 1);
            n += 1;
            if index != last {
                seq[n] = val(curval, (last - index) as usize);
                n += 1;
            }
        }

        // Step 3: put the new sequence in place of the old opcode.
        let seqlen = n as i64;
        let oldlen = if is_xzero_op { 2 } else { 1 };
        let delta = seqlen - oldlen;
        if delta > 0 && (*len as i64 + delta) as u64 > max_bytes as u64 {
            return Outcome::Promote;
        }
        if delta != 0 {
            if let Some(next) = next {
                b.copy_within(next..end, (next as i64 + delta) as usize);
            }
        }
        *len = (*len as i64 + delta) as usize;
        b[*len] = 0;
        b[p..p + n].copy_from_slice(&seq[..n]);
        end = (end as i64 + delta) as usize;
    }

    // Step 4: merge adjacent VALs of the same value, scanning up to five
    // opcodes from the one before the change.
    let mut p = prev.unwrap_or(sparse);
    let mut scanlen = 5;
    while p < end {
        if scanlen == 0 {
            break;
        }
        scanlen -= 1;
        if is_xzero(b[p]) {
            p += 2;
            continue;
        } else if is_zero(b[p]) {
            p += 1;
            continue;
        }
        if p + 1 < end && is_val(b[p + 1]) {
            let v1 = val_value(b[p]);
            let v2 = val_value(b[p + 1]);
            if v1 == v2 {
                let merged = val_len(b[p]) + val_len(b[p + 1]);
                if merged <= VAL_MAX_LEN {
                    b[p + 1] = val(v1, merged);
                    b.copy_within(p + 1..end + 1, p);
                    *len -= 1;
                    b[*len] = 0;
                    end -= 1;
                    continue;
                }
            }
        }
        p += 1;
    }
    super::invalidate_cache(b);
    Outcome::Done(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hll::{self, new_sparse};
    use proptest::prelude::*;

    fn header() -> Vec<u8> {
        let mut v = b"HYLL\x01".to_vec();
        v.resize(HDR_SIZE, 0);
        v
    }

    #[test]
    fn splits_and_merges_as_redis_does() {
        let mut v = new_sparse();
        assert_eq!(set(&mut v, 100, 3, 3000), Ok(true));
        assert_eq!(decode(&v[HDR_SIZE..]), "Z:100 v:3,1 Z:16283");
        // The cache is invalid after a change.
        assert_eq!(v[15], 0x80);
        assert_eq!(set(&mut v, 100, 2, 3000), Ok(false));
        assert_eq!(set(&mut v, 101, 3, 3000), Ok(true));
        // Adjacent equal VALs merge.
        assert_eq!(decode(&v[HDR_SIZE..]), "Z:100 v:3,2 Z:16282");
        assert_eq!(set(&mut v, 0, 1, 3000), Ok(true));
        assert_eq!(set(&mut v, 2, 1, 3000), Ok(true));
        assert_eq!(decode(&v[HDR_SIZE..]), "v:1,1 z:1 v:1,1 Z:97 v:3,2 Z:16282");
        assert_eq!(set(&mut v, 1, 1, 3000), Ok(true));
        assert_eq!(decode(&v[HDR_SIZE..]), "v:1,3 Z:97 v:3,2 Z:16282");
        // A VAL split in the middle.
        assert_eq!(set(&mut v, 1, 5, 3000), Ok(true));
        assert_eq!(
            decode(&v[HDR_SIZE..]),
            "v:1,1 v:5,1 v:1,1 Z:97 v:3,2 Z:16282"
        );
        // Short zero runs are ZERO opcodes.
        assert_eq!(set(&mut v, 50, 2, 3000), Ok(true));
        assert_eq!(
            decode(&v[HDR_SIZE..]),
            "v:1,1 v:5,1 v:1,1 z:47 v:2,1 z:49 v:3,2 Z:16282"
        );
    }

    #[test]
    fn promotes_on_big_counts_and_on_size() {
        let mut v = new_sparse();
        assert_eq!(set(&mut v, 7, 33, 3000), Ok(true));
        assert_eq!(v.len(), DENSE_SIZE);
        assert_eq!(dense::get(&v[HDR_SIZE..], 7), 33);
        // 18 bytes now; the split (ZERO VAL XZERO for XZERO) makes 20,
        // over a 19-byte limit.
        let mut v = new_sparse();
        assert_eq!(set(&mut v, 7, 1, 19), Ok(true));
        assert_eq!(v[4], 0);
        assert_eq!(v.len(), DENSE_SIZE);
        let mut v = new_sparse();
        assert_eq!(set(&mut v, 7, 1, 20), Ok(true));
        assert_eq!(v[4], 1);
        assert_eq!(v.len(), 20);
    }

    #[test]
    fn bad_runs_are_corrupt() {
        // Too few registers.
        let mut v = header();
        v.extend_from_slice(&xzero(100));
        assert_eq!(set(&mut v.clone(), 200, 1, 3000), Err(Corrupt));
        assert_eq!(histogram(&v[HDR_SIZE..], &mut [0; 64]), Err(Corrupt));
        assert_eq!(to_dense(&v), Err(Corrupt));
        assert_eq!(
            merge_into(&mut [0; REGISTERS], &v[HDR_SIZE..]),
            Err(Corrupt)
        );
        // Too many: a VAL or a ZERO past the last register.
        for extra in [val(3, 4), zero(1)] {
            let mut v = new_sparse();
            v.push(extra);
            assert_eq!(histogram(&v[HDR_SIZE..], &mut [0; 64]), Err(Corrupt));
            assert_eq!(to_dense(&v), Err(Corrupt));
            assert_eq!(
                merge_into(&mut [0; REGISTERS], &v[HDR_SIZE..]),
                Err(Corrupt)
            );
            // Setting a register finds its run before the excess, then
            // cannot promote.
            let mut w = v.clone();
            assert_eq!(set(&mut w, 5, 1, 3000), Ok(true));
            assert_eq!(set(&mut w, 5, 40, 3000), Err(Corrupt));
        }
        // A trailing XZERO byte reads its second byte as zero.
        let mut v = header();
        v.extend_from_slice(&xzero(16384 - 256));
        v.push(0x40);
        assert_eq!(decode(&v[HDR_SIZE..]), "Z:16128 Z:1");
        assert_eq!(histogram(&v[HDR_SIZE..], &mut [0; 64]), Err(Corrupt));
        let mut v = header();
        v.extend_from_slice(&xzero(16384 - 257));
        v.push(0x41);
        let mut h = [0; 64];
        assert_eq!(histogram(&v[HDR_SIZE..], &mut h), Ok(()));
        assert_eq!(h[0], 16384);
    }

    proptest! {
        /// Random bytes after a sparse header: no reader or writer
        /// panics, and they agree on whether the value is valid.
        #[test]
        fn random_sparse_bytes_never_panic(
            ops in proptest::collection::vec(any::<u8>(), 0..200),
            index in 0usize..REGISTERS,
            count in 1u8..=51,
            max_bytes in prop_oneof![Just(3000usize), 0..300usize],
        ) {
            let mut v = header();
            v.extend_from_slice(&ops);
            let mut h = [0i64; 64];
            let valid = histogram(&ops, &mut h).is_ok();
            // Converting and merging accept what counting accepts.
            prop_assert_eq!(to_dense(&v).is_ok(), valid);
            let mut max = [0u8; REGISTERS];
            prop_assert_eq!(merge_into(&mut max, &ops).is_ok(), valid);
            let _ = decode(&ops);
            let _ = hll::count(&v);
            let mut w = v.clone();
            let r = set(&mut w, index, count, max_bytes);
            if valid {
                prop_assert!(r.is_ok());
                // The register now holds at least `count`, the others
                // kept theirs.
                let mut after = [0u8; REGISTERS];
                hll::merge_into(&mut after, &w).unwrap();
                let mut before = max;
                before[index] = before[index].max(count);
                prop_assert_eq!(&after[..], &before[..]);
            }
        }

        /// Adds to valid sparse values made of random runs.
        #[test]
        fn sets_on_random_runs_keep_the_registers(
            runs in proptest::collection::vec((0u8..3, 1usize..200, 1u8..=32), 1..40),
            writes in proptest::collection::vec((0usize..REGISTERS, 1u8..=51), 1..30),
        ) {
            let mut v = header();
            let mut regs = vec![0u8; REGISTERS];
            let mut at = 0;
            for (kind, len, value) in runs {
                let len = len.min(REGISTERS - at);
                if len == 0 {
                    break;
                }
                match kind {
                    0 => {
                        let len = len.min(ZERO_MAX_LEN);
                        v.push(zero(len));
                        at += len;
                    }
                    1 => {
                        v.extend_from_slice(&xzero(len));
                        at += len;
                    }
                    _ => {
                        let len = len.min(VAL_MAX_LEN);
                        v.push(val(value, len));
                        regs[at..at + len].fill(value);
                        at += len;
                    }
                }
            }
            if at < REGISTERS {
                v.extend_from_slice(&xzero(REGISTERS - at));
            }
            for (index, count) in writes {
                let changed = count > regs[index];
                prop_assert_eq!(hll::set_register(&mut v, index, count, 3000), Ok(changed));
                regs[index] = regs[index].max(count);
                let mut after = [0u8; REGISTERS];
                hll::merge_into(&mut after, &v).unwrap();
                prop_assert_eq!(&after[..], &regs[..]);
            }
        }
    }
}
