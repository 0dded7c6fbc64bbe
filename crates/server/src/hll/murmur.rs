//! Redis's element hash: MurmurHash64A with Redis's seed, and `hllPatLen`,
//! which turns an element into the register it lands in and the length
//! of the run of zeros (plus one) that register may record.

use super::{P, Q, REGISTERS};

/// The seed Redis's `hllPatLen` hashes with.
pub const SEED: u32 = 0xadc8_3b19;

/// Austin Appleby's MurmurHash64A, as Redis's `hyperloglog.c` has it
/// (8-byte blocks read little endian, then the tail).
pub fn murmur64a(key: &[u8], seed: u32) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    // C: `len` is an `int`, converted to `uint64_t` for the product.
    let mut h = (seed as u64) ^ ((key.len() as i32 as i64 as u64).wrapping_mul(M));
    let mut blocks = key.chunks_exact(8);
    for block in &mut blocks {
        let mut k = u64::from_le_bytes(block.try_into().expect("an 8-byte block"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= (b as u64) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// `hllPatLen`: the register `element` addresses (the hash's low
/// [`P`] bits) and the position of the first 1 bit in the rest of the
/// hash, counting from 1 (at most `Q + 1`).
#[inline]
pub fn pat_len(element: &[u8]) -> (usize, u8) {
    let hash = murmur64a(element, SEED);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    // The sentinel bit makes the count at most Q + 1.
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference loop of `hllPatLen`, bit by bit.
    fn pat_len_loop(hash: u64) -> u8 {
        let hash = (hash >> P) | (1u64 << Q);
        let (mut bit, mut count) = (1u64, 1u8);
        while hash & bit == 0 {
            count += 1;
            bit <<= 1;
        }
        count
    }

    #[test]
    fn murmur_matches_the_c_function() {
        // Outputs of Redis's C `MurmurHash64A` (compiled from
        // hyperloglog.c), seed 0 and Redis's seed: empty, tail-only,
        // one block plus tail, two blocks plus one byte.
        let cases: [(&[u8], u64, u64); 5] = [
            (b"", 0x0000000000000000, 0xd8dfea6585bc9732),
            (b"a", 0x071717d2d36b6b11, 0x53d2470a9b43b1a7),
            (b"abc", 0x9cc9c33498a95efb, 0x77ec90aeb374e502),
            (b"hello world", 0xd3ba2368a832afce, 0xa919bc3051f624b7),
            (b"0123456789abcdef0", 0xd6d740ea6bf35f45, 0xca1802fd45a1ff6c),
        ];
        for (key, zero, redis) in cases {
            assert_eq!(murmur64a(key, 0), zero, "{key:?}");
            assert_eq!(murmur64a(key, SEED), redis, "{key:?}");
        }
    }

    #[test]
    fn pat_len_matches_the_bit_loop() {
        for i in 0u32..5000 {
            let e = i.to_string();
            let hash = murmur64a(e.as_bytes(), SEED);
            let (index, count) = pat_len(e.as_bytes());
            assert_eq!(index, (hash & 16383) as usize);
            assert_eq!(count, pat_len_loop(hash));
            assert!((1..=Q as u8 + 1).contains(&count));
        }
    }
}
