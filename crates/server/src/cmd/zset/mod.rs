//! The sorted set commands: `ZADD ZINCRBY ZREM ZPOPMIN ZPOPMAX
//! ZREMRANGEBYRANK ZREMRANGEBYSCORE ZREMRANGEBYLEX` ([`write`](mod@write)),
//! `ZSCORE ZMSCORE ZCARD ZRANK ZREVRANK ZCOUNT ZLEXCOUNT ZRANDMEMBER ZSCAN`
//! ([`read`]) and the `ZRANGE` family ([`range`]).
//!
//! A sorted set is one engine entry of kind `ValueKind::ZSet` holding the
//! [`ZSet`] encoding, read and written through
//! [`collection`](super::collection). Scores are parsed as Redis parses
//! them (`strtod`, with its checks) and printed as Redis 7.0 prints them
//! (`%.17g`).
//!
//! The commands that combine sorted sets (`ZUNION`, `ZINTER`, `ZDIFF`,
//! their `STORE` forms, `ZINTERCARD`) are in [`algebra`]; `ZMPOP` in
//! [`write`](mod@write); the blocking pops in [`blocking`](super::blocking).

pub mod algebra;
pub mod range;
pub mod read;
pub mod write;

use super::Ctx;
use crate::list::rank_span;
use crate::resp::{reply, Proto};
use crate::zset::{LexBound, LexRange, ScoreRange, ZSet};
use bytes::Bytes;

/// Redis's reply for a score that does not parse.
pub const NOT_A_FLOAT: &str = "ERR value is not a valid float";
/// Redis's reply for a score range that does not parse.
pub const BAD_SCORE_RANGE: &str = "ERR min or max is not a float";
/// Redis's reply for a lexicographic range that does not parse.
pub const BAD_LEX_RANGE: &str = "ERR min or max not valid string range item";

/// A score argument, as Redis's `getDoubleFromObject`: the whole text is a
/// `strtod` number (no leading space, not empty), not NaN, and neither
/// overflows to infinity nor underflows to zero (`inf` itself is fine).
pub fn parse_score(arg: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(arg).ok()?;
    if text.is_empty() || text.starts_with(|c: char| c.is_ascii_whitespace() || c == '\x0b') {
        return None;
    }
    let v: f64 = text.parse().ok()?;
    let unsigned = text.trim_start_matches(['+', '-']);
    if v.is_nan() {
        return None;
    }
    if v.is_infinite() && !unsigned.to_ascii_lowercase().starts_with("inf") {
        return None;
    }
    let mantissa = unsigned.split(['e', 'E']).next().unwrap_or("");
    if v == 0.0 && mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
        return None;
    }
    Some(v)
}

/// One end of a score range, as Redis's `zslParseRange`: a `strtod`
/// number (leading space allowed, overflow to infinity allowed, the empty
/// string is 0), `(` in front for exclusive; `None` when it does not parse.
fn parse_score_bound(arg: &[u8]) -> Option<(f64, bool)> {
    let (exclusive, num) = match arg.strip_prefix(b"(") {
        Some(rest) => (true, rest),
        None => (false, arg),
    };
    if num.is_empty() {
        return Some((0.0, exclusive));
    }
    let text = std::str::from_utf8(num).ok()?;
    let v: f64 = text
        .trim_start_matches(|c: char| c.is_ascii_whitespace() || c == '\x0b')
        .parse()
        .ok()?;
    (!v.is_nan()).then_some((v, exclusive))
}

/// A `min max` score range, or [`BAD_SCORE_RANGE`].
pub fn parse_score_range(min: &[u8], max: &[u8]) -> Result<ScoreRange, &'static str> {
    match (parse_score_bound(min), parse_score_bound(max)) {
        (Some((min, min_exclusive)), Some((max, max_exclusive))) => Ok(ScoreRange {
            min,
            min_exclusive,
            max,
            max_exclusive,
        }),
        _ => Err(BAD_SCORE_RANGE),
    }
}

fn parse_lex_bound(arg: &[u8]) -> Option<LexBound> {
    match arg {
        b"+" => Some(LexBound::Greatest),
        b"-" => Some(LexBound::Least),
        [b'[', rest @ ..] => Some(LexBound::Inclusive(Bytes::copy_from_slice(rest))),
        [b'(', rest @ ..] => Some(LexBound::Exclusive(Bytes::copy_from_slice(rest))),
        _ => None,
    }
}

