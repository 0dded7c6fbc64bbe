//! The `batch` scenario end to end with a small plan: every method of every
//! database measured at every size (verified inside the scenario), one
//! line chart per database with a line per method.

use std::path::PathBuf;
use tiercache_lab::scenarios::batch::{run_plan, Plan};
use tiercache_lab::{ChartKind, Ctx, LabOptions};

#[test]
fn batch_scenario_measures_every_method_on_every_database() {
    let data_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data");
    let mut ctx = Ctx::new(LabOptions {
        quick: true,
        require: tiercache_testkit::backends_required(),
        data_dir,
        progress: false,
    })
    .unwrap();
    let plan = Plan {
        rows: 5_000,
        sizes: vec![1, 10, 100, 1000],
        reps: [3, 2, 1],
        budget_ms: 60_000.0,
    };
    let report = run_plan(&mut ctx, &plan).unwrap();
    ctx.stop_servers();

    for k in &report.skipped {
        assert!(
            !tiercache_testkit::backends_required(),
            "setup {} skipped with TIERCACHE_REQUIRE_BACKENDS=1: {}",
            k.setup,
            k.reason
        );
        eprintln!("SKIPPED: batch/{}: {}", k.setup, k.reason);
    }
    let methods = ["single", "or", "in", "temp", "temp-rows"];
    let mut dbs_run = 0;
    for db in ["mariadb", "postgres", "sqlite"] {
        let mut all = methods.to_vec();
        if db == "postgres" {
            all.push("any");
        }
        if report.skipped.iter().any(|k| k.setup.starts_with(db)) {
            assert_ne!(db, "sqlite", "sqlite needs no server");
            continue;
        }
        dbs_run += 1;
        for m in &all {
            for n in &plan.sizes {
                let v = report
                    .value(&format!("{db}/{m}"), &format!("ms_{n}"))
                    .unwrap_or_else(|| panic!("no ms_{n} for {db}/{m}"));
                assert!(v > 0.0 && v.is_finite(), "{db}/{m} ms_{n} = {v}");
            }
        }
        let chart = report
            .charts
            .iter()
            .find(|c| c.title.starts_with(db))
            .unwrap_or_else(|| panic!("no chart for {db}"));
        match &chart.kind {
            ChartKind::Lines {
                series,
                x_log,
                y_log,
                ..
            } => {
                assert!(*x_log && *y_log);
                assert_eq!(series.len(), all.len(), "{db}");
                assert!(series.iter().all(|(_, pts)| pts.len() == plan.sizes.len()));
            }
            other => panic!("expected lines, got {other:?}"),
        }
        // One query for 1000 keys beats 1000 round trips.
        let at = |m: &str| report.value(&format!("{db}/{m}"), "ms_1000").unwrap();
        assert!(
            at("in") < at("single"),
            "{db}: in {} single {}",
            at("in"),
            at("single")
        );
    }
    assert_eq!(report.charts.len(), dbs_run);
    assert!(report.notes.iter().any(|n| n.contains("verified")));
    assert_eq!(report.parameters["rows"], 5_000);
}
