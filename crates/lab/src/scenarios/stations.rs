//! The `stations` scenario: seed 000, iRail's station lookups (iRail/stations
//! issue #111, "Use in-memory store for station lookups").
//!
//! iRail looked up every station of a liveboard by name (`getStations`) or
//! id (`getStationFromID`), each lookup looping over the whole stations
//! list with text replacements to match spellings; the issue timed "50
//! station queries from a brussels-south liveboard" once (`single`), and
//! averaged over 100 and 500 liveboards, for the plain loop, SQLite, MariaDB,
//! and memcached or APC in front; the final APC version took 0.79 ms a
//! liveboard.
//!
//! Here, on `stations.csv` (CC0 1.0, iRail / Open Knowledge Belgium), a
//! liveboard is [`data::LIVEBOARD`]: 50 lookups spelt as feeds and users
//! spell them (languages, case, accents, `st`/`sint`, abbreviations), with
//! repeats, and three by id. Normalisation rules: [`data`]. Setups:
//! - `csv-scan` (baseline, the seed's "normal"): parse the file; every lookup
//!   scans all stations normalising their names until an exact match;
//! - `sqlite`: the seed's option 1, a `stations` table and a
//!   `station_names` (normalised name → id) table with an index; one query
//!   per lookup on a read-only connection;
//! - `mysql`: the same tables on MariaDB, one prepared query per lookup;
//! - `redis` and `memcached`: one key per normalised name and per id
//!   (`name:gent st pieters`, `id:008892007`) holding the station's record,
//!   filled beforehand (the seed's "filled by a cron job"); one GET per
//!   lookup through tiercache's `RedisStore` / `MemcachedStore`;
//! - `tiercache`: the product's API a user would write, `Engine::get_or_load`
//!   keyed by the normalised name or id, with a loader that runs the
//!   `sqlite` setup's query on a miss: the seed's "SQL w/ APC" with
//!   tiercache's in-process memory tier as the APC.
//!
//! Metrics: `single_ms` is the cold start: opening the setup (parsing the
//! file, connecting, building the engine with an empty memory tier) plus
//! the first liveboard; then the warm liveboards run: `avg100_ms` is the
//! mean of the first 100, `avg500_ms` of the first 500, `liveboard_p50` the
//! median of all of them; raw percentiles of the warm liveboard times are
//! recorded. Quick mode: one round of 500 warm liveboards per setup. Full
//! mode: three rounds (each from a cold start), reporting the medians of
//! `single_ms`, `avg100_ms` and `avg500_ms` over the rounds and the p50 of
//! all 1,500 liveboards.
//!
//! Verification: every liveboard of every setup must return a station for
//! each of the 50 lookups, with the ids the baseline returned; any
//! difference fails the scenario.
//!
//! Bar: `tiercache` `liveboard_p50` ≤ 0.05 ms (50 lookups, normalisation
//! included, in 50 µs); the notes say whether it was met.

pub mod data;
pub mod setups;

use crate::{Chart, ChartKind, Ctx, LabError, Percentiles, Scenario, ScenarioReport, Skipped};
use data::{Station, LIVEBOARD};
use setups::{Backend, Scratch, Source};
use std::time::{Duration, Instant};

const SCENARIO: Scenario = Scenario::Stations;

/// The bar on tiercache's median liveboard, in ms.
pub const BAR_P50_MS: f64 = 0.05;

fn err(e: impl std::fmt::Display) -> LabError {
    LabError::scenario(SCENARIO, e)
}

/// Runs the scenario.
pub fn run(ctx: &mut Ctx) -> Result<ScenarioReport, LabError> {
    run_with(ctx, if ctx.quick() { 1 } else { 3 }, 500)
}

