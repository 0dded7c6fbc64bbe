//! The `pages` scenario: seed 004, the Sashimi CMS dev log. A blog serves
//! 6.6 KB pages rendered from a database row; a few popular posts take most
//! reads (Zipf's law), so a cache should help. The seed measured `/about`
//! with `ab -c 12`: MariaDB alone (its query cache) 5,197 req/s; with Redis
//! in front 4,257 req/s (worse: one more network hop); with an in-process
//! `ConcurrentHashMap` 8,929 req/s.
//!
//! Here an in-process hyper app serves `/page/N` (N in 1..=1,000): it gets
//! the row (title, body) and renders it into exactly 6,662 bytes of HTML
//! (the seed's document length). Three setups, each with its own app server
//! on a free port, differ only in where the row comes from:
//!
//! - `db` (baseline): every request runs `SELECT title, body FROM lab_pages
//!   WHERE id = ?` on MariaDB (`mysql_async`, a pool of 12 connections), as
//!   in the seed. Without MariaDB the scenario uses SQLite instead and
//!   records `db = sqlite` in the parameters. MariaDB's query cache is off
//!   by default in current releases (MySQL 8 removed it); rows come from
//!   InnoDB's buffer pool.
//! - `db+redis`: `GET` the row from Redis; on a miss query the database and
//!   `SET` it (the seed's Redis cache, one multiplexed connection).
//! - `tiercache`: tiercache's in-process memory tier in front of the
//!   database: `Engine::get_or_load`, the loader being the same query.
//!
//! Load: 12 keep-alive connections (`ab -c 12`), each request picking its
//! page Zipf-popular (s = 1.0 over 1,000 pages, page 1 the most popular), a
//! warm-up and then a timed run per setup. Every response is checked byte
//! for byte against the expected page (status 200, 6,662 bytes, right id);
//! a wrong answer fails the scenario. The database query count per setup is
//! reported (`db_queries`): all requests for `db`, at most about one per
//! page for the caches.
//!
//! Quick: 1 s warm-up + 4 s measured per setup (≈ 20 s with server
//! start-up). Full: 3 s warm-up + 20 s measured per setup.
//!
//! Metrics per setup: `req_per_sec`, `p99_ms`, `db_queries`; raw `ab`
//! percentiles; charts of req/s and p99.

mod db;

use crate::scenarios::http_app::{self, AppServer};
use crate::scenarios::http_load::{run_load, Choose, Load, LoadResult, Resource};
use crate::{Chart, ChartKind, Ctx, LabError, Percentiles, Scenario, ScenarioReport, Skipped};
use bytes::Bytes;
use db::{decode, encode, make_pages, render, Db, PageRow, PAGE_BYTES};
use http_body_util::Full;
use hyper::{Request, Response};
use std::sync::Arc;
use std::time::Duration;
use tiercache_engine::{Engine, EngineError, Entry, NamespaceConfig, StoreError, WriteMode};

const SCENARIO: Scenario = Scenario::Pages;

/// Sizes and timings of one run.
struct Params {
    pages: u32,
    connections: usize,
    zipf_s: f64,
    warmup: Duration,
    duration: Duration,
}

impl Params {
    fn new(quick: bool) -> Params {
        Params {
            pages: 1000,
            connections: 12,
            zipf_s: 1.0,
            warmup: Duration::from_secs(if quick { 1 } else { 3 }),
            duration: Duration::from_secs(if quick { 4 } else { 20 }),
        }
    }
}

/// Where a setup's app gets its rows.
enum Source {
    Db(Arc<Db>),
    Redis {
        db: Arc<Db>,
        conn: redis::aio::MultiplexedConnection,
        prefix: String,
    },
    Tier {
        db: Arc<Db>,
        engine: Arc<Engine>,
    },
}

