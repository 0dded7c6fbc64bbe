//! Redis's own numbers (from `redis-server` 7.0 and Redis's documentation)
//! and properties of the encoding, the neighbours and the distance.

use super::*;
use proptest::prelude::*;

#[test]
fn scores_and_positions_are_redis_values() {
    // GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania
    assert_eq!(encode_score(13.361389, 38.115556), Some(3479099956230698));
    assert_eq!(encode_score(15.087269, 37.502669), Some(3479447370796909));
    // GEOPOS Sicily Palermo
    let [lon, lat] = decode_score(3479099956230698.0);
    assert_eq!(format_human(lon), "13.36138933897018433");
    assert_eq!(format_human(lat), "38.11555639549629859");
    // GEOHASH
    assert_eq!(&geohash_string(3479099956230698.0), b"sqc8b49rny0");
    assert_eq!(&geohash_string(3479447370796909.0), b"sqdtr74hyu0");
    // GEODIST Sicily Palermo Catania
    let [lon2, lat2] = decode_score(3479447370796909.0);
    assert_eq!(
        format_distance(distance(lon, lat, lon2, lat2)),
        "166274.1516"
    );
    assert_eq!(
        format_distance(distance(lon, lat, lon2, lat2) / 1000.0),
        "166.2742"
    );
}

#[test]
fn out_of_range_coordinates_do_not_encode() {
    assert_eq!(encode_score(180.0001, 0.0), None);
    assert_eq!(encode_score(0.0, 85.06), None);
    assert!(encode_score(180.0, LAT_MAX).is_some());
    assert!(encode_score(-180.0, LAT_MIN) == Some(0));
}

#[test]
fn any_score_decodes_as_gcc_converts_it() {
    // redis-server: ZADD g -1 m; GEOPOS g m -> 180, 85.0511287799999991
    assert_eq!(c_double_to_u64(-1.0), u64::MAX);
    let [lon, lat] = decode_score(-1.0);
    assert_eq!(format_human(lon), "180");
    assert_eq!(format_human(lat), "85.0511287799999991");
    // 1e30 and +inf convert to 0 (the south-west corner's box).
    assert_eq!(c_double_to_u64(1e30), 0);
    assert_eq!(c_double_to_u64(f64::INFINITY), 0);
    let [lon, lat] = decode_score(1e30);
    assert_eq!(format_human(lon), "-179.99999731779098511");
    assert_eq!(format_human(lat), "-85.05112751263942528");
    // -inf is the top bit alone: a longitude past 180, clamped.
    assert_eq!(c_double_to_u64(f64::NEG_INFINITY), 1 << 63);
    assert_eq!(decode_score(f64::NEG_INFINITY)[0], 180.0);
    assert_eq!(c_double_to_i64(1e19), i64::MIN);
    assert_eq!(c_double_to_i64(-2.9), -2);
}

#[test]
fn distances_print_with_four_rounded_decimals() {
    assert_eq!(format_distance(0.0), "0.0000");
    assert_eq!(format_distance(-0.0), "0.0000");
    assert_eq!(format_distance(0.00004), "0.0000");
    assert_eq!(format_distance(0.00006), "0.0001");
    assert_eq!(format_distance(0.5), "0.5000");
    assert_eq!(format_distance(12.34565), "12.3456");
    assert_eq!(format_distance(1234.5), "1234.5000");
    // llrint rounds half to even.
    assert_eq!(format_distance(0.00125), "0.0012");
    assert_eq!(format_distance(-3.25), "-3.2500");
}

#[test]
fn coordinates_print_as_redis_human_long_doubles() {
    assert_eq!(format_human(1.5), "1.5");
    assert_eq!(format_human(-180.0), "-180");
    assert_eq!(format_human(0.1), "0.10000000000000001");
    assert_eq!(format_human(-1e-20), "0");
    assert_eq!(format_human(1e-17), "0.00000000000000001");
    // Exact ties round to even, as glibc's printf does.
    assert_eq!(format_human(2f64.powi(-18) * 3.0), "0.00001144409179688");
}

