//! `BITOP AND|OR|XOR|NOT destkey srckey [srckey ...]`: combines strings
//! bit by bit into `destkey` and answers the result's length (that of the
//! longest source; shorter ones read as zero padded). `NOT` takes exactly
//! one source.
//!
//! As in Redis 7.0's `bitopCommand`: missing sources are empty strings;
//! a source of another type answers `WRONGTYPE` and nothing is written;
//! an empty result deletes `destkey` (whatever its type), any other
//! replaces it (expiry dropped), whatever its type. The sources and the
//! destination are one [`Session::modify_many`](tiercache_engine::Session::modify_many),
//! so the reads and the write see one state, as Redis's single thread does.
//!
//! The bytes are combined eight at a time as `u64` words; the result is
//! never longer than the longest source, which is already within the
//! value limits.

use super::{Args, Ctx, Flow, SYNTAX_ERROR, WRONGTYPE};
use crate::notify::class;
use crate::resp::reply;
use crate::state::hint_fingerprint;
use tiercache_engine::{Change, Entry, ValueKind};

/// A `BITOP` operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    And,
    Or,
    Xor,
    Not,
}

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let op = if args.is(1, "and") {
        Op::And
    } else if args.is(1, "or") {
        Op::Or
    } else if args.is(1, "xor") {
        Op::Xor
    } else if args.is(1, "not") {
        Op::Not
    } else {
        ctx.error(SYNTAX_ERROR);
        return Flow::Continue;
    };
    if op == Op::Not && args.len() != 4 {
        ctx.error("ERR BITOP NOT must be called with a single source key.");
        return Flow::Continue;
    }
    // The sources, then the destination (it may be a source too: the
    // engine locks a key once and keeps its last change).
    let mut keys = args.bytes_from(3);
    keys.push(args.bytes(2));
    let r = ctx
        .session
        .modify_many(keys, |entries| {
            let n = entries.len();
            let mut changes = vec![Change::Keep; n];
            let mut sources = Vec::with_capacity(n - 1);
            for entry in &entries[..n - 1] {
                match entry {
                    None => sources.push(&[][..]),
                    Some(e) if e.kind != ValueKind::String => return (changes, None),
                    Some(e) => sources.push(&e.value[..]),
                }
            }
            let result = combine(op, &sources);
            let len = result.len();
            let fp = hint_fingerprint(&result).filter(|_| len > 0);
            changes[n - 1] = if len > 0 {
                Change::Put(Entry::new(result))
            } else if entries[n - 1].is_some() {
                Change::Delete
            } else {
                Change::Keep
            };
            let event = match changes[n - 1] {
                Change::Put(_) => Some((class::STRING, "set")),
                Change::Delete => Some((class::GENERIC, "del")),
                _ => None,
            };
            (changes, Some((len, fp, event)))
        })
        .await;
    match r {
        Ok(Some((len, fp, event))) => {
            if let Some((class, event)) = event {
                ctx.notify(class, event, args.get(2));
            }
            if let Some(fp) = fp {
                // A string built by BITOP is `raw` in Redis.
                ctx.server.encodings.note(args.get(2), fp, "raw");
            }
            reply::integer(ctx.out, len as i64);
        }
        Ok(None) => ctx.error(WRONGTYPE),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

/// `op` over `sources` (at least one), each zero padded to the longest.
pub fn combine(op: Op, sources: &[&[u8]]) -> Vec<u8> {
    let longest = sources.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![0u8; longest];
    let Some((first, rest)) = sources.split_first() else {
        return out;
    };
    out[..first.len()].copy_from_slice(first);
    match op {
        // One source: `out` is exactly it.
        Op::Not => {
            let mut words = out.chunks_exact_mut(8);
            for w in &mut words {
                let v = !u64::from_ne_bytes((&*w).try_into().expect("an 8-byte chunk"));
                w.copy_from_slice(&v.to_ne_bytes());
            }
            for b in words.into_remainder() {
                *b = !*b;
            }
        }
        Op::And => {
            for src in rest {
                combine_into(&mut out[..src.len()], src, |a, b| a & b);
                // Past a shorter source its padding is zero.
                out[src.len()..].fill(0);
            }
        }
        Op::Or => rest
            .iter()
            .for_each(|src| combine_into(&mut out[..src.len()], src, |a, b| a | b)),
        Op::Xor => rest
            .iter()
            .for_each(|src| combine_into(&mut out[..src.len()], src, |a, b| a ^ b)),
    }
    out
}

/// `dst = f(dst, src)`, eight bytes at a time (`f` is bitwise, so it
/// applies as well to the last bytes widened to words).
#[inline]
fn combine_into(dst: &mut [u8], src: &[u8], f: impl Fn(u64, u64) -> u64) {
    let mut d = dst.chunks_exact_mut(8);
    let mut s = src.chunks_exact(8);
    for (dw, sw) in (&mut d).zip(&mut s) {
        let a = u64::from_ne_bytes((&*dw).try_into().expect("an 8-byte chunk"));
        let b = u64::from_ne_bytes(sw.try_into().expect("an 8-byte chunk"));
        dw.copy_from_slice(&f(a, b).to_ne_bytes());
    }
    for (db, sb) in d.into_remainder().iter_mut().zip(s.remainder()) {
        *db = f(*db as u64, *sb as u64) as u8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Redis's per-byte loop.
    fn naive(op: Op, sources: &[&[u8]]) -> Vec<u8> {
        let longest = sources.iter().map(|s| s.len()).max().unwrap_or(0);
        (0..longest)
            .map(|j| {
                let byte = |s: &[u8]| s.get(j).copied().unwrap_or(0);
                let mut out = byte(sources[0]);
                if op == Op::Not {
                    out = !out;
                }
                for s in &sources[1..] {
                    match op {
                        Op::And => out &= byte(s),
                        Op::Or => out |= byte(s),
                        Op::Xor => out ^= byte(s),
                        Op::Not => {}
                    }
                }
                out
            })
            .collect()
    }

    #[test]
    fn combines_small_cases() {
        assert_eq!(combine(Op::And, &[b"\xff\x0f", b"\x3c"]), b"\x3c\x00");
        assert_eq!(combine(Op::Or, &[b"", b"\x01\x02"]), b"\x01\x02");
        assert_eq!(combine(Op::Not, &[b"\x00\xf0"]), b"\xff\x0f");
        assert!(combine(Op::Xor, &[b"", b""]).is_empty());
    }

    proptest! {
        #[test]
        fn combine_matches_per_byte(
            op in prop_oneof![Just(Op::And), Just(Op::Or), Just(Op::Xor), Just(Op::Not)],
            sources in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..70), 1..5),
        ) {
            let sources: Vec<&[u8]> = if op == Op::Not {
                vec![&sources[0]]
            } else {
                sources.iter().map(|s| &s[..]).collect()
            };
            prop_assert_eq!(combine(op, &sources), naive(op, &sources));
        }
    }
}