impl Source {
    /// The rendered page `id`, or `None` when there is no such page.
    async fn page(&self, id: u32) -> Result<Option<String>, String> {
        match self {
            Source::Db(db) => Ok(db.fetch(id).await?.map(|(t, b)| render(id, &t, &b))),
            Source::Redis { db, conn, prefix } => {
                let key = format!("{prefix}{id}");
                let mut conn = conn.clone();
                let cached: Option<Vec<u8>> = redis::cmd("GET")
                    .arg(&key)
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| format!("redis GET: {e}"))?;
                if let Some(raw) = cached {
                    let (t, b) = decode(&raw)?;
                    return Ok(Some(render(id, t, b)));
                }
                let Some((t, b)) = db.fetch(id).await? else {
                    return Ok(None);
                };
                let () = redis::cmd("SET")
                    .arg(&key)
                    .arg(&encode(&t, &b)[..])
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| format!("redis SET: {e}"))?;
                Ok(Some(render(id, &t, &b)))
            }
            Source::Tier { db, engine } => {
                let key = format!("page:{id}");
                let found = engine
                    .get_or_load(key.as_bytes(), || async {
                        match db.fetch(id).await {
                            Ok(row) => Ok(row.map(|(t, b)| Entry::new(encode(&t, &b)))),
                            Err(e) => Err(EngineError::Store(StoreError::new(db.name(), e))),
                        }
                    })
                    .await
                    .map_err(|e| format!("tiercache: {e}"))?;
                match found {
                    None => Ok(None),
                    Some(entry) => {
                        let (t, b) = decode(&entry.value)?;
                        Ok(Some(render(id, t, b)))
                    }
                }
            }
        }
    }
}

/// The app: `/page/N` → the rendered page; 404 for other paths and
/// unknown pages; 500 (with the error) when the source fails.
async fn handle(source: Arc<Source>, req: Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
    let id = req
        .uri()
        .path()
        .strip_prefix("/page/")
        .and_then(|n| n.parse::<u32>().ok());
    let Some(id) = id else {
        return http_app::text(404, "no such path");
    };
    match source.page(id).await {
        Ok(Some(html)) => {
            let mut r = Response::new(Full::new(Bytes::from(html)));
            r.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("text/html; charset=utf-8"),
            );
            r
        }
        Ok(None) => http_app::text(404, "no such page"),
        Err(e) => http_app::text(500, e),
    }
}

