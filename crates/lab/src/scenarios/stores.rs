//! The `stores` scenario (seed 001, "How to speed up key/value database
//! operations using a RAM cache"): the same analysis pass over eight
//! key/value stores, once directly and once with tiercache's memory tier in
//! write-back mode in front, in seconds and in % of the `null` store.
//!
//! # The job (the seed's `fananalyze.php` over `data.txt`)
//!
//! The seed's job reads ~10,000 Facebook profiles, each with the fan pages
//! it likes, and for every like updates that page's record in the store.
//! Here `job::generate` writes a deterministic (seeded) data file of the
//! same shape: one line per profile (`id, name, gender, birth year,
//! country, liked page ids`). The shape was chosen from the seed's data,
//! not to make a bar pass:
//!
//! - likes per profile: geometric with mean 12 (at least 1, at most 100):
//!   a 2009 profile liked a dozen pages, a few liked very many;
//! - pages: Zipf-popular (exponent 1.0, the usual power law of fan counts)
//!   over a universe of 5 pages per profile, so a few pages are liked by
//!   many profiles (locality the RAM tier can use) and a long tail is seen
//!   once or twice (every first sight is a store miss);
//! - one read-modify-write per like: read the page's aggregate, decode it,
//!   add the fan (fan count, gender, age bucket, country, and for each other
//!   page the fan likes, one more co-liked count: the seed author's fan-page
//!   correlations), encode it, write it back (`job::Aggregate`: 113 fixed
//!   bytes plus 8 per co-liked page, so popular pages grow to tens of KB
//!   and most of the job's time is decoding and encoding them, as
//!   unserialising PHP arrays was in the seed).
//!
//! The reads and writes of one profile are batched (`get_many`, then
//! `set_many`): that is how the `Store` trait is used, and it is the same
//! for every setup.
//!
//! # Setups
//!
//! `null` (stores nothing), `memory` (the engine's `testing::MemoryStore`, a
//! `HashMap` behind a mutex, in process), `sqlite` (a WAL file in a temp
//! dir), `redis-tcp` and `redis-unix` (one `redis-server`, TCP and its unix
//! socket), `memcached`, `postgres`, `mysql` (MariaDB): the real store types
//! of `tiercache-stores`, each emptied before its pass. Each also as
//! `NAME+ram`: an [`Engine`] with one write-back namespace over that store,
//! a 256 MiB memory tier (room for every aggregate, as the seed's PHP array
//! held everything), the flusher held back for the whole pass (the seed
//! writes the dirty values "in one go at the end") and `Engine::flush` at
//! the end, counted in the time (the seed's `storeToDisk()`). The pass uses
//! what a tiercache user would: one `Session`, per profile `get_many`,
//! `set_many` and `commit` (the write-back journal append).
//!
//! Baseline: `null+ram`. The seed's table ("% of Null") was measured with
//! its RAM cache on for every row, `Null` included, so its `Null` is our
//! `null+ram`; `null` without the tier is shown too, but it never reads a
//! value back (every read misses) and so skips most of the analysis.
//! After every pass the store
//! (after the flush) is read back and every page's aggregate compared with
//! `job::reference`, computed in plain Rust from the same file, plus
//! pages nobody liked must be absent; `null` is exempt (it stores nothing)
//! and `null+ram` is checked through the engine instead.
//!
//! # Parameters
//!
//! Quick: 2,000 profiles (about 24,000 read-modify-writes per setup, all
//! 16 setups in well under 35 s with the servers' start). Full: the seed's
//! 10,000 profiles. The bar: `redis-tcp+ram` within 1.10× of the seed's
//! `Null` (`null+ram`); the notes also give the ratio to bare `null`.

mod job;
mod pass;

pub use job::JobParams;

use crate::scenario::{Chart, ChartKind, Percentiles, Skipped};
use crate::{Ctx, LabError, Scenario, ScenarioReport, Unavailable};
use pass::{check, read_back, run_pass, Counting, PassResult, Target};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use tiercache_engine::testing::MemoryStore;
use tiercache_engine::{Engine, NamespaceConfig, Store, WriteMode};
use tiercache_stores::{
    MemcachedStore, MysqlStore, NullStore, PostgresStore, RedisStore, SqlOptions, SqliteStore,
};

const SC: Scenario = Scenario::Stores;

/// The stores, in the seed's order of its table.
const BACKENDS: [&str; 8] = [
    "null",
    "memory",
    "sqlite",
    "redis-tcp",
    "redis-unix",
    "memcached",
    "postgres",
    "mysql",
];

/// The bar: `redis-tcp+ram` at most this many times the seed's `Null`.
const BAR: f64 = 1.10;

/// The job's parameters for quick or full mode.
pub fn params(quick: bool) -> JobParams {
    let profiles = if quick { 2_000 } else { 10_000 };
    JobParams {
        profiles,
        pages: 5 * profiles as u64,
        zipf_s: 1.0,
        mean_likes: 12.0,
        max_likes: 100,
        seed: 0x5eed_0001,
    }
}

