//! Dense registers: 16384 6-bit registers packed from the least
//! significant bit of the first byte (`HLL_DENSE_GET_REGISTER` and
//! `HLL_DENSE_SET_REGISTER`).
//!
//! Redis's macros touch the byte after a register's first byte, which
//! for the last register is the string's terminating zero; here that byte
//! reads as zero and is never written (it would receive zero bits).

use super::{BITS, REGISTERS, REGISTER_MAX};

/// Register `index` of `regs` (the bytes after the header).
#[inline]
pub fn get(regs: &[u8], index: usize) -> u8 {
    let byte = index * BITS / 8;
    let fb = (index * BITS) & 7;
    let b0 = regs.get(byte).copied().unwrap_or(0) as u32;
    let b1 = regs.get(byte + 1).copied().unwrap_or(0) as u32;
    (((b0 >> fb) | (b1 << (8 - fb))) & REGISTER_MAX as u32) as u8
}

/// Sets register `index` of `regs` to `value` (at most 63).
#[inline]
pub fn put(regs: &mut [u8], index: usize, value: u8) {
    let byte = index * BITS / 8;
    let fb = (index * BITS) & 7;
    let v = value as u32;
    let max = REGISTER_MAX as u32;
    if let Some(b) = regs.get_mut(byte) {
        *b &= !((max << fb) as u8);
        *b |= (v << fb) as u8;
    }
    if let Some(b) = regs.get_mut(byte + 1) {
        *b &= !((max >> (8 - fb)) as u8);
        *b |= (v >> (8 - fb)) as u8;
    }
}

/// `hllDenseSet`: raises register `index` to `count`; true when it
/// changed.
#[inline]
pub fn set(regs: &mut [u8], index: usize, count: u8) -> bool {
    if count > get(regs, index) {
        put(regs, index, count);
        true
    } else {
        false
    }
}

/// `hllDenseRegHisto`: adds how many registers hold each value to
/// `histogram`. Four registers per three bytes.
pub fn histogram(regs: &[u8], histogram: &mut [i64; 64]) {
    let whole = &regs[..(REGISTERS * BITS / 8).min(regs.len())];
    for c in whole.chunks_exact(3) {
        let (b0, b1, b2) = (c[0], c[1], c[2]);
        histogram[(b0 & 63) as usize] += 1;
        histogram[((b0 >> 6 | b1 << 2) & 63) as usize] += 1;
        histogram[((b1 >> 4 | b2 << 4) & 63) as usize] += 1;
        histogram[(b2 >> 2) as usize] += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hll::DENSE_SIZE;
    use crate::test_rng::Lcg;

    const LEN: usize = DENSE_SIZE - crate::hll::HDR_SIZE;

    #[test]
    fn registers_keep_their_values_and_leave_neighbours_alone() {
        // PFSELFTEST's first test: random values written and read back.
        let mut rng = Lcg(42);
        let mut regs = vec![0u8; LEN];
        for _ in 0..20 {
            let want: Vec<u8> = (0..REGISTERS).map(|_| rng.next(64) as u8).collect();
            for (i, &v) in want.iter().enumerate() {
                put(&mut regs, i, v);
            }
            for (i, &v) in want.iter().enumerate() {
                assert_eq!(get(&regs, i), v, "register {i}");
            }
            let mut h = [0i64; 64];
            histogram(&regs, &mut h);
            let mut naive = [0i64; 64];
            for &v in &want {
                naive[v as usize] += 1;
            }
            assert_eq!(h, naive);
        }
    }

    #[test]
    fn layout_is_redis_s() {
        // Register 0 is the low 6 bits of byte 0; register 1 starts at
        // bit 6 of byte 0 and ends in byte 1.
        let mut regs = vec![0u8; LEN];
        put(&mut regs, 0, 0x3f);
        assert_eq!(regs[..2], [0x3f, 0]);
        put(&mut regs, 1, 0x3f);
        assert_eq!(regs[..2], [0xff, 0x0f]);
        put(&mut regs, REGISTERS - 1, 0x21);
        assert_eq!(regs[LEN - 1], 0x21 << 2);
        assert!(set(&mut regs, 5, 3));
        assert!(!set(&mut regs, 5, 2));
        assert_eq!(get(&regs, 5), 3);
    }
}
