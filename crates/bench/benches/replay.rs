//! Hit ratio and single-thread throughput of tiercache's cache and its peers,
//! replaying real and synthetic traces.
//!
//! `cargo bench -p tiercache-bench --bench replay`
//!
//! Environment: `REPLAY_FILTER=substring` keeps only the workloads whose name
//! contains it; `REPLAY_ONLY_PEERS=1` skips tiercache; `REPLAY_ONLY_OURS=1`
//! skips the peers; `REPLAY_MOKA_LAZY=1` replays moka without forcing its
//! pending maintenance (see [`Moka`]), to show how much that inflates its hit
//! ratios; `REPLAY_REPEAT=n` (default 3) measures throughput as the best of
//! n replays for every cache that replays at least 5M requests/s (all but
//! moka), hit ratios from the first; `REPLAY_SEED=n` fixes tiercache's hash seed (random by default),
//! so that two builds can be compared point by point. Full results are written to `target/replay-results.json`
//! (`$CARGO_TARGET_DIR` if set): `[{workload, capacity, cache, hit_ratio, ops_per_sec}]`.
//!
//! Workloads (all synthetic ones from `tiercache_lab::workload`, fixed seeds):
//!
//! - `web07`, `web12`: cache2k traces from `../shared/data/traces` (skipped
//!   loudly if absent). Capacities 100 to 10,000 entries, as in cache2k's own
//!   reports (their footprints are 20,484 and 13,756 keys).
//! - `zipf-{0.7,0.99,1.2}`: 100k items, 1M requests.
//! - `zipf-0.99+scan`: the same, with a 10k-key scan of fresh keys after every
//!   50k Zipf requests (~17% of the requests are scan keys, each seen once).
//! - `loop`: 100k keys cycled 10 times (1M requests).
//! - `shifting-zipf-0.99`: 100k items, 1M requests, hot set re-mapped every 100k.
//! - `recency`: 1M requests, 5% new keys, mean LRU stack distance 1,000.
//!
//! Synthetic capacities are 0.1%, 0.5%, 1%, 5%, 10% and 25% of the workload's
//! footprint: its distinct keys, except for `zipf-0.99+scan` where the scan keys
//! (requested once, uncacheable by definition) are left out and the footprint
//! is the Zipf part's distinct keys.
//!
//! Every cache is bounded by entry count (weight 1) and gets its best shot at
//! hit ratio in a single-threaded replay: one shard wherever the shard count
//! can be chosen (tiercache, quick_cache sync, foyer), so the policy sees the
//! whole capacity rather than a hash-partitioned slice. Each replay is `get`,
//! then `insert` on a miss, on a fresh cache.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use tiercache_lab::workload;
use tiercache_lab::{load_trace, TraceFormat};

#[path = "replay/caches.rs"]
mod caches;

struct Workload {
    name: String,
    keys: Vec<u64>,
    capacities: Vec<u64>,
}

const SYNTHETIC_FRACTIONS: [f64; 6] = [0.001, 0.005, 0.01, 0.05, 0.10, 0.25];
const ITEMS: u64 = 100_000;
const REQUESTS: usize = 1_000_000;

fn synthetic(trace: tiercache_lab::Trace, footprint: usize) -> Workload {
    let capacities = SYNTHETIC_FRACTIONS
        .iter()
        .map(|f| ((footprint as f64 * f).round() as u64).max(1))
        .collect();
    Workload {
        name: trace.name,
        keys: trace.keys,
        capacities,
    }
}

fn footprint(keys: &[u64], keep: impl Fn(u64) -> bool) -> usize {
    keys.iter()
        .copied()
        .filter(|k| keep(*k))
        .collect::<HashSet<_>>()
        .len()
}

/// Builds a workload, or `None` if its input is missing.
type Build = Box<dyn Fn() -> Option<Workload>>;

/// Workload names and generators, so that filtered-out ones are never built.
fn workloads(traces: &Path) -> Vec<(String, Build)> {
    let mut out: Vec<(String, Build)> = Vec::new();
    for web in ["web07", "web12"] {
        let path = traces.join(format!("{web}.trace.xz"));
        out.push((
            web.into(),
            Box::new(move || {
                if !path.exists() {
                    eprintln!(
                        "\n!!!!! SKIPPED {web}: {} not found !!!!!\n",
                        path.display()
                    );
                    return None;
                }
                let trace = load_trace(&path, TraceFormat::Cache2k)
                    .unwrap_or_else(|e| panic!("cannot load {web}: {e}"));
                Some(Workload {
                    name: trace.name,
                    keys: trace.keys,
                    capacities: vec![100, 250, 500, 1000, 2500, 5000, 10000],
                })
            }),
        ));
    }
    for s in [0.7, 0.99, 1.2] {
        out.push((
            format!("zipf-{s}"),
            Box::new(move || {
                let t = workload::zipf(ITEMS, s, REQUESTS, 1);
                let fp = footprint(&t.keys, |_| true);
                Some(synthetic(t, fp))
            }),
        ));
    }
    out.push((
        "zipf-0.99+scan".into(),
        Box::new(|| {
            let t = workload::zipf_with_scans(ITEMS, 0.99, REQUESTS, 50_000, 10_000, 2);
            let fp = footprint(&t.keys, |k| k < ITEMS);
            Some(synthetic(t, fp))
        }),
    ));
    out.push((
        "loop".into(),
        Box::new(|| {
            Some(synthetic(
                workload::loop_trace(ITEMS, REQUESTS),
                ITEMS as usize,
            ))
        }),
    ));
    out.push((
        "shifting-zipf-0.99".into(),
        Box::new(|| {
            let t = workload::shifting_zipf(ITEMS, 0.99, REQUESTS, 100_000, 3);
            let fp = footprint(&t.keys, |_| true);
            Some(synthetic(t, fp))
        }),
    ));
    out.push((
        "recency".into(),
        Box::new(|| {
            let t = workload::recency(REQUESTS, 0.05, 1000.0, 4);
            let fp = footprint(&t.keys, |_| true);
            Some(synthetic(t, fp))
        }),
    ));
    out
}

