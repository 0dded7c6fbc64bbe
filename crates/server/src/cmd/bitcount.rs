//! `BITCOUNT key [start end [BYTE|BIT]]`: the number of set bits in a
//! string, or in a range of it counted in bytes (the default) or, since
//! Redis 7.0, in bits.
//!
//! The argument checks follow Redis 7.0's `bitcountCommand` in its odd
//! order: the key is looked up first, so a missing key answers 0 (and a
//! key of another type `WRONGTYPE`) whatever the range says; a range of
//! two negative indexes in the wrong order answers 0 before the unit is
//! read. Bits are counted eight bytes at a time with `u64::count_ones`
//! (one `popcnt` per word where the CPU has it).

use super::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::resp::reply;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let entry = match super::get_string(ctx.session, args.get(1)).await {
        Ok(Some(e)) => e,
        Ok(None) => {
            reply::integer(ctx.out, 0);
            return Flow::Continue;
        }
        Err(e) => {
            ctx.engine_error(&e);
            return Flow::Continue;
        }
    };
    match count_in_range(args, &entry.value) {
        Ok(n) => reply::integer(ctx.out, n as i64),
        Err(msg) => ctx.error(msg),
    }
    Flow::Continue
}

/// The count `BITCOUNT` answers for `value` and the range arguments, or
/// the error reply.
fn count_in_range(args: &Args<'_>, value: &[u8]) -> Result<u64, &'static str> {
    match args.len() {
        2 => return Ok(popcount(value)),
        4 | 5 => {}
        _ => return Err(SYNTAX_ERROR),
    }
    let start = parse_i64(args.get(2)).ok_or(NOT_AN_INTEGER)?;
    let end = parse_i64(args.get(3)).ok_or(NOT_AN_INTEGER)?;
    if start < 0 && end < 0 && start > end {
        return Ok(0);
    }
    let in_bits = match args.len() {
        5 if args.is(4, "bit") => true,
        5 if args.is(4, "byte") => false,
        5 => return Err(SYNTAX_ERROR),
        _ => false,
    };
    let total = if in_bits {
        value.len() as i64 * 8
    } else {
        value.len() as i64
    };
    let Some((start, end)) = clamp_range(start, end, total) else {
        return Ok(0);
    };
    Ok(if in_bits {
        count_bits(value, start, end)
    } else {
        popcount(&value[start as usize..=end as usize])
    })
}

/// Redis's index arithmetic for `BITCOUNT` and `BITPOS`: negative
/// indexes count from the end of `total` units, then both are clamped
/// into it. `None` for an empty range.
pub(super) fn clamp_range(mut start: i64, mut end: i64, total: i64) -> Option<(i64, i64)> {
    if start < 0 {
        start += total;
    }
    if end < 0 {
        end += total;
    }
    start = start.max(0);
    end = end.max(0).min(total - 1);
    (start <= end).then_some((start, end))
}

/// Set bits from bit `first` to bit `last` (inclusive, both inside
/// `value`): the whole bytes' count less the edge bits outside the range.
fn count_bits(value: &[u8], first: i64, last: i64) -> u64 {
    let (first_byte, last_byte) = ((first >> 3) as usize, (last >> 3) as usize);
    let outside_first = value[first_byte] & !(0xffu8 >> (first & 7));
    let outside_last = value[last_byte] & (0x7fu8 >> (last & 7));
    popcount(&value[first_byte..=last_byte])
        - outside_first.count_ones() as u64
        - outside_last.count_ones() as u64
}

/// The number of set bits in `bytes`, a word at a time (four words per
/// round, so the additions do not wait on each other).
pub fn popcount(bytes: &[u8]) -> u64 {
    let mut blocks = bytes.chunks_exact(32);
    let mut sums = [0u64; 4];
    for block in &mut blocks {
        for (sum, word) in sums.iter_mut().zip(block.chunks_exact(8)) {
            *sum += word_of(word).count_ones() as u64;
        }
    }
    let mut words = blocks.remainder().chunks_exact(8);
    let mut n: u64 = sums.iter().sum();
    for word in &mut words {
        n += word_of(word).count_ones() as u64;
    }
    n + words
        .remainder()
        .iter()
        .map(|b| b.count_ones() as u64)
        .sum::<u64>()
}

/// Eight bytes as a word (byte order does not matter for counting).
#[inline]
fn word_of(bytes: &[u8]) -> u64 {
    u64::from_ne_bytes(bytes.try_into().expect("an 8-byte chunk"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive_bit(value: &[u8], i: usize) -> bool {
        value[i / 8] & (0x80 >> (i % 8)) != 0
    }

    #[test]
    fn counts_small_cases() {
        assert_eq!(popcount(b""), 0);
        assert_eq!(popcount(b"foobar"), 26);
        assert_eq!(popcount(&[0xff; 67]), 67 * 8);
        // Bits 5..=12: three of the first byte, the first five of 0xf0.
        assert_eq!(count_bits(b"\xff\xf0\x00", 5, 12), 3 + 4);
        assert_eq!(count_bits(b"\xff", 3, 3), 1);
    }

    #[test]
    fn ranges_clamp_as_redis() {
        assert_eq!(clamp_range(0, -1, 6), Some((0, 5)));
        assert_eq!(clamp_range(-100, 100, 6), Some((0, 5)));
        assert_eq!(clamp_range(4, 2, 6), None);
        assert_eq!(clamp_range(0, -1, 0), None);
        assert_eq!(clamp_range(i64::MIN, i64::MAX, 6), Some((0, 5)));
    }

    proptest! {
        #[test]
        fn popcount_matches_per_bit(value in proptest::collection::vec(any::<u8>(), 0..200)) {
            let naive = (0..value.len() * 8).filter(|&i| naive_bit(&value, i)).count() as u64;
            prop_assert_eq!(popcount(&value), naive);
        }

        #[test]
        fn bit_ranges_match_per_bit(
            value in proptest::collection::vec(any::<u8>(), 1..80),
            a in 0usize..640,
            b in 0usize..640,
        ) {
            let bits = value.len() * 8;
            let (first, last) = (a.min(b) % bits, a.max(b) % bits);
            let (first, last) = (first.min(last), first.max(last));
            let naive = (first..=last).filter(|&i| naive_bit(&value, i)).count() as u64;
            prop_assert_eq!(count_bits(&value, first as i64, last as i64), naive);
        }
    }
}
