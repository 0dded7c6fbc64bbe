//! The `stations` scenario end to end (one round of 100 warm liveboards per
//! setup): a row of every metric for every setup, the verification note,
//! the chart and sane percentiles.

use std::path::PathBuf;
use tiercache_lab::{ChartKind, Ctx, LabOptions};

#[test]
fn stations_scenario_measures_and_verifies_every_setup() {
    let data_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data");
    let mut ctx = Ctx::new(LabOptions {
        quick: true,
        require: tiercache_testkit::backends_required(),
        data_dir,
        progress: false,
    })
    .unwrap();
    let report = tiercache_lab::scenarios::stations::run_with(&mut ctx, 1, 100).unwrap();
    ctx.stop_servers();

    for k in &report.skipped {
        assert!(
            !tiercache_testkit::backends_required(),
            "setup {} skipped with TIERCACHE_REQUIRE_BACKENDS=1: {}",
            k.setup,
            k.reason
        );
        eprintln!("SKIPPED: stations/{}: {}", k.setup, k.reason);
    }
    assert_eq!(report.baseline.as_deref(), Some("csv-scan"));
    let all = [
        "csv-scan",
        "sqlite",
        "mysql",
        "redis",
        "memcached",
        "tiercache",
    ];
    for setup in all {
        if report.skipped.iter().any(|k| k.setup == setup) {
            continue;
        }
        for metric in ["single_ms", "avg100_ms", "avg500_ms", "liveboard_p50"] {
            let v = report
                .value(setup, metric)
                .unwrap_or_else(|| panic!("no {metric} for {setup}"));
            assert!(v > 0.0 && v.is_finite(), "{setup} {metric} = {v}");
        }
        let p = report
            .percentiles
            .iter()
            .find(|p| p.setup == setup)
            .unwrap_or_else(|| panic!("no percentiles for {setup}"));
        assert_eq!(p.samples, 100, "{setup}");
        let (p50, p99, max) = (
            p.at(50.0).unwrap(),
            p.at(99.0).unwrap(),
            p.at(100.0).unwrap(),
        );
        assert!(p50 > 0.0 && p50 <= p99 && p99 <= max, "{setup}: {p:?}");
    }
    // These never need a server.
    for setup in ["csv-scan", "sqlite", "tiercache"] {
        assert!(report.value(setup, "avg100_ms").is_some(), "{setup}");
    }
    // A warm memory-tier hit beats scanning 700 stations per lookup.
    assert!(
        report.value("tiercache", "liveboard_p50").unwrap()
            < report.value("csv-scan", "liveboard_p50").unwrap()
    );
    assert!(
        report.notes.iter().any(|n| n.starts_with("verified:")),
        "{:?}",
        report.notes
    );
    assert!(
        report.notes.iter().any(|n| n.contains("bar ")),
        "{:?}",
        report.notes
    );
    match &report.charts[..] {
        [chart] => match &chart.kind {
            ChartKind::Bars { bars } => {
                assert_eq!(bars.len(), all.len() - report.skipped.len());
                assert!(bars.iter().all(|(_, v)| *v > 0.0));
            }
            other => panic!("expected bars, got {other:?}"),
        },
        charts => panic!("expected one chart, got {}", charts.len()),
    }
    assert_eq!(report.parameters["lookups_per_liveboard"], 50);
}
