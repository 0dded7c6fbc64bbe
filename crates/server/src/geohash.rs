//! Redis's geohash, ported from Redis 7.0's `geohash.c` and
//! `geohash_helper.c` operation for operation, so that scores, neighbour
//! boxes, distances and the decoded coordinates are the same doubles
//! `redis-server` computes (same formulas, same order of operations, same
//! constants; no fused multiply-adds, as in Debian's x86-64 build).
//!
//! A point is stored in a sorted set as a 52-bit score: its longitude and
//! latitude, each as a 26-bit fixed-point fraction of its range
//! (`-180..180`, `-85.05112878..85.05112878`), interleaved bit by bit
//! (latitude in the even bits). A search covers its shape with the box of
//! the point at a step (precision) estimated from the radius and the
//! box's eight neighbours ([`areas_by_shape`]); each box is one score
//! range of the sorted set ([`box_scores`]), whose members are then
//! filtered by their distance ([`Shape::contains`]).
//!
//! ```
//! use tiercache_server::geohash::{decode_score, encode_score};
//! let score = encode_score(13.361389, 38.115556).unwrap();
//! assert_eq!(score, 3479099956230698);
//! let [lon, lat] = decode_score(score as f64);
//! assert!((lon - 13.361389).abs() < 1e-5 && (lat - 38.115556).abs() < 1e-5);
//! ```

use std::f64::consts::PI;

/// Bits per coordinate of a stored score (`GEO_STEP_MAX`).
pub const STEP_MAX: u8 = 26;
/// The lowest latitude Redis stores (Web Mercator's limit).
pub const LAT_MIN: f64 = -85.05112878;
/// The highest latitude Redis stores.
pub const LAT_MAX: f64 = 85.05112878;
/// The lowest longitude.
pub const LONG_MIN: f64 = -180.0;
/// The highest longitude.
pub const LONG_MAX: f64 = 180.0;
/// Redis's earth radius (WGS-84's quadratic mean), in meters.
pub const EARTH_RADIUS_IN_METERS: f64 = 6372797.560856;
const MERCATOR_MAX: f64 = 20037726.37;
/// `D_R`: degrees to radians.
const D_R: f64 = PI / 180.0;

fn deg_rad(ang: f64) -> f64 {
    ang * D_R
}

fn rad_deg(ang: f64) -> f64 {
    ang / D_R
}

/// A geohash: `step` bits per coordinate, interleaved in `bits`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HashBits {
    /// The interleaved bits (latitude in the even positions).
    pub bits: u64,
    /// Bits per coordinate.
    pub step: u8,
}

impl HashBits {
    /// `HASHISZERO`: the "no box" value of a neighbour left out.
    pub fn is_zero(&self) -> bool {
        self.bits == 0 && self.step == 0
    }
}

/// An interval of one coordinate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    /// Lower end.
    pub min: f64,
    /// Upper end.
    pub max: f64,
}

impl Range {
    fn is_zero(&self) -> bool {
        self.max == 0.0 && self.min == 0.0
    }
}

/// The longitude range scores are encoded in.
pub const WGS84_LONG: Range = Range {
    min: LONG_MIN,
    max: LONG_MAX,
};
/// The latitude range scores are encoded in.
pub const WGS84_LAT: Range = Range {
    min: LAT_MIN,
    max: LAT_MAX,
};

/// The box a geohash stands for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Area {
    /// The geohash.
    pub hash: HashBits,
    /// Its longitudes.
    pub longitude: Range,
    /// Its latitudes.
    pub latitude: Range,
}

/// Interleaves the low 32 bits of `x` (even positions) and `y` (odd).
fn interleave64(xlo: u32, ylo: u32) -> u64 {
    const B: [u64; 5] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
    ];
    const S: [u32; 5] = [1, 2, 4, 8, 16];
    let (mut x, mut y) = (xlo as u64, ylo as u64);
    for i in (0..5).rev() {
        x = (x | (x << S[i])) & B[i];
        y = (y | (y << S[i])) & B[i];
    }
    x | (y << 1)
}