/// Runs the scenario with the parameters of `--quick` or the full run.
pub fn run(ctx: &mut Ctx) -> Result<ScenarioReport, LabError> {
    run_with(ctx, &params(ctx.quick()))
}

/// Runs the scenario with the job shaped by `p`.
pub fn run_with(ctx: &mut Ctx, p: &JobParams) -> Result<ScenarioReport, LabError> {
    let fail = |m: String| LabError::scenario(SC, m);
    let mut report = ScenarioReport::new(SC);
    report.baseline = Some("null+ram".into());
    report.param("profiles", p.profiles as u64);
    report.param("pages", p.pages);
    report.param("zipf_exponent", p.zipf_s);
    report.param("mean_likes_per_profile", p.mean_likes);
    report.param("max_likes_per_profile", p.max_likes as u64);
    report.param("seed", p.seed);
    report.param("quick", ctx.quick());
    report.param("memory_tier_bytes", MEMORY_BYTES);

    let dir = tempfile::tempdir().map_err(|e| fail(format!("temp dir: {e}")))?;
    let data = dir.path().join("data.txt");
    let text = job::generate(p);
    std::fs::write(&data, &text).map_err(|e| fail(format!("{}: {e}", data.display())))?;
    let (reference, likes) = job::reference(&text).map_err(fail)?;
    report.param("likes", likes);
    report.param("distinct_pages_liked", reference.len() as u64);
    let sizes: Vec<usize> = reference.values().map(|a| a.encoded_len()).collect();
    report.param(
        "value_bytes_mean",
        (sizes.iter().sum::<usize>() / sizes.len().max(1)) as u64,
    );
    report.param("value_bytes_max", *sizes.iter().max().unwrap_or(&0) as u64);
    let mut pages: Vec<u32> = reference.keys().copied().collect();
    pages.sort_unstable();
    // Up to 100 pages of the universe nobody liked: they must stay absent.
    let absent: Vec<u32> = (1..=p.pages as u32)
        .filter(|q| !reference.contains_key(q))
        .take(100)
        .collect();
    let expected = Expected {
        reference: &reference,
        pages: &pages,
        absent: &absent,
        likes,
    };

    let mut stats: Vec<String> = Vec::new();
    for ram in [false, true] {
        for name in BACKENDS {
            let setup = if ram {
                format!("{name}+ram")
            } else {
                name.to_string()
            };
            let store = match open_store(ctx, name, dir.path()) {
                Ok(s) => s,
                Err(why) => {
                    report.skipped.push(Skipped {
                        setup,
                        reason: why.0,
                    });
                    continue;
                }
            };
            let counting = Arc::new(Counting::new(store));
            let bar = ctx.progress(&setup, p.profiles as u64);
            let outcome = ctx.runtime().block_on(measure(
                counting.clone(),
                ram,
                name != "null",
                &data,
                dir.path(),
                &expected,
                &bar,
            ));
            bar.finish_and_clear();
            let result = outcome.map_err(|e| fail(format!("{setup}: {e}")))?;
            let (reads, keys_read, writes) = result.store_calls;
            report.row(&setup, "seconds", "s", result.seconds);
            report.percentiles.push(Percentiles::from_histogram_us(
                &setup,
                "profile_latency",
                &result.latency_us,
            ));
            if ram {
                stats.push(format!(
                    "{setup}: {reads} store reads ({keys_read} keys, {:.2} per profile), {writes} flush writes, flush {:.3} s of the pass",
                    reads as f64 / p.profiles as f64,
                    result.flush_seconds
                ));
            }
        }
    }

    report.charts.push(Chart {
        title: "Analysis pass per store, without and with the RAM tier (seconds)".into(),
        value_label: "seconds".into(),
        lower_is_better: true,
        kind: ChartKind::Bars {
            bars: report
                .rows
                .iter()
                .map(|r| (r.setup.clone(), r.value))
                .collect(),
        },
    });
    report.notes.push(format!(
        "every setup's aggregates ({} pages, {likes} read-modify-writes) matched the plain-Rust reference after the pass (null: not checked, it stores nothing)",
        pages.len()
    ));
    report.notes.push(bar_note(&report));
    report.notes.push(format!(
        "store round trips with the RAM tier: {}",
        stats.join("; ")
    ));
    Ok(report)
}

