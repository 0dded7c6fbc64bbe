//! `BITPOS key bit [start [end [BYTE|BIT]]]`: the position of the first
//! bit set to 1 or 0 in a string, or in a range of it (in bytes, or in
//! bits since Redis 7.0).
//!
//! Redis's answers when nothing matches are kept: a missing key is all
//! zeros (0 for a clear bit, -1 for a set one); a string searched for a
//! clear bit without an explicit end is taken as zero padded on the right,
//! so all ones answer the first bit past the string, while with an
//! explicit `end` they answer -1. The argument checks follow Redis 7.0's
//! `bitposCommand`: the bit first, then the key, then `start`, the unit
//! (before `end`) and `end`.
//!
//! The search skips a word (eight bytes) at a time while the word is all
//! zeros (looking for a 1) or all ones (looking for a 0), then finds the
//! bit in the first other word with `leading_zeros`; the range's partial
//! edge bytes are masked so that their bits outside the range never match.

use super::bitcount::clamp_range;
use super::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::resp::reply;

const BAD_BIT: &str = "ERR The bit argument must be 1 or 0.";

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let bit = match parse_i64(args.get(2)) {
        Some(b @ (0 | 1)) => b == 1,
        Some(_) => {
            ctx.error(BAD_BIT);
            return Flow::Continue;
        }
        None => {
            ctx.error(NOT_AN_INTEGER);
            return Flow::Continue;
        }
    };
    let entry = match super::get_string(ctx.session, args.get(1)).await {
        Ok(Some(e)) => e,
        Ok(None) => {
            reply::integer(ctx.out, if bit { -1 } else { 0 });
            return Flow::Continue;
        }
        Err(e) => {
            ctx.engine_error(&e);
            return Flow::Continue;
        }
    };
    match position(args, &entry.value, bit) {
        Ok(n) => reply::integer(ctx.out, n),
        Err(msg) => ctx.error(msg),
    }
    Flow::Continue
}

