//! HyperLogLog values, byte for byte as Redis 7.0's `hyperloglog.c` lays
//! them out, so an HLL made here is one Redis reads (`GET`/`SET`, `DUMP`/
//! `RESTORE`, `MIGRATE`) and the other way round, and `PFCOUNT` answers
//! Redis's numbers.
//!
//! A value is a string: a 16-byte header (`HYLL`, the encoding, three
//! zero bytes, the cached cardinality as 8 little-endian bytes whose top
//! bit says the cache is stale), then the registers:
//! - dense ([`dense`]): 16384 registers of 6 bits packed little endian,
//!   12288 bytes;
//! - sparse ([`sparse`]): run-length opcodes (`ZERO`, `XZERO`, `VAL`),
//!   promoted to dense when a register passes 32 or the value would pass
//!   `hll-sparse-max-bytes`.
//!
//! [`murmur`] hashes elements as Redis does; [`estimate`] is Redis 7.0's
//! cardinality estimator (Ertl's improved estimator over the register
//! histogram).
//!
//! Every reader is bounds-checked: a string that claims to be an HLL but
//! is not a valid one is [`Corrupt`] (Redis's `INVALIDOBJ`), never a panic.

pub mod dense;
pub mod estimate;
pub mod murmur;
pub mod sparse;

/// Header size: magic, encoding, 3 unused bytes, cached cardinality.
pub const HDR_SIZE: usize = 16;
/// Bits of the hash that choose the register.
pub const P: u32 = 14;
/// Bits of the hash left for the run of zeros.
pub const Q: u32 = 64 - P;
/// Number of registers.
pub const REGISTERS: usize = 1 << P;
/// Bits per dense register.
pub const BITS: usize = 6;
/// Largest value of a dense register.
pub const REGISTER_MAX: u8 = (1 << BITS) - 1;
/// Bytes of a dense value, header included.
pub const DENSE_SIZE: usize = HDR_SIZE + (REGISTERS * BITS).div_ceil(8);
/// Default of `hll-sparse-max-bytes`.
pub const SPARSE_MAX_BYTES: i64 = 3000;

/// Redis's reply for a string that is not an HLL (a key of another kind
/// gets the usual `WRONGTYPE`).
pub const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
/// Redis's reply for an HLL whose registers cannot be read.
pub const CORRUPT: &str = "INVALIDOBJ Corrupted HLL object detected";

/// An HLL's register encoding (byte 4 of the header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// 6-bit registers, [`DENSE_SIZE`] bytes.
    Dense = 0,
    /// Run-length opcodes.
    Sparse = 1,
}

impl Encoding {
    /// The name `PFDEBUG ENCODING` answers.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Dense => "dense",
            Encoding::Sparse => "sparse",
        }
    }
}

/// A value whose registers cannot be read (a bad sparse run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Corrupt;

/// `isHLLObjectOrReply`'s checks on a string: long enough for a header,
/// `HYLL`, a known encoding, and the exact dense length when dense.
/// `None` when `value` is not an HLL ([`NOT_HLL`]).
pub fn encoding_of(value: &[u8]) -> Option<Encoding> {
    if value.len() < HDR_SIZE || &value[..4] != b"HYLL" {
        return None;
    }
    match value[4] {
        0 if value.len() == DENSE_SIZE => Some(Encoding::Dense),
        1 => Some(Encoding::Sparse),
        _ => None,
    }
}

/// `createHLLObject`: an empty sparse HLL (one `XZERO` for all the
/// registers), its cache valid at zero.
pub fn new_sparse() -> Vec<u8> {
    let mut v = vec![0u8; HDR_SIZE];
    v[..4].copy_from_slice(b"HYLL");
    v[4] = Encoding::Sparse as u8;
    let mut left = REGISTERS;
    while left > 0 {
        let run = left.min(sparse::XZERO_MAX_LEN);
        v.extend_from_slice(&sparse::xzero(run));
        left -= run;
    }
    v
}

/// The cached cardinality, when the cache is valid.
pub fn cached_card(value: &[u8]) -> Option<u64> {
    let card: [u8; 8] = value.get(8..16)?.try_into().ok()?;
    (card[7] & 0x80 == 0).then(|| u64::from_le_bytes(card))
}

/// Stores `card` as the cached cardinality (valid).
pub fn set_cached_card(value: &mut [u8], card: u64) {
    value[8..16].copy_from_slice(&card.to_le_bytes());
}

/// `HLL_INVALIDATE_CACHE`: sets the stale bit.
pub fn invalidate_cache(value: &mut [u8]) {
    value[15] |= 0x80;
}