/// Runs the scenario.
pub fn run(ctx: &mut Ctx) -> Result<ScenarioReport, LabError> {
    let err = |e: String| LabError::scenario(SCENARIO, e);
    let p = Params::new(ctx.quick());
    let mut report = ScenarioReport::new(SCENARIO);
    report.baseline = Some("db".into());
    report.param("quick", ctx.quick());
    report.param("pages", p.pages);
    report.param("page_bytes", PAGE_BYTES as u64);
    report.param("connections", p.connections as u64);
    report.param("zipf_s", p.zipf_s);
    report.param("warmup_s", p.warmup.as_secs_f64());
    report.param("duration_s", p.duration.as_secs_f64());
    report.param("keep_alive", true);

    let pages = make_pages(p.pages);
    let resources: Arc<Vec<Resource>> = Arc::new(
        pages
            .iter()
            .map(|r| Resource {
                path: format!("/page/{}", r.id),
                expected: Bytes::from(render(r.id, &r.title, &r.body)),
            })
            .collect(),
    );
    let tmp = tempfile::Builder::new()
        .prefix("tiercache-lab-pages")
        .tempdir()
        .map_err(|e| err(format!("temp dir: {e}")))?;

    let db = Arc::new(open_db(ctx, &pages, p.connections, tmp.path(), &mut report).map_err(err)?);
    let db_name = db.name();
    report.param("db", db_name);

    let mut results: Vec<(String, LoadResult, u64)> = Vec::new();
    for setup in ["db", "db+redis", "tiercache"] {
        let source = match make_source(ctx, setup, &db, tmp.path()) {
            Ok(Ok(s)) => s,
            Ok(Err(skip)) => {
                report.skipped.push(skip);
                continue;
            }
            Err(e) => return Err(err(e)),
        };
        let source = Arc::new(source);
        let app = {
            let source = source.clone();
            http_app::spawn(ctx.runtime(), move |req| handle(source.clone(), req))
                .map_err(|e| err(format!("{setup}: app server: {e}")))?
        };
        let before = db.queries();
        let result = measure(ctx, setup, &app, resources.clone(), &p).map_err(err)?;
        let queries = db.queries() - before;
        drop(app);
        if let Source::Tier { engine, .. } = &*source {
            ctx.runtime()
                .block_on(engine.shutdown())
                .map_err(|e| err(format!("tiercache: shutdown: {e}")))?;
        }
        check_queries(setup, &result, queries, p.pages).map_err(err)?;
        results.push((setup.to_string(), result, queries));
    }
    if let Ok(db) = Arc::try_unwrap(db) {
        ctx.runtime().block_on(db.close());
    }

    for (setup, r, queries) in &results {
        let pct = Percentiles::from_histogram_us(setup.as_str(), "request_latency", &r.hist);
        report.row(setup, "req_per_sec", "req/s", r.req_per_sec());
        report.row(setup, "p99_ms", "ms", pct.at(99.0).unwrap_or(0.0));
        report.row(setup, "db_queries", "count", *queries as f64);
        report.percentiles.push(pct);
    }
    if let Some((_, r, _)) = results.first() {
        let total: u64 = r.per_resource.iter().sum();
        let top = r.per_resource.first().copied().unwrap_or(0);
        let top10: u64 = r.per_resource.iter().take(10).sum();
        report.notes.push(format!(
            "Zipf popularity: page 1 took {:.1}% of requests, the top 10 pages {:.1}%",
            100.0 * top as f64 / total.max(1) as f64,
            100.0 * top10 as f64 / total.max(1) as f64
        ));
    }
    report.notes.push(format!(
        "every response was checked byte for byte against its page ({PAGE_BYTES} bytes, right id); \
         database: {}",
        db_name
    ));
    report.notes.push(
        "seed 004 (ab -c 12, one page, new connection per request): db 5,197 req/s; \
         db+redis 4,257 (82%); in-process map 8,929 (172%)"
            .into(),
    );
    let rps = |s: &str| report.value(s, "req_per_sec");
    if let (Some(d), Some(r), Some(t)) = (rps("db"), rps("db+redis"), rps("tiercache")) {
        report.notes.push(format!(
            "ordering here: tiercache {} db, db+redis {} db (seed: faster, slower)",
            if t > d {
                "faster than"
            } else {
                "NOT faster than"
            },
            if r < d { "slower than" } else { "faster than" },
        ));
    }
    let bars = |metric: &str| -> Vec<(String, f64)> {
        results
            .iter()
            .filter_map(|(s, _, _)| report.value(s, metric).map(|v| (s.clone(), v)))
            .collect()
    };
    let charts = vec![
        Chart {
            title: "CMS pages: requests per second (12 connections)".into(),
            value_label: "req/s".into(),
            lower_is_better: false,
            kind: ChartKind::Bars {
                bars: bars("req_per_sec"),
            },
        },
        Chart {
            title: "CMS pages: 99th percentile latency".into(),
            value_label: "ms".into(),
            lower_is_better: true,
            kind: ChartKind::Bars {
                bars: bars("p99_ms"),
            },
        },
    ];
    report.charts = charts;
    Ok(report)
}

