//! The `microcache` scenario end to end (quick mode): every setup measured
//! on verified 672,864-byte responses, the micro-caches really caching.

use tiercache_lab::{ChartKind, Ctx, LabOptions};

#[test]
fn microcache_measures_every_setup_on_verified_responses() {
    let mut ctx = Ctx::new(LabOptions {
        quick: true,
        require: false,
        data_dir: std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data"),
        progress: false,
    })
    .unwrap();
    let report = tiercache_lab::scenarios::microcache::run(&mut ctx).expect("microcache runs");
    ctx.stop_servers();
    println!("{}", tiercache_lab::report::table::render(&report));
    assert_eq!(report.baseline.as_deref(), Some("direct"));
    assert_eq!(report.parameters["document_bytes"], 672_864);
    assert_eq!(report.parameters["connections"], 10);
    for k in &report.skipped {
        if tiercache_testkit::backends_required() {
            panic!("microcache: {} skipped: {}", k.setup, k.reason);
        }
        eprintln!("SKIPPED microcache/{}: {}", k.setup, k.reason);
    }
    let measured: Vec<&str> = ["direct", "tiercache", "nginx", "memcached-app"]
        .into_iter()
        .filter(|s| !report.skipped.iter().any(|k| k.setup == *s))
        .collect();
    assert!(measured.contains(&"direct") && measured.contains(&"tiercache"));

    // direct: every answer took the origin's delay (200 ms quick), 10 at a
    // time, so about 50 req/s and a median of at least the delay.
    let direct = report.value("direct", "req_per_sec").unwrap();
    assert!((20.0..=55.0).contains(&direct), "direct: {direct} req/s");
    assert!(report.value("direct", "p50_ms").unwrap() >= 200.0);
    assert!(report.value("direct", "origin_requests").unwrap() >= direct * 2.0);
    assert_eq!(report.value("direct", "improvement_pct"), Some(0.0));

    for s in measured.iter().filter(|s| **s != "direct") {
        let rps = report.value(s, "req_per_sec").unwrap();
        // A micro-cache answers from memory: far more than the origin can.
        assert!(rps > direct * 3.0, "{s}: {rps} req/s vs direct {direct}");
        let improvement = report.value(s, "improvement_pct").unwrap();
        assert!((improvement - (rps - direct) / direct * 100.0).abs() < 1e-6);
        // About one refresh per second of the 5 s warm-up + run (plus the
        // memcached app's concurrent misses), never one per request.
        let origin = report.value(s, "origin_requests").unwrap();
        assert!(
            (1.0..=80.0).contains(&origin),
            "{s}: {origin} origin requests"
        );
        let pct = report.percentiles.iter().find(|p| p.setup == *s).unwrap();
        assert!(
            pct.samples as f64 >= rps * 3.0,
            "{s}: {} samples",
            pct.samples
        );
        let (p50, p99, max) = (
            pct.at(50.0).unwrap(),
            pct.at(99.0).unwrap(),
            pct.at(100.0).unwrap(),
        );
        assert!(
            p50 > 0.0 && p50 <= p99 && p99 <= max,
            "{s}: {p50} {p99} {max}"
        );
        assert_eq!(report.value(s, "p99_ms"), Some(p99));
    }
    assert!(report.notes.iter().any(|n| n.contains("byte for byte")));
    let ChartKind::Bars { bars } = &report.charts[0].kind else {
        panic!("bars expected")
    };
    assert_eq!(bars.len(), measured.len());
}
