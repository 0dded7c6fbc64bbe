//! Replays one workload through one cache, for instruction counting under
//! valgrind (wall-clock on a shared machine is noise):
//!
//! ```sh
//! cargo build --release -p tiercache-bench --example replay_one
//! valgrind --tool=cachegrind --cache-sim=no \
//!     target/release/examples/replay_one ours zipf-0.99 4099
//! valgrind --tool=cachegrind --cache-sim=no \
//!     target/release/examples/replay_one none zipf-0.99 4099
//! ```
//!
//! `none` builds the workload and replays nothing: subtract its count to get
//! the replay's own instructions. Caches: `ours` (tiercache, one shard),
//! `qc` (quick_cache sync, one shard), `none`. Workloads: `zipf-0.7`,
//! `zipf-0.99`, `zipf-1.2`, `loop`, `shifting-zipf-0.99`, `recency`,
//! `zipf-0.99+scan`, as in the replay bench (same seeds), and the cache2k
//! traces `web07`, `web12` from `../shared/data/traces`. Prints the hit
//! ratio and the requests replayed.

// The same adapters the replay bench measures, so counts here are the
// bench's own caches.
#[path = "../benches/replay/caches.rs"]
mod caches;

use tiercache_lab::workload;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: replay_one ours|qc|none WORKLOAD CAPACITY");
        std::process::exit(2);
    }
    let (which, name) = (args[1].as_str(), args[2].as_str());
    let capacity: u64 = args[3].parse().expect("capacity is a number");
    const ITEMS: u64 = 100_000;
    const REQUESTS: usize = 1_000_000;
    let trace = match name {
        "zipf-0.7" => workload::zipf(ITEMS, 0.7, REQUESTS, 1),
        "zipf-0.99" => workload::zipf(ITEMS, 0.99, REQUESTS, 1),
        "zipf-1.2" => workload::zipf(ITEMS, 1.2, REQUESTS, 1),
        "zipf-0.99+scan" => workload::zipf_with_scans(ITEMS, 0.99, REQUESTS, 50_000, 10_000, 2),
        "loop" => workload::loop_trace(ITEMS, REQUESTS),
        "shifting-zipf-0.99" => workload::shifting_zipf(ITEMS, 0.99, REQUESTS, 100_000, 3),
        "recency" => workload::recency(REQUESTS, 0.05, 1000.0, 4),
        "web07" | "web12" => {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join(format!("../../../shared/data/traces/{name}.trace.xz"));
            tiercache_lab::load_trace(&path, tiercache_lab::TraceFormat::Cache2k)
                .unwrap_or_else(|e| panic!("cannot load {}: {e}", path.display()))
        }
        other => panic!("unknown workload {other}"),
    };
    // A fixed hash seed by default: the same run gives the same count.
    if std::env::var_os("REPLAY_SEED").is_none() {
        std::env::set_var("REPLAY_SEED", "1");
    }
    if which == "none" {
        println!("requests {} (not replayed)", trace.keys.len());
        return;
    }
    // `REPEAT=n`: replay n times on fresh caches and report the fastest
    // (best-of-n is the least disturbed by other load on the machine).
    let repeat: usize = std::env::var("REPEAT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let mut best = 0.0f64;
    for _ in 1..repeat {
        best = best.max(run(which, &trace.keys, capacity).ops_per_sec());
    }
    let r = run(which, &trace.keys, capacity);
    best = best.max(r.ops_per_sec());
    println!(
        "{which} {name} {capacity}: hit ratio {:.4}%, {} requests, best {:.2} Mops/s",
        r.hit_ratio() * 100.0,
        r.requests,
        best / 1e6
    );
}

fn run(which: &str, keys: &[u64], capacity: u64) -> tiercache_lab::ReplayResult {
    let label = match which {
        "ours" => "tiercache",
        "qc" => "qc-sync",
        other => panic!("unknown cache {other}"),
    };
    let (_, runner) = caches::caches(true, true, false)
        .into_iter()
        .find(|(l, _)| *l == label)
        .expect("the bench has this cache");
    runner(keys, capacity).0
}
