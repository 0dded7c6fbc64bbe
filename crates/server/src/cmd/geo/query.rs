//! `GEOPOS`, `GEOHASH` and `GEODIST`: members' positions, read from the
//! stored sorted set without decoding it ([`ZSet::find_score`]).

use super::{parse_unit, reply_coords};
use crate::cmd::collection;
use crate::cmd::{Args, Ctx, Flow, SYNTAX_ERROR};
use crate::geohash::{decode_score, distance, format_distance, geohash_string};
use crate::packed::Corrupt;
use crate::resp::reply;
use crate::zset::ZSet;
use bytes::Bytes;

/// `GEOPOS key member [member ...]`: `[longitude, latitude]` of each,
/// a null array for a missing one.
pub async fn geopos(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    collection::with_stored::<ZSet>(ctx, args.get(1), |ctx, raw| {
        let scores = lookup_all(raw, args)?;
        let proto = ctx.proto();
        reply::array(ctx.out, scores.len());
        for score in scores {
            match score {
                Some(score) => reply_coords(ctx.out, decode_score(score), proto),
                None => reply::null_array(ctx.out, proto),
            }
        }
        Ok(())
    })
    .await;
    Flow::Continue
}

/// `GEOHASH key member [member ...]`: the standard 11-character geohash
/// of each, null for a missing one.
pub async fn geohash(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    collection::with_stored::<ZSet>(ctx, args.get(1), |ctx, raw| {
        let scores = lookup_all(raw, args)?;
        reply::array(ctx.out, scores.len());
        for score in scores {
            match score {
                Some(score) => reply::bulk(ctx.out, &geohash_string(score)),
                None => ctx.null(),
            }
        }
        Ok(())
    })
    .await;
    Flow::Continue
}

/// `GEODIST key member1 member2 [M|KM|FT|MI]`: their distance with four
/// decimals, null when either is missing.
pub async fn geodist(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let to_meter = match args.len() {
        5 => match parse_unit(args.get(4)) {
            Ok(m) => m,
            Err(msg) => {
                ctx.error(msg);
                return Flow::Continue;
            }
        },
        n if n > 5 => {
            ctx.error(SYNTAX_ERROR);
            return Flow::Continue;
        }
        _ => 1.0,
    };
    collection::with_stored::<ZSet>(ctx, args.get(1), |ctx, raw| {
        let (a, b) = match (lookup(raw, args.get(2))?, lookup(raw, args.get(3))?) {
            (Some(a), Some(b)) => (decode_score(a), decode_score(b)),
            _ => {
                ctx.null();
                return Ok(());
            }
        };
        let d = distance(a[0], a[1], b[0], b[1]) / to_meter;
        reply::bulk(ctx.out, format_distance(d).as_bytes());
        Ok(())
    })
    .await;
    Flow::Continue
}

/// The scores of the members from argument 2 on (looked up before any
/// reply is written: a damaged value answers one error).
fn lookup_all(raw: Option<&Bytes>, args: &Args<'_>) -> Result<Vec<Option<f64>>, Corrupt> {
    (2..args.len()).map(|i| lookup(raw, args.get(i))).collect()
}

/// A member's score in the stored sorted set (none when there is no set).
fn lookup(raw: Option<&Bytes>, member: &[u8]) -> Result<Option<f64>, Corrupt> {
    match raw {
        Some(raw) => ZSet::find_score(raw, member),
        None => Ok(None),
    }
}
