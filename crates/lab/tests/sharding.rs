//! The `sharding` scenario end to end on a small grid: a checked rate for
//! every buckets × clients cell, latency percentiles over every request,
//! and one chart line per client count.

use tiercache_lab::scenarios::sharding::{self, ShardingParams};
use tiercache_lab::{ChartKind, Ctx, LabOptions};

#[test]
fn every_cell_of_the_grid_has_a_checked_rate() {
    let mut ctx = Ctx::new(LabOptions {
        quick: true,
        require: false,
        data_dir: concat!(env!("CARGO_MANIFEST_DIR"), "/../../data").into(),
        progress: false,
    })
    .unwrap();
    let p = ShardingParams {
        groups: 6,
        per_group: 200,
        requests: 90,
        fetch: 20,
        buckets: vec![1, 3],
        clients: vec![1, 4],
        seed: 9,
    };
    let report = sharding::run_with(&mut ctx, &p).unwrap();
    assert!(report.skipped.is_empty(), "SQLite needs no server");
    assert_eq!(report.rows.len(), 4);
    for setup in ["b1-c1", "b1-c4", "b3-c1", "b3-c4"] {
        let rate = report
            .value(setup, "req_per_sec")
            .unwrap_or_else(|| panic!("no {setup}"));
        assert!(rate > 0.0, "{setup}: {rate}");
        let lat = report
            .percentiles
            .iter()
            .find(|p| p.setup == setup)
            .unwrap();
        assert_eq!(lat.samples, 90, "{setup}: every request timed");
        assert!(lat.at(50.0).unwrap() <= lat.at(99.0).unwrap());
    }
    match &report.charts[0].kind {
        ChartKind::Lines {
            x_label, series, ..
        } => {
            assert_eq!(x_label, "buckets");
            assert_eq!(series.len(), 2);
            assert_eq!(series[0].0, "1 client");
            assert_eq!(
                series[1].1.iter().map(|(x, _)| *x).collect::<Vec<_>>(),
                vec![1.0, 3.0]
            );
        }
        other => panic!("expected lines, got {other:?}"),
    }
    assert!(report
        .notes
        .iter()
        .any(|n| n.contains("every scan returned exactly")));
    assert!(report.notes.iter().any(|n| n.contains("peak")));
    assert_eq!(report.baseline.as_deref(), Some("b1-c1"));
}