/// The reverse of [`interleave64`]: the even bits in the low half, the odd
/// bits in the high half.
fn deinterleave64(interleaved: u64) -> u64 {
    const B: [u64; 6] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
        0x00000000FFFFFFFF,
    ];
    const S: [u32; 6] = [0, 1, 2, 4, 8, 16];
    let (mut x, mut y) = (interleaved, interleaved >> 1);
    for i in 0..6 {
        x = (x | (x >> S[i])) & B[i];
        y = (y | (y >> S[i])) & B[i];
    }
    x | (y << 32)
}

/// `geohashEncode`: the geohash of a point at `step` bits per coordinate
/// within these ranges; `None` outside them (or outside Redis's limits).
#[allow(clippy::manual_range_contains)] // C's comparisons, NaN included
pub fn encode(
    long_range: Range,
    lat_range: Range,
    longitude: f64,
    latitude: f64,
    step: u8,
) -> Option<HashBits> {
    if step > 32 || step == 0 || lat_range.is_zero() || long_range.is_zero() {
        return None;
    }
    if longitude > LONG_MAX || longitude < LONG_MIN || latitude > LAT_MAX || latitude < LAT_MIN {
        return None;
    }
    if latitude < lat_range.min
        || latitude > lat_range.max
        || longitude < long_range.min
        || longitude > long_range.max
    {
        return None;
    }
    let mut lat_offset = (latitude - lat_range.min) / (lat_range.max - lat_range.min);
    let mut long_offset = (longitude - long_range.min) / (long_range.max - long_range.min);
    lat_offset *= (1u64 << step) as f64;
    long_offset *= (1u64 << step) as f64;
    Some(HashBits {
        bits: interleave64(lat_offset as u32, long_offset as u32),
        step,
    })
}

/// `geohashDecode`: the box of `hash` within these ranges.
pub fn decode(long_range: Range, lat_range: Range, hash: HashBits) -> Option<Area> {
    if hash.is_zero() || lat_range.is_zero() || long_range.is_zero() {
        return None;
    }
    let sep = deinterleave64(hash.bits);
    let lat_scale = lat_range.max - lat_range.min;
    let long_scale = long_range.max - long_range.min;
    let ilato = sep as u32;
    let ilono = (sep >> 32) as u32;
    let div = (1u64 << hash.step) as f64;
    Some(Area {
        hash,
        latitude: Range {
            min: lat_range.min + (ilato as f64 * 1.0 / div) * lat_scale,
            max: lat_range.min + (ilato.wrapping_add(1) as f64 * 1.0 / div) * lat_scale,
        },
        longitude: Range {
            min: long_range.min + (ilono as f64 * 1.0 / div) * long_scale,
            max: long_range.min + (ilono.wrapping_add(1) as f64 * 1.0 / div) * long_scale,
        },
    })
}