/// Runs the scenario with `rounds` cold starts of `liveboards` warm
/// liveboards each per setup (tests use fewer); `liveboards` must be at
/// least 100.
pub fn run_with(
    ctx: &mut Ctx,
    rounds: usize,
    liveboards: usize,
) -> Result<ScenarioReport, LabError> {
    assert!(rounds >= 1 && liveboards >= 100, "at least 1 round of 100");
    let mut report = ScenarioReport::new(SCENARIO);
    report.baseline = Some("csv-scan".into());
    report.param("rounds", rounds);
    report.param("warm_liveboards_per_round", liveboards);
    report.param("lookups_per_liveboard", LIVEBOARD.len());
    let csv = ctx.stations_csv();
    report.param("stations_csv", csv.display().to_string());
    let stations = data::load_stations(&csv).map_err(err)?;
    report.param("stations", stations.len());
    report.param("keys", data::index_keys(&stations).len());

    // The expected answers: the baseline's, which must find every lookup.
    let mut scratch = Scratch::default();
    let expected: Vec<String> = LIVEBOARD
        .iter()
        .map(|&l| {
            setups::scan(&stations, l, &mut scratch)
                .map(|s| s.id.clone())
                .ok_or_else(|| err(format!("csv-scan finds no station for {l:?}")))
        })
        .collect::<Result<_, _>>()?;

    let tmp = tempfile::tempdir().map_err(err)?;
    let db = tmp.path().join("stations.db");
    setups::load_sqlite(&db, &stations).map_err(err)?;

    let mut sources: Vec<(&str, Result<Source, String>)> = vec![
        ("csv-scan", Ok(Source::Csv(csv.clone()))),
        ("sqlite", Ok(Source::Sqlite(db.clone()))),
    ];
    let mysql = ctx.mariadb().map(|m| m.url());
    sources.push(("mysql", prepare(ctx, mysql, &stations, Prep::Mysql)?));
    let redis = ctx.redis().map(|r| r.url());
    sources.push(("redis", prepare(ctx, redis, &stations, Prep::Redis)?));
    let mc = ctx.memcached().map(|m| m.addr().to_string());
    sources.push(("memcached", prepare(ctx, mc, &stations, Prep::Memcached)?));
    sources.push((
        "tiercache",
        Ok(Source::Tiercache {
            db: db.clone(),
            dir: tmp.path().join("engine"),
        }),
    ));

    let mut bars = Vec::new();
    for (setup, source) in sources {
        let source = match source {
            Ok(s) => s,
            Err(reason) => {
                report.skipped.push(Skipped {
                    setup: setup.into(),
                    reason,
                });
                continue;
            }
        };
        let bar = ctx.progress(
            &format!("stations {setup}"),
            (rounds * (liveboards + 1)) as u64,
        );
        let m = ctx
            .runtime()
            .block_on(measure(&source, rounds, liveboards, &expected, &bar))
            .map_err(|e| err(format!("{setup}: {e}")))?;
        bar.finish_and_clear();
        report.row(setup, "single_ms", "ms", m.single_ms);
        report.row(setup, "avg100_ms", "ms", m.avg100_ms);
        report.row(setup, "avg500_ms", "ms", m.avg500_ms);
        report.row(setup, "liveboard_p50", "ms", m.p50_ms);
        report.percentiles.push(Percentiles::from_histogram_us(
            setup,
            "liveboard_time",
            &m.hist,
        ));
        bars.push((setup.to_string(), m.avg100_ms));
    }
    report.charts.push(Chart {
        title: "Mean time of one liveboard (50 station lookups), warm".into(),
        value_label: "ms per liveboard (avg over 100)".into(),
        lower_is_better: true,
        kind: ChartKind::Bars { bars },
    });
    report.notes.push(format!(
        "verified: every setup returned the baseline's station ids for all {} lookups of every liveboard",
        LIVEBOARD.len()
    ));
    match report.value("tiercache", "liveboard_p50") {
        Some(p50) if p50 <= BAR_P50_MS => report.notes.push(format!(
            "bar met: tiercache liveboard_p50 {:.4} ms <= {BAR_P50_MS} ms",
            p50
        )),
        Some(p50) => report.notes.push(format!(
            "bar MISSED: tiercache liveboard_p50 {:.4} ms > {BAR_P50_MS} ms{}",
            p50,
            if cfg!(debug_assertions) {
                " (debug build; the bar is for release builds)"
            } else {
                ""
            }
        )),
        None => {}
    }
    report.notes.push(
        "single_ms = open the setup (parse / connect / build) + the first liveboard; the seed's \
         final APC implementation took 0.79 ms per liveboard"
            .into(),
    );
    Ok(report)
}

enum Prep {
    Mysql,
    Redis,
    Memcached,
}

