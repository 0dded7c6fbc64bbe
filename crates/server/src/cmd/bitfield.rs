//! `BITFIELD key [GET type offset] [SET type offset value] [INCRBY type
//! offset increment] [OVERFLOW WRAP|SAT|FAIL] ...` and `BITFIELD_RO key
//! [GET type offset ...]`: signed (`i1`..`i64`) and unsigned (`u1`..`u63`)
//! integers at any bit offset of a string (`#n` is the n-th field of the
//! type's width), read, written and incremented in one command.
//!
//! As in Redis 7.0's `bitfieldGeneric`, every operation is parsed before
//! any runs, so a bad argument anywhere answers its error and nothing
//! changes; `BITFIELD_RO` refuses `SET`/`INCRBY` only after that parse.
//! Only `GET`s (or nothing) read the key; otherwise the string is first
//! created or zero padded up to the farthest bit any write reaches — even
//! when every write then fails under `OVERFLOW FAIL`, as in Redis. The
//! overflow checks port Redis's `check{Signed,Unsigned}BitfieldOverflow`
//! with its wrapping arithmetic, so the results at the `i64`/`u63` edges
//! are the same.
//!
//! A field is at most 64 bits at any bit offset, so it spans at most
//! nine bytes: it is read and written through one big-endian `u128`
//! window instead of bit by bit.

use super::bits::BAD_OFFSET;
use super::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::notify::class;
use crate::resp::reply;
use crate::state::hint_fingerprint;
use tiercache_engine::Update;

const BAD_TYPE: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";

/// What an overflowing `SET` or `INCRBY` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Overflow {
    /// Wrap around (two's complement for signed fields): the default.
    Wrap,
    /// Clamp to the type's minimum or maximum.
    Sat,
    /// Write nothing and answer null.
    Fail,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OpKind {
    Get,
    Set,
    IncrBy,
}

/// One parsed operation.
#[derive(Clone, Copy, Debug)]
struct Op {
    kind: OpKind,
    signed: bool,
    bits: u32,
    offset: u64,
    /// `SET`'s value or `INCRBY`'s increment.
    arg: i64,
    overflow: Overflow,
}