/// `geohashDecodeAreaToLongLat`: the centre of a box, `[longitude,
/// latitude]`, clamped to the limits.
pub fn area_center(area: &Area) -> [f64; 2] {
    let lon = ((area.longitude.min + area.longitude.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((area.latitude.min + area.latitude.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    [lon, lat]
}

/// `geohashAlign52Bits`: a geohash as a 52-bit score.
pub fn align52(hash: HashBits) -> u64 {
    hash.bits << (52 - hash.step as u32 * 2)
}

/// The score `GEOADD` stores for a point, or `None` outside the limits.
pub fn encode_score(longitude: f64, latitude: f64) -> Option<u64> {
    encode(WGS84_LONG, WGS84_LAT, longitude, latitude, STEP_MAX).map(align52)
}

/// C's conversion of a double to `long long` on x86-64 (`cvttsd2si`):
/// truncation, and `i64::MIN` for what does not fit (and NaN).
pub fn c_double_to_i64(x: f64) -> i64 {
    // (The range excludes NaN too.)
    if !(-9223372036854775808.0..9223372036854775808.0).contains(&x) {
        i64::MIN
    } else {
        x as i64
    }
}

/// C's conversion of a double to `uint64_t` as gcc compiles it on x86-64:
/// below 2^63 the signed conversion (so `-1.0` is all ones), above it the
/// signed conversion of `x - 2^63` with the top bit flipped (so 2^64 and
/// up are 0). Redis decodes any sorted set score this way.
pub fn c_double_to_u64(x: f64) -> u64 {
    const TWO_63: f64 = 9223372036854775808.0;
    if x < TWO_63 {
        c_double_to_i64(x) as u64
    } else {
        (c_double_to_i64(x - TWO_63) as u64) ^ (1 << 63)
    }
}

/// `decodeGeohash`: the `[longitude, latitude]` of a sorted set score
/// (any score decodes: out-of-range bits clamp to the limits).
pub fn decode_score(score: f64) -> [f64; 2] {
    let hash = HashBits {
        bits: c_double_to_u64(score),
        step: STEP_MAX,
    };
    let area = decode(WGS84_LONG, WGS84_LAT, hash).expect("step 26 is never the zero hash");
    area_center(&area)
}

/// `GEOHASH`'s 11-character standard geohash of a score: decoded, then
/// encoded again over `-180..180` and `-90..90`, the 11th character `0`.
pub fn geohash_string(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let [lon, lat] = decode_score(score);
    let long_range = Range {
        min: -180.0,
        max: 180.0,
    };
    let lat_range = Range {
        min: -90.0,
        max: 90.0,
    };
    let bits = encode(long_range, lat_range, lon, lat, 26).map_or(0, |h| h.bits);
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().enumerate().take(10) {
        let idx = (bits >> (52 - (i + 1) * 5)) & 0x1f;
        *c = ALPHABET[idx as usize];
    }
    out
}

fn move_x(hash: &mut HashBits, d: i8) {
    if d == 0 {
        return;
    }
    let mut x = hash.bits & 0xaaaaaaaaaaaaaaaa;
    let y = hash.bits & 0x5555555555555555;
    let zz = 0x5555555555555555u64 >> (64 - hash.step as u32 * 2);
    if d > 0 {
        x = x.wrapping_add(zz + 1);
    } else {
        x |= zz;
        x = x.wrapping_sub(zz + 1);
    }
    x &= 0xaaaaaaaaaaaaaaaa >> (64 - hash.step as u32 * 2);
    hash.bits = x | y;
}

fn move_y(hash: &mut HashBits, d: i8) {
    if d == 0 {
        return;
    }
    let x = hash.bits & 0xaaaaaaaaaaaaaaaa;
    let mut y = hash.bits & 0x5555555555555555;
    let zz = 0xaaaaaaaaaaaaaaaau64 >> (64 - hash.step as u32 * 2);
    if d > 0 {
        y = y.wrapping_add(zz + 1);
    } else {
        y |= zz;
        y = y.wrapping_sub(zz + 1);
    }
    y &= 0x5555555555555555 >> (64 - hash.step as u32 * 2);
    hash.bits = x | y;
}

/// The eight boxes around one, at the same step (wrapping around at the
/// antimeridian and the poles, as Redis's do).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Neighbors {
    /// North.
    pub north: HashBits,
    /// East.
    pub east: HashBits,
    /// West.
    pub west: HashBits,
    /// South.
    pub south: HashBits,
    /// North-east.
    pub north_east: HashBits,
    /// South-east.
    pub south_east: HashBits,
    /// North-west.
    pub north_west: HashBits,
    /// South-west.
    pub south_west: HashBits,
}

/// `geohashNeighbors`.
pub fn neighbors(hash: HashBits) -> Neighbors {
    let moved = |dx: i8, dy: i8| {
        let mut h = hash;
        move_x(&mut h, dx);
        move_y(&mut h, dy);
        h
    };
    Neighbors {
        east: moved(1, 0),
        west: moved(-1, 0),
        south: moved(0, -1),
        north: moved(0, 1),
        north_west: moved(-1, 1),
        north_east: moved(1, 1),
        south_east: moved(1, -1),
        south_west: moved(-1, -1),
    }
}

/// `geohashEstimateStepsByRadius`: the step whose boxes are about the
/// size of a search of this radius (in meters) at this latitude.
#[allow(clippy::manual_range_contains)]
pub fn estimate_steps_by_radius(range_meters: f64, lat: f64) -> u8 {
    if range_meters == 0.0 {
        return 26;
    }
    let mut range = range_meters;
    let mut step: i32 = 1;
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    step -= 2;
    if lat > 66.0 || lat < -66.0 {
        step -= 1;
        if lat > 80.0 || lat < -80.0 {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// What a search covers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ShapeKind {
    /// A circle of this radius (`BYRADIUS`, `GEORADIUS`).
    Circle {
        /// In the shape's unit.
        radius: f64,
    },
    /// An axis-aligned rectangle (`BYBOX`).
    Rect {
        /// East to west, in the shape's unit.
        width: f64,
        /// North to south, in the shape's unit.
        height: f64,
    },
}

/// A search shape (`GeoShape`): what, where, and in which unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    /// Circle or rectangle.
    pub kind: ShapeKind,
    /// Its centre, `[longitude, latitude]`.
    pub center: [f64; 2],
    /// Meters per unit (`KM`: 1000).
    pub conversion: f64,
}

impl Shape {
    /// `geohashBoundingBox`: `[min_lon, min_lat, max_lon, max_lat]`.
    pub fn bounding_box(&self) -> [f64; 4] {
        let [longitude, latitude] = self.center;
        let (height, width) = match self.kind {
            ShapeKind::Circle { radius } => (self.conversion * radius, self.conversion * radius),
            ShapeKind::Rect { width, height } => (
                self.conversion * (height / 2.0),
                self.conversion * (width / 2.0),
            ),
        };
        let lat_delta = rad_deg(height / EARTH_RADIUS_IN_METERS);
        let long_delta_top =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(latitude + lat_delta).cos());
        let long_delta_bottom =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(latitude - lat_delta).cos());
        let southern = latitude < 0.0;
        let long_delta = if southern {
            long_delta_bottom
        } else {
            long_delta_top
        };
        [
            longitude - long_delta,
            latitude - lat_delta,
            longitude + long_delta,
            latitude + lat_delta,
        ]
    }

    /// `geoWithinShape`: the distance in meters from the centre of a point
    /// inside the shape, `None` for a point outside.
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    pub fn contains(&self, point: [f64; 2]) -> Option<f64> {
        let [x1, y1] = self.center;
        let [x2, y2] = point;
        match self.kind {
            ShapeKind::Circle { radius } => {
                // Outside only when farther (a NaN distance is inside).
                let d = distance(x1, y1, x2, y2);
                (!(d > radius * self.conversion)).then_some(d)
            }
            ShapeKind::Rect { width, height } => {
                let (width_m, height_m) = (width * self.conversion, height * self.conversion);
                if lat_distance(y2, y1) > height_m / 2.0 {
                    return None;
                }
                if distance(x2, y2, x1, y2) > width_m / 2.0 {
                    return None;
                }
                Some(distance(x1, y1, x2, y2))
            }
        }
    }
}

/// The boxes a search reads (`GeoHashRadius`): the centre's box and its
/// neighbours, those of no use zeroed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Areas {
    /// The centre's box.
    pub hash: HashBits,
    /// Its neighbours ([`HashBits::is_zero`] when left out).
    pub neighbors: Neighbors,
    /// The centre's box's extent.
    pub area: Area,
}

impl Areas {
    /// The nine boxes in the order Redis reads them: centre, N, S, E, W,
    /// NE, NW, SE, SW.
    pub fn boxes(&self) -> [HashBits; 9] {
        let n = &self.neighbors;
        [
            self.hash,
            n.north,
            n.south,
            n.east,
            n.west,
            n.north_east,
            n.north_west,
            n.south_east,
            n.south_west,
        ]
    }
}

/// `geohashCalculateAreasByShapeWGS84`: the boxes covering `shape`.
pub fn areas_by_shape(shape: &Shape) -> Areas {
    let [min_lon, min_lat, max_lon, max_lat] = shape.bounding_box();
    let [longitude, latitude] = shape.center;
    let radius_meters = match shape.kind {
        ShapeKind::Circle { radius } => radius,
        ShapeKind::Rect { width, height } => {
            ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
        }
    } * shape.conversion;
    let mut steps = estimate_steps_by_radius(radius_meters, latitude);
    let boxes_at = |steps: u8| {
        let hash = encode(WGS84_LONG, WGS84_LAT, longitude, latitude, steps).unwrap_or(HashBits {
            bits: 0,
            step: steps,
        });
        let n = neighbors(hash);
        let area = decode(WGS84_LONG, WGS84_LAT, hash);
        (hash, n, area)
    };
    let (mut hash, mut n, mut area) = boxes_at(steps);
    let dec = |h| decode(WGS84_LONG, WGS84_LAT, h);
    let decrease_step = dec(n.north).is_some_and(|a| a.latitude.max < max_lat)
        || dec(n.south).is_some_and(|a| a.latitude.min > min_lat)
        || dec(n.east).is_some_and(|a| a.longitude.max < max_lon)
        || dec(n.west).is_some_and(|a| a.longitude.min > min_lon);
    if steps > 1 && decrease_step {
        steps -= 1;
        (hash, n, area) = boxes_at(steps);
    }
    let area = area.unwrap_or(Area {
        hash,
        longitude: Range { min: 0.0, max: 0.0 },
        latitude: Range { min: 0.0, max: 0.0 },
    });
    if steps >= 2 {
        let zero = HashBits::default();
        if area.latitude.min < min_lat {
            n.south = zero;
            n.south_west = zero;
            n.south_east = zero;
        }
        if area.latitude.max > max_lat {
            n.north = zero;
            n.north_east = zero;
            n.north_west = zero;
        }
        if area.longitude.min < min_lon {
            n.west = zero;
            n.south_west = zero;
            n.north_west = zero;
        }
        if area.longitude.max > max_lon {
            n.east = zero;
            n.south_east = zero;
            n.north_east = zero;
        }
    }
    Areas {
        hash,
        neighbors: n,
        area,
    }
}

/// `scoresOfGeoHashBox`: the scores of the points in a box, `min`
/// included, `max` excluded.
pub fn box_scores(hash: HashBits) -> (u64, u64) {
    let min = align52(hash);
    let max = align52(HashBits {
        bits: hash.bits.wrapping_add(1),
        step: hash.step,
    });
    (min, max)
}

/// `geohashGetLatDistance`: meters between two latitudes on a meridian.
pub fn lat_distance(lat1d: f64, lat2d: f64) -> f64 {
    EARTH_RADIUS_IN_METERS * (deg_rad(lat2d) - deg_rad(lat1d)).abs()
}

/// `geohashGetDistance`: the haversine distance in meters between two
/// points given in degrees.
pub fn distance(lon1d: f64, lat1d: f64, lon2d: f64, lat2d: f64) -> f64 {
    let lon1r = deg_rad(lon1d);
    let lon2r = deg_rad(lon2d);
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1d, lat2d);
    }
    let lat1r = deg_rad(lat1d);
    let lat2r = deg_rad(lat2d);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_IN_METERS * a.sqrt().asin()
}

/// Redis's `fixedpoint_d2string(d, 4)` (`addReplyDoubleDistance`): four
/// decimals, rounded half to even by `llrint`.
pub fn format_distance(d: f64) -> String {
    if d == 0.0 {
        return "0.0000".into();
    }
    let scaled = (d * 10000.0).round_ties_even();
    let svalue = c_double_to_i64(scaled);
    let sign = if svalue < 0 { "-" } else { "" };
    let value = svalue.unsigned_abs();
    format!("{sign}{}.{:04}", value / 10000, value % 10000)
}

/// Redis's `ld2string(LD_STR_HUMAN)` of a double (`addReplyHumanLongDouble`,
/// coordinates): `%.17Lf` (exact: a double is exact in a `long double`)
/// without trailing zeros, `-0` as `0`.
pub fn format_human(x: f64) -> String {
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    let mut s = format!("{x:.17}");
    if s.contains('.') {
        let keep = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(keep);
    }
    if s == "-0" {
        s = "0".into();
    }
    s
}

#[cfg(test)]
mod tests;
