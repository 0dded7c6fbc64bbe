//! The journal records' checksum: CRC-32C (Castagnoli).
//!
//! Why CRC-32C and why partly by hand: every write-back write encodes one
//! record, and a memcached-sized one is about 35 bytes. For that size
//! `crc32fast`'s CRC-32 took 456 instructions (its SIMD path starts at 128
//! bytes; below, it goes a byte at a time) and the `crc32c` crate's
//! CRC-32C 229 (its three-way interleaving and table setup are for long
//! inputs); the SSE 4.2 `crc32` instruction, 8 bytes at a time, takes 118
//! with the feature check (callgrind, `mc-load` SETs against the durable
//! default; see BENCHMARKS.md, "Sessions 19–20"). Short inputs take that
//! loop; long ones, and CPUs without SSE 4.2, take the `crc32c` crate.

/// Inputs this long or longer go to the `crc32c` crate, whose interleaved
/// loop is faster once the setup is paid for.
const SHORT: usize = 256;

/// The CRC-32C of `data`.
pub(super) fn crc32c(data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if data.len() < SHORT && std::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU has SSE 4.2, checked just above.
        return unsafe { crc32c_sse42(data) };
    }
    crc32c::crc32c(data)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
unsafe fn crc32c_sse42(data: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u64, _mm_crc32_u8};
    let mut crc = u64::from(u32::MAX);
    let mut words = data.chunks_exact(8);
    for word in &mut words {
        let word = u64::from_le_bytes(word.try_into().expect("chunks of 8"));
        crc = _mm_crc32_u64(crc, word);
    }
    let mut crc = crc as u32;
    for &byte in words.remainder() {
        crc = _mm_crc32_u8(crc, byte);
    }
    !crc
}

/// Whether `stored` is `payload`'s CRC-32C, or its CRC-32 (IEEE, zlib's)
/// as builds before 2026-11-23 wrote.
pub(super) fn matches(payload: &[u8], stored: u32) -> bool {
    crc32c(payload) == stored || crc32fast::hash(payload) == stored
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_answers() {
        // RFC 3720 (iSCSI), appendix B.4, and the crc32c crate's example.
        assert_eq!(crc32c(&[0; 32]), 0x8A91_36AA);
        assert_eq!(crc32c(&[0xFF; 32]), 0x62A8_AB43);
        assert_eq!(crc32c(b"Hello world!"), 0x7B98_E751);
        assert_eq!(crc32c(b""), 0);
    }

    proptest::proptest! {
        /// The short path agrees with the crate at every length and offset.
        #[test]
        fn agrees_with_the_crate(data in proptest::collection::vec(proptest::num::u8::ANY, 0..600), skip in 0usize..8) {
            let data = &data[skip.min(data.len())..];
            proptest::prop_assert_eq!(crc32c(data), crc32c::crc32c(data));
        }
    }
}
