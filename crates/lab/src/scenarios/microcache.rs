//! The `microcache` scenario: seed 002, micro-caching a slow API. The
//! seed's `/api/v1/places` returned 672,864 bytes of JSON at 1.68 req/s
//! (`ab -t 30 -c 10`); nginx's `proxy_cache` in front served 355 req/s
//! (+15,078%), memcached as an application-level response cache 151 req/s
//! (+9,363%).
//!
//! Here the origin is an in-process hyper server answering
//! `/api/v1/places` with a deterministic 672,864-byte JSON list after a
//! delay (200 ms quick, 500 ms full; a sleep, standing for the seed's slow
//! query, so the origin itself uses no CPU) with
//! `Cache-Control: public, max-age=1, stale-while-revalidate=10`: a
//! one-second micro-cache lifetime every proxy honours alike. Setups:
//!
//! - `direct` (baseline): clients hit the origin.
//! - `tiercache`: tiercache's HTTP micro-cache (`tiercache-http`) in
//!   process, its engine as `tiercache proxy` sets it up by default (memory
//!   tier, SQLite write-back store below).
//! - `nginx`: `nginx` with `proxy_cache` from a generated configuration in
//!   a temporary directory (one process; `proxy_cache_lock on`, stale
//!   copies served while one request updates: `scripts/bench-proxy.sh`'s
//!   settings). `not installed (nginx)` when absent.
//! - `memcached-app`: the seed's approach: an in-process app that looks the
//!   response up in memcached by URL and, on a miss, fetches it from the
//!   origin and stores it for one second (no coalescing, no stale copies,
//!   like the seed's app).
//!
//! Load: 10 keep-alive connections (`ab -c 10`) for a fixed time after a
//! warm-up (not for `direct`, which has nothing to warm): quick 3 s
//! (`direct`) / 1 s + 4 s (the caches); full 30 s like the seed's `ab -t 30`
//! after a 2 s warm-up. Every response body is compared byte for byte with
//! the document; a wrong or failed response fails the scenario. The origin
//! counts the requests it serves per setup (`origin_requests`): all of
//! them for `direct`, about one per second of run for a micro-cache.
//!
//! Metrics per setup: `req_per_sec`, `improvement_pct` (the seed's
//! "increase / original × 100"), `p50_ms`, `p99_ms`, `origin_requests`;
//! raw `ab` percentiles; a chart of req/s.

mod nginx;
mod origin;

use crate::scenarios::http_load::{run_load, Choose, Load, LoadResult, Resource};
use crate::{Chart, ChartKind, Ctx, LabError, Percentiles, Scenario, ScenarioReport, Skipped};
use origin::{Origin, DOC_BYTES, PATH};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tiercache_engine::{Engine, NamespaceConfig, WriteMode};
use tiercache_http::{HttpCache, ProxyConfig};
use tiercache_stores::SqliteStore;

const SCENARIO: Scenario = Scenario::Microcache;

/// The setups, baseline first.
const SETUPS: [&str; 4] = ["direct", "tiercache", "nginx", "memcached-app"];

struct Params {
    connections: usize,
    origin_delay: Duration,
    direct_duration: Duration,
    warmup: Duration,
    duration: Duration,
}

impl Params {
    fn new(quick: bool) -> Params {
        if quick {
            Params {
                connections: 10,
                origin_delay: Duration::from_millis(200),
                direct_duration: Duration::from_secs(3),
                warmup: Duration::from_secs(1),
                duration: Duration::from_secs(4),
            }
        } else {
            Params {
                connections: 10,
                origin_delay: Duration::from_millis(500),
                direct_duration: Duration::from_secs(30),
                warmup: Duration::from_secs(2),
                duration: Duration::from_secs(30),
            }
        }
    }
}

/// A setup's front end, stopped when dropped.
enum Front {
    Origin,
    Tiercache {
        addr: SocketAddr,
        engine: Arc<Engine>,
        stop: tokio::sync::oneshot::Sender<()>,
        task: tokio::task::JoinHandle<std::io::Result<()>>,
        _dir: tempfile::TempDir,
    },
    Nginx(nginx::Nginx),
    App(crate::scenarios::http_app::AppServer),
}

