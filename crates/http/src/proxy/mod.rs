//! [`HttpCache`]: the caching reverse proxy. One value per process, shared
//! by every connection; [`HttpCache::handle`] answers one request.
//!
//! A GET or HEAD request goes through these steps:
//! 1. admin paths and `PURGE` are answered by [`crate::admin`];
//! 2. bypass checks (rules, `Range`, preconditions other than
//!    `If-None-Match`/`If-Modified-Since`): forwarded as is;
//! 3. lookup by primary key, then by `Vary` variant (`HttpCache::lookup`);
//! 4. [`evaluate`]: fresh → HIT; stale but allowed → STALE (with a
//!    background refresh under `stale-while-revalidate`);
//! 5. otherwise one coalesced fetch per key ([`flight`]), conditional when
//!    a stored response has validators; its outcome is shared by every
//!    waiter when it may be.
//!
//! Any other method is forwarded with its body streamed, and a non-error
//! answer to an unsafe method invalidates the target URI (RFC 9111 §4.4).

pub mod body;
pub mod cached;
pub mod flight;
pub mod respond;
mod upstream;

use crate::config::ProxyConfig;
use crate::key;
use crate::metrics::{inc, Metrics};
use crate::policy::freshness::{evaluate, stale_if_error_allowed, Verdict};
use crate::policy::RequestDirectives;
use body::ProxyBody;
use bytes::Bytes;
use cached::{Cached, Decoded, DecodedCache};
use flight::{FlightOutcome, Flights, Role};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, COOKIE, HOST, IF_MATCH, IF_RANGE, IF_UNMODIFIED_SINCE, RANGE};
use hyper::http::request::Parts;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use respond::Outcome;
use std::net::SocketAddr;
use std::sync::Arc;
use tiercache_engine::{now_ms, Engine};

/// Why the proxy cannot start.
#[derive(Debug)]
pub struct ProxyError(pub String);

impl std::fmt::Display for ProxyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProxyError {}

/// The caching reverse proxy.
pub struct HttpCache {
    engine: Arc<Engine>,
    config: ProxyConfig,
    client: Client<HttpConnector, ProxyBody>,
    upstream_authority: hyper::http::uri::Authority,
    flights: Arc<Flights>,
    decoded: DecodedCache,
    metrics: Metrics,
}

/// What a lookup found.
struct Lookup {
    cached: Option<Arc<Cached>>,
    /// A variant list existed but no variant matched (RFC 9211 `vary-miss`).
    vary_miss: bool,
}

