//! The geo commands: `GEOADD` ([`add`]), `GEOPOS GEOHASH GEODIST`
//! ([`query`]), and the searches `GEOSEARCH GEOSEARCHSTORE GEORADIUS
//! GEORADIUSBYMEMBER GEORADIUS_RO GEORADIUSBYMEMBER_RO` ([`search`]).
//!
//! As in Redis, a geo set is a sorted set (`ValueKind::ZSet`): each member's
//! score is its position as a 52-bit geohash ([`crate::geohash`]), so
//! `ZRANGE`, `ZSCORE` and `ZREM` see the members and the geo commands read
//! any sorted set (a score decodes whatever it is). `GEOADD` is `ZADD` with
//! scores computed from coordinates, as Redis runs it. Replies are Redis
//! 7.0's: distances with four decimals (`%.4f`, as bulk strings in RESP3
//! too), coordinates as `%.17Lf` without trailing zeros (doubles in
//! RESP3), the errors in Redis's words and order.

pub mod add;
pub mod query;
pub mod search;
mod sort;

use super::zset::parse_score;
use super::Args;
use crate::geohash::{format_human, LAT_MAX, LAT_MIN, LONG_MAX, LONG_MIN};
use crate::resp::{reply, Proto};
use bytes::{BufMut, BytesMut};

/// Redis's reply for a unit it does not know.
pub const BAD_UNIT: &str = "ERR unsupported unit provided. please use M, KM, FT, MI";
/// Redis's reply for a coordinate that does not parse.
const NOT_A_FLOAT: &str = "ERR value is not a valid float";

/// A number as Redis's `getDoubleFromObject` reads it: [`parse_score`],
/// and C's hexadecimal floats (`0x10`, `-0x1.8p3`), which `strtod` takes.
pub fn parse_double(arg: &[u8]) -> Option<f64> {
    parse_score(arg).or_else(|| parse_hex_float(arg))
}