/// `BITFIELD` (`read_only`: `BITFIELD_RO`).
pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, read_only: bool) -> Flow {
    let ops = match parse(args, ctx.server.config.limits.max_bulk_len) {
        Ok(ops) => ops,
        Err(msg) => {
            ctx.error(msg);
            return Flow::Continue;
        }
    };
    let writes = ops.iter().filter(|op| op.kind != OpKind::Get);
    let Some(farthest) = writes.map(|op| op.offset + op.bits as u64 - 1).max() else {
        // Only GETs: the key is read, a missing one reads as zeros.
        match super::get_string(ctx.session, args.get(1)).await {
            Ok(e) => {
                let value = e.map(|e| e.value).unwrap_or_default();
                reply::array(ctx.out, ops.len());
                for op in &ops {
                    reply::integer(ctx.out, get(&value, op));
                }
            }
            Err(e) => ctx.engine_error(&e),
        }
        return Flow::Continue;
    };
    if read_only {
        ctx.error("ERR BITFIELD_RO only supports the GET subcommand");
        return Flow::Continue;
    }
    let needed = (farthest / 8 + 1) as usize;
    let r = super::update_string(ctx.session, args.get(1), |old| {
        let mut v = old.map_or_else(Vec::new, |e| e.value.to_vec());
        let grown = v.len() < needed;
        if grown {
            v.resize(needed, 0);
        }
        let mut changed = false;
        // Writes that ran (not refused by `OVERFLOW FAIL`): Redis's
        // `changes`, which decides the `setbit` event.
        let mut writes = 0;
        let answers: Vec<Option<i64>> = ops
            .iter()
            .map(|op| {
                if op.kind == OpKind::Get {
                    return Some(get(&v, op));
                }
                let (answer, written) = write(&mut v, op)?;
                changed |= written;
                writes += 1;
                Some(answer)
            })
            .collect();
        // A string BITFIELD writes to is `raw` in Redis, even unchanged.
        let fp = hint_fingerprint(&v);
        if !grown && !changed && old.is_some() {
            return (Update::Keep, (answers, fp, writes));
        }
        let update = super::rewrite_string(old, v);
        (update, (answers, fp, writes))
    })
    .await;
    match r {
        Ok((answers, fp, writes)) => {
            if writes > 0 {
                ctx.notify(class::STRING, "setbit", args.get(1));
            }
            if let Some(fp) = fp {
                ctx.server.encodings.note(args.get(1), fp, "raw");
            }
            reply::array(ctx.out, answers.len());
            for answer in answers {
                match answer {
                    Some(n) => reply::integer(ctx.out, n),
                    None => ctx.null(),
                }
            }
        }
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

/// Every operation, in order, or the first error in Redis's words.
fn parse(args: &Args<'_>, max_bulk_len: usize) -> Result<Vec<Op>, &'static str> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut i = 2;
    while i < args.len() {
        let left = args.len() - i - 1;
        let kind = if args.is(i, "get") && left >= 2 {
            OpKind::Get
        } else if args.is(i, "set") && left >= 3 {
            OpKind::Set
        } else if args.is(i, "incrby") && left >= 3 {
            OpKind::IncrBy
        } else if args.is(i, "overflow") && left >= 1 {
            overflow = if args.is(i + 1, "wrap") {
                Overflow::Wrap
            } else if args.is(i + 1, "sat") {
                Overflow::Sat
            } else if args.is(i + 1, "fail") {
                Overflow::Fail
            } else {
                return Err("ERR Invalid OVERFLOW type specified");
            };
            i += 2;
            continue;
        } else {
            return Err(SYNTAX_ERROR);
        };
        let (signed, bits) = field_type(args.get(i + 1)).ok_or(BAD_TYPE)?;
        let offset = field_offset(args.get(i + 2), bits, max_bulk_len).ok_or(BAD_OFFSET)?;
        let arg = if kind == OpKind::Get {
            0
        } else {
            parse_i64(args.get(i + 3)).ok_or(NOT_AN_INTEGER)?
        };
        ops.push(Op {
            kind,
            signed,
            bits,
            offset,
            arg,
            overflow,
        });
        i += if kind == OpKind::Get { 3 } else { 4 };
    }
    Ok(ops)
}

/// `i1`..`i64` or `u1`..`u63` (case sensitive, as in Redis): whether
/// signed, and the width.
fn field_type(arg: &[u8]) -> Option<(bool, u32)> {
    let signed = match arg.first()? {
        b'i' => true,
        b'u' => false,
        _ => return None,
    };
    // Redis reads the width as a C string: it ends at a NUL byte.
    let digits = &arg[1..];
    let digits = &digits[..digits.iter().position(|&b| b == 0).unwrap_or(digits.len())];
    let bits = parse_i64(digits)?;
    let max = if signed { 64 } else { 63 };
    (1..=max).contains(&bits).then_some((signed, bits as u32))
}

/// Redis's `getBitOffsetFromArgument` with `#` allowed: a bit offset, or
/// `#n` for `n` times the width (wrapping on overflow as Redis's C
/// multiplication does, which then reads as out of range or not); the
/// byte must fit in the bulk length limit.
fn field_offset(arg: &[u8], bits: u32, max_bulk_len: usize) -> Option<u64> {
    let (fields, digits) = match arg.first() {
        Some(b'#') => (true, &arg[1..]),
        _ => (false, arg),
    };
    let mut n = parse_i64(digits)?;
    if fields {
        n = n.wrapping_mul(bits as i64);
    }
    (n >= 0 && ((n as u64) >> 3) < max_bulk_len as u64).then_some(n as u64)
}

/// `GET`: the field's value (bits past the end of `value` are zeros).
fn get(value: &[u8], op: &Op) -> i64 {
    let raw = read_field(value, op.offset, op.bits);
    if op.signed {
        sign_extend(raw, op.bits)
    } else {
        raw as i64
    }
}

/// `SET` or `INCRBY` on `value` (long enough for the field): the answer
/// (`SET`: the old value; `INCRBY`: the new one) and whether the bits
/// changed, or `None` when it overflowed under `OVERFLOW FAIL`.
fn write(value: &mut [u8], op: &Op) -> Option<(i64, bool)> {
    let raw = read_field(value, op.offset, op.bits);
    let (old, new, answer) = if op.signed {
        let old = sign_extend(raw, op.bits);
        if op.kind == OpKind::IncrBy {
            let new = add_signed(old, op.arg, op.bits, op.overflow)?;
            (old as u64, new as u64, new)
        } else {
            let new = add_signed(op.arg, 0, op.bits, op.overflow)?;
            (old as u64, new as u64, old)
        }
    } else if op.kind == OpKind::IncrBy {
        let new = add_unsigned(raw, op.arg, op.bits, op.overflow)?;
        (raw, new, new as i64)
    } else {
        let new = add_unsigned(op.arg as u64, 0, op.bits, op.overflow)?;
        (raw, new, raw as i64)
    };
    write_field(value, op.offset, op.bits, new);
    Some((answer, old != new))
}

/// Redis's `checkSignedBitfieldOverflow` and its use: `value + incr` in
/// a signed field of `bits`, wrapped or saturated on overflow (`None`:
/// failed).
fn add_signed(value: i64, incr: i64, bits: u32, overflow: Overflow) -> Option<i64> {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    // These may wrap; Redis only relies on them once `value` is in range.
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let above = value > max
        || (bits != 64 && incr > max_incr)
        || (value >= 0 && incr > 0 && incr > max_incr);
    let below = value < min
        || (bits != 64 && incr < min_incr)
        || (value < 0 && incr < 0 && incr < min_incr);
    if !above && !below {
        return Some(value.wrapping_add(incr));
    }
    match overflow {
        Overflow::Fail => None,
        Overflow::Sat => Some(if above { max } else { min }),
        Overflow::Wrap => Some(sign_extend((value as u64).wrapping_add(incr as u64), bits)),
    }
}

/// Redis's `checkUnsignedBitfieldOverflow` and its use: `value + incr`
/// in an unsigned field of `bits` (at most 63), wrapped or saturated on
/// overflow (`None`: failed).
fn add_unsigned(value: u64, incr: i64, bits: u32, overflow: Overflow) -> Option<u64> {
    let max = (1u64 << bits) - 1;
    let max_incr = max.wrapping_sub(value) as i64;
    let min_incr = value.wrapping_neg() as i64;
    let above = value > max || (incr > 0 && incr > max_incr);
    let below = !above && incr < 0 && incr < min_incr;
    if !above && !below {
        return Some(value.wrapping_add(incr as u64));
    }
    match overflow {
        Overflow::Fail => None,
        Overflow::Sat => Some(if above { max } else { 0 }),
        Overflow::Wrap => Some(value.wrapping_add(incr as u64) & max),
    }
}

/// The low `bits` of `raw` as a signed number of that width.
fn sign_extend(raw: u64, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((raw << shift) as i64) >> shift
}

/// The nine bytes from `byte` (zero past the end) as the top 72 bits of
/// a `u128`'s low 72: byte `byte` is bits 64..72.
#[inline]
fn window(value: &[u8], byte: usize) -> u128 {
    let mut buf = [0u8; 16];
    let end = value.len().min(byte.saturating_add(9));
    if byte < end {
        buf[7..7 + end - byte].copy_from_slice(&value[byte..end]);
    }
    u128::from_be_bytes(buf)
}

/// The `bits`-wide field at bit `offset` of `value`, as unsigned.
pub fn read_field(value: &[u8], offset: u64, bits: u32) -> u64 {
    let byte = (offset / 8) as usize;
    let shift = 72 - (offset % 8) as u32 - bits;
    let mask = u64::MAX >> (64 - bits);
    (window(value, byte) >> shift) as u64 & mask
}

/// Writes the low `bits` of `field` at bit `offset` of `value` (which
/// holds the whole field).
pub fn write_field(value: &mut [u8], offset: u64, bits: u32, field: u64) {
    let byte = (offset / 8) as usize;
    let shift = 72 - (offset % 8) as u32 - bits;
    let mask = (u128::from(u64::MAX >> (64 - bits))) << shift;
    let w = (window(value, byte) & !mask) | ((u128::from(field) << shift) & mask);
    let bytes = w.to_be_bytes();
    let end = value.len().min(byte + 9);
    value[byte..end].copy_from_slice(&bytes[7..7 + end - byte]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Redis's bit-by-bit `getUnsignedBitfield` (zero past the end).
    fn naive_read(p: &[u8], offset: u64, bits: u32) -> u64 {
        (0..bits as u64).fold(0, |v, j| {
            let i = offset + j;
            let b = p
                .get((i / 8) as usize)
                .map_or(0, |b| (b >> (7 - i % 8)) & 1);
            (v << 1) | b as u64
        })
    }

    /// Redis's bit-by-bit `setUnsignedBitfield`.
    fn naive_write(p: &mut [u8], offset: u64, bits: u32, value: u64) {
        for j in 0..bits as u64 {
            let bit = (value >> (bits as u64 - 1 - j)) & 1;
            let i = offset + j;
            let byte = &mut p[(i / 8) as usize];
            *byte = (*byte & !(1 << (7 - i % 8))) | ((bit as u8) << (7 - i % 8));
        }
    }

    #[test]
    fn fields_at_the_edges() {
        let mut v = vec![0u8; 9];
        write_field(&mut v, 7, 64, u64::MAX);
        assert_eq!(v, [1, 255, 255, 255, 255, 255, 255, 255, 254]);
        assert_eq!(read_field(&v, 7, 64), u64::MAX);
        assert_eq!(read_field(&v, 0, 8), 1);
        assert_eq!(read_field(b"\xff", 4, 8), 0xf0);
        assert_eq!(sign_extend(0b101, 3), -3);
        assert_eq!(sign_extend(u64::MAX, 64), -1);
    }

    #[test]
    fn overflow_as_redis() {
        use Overflow::*;
        assert_eq!(add_signed(i64::MAX, 1, 64, Wrap), Some(i64::MIN));
        assert_eq!(add_signed(i64::MAX, 1, 64, Sat), Some(i64::MAX));
        assert_eq!(add_signed(i64::MIN, -1, 64, Sat), Some(i64::MIN));
        assert_eq!(add_signed(i64::MIN, -1, 64, Fail), None);
        assert_eq!(add_signed(127, 1, 8, Wrap), Some(-128));
        assert_eq!(add_signed(-100, -100, 8, Sat), Some(-128));
        assert_eq!(add_signed(300, 0, 8, Wrap), Some(44));
        assert_eq!(add_unsigned(255, 1, 8, Wrap), Some(0));
        assert_eq!(add_unsigned(0, -1, 8, Sat), Some(0));
        assert_eq!(add_unsigned(-1i64 as u64, 0, 63, Wrap), Some(u64::MAX >> 1));
        assert_eq!(add_unsigned(-1i64 as u64, 0, 63, Sat), Some(u64::MAX >> 1));
        assert_eq!(add_unsigned(1, i64::MIN, 63, Fail), None);
    }

    #[test]
    fn types_and_offsets_parse_as_redis() {
        assert_eq!(field_type(b"i64"), Some((true, 64)));
        assert_eq!(field_type(b"u63"), Some((false, 63)));
        assert_eq!(field_type(b"u64"), None);
        assert_eq!(field_type(b"i65"), None);
        assert_eq!(field_type(b"I8"), None);
        assert_eq!(field_type(b"i0"), None);
        assert_eq!(field_offset(b"#3", 8, 1 << 20), Some(24));
        assert_eq!(field_offset(b"#-1", 8, 1 << 20), None);
        assert_eq!(field_offset(b"#", 8, 1 << 20), None);
        assert_eq!(field_offset(b"#4611686018427387904", 2, usize::MAX), None);
    }

    proptest! {
        #[test]
        fn fields_match_per_bit(
            value in proptest::collection::vec(any::<u8>(), 9..40),
            offset in 0u64..200,
            bits in 1u32..=64,
            field in any::<u64>(),
        ) {
            prop_assert_eq!(read_field(&value, offset, bits), naive_read(&value, offset, bits));
            if offset + bits as u64 <= value.len() as u64 * 8 {
                let (mut a, mut b) = (value.clone(), value.clone());
                write_field(&mut a, offset, bits, field);
                naive_write(&mut b, offset, bits, field);
                prop_assert_eq!(a, b);
            }
        }
    }
}
