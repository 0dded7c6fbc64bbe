//! The geo script: `GEOADD` (options, bad coordinates in Redis's words,
//! what it does to the sorted set), `GEOPOS GEOHASH GEODIST` (units, any
//! score, missing members and keys), and the searches — `GEOSEARCH`,
//! `GEOSEARCHSTORE`, `GEORADIUS`, `GEORADIUSBYMEMBER` and the `_RO`
//! forms — with every option and their errors in Redis's order, radii
//! from 0 to the whole earth, boxes, the poles and the antimeridian,
//! points at equal distances (Redis's sorts decide their order), `ANY`,
//! and `STORE`/`STOREDIST` results read back with `ZRANGE WITHSCORES`.
//! Plus `COMMAND GETKEYS` of the searches that store.
//!
//! Points come from a fixed pseudo-random sequence, so the script is the
//! same on every run; every reply is compared byte for byte.

use super::{c, Step};

/// A fixed sequence of points: `(longitude, latitude)` as text with six
/// decimals, within Redis's limits.
fn points(n: usize, seed: u64) -> Vec<(String, String)> {
    let mut x = seed;
    let mut next = move || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..n)
        .map(|_| {
            let lon = -180.0 + next() * 360.0;
            let lat = -85.05 + next() * 170.1;
            (format!("{lon:.6}"), format!("{lat:.6}"))
        })
        .collect()
}

pub fn geo_script() -> Vec<Step> {
    let mut s = vec![c("FLUSHALL")];
    s.extend(arity_and_types());
    s.extend(geoadd());
    s.extend(positions());
    s.extend(search_errors());
    s.extend(searches());
    s.extend(ties());
    s.extend(edges());
    s.extend(stores());
    s.extend(sweep());
    s
}

fn arity_and_types() -> Vec<Step> {
    vec![
        c("GEOADD"),
        c("GEOADD k"),
        c("GEOADD k 1 2"),
        c("GEODIST k a"),
        c("GEOHASH"),
        c("GEOPOS"),
        c("GEOSEARCH k FROMLONLAT 0 0 BYRADIUS"),
        c("GEOSEARCHSTORE d s FROMLONLAT 0 0 BYRADIUS 1"),
        c("GEORADIUS k 0 0 1"),
        c("GEORADIUS_RO k 0 0 1"),
        c("GEORADIUSBYMEMBER k m 1"),
        c("GEORADIUSBYMEMBER_RO k m 1"),
        // Another type.
        c("SET str v"),
        c("GEOADD str 1 2 m"),
        c("GEOPOS str m"),
        c("GEOHASH str m"),
        c("GEODIST str a b"),
        c("GEODIST str a b km"),
        c("GEODIST str a b parsecs"),
        c("GEOSEARCH str FROMLONLAT 0 0 BYRADIUS 1 km"),
        c("GEOSEARCH str FROMMEMBER x BYRADIUS -1 km"),
        c("GEOSEARCHSTORE d str FROMLONLAT 0 0 BYRADIUS 1 km"),
        c("GEOSEARCHSTORE str nokey FROMLONLAT 0 0 BYRADIUS 1 km"),
        c("TYPE str"),
        c("SET str v"),
        c("GEORADIUS str 0 0 1 km"),
        c("GEORADIUS str 200 0 1 km"),
        c("GEORADIUSBYMEMBER str m 1 km"),
        c("GEORADIUS_RO str 0 0 1 km"),
        c("GEORADIUSBYMEMBER_RO str m 1 km"),
        // Missing keys.
        c("GEOPOS nokey a b"),
        c("GEOHASH nokey a"),
        c("GEODIST nokey a b"),
        c("GEODIST nokey a b mi"),
        c("GEOSEARCH nokey FROMLONLAT 0 0 BYRADIUS 1 km"),
        c("GEOSEARCH nokey FROMMEMBER a BYBOX 1 1 km WITHDIST"),
        c("GEORADIUS nokey 0 0 1 km"),
        c("GEORADIUSBYMEMBER nokey a 1 km"),
        // No member lookup and no radius on a missing key.
        c("GEORADIUSBYMEMBER nokey a -1 km"),
        c("GEORADIUSBYMEMBER nokey a x y"),
        c("GEORADIUSBYMEMBER_RO nokey a x y WITHDIST"),
        c("GEORADIUSBYMEMBER nokey a x y BOGUS"),
    ]
}