/// Runs the scenario.
pub fn run(ctx: &mut Ctx) -> Result<ScenarioReport, LabError> {
    let err = |e: String| LabError::scenario(SCENARIO, e);
    let p = Params::new(ctx.quick());
    let mut report = ScenarioReport::new(SCENARIO);
    report.baseline = Some("direct".into());
    report.param("quick", ctx.quick());
    report.param("path", PATH);
    report.param("document_bytes", DOC_BYTES as u64);
    report.param("connections", p.connections as u64);
    report.param("origin_delay_ms", p.origin_delay.as_millis() as u64);
    report.param("cache_control", origin::CACHE_CONTROL_VALUE);
    report.param("memcached_app_ttl_s", origin::APP_TTL.as_secs_f64());
    report.param("direct_duration_s", p.direct_duration.as_secs_f64());
    report.param("warmup_s", p.warmup.as_secs_f64());
    report.param("duration_s", p.duration.as_secs_f64());
    report.param("keep_alive", true);

    let doc = origin::document();
    let origin = Origin::start(ctx.runtime(), p.origin_delay, doc.clone())
        .map_err(|e| err(format!("origin: {e}")))?;
    let resources = Arc::new(vec![Resource {
        path: PATH.to_string(),
        expected: doc,
    }]);

    let mut results: Vec<(&str, LoadResult, u64)> = Vec::new();
    for setup in SETUPS {
        let front = match start(ctx, setup, origin.server.addr).map_err(err)? {
            Ok(f) => f,
            Err(skip) => {
                report.skipped.push(skip);
                continue;
            }
        };
        let addr = match &front {
            Front::Origin => origin.server.addr,
            Front::Tiercache { addr, .. } => *addr,
            Front::Nginx(n) => n.addr,
            Front::App(a) => a.addr,
        };
        let before = origin.requests();
        let measured = measure(ctx, setup, addr, resources.clone(), &p);
        let origin_requests = origin.requests() - before;
        stop(ctx, front).map_err(err)?;
        let result = measured.map_err(err)?;
        check_origin(setup, &result, origin_requests).map_err(err)?;
        results.push((setup, result, origin_requests));
    }
    drop(origin);

    let base = results
        .iter()
        .find(|(s, _, _)| *s == "direct")
        .map(|(_, r, _)| r.req_per_sec());
    for (setup, r, origin_requests) in &results {
        let pct = Percentiles::from_histogram_us(*setup, "request_latency", &r.hist);
        let rps = r.req_per_sec();
        report.row(setup, "req_per_sec", "req/s", rps);
        if let Some(base) = base {
            report.row(setup, "improvement_pct", "%", (rps - base) / base * 100.0);
        }
        report.row(setup, "p50_ms", "ms", pct.at(50.0).unwrap_or(0.0));
        report.row(setup, "p99_ms", "ms", pct.at(99.0).unwrap_or(0.0));
        report.row(setup, "origin_requests", "count", *origin_requests as f64);
        report.percentiles.push(pct);
    }
    report.notes.push(format!(
        "every response was compared byte for byte with the {DOC_BYTES}-byte document; \
         origin_requests counts warm-up and measured requests that reached the origin"
    ));
    report.notes.push(
        "seed 002 (ab -t 30 -c 10, TLS): without cache 1.68 req/s; nginx 355 (+15,078%); \
         memcached 151 (+9,363%)"
            .into(),
    );
    report.notes.push(
        "memcached-app, like the seed's app, neither coalesces misses nor serves stale copies: \
         each second the entry expires and the requests arriving during the refetch wait for the origin"
            .into(),
    );
    report.charts.push(Chart {
        title: format!(
            "Micro-caching a slow {DOC_BYTES}-byte API: requests per second ({} connections)",
            p.connections
        ),
        value_label: "req/s".into(),
        lower_is_better: false,
        kind: ChartKind::Bars {
            bars: results
                .iter()
                .map(|(s, r, _)| (s.to_string(), r.req_per_sec()))
                .collect(),
        },
    });
    Ok(report)
}

/// Starts `setup`'s front end in front of `origin`; `Ok(Err(..))` when its
/// server is not installed.
fn start(ctx: &mut Ctx, setup: &str, origin: SocketAddr) -> Result<Result<Front, Skipped>, String> {
    let skip = |why: crate::Unavailable| {
        Ok(Err(Skipped {
            setup: setup.into(),
            reason: why.to_string(),
        }))
    };
    Ok(Ok(match setup {
        "direct" => Front::Origin,
        "tiercache" => start_tiercache(ctx, origin)?,
        "nginx" => {
            let bin = match ctx.tool("nginx") {
                Ok(b) => b,
                Err(why) => return skip(why),
            };
            Front::Nginx(nginx::Nginx::start(&bin, origin)?)
        }
        "memcached-app" => {
            let memcached = match ctx.memcached() {
                Ok(m) => m.addr(),
                Err(why) => return skip(why),
            };
            Front::App(origin::memcached_app(ctx.runtime(), memcached, origin)?)
        }
        other => unreachable!("unknown setup {other}"),
    }))
}

