//! `tiercache bench trace`: JSON shape and values on tiny traces, both
//! formats, and exit code 2 with a message on stderr for bad input.

use std::path::{Path, PathBuf};
use std::process::Command;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn tiercache(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_tiercache"))
        .args(args)
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn cache2k(dir: &Path, name: &str, keys: &[u32]) -> PathBuf {
    let path = dir.join(name);
    let bytes: Vec<u8> = keys.iter().flat_map(|k| k.to_be_bytes()).collect();
    std::fs::write(&path, bytes).unwrap();
    path
}

fn bench_trace(path: &Path, format: &str, capacity: &str, json: bool) -> Run {
    let mut args = vec![
        "bench",
        "trace",
        "--trace",
        path.to_str().unwrap(),
        "--format",
        format,
        "--capacity",
        capacity,
    ];
    if json {
        args.push("--json");
    }
    tiercache(&args)
}

/// Parses stdout as the JSON array and returns (capacity, hit_ratio, ops_per_sec) rows.
fn rows(run: &Run) -> Vec<(u64, f64, f64)> {
    let value: serde_json::Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {:?}", run.stdout));
    let array = value.as_array().expect("a JSON array");
    array
        .iter()
        .map(|row| {
            let obj = row.as_object().expect("an object per capacity");
            assert_eq!(obj.len(), 3, "exactly three fields: {row}");
            (
                obj["capacity"].as_u64().expect("integer capacity"),
                obj["hit_ratio"].as_f64().expect("numeric hit_ratio"),
                obj["ops_per_sec"].as_f64().expect("numeric ops_per_sec"),
            )
        })
        .collect()
}

#[test]
fn json_reports_hit_ratio_per_capacity() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache2k(dir.path(), "tiny.trace", &[1, 2, 1, 2, 3]);
    let run = bench_trace(&path, "cache2k", "10", true);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let rows = rows(&run);
    assert_eq!(rows.len(), 1);
    let (capacity, hit_ratio, ops) = rows[0];
    assert_eq!(capacity, 10);
    assert_eq!(hit_ratio, 0.4);
    assert!(ops > 0.0, "{ops}");
}

#[test]
fn json_has_one_row_per_capacity_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let keys: Vec<u32> = (0..1000).map(|i| i % 50).collect();
    let path = cache2k(dir.path(), "loop.trace", &keys);
    let run = bench_trace(&path, "cache2k", "100,1000,64", true);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let rows = rows(&run);
    let capacities: Vec<u64> = rows.iter().map(|r| r.0).collect();
    assert_eq!(capacities, [100, 1000, 64]);
    // Every capacity holds the whole 50-key loop: only the first pass misses.
    for (_, hit_ratio, _) in rows {
        assert_eq!(hit_ratio, 0.95);
    }
}

#[test]
fn arc_format_and_human_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.lis");
    // Keys 1 2 | 1 2 | 3: the same sequence as above, as ARC runs.
    std::fs::write(&path, "1 2 0 0\n1 2\n3 1\n").unwrap();
    let run = bench_trace(&path, "arc", "10", true);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(rows(&run)[0].1, 0.4);

    let run = bench_trace(&path, "arc", "10,20", false);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("5 requests") && run.stdout.contains("hit ratio"),
        "{}",
        run.stdout
    );
    assert_eq!(run.stdout.matches("40.00%").count(), 2, "{}", run.stdout);
}

#[test]
fn missing_file_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.trace");
    let run = bench_trace(&path, "cache2k", "10", true);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("absent.trace"), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}

#[test]
fn bad_format_name_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache2k(dir.path(), "t.trace", &[1]);
    let run = bench_trace(&path, "lirs", "10", true);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("lirs"), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}

#[test]
fn bad_traces_exit_2_with_location() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("odd.trace");
    std::fs::write(&path, [0, 0, 0, 1, 0, 0]).unwrap();
    let run = bench_trace(&path, "cache2k", "10", true);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("odd.trace") && run.stderr.contains("offset 4"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);

    let path = dir.path().join("bad.lis");
    std::fs::write(&path, "1 2\nnot a line\n").unwrap();
    let run = bench_trace(&path, "arc", "10", false);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("bad.lis:2:") && run.stderr.contains("not a line"),
        "{}",
        run.stderr
    );
}

#[test]
fn capacity_must_be_positive() {
    let dir = tempfile::tempdir().unwrap();
    let path = cache2k(dir.path(), "t.trace", &[1]);
    let run = bench_trace(&path, "cache2k", "10,0", true);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}
