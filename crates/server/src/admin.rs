//! The admin HTTP listener: `GET /metrics` (Prometheus text format 0.0.4)
//! and `GET /healthz`.
//!
//! It is deliberately small: HTTP/1.1 through hyper, two read-only routes,
//! no state of its own. What `/metrics` reports comes from a [`MetricsSource`]
//! supplied by whoever assembles the server, so this module knows nothing
//! of how the numbers are gathered.

use crate::listener::{Listener, Stream};
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::fmt::Write as _;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tiercache_engine::EngineStats;
use tokio::task::JoinSet;

/// Renders the current metrics, in Prometheus text format, into a string.
pub type MetricsSource = Arc<dyn Fn(&mut String) + Send + Sync>;

/// `Content-Type` of the Prometheus text exposition format.
pub const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// How long a client may take to send its request headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `/metrics` and `/healthz` on `listener` until `shutdown`
/// completes; requests in flight then get up to one second to finish.
pub async fn serve_admin(
    listener: Listener,
    metrics: MetricsSource,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    tracing::info!(addr = %listener.local_addr()?, "admin HTTP listening");
    let mut tasks = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok(Stream::Tcp(s)) => { tasks.spawn(serve_connection(s, metrics.clone())); }
                Ok(Stream::Unix(s)) => { tasks.spawn(serve_connection(s, metrics.clone())); }
                Err(e) => {
                    tracing::error!(error = %e, "admin accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
        }
    }
    if let Listener::Unix(_, path) = &listener {
        let _ = std::fs::remove_file(path);
    }
    drop(listener);
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    tasks.shutdown().await;
    Ok(())
}

async fn serve_connection<S>(stream: S, metrics: MetricsSource)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req| {
        let metrics = metrics.clone();
        async move { Ok::<_, Infallible>(route(&req, &metrics)) }
    });
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT);
    if let Err(e) = http.serve_connection(TokioIo::new(stream), service).await {
        tracing::debug!(error = %e, "admin connection ended with an error");
    }
}

/// Answers one request (split out so it can be tested without sockets).
fn route(req: &Request<Incoming>, metrics: &MetricsSource) -> Response<Full<Bytes>> {
    answer(req.method(), req.uri().path(), metrics)
}

fn answer(method: &Method, path: &str, metrics: &MetricsSource) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match path {
        "/metrics" | "/healthz" if method != Method::GET && method != Method::HEAD => {
            let mut r = text(
                StatusCode::METHOD_NOT_ALLOWED,
                "method not allowed\n".into(),
            );
            r.headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
            return r;
        }
        "/metrics" => {
            let mut out = String::with_capacity(4096);
            metrics(&mut out);
            (StatusCode::OK, METRICS_CONTENT_TYPE, out)
        }
        "/healthz" => (StatusCode::OK, "text/plain; charset=utf-8", "ok\n".into()),
        _ => (
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "not found: try /metrics or /healthz\n".into(),
        ),
    };
    let mut r = text(status, body);
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// Writes Prometheus text: `# HELP`/`# TYPE` once per metric family, then
/// its samples. Label values are escaped as the format requires.
///
/// ```
/// use tiercache_server::admin::Exposition;
/// let mut out = String::new();
/// let mut e = Exposition::new(&mut out);
/// e.family("tiercache_hits_total", "counter", "Reads answered by a tier.");
/// e.sample("tiercache_hits_total", &[("tier", "memory")], 42.0);
/// assert!(out.contains("# TYPE tiercache_hits_total counter\n"));
/// assert!(out.ends_with("tiercache_hits_total{tier=\"memory\"} 42\n"));
/// ```
pub struct Exposition<'a> {
    out: &'a mut String,
}

impl<'a> Exposition<'a> {
    /// Writes into `out`.
    pub fn new(out: &'a mut String) -> Self {
        Exposition { out }
    }

    /// Starts a metric family (`kind`: counter, gauge or histogram).
    pub fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
    }

    /// One sample of `name` with `labels`.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{k}=\"");
                for c in v.chars() {
                    match c {
                        '\\' => self.out.push_str("\\\\"),
                        '"' => self.out.push_str("\\\""),
                        '\n' => self.out.push_str("\\n"),
                        c => self.out.push(c),
                    }
                }
                self.out.push('"');
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {value}");
    }

    /// A family with a single unlabelled sample.
    pub fn single(&mut self, name: &str, kind: &str, help: &str, value: f64) {
        self.family(name, kind, help);
        self.sample(name, &[], value);
    }
}

