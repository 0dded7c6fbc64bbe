//! The caches the replay bench compares, as [`ReplayCache`] adapters: `get`,
//! then `insert` on a miss, weight 1, one shard where the crate lets us
//! choose, so the policy sees the whole capacity.

use tiercache_lab::{replay, ReplayCache, ReplayResult, TierCache};

/// A [`ReplayCache`] that can say how many entries it holds, so each replay
/// checks that the bound was respected.
trait Bounded: ReplayCache {
    fn resident(&mut self) -> u64;
}

impl Bounded for TierCache {
    fn resident(&mut self) -> u64 {
        self.0.len() as u64
    }
}

/// moka's sync cache (TinyLFU admission + LRU eviction, its default).
///
/// moka records reads and writes in bounded channels and applies them (the
/// admission decision, the LRU/frequency updates, and eviction down to
/// `max_capacity`) lazily, in "pending maintenance tasks" that run once a
/// channel holds 64 records or 300 ms have passed. Replayed as is, the cache
/// would hold up to ~64 entries more than its capacity between maintenance
/// runs, and admit or reject a key long after its insert, which inflates hit
/// ratios at small capacities. To make the replay faithful we call
/// `run_pending_tasks()` after every insert (i.e. on every miss), as moka's
/// docs advise when exact bookkeeping matters. This costs moka throughput, so
/// its Mops/s here is a lower bound of its lazy mode.
struct Moka(moka::sync::Cache<u64, ()>, bool);

impl Moka {
    /// `lazy`: leave maintenance to moka (the unfaithful mode, for comparison).
    fn new(capacity: u64, lazy: bool) -> Self {
        Moka(
            moka::sync::Cache::builder().max_capacity(capacity).build(),
            lazy,
        )
    }
}

impl ReplayCache for Moka {
    fn name(&self) -> String {
        if self.1 { "moka-lazy" } else { "moka" }.into()
    }
    fn get_or_insert(&mut self, key: u64) -> bool {
        if self.0.get(&key).is_some() {
            return true;
        }
        self.0.insert(key, ());
        if !self.1 {
            self.0.run_pending_tasks();
        }
        false
    }
}

impl Bounded for Moka {
    fn resident(&mut self) -> u64 {
        self.0.run_pending_tasks();
        self.0.entry_count()
    }
}

fn qc_options(capacity: u64) -> quick_cache::Options {
    quick_cache::OptionsBuilder::new()
        .shards(1)
        .estimated_items_capacity(capacity as usize)
        .weight_capacity(capacity)
        .build()
        .expect("valid quick_cache options")
}

/// quick_cache's thread-safe cache (CLOCK-Pro-like: hot/cold + ghosts), one shard.
struct QcSync(quick_cache::sync::Cache<u64, ()>);

impl QcSync {
    fn new(capacity: u64) -> Self {
        QcSync(quick_cache::sync::Cache::with_options(
            qc_options(capacity),
            quick_cache::UnitWeighter,
            quick_cache::DefaultHashBuilder::default(),
            quick_cache::sync::DefaultLifecycle::default(),
        ))
    }
}

impl ReplayCache for QcSync {
    fn name(&self) -> String {
        "qc-sync".into()
    }
    fn get_or_insert(&mut self, key: u64) -> bool {
        if self.0.get(&key).is_some() {
            return true;
        }
        self.0.insert(key, ());
        false
    }
}

impl Bounded for QcSync {
    fn resident(&mut self) -> u64 {
        self.0.len() as u64
    }
}

/// quick_cache's single-threaded cache (the same policy, no locks).
struct QcUnsync(quick_cache::unsync::Cache<u64, ()>);

impl QcUnsync {
    fn new(capacity: u64) -> Self {
        QcUnsync(quick_cache::unsync::Cache::with_options(
            qc_options(capacity),
            quick_cache::UnitWeighter,
            quick_cache::DefaultHashBuilder::default(),
            quick_cache::unsync::DefaultLifecycle::default(),
        ))
    }
}

impl ReplayCache for QcUnsync {
    fn name(&self) -> String {
        "qc-unsync".into()
    }
    fn get_or_insert(&mut self, key: u64) -> bool {
        if self.0.get(&key).is_some() {
            return true;
        }
        self.0.insert(key, ());
        false
    }
}

