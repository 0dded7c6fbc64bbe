//! One timed analysis pass of the `stores` scenario, directly over a
//! [`Store`] or through tiercache's engine (memory tier in write-back mode),
//! and the check of what the store holds afterwards.

use super::job::{page_key, parse_line, Aggregate, Profile};
use async_trait::async_trait;
use bytes::Bytes;
use hdrhistogram::Histogram;
use indicatif::ProgressBar;
use std::collections::HashMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tiercache_engine::{Engine, Entry, KeyStats, Mutation, Store, StoreError};

/// What one pass measured.
pub struct PassResult {
    /// Wall time of the pass: reading and parsing the file, every
    /// read-modify-write, and (with the RAM tier) the final flush.
    pub seconds: f64,
    /// Of which the final flush.
    pub flush_seconds: f64,
    /// Per-profile latency (all reads and writes of one profile), µs.
    pub latency_us: Histogram<u64>,
    /// Read-modify-writes done (one per like).
    pub updates: u64,
    /// `(get_many calls, keys read, write calls)` that reached the store
    /// during the pass (filled in by the caller, which owns the counter).
    pub store_calls: (u64, u64, u64),
}

/// Where the pass reads and writes: the store itself, or the engine.
pub enum Target<'a> {
    /// Every profile: one `get_many` and one `set_many` on the store.
    Direct(&'a dyn Store),
    /// Every profile: `get_many` and `set_many` in one engine session,
    /// `commit` (the journal append) every [`COMMIT_EVERY`] profiles and at
    /// the end; `Engine::flush` at the end (the seed's `storeToDisk()`).
    Engine(&'a Engine),
}

/// Reads and parses `data` and, for every like, read-modify-writes the
/// page's aggregate, in file order. Timed from opening the file on.
pub async fn run_pass(
    data: &Path,
    target: Target<'_>,
    bar: &ProgressBar,
) -> Result<PassResult, String> {
    let mut latency_us = Histogram::<u64>::new(3).expect("valid histogram");
    let started = Instant::now();
    let text = std::fs::read_to_string(data).map_err(|e| format!("{}: {e}", data.display()))?;
    let mut profile = Profile::default();
    let mut updates = 0u64;
    let mut session = match &target {
        Target::Engine(engine) => Some(engine.session()),
        Target::Direct(_) => None,
    };
    for (n, line) in text.lines().enumerate() {
        let t = Instant::now();
        parse_line(line, &mut profile)?;
        let keys: Vec<Bytes> = profile.pages.iter().map(|&p| page_key(p)).collect();
        let found = match (&target, session.as_mut()) {
            (Target::Direct(store), _) => store.get_many(&keys).await.map_err(|e| e.to_string())?,
            (Target::Engine(_), Some(s)) => s.get_many(&keys).await.map_err(|e| e.to_string())?,
            (Target::Engine(_), None) => unreachable!("engine passes have a session"),
        };
        let mut writes = Vec::with_capacity(keys.len());
        for ((key, &page), old) in keys.into_iter().zip(&profile.pages).zip(found) {
            let mut agg = match old {
                Some(e) => Aggregate::decode(&e.value)
                    .map_err(|e| format!("page {page}, profile {}: {e}", profile.id))?,
                None => Aggregate::default(),
            };
            agg.absorb(&profile, page);
            writes.push((key, Entry::new(agg.encode())));
            updates += 1;
        }
        match (&target, session.as_mut()) {
            (Target::Direct(store), _) => {
                store.set_many(&writes).await.map_err(|e| e.to_string())?
            }
            (Target::Engine(_), Some(s)) => {
                s.set_many(writes).await.map_err(|e| e.to_string())?;
                if n % COMMIT_EVERY == COMMIT_EVERY - 1 {
                    s.commit().await.map_err(|e| e.to_string())?;
                }
            }
            (Target::Engine(_), None) => unreachable!("engine passes have a session"),
        }
        let _ = latency_us.record(t.elapsed().as_micros().max(1) as u64);
        if n % 64 == 63 {
            bar.inc(64);
        }
    }
    if let Some(mut s) = session {
        s.commit().await.map_err(|e| e.to_string())?;
    }
    let flush_started = Instant::now();
    if let Target::Engine(engine) = target {
        engine.flush().await.map_err(|e| e.to_string())?;
    }
    let flush_seconds = flush_started.elapsed().as_secs_f64();
    Ok(PassResult {
        seconds: started.elapsed().as_secs_f64(),
        flush_seconds,
        latency_us,
        updates,
        store_calls: (0, 0, 0),
    })
}

/// Reads `keys` (in chunks) from the store, or through a fresh engine
/// session.
pub async fn read_back(target: Target<'_>, keys: &[Bytes]) -> Result<Vec<Option<Entry>>, String> {
    let mut out = Vec::with_capacity(keys.len());
    for chunk in keys.chunks(1_000) {
        let got = match &target {
            Target::Direct(store) => store.get_many(chunk).await.map_err(|e| e.to_string())?,
            Target::Engine(engine) => engine
                .session()
                .get_many(chunk)
                .await
                .map_err(|e| e.to_string())?,
        };
        out.extend(got);
    }
    Ok(out)
}

/// Compares what was read back for `pages` (then `absent`) with the
/// reference: every liked page's aggregate exactly, and no value for pages
/// nobody liked. Returns how many values were checked.
pub fn check(
    reference: &HashMap<u32, Aggregate>,
    pages: &[u32],
    absent: &[u32],
    values: &[Option<Entry>],
) -> Result<usize, String> {
    if values.len() != pages.len() + absent.len() {
        return Err(format!(
            "read back {} values for {} keys",
            values.len(),
            pages.len() + absent.len()
        ));
    }
    let mut wrong = Vec::new();
    for (page, value) in pages.iter().zip(values) {
        let expected = &reference[page];
        match value {
            None => wrong.push(format!("page {page}: missing")),
            Some(e) => match Aggregate::decode(&e.value) {
                Ok(got) if got == *expected => {}
                Ok(got) => wrong.push(format!(
                    "page {page}: {} fans stored, {} expected",
                    got.fans, expected.fans
                )),
                Err(e) => wrong.push(format!("page {page}: {e}")),
            },
        }
    }
    for (page, value) in absent.iter().zip(&values[pages.len()..]) {
        if value.is_some() {
            wrong.push(format!(
                "page {page}: nobody likes it, yet a value is stored"
            ));
        }
    }
    if wrong.is_empty() {
        return Ok(values.len());
    }
    let n = wrong.len();
    wrong.truncate(3);
    Err(format!(
        "{n} of {} aggregates are wrong, e.g. {}",
        values.len(),
        wrong.join("; ")
    ))
}

/// A store that counts the reads reaching it: how many `get_many` calls
/// (round trips) and keys the pass cost the store below.
pub struct Counting {
    inner: Arc<dyn Store>,
    /// `get_many` calls.
    pub reads: AtomicU64,
    /// Keys asked for.
    pub keys_read: AtomicU64,
    /// Write calls (`set_many`, `apply`).
    pub writes: AtomicU64,
}

impl Counting {
    /// Counts the calls reaching `inner`.
    pub fn new(inner: Arc<dyn Store>) -> Counting {
        Counting {
            inner,
            reads: AtomicU64::new(0),
            keys_read: AtomicU64::new(0),
            writes: AtomicU64::new(0),
        }
    }

    /// `(reads, keys read, writes)` so far, and resets them.
    pub fn take(&self) -> (u64, u64, u64) {
        (
            self.reads.swap(0, Ordering::Relaxed),
            self.keys_read.swap(0, Ordering::Relaxed),
            self.writes.swap(0, Ordering::Relaxed),
        )
    }
}

#[async_trait]
impl Store for Counting {
    fn name(&self) -> &str {
        self.inner.name()
    }
    async fn get_many(&self, keys: &[Bytes]) -> Result<Vec<Option<Entry>>, StoreError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.keys_read
            .fetch_add(keys.len() as u64, Ordering::Relaxed);
        self.inner.get_many(keys).await
    }
    async fn set_many(&self, entries: &[(Bytes, Entry)]) -> Result<(), StoreError> {
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.inner.set_many(entries).await
    }
    async fn delete_many(&self, keys: &[Bytes]) -> Result<(), StoreError> {
        self.inner.delete_many(keys).await
    }
    async fn apply(&self, batch: &[Mutation]) -> Result<(), StoreError> {
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.inner.apply(batch).await
    }
    async fn count(&self) -> Result<u64, StoreError> {
        self.inner.count().await
    }
    async fn clear(&self) -> Result<(), StoreError> {
        self.inner.clear().await
    }
    async fn scan_keys(
        &self,
        start: Bound<&[u8]>,
        prefix: &[u8],
        limit: usize,
        now_ms: u64,
    ) -> Result<Vec<Bytes>, StoreError> {
        self.inner.scan_keys(start, prefix, limit, now_ms).await
    }
    async fn key_stats(&self, now_ms: u64) -> Result<KeyStats, StoreError> {
        self.inner.key_stats(now_ms).await
    }
    async fn purge_expired(&self, now_ms: u64) -> Result<u64, StoreError> {
        self.inner.purge_expired(now_ms).await
    }
}