fn geoadd() -> Vec<Step> {
    let mut s = vec![
        // Syntax, then each point in order.
        c("GEOADD g 1 2 m 3"),
        c("GEOADD g nx xx 1 2 m"),
        c("GEOADD g ch ch ch"),
        c("GEOADD g nx nx nx"),
        c("GEOADD g gt 1 2"),
        c("GEOADD g gt 1 2 m"),
        c("GEOADD g x 2 m"),
        c("GEOADD g 1 y m"),
        c("GEOADD g 1 2 m 200 0 n x 0 o"),
        c("GEOADD g 1 2 m x 0 n 200 0 o"),
        c("EXISTS g"),
    ];
    for (lon, lat) in [
        ("200", "10"),
        ("-200", "10"),
        ("10", "86"),
        ("10", "-86"),
        ("180.0000001", "0"),
        ("0", "85.05112879"),
        ("inf", "0"),
        ("-inf", "0"),
        ("0", "inf"),
        ("-0", "100"),
        ("1e300", "0"),
        ("0", "-1e-300"),
        ("nan", "0"),
        ("\"\"", "0"),
        ("\" 1\"", "0"),
        ("1e400", "0"),
        ("0x10", "0"),
        ("1.5e2", "0"),
        ("0", "-123456.789"),
    ] {
        s.push(c(&format!("GEOADD g {lon} {lat} m")));
    }
    s.extend([
        c("EXISTS g"),
        c("GEOADD g XX 1 2 m"),
        c("EXISTS g"),
        c("GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania"),
        c("ZRANGE Sicily 0 -1 WITHSCORES"),
        c("GEOADD Sicily 13.361389 38.115556 Palermo"),
        c("GEOADD Sicily CH 13.361389 38.115556 Palermo"),
        c("GEOADD Sicily CH 13.361 38.115 Palermo"),
        c("GEOADD Sicily nx 13.361389 38.115556 Palermo 12.758489 38.788135 edge1"),
        c("GEOADD Sicily XX ch 13.361389 38.115556 Palermo 17.241510 38.788135 edge2"),
        c("GeoAdd Sicily Xx Nx 1 1 a"),
        c("GEOADD Sicily 13.583333 37.316667 Agrigento 13.583333 37.316667 Agrigento"),
        c("GEOADD Sicily CH 13.5 37.3 Agrigento 13.6 37.4 Agrigento"),
        c("ZRANGE Sicily 0 -1 WITHSCORES"),
        c("ZCARD Sicily"),
        // The edges of the map.
        c("GEOADD limits 180 85.05112878 ne -180 -85.05112878 sw 180 -85.05112878 se -180 85.05112878 nw 0 0 origin"),
        c("ZRANGE limits 0 -1 WITHSCORES"),
        c("GEOPOS limits ne sw se nw origin"),
        c("GEOHASH limits ne sw se nw origin"),
    ]);
    // More than 16 points at once (ZADD's many-member path), a member twice.
    let mut line = String::from("GEOADD many CH");
    for (i, (lon, lat)) in points(40, 7).into_iter().enumerate() {
        line.push_str(&format!(" {lon} {lat} p{}", i % 30));
    }
    s.extend([c(&line), c("ZCARD many"), c("ZRANGE many 0 -1 WITHSCORES")]);
    s
}

