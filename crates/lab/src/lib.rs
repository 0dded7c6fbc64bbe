//! tiercache's benchmark lab: trace formats, synthetic workloads, replay
//! harness; not a cache, not a server.
//!
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

pub mod replay;
pub mod trace;
pub mod workload;

pub use replay::{replay, ReplayCache, ReplayResult, TierCache};
pub use trace::{load_trace, Trace, TraceError, TraceFormat};