/// Profiles per journal commit in the engine passes. A batch job needs its
/// writes durable by the end, not after every profile: committing per chunk
/// makes one journal `write(2)` per chunk instead of one per profile (the
/// seed's RAM cache had no journal at all).
pub const COMMIT_EVERY: usize = 256;

/// The namespace's write-back flush interval: longer than any pass, so the
/// dirty values stay in RAM until the final flush, as in the seed.
pub const HOLD: Duration = Duration::from_secs(3_600);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::stores::job::{generate, reference, JobParams};
    use tiercache_engine::testing::MemoryStore;

    #[test]
    fn a_pass_leaves_the_reference_and_a_wrong_value_is_caught() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data.txt");
        let text = generate(&JobParams {
            profiles: 200,
            pages: 1_000,
            zipf_s: 1.0,
            mean_likes: 12.0,
            max_likes: 100,
            seed: 3,
        });
        std::fs::write(&data, &text).unwrap();
        let (reference, likes) = reference(&text).unwrap();
        let pages: Vec<u32> = reference.keys().copied().collect();
        let absent: Vec<u32> = (1..=1_000)
            .filter(|q| !reference.contains_key(q))
            .take(5)
            .collect();
        let keys: Vec<Bytes> = pages.iter().chain(&absent).map(|&p| page_key(p)).collect();
        let store = MemoryStore::new("m");
        rt.block_on(async {
            let r = run_pass(&data, Target::Direct(&store), &ProgressBar::hidden())
                .await
                .unwrap();
            assert_eq!(r.updates, likes);
            assert_eq!(r.latency_us.len(), 200);
            let values = read_back(Target::Direct(&store), &keys).await.unwrap();
            assert_eq!(
                check(&reference, &pages, &absent, &values).unwrap(),
                keys.len()
            );
            // One lost update on one page is caught.
            let mut agg = reference[&pages[0]].clone();
            agg.fans -= 1;
            store
                .set_many(&[(page_key(pages[0]), Entry::new(agg.encode()))])
                .await
                .unwrap();
            let values = read_back(Target::Direct(&store), &keys).await.unwrap();
            let err = check(&reference, &pages, &absent, &values).unwrap_err();
            assert!(err.starts_with("1 of"), "{err}");
            // A value for a page nobody liked is caught.
            store
                .set_many(&[
                    (
                        page_key(pages[0]),
                        Entry::new(reference[&pages[0]].encode()),
                    ),
                    (page_key(absent[0]), Entry::new("x")),
                ])
                .await
                .unwrap();
            let values = read_back(Target::Direct(&store), &keys).await.unwrap();
            let err = check(&reference, &pages, &absent, &values).unwrap_err();
            assert!(err.contains("nobody likes it"), "{err}");
        });
    }
}
