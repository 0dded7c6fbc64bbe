//! The searches, through one parser and one search as Redis 7.0's
//! `georadiusGeneric`:
//!
//! - `GEOSEARCH key FROMMEMBER member|FROMLONLAT lon lat
//!   BYRADIUS radius unit|BYBOX width height unit [ASC|DESC]
//!   [COUNT n [ANY]] [WITHCOORD] [WITHDIST] [WITHHASH]`;
//! - `GEOSEARCHSTORE dst src ... [STOREDIST]`;
//! - `GEORADIUS key lon lat radius unit [options] [STORE key]
//!   [STOREDIST key]`, `GEORADIUSBYMEMBER key member radius unit ...`,
//!   and their `_RO` forms (no `STORE`).
//!
//! Options are checked in Redis's order, a `FROMMEMBER` looked up as it is
//! parsed (so its error comes before those of the options after it). The
//! boxes around the centre are read in Redis's order, and the results
//! sorted as Redis sorts them (`sort.rs`), so that ties and `ANY`
//! pick the same members.

use super::sort::{merge_sort, partial_sort};
use super::{is_word, parse_box, parse_lonlat, parse_radius, reply_coords};
use crate::cmd::collection::{self, collection_of, store};
use crate::cmd::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::geohash::{
    areas_by_shape, box_scores, c_double_to_i64, decode_score, format_distance, HashBits, Shape,
    ShapeKind,
};
use crate::notify::class;
use crate::resp::reply;
use crate::zset::{ScoreRange, ZSet};
use bytes::Bytes;
use tiercache_engine::Change;

/// Which search command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// `GEORADIUS`.
    Radius,
    /// `GEORADIUS_RO`.
    RadiusRo,
    /// `GEORADIUSBYMEMBER`.
    ByMember,
    /// `GEORADIUSBYMEMBER_RO`.
    ByMemberRo,
    /// `GEOSEARCH`.
    Search,
    /// `GEOSEARCHSTORE`.
    SearchStore,
}

impl Variant {
    fn is_geosearch(self) -> bool {
        matches!(self, Variant::Search | Variant::SearchStore)
    }

    /// `RADIUS_NOSTORE`.
    fn no_store(self) -> bool {
        matches!(self, Variant::RadiusRo | Variant::ByMemberRo)
    }

    /// The argument naming the sorted set searched.
    fn source(self) -> usize {
        if self == Variant::SearchStore {
            2
        } else {
            1
        }
    }
}

/// Redis's reply for a `FROMMEMBER` (or `GEORADIUSBYMEMBER`) member that
/// is not in the set.
const NO_MEMBER: &str = "ERR could not decode requested zset member";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sort {
    None,
    Asc,
    Desc,
}

/// A parsed search.
#[derive(Clone, Debug)]
struct Query {
    shape: Shape,
    with_dist: bool,
    with_hash: bool,
    with_coord: bool,
    sort: Sort,
    /// Stop at `count` found (`ANY`).
    any: bool,
    /// At most this many results; 0 for all.
    count: u64,
    /// The argument naming the destination (`STORE`, `GEOSEARCHSTORE`).
    store: Option<usize>,
    /// Store distances rather than positions as scores.
    store_dist: bool,
}

/// A member found (`geoPoint`).
#[derive(Clone, Copy, Debug)]
struct Point<'z> {
    xy: [f64; 2],
    /// In meters.
    dist: f64,
    score: f64,
    member: &'z [u8],
}

/// Runs a search command: replies the members found, or stores them and
/// replies how many.
pub async fn georadius(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, variant: Variant) -> Flow {
    let z = match collection::read::<ZSet>(ctx, args.get(variant.source())).await {
        Ok(z) => z,
        Err(msg) => return error(ctx, &msg),
    };
    let q = match parse(args, variant, z.as_ref()) {
        Ok(q) => q,
        Err(msg) => return error(ctx, &msg),
    };
    if let Some(dst) = q.store {
        return search_store(args, ctx, variant, dst).await;
    }
    let points = z.as_ref().map(|z| search(z, &q)).unwrap_or_default();
    reply_points(ctx, &q, &points);
    Flow::Continue
}