/// The engine's counters as metric families (tier `memory` for the memory
/// tier; write-back figures summed over namespaces).
pub fn engine_metrics(e: &mut Exposition, s: &EngineStats) {
    let mem = [("tier", "memory")];
    let counters: [(&str, &str, u64); 4] = [
        (
            "tiercache_hits_total",
            "Reads answered by the tier.",
            s.hits,
        ),
        (
            "tiercache_misses_total",
            "Reads the tier could not answer.",
            s.misses,
        ),
        (
            "tiercache_evictions_total",
            "Entries evicted to stay within the tier's bound.",
            s.evictions,
        ),
        (
            "tiercache_expired_total",
            "Entries removed because their TTL passed.",
            s.expired,
        ),
    ];
    for (name, help, v) in counters {
        e.family(name, "counter", help);
        e.sample(name, &mem, v as f64);
    }
    let gauges: [(&str, &str, u64); 3] = [
        (
            "tiercache_entries",
            "Entries held by the tier.",
            s.memory_entries,
        ),
        (
            "tiercache_bytes",
            "Bytes charged in the tier (keys, values, per-entry overhead).",
            s.memory_bytes,
        ),
        (
            "tiercache_max_bytes",
            "The tier's byte bound.",
            s.memory_max_bytes,
        ),
    ];
    for (name, help, v) in gauges {
        e.family(name, "gauge", help);
        e.sample(name, &mem, v as f64);
    }
    e.single(
        "tiercache_writeback_pending",
        "gauge",
        "Keys written but not yet flushed to the system of record.",
        s.writeback_pending as f64,
    );
    e.single(
        "tiercache_writeback_oldest_age_seconds",
        "gauge",
        "Age of the oldest write waiting for write-back.",
        s.writeback_oldest_ms as f64 / 1000.0,
    );
    e.single(
        "tiercache_flushes_total",
        "counter",
        "Successful write-back flushes.",
        s.flushes as f64,
    );
    e.single(
        "tiercache_flush_errors_total",
        "counter",
        "Failed write-back flush attempts (retried).",
        s.flush_errors as f64,
    );
    e.single(
        "tiercache_store_lookups_skipped_total",
        "counter",
        "Memory-tier misses answered absent by the key filter without asking the stores.",
        s.store_lookups_skipped as f64,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn source() -> MetricsSource {
        Arc::new(|out: &mut String| {
            Exposition::new(out).single("tiercache_up", "gauge", "Always 1.", 1.0)
        })
    }

    async fn body(r: Response<Full<Bytes>>) -> String {
        let bytes = r.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn routes() {
        let m = source();
        let r = answer(&Method::GET, "/metrics", &m);
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()[CONTENT_TYPE], METRICS_CONTENT_TYPE);
        assert_eq!(
            body(r).await,
            "# HELP tiercache_up Always 1.\n# TYPE tiercache_up gauge\ntiercache_up 1\n"
        );
        let r = answer(&Method::GET, "/healthz", &m);
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(body(r).await, "ok\n");
        assert_eq!(
            answer(&Method::GET, "/nope", &m).status(),
            StatusCode::NOT_FOUND
        );
        let r = answer(&Method::POST, "/metrics", &m);
        assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(r.headers()[ALLOW], "GET, HEAD");
    }

    #[test]
    fn engine_counters_are_exposed() {
        let stats = EngineStats {
            hits: 7,
            misses: 3,
            memory_bytes: 1024,
            writeback_oldest_ms: 1500,
            ..Default::default()
        };
        let mut out = String::new();
        engine_metrics(&mut Exposition::new(&mut out), &stats);
        for line in [
            "# TYPE tiercache_hits_total counter",
            "tiercache_hits_total{tier=\"memory\"} 7",
            "tiercache_misses_total{tier=\"memory\"} 3",
            "tiercache_bytes{tier=\"memory\"} 1024",
            "tiercache_writeback_oldest_age_seconds 1.5",
        ] {
            assert!(out.lines().any(|l| l == line), "missing {line:?} in\n{out}");
        }
    }

    #[test]
    fn label_values_are_escaped() {
        let mut out = String::new();
        Exposition::new(&mut out).sample("m", &[("ns", "a\"b\\c\nd"), ("t", "x")], 1.5);
        assert_eq!(out, "m{ns=\"a\\\"b\\\\c\\nd\",t=\"x\"} 1.5\n");
    }
}