/// `hllAdd`: adds `element` to the HLL `value` (checked by
/// [`encoding_of`]). `Ok(true)` when a register changed (the cache is
/// then stale; the caller invalidates it, as `PFADD` does).
pub fn add(value: &mut Vec<u8>, element: &[u8], sparse_max_bytes: usize) -> Result<bool, Corrupt> {
    let (index, count) = murmur::pat_len(element);
    set_register(value, index, count, sparse_max_bytes)
}

/// True when adding `element` to the dense HLL `value` would raise a
/// register (a check on the stored bytes, before copying them).
pub fn dense_add_changes(value: &[u8], element: &[u8]) -> bool {
    let (index, count) = murmur::pat_len(element);
    count > dense::get(&value[HDR_SIZE..], index)
}

/// Raises register `index` of the HLL `value` to `count` in its encoding
/// (`hllDenseSet` or `hllSparseSet`, which may make it dense);
/// `Ok(true)` when it changed.
pub fn set_register(
    value: &mut Vec<u8>,
    index: usize,
    count: u8,
    sparse_max_bytes: usize,
) -> Result<bool, Corrupt> {
    match value[4] {
        0 => Ok(dense::set(&mut value[HDR_SIZE..], index, count)),
        1 => sparse::set(value, index, count, sparse_max_bytes),
        _ => Err(Corrupt),
    }
}

/// `hllCount` of the HLL `value`: its estimated cardinality, or
/// [`Corrupt`] when its sparse runs do not cover exactly the registers.
pub fn count(value: &[u8]) -> Result<u64, Corrupt> {
    let mut histogram = [0i64; 64];
    match encoding_of(value) {
        Some(Encoding::Dense) => dense::histogram(&value[HDR_SIZE..], &mut histogram),
        Some(Encoding::Sparse) => sparse::histogram(&value[HDR_SIZE..], &mut histogram)?,
        None => return Err(Corrupt),
    }
    Ok(estimate::cardinality(&histogram))
}

/// `hllCount` of registers kept one per byte (`HLL_RAW`, the union
/// `PFCOUNT` of several keys computes).
pub fn count_raw(registers: &[u8; REGISTERS]) -> u64 {
    let mut histogram = [0i64; 64];
    for &r in registers.iter() {
        histogram[(r & 63) as usize] += 1;
    }
    estimate::cardinality(&histogram)
}

/// `hllMerge`: raises each of `max` to the HLL `value`'s register.
pub fn merge_into(max: &mut [u8; REGISTERS], value: &[u8]) -> Result<(), Corrupt> {
    match encoding_of(value) {
        Some(Encoding::Dense) => {
            // Four registers in three bytes (a dense value has exactly
            // 4096 such groups).
            let regs = &value[HDR_SIZE..];
            for (b, m) in regs.chunks_exact(3).zip(max.chunks_exact_mut(4)) {
                let r = [
                    b[0] & 63,
                    (b[0] >> 6 | b[1] << 2) & 63,
                    (b[1] >> 4 | b[2] << 4) & 63,
                    b[2] >> 2,
                ];
                for (m, r) in m.iter_mut().zip(r) {
                    *m = (*m).max(r);
                }
            }
            Ok(())
        }
        Some(Encoding::Sparse) => sparse::merge_into(max, &value[HDR_SIZE..]),
        None => Err(Corrupt),
    }
}

/// `hllSparseToDense`: rewrites a sparse `value` dense (header and cached
/// cardinality kept). `Ok(false)` when it was dense already.
pub fn to_dense(value: &mut Vec<u8>) -> Result<bool, Corrupt> {
    if value[4] == Encoding::Dense as u8 {
        return Ok(false);
    }
    *value = sparse::to_dense(value)?;
    Ok(true)
}

