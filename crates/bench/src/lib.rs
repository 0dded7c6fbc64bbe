//! tiercache-bench: compares tiercache's memory tier (`tiercache-cache`) with
//! peer in-process caches (moka, quick_cache, foyer). The peers are
//! dev-dependencies only and never part of the product; this library is empty
//! on purpose, the work is in `benches/`:
//!
//! - `replay` (`cargo bench -p tiercache-bench --bench replay`): hit ratio and
//!   single-thread throughput over real (cache2k `web07`, `web12`) and
//!   synthetic traces from `tiercache-lab`, at several capacities.
//!   `REPLAY_FILTER=substring` limits the workloads, `REPLAY_ONLY_PEERS=1`
//!   skips tiercache, `REPLAY_ONLY_OURS=1` skips the peers. Full results go to
//!   `target/replay-results.json`.
//! - `throughput` (criterion): get-hit and insert throughput on 1 and 2
//!   threads over a pre-filled cache.
//! - `memory`: live heap bytes per entry at 1M `u64 → u64` entries, measured
//!   by a counting global allocator.