/// tiercache's HTTP cache in process, over the engine `tiercache proxy`
/// opens by default: the memory tier with SQLite write-back below.
fn start_tiercache(ctx: &Ctx, origin: SocketAddr) -> Result<Front, String> {
    let dir = tempfile::Builder::new()
        .prefix("tiercache-lab-microcache")
        .tempdir()
        .map_err(|e| format!("tiercache: temp dir: {e}"))?;
    let sqlite = SqliteStore::open("sqlite", &dir.path().join("tiercache.db"), "kv")
        .map_err(|e| format!("tiercache: {e}"))?;
    let rt = ctx.runtime();
    let engine = rt
        .block_on(
            Engine::builder(dir.path())
                .namespace(NamespaceConfig::new("default", WriteMode::Back).store(Arc::new(sqlite)))
                .build(),
        )
        .map_err(|e| format!("tiercache: engine: {e}"))?;
    let engine = Arc::new(engine);
    let upstream = format!("http://{origin}")
        .parse()
        .map_err(|e| format!("tiercache: upstream: {e}"))?;
    let cache = HttpCache::new(engine.clone(), ProxyConfig::new(upstream))
        .map_err(|e| format!("tiercache: {e}"))?;
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .map_err(|e| format!("tiercache: listen: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("tiercache: {e}"))?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = rt.spawn(tiercache_http::serve(listener, cache, async {
        let _ = stopped.await;
    }));
    Ok(Front::Tiercache {
        addr,
        engine,
        stop,
        task,
        _dir: dir,
    })
}

/// Stops a front end; tiercache's gracefully (server, then engine).
fn stop(ctx: &Ctx, front: Front) -> Result<(), String> {
    if let Front::Tiercache {
        engine, stop, task, ..
    } = front
    {
        let _ = stop.send(());
        ctx.runtime().block_on(async {
            task.await
                .map_err(|e| format!("tiercache: server task: {e}"))?
                .map_err(|e| format!("tiercache: server: {e}"))?;
            engine
                .shutdown()
                .await
                .map_err(|e| format!("tiercache: engine shutdown: {e}"))
        })?;
    }
    Ok(())
}

/// The warm-up (caches only), then the timed run, each checked.
fn measure(
    ctx: &Ctx,
    setup: &str,
    addr: SocketAddr,
    resources: Arc<Vec<Resource>>,
    p: &Params,
) -> Result<LoadResult, String> {
    let direct = setup == "direct";
    let (warmup, duration) = if direct {
        (Duration::ZERO, p.direct_duration)
    } else {
        (p.warmup, p.duration)
    };
    let bar = ctx.progress(
        &format!("microcache {setup}"),
        (warmup + duration).as_millis() as u64 / 100,
    );
    let io = |e: std::io::Error| format!("{setup}: load generator: {e}");
    if !warmup.is_zero() {
        let load = Load {
            connections: p.connections,
            duration: warmup,
            seed: 2,
        };
        let warm = run_load(
            addr,
            resources.clone(),
            Choose::First,
            &load,
            Some(bar.clone()),
        )
        .map_err(io)?;
        warm.check(setup)?;
        bar.set_position(warmup.as_millis() as u64 / 100);
    }
    let load = Load {
        connections: p.connections,
        duration,
        seed: 2,
    };
    let result = run_load(addr, resources, Choose::First, &load, Some(bar.clone())).map_err(io)?;
    bar.finish_and_clear();
    result.check(setup)?;
    Ok(result)
}

/// The origin saw what the setup implies: every request when direct, far
/// fewer behind a micro-cache (about one per second; the memcached app
/// sends each concurrent miss, up to one per connection per second).
fn check_origin(setup: &str, r: &LoadResult, origin_requests: u64) -> Result<(), String> {
    if setup == "direct" {
        if origin_requests < r.ok {
            return Err(format!(
                "direct: the origin served {origin_requests} requests for {} answers",
                r.ok
            ));
        }
    } else if origin_requests * 4 > r.ok {
        return Err(format!(
            "{setup}: {origin_requests} of {} requests reached the origin: it is not caching",
            r.ok
        ));
    }
    Ok(())
}