/// MariaDB from the context, else SQLite in `dir` (noted in the report).
fn open_db(
    ctx: &mut Ctx,
    pages: &[PageRow],
    connections: usize,
    dir: &std::path::Path,
    report: &mut ScenarioReport,
) -> Result<Db, String> {
    match ctx.mariadb() {
        Ok(m) => {
            let url = m.url();
            ctx.runtime().block_on(Db::mysql(&url, pages, connections))
        }
        Err(why) => {
            report.notes.push(format!(
                "MariaDB unavailable ({why}): the database is SQLite instead"
            ));
            Db::sqlite(&dir.join("pages.db"), pages, connections)
        }
    }
}

/// The source of `setup`; `Ok(Err(..))` when its server is unavailable.
fn make_source(
    ctx: &mut Ctx,
    setup: &str,
    db: &Arc<Db>,
    dir: &std::path::Path,
) -> Result<Result<Source, Skipped>, String> {
    let db = db.clone();
    Ok(Ok(match setup {
        "db" => Source::Db(db),
        "db+redis" => {
            let url = match ctx.redis() {
                Ok(r) => r.url(),
                Err(why) => {
                    return Ok(Err(Skipped {
                        setup: setup.into(),
                        reason: why.to_string(),
                    }))
                }
            };
            let conn = ctx
                .runtime()
                .block_on(async {
                    redis::Client::open(url.as_str())?
                        .get_multiplexed_async_connection()
                        .await
                })
                .map_err(|e| format!("db+redis: connect to redis: {e}"))?;
            // A fresh prefix per run: nothing cached by an earlier run counts.
            let prefix = format!(
                "lab:pages:{}:{}:",
                std::process::id(),
                tiercache_engine::now_ms()
            );
            Source::Redis { db, conn, prefix }
        }
        "tiercache" => {
            let engine = ctx
                .runtime()
                .block_on(
                    Engine::builder(dir.join("engine"))
                        .memory_bytes(64 << 20)
                        // No stores: the memory tier is a pure cache; the
                        // database stays the system of record via the loader.
                        .namespace(NamespaceConfig::new("default", WriteMode::Back))
                        .build(),
                )
                .map_err(|e| format!("tiercache: engine: {e}"))?;
            Source::Tier {
                db,
                engine: Arc::new(engine),
            }
        }
        other => unreachable!("unknown setup {other}"),
    }))
}

/// Warm-up, then the timed run, each checked.
fn measure(
    ctx: &Ctx,
    setup: &str,
    app: &AppServer,
    resources: Arc<Vec<Resource>>,
    p: &Params,
) -> Result<LoadResult, String> {
    let choose = Choose::Zipf { s: p.zipf_s };
    let mut load = Load {
        connections: p.connections,
        duration: p.warmup,
        seed: 4,
    };
    let bar = ctx.progress(
        &format!("pages {setup}"),
        (p.warmup + p.duration).as_millis() as u64 / 100,
    );
    let io = |e: std::io::Error| format!("{setup}: load generator: {e}");
    let warm = run_load(
        app.addr,
        resources.clone(),
        choose,
        &load,
        Some(bar.clone()),
    )
    .map_err(io)?;
    warm.check(setup)?;
    bar.set_position(p.warmup.as_millis() as u64 / 100);
    load.duration = p.duration;
    load.seed = 40;
    let result = run_load(app.addr, resources, choose, &load, Some(bar.clone())).map_err(io)?;
    bar.finish_and_clear();
    result.check(setup)?;
    Ok(result)
}

/// The database saw what the setup implies: every request for `db`, about
/// one query per page (plus concurrent misses) for a cache.
fn check_queries(setup: &str, r: &LoadResult, queries: u64, pages: u32) -> Result<(), String> {
    let served = r.ok; // the timed run; the warm-up's queries are counted too
    if setup == "db" {
        if queries < served {
            return Err(format!(
                "db: {queries} database queries for {served} requests: some answers did not come from the database"
            ));
        }
    } else if queries > u64::from(pages) * 2 {
        return Err(format!(
            "{setup}: {queries} database queries for {pages} pages: the cache is not caching"
        ));
    }
    Ok(())
}