/// `STORE`, `STOREDIST` and `GEOSEARCHSTORE`: the search again under both
/// keys' locks, its results written to the destination (replacing it;
/// deleted when none).
async fn search_store(
    args: &Args<'_>,
    ctx: &mut Ctx<'_, '_>,
    variant: Variant,
    dst: usize,
) -> Flow {
    let max = ctx.server.config.limits.max_bulk_len;
    let keys = vec![args.bytes(variant.source()), args.bytes(dst)];
    let r = ctx
        .session
        .modify_many(keys, |found| {
            let mut changes = vec![Change::Keep, Change::Keep];
            let z = match collection_of::<ZSet>(found[0].as_ref()) {
                Ok(z) => z,
                Err(msg) => return (changes, Err(msg)),
            };
            let q = match parse(args, variant, z.as_ref()) {
                Ok(q) => q,
                Err(msg) => return (changes, Err(msg)),
            };
            let points = z.as_ref().map(|z| search(z, &q)).unwrap_or_default();
            let mut out = ZSet::default();
            out.update_many(
                points.iter().map(|p| {
                    let score = if q.store_dist {
                        p.dist / q.shape.conversion
                    } else {
                        p.score
                    };
                    (Bytes::copy_from_slice(p.member), score)
                }),
                |_, score| Some(score),
            );
            match store(None, &out, max) {
                Ok(Change::Keep) => changes[1] = Change::Delete,
                Ok(change) => changes[1] = change,
                Err(msg) => return (changes, Err(msg)),
            }
            (changes, Ok((points.len(), found[1].is_some())))
        })
        .await;
    match r {
        Ok(Ok((n, existed))) => {
            let event = match variant {
                Variant::SearchStore => "geosearchstore",
                _ => "georadiusstore",
            };
            let dst = args.get(dst);
            collection::notify_stored(ctx, class::ZSET, event, dst, n > 0, existed);
            reply::integer(ctx.out, n as i64)
        }
        Ok(Err(msg)) => ctx.error(&msg),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

/// The position of `member` in `z`.
fn member_position(z: &ZSet, member: &[u8]) -> Result<[f64; 2], &'static str> {
    z.score(member).map(decode_score).ok_or(NO_MEMBER)
}

/// Parses a search's arguments as `georadiusGeneric` does, `z` being the
/// sorted set searched (`None` when the key does not exist: members are
/// then not looked up, and `GEORADIUSBYMEMBER`'s radius is not read).
fn parse(args: &Args<'_>, variant: Variant, z: Option<&ZSet>) -> Result<Query, String> {
    let mut q = Query {
        shape: Shape {
            kind: ShapeKind::Circle { radius: 0.0 },
            center: [0.0, 0.0],
            conversion: 0.0,
        },
        with_dist: false,
        with_hash: false,
        with_coord: false,
        sort: Sort::None,
        any: false,
        count: 0,
        store: None,
        store_dist: false,
    };
    let base = match variant {
        Variant::Radius | Variant::RadiusRo => {
            q.shape.center = parse_lonlat(args, 2)?;
            let (radius, conversion) = parse_radius(args, 4)?;
            q.shape.kind = ShapeKind::Circle { radius };
            q.shape.conversion = conversion;
            6
        }
        Variant::ByMember | Variant::ByMemberRo => {
            if let Some(z) = z {
                q.shape.center = member_position(z, args.get(2))?;
                let (radius, conversion) = parse_radius(args, 3)?;
                q.shape.kind = ShapeKind::Circle { radius };
                q.shape.conversion = conversion;
            }
            5
        }
        Variant::Search => 2,
        Variant::SearchStore => {
            q.store = Some(1);
            3
        }
    };
    let geosearch = variant.is_geosearch();
    let may_store = !variant.no_store() && !geosearch;
    let (mut from_member, mut from_lonlat, mut by_radius, mut by_box) =
        (false, false, false, false);
    let mut i = base;
    while i < args.len() {
        let arg = args.get(i);
        // Arguments after this one.
        let left = args.len() - i - 1;
        if is_word(arg, "withdist") {
            q.with_dist = true;
        } else if is_word(arg, "withhash") {
            q.with_hash = true;
        } else if is_word(arg, "withcoord") {
            q.with_coord = true;
        } else if is_word(arg, "any") {
            q.any = true;
        } else if is_word(arg, "asc") {
            q.sort = Sort::Asc;
        } else if is_word(arg, "desc") {
            q.sort = Sort::Desc;
        } else if is_word(arg, "count") && left >= 1 {
            let n = parse_i64(args.get(i + 1)).ok_or(NOT_AN_INTEGER)?;
            if n <= 0 {
                return Err("ERR COUNT must be > 0".into());
            }
            q.count = n as u64;
            i += 1;
        } else if is_word(arg, "store") && left >= 1 && may_store {
            q.store = Some(i + 1);
            q.store_dist = false;
            i += 1;
        } else if is_word(arg, "storedist") && left >= 1 && may_store {
            q.store = Some(i + 1);
            q.store_dist = true;
            i += 1;
        } else if is_word(arg, "storedist") && variant == Variant::SearchStore {
            q.store_dist = true;
        } else if is_word(arg, "frommember") && left >= 1 && geosearch && !from_lonlat {
            if let Some(z) = z {
                q.shape.center = member_position(z, args.get(i + 1))?;
            }
            from_member = true;
            i += 1;
        } else if is_word(arg, "fromlonlat") && left >= 2 && geosearch && !from_member {
            q.shape.center = parse_lonlat(args, i + 1)?;
            from_lonlat = true;
            i += 2;
        } else if is_word(arg, "byradius") && left >= 2 && geosearch && !by_box {
            let (radius, conversion) = parse_radius(args, i + 1)?;
            q.shape.kind = ShapeKind::Circle { radius };
            q.shape.conversion = conversion;
            by_radius = true;
            i += 2;
        } else if is_word(arg, "bybox") && left >= 3 && geosearch && !by_radius {
            let (width, height, conversion) = parse_box(args, i + 1)?;
            q.shape.kind = ShapeKind::Rect { width, height };
            q.shape.conversion = conversion;
            by_box = true;
            i += 3;
        } else {
            return Err(SYNTAX_ERROR.into());
        }
        i += 1;
    }
    if q.store.is_some() && (q.with_dist || q.with_hash || q.with_coord) {
        let what = if variant == Variant::SearchStore {
            "GEOSEARCHSTORE"
        } else {
            "STORE option in GEORADIUS"
        };
        return Err(format!(
            "ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        ));
    }
    if geosearch && !(from_member || from_lonlat) {
        return Err(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {}",
            command_name(args)
        ));
    }
    if geosearch && !(by_radius || by_box) {
        return Err(format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {}",
            command_name(args)
        ));
    }
    if q.any && q.count == 0 {
        return Err("ERR the ANY argument requires COUNT argument".into());
    }
    // COUNT without an order means the nearest (not with ANY).
    if q.count != 0 && q.sort == Sort::None && !q.any {
        q.sort = Sort::Asc;
    }
    Ok(q)
}

/// The command's name as the client typed it (`%s` of `argv[0]`).
fn command_name(args: &Args<'_>) -> String {
    let name = args.get(0);
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    String::from_utf8_lossy(&name[..end]).into_owned()
}

/// The members of `z` within the query's shape, sorted and cut to its
/// count as Redis does.
fn search<'z>(z: &'z ZSet, q: &Query) -> Vec<Point<'z>> {
    let areas = areas_by_shape(&q.shape);
    let limit = if q.any { q.count } else { 0 };
    let mut found = Vec::new();
    let boxes = areas.boxes();
    // `membersOfAllNeighbors`: a box equal to the last one read is
    // skipped (at huge radii neighbours coincide); 0 stands for none.
    let mut last = 0;
    for (i, b) in boxes.iter().enumerate() {
        if b.is_zero() || (last != 0 && *b == boxes[last]) {
            continue;
        }
        if enough(&found, limit) {
            break;
        }
        box_members(z, *b, &q.shape, &mut found, limit);
        last = i;
    }
    let returned = match q.count {
        0 => found.len(),
        n => found.len().min(usize::try_from(n).unwrap_or(usize::MAX)),
    };
    let asc = |a: &Point<'_>, b: &Point<'_>| {
        if a.dist > b.dist {
            1
        } else if a.dist == b.dist {
            0
        } else {
            -1
        }
    };
    let desc = |a: &Point<'_>, b: &Point<'_>| -asc(a, b);
    match q.sort {
        Sort::None => {}
        Sort::Asc if returned == found.len() => merge_sort(&mut found, &asc),
        Sort::Desc if returned == found.len() => merge_sort(&mut found, &desc),
        Sort::Asc => partial_sort(&mut found, &asc, 0, returned - 1),
        Sort::Desc => partial_sort(&mut found, &desc, 0, returned - 1),
    }
    found.truncate(returned);
    found
}

