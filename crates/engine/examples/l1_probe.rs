//! Rough cost of memory-tier overwrites and reads on a key set larger than
//! the CPU caches, beside a plain `HashMap` insert as the floor; not a
//! criterion bench (one pass, wall clock), used to see table layout effects.
//!
//! `cargo run --release -p tiercache-engine --example l1_probe -- [KEYS] [MEMORY_MIB]`

use bytes::Bytes;
use std::time::Instant;
use tiercache_engine::{Entry, MemoryTier};
fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().unwrap())
        .unwrap_or(100_000);
    let mb: u64 = std::env::args()
        .nth(2)
        .map(|s| s.parse().unwrap())
        .unwrap_or(256);
    let l1 = MemoryTier::new(mb << 20);
    let keys: Vec<Bytes> = (0..n)
        .map(|i| Bytes::from(format!("key:{i:012}")))
        .collect();
    for k in &keys {
        l1.put(k.clone(), Entry::new("xxx"), 0);
    }
    let mut x: u64 = 88172645463325252;
    let idx: Vec<usize> = (0..2_000_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        })
        .collect();
    let t = Instant::now();
    for &i in &idx {
        l1.put(keys[i].clone(), Entry::new("yyy"), 0);
    }
    let e = t.elapsed();
    println!(
        "l1 put: {:.1} ns/op",
        e.as_nanos() as f64 / idx.len() as f64
    );
    let mut m: std::collections::HashMap<Bytes, Entry, ahash::RandomState> = Default::default();
    for k in &keys {
        m.insert(k.clone(), Entry::new("xxx"));
    }
    let t = Instant::now();
    for &i in &idx {
        m.insert(keys[i].clone(), Entry::new("yyy"));
    }
    println!(
        "hashmap insert: {:.1} ns/op",
        t.elapsed().as_nanos() as f64 / idx.len() as f64
    );
    let t = Instant::now();
    let mut hits = 0;
    for &i in &idx {
        if l1.get(&keys[i], 0).is_some() {
            hits += 1;
        }
    }
    println!(
        "l1 get: {:.1} ns/op ({hits})",
        t.elapsed().as_nanos() as f64 / idx.len() as f64
    );
}