/// Every register of `value` as a byte (`PFDEBUG GETREG` after its
/// conversion): `value` must be dense.
pub fn registers(value: &[u8]) -> Vec<u8> {
    let regs = &value[HDR_SIZE..];
    (0..REGISTERS).map(|i| dense::get(regs, i)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_new_hll_is_redis_s_empty_sparse_value() {
        let v = new_sparse();
        // HYLL, sparse, zero card, one XZERO of 16384.
        let mut want = b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0".to_vec();
        want.extend_from_slice(&[0x40 | 0x3f, 0xff]);
        assert_eq!(v, want);
        assert_eq!(encoding_of(&v), Some(Encoding::Sparse));
        assert_eq!(count(&v), Ok(0));
        assert_eq!(cached_card(&v), Some(0));
    }

    #[test]
    fn only_hll_strings_pass_the_checks() {
        let v = new_sparse();
        assert_eq!(encoding_of(&v[..15]), None);
        let mut bad = v.clone();
        bad[0] = b'h';
        assert_eq!(encoding_of(&bad), None);
        let mut bad = v.clone();
        bad[4] = 2;
        assert_eq!(encoding_of(&bad), None);
        let mut dense = v.clone();
        to_dense(&mut dense).unwrap();
        assert_eq!(dense.len(), DENSE_SIZE);
        assert_eq!(encoding_of(&dense), Some(Encoding::Dense));
        dense.push(0);
        assert_eq!(encoding_of(&dense), None);
        // A sparse header with a dense length is still sparse.
        assert_eq!(
            encoding_of(b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0"),
            Some(Encoding::Sparse)
        );
    }

    #[test]
    fn the_cache_bit_is_the_top_bit_of_byte_15() {
        let mut v = new_sparse();
        set_cached_card(&mut v, 12345);
        assert_eq!(cached_card(&v), Some(12345));
        invalidate_cache(&mut v);
        assert_eq!(v[15], 0x80);
        assert_eq!(cached_card(&v), None);
    }

    fn filled(n: u32, seed: u32, max_bytes: usize) -> Vec<u8> {
        let mut v = new_sparse();
        for i in 0..n {
            add(&mut v, format!("{seed}-{i}").as_bytes(), max_bytes).unwrap();
        }
        v
    }

    #[test]
    fn estimates_are_within_the_error_bound() {
        for n in [0u32, 1, 10, 100, 1000, 10_000, 100_000] {
            let v = filled(n, 7, 3000);
            let c = count(&v).unwrap() as f64;
            let err = (c - n as f64).abs();
            // 1.04/sqrt(16384) = 0.8%: six standard errors, plus one.
            assert!(err <= 0.05 * n as f64 + 1.0, "n={n} count={c}");
        }
    }

    proptest! {
        #[test]
        fn sparse_and_dense_see_the_same_registers(
            elements in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..12), 0..300),
            max_bytes in prop_oneof![Just(3000usize), Just(40usize), 0..400usize],
        ) {
            let mut sparse = new_sparse();
            let mut dense = new_sparse();
            to_dense(&mut dense).unwrap();
            let mut regs = [0u8; REGISTERS];
            for e in &elements {
                let (i, c) = murmur::pat_len(e);
                let changed = c > regs[i];
                regs[i] = regs[i].max(c);
                prop_assert_eq!(dense_add_changes(&dense, e), changed);
                prop_assert_eq!(add(&mut sparse, e, max_bytes), Ok(changed));
                prop_assert_eq!(add(&mut dense, e, max_bytes), Ok(changed));
            }
            let mut from_sparse = [0u8; REGISTERS];
            merge_into(&mut from_sparse, &sparse).unwrap();
            let mut from_dense = [0u8; REGISTERS];
            merge_into(&mut from_dense, &dense).unwrap();
            prop_assert_eq!(&from_sparse[..], &regs[..]);
            prop_assert_eq!(&from_dense[..], &regs[..]);
            prop_assert_eq!(count(&sparse), count(&dense));
            prop_assert_eq!(count(&sparse).unwrap(), count_raw(&regs));
            if sparse[4] == 1 {
                prop_assert!(sparse.len() <= max_bytes.max(HDR_SIZE + 2));
            }
            // Converting keeps the registers.
            let mut converted = sparse.clone();
            to_dense(&mut converted).unwrap();
            prop_assert_eq!(registers(&converted), regs.to_vec());
        }

        #[test]
        fn merge_is_the_register_max(
            a in proptest::collection::vec(any::<u32>(), 0..200),
            b in proptest::collection::vec(any::<u32>(), 0..200),
        ) {
            let add_all = |xs: &[u32]| {
                let mut v = new_sparse();
                for x in xs {
                    add(&mut v, &x.to_le_bytes(), 3000).unwrap();
                }
                v
            };
            let (va, vb) = (add_all(&a), add_all(&b));
            let mut both: Vec<u32> = a.clone();
            both.extend(&b);
            let vab = add_all(&both);
            let mut ra = [0u8; REGISTERS];
            merge_into(&mut ra, &va).unwrap();
            let mut rb = [0u8; REGISTERS];
            merge_into(&mut rb, &vb).unwrap();
            let mut merged = ra;
            merge_into(&mut merged, &vb).unwrap();
            let mut rab = [0u8; REGISTERS];
            merge_into(&mut rab, &vab).unwrap();
            for i in 0..REGISTERS {
                prop_assert_eq!(merged[i], ra[i].max(rb[i]));
            }
            prop_assert_eq!(&merged[..], &rab[..]);
        }
    }
}
