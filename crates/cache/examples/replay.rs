//! Quick replay of a cache2k trace (uncompressed) through the cache:
//! `cargo run --release -p tiercache-cache --example replay -- FILE CAP[,CAP..] [shards]`.
//! The full comparison with peer caches lives in the bench crate.
use std::time::Instant;
use tiercache_cache::Cache;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let data = std::fs::read(&args[1]).expect("trace file");
    let keys: Vec<u64> = data
        .chunks_exact(4)
        .map(|c| u32::from_be_bytes(c.try_into().unwrap()) as u64)
        .collect();
    let shards: Option<usize> = args.get(3).map(|s| s.parse().unwrap());
    for cap in args[2].split(',') {
        let cap: u64 = cap.parse().unwrap();
        let mut b = Cache::<u64, ()>::builder(cap);
        if let Some(s) = shards {
            b = b.shards(s);
        }
        let cache: Cache<u64, ()> = b.build();
        let t = Instant::now();
        let mut hits = 0u64;
        for &k in &keys {
            if cache.get(&k).is_some() {
                hits += 1;
            } else {
                cache.insert(k, ());
            }
        }
        let el = t.elapsed();
        println!(
            "cap {cap:>7}  hit {:6.2}%  {:6.1} Mops/s  shards {}",
            100.0 * hits as f64 / keys.len() as f64,
            keys.len() as f64 / el.as_secs_f64() / 1e6,
            cache.shard_count()
        );
        assert!(cache.weight() <= cap);
    }
}