/// The bar's verdict, for the notes. The seed's rows were all measured with
/// its RAM cache on, its `Null` included (22.1 s): that row is `null+ram`
/// here. `null` without the tier never reads a value back (every read
/// misses), so it skips most of the analysis; both ratios are reported.
fn bar_note(report: &ScenarioReport) -> String {
    let ratio = |base: &str| match (
        report.value("redis-tcp+ram", "seconds"),
        report.value(base, "seconds"),
    ) {
        (Some(r), Some(b)) if b > 0.0 => Some(r / b),
        _ => None,
    };
    let verdict = |r: f64| if r <= BAR { "met" } else { "NOT met" };
    match (ratio("null+ram"), ratio("null")) {
        (Some(seed), Some(bare)) => format!(
            "bar: redis-tcp+ram / null+ram (the seed's Null row, RAM cache on) = {seed:.3}, \
             must be <= {BAR:.2}: {}; against null without the tier (which never reads a \
             value back, so skips most of the analysis) {bare:.2}x: {}",
            verdict(seed),
            verdict(bare)
        ),
        _ => "bar: redis-tcp+ram / null not measured (redis-server unavailable)".into(),
    }
}

/// The memory tier of the `+ram` setups.
const MEMORY_BYTES: u64 = 256 << 20;

/// What a pass must leave in the store.
struct Expected<'a> {
    reference: &'a HashMap<u32, job::Aggregate>,
    pages: &'a [u32],
    absent: &'a [u32],
    likes: u64,
}

/// Empties the store, runs one pass (through a fresh engine when `ram`),
/// and checks the store's contents (when `stores_data`).
async fn measure(
    store: Arc<Counting>,
    ram: bool,
    stores_data: bool,
    data: &Path,
    dir: &Path,
    expected: &Expected<'_>,
    bar: &indicatif::ProgressBar,
) -> Result<PassResult, String> {
    store.clear().await.map_err(|e| e.to_string())?;
    let keys: Vec<bytes::Bytes> = expected
        .pages
        .iter()
        .chain(expected.absent)
        .map(|&p| job::page_key(p))
        .collect();
    let result = if ram {
        let journal = tempfile::tempdir_in(dir).map_err(|e| format!("temp dir: {e}"))?;
        let engine = Engine::builder(journal.path())
            .memory_bytes(MEMORY_BYTES)
            .namespace(
                NamespaceConfig::new("default", WriteMode::Back)
                    .store(store.clone() as Arc<dyn Store>)
                    .flush(pass::HOLD, usize::MAX),
            )
            .build()
            .await
            .map_err(|e| e.to_string())?;
        store.take();
        let mut result = run_pass(data, Target::Engine(&engine), bar).await?;
        result.store_calls = store.take();
        // `null` keeps nothing: its aggregates can only be read through the engine.
        let values = if stores_data {
            read_back(Target::Direct(store.as_ref()), &keys).await?
        } else {
            read_back(Target::Engine(&engine), &keys[..expected.pages.len()]).await?
        };
        let absent = if stores_data { expected.absent } else { &[] };
        check(expected.reference, expected.pages, absent, &values)?;
        engine.shutdown().await.map_err(|e| e.to_string())?;
        result
    } else {
        store.take();
        let mut result = run_pass(data, Target::Direct(store.as_ref()), bar).await?;
        result.store_calls = store.take();
        if stores_data {
            let values = read_back(Target::Direct(store.as_ref()), &keys).await?;
            check(expected.reference, expected.pages, expected.absent, &values)?;
        }
        result
    };
    if result.updates != expected.likes {
        return Err(format!(
            "the pass made {} updates, the file has {} likes",
            result.updates, expected.likes
        ));
    }
    Ok(result)
}

/// The store of one backend, its server started through `ctx`.
fn open_store(ctx: &mut Ctx, name: &str, dir: &Path) -> Result<Arc<dyn Store>, Unavailable> {
    let broken = |e: tiercache_engine::StoreError| Unavailable(format!("{name}: {e}"));
    let table = "lab_stores";
    Ok(match name {
        "null" => Arc::new(NullStore::new(name)),
        "memory" => Arc::new(MemoryStore::new(name)),
        "sqlite" => {
            Arc::new(SqliteStore::open(name, &dir.join("stores.db"), "kv").map_err(broken)?)
        }
        "redis-tcp" => {
            let url = format!("redis://{}/0", ctx.redis()?.addr());
            Arc::new(RedisStore::open(name, &url, 4, None).map_err(broken)?)
        }
        "redis-unix" => {
            let url = format!("unix:{}", ctx.redis()?.socket().display());
            Arc::new(RedisStore::open(name, &url, 4, None).map_err(broken)?)
        }
        "memcached" => {
            let addr = ctx.memcached()?.addr().to_string();
            Arc::new(MemcachedStore::open(name, &[addr], None).map_err(broken)?)
        }
        "postgres" => {
            let url = ctx.postgres()?.url();
            Arc::new(PostgresStore::new(name, &url, table, sql_options()).map_err(broken)?)
        }
        "mysql" => {
            let url = ctx.mariadb()?.url();
            Arc::new(MysqlStore::new(name, &url, table, sql_options()).map_err(broken)?)
        }
        other => unreachable!("unknown backend {other}"),
    })
}

fn sql_options() -> SqlOptions {
    SqlOptions {
        pool_size: 4,
        timeout: None,
    }
}