/// `strtod`'s hexadecimal form: `[+-]0x` digits, an optional `.` and
/// fraction digits, an optional binary exponent `p[+-]n`. Out of range
/// (overflow to infinity, or a non-zero underflowing to zero) is `None`,
/// as Redis refuses it.
fn parse_hex_float(arg: &[u8]) -> Option<f64> {
    let (negative, rest) = match arg.first()? {
        b'-' => (true, &arg[1..]),
        b'+' => (false, &arg[1..]),
        _ => (false, arg),
    };
    let rest = rest
        .strip_prefix(b"0x")
        .or_else(|| rest.strip_prefix(b"0X"))?;
    let (mut mantissa, mut exp, mut digits, mut nonzero) = (0u128, 0i64, 0usize, false);
    let mut i = 0;
    let mut seen_dot = false;
    while i < rest.len() {
        let b = rest[i];
        if b == b'.' && !seen_dot {
            seen_dot = true;
        } else if let Some(d) = (b as char).to_digit(16) {
            digits += 1;
            nonzero |= d != 0;
            if mantissa < 1 << 120 {
                mantissa = mantissa * 16 + d as u128;
                if seen_dot {
                    exp -= 4;
                }
            } else if !seen_dot {
                exp += 4;
            }
        } else {
            break;
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    if i < rest.len() {
        let p = &rest[i..];
        if !matches!(p[0], b'p' | b'P') || p.len() < 2 {
            return None;
        }
        let e: i64 = std::str::from_utf8(&p[1..]).ok()?.parse().ok()?;
        if !p[1..]
            .iter()
            .all(|b| b.is_ascii_digit() || *b == b'-' || *b == b'+')
        {
            return None;
        }
        exp = exp.saturating_add(e.clamp(-100_000, 100_000));
    }
    let mut v = mantissa as f64;
    // Scaled in steps, each exact while the result is normal.
    let mut e = exp;
    while e != 0 && v != 0.0 && v.is_finite() {
        let step = e.clamp(-1000, 1000);
        v *= 2f64.powi(step as i32);
        e -= step;
    }
    if v.is_infinite() || (v == 0.0 && nonzero) {
        return None;
    }
    Some(if negative { -v } else { v })
}

/// `extractLongLatOrReply`: the longitude and latitude at `at` and
/// `at + 1`, within Redis's limits.
pub fn parse_lonlat(args: &Args<'_>, at: usize) -> Result<[f64; 2], String> {
    let lon = parse_double(args.get(at)).ok_or(NOT_A_FLOAT)?;
    let lat = parse_double(args.get(at + 1)).ok_or(NOT_A_FLOAT)?;
    #[allow(clippy::manual_range_contains)]
    if lon < LONG_MIN || lon > LONG_MAX || lat < LAT_MIN || lat > LAT_MAX {
        return Err(format!(
            "ERR invalid longitude,latitude pair {lon:.6},{lat:.6}"
        ));
    }
    Ok([lon, lat])
}

/// True when `arg` is `word`, ignoring ASCII case, as C's `strcasecmp`
/// compares them: up to a NUL byte (`"km\0x"` is `km`).
pub fn is_word(arg: &[u8], word: &str) -> bool {
    let end = arg.iter().position(|&b| b == 0).unwrap_or(arg.len());
    arg[..end].eq_ignore_ascii_case(word.as_bytes())
}

/// `extractUnitOrReply`: meters per unit.
pub fn parse_unit(arg: &[u8]) -> Result<f64, &'static str> {
    let end = arg.iter().position(|&b| b == 0).unwrap_or(arg.len());
    match arg[..end].to_ascii_lowercase().as_slice() {
        b"m" => Ok(1.0),
        b"km" => Ok(1000.0),
        b"ft" => Ok(0.3048),
        b"mi" => Ok(1609.34),
        _ => Err(BAD_UNIT),
    }
}

/// `extractDistanceOrReply`: `radius unit` at `at`, as `(radius,
/// meters per unit)`.
pub fn parse_radius(args: &Args<'_>, at: usize) -> Result<(f64, f64), &'static str> {
    let radius = parse_double(args.get(at)).ok_or("ERR need numeric radius")?;
    if radius < 0.0 {
        return Err("ERR radius cannot be negative");
    }
    Ok((radius, parse_unit(args.get(at + 1))?))
}

/// `extractBoxOrReply`: `width height unit` at `at`, as `(width, height,
/// meters per unit)`.
pub fn parse_box(args: &Args<'_>, at: usize) -> Result<(f64, f64, f64), &'static str> {
    let width = parse_double(args.get(at)).ok_or("ERR need numeric width")?;
    let height = parse_double(args.get(at + 1)).ok_or("ERR need numeric height")?;
    if height < 0.0 || width < 0.0 {
        return Err("ERR height or width cannot be negative");
    }
    Ok((width, height, parse_unit(args.get(at + 2))?))
}

/// `addReplyHumanLongDouble`: a bulk string in RESP2, a double in RESP3,
/// formatted by [`format_human`].
fn human_double(out: &mut BytesMut, x: f64, proto: Proto) {
    let text = format_human(x);
    match proto {
        Proto::Resp2 => reply::bulk(out, text.as_bytes()),
        Proto::Resp3 => {
            out.put_u8(b',');
            out.put_slice(text.as_bytes());
            out.put_slice(b"\r\n");
        }
    }
}

/// A position: `[longitude, latitude]`.
fn reply_coords(out: &mut BytesMut, xy: [f64; 2], proto: Proto) {
    reply::array(out, 2);
    human_double(out, xy[0], proto);
    human_double(out, xy[1], proto);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hexadecimal_floats_read_as_strtod_reads_them() {
        for (text, want) in [
            ("0x10", Some(16.0)),
            ("-0x1.8p3", Some(-12.0)),
            ("0X.8", Some(0.5)),
            ("+0x1P-2", Some(0.25)),
            ("0x0", Some(0.0)),
            ("0x1p-1074", Some(f64::from_bits(1))),
            ("0x1p99999", None),
            ("0x1p-99999", None),
            ("0x", None),
            ("0xg", None),
            ("0x1p", None),
            ("0x1q", None),
            ("0x1 ", None),
            ("1.5", Some(1.5)),
            ("abc", None),
        ] {
            assert_eq!(parse_double(text.as_bytes()), want, "{text:?}");
        }
    }
}