impl Bounded for QcUnsync {
    fn resident(&mut self) -> u64 {
        self.0.len() as u64
    }
}

/// foyer's in-memory cache with one of its eviction algorithms, one shard.
/// The `CacheEntry` handles returned by `get`/`insert` are dropped at once
/// (a held handle pins its entry against eviction).
struct Foyer {
    label: &'static str,
    cache: foyer_memory::Cache<u64, ()>,
}

impl Foyer {
    /// Each of foyer's eviction configs, with foyer's own default parameters
    /// (LFU is W-TinyLFU: 10% window, 80% protected, count-min sketch).
    fn new(label: &'static str, capacity: u64) -> Self {
        use foyer_memory::{
            EvictionConfig, FifoConfig, LfuConfig, LruConfig, S3FifoConfig, SieveConfig,
        };
        let config: EvictionConfig = match label {
            "foyer-lru" => LruConfig::default().into(),
            "foyer-lfu" => LfuConfig::default().into(),
            "foyer-s3fifo" => S3FifoConfig::default().into(),
            "foyer-sieve" => SieveConfig.into(),
            "foyer-fifo" => FifoConfig::default().into(),
            other => unreachable!("unknown foyer config {other}"),
        };
        let cache = foyer_memory::CacheBuilder::new(capacity as usize)
            .with_shards(1)
            .with_eviction_config(config)
            .build();
        Foyer { label, cache }
    }
}

impl ReplayCache for Foyer {
    fn name(&self) -> String {
        self.label.into()
    }
    fn get_or_insert(&mut self, key: u64) -> bool {
        if self.cache.get(&key).is_some() {
            return true;
        }
        drop(self.cache.insert(key, ()));
        false
    }
}

impl Bounded for Foyer {
    fn resident(&mut self) -> u64 {
        self.cache.usage() as u64
    }
}

/// Replays `keys` through `cache` (statically dispatched, so every adapter
/// is inlined into its own loop) and returns the result and the entries held.
fn measure<C: Bounded>(mut cache: C, keys: &[u64], capacity: u64) -> (ReplayResult, u64) {
    let result = replay(&mut cache, keys, capacity);
    (result, cache.resident())
}

pub type Runner = fn(&[u64], u64) -> (ReplayResult, u64);

/// The caches of one run, as (label, runner): tiercache first if `ours`,
/// then the peers if `peers` (moka in lazy mode if `moka_lazy`).
pub fn caches(ours: bool, peers: bool, moka_lazy: bool) -> Vec<(&'static str, Runner)> {
    let mut all: Vec<(&'static str, Runner)> = Vec::new();
    if ours {
        all.push(("tiercache", |k, c| {
            let mut b = tiercache_cache::Cache::<u64, ()>::builder(c).shards(1);
            if let Some(seed) = std::env::var("REPLAY_SEED")
                .ok()
                .and_then(|s| s.parse().ok())
            {
                b = b.seed(seed);
            }
            measure(TierCache(b.build()), k, c)
        }));
    }
    if peers {
        if moka_lazy {
            all.push(("moka-lazy", |k, c| measure(Moka::new(c, true), k, c)));
        } else {
            all.push(("moka", |k, c| measure(Moka::new(c, false), k, c)));
        }
        all.push(("qc-sync", |k, c| measure(QcSync::new(c), k, c)));
        all.push(("qc-unsync", |k, c| measure(QcUnsync::new(c), k, c)));
        for (label, runner) in [
            (
                "foyer-lru",
                (|k, c| measure(Foyer::new("foyer-lru", c), k, c)) as Runner,
            ),
            ("foyer-lfu", |k, c| {
                measure(Foyer::new("foyer-lfu", c), k, c)
            }),
            ("foyer-s3fifo", |k, c| {
                measure(Foyer::new("foyer-s3fifo", c), k, c)
            }),
            ("foyer-sieve", |k, c| {
                measure(Foyer::new("foyer-sieve", c), k, c)
            }),
            ("foyer-fifo", |k, c| {
                measure(Foyer::new("foyer-fifo", c), k, c)
            }),
        ] {
            all.push((label, runner));
        }
    }
    all
}