/// Loads the data into a server setup (`Ok(Err(reason))` when the server
/// is unavailable: a skip). A failure to load into a running server is an
/// error.
fn prepare(
    ctx: &Ctx,
    server: Result<String, crate::Unavailable>,
    stations: &[Station],
    what: Prep,
) -> Result<Result<Source, String>, LabError> {
    let addr = match server {
        Ok(a) => a,
        Err(u) => return Ok(Err(u.to_string())),
    };
    let rt = ctx.runtime();
    let loaded: Result<Source, String> = match what {
        Prep::Mysql => rt
            .block_on(setups::load_mysql(&addr, stations))
            .map(|()| Source::Mysql(addr)),
        Prep::Redis => rt
            .block_on(async {
                let store = tiercache_stores::RedisStore::open("stations-load", &addr, 1, None)
                    .map_err(|e| e.to_string())?;
                setups::load_kv(&store, stations).await
            })
            .map(|()| Source::Redis(addr)),
        Prep::Memcached => rt
            .block_on(async {
                let store = tiercache_stores::MemcachedStore::open(
                    "stations-load",
                    std::slice::from_ref(&addr),
                    None,
                )
                .map_err(|e| e.to_string())?;
                setups::load_kv(&store, stations).await
            })
            .map(|()| Source::Memcached(addr)),
    };
    loaded
        .map(Ok)
        .map_err(|e| err(format!("loading the stations: {e}")))
}

/// One setup's measurements.
struct Measured {
    single_ms: f64,
    avg100_ms: f64,
    avg500_ms: f64,
    p50_ms: f64,
    hist: hdrhistogram::Histogram<u64>,
}

/// One liveboard: the 50 lookups, timed; the ids checked afterwards.
async fn liveboard(
    backend: &mut Backend,
    scratch: &mut Scratch,
    found: &mut Vec<Option<Station>>,
) -> Result<Duration, String> {
    found.clear();
    let t = Instant::now();
    for &l in LIVEBOARD.iter() {
        found.push(backend.lookup(l, scratch).await?);
    }
    Ok(t.elapsed())
}

fn verify(found: &[Option<Station>], expected: &[String]) -> Result<(), String> {
    for ((l, got), want) in LIVEBOARD.iter().zip(found).zip(expected) {
        match got {
            Some(s) if s.id == *want => {}
            Some(s) => {
                return Err(format!(
                    "WRONG ANSWER for {l:?}: station {} ({}), expected {want}",
                    s.id, s.name
                ))
            }
            None => {
                return Err(format!(
                    "WRONG ANSWER for {l:?}: no station, expected {want}"
                ))
            }
        }
    }
    Ok(())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

async fn measure(
    source: &Source,
    rounds: usize,
    liveboards: usize,
    expected: &[String],
    bar: &indicatif::ProgressBar,
) -> Result<Measured, String> {
    let mut hist = hdrhistogram::Histogram::<u64>::new(3).map_err(|e| e.to_string())?;
    let (mut singles, mut avg100s, mut avg500s, mut all) = (vec![], vec![], vec![], vec![]);
    let mut scratch = Scratch::default();
    let mut found = Vec::with_capacity(LIVEBOARD.len());
    for _ in 0..rounds {
        let t = Instant::now();
        let mut backend = Backend::open(source).await?;
        liveboard(&mut backend, &mut scratch, &mut found).await?;
        singles.push(t.elapsed().as_secs_f64() * 1e3);
        verify(&found, expected)?;
        bar.inc(1);
        let mut times = Vec::with_capacity(liveboards);
        for _ in 0..liveboards {
            let d = liveboard(&mut backend, &mut scratch, &mut found).await?;
            verify(&found, expected)?;
            hist.record(d.as_micros().max(1) as u64)
                .map_err(|e| e.to_string())?;
            times.push(d.as_secs_f64() * 1e3);
            bar.inc(1);
        }
        backend.close().await?;
        let mean =
            |n: usize| times[..n.min(times.len())].iter().sum::<f64>() / n.min(times.len()) as f64;
        avg100s.push(mean(100));
        avg500s.push(mean(500));
        all.extend(times);
    }
    Ok(Measured {
        single_ms: median(&mut singles),
        avg100_ms: median(&mut avg100s),
        avg500_ms: median(&mut avg500s),
        p50_ms: median(&mut all),
        hist,
    })
}

#[cfg(test)]
mod tests;