/// A `min max` lexicographic range, or [`BAD_LEX_RANGE`].
pub fn parse_lex_range(min: &[u8], max: &[u8]) -> Result<LexRange, &'static str> {
    match (parse_lex_bound(min), parse_lex_bound(max)) {
        (Some(min), Some(max)) => Ok(LexRange { min, max }),
        _ => Err(BAD_LEX_RANGE),
    }
}

/// Which members a range command selects.
#[derive(Clone, Debug)]
pub enum Selection {
    /// Ranks `start..=stop` (negative from the end), lowest score first.
    Rank(i64, i64),
    /// Scores in a range.
    Score(ScoreRange),
    /// Members in a lexicographic range.
    Lex(LexRange),
}

impl Selection {
    /// Parses `a b` as ranks, or [`crate::cmd::NOT_AN_INTEGER`].
    pub fn ranks(a: &[u8], b: &[u8]) -> Result<Selection, &'static str> {
        match (super::parse_i64(a), super::parse_i64(b)) {
            (Some(start), Some(stop)) => Ok(Selection::Rank(start, stop)),
            _ => Err(super::NOT_AN_INTEGER),
        }
    }

    /// Parses `min max` as a score range.
    pub fn scores(min: &[u8], max: &[u8]) -> Result<Selection, &'static str> {
        parse_score_range(min, max).map(Selection::Score)
    }

    /// Parses `min max` as a lexicographic range.
    pub fn lex(min: &[u8], max: &[u8]) -> Result<Selection, &'static str> {
        parse_lex_range(min, max).map(Selection::Lex)
    }

    /// The ranks selected in `z`, ascending.
    pub fn span(&self, z: &ZSet) -> std::ops::Range<usize> {
        match self {
            Selection::Rank(start, stop) => rank_span(z.len(), *start, *stop),
            Selection::Score(r) => z.score_span(r),
            Selection::Lex(r) => z.lex_span(r),
        }
    }
}

/// Replies members, with their scores when asked: pairs in RESP3, a
/// flat list in RESP2.
fn reply_members<'a>(
    ctx: &mut Ctx<'_, '_>,
    items: impl ExactSizeIterator<Item = (&'a [u8], f64)>,
    with_scores: bool,
) {
    let proto = ctx.proto();
    let nested = with_scores && proto == Proto::Resp3;
    let n = items.len();
    reply::array(ctx.out, if with_scores && !nested { n * 2 } else { n });
    for (m, s) in items {
        if nested {
            reply::array(ctx.out, 2);
        }
        reply::bulk(ctx.out, m);
        if with_scores {
            reply::double(ctx.out, s, proto);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_parse_as_redis_does() {
        for (text, want) in [
            ("1", Some(1.0)),
            ("-1.5", Some(-1.5)),
            ("+2", Some(2.0)),
            (".5", Some(0.5)),
            ("5.", Some(5.0)),
            ("1e3", Some(1000.0)),
            ("inf", Some(f64::INFINITY)),
            ("-Infinity", Some(f64::NEG_INFINITY)),
            ("0", Some(0.0)),
            ("0e10", Some(0.0)),
            ("", None),
            (" 1", None),
            ("1 ", None),
            ("nan", None),
            ("abc", None),
            ("1e400", None),
            ("1e-400", None),
        ] {
            assert_eq!(parse_score(text.as_bytes()), want, "{text:?}");
        }
        let r = parse_score_range(b"(1", b"+inf").unwrap();
        assert!(r.min_exclusive && !r.max_exclusive && r.max.is_infinite());
        assert_eq!(parse_score_range(b"", b"( 5").unwrap().max, 5.0);
        assert!(parse_score_range(b"x", b"1").is_err());
        assert!(parse_score_range(b"1", b"(nan").is_err());
        assert!(parse_lex_range(b"[a", b"+").is_ok());
        assert!(parse_lex_range(b"a", b"+").is_err());
        assert!(parse_lex_range(b"-", b"++").is_err());
    }
}