#[test]
fn steps_follow_the_radius_and_the_latitude() {
    assert_eq!(estimate_steps_by_radius(0.0, 0.0), 26);
    assert_eq!(estimate_steps_by_radius(1.0, 0.0), 24);
    assert_eq!(estimate_steps_by_radius(100_000.0, 0.0), 7);
    assert_eq!(estimate_steps_by_radius(100_000.0, 70.0), 6);
    assert_eq!(estimate_steps_by_radius(100_000.0, -85.0), 5);
    assert_eq!(estimate_steps_by_radius(1e9, 0.0), 1);
    assert_eq!(estimate_steps_by_radius(f64::INFINITY, 0.0), 1);
    assert_eq!(estimate_steps_by_radius(1e-300, 0.0), 26);
}

#[test]
fn neighbours_wrap_around_the_antimeridian() {
    let h = encode(WGS84_LONG, WGS84_LAT, 179.99, 0.0, 4).unwrap();
    let east = decode(WGS84_LONG, WGS84_LAT, neighbors(h).east).unwrap();
    assert_eq!(east.longitude.min, -180.0);
    let h = encode(WGS84_LONG, WGS84_LAT, -179.99, 0.0, 4).unwrap();
    let west = decode(WGS84_LONG, WGS84_LAT, neighbors(h).west).unwrap();
    assert_eq!(west.longitude.max, 180.0);
}

#[test]
fn a_huge_radius_reads_one_box_and_no_neighbours_twice() {
    let shape = Shape {
        kind: ShapeKind::Circle { radius: 30_000.0 },
        center: [0.0, 0.0],
        conversion: 1000.0,
    };
    let areas = areas_by_shape(&shape);
    assert_eq!(areas.hash.step, 1);
    // Step 1 has two boxes per axis: neighbours repeat.
    let boxes = areas.boxes();
    assert!(boxes.iter().all(|b| b.step == 1 || b.is_zero()));
}

#[test]
fn useless_neighbours_are_left_out() {
    // 1 km at latitude 10: step 14, boxes about 2.4 km wide and 1.15 km
    // high. From a box's centre the circle reaches past its north and
    // south edges only.
    assert_eq!(estimate_steps_by_radius(1000.0, 10.0), 14);
    let h = encode(WGS84_LONG, WGS84_LAT, 10.0, 10.0, 14).unwrap();
    let [lon, lat] = area_center(&decode(WGS84_LONG, WGS84_LAT, h).unwrap());
    let shape = Shape {
        kind: ShapeKind::Circle { radius: 1.0 },
        center: [lon, lat],
        conversion: 1000.0,
    };
    let areas = areas_by_shape(&shape);
    assert_eq!(areas.hash, h);
    let n = neighbors(h);
    assert_eq!(
        areas.neighbors,
        Neighbors {
            north: n.north,
            south: n.south,
            ..Neighbors::default()
        }
    );
}

fn lonlat() -> impl Strategy<Value = (f64, f64)> {
    (LONG_MIN..=LONG_MAX, LAT_MIN..=LAT_MAX)
}