impl HttpCache {
    /// A proxy storing responses in `engine` (under `config.key_prefix`).
    /// Must be called within a Tokio runtime.
    pub fn new(engine: Arc<Engine>, config: ProxyConfig) -> Result<Arc<Self>, ProxyError> {
        match config.upstream.scheme_str() {
            Some("http") => {}
            Some("https") => {
                return Err(ProxyError(format!(
                    "upstream {}: https origins are not supported yet; put the proxy in front of the origin's plain-HTTP port",
                    config.upstream
                )))
            }
            _ => {
                return Err(ProxyError(format!(
                    "upstream {}: expected an http://host:port URL",
                    config.upstream
                )))
            }
        }
        let upstream_authority = config
            .upstream
            .authority()
            .cloned()
            .ok_or_else(|| ProxyError(format!("upstream {}: no host", config.upstream)))?;
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(
            config
                .upstream_timeout
                .min(std::time::Duration::from_secs(10)),
        ));
        let client = Client::builder(hyper_util::rt::TokioExecutor::new())
            .pool_idle_timeout(std::time::Duration::from_secs(60))
            .pool_max_idle_per_host(1024)
            .pool_timer(hyper_util::rt::TokioTimer::new())
            .timer(hyper_util::rt::TokioTimer::new())
            .build(connector);
        // Decoded records beside the engine: a quarter of the memory tier.
        let decoded = DecodedCache::new(engine.memory().max_bytes() / 4);
        Ok(Arc::new(HttpCache {
            engine,
            config,
            client,
            upstream_authority,
            flights: Arc::new(Flights::default()),
            decoded,
            metrics: Metrics::default(),
        }))
    }

    /// The proxy's counters.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The configuration.
    pub fn config(&self) -> &ProxyConfig {
        &self.config
    }

    /// The engine responses are stored in.
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Fetches in progress (for tests: zero once the proxy is idle).
    pub fn flights_in_progress(&self) -> usize {
        self.flights.len()
    }

    /// Answers one request. Never fails: origin and cache problems become
    /// `502`/`504` answers (or stale responses where allowed).
    pub async fn handle(
        self: &Arc<Self>,
        req: Request<Incoming>,
        remote: Option<SocketAddr>,
    ) -> Response<ProxyBody> {
        inc(&self.metrics.requests);
        if req.uri().path().starts_with(&self.config.admin_prefix) || req.method() == "PURGE" {
            return crate::admin::handle(self, req).await;
        }
        let host = host_of(&req);
        if *req.method() == Method::GET || *req.method() == Method::HEAD {
            let (parts, _body) = req.into_parts(); // a GET body has no meaning (RFC 9110 §9.3.1)
            if let Some(detail) = self.bypass_reason(&parts) {
                let req = Request::from_parts(parts, ProxyBody::Empty);
                return self
                    .forward(req, remote, &host, "bypass", Some(detail))
                    .await;
            }
            return self.cacheable(parts, remote, host).await;
        }
        let (parts, body) = req.into_parts();
        let body = if hyper::body::Body::is_end_stream(&body) {
            ProxyBody::Empty
        } else {
            ProxyBody::stream(body)
        };
        self.forward(
            Request::from_parts(parts, body),
            remote,
            &host,
            "method",
            None,
        )
        .await
    }

    /// Why a GET/HEAD must not use the cache, if it must not.
    fn bypass_reason(&self, parts: &Parts) -> Option<&'static str> {
        let h = &parts.headers;
        if h.contains_key(RANGE) || h.contains_key(IF_RANGE) {
            return Some("range");
        }
        if h.contains_key(IF_MATCH) || h.contains_key(IF_UNMODIFIED_SINCE) {
            return Some("precondition");
        }
        let rule = self.config.rule_for(parts.uri.path())?;
        if rule.bypass {
            return Some("rule");
        }
        if rule.bypass_headers.iter().any(|n| h.contains_key(n)) {
            return Some("rule-header");
        }
        if !rule.bypass_cookies.is_empty() && has_cookie(h, &rule.bypass_cookies) {
            return Some("rule-cookie");
        }
        None
    }

    async fn cacheable(
        self: &Arc<Self>,
        parts: Parts,
        remote: Option<SocketAddr>,
        host: String,
    ) -> Response<ProxyBody> {
        let pq = path_and_query(&parts);
        let req_cc = RequestDirectives::parse(&parts.headers);
        let key = key::primary(
            &self.config.key_prefix,
            &host,
            pq,
            &self.config.key_headers,
            &parts.headers,
        );
        let found = self.lookup(&key, &parts.headers, parts.uri.path()).await;
        let now = now_ms();
        if let Some(c) = &found.cached {
            let age = c.age(now);
            let stale = match evaluate(c.lifetime, age, &c.cc, &req_cc) {
                Verdict::Fresh => {
                    inc(&self.metrics.hits);
                    return respond::from_cached(
                        c,
                        &parts.method,
                        &parts.headers,
                        &Outcome::Hit,
                        now,
                    );
                }
                Verdict::StaleAccepted => Some("max-stale"),
                Verdict::StaleWhileRevalidate => {
                    self.refresh_in_background(&key, &parts, remote, c.clone());
                    Some("stale-while-revalidate")
                }
                Verdict::Validate => None,
            };
            if let Some(detail) = stale {
                inc(&self.metrics.stale);
                return respond::from_cached(
                    c,
                    &parts.method,
                    &parts.headers,
                    &Outcome::Stale(detail),
                    now,
                );
            }
        }
        if req_cc.only_if_cached {
            // RFC 9111 §5.2.1.7.
            inc(&self.metrics.only_if_cached_misses);
            return respond::error(
                StatusCode::GATEWAY_TIMEOUT,
                "only-if-cached: no stored response satisfies the request",
                &Outcome::Miss {
                    fwd: "uri-miss",
                    fwd_status: 504,
                    stored: false,
                    collapsed: false,
                    detail: Some("only-if-cached"),
                },
            );
        }
        let fwd = match (&found.cached, found.vary_miss) {
            (None, true) => "vary-miss",
            (None, false) => "uri-miss",
            (Some(_), _)
                if req_cc.no_cache || req_cc.max_age.is_some() || req_cc.min_fresh.is_some() =>
            {
                "request"
            }
            (Some(_), _) => "stale",
        };
        inc(&self.metrics.misses);
        self.fetch_coalesced(key, parts, remote, found.cached, req_cc, fwd)
            .await
    }

    /// The stored response for a request: the record at the primary key,
    /// or, when that is a variant list, the variant its `Vary` fields select.
    async fn lookup(&self, key: &Bytes, request: &HeaderMap, path: &str) -> Lookup {
        let none = Lookup {
            cached: None,
            vary_miss: false,
        };
        match self.read(key, path).await {
            None => none,
            Some(Decoded::Response(c)) if c.vary.is_empty() => Lookup {
                cached: Some(c),
                vary_miss: false,
            },
            Some(Decoded::Response(_)) => none,
            Some(Decoded::Variants(fields)) => {
                let (vkey, secondary) = key::variant(key, &fields, request);
                match self.read(&vkey, path).await {
                    Some(Decoded::Response(c)) if c.stored.variant == secondary => Lookup {
                        cached: Some(c),
                        vary_miss: false,
                    },
                    _ => Lookup {
                        cached: None,
                        vary_miss: true,
                    },
                }
            }
        }
    }

    /// One record from the engine, decoded (once per stored buffer).
    async fn read(&self, key: &Bytes, path: &str) -> Option<Decoded> {
        let entry = match self.engine.session().get(key).await {
            Ok(e) => e?,
            Err(e) => {
                inc(&self.metrics.cache_errors);
                tracing::warn!(error = %e, "reading the HTTP cache failed; treating as a miss");
                return None;
            }
        };
        if let Some(d) = self.decoded.get(key, &entry.value) {
            return Some(d);
        }
        let d = Decoded::decode(&entry.value, &self.config, path)?;
        self.decoded.insert(key.clone(), entry.value, d.clone());
        Some(d)
    }

    /// Starts a background revalidation of `key` unless one is running.
    fn refresh_in_background(
        self: &Arc<Self>,
        key: &Bytes,
        parts: &Parts,
        remote: Option<SocketAddr>,
        stored: Arc<Cached>,
    ) {
        let Some(guard) = self.flights.try_lead(key) else {
            return;
        };
        inc(&self.metrics.background_refreshes);
        let this = self.clone();
        let key = key.clone();
        let up = self.upstream_get(parts, remote);
        let path = parts.uri.path().to_owned();
        let req_headers = parts.headers.clone();
        tokio::spawn(async move {
            let fetched = this
                .fetch(
                    &key,
                    up,
                    &req_headers,
                    &path,
                    Some(stored),
                    true,
                    "stale",
                    false,
                )
                .await;
            guard.finish(fetched.outcome_for_waiters());
        });
    }

    /// Fetches through the key's flight: leads it (the fetch runs as its own
    /// task) or waits for it.
    async fn fetch_coalesced(
        self: &Arc<Self>,
        key: Bytes,
        parts: Parts,
        remote: Option<SocketAddr>,
        stored: Option<Arc<Cached>>,
        req_cc: RequestDirectives,
        fwd: &'static str,
    ) -> Response<ProxyBody> {
        let store_ok = !req_cc.no_store;
        for _ in 0..3 {
            match self.flights.join(&key) {
                Role::Leader(guard) => {
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    let this = self.clone();
                    let up = self.upstream_get(&parts, remote);
                    let (key, headers, path) = (
                        key.clone(),
                        parts.headers.clone(),
                        parts.uri.path().to_owned(),
                    );
                    let stored_for_fetch = stored.clone();
                    tokio::spawn(async move {
                        let fetched = this
                            .fetch(
                                &key,
                                up,
                                &headers,
                                &path,
                                stored_for_fetch,
                                store_ok,
                                fwd,
                                false,
                            )
                            .await;
                        guard.finish(fetched.outcome_for_waiters());
                        let _ = tx.send(fetched);
                    });
                    return match rx.await {
                        Ok(f) => self.answer(f, &parts, stored.as_deref(), &req_cc),
                        Err(_) => respond::error(
                            StatusCode::BAD_GATEWAY,
                            "the origin fetch failed",
                            &miss(fwd, 502, Some("fetch-failed")),
                        ),
                    };
                }
                Role::Waiter(rx) => {
                    inc(&self.metrics.coalesced_waiters);
                    let waited =
                        tokio::time::timeout(self.config.coalesce_timeout, flight::wait(rx)).await;
                    let outcome = match waited {
                        Err(_) => {
                            inc(&self.metrics.coalesce_timeouts);
                            return self.give_up(
                                &parts,
                                stored.as_deref(),
                                &req_cc,
                                StatusCode::GATEWAY_TIMEOUT,
                                "coalesce-timeout",
                            );
                        }
                        Ok(None) => continue, // the flight died: retry
                        Ok(Some(o)) => o,
                    };
                    match &*outcome {
                        FlightOutcome::Shared {
                            cached,
                            revalidated,
                        } => {
                            let fits = cached.vary.is_empty()
                                || key::variant(&key, &cached.vary, &parts.headers).1
                                    == cached.stored.variant;
                            if fits {
                                let o = Outcome::Miss {
                                    fwd,
                                    fwd_status: if *revalidated {
                                        304
                                    } else {
                                        cached.stored.status.as_u16()
                                    },
                                    stored: true,
                                    collapsed: true,
                                    detail: None,
                                };
                                return respond::from_cached(
                                    cached,
                                    &parts.method,
                                    &parts.headers,
                                    &o,
                                    now_ms(),
                                );
                            }
                            break; // another variant: fetch our own
                        }
                        FlightOutcome::NotShared => break,
                        FlightOutcome::Failed { status, response } => {
                            return self.failed(
                                *status,
                                response.as_deref(),
                                &parts,
                                stored.as_deref(),
                                &req_cc,
                                fwd,
                            );
                        }
                    }
                }
            }
        }
        // Uncoalesced: the shared outcome did not fit this request.
        let up = self.upstream_get(&parts, remote);
        let f = self
            .fetch(
                &key,
                up,
                &parts.headers,
                parts.uri.path(),
                stored.clone(),
                store_ok,
                fwd,
                false,
            )
            .await;
        self.answer(f, &parts, stored.as_deref(), &req_cc)
    }

    /// The answer to the request that ran a fetch.
    fn answer(
        &self,
        f: upstream::Fetched,
        parts: &Parts,
        stored: Option<&Cached>,
        req_cc: &RequestDirectives,
    ) -> Response<ProxyBody> {
        match f {
            upstream::Fetched::Shared {
                cached,
                revalidated,
                fwd,
            } => {
                let o = Outcome::Miss {
                    fwd,
                    fwd_status: if revalidated {
                        304
                    } else {
                        cached.stored.status.as_u16()
                    },
                    stored: true,
                    collapsed: false,
                    detail: None,
                };
                respond::from_cached(&cached, &parts.method, &parts.headers, &o, now_ms())
            }
            upstream::Fetched::Own(r) => r,
            upstream::Fetched::Failed {
                status,
                response,
                fwd,
            } => self.failed(status, response.as_deref(), parts, stored, req_cc, fwd),
        }
    }

    /// The origin failed: a stale response when stale-if-error (or the
    /// request's max-stale) allows, else the origin's error response, else
    /// `502`/`504`.
    fn failed(
        &self,
        status: StatusCode,
        response: Option<&Cached>,
        parts: &Parts,
        stored: Option<&Cached>,
        req_cc: &RequestDirectives,
        fwd: &'static str,
    ) -> Response<ProxyBody> {
        let now = now_ms();
        if let Some(s) = stored {
            if stale_if_error_allowed(s.lifetime, s.age(now), &s.cc, req_cc) {
                inc(&self.metrics.stale);
                return respond::from_cached(
                    s,
                    &parts.method,
                    &parts.headers,
                    &Outcome::Stale("stale-if-error"),
                    now,
                );
            }
        }
        if let Some(r) = response {
            let o = miss(fwd, r.stored.status.as_u16(), None);
            return respond::from_cached(r, &parts.method, &parts.headers, &o, now);
        }
        let msg = if status == StatusCode::GATEWAY_TIMEOUT {
            "the origin did not answer in time"
        } else {
            "the origin could not be reached or sent an incomplete response"
        };
        respond::error(
            status,
            msg,
            &miss(fwd, status.as_u16(), Some("upstream-error")),
        )
    }

    /// A waiter that timed out: stale if allowed, else `status`.
    fn give_up(
        &self,
        parts: &Parts,
        stored: Option<&Cached>,
        req_cc: &RequestDirectives,
        status: StatusCode,
        detail: &'static str,
    ) -> Response<ProxyBody> {
        let now = now_ms();
        if let Some(s) = stored {
            if stale_if_error_allowed(s.lifetime, s.age(now), &s.cc, req_cc) {
                inc(&self.metrics.stale);
                return respond::from_cached(
                    s,
                    &parts.method,
                    &parts.headers,
                    &Outcome::Stale(detail),
                    now,
                );
            }
        }
        respond::error(
            status,
            "timed out waiting for another request's fetch of this URL from the origin",
            &miss("uri-miss", status.as_u16(), Some(detail)),
        )
    }

    /// Deletes every stored record whose key starts with `prefix`;
    /// returns how many.
    pub async fn delete_prefix(&self, prefix: &[u8]) -> Result<u64, tiercache_engine::EngineError> {
        let mut s = self.engine.session();
        let mut after: Option<Bytes> = None;
        let mut n = 0;
        loop {
            let page = s.scan_keys(after.as_deref(), prefix, 1000).await?;
            if !page.keys.is_empty() {
                n += s.delete_many(&page.keys).await?;
                for k in &page.keys {
                    self.decoded.remove(k);
                }
            }
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        s.commit().await?;
        Ok(n)
    }
}

fn miss(fwd: &'static str, fwd_status: u16, detail: Option<&'static str>) -> Outcome {
    Outcome::Miss {
        fwd,
        fwd_status,
        stored: false,
        collapsed: false,
        detail,
    }
}

/// The request's host (`Host`, else the URI's authority), lower-cased.
fn host_of<B>(req: &Request<B>) -> String {
    req.headers()
        .get(HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| req.uri().authority().map(|a| a.as_str()))
        .unwrap_or("")
        .to_ascii_lowercase()
}

fn path_and_query(parts: &Parts) -> &str {
    parts
        .uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/")
}

/// True when the `Cookie` header names any of `names`.
fn has_cookie(h: &HeaderMap, names: &[String]) -> bool {
    h.get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|s| s.split(';'))
        .filter_map(|kv| kv.split('=').next())
        .any(|name| names.iter().any(|n| n == name.trim()))
}
