//! The `stores` scenario end to end on a small job: every setup has a
//! positive time, a latency distribution over every profile, the checks
//! ran, the bar is reported and the chart is there.

use tiercache_lab::scenarios::stores::{self, JobParams};
use tiercache_lab::{ChartKind, Ctx, LabOptions};

#[test]
fn every_store_runs_the_job_directly_and_behind_the_ram_tier() {
    let mut ctx = Ctx::new(LabOptions {
        quick: true,
        require: false,
        data_dir: concat!(env!("CARGO_MANIFEST_DIR"), "/../../data").into(),
        progress: false,
    })
    .unwrap();
    let p = JobParams {
        profiles: 300,
        ..stores::params(true)
    };
    let p = JobParams {
        pages: 5 * 300,
        ..p
    };
    let report = stores::run_with(&mut ctx, &p).unwrap();
    ctx.stop_servers();
    for s in &report.skipped {
        if tiercache_testkit::backends_required() {
            panic!("setup {} was skipped: {}", s.setup, s.reason);
        }
        eprintln!("SKIPPED stores/{}: {}", s.setup, s.reason);
    }
    let backends = [
        "null",
        "memory",
        "sqlite",
        "redis-tcp",
        "redis-unix",
        "memcached",
        "postgres",
        "mysql",
    ];
    let mut expected = 0;
    for b in backends {
        for setup in [b.to_string(), format!("{b}+ram")] {
            if report.skipped.iter().any(|s| s.setup == setup) {
                continue;
            }
            expected += 1;
            let secs = report
                .value(&setup, "seconds")
                .unwrap_or_else(|| panic!("no row for {setup}"));
            assert!(secs > 0.0, "{setup}: {secs}");
            let lat = report
                .percentiles
                .iter()
                .find(|p| p.setup == setup)
                .unwrap();
            assert_eq!(lat.samples, 300, "{setup}: one latency sample per profile");
            let (p50, max) = (lat.at(50.0).unwrap(), lat.at(100.0).unwrap());
            assert!(p50 > 0.0 && p50 <= max, "{setup}: p50 {p50} max {max}");
            assert!(
                max <= secs * 1000.0 + 1.0,
                "{setup}: one profile cannot take longer than the pass"
            );
        }
    }
    assert_eq!(report.rows.len(), expected);
    assert!(expected >= 6, "null, memory and sqlite need no server");
    assert_eq!(report.baseline.as_deref(), Some("null+ram"));
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("matched the plain-Rust reference")),
        "{:?}",
        report.notes
    );
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.starts_with("bar: redis-tcp+ram / null")),
        "{:?}",
        report.notes
    );
    match &report.charts[0].kind {
        ChartKind::Bars { bars } => assert_eq!(bars.len(), expected),
        other => panic!("expected bars, got {other:?}"),
    }
    assert_eq!(report.parameters["profiles"], 300);
}