fn enough(found: &[Point<'_>], limit: u64) -> bool {
    !found.is_empty() && limit != 0 && found.len() as u64 >= limit
}

/// `membersOfGeoHashBox`: the members whose scores are in the box and
/// whose positions are in the shape, in score order, until `limit`.
fn box_members<'z>(
    z: &'z ZSet,
    hash: HashBits,
    shape: &Shape,
    found: &mut Vec<Point<'z>>,
    limit: u64,
) {
    let (min, max) = box_scores(hash);
    let range = ScoreRange {
        min: min as f64,
        min_exclusive: false,
        max: max as f64,
        max_exclusive: true,
    };
    for rank in z.score_span(&range) {
        let (member, score) = z.at(rank).expect("a rank in the set");
        let xy = decode_score(score);
        if let Some(dist) = shape.contains(xy) {
            found.push(Point {
                xy,
                dist,
                score,
                member,
            });
        }
        if enough(found, limit) {
            break;
        }
    }
}

/// The members found, each with what was asked for (distance in the
/// query's unit, hash, position) in Redis's order.
fn reply_points(ctx: &mut Ctx<'_, '_>, q: &Query, points: &[Point<'_>]) {
    let proto = ctx.proto();
    let options = usize::from(q.with_dist) + usize::from(q.with_hash) + usize::from(q.with_coord);
    reply::array(ctx.out, points.len());
    for p in points {
        if options > 0 {
            reply::array(ctx.out, options + 1);
        }
        reply::bulk(ctx.out, p.member);
        if q.with_dist {
            let d = format_distance(p.dist / q.shape.conversion);
            reply::bulk(ctx.out, d.as_bytes());
        }
        if q.with_hash {
            reply::integer(ctx.out, c_double_to_i64(p.score));
        }
        if q.with_coord {
            reply_coords(ctx.out, p.xy, proto);
        }
    }
}

fn error(ctx: &mut Ctx<'_, '_>, msg: &str) -> Flow {
    ctx.error(msg);
    Flow::Continue
}