fn positions() -> Vec<Step> {
    vec![
        c("GEOPOS Sicily Palermo Catania nobody"),
        c("GEOPOS Sicily"),
        c("GEOHASH Sicily Palermo Catania nobody"),
        c("GEOHASH Sicily"),
        c("GEODIST Sicily Palermo Catania"),
        c("GEODIST Sicily Palermo Catania m"),
        c("GEODIST Sicily Palermo Catania KM"),
        c("GEODIST Sicily Palermo Catania ft"),
        c("GEODIST Sicily Palermo Catania Mi"),
        c("GEODIST Sicily Palermo Catania parsecs"),
        c("GEODIST Sicily Palermo Catania km extra"),
        c("GEODIST Sicily Palermo nobody"),
        c("GEODIST Sicily nobody Palermo km"),
        c("GEODIST Sicily Palermo Palermo"),
        c("GEODIST limits ne sw"),
        c("GEODIST limits nw ne km"),
        c("GEODIST limits origin ne mi"),
        c("GEODIST limits sw se ft"),
        // Any score decodes.
        c("ZADD odd -1 neg 0 zero 1.5 frac 4503599627370496 b52 9007199254740992 b53 1e30 big inf pinf -inf ninf 18446744073709551616 b64 -9.3e18 vneg"),
        c("GEOPOS odd neg zero frac b52 b53 big pinf ninf b64 vneg"),
        c("GEOHASH odd neg zero frac b52 b53 big pinf ninf b64 vneg"),
        c("GEODIST odd neg zero"),
        c("GEODIST odd b53 ninf km"),
        c("GEODIST odd frac zero"),
        c("GEOSEARCH odd FROMMEMBER neg BYRADIUS 100 km WITHCOORD WITHHASH"),
        c("GEOSEARCH odd FROMMEMBER zero BYRADIUS 100 km WITHCOORD WITHHASH WITHDIST"),
    ]
}

