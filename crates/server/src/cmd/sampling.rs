//! What the random and scanning commands of every collection share
//! (`HRANDFIELD`/`SRANDMEMBER`/`SPOP`, `HSCAN`/`SSCAN`): random positions,
//! and the cursor and options of a collection scan.

use super::{glob_match, parse_i64, Args, NOT_AN_INTEGER, SYNTAX_ERROR};
use std::sync::atomic::{AtomicU64, Ordering};

/// A random number below `n` (n > 0): xorshift over a process-wide state;
/// sampling needs no cryptographic quality.
pub fn random_below(n: usize) -> usize {
    static STATE: AtomicU64 = AtomicU64::new(0);
    let mut x = STATE.load(Ordering::Relaxed);
    if x == 0 {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        x = seed | 1;
    }
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    STATE.store(x, Ordering::Relaxed);
    (x % n as u64) as usize
}

/// `count` distinct positions below `len` (count < len), in order.
pub fn distinct(len: usize, count: usize) -> Vec<usize> {
    // Floyd's sampling: `count` draws, no rejection loop.
    let mut chosen = std::collections::BTreeSet::new();
    for j in len - count..len {
        let t = random_below(j + 1);
        if !chosen.insert(t) {
            chosen.insert(j);
        }
    }
    chosen.into_iter().collect()
}

/// Checks a scan cursor as Redis's `strtoul` check does: an optional sign
/// (a negative cursor wraps), digits, nothing else, within 64 bits. The
/// value itself is not used: a collection is answered in one page.
pub fn valid_cursor(cursor: &[u8]) -> bool {
    let digits = cursor
        .strip_prefix(b"-")
        .or(cursor.strip_prefix(b"+"))
        .unwrap_or(cursor);
    !digits.is_empty()
        && digits.iter().all(u8::is_ascii_digit)
        && std::str::from_utf8(digits).is_ok_and(|c| c.parse::<u64>().is_ok())
}

/// The `MATCH pattern` / `COUNT count` options from argument `from` on:
/// the pattern (`None` for none, or for `*`, which matches everything), or
/// the error reply.
pub fn scan_pattern<'a>(args: &Args<'a>, from: usize) -> Result<Option<&'a [u8]>, &'static str> {
    let mut pattern: Option<&[u8]> = None;
    let mut i = from;
    while i < args.len() {
        if i + 1 >= args.len() {
            return Err(SYNTAX_ERROR);
        }
        if args.is(i, "count") {
            match parse_i64(args.get(i + 1)) {
                None => return Err(NOT_AN_INTEGER),
                Some(n) if n < 1 => return Err(SYNTAX_ERROR),
                Some(_) => {}
            }
        } else if args.is(i, "match") {
            pattern = Some(args.get(i + 1));
        } else {
            return Err(SYNTAX_ERROR);
        }
        i += 2;
    }
    Ok(pattern.filter(|p| *p != b"*"))
}

/// True when `item` matches the scan's pattern (or there is none).
pub fn matches(pattern: Option<&[u8]>, item: &[u8]) -> bool {
    pattern.map_or(true, |p| glob_match(p, item, false))
}