/// The position `BITPOS` answers for `value`, or the error reply.
fn position(args: &Args<'_>, value: &[u8], bit: bool) -> Result<i64, &'static str> {
    let len = value.len() as i64;
    let (start, end, in_bits, end_given) = match args.len() {
        3 => (0, len - 1, false, false),
        4..=6 => {
            let start = parse_i64(args.get(3)).ok_or(NOT_AN_INTEGER)?;
            let in_bits = match args.len() {
                6 if args.is(5, "bit") => true,
                6 if args.is(5, "byte") => false,
                6 => return Err(SYNTAX_ERROR),
                _ => false,
            };
            if args.len() >= 5 {
                let end = parse_i64(args.get(4)).ok_or(NOT_AN_INTEGER)?;
                (start, end, in_bits, true)
            } else {
                (start, i64::MAX, in_bits, false)
            }
        }
        _ => return Err(SYNTAX_ERROR),
    };
    let total = if in_bits { len * 8 } else { len };
    // An empty range holds neither a 0 nor a 1.
    let Some((start, end)) = clamp_range(start, end, total) else {
        return Ok(-1);
    };
    let (first, last) = if in_bits {
        (start as u64, end as u64)
    } else {
        (start as u64 * 8, end as u64 * 8 + 7)
    };
    Ok(match find_bit(value, first, last, bit) {
        Some(pos) => pos as i64,
        // Past the range: the zero padding, unless the range was explicit.
        None if !bit && !end_given => last as i64 + 1,
        None => -1,
    })
}

/// The first bit equal to `bit` from bit `first` to bit `last`
/// (inclusive, both inside `value`), as an offset from the start of
/// `value`.
pub fn find_bit(value: &[u8], first: u64, last: u64, bit: bool) -> Option<u64> {
    let (head, tail) = ((first / 8) as usize, (last / 8) as usize);
    // The edge bytes' bits outside the range read as the opposite of `bit`.
    let outside = |byte: u8, mask: u8| if bit { byte & !mask } else { byte | mask };
    let before_first = !(0xffu8 >> (first & 7));
    let after_last = 0x7fu8 >> (last & 7);
    let at = |byte: usize, i: u32| Some(byte as u64 * 8 + i as u64);
    if head == tail {
        let b = outside(value[head], before_first | after_last);
        return first_in_byte(b, bit).and_then(|i| at(head, i));
    }
    if let Some(i) = first_in_byte(outside(value[head], before_first), bit) {
        return at(head, i);
    }
    if let Some(i) = first_bit(&value[head + 1..tail], bit) {
        return Some((head as u64 + 1) * 8 + i);
    }
    first_in_byte(outside(value[tail], after_last), bit).and_then(|i| at(tail, i))
}

/// The first bit equal to `bit` in `bytes` (bit 0 is the most significant
/// of the first byte), a word at a time.
pub fn first_bit(bytes: &[u8], bit: bool) -> Option<u64> {
    // Looking for a 0 is looking for a 1 in the complement.
    let flip = if bit { 0 } else { u64::MAX };
    // Whole 64-byte blocks without the bit are skipped first: the OR of
    // eight words vectorises (twice the bytes per second of the word
    // loop alone on a 1 MiB string; BENCHMARKS.md, session 41).
    let skipped = bytes
        .chunks_exact(64)
        .take_while(|block| {
            block.chunks_exact(8).fold(0, |any, w| {
                any | (u64::from_ne_bytes(w.try_into().expect("an 8-byte chunk")) ^ flip)
            }) == 0
        })
        .count()
        * 64;
    let mut words = bytes[skipped..].chunks_exact(8);
    let mut pos = skipped as u64 * 8;
    for word in &mut words {
        let w = u64::from_be_bytes(word.try_into().expect("an 8-byte chunk")) ^ flip;
        if w != 0 {
            return Some(pos + w.leading_zeros() as u64);
        }
        pos += 64;
    }
    for &b in words.remainder() {
        if let Some(i) = first_in_byte(b, bit) {
            return Some(pos + i as u64);
        }
        pos += 8;
    }
    None
}

/// The first bit equal to `bit` in one byte (0 is the most significant).
#[inline]
fn first_in_byte(b: u8, bit: bool) -> Option<u32> {
    let b = if bit { b } else { !b };
    (b != 0).then(|| b.leading_zeros())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn naive(value: &[u8], first: u64, last: u64, bit: bool) -> Option<u64> {
        (first..=last).find(|&i| (value[(i / 8) as usize] & (0x80 >> (i % 8)) != 0) == bit)
    }

    #[test]
    fn finds_bits_at_word_edges() {
        let mut v = vec![0u8; 24];
        assert_eq!(first_bit(&v, true), None);
        assert_eq!(first_bit(&v, false), Some(0));
        v[17] = 0x01;
        assert_eq!(first_bit(&v, true), Some(17 * 8 + 7));
        let ones = vec![0xffu8; 19];
        assert_eq!(first_bit(&ones, false), None);
        assert_eq!(find_bit(&ones, 3, 150, false), None);
        assert_eq!(find_bit(b"\x00\x80", 0, 15, true), Some(8));
        assert_eq!(find_bit(b"\xf0", 1, 3, false), None);
        assert_eq!(find_bit(b"\xf0", 1, 4, false), Some(4));
    }

    #[test]
    fn skips_whole_blocks_up_to_the_bit() {
        let mut v = vec![0xffu8; 1000];
        assert_eq!(first_bit(&v, false), None);
        for at in [0, 7, 63 * 8 + 7, 64 * 8, 130 * 8 + 3, 999 * 8 + 7] {
            v.iter_mut().for_each(|b| *b = 0xff);
            v[at / 8] &= !(0x80 >> (at % 8));
            assert_eq!(first_bit(&v, false), Some(at as u64), "zero at {at}");
            let flipped: Vec<u8> = v.iter().map(|b| !b).collect();
            assert_eq!(first_bit(&flipped, true), Some(at as u64), "one at {at}");
        }
    }

    proptest! {
        #[test]
        fn find_bit_matches_per_bit(
            value in proptest::collection::vec(any::<u8>(), 1..300),
            a in 0u64..2400,
            b in 0u64..2400,
            bit in any::<bool>(),
            dense in any::<bool>(),
        ) {
            // Mostly-uniform strings too, so that whole words get skipped.
            let value: Vec<u8> = if dense {
                value.iter().map(|&x| if x < 250 { if bit { 0 } else { 0xff } } else { x }).collect()
            } else {
                value
            };
            let bits = value.len() as u64 * 8;
            let (first, last) = ((a % bits).min(b % bits), (a % bits).max(b % bits));
            prop_assert_eq!(find_bit(&value, first, last, bit), naive(&value, first, last, bit));
            prop_assert_eq!(first_bit(&value, bit), naive(&value, 0, bits - 1, bit));
        }
    }
}
