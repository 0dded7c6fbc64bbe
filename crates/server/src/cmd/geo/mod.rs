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

/// `extractLongLatOrReply`: the longitude and latitude at `at` and
/// `at + 1`, within Redis's limits.
pub fn parse_lonlat(args: &Args<'_>, at: usize) -> Result<[f64; 2], String> {
    let lon = parse_score(args.get(at)).ok_or(NOT_A_FLOAT)?;
    let lat = parse_score(args.get(at + 1)).ok_or(NOT_A_FLOAT)?;
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
    let radius = parse_score(args.get(at)).ok_or("ERR need numeric radius")?;
    if radius < 0.0 {
        return Err("ERR radius cannot be negative");
    }
    Ok((radius, parse_unit(args.get(at + 1))?))
}

/// `extractBoxOrReply`: `width height unit` at `at`, as `(width, height,
/// meters per unit)`.
pub fn parse_box(args: &Args<'_>, at: usize) -> Result<(f64, f64, f64), &'static str> {
    let width = parse_score(args.get(at)).ok_or("ERR need numeric width")?;
    let height = parse_score(args.get(at + 1)).ok_or("ERR need numeric height")?;
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
