//! tiercache's benchmark lab: `tiercache bench`'s six scenarios, each
//! reproducing one seed document's comparison on the user's machine, plus
//! trace formats, synthetic workloads and the replay harness; not a cache,
//! not a server.
//!
//! - [`run_lab`]: runs scenarios ([`Scenario`]) with a [`Ctx`] that starts
//!   the peer servers they need, and writes `results.json` and
//!   `report.html` ([`report`]).
//! - [`scenarios`]: one module per scenario, each producing a
//!   [`ScenarioReport`] of `{setup, metric, unit, value}` [`Row`]s.
//! - [`trace`]: [`Trace`] and [`load_trace`], which reads the cache2k binary
//!   format and the ARC text format, `.xz`-compressed or not.
//! - [`workload`]: deterministic (seeded) synthetic traces, each built to
//!   reward or punish one property of an eviction policy.
//! - [`replay`](mod@replay): the [`ReplayCache`] adapter trait, [`replay`](fn@replay) which
//!   runs a trace through a cache and times it, and [`TierCache`], the adapter
//!   for tiercache's own in-process cache (`tiercache-cache`).
//!
//! Peer caches (moka, quick_cache, foyer) are never dependencies of this
//! crate: their adapters live in the `tiercache-bench` crate's benches.
//!
//! ```
//! use tiercache_lab::{replay, workload, TierCache};
//!
//! let trace = workload::loop_trace(10, 100);
//! // A cache as large as the loop: only the first pass misses.
//! let result = replay(&mut TierCache::new(10), &trace.keys, 10);
//! assert_eq!(result.requests, 100);
//! assert_eq!(result.hits, 90);
//! assert!((result.hit_ratio() - 0.9).abs() < 1e-12);
//! ```

pub mod context;
pub mod replay;
pub mod report;
pub mod run;
pub mod scenario;
pub mod scenarios;
pub mod trace;
pub mod workload;

pub use context::{Ctx, LabOptions, Unavailable};
pub use replay::{replay, ReplayCache, ReplayResult, TierCache};
pub use run::{run_lab, LabError, LabResults};
pub use scenario::{Chart, ChartKind, Percentiles, Row, Scenario, ScenarioReport, Skipped};
pub use trace::{load_trace, Trace, TraceError, TraceFormat};