fn search_errors() -> Vec<Step> {
    vec![
        c("GEOSEARCH Sicily FROMMEMBER Palermo FROMLONLAT 15 37 BYRADIUS 200 km"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 FROMMEMBER Palermo BYRADIUS 200 km"),
        c("GEOSEARCH Sicily FROMMEMBER Palermo FROMMEMBER Catania BYRADIUS 200 km ASC"),
        c("GEOSEARCH Sicily BYRADIUS 200 km ASC"),
        c("geosearch Sicily BYRADIUS 200 km ASC"),
        c("GeoSearchStore d Sicily BYBOX 1 1 km ASC"),
        c("GEOSEARCH Sicily FROMMEMBER Palermo ASC WITHDIST"),
        c("geosearch Sicily FROMMEMBER Palermo ASC WITHDIST"),
        c("GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 200 km BYBOX 200 200 km"),
        c("GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 200 200 km BYRADIUS 200 km"),
        c("GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 200 km BYRADIUS 10 km"),
        c("GEOSEARCH Sicily FROMMEMBER nobody BYRADIUS 200 km"),
        c("GEOSEARCH Sicily FROMMEMBER nobody BYRADIUS -1 km"),
        c("GEOSEARCH Sicily BYRADIUS -1 km FROMMEMBER nobody"),
        c("GEOSEARCH Sicily FROMMEMBER nobody BOGUS"),
        c("GEOSEARCH Sicily FROMMEMBER"),
        c("GEOSEARCH Sicily FROMLONLAT 15 BYRADIUS 1 km"),
        c("GEOSEARCH Sicily FROMLONLAT 200 37 BYRADIUS 1 km"),
        c("GEOSEARCH Sicily FROMLONLAT x 37 BYRADIUS 1 km"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS x km"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS -0.1 km"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 parsecs"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 km"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX x 1 km"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 x km"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX x y km"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX -1 1 km"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 -1 km"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1 1 yards"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km COUNT 0"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km COUNT -1"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km COUNT x"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km COUNT 99999999999999999999"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km COUNT"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km ANY"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km ANY COUNT 0"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km STORE d"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km STOREDIST"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 1 km STOREDIST d"),
        c("GEOSEARCHSTORE d Sicily FROMLONLAT 15 37 BYRADIUS 1 km STORE d"),
        c("GEOSEARCHSTORE d Sicily FROMLONLAT 15 37 BYRADIUS 1 km WITHDIST"),
        c("GEOSEARCHSTORE d Sicily FROMLONLAT 15 37 BYRADIUS 1 km WITHHASH STOREDIST"),
        c("GEOSEARCHSTORE d Sicily FROMLONLAT 15 37 BYRADIUS 1 km WITHCOORD"),
        c("GEORADIUS Sicily 15 37 200 km WITHDIST STORE d"),
        c("GEORADIUS Sicily 15 37 200 km STOREDIST d WITHCOORD"),
        c("GEORADIUS Sicily 15 37 200 km STORE"),
        c("GEORADIUS_RO Sicily 15 37 200 km STORE d"),
        c("GEORADIUSBYMEMBER_RO Sicily Palermo 200 km STOREDIST d"),
        c("GEORADIUS Sicily 15 37 200 km FROMMEMBER Palermo"),
        c("GEORADIUS Sicily 15 37 200 km BYRADIUS 1 km"),
        c("GEORADIUS Sicily 15 37 200 km BOGUS"),
        c("GEORADIUS Sicily 15 200 200 km"),
        c("GEORADIUS Sicily 15 37 -200 km"),
        c("GEORADIUS Sicily 15 37 200 lightyears"),
        c("GEORADIUS Sicily x 37 200 km"),
        c("GEORADIUS Sicily 15 37 x km"),
        c("GEORADIUSBYMEMBER Sicily nobody 200 km"),
        c("GEORADIUSBYMEMBER Sicily nobody -200 km"),
        c("GEORADIUSBYMEMBER Sicily Palermo -200 km"),
        c("GEORADIUSBYMEMBER Sicily Palermo 200 parsecs"),
        c("GEORADIUSBYMEMBER Sicily Palermo 200 km COUNT 0"),
        c("GEORADIUSBYMEMBER Sicily Palermo 200 km ANY"),
        c("EXISTS d"),
    ]
}

fn searches() -> Vec<Step> {
    let mut s = vec![
        c("GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 200 km"),
        c("GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 200 km ASC"),
        c("GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 200 km DESC"),
        c("GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 200 km DESC ASC WITHDIST"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ASC WITHCOORD WITHDIST WITHHASH"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ASC WITHHASH WITHCOORD"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km withdist withdist"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km COUNT 2"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km COUNT 2 DESC"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km COUNT 2 ANY"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km COUNT 2 ANY ASC"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km COUNT 100 ANY DESC WITHDIST"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ANY COUNT 1 COUNT 3"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 km ASC WITHDIST"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 200 400 km ASC WITHDIST"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 200 km ASC WITHDIST"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 200 mi ASC WITHDIST"),
        c("GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 1000000 1000000 ft DESC WITHDIST"),
        c("GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 0 km WITHDIST"),
        c("GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 0 0 km WITHDIST"),
        c("GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 1 m WITHDIST WITHCOORD"),
        c("GEOSEARCH Sicily FROMLONLAT 13.361389 38.115556 BYRADIUS 1 m WITHDIST"),
        c("GEOSEARCH Sicily FROMLONLAT 13.361389 38.115556 BYRADIUS 0.0001 m WITHDIST"),
        c("GEORADIUS Sicily 15 37 200 km"),
        c("GEORADIUS Sicily 15 37 200 km WITHDIST WITHCOORD WITHHASH COUNT 2 DESC"),
        c("GEORADIUS Sicily 15 37 200 KM withdist ASC count 1"),
        c("GEORADIUS_RO Sicily 15 37 200 km WITHDIST ASC"),
        c("GEORADIUSBYMEMBER Sicily Palermo 200 km WITHDIST ASC"),
        c("GEORADIUSBYMEMBER Sicily Agrigento 100 km WITHDIST DESC COUNT 2"),
        c("GEORADIUSBYMEMBER_RO Sicily Agrigento 100 mi WITHCOORD ASC"),
        c("GEORADIUSBYMEMBER_RO Sicily Agrigento 100 mi WITHCOORD ASC COUNT 1 ANY"),
        c("GEORADIUS many 0 0 5000 km WITHDIST ASC"),
        c("GEORADIUS many 0 0 5000 km ASC COUNT 3 WITHDIST"),
    ];
    // Radii from a meter to past the whole earth, around a few centres.
    for (lon, lat) in [
        ("0", "0"),
        ("100", "-40"),
        ("-75.5", "60.25"),
        ("150", "80"),
    ] {
        for radius in [
            "1 m", "100 km", "2000 km", "7000 mi", "20000 km", "40000 km", "inf km",
        ] {
            s.push(c(&format!(
                "GEOSEARCH many FROMLONLAT {lon} {lat} BYRADIUS {radius} ASC WITHDIST WITHCOORD"
            )));
        }
        for size in [
            "1 1 m",
            "500 300 km",
            "5000 5000 km",
            "40000 20000 km",
            "80000 80000 km",
        ] {
            s.push(c(&format!(
                "GEOSEARCH many FROMLONLAT {lon} {lat} BYBOX {size} DESC WITHDIST WITHHASH"
            )));
        }
    }
    s
}

/// Members at equal distances: the order of ties is that of Redis's sorts
/// (glibc's merge sort for a full sort, `pqsort` under `COUNT`).
fn ties() -> Vec<Step> {
    let mut s = Vec::new();
    // 60 members on 6 positions: ties, in sizes that take pqsort's
    // insertion sort (< 7), med3 (> 7) and ninther (> 40) paths.
    let spots = [
        ("10", "10"),
        ("10.1", "10"),
        ("10", "10.1"),
        ("9.9", "10"),
        ("10", "9.9"),
        ("10.05", "10.05"),
    ];
    let mut line = String::from("GEOADD ties");
    for i in 0..60 {
        let (lon, lat) = spots[(i * 7) % spots.len()];
        line.push_str(&format!(" {lon} {lat} t{i:02}"));
    }
    s.push(c(&line));
    for n in [1, 3, 6, 7, 8, 10, 20, 41, 45, 59, 60, 100] {
        s.push(c(&format!(
            "GEOSEARCH ties FROMLONLAT 10 10 BYRADIUS 50 km COUNT {n} WITHDIST"
        )));
        s.push(c(&format!(
            "GEOSEARCH ties FROMLONLAT 10 10 BYRADIUS 50 km COUNT {n} DESC"
        )));
        s.push(c(&format!(
            "GEOSEARCH ties FROMLONLAT 10 10 BYRADIUS 50 km COUNT {n} ANY"
        )));
        s.push(c(&format!(
            "GEOSEARCH ties FROMLONLAT 10.02 10.01 BYBOX 40 40 km COUNT {n} ANY DESC"
        )));
    }
    s.extend([
        c("GEOSEARCH ties FROMLONLAT 10 10 BYRADIUS 50 km ASC"),
        c("GEOSEARCH ties FROMLONLAT 10 10 BYRADIUS 50 km DESC"),
        c("GEOSEARCH ties FROMMEMBER t00 BYRADIUS 50 km"),
        c("GEOSEARCHSTORE tied ties FROMLONLAT 10 10 BYRADIUS 50 km COUNT 7 DESC STOREDIST"),
        c("ZRANGE tied 0 -1 WITHSCORES"),
    ]);
    s
}

/// The poles' latitudes and the antimeridian.
fn edges() -> Vec<Step> {
    let mut s = vec![
        c("GEOADD edge 179.9 0 e1 -179.9 0 w1 179.999999 10 e2 -179.999999 10 w2 180 0 am -180 0 am2"),
        c("GEOADD edge 0 85.05 n1 90 85.0 n2 180 85.05112878 n3 -90 84.9 n4"),
        c("GEOADD edge 0 -85.05 s1 90 -85.0 s2 -180 -85.05112878 s3 -90 -84.9 s4"),
        c("GEOPOS edge e1 w1 e2 w2 am am2 n3 s3"),
        c("GEODIST edge e1 w1 km"),
        c("GEODIST edge e2 w2 m"),
        c("GEODIST edge n1 n2 km"),
        c("GEODIST edge s3 n3 km"),
        c("GEODIST edge am am2"),
    ];
    for (lon, lat) in [
        ("180", "0"),
        ("-180", "0"),
        ("179.95", "5"),
        ("-179.95", "-5"),
        ("0", "85.05112878"),
        ("0", "-85.05112878"),
        ("45", "84"),
        ("-135", "-84.5"),
    ] {
        for radius in ["30 km", "300 km", "1500 km", "10000 km"] {
            s.push(c(&format!(
                "GEOSEARCH edge FROMLONLAT {lon} {lat} BYRADIUS {radius} ASC WITHDIST WITHCOORD"
            )));
            s.push(c(&format!("GEORADIUS edge {lon} {lat} {radius} DESC")));
        }
        for size in ["60 60 km", "600 200 km", "3000 3000 km"] {
            s.push(c(&format!(
                "GEOSEARCH edge FROMLONLAT {lon} {lat} BYBOX {size} ASC WITHDIST"
            )));
        }
    }
    for m in ["e1", "w2", "am", "n3", "s3", "n4"] {
        s.push(c(&format!(
            "GEORADIUSBYMEMBER edge {m} 500 km WITHDIST WITHHASH ASC"
        )));
        s.push(c(&format!(
            "GEOSEARCH edge FROMMEMBER {m} BYBOX 2000 2000 km WITHDIST ASC"
        )));
    }
    s
}

fn stores() -> Vec<Step> {
    vec![
        c("GEORADIUS Sicily 15 37 200 km STORE dst"),
        c("ZRANGE dst 0 -1 WITHSCORES"),
        c("TTL dst"),
        c("GEORADIUS Sicily 15 37 200 km STOREDIST dst"),
        c("ZRANGE dst 0 -1 WITHSCORES"),
        c("GEORADIUS Sicily 15 37 200 mi STORE dst2 STOREDIST dst"),
        c("ZRANGE dst 0 -1 WITHSCORES"),
        c("EXISTS dst2"),
        c("GEORADIUS Sicily 15 37 200 km STOREDIST dst STORE dst2 COUNT 1"),
        c("ZRANGE dst2 0 -1 WITHSCORES"),
        c("GEORADIUSBYMEMBER Sicily Palermo 100 km ASC COUNT 2 STORE dst3"),
        c("ZRANGE dst3 0 -1 WITHSCORES"),
        c("GEORADIUSBYMEMBER Sicily Palermo 100 ft STOREDIST dst3"),
        c("ZRANGE dst3 0 -1 WITHSCORES"),
        c("GEORADIUSBYMEMBER Sicily nobody 100 ft STOREDIST dst3"),
        c("ZRANGE dst3 0 -1 WITHSCORES"),
        // Nothing found: the destination is deleted.
        c("SET dst4 string"),
        c("GEORADIUS Sicily 0 0 1 km STORE dst4"),
        c("EXISTS dst4"),
        c("SET dst4 string"),
        c("GEORADIUS nokey 0 0 1 km STORE dst4"),
        c("EXISTS dst4"),
        c("SET dst4 string"),
        c("GEORADIUSBYMEMBER nokey m -1 km STORE dst4"),
        c("EXISTS dst4"),
        // A destination of another type is replaced.
        c("SET dst5 string"),
        c("GEOSEARCHSTORE dst5 Sicily FROMMEMBER Palermo BYRADIUS 300 km"),
        c("TYPE dst5"),
        c("ZRANGE dst5 0 -1 WITHSCORES"),
        c("GEOSEARCHSTORE dst5 Sicily FROMMEMBER Palermo BYBOX 300 300 km STOREDIST DESC COUNT 2"),
        c("ZRANGE dst5 0 -1 WITHSCORES"),
        c("GEOSEARCHSTORE dst5 Sicily FROMLONLAT 15 37 BYRADIUS 200 mi ANY COUNT 1 STOREDIST"),
        c("ZRANGE dst5 0 -1 WITHSCORES"),
        c("GEOSEARCHSTORE dst5 nokey FROMMEMBER Palermo BYRADIUS 300 km"),
        c("EXISTS dst5"),
        c("GEOSEARCHSTORE dst5 Sicily FROMMEMBER nobody BYRADIUS 300 km"),
        c("GEOSEARCHSTORE dst5 str FROMMEMBER nobody BYRADIUS 300 km"),
        // Onto itself.
        c("GEOADD self 1 1 a 1.001 1.001 b 50 50 far"),
        c("GEOSEARCHSTORE self self FROMMEMBER a BYRADIUS 1000 km"),
        c("ZRANGE self 0 -1 WITHSCORES"),
        c("GEORADIUSBYMEMBER self a 1000 km STOREDIST self"),
        c("ZRANGE self 0 -1 WITHSCORES"),
        // A stored set is a geo set (positions) or distances.
        c("GEOSEARCHSTORE copy many FROMLONLAT 0 0 BYRADIUS 7000 km"),
        c("GEOSEARCH copy FROMLONLAT 0 0 BYRADIUS 7000 km ASC WITHCOORD"),
        c("GEOSEARCHSTORE far many FROMLONLAT 0 0 BYRADIUS 20000 km STOREDIST ASC"),
        c("ZRANGE far 0 -1 WITHSCORES"),
        // Keys of the searches that store.
        c("COMMAND GETKEYS georadius k 0 0 1 km store dst"),
        c("COMMAND GETKEYS georadius k 0 0 1 km"),
        c("COMMAND GETKEYS georadius k 0 0 1 km storedist d2 store d1"),
        c("COMMAND GETKEYS georadius k 0 0 1 km store a store b"),
        c("COMMAND GETKEYS georadius k 0 0 1 km store"),
        c("COMMAND GETKEYS georadiusbymember k m 1 km storedist d"),
        c("COMMAND GETKEYS georadiusbymember k m 1 km"),
        c("COMMAND GETKEYS georadius k 0 0 1"),
        c("COMMAND GETKEYS georadius_ro k 0 0 1 km store x"),
        c("COMMAND GETKEYS geosearchstore dst src frommember m byradius 1 km"),
        c("COMMAND GETKEYS geosearch src frommember m byradius 1 km"),
        c("COMMAND GETKEYS geoadd k 1 2 m"),
        c("COMMAND GETKEYS geodist k a b"),
    ]
}

/// Many points, many searches: what each finds, and in which order.
fn sweep() -> Vec<Step> {
    let mut s = Vec::new();
    let pts = points(400, 42);
    for chunk in pts.chunks(100).enumerate() {
        let (n, chunk) = chunk;
        let mut line = String::from("GEOADD world");
        for (i, (lon, lat)) in chunk.iter().enumerate() {
            line.push_str(&format!(" {lon} {lat} w{}", n * 100 + i));
        }
        s.push(c(&line));
    }
    for (i, (lon, lat)) in points(12, 99).into_iter().enumerate() {
        let radius = ["500", "1500", "3000", "6000"][i % 4];
        s.push(c(&format!(
            "GEOSEARCH world FROMLONLAT {lon} {lat} BYRADIUS {radius} km WITHDIST WITHCOORD WITHHASH"
        )));
        s.push(c(&format!(
            "GEOSEARCH world FROMLONLAT {lon} {lat} BYBOX {radius} {radius} km ASC WITHDIST"
        )));
        s.push(c(&format!(
            "GEOSEARCH world FROMLONLAT {lon} {lat} BYRADIUS {radius} mi COUNT 5 ANY WITHDIST"
        )));
        s.push(c(&format!(
            "GEORADIUS world {lon} {lat} {radius} km COUNT 4 DESC WITHDIST"
        )));
    }
    for m in ["w0", "w57", "w123", "w399"] {
        s.push(c(&format!(
            "GEORADIUSBYMEMBER world {m} 4000 km WITHDIST ASC COUNT 10"
        )));
        s.push(c(&format!(
            "GEOSEARCH world FROMMEMBER {m} BYBOX 9000 3000 km DESC"
        )));
    }
    s.extend([
        c("GEOSEARCHSTORE near world FROMMEMBER w7 BYRADIUS 5000 km STOREDIST"),
        c("ZRANGE near 0 -1 WITHSCORES"),
        c("GEORADIUS world 0 0 5000 km STORE near"),
        c("ZRANGE near 0 -1 WITHSCORES"),
    ]);
    s
}