/// One measured cell: hit ratio in [0, 1] and operations per second.
#[derive(Clone, Copy)]
struct Cell {
    hit_ratio: f64,
    ops: f64,
}

fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| !v.is_empty() && v != "0")
}

fn workspace_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// Caches replaying at least this many requests per second are measured
/// best-of-`REPLAY_REPEAT` (all but moka, whose replays take seconds). Best
/// of n on fresh caches is the figure least disturbed by other load; every
/// cache gets the same rule, so same-run ratios stay fair.
const FAST_OPS: f64 = 5e6;

fn main() {
    let filter = std::env::var("REPLAY_FILTER").unwrap_or_default();
    let repeat: usize = std::env::var("REPLAY_REPEAT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
        .max(1);
    let (only_peers, only_ours) = (env_flag("REPLAY_ONLY_PEERS"), env_flag("REPLAY_ONLY_OURS"));
    let caches = caches::caches(!only_peers, !only_ours, env_flag("REPLAY_MOKA_LAZY"));
    let traces = workspace_root().join("../shared/data/traces");
    let mut json = Vec::new();

    println!("cells: hit ratio % / Mops/s; * = best peer (hit ratio); single thread, one shard, weight 1");
    println!("Δ pts: tiercache minus best peer, hit-ratio points; ×qc-*: tiercache ops/s ÷ quick_cache's");
    for (name, build) in workloads(&traces) {
        if !name.contains(&filter) {
            continue;
        }
        let Some(w) = build() else { continue };
        println!(
            "\n== {} ({} requests, {} distinct keys) ==",
            w.name,
            w.keys.len(),
            footprint(&w.keys, |_| true)
        );
        let mut header = format!("{:>8}", "capacity");
        for (label, _) in &caches {
            header += &format!(" | {label:>15}");
        }
        if !only_peers && !only_ours {
            header += " | best peer     | Δ pts  | ×qc-sync | ×qc-unsync";
        }
        println!("{header}");
        for &capacity in &w.capacities {
            let mut cells = Vec::new();
            for (label, run) in &caches {
                let (r, resident) = run(&w.keys, capacity);
                if resident > capacity {
                    eprintln!(
                        "WARNING: {label} holds {resident} > capacity {capacity} after {}",
                        w.name
                    );
                }
                cells.push((
                    *label,
                    Cell {
                        hit_ratio: r.hit_ratio(),
                        ops: r.ops_per_sec(),
                    },
                ));
            }
            // Throughput: the fast caches replay again, round-robin, so that
            // each is measured across the same stretch of time (this
            // machine's speed drifts by ±30% from second to second).
            for _ in 1..repeat {
                for ((_, run), (_, cell)) in caches.iter().zip(cells.iter_mut()) {
                    if cell.ops >= FAST_OPS {
                        cell.ops = cell.ops.max(run(&w.keys, capacity).0.ops_per_sec());
                    }
                }
            }
            for (label, cell) in &cells {
                json.push(serde_json::json!({
                    "workload": w.name, "capacity": capacity, "cache": label,
                    "hit_ratio": cell.hit_ratio, "ops_per_sec": cell.ops,
                }));
            }
            print_row(capacity, &cells, !only_peers && !only_ours);
        }
    }

    let path = target_dir().join("replay-results.json");
    let text = serde_json::to_string_pretty(&serde_json::Value::Array(json)).expect("JSON");
    match std::fs::write(&path, text) {
        Ok(()) => println!("\nresults: {}", path.display()),
        Err(e) => eprintln!("cannot write {}: {e}", path.display()),
    }
}

fn print_row(capacity: u64, cells: &[(&str, Cell)], compare: bool) {
    // The first peer with the highest hit ratio; every peer tied with it gets a `*`.
    let best =
        cells
            .iter()
            .filter(|(l, _)| *l != "tiercache")
            .fold(None::<&(&str, Cell)>, |best, x| match best {
                Some(b) if b.1.hit_ratio >= x.1.hit_ratio => Some(b),
                _ => Some(x),
            });
    let mut row = format!("{capacity:>8}");
    for (label, c) in cells {
        let mark = if *label != "tiercache" && best.is_some_and(|b| b.1.hit_ratio == c.hit_ratio) {
            '*'
        } else {
            ' '
        };
        row += &format!(" | {:>6.2}{mark}{:>7.2}", c.hit_ratio * 100.0, c.ops / 1e6);
    }
    if compare {
        let get = |name: &str| cells.iter().find(|(l, _)| *l == name).map(|x| x.1);
        let (best_label, best) = *best.expect("peers ran");
        let ours = get("tiercache").expect("ours ran");
        let (qs, qu) = (get("qc-sync").expect("qc"), get("qc-unsync").expect("qc"));
        row += &format!(
            " | {best_label:<13} | {:>+6.2} | {:>8.2} | {:>10.2}",
            (ours.hit_ratio - best.hit_ratio) * 100.0,
            ours.ops / qs.ops,
            ours.ops / qu.ops
        );
    }
    println!("{row}");
}
