//! `tiercache bench` (the lab) through the binary: argument errors, a
//! scenario whose peer servers are not installed (`not installed` rows, or a
//! failure under `--require`), and the two output files.
//!
//! The scenarios' own measurements and verifications are tested in
//! `crates/lab/tests`; here `stations` is run (the quickest) with `PATH`
//! emptied, so redis-server, memcached and the MariaDB client cannot be
//! found whatever is installed.

use std::path::{Path, PathBuf};
use std::process::Command;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn tiercache(args: &[&str], path_env: Option<&Path>) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tiercache"));
    cmd.args(args);
    if let Some(p) = path_env {
        cmd.env("PATH", p);
    }
    let out = cmd.output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data")
}

#[test]
fn unknown_scenarios_are_refused_with_the_list_of_names() {
    let run = tiercache(&["bench", "stores", "disk"], None);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("unknown scenario `disk`"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("stores, stations, pages, microcache, sharding, batch"),
        "{}",
        run.stderr
    );
}

#[test]
fn missing_servers_show_as_not_installed_and_fail_only_under_require() {
    let empty = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let data = data_dir();
    let args = |dir: &Path, require: bool| {
        let mut a = vec![
            "bench".to_string(),
            "stations".into(),
            "--quick".into(),
            "--data".into(),
            data.to_str().unwrap().into(),
            "--out".into(),
            dir.to_str().unwrap().into(),
        ];
        if require {
            a.push("--require".into());
        }
        a
    };

    // Without --require: exit 0, the missing setups listed with the reason.
    let dir = out.path().join("plain");
    let a = args(&dir, false);
    let run = tiercache(
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
        Some(empty.path()),
    );
    assert_eq!(
        run.code, 0,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    assert!(run.stdout.contains("% of csv-scan"), "{}", run.stdout);
    assert!(
        run.stdout.contains("not installed (redis-server)"),
        "{}",
        run.stdout
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    let scenarios = json["scenarios"].as_array().unwrap();
    assert_eq!(scenarios.len(), 1);
    let stations = &scenarios[0];
    assert_eq!(stations["name"], "stations");
    let skipped: Vec<&str> = stations["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["setup"].as_str().unwrap())
        .collect();
    for setup in ["redis", "memcached", "mysql"] {
        assert!(skipped.contains(&setup), "{setup} not skipped: {skipped:?}");
    }
    let rows = stations["rows"].as_array().unwrap();
    for setup in ["csv-scan", "sqlite", "tiercache"] {
        let p50 = rows
            .iter()
            .find(|r| r["setup"] == setup && r["metric"] == "liveboard_p50")
            .unwrap_or_else(|| panic!("no liveboard_p50 row for {setup}: {rows:?}"));
        assert_eq!(p50["unit"], "ms");
        assert!(p50["value"].as_f64().unwrap() > 0.0, "{p50}");
    }
    assert!(
        json["machine"]["cpus"].as_u64().unwrap() >= 1,
        "{}",
        json["machine"]
    );
    assert!(
        json["versions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v[0] == "tiercache"),
        "{}",
        json["versions"]
    );
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.starts_with("<!DOCTYPE html>"),
        "{}",
        &html[..100.min(html.len())]
    );
    assert!(html.contains("<svg"), "no chart in the report");
    assert!(html.contains("not installed (redis-server)"));
    assert!(
        !html.contains("<script"),
        "the report must be self-contained, no scripts"
    );

    // With --require: the same run fails and names what was missing.
    let dir = out.path().join("require");
    let a = args(&dir, true);
    let run = tiercache(
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
        Some(empty.path()),
    );
    assert_eq!(
        run.code, 1,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    assert!(run.stderr.contains("--require"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("stations/redis: not installed (redis-server)"),
        "{}",
        run.stderr
    );
}
