//! Heap bytes per entry at 1M small entries (`u64` key, `u64` value), for
//! tiercache and each peer, measured with a counting global allocator.
//!
//! `cargo bench -p tiercache-bench --bench memory`
//!
//! Each cache is built with capacity 1M (entry count, weight 1, the crate's
//! default sharding and policy) and filled with the keys `0..1M`. The live
//! heap bytes after the fill minus those before it are the cache's cost
//! (tables, nodes, policy metadata, sketches, ghosts; all preallocation
//! included). Per-entry figures divide by the entries actually held, which a
//! sharded cache can leave slightly under 1M. The overhead column subtracts
//! the 16 bytes of key and value.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};

/// `System`, counting live heap bytes.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded to `System` unchanged; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as isize, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size() as isize, Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            LIVE.fetch_add(new_size as isize - layout.size() as isize, Relaxed);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const N: u64 = 1_000_000;
const KV_BYTES: f64 = 16.0;

/// Builds a cache with `build`, fills it with `insert`, and prints its row.
/// `held` reports the entries resident at the end.
fn measure<C>(
    label: &str,
    build: impl FnOnce() -> C,
    insert: impl Fn(&C, u64),
    held: impl Fn(&C) -> u64,
) {
    let before = LIVE.load(Relaxed);
    let cache = build();
    for k in 0..N {
        insert(&cache, k);
    }
    let entries = held(&cache);
    let bytes = LIVE.load(Relaxed) - before;
    let per_entry = bytes as f64 / entries.max(1) as f64;
    println!(
        "{label:<14} {entries:>9} {:>12} {:>10.1} {:>10.1}",
        bytes,
        per_entry,
        per_entry - KV_BYTES
    );
    drop(cache);
}

fn main() {
    println!("1M u64 -> u64 entries, capacity 1M, default sharding; live heap bytes");
    println!(
        "{:<14} {:>9} {:>12} {:>10} {:>10}",
        "cache", "entries", "total bytes", "B/entry", "overhead"
    );
    measure(
        "tiercache",
        || tiercache_cache::Cache::<u64, u64>::new(N),
        |c, k| {
            c.insert(k, k);
        },
        |c| c.len() as u64,
    );
    measure(
        "moka",
        || moka::sync::Cache::<u64, u64>::new(N),
        |c, k| c.insert(k, k),
        |c| {
            // Apply pending writes so the entry count (and memory) is final.
            c.run_pending_tasks();
            c.entry_count()
        },
    );
    measure(
        "qc-sync",
        || quick_cache::sync::Cache::<u64, u64>::new(N as usize),
        |c, k| c.insert(k, k),
        |c| c.len() as u64,
    );
    measure(
        "qc-unsync",
        || std::cell::RefCell::new(quick_cache::unsync::Cache::<u64, u64>::new(N as usize)),
        |c, k| c.borrow_mut().insert(k, k),
        |c| c.borrow().len() as u64,
    );
    for (label, config) in [
        ("foyer-lru", foyer_memory::LruConfig::default().into()),
        ("foyer-lfu", foyer_memory::LfuConfig::default().into()),
        ("foyer-s3fifo", foyer_memory::S3FifoConfig::default().into()),
        ("foyer-sieve", foyer_memory::SieveConfig.into()),
        ("foyer-fifo", foyer_memory::FifoConfig::default().into()),
    ] {
        let config: foyer_memory::EvictionConfig = config;
        measure(
            label,
            || {
                foyer_memory::CacheBuilder::<u64, u64, _>::new(N as usize)
                    .with_eviction_config(config)
                    .build()
            },
            |c: &foyer_memory::Cache<u64, u64>, k| drop(c.insert(k, k)),
            |c| c.entries() as u64,
        );
    }
}