proptest! {
    #[test]
    fn a_point_decodes_within_its_box(
        (lon, lat) in lonlat(),
    ) {
        let score = encode_score(lon, lat).unwrap();
        prop_assert!(score <= 1 << 53);
        let [x, y] = decode_score(score as f64);
        // A box at step 26 is 360/2^26 degrees wide, 170.1/2^26 high.
        prop_assert!((x - lon).abs() <= 360.0 / (1u64 << 26) as f64);
        prop_assert!((y - lat).abs() <= 171.0 / (1u64 << 26) as f64);
        // Decoding and encoding again finds the same box.
        prop_assert_eq!(encode_score(x, y), Some(score));
    }

    #[test]
    fn neighbours_touch_their_box(
        (lon, lat) in (-170.0f64..170.0, -80.0f64..80.0),
        step in 1u8..=26,
    ) {
        let h = encode(WGS84_LONG, WGS84_LAT, lon, lat, step).unwrap();
        let area = decode(WGS84_LONG, WGS84_LAT, h).unwrap();
        let n = neighbors(h);
        let at = |h| decode(WGS84_LONG, WGS84_LAT, h).unwrap();
        if area.longitude.max < LONG_MAX {
            prop_assert_eq!(at(n.east).longitude.min, area.longitude.max);
            prop_assert_eq!(at(n.east).latitude, area.latitude);
        }
        if area.longitude.min > LONG_MIN {
            prop_assert_eq!(at(n.west).longitude.max, area.longitude.min);
        }
        if area.latitude.max < LAT_MAX {
            prop_assert_eq!(at(n.north).latitude.min, area.latitude.max);
            prop_assert_eq!(at(n.north).longitude, area.longitude);
        }
        if area.latitude.min > LAT_MIN {
            prop_assert_eq!(at(n.south).latitude.max, area.latitude.min);
        }
        // Moving east then west comes back.
        prop_assert_eq!(neighbors(n.east).west, h);
        prop_assert_eq!(neighbors(n.north_east).south_west, h);
    }

    #[test]
    fn box_scores_hold_exactly_the_box(
        (lon, lat) in lonlat(),
        step in 1u8..=26,
    ) {
        let score = encode_score(lon, lat).unwrap();
        if let Some(h) = encode(WGS84_LONG, WGS84_LAT, lon, lat, step) {
            let (min, max) = box_scores(h);
            prop_assert!(min <= score && score < max);
            prop_assert_eq!(max - min, 1u64 << (52 - 2 * step as u32));
        }
    }

    #[test]
    fn distance_is_a_symmetric_haversine(
        (lon1, lat1) in lonlat(),
        (lon2, lat2) in lonlat(),
    ) {
        let d = distance(lon1, lat1, lon2, lat2);
        let back = distance(lon2, lat2, lon1, lat1);
        prop_assert!(d >= 0.0);
        prop_assert!(d <= PI * EARTH_RADIUS_IN_METERS + 1e-6);
        prop_assert!((d - back).abs() <= 1e-6 * d.max(1.0));
        prop_assert_eq!(distance(lon1, lat1, lon1, lat2), lat_distance(lat1, lat2));
    }

    #[test]
    fn a_circle_contains_the_points_at_most_its_radius_away(
        (lon, lat) in (-170.0f64..170.0, -80.0f64..80.0),
        (dx, dy) in (-2.0f64..2.0, -2.0f64..2.0),
        radius in 0.0f64..300.0,
    ) {
        let shape = Shape {
            kind: ShapeKind::Circle { radius },
            center: [lon, lat],
            conversion: 1000.0,
        };
        let point = [lon + dx, (lat + dy).clamp(LAT_MIN, LAT_MAX)];
        let d = distance(lon, lat, point[0], point[1]);
        prop_assert_eq!(shape.contains(point), (d <= radius * 1000.0).then_some(d));
        // The search boxes cover the point when it is inside.
        if d <= radius * 1000.0 {
            let score = encode_score(point[0], point[1]).unwrap();
            let areas = areas_by_shape(&shape);
            let covered = areas.boxes().iter().filter(|b| !b.is_zero()).any(|b| {
                let (min, max) = box_scores(*b);
                min <= score && score < max
            });
            prop_assert!(covered, "{:?} not covered", point);
        }
    }

    #[test]
    fn distances_print_as_printf_does_off_ties(d in 0.0f64..1e9) {
        let scaled = d * 10000.0;
        prop_assume!((scaled - scaled.floor() - 0.5).abs() > 1e-6);
        prop_assert_eq!(format_distance(d), format!("{:.4}", scaled.round() / 10000.0));
    }
}
