//! tiercache's HTTP micro-cache: an RFC 9111 caching reverse proxy whose
//! responses live in the tiercache engine (memory tier over the configured
//! stores, SQLite by default), so a restart serves hits at once.
//!
//! What it is: an HTTP/1.1 reverse proxy in front of one plain-HTTP origin.
//! It forwards every method and path; stores responses to GET that RFC 9111
//! lets a shared cache store; answers GET and HEAD from them while fresh
//! (or stale where `stale-while-revalidate`, `stale-if-error` or the
//! client's `max-stale` allow); revalidates with conditional requests;
//! coalesces concurrent misses into one origin fetch per key; invalidates
//! after unsafe methods; and adds micro-caching knobs (default TTL,
//! per-path rules, key headers, size limit, purge, metrics).
//!
//! What it is not: no TLS (neither side), no HTTP/2, no upgrades
//! (WebSocket), no range assembly (`Range` requests pass through
//! untouched and nothing partial is stored), no `Vary`-aware content
//! negotiation beyond exact matching of normalised values, no ESI or
//! body transformation. It knows nothing of stores: it talks to an
//! [`Engine`](tiercache_engine::Engine).
//!
//! Map:
//! - [`policy`]: RFC 9111 as pure functions (no I/O), unit-tested
//!   against the RFC's sections.
//! - [`stored`]: the byte encoding of stored responses and `Vary` variant
//!   lists.
//! - [`key`]: cache keys, laid out so a URI or path prefix is a key prefix.
//! - [`config`]: [`ProxyConfig`] and per-path [`Rule`]s.
//! - [`proxy`]: [`HttpCache`], the request path (lookup, freshness,
//!   coalesced fetch, store, invalidation) — with [`proxy::flight`]
//!   (coalescing), [`proxy::cached`] (decoded responses), [`proxy::respond`]
//!   (`Age`, `X-Cache`, `Cache-Status`, 304s), [`proxy::body`].
//! - [`admin`]: purge (bearer token), metrics, health.
//! - [`metrics`]: counters in Prometheus text.
//! - [`server`]: the listener and graceful stop.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use tiercache_engine::{Engine, NamespaceConfig, WriteMode};
//! use tiercache_http::{HttpCache, ProxyConfig};
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! let engine = Arc::new(
//!     Engine::builder(dir.path())
//!         .namespace(NamespaceConfig::new("default", WriteMode::Back))
//!         .build()
//!         .await
//!         .unwrap(),
//! );
//! let mut config = ProxyConfig::new("http://127.0.0.1:8080".parse().unwrap());
//! config.default_ttl = Some(std::time::Duration::from_secs(1)); // micro-cache
//! let cache = HttpCache::new(engine.clone(), config).unwrap();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
//! let server = tokio::spawn(tiercache_http::serve(listener, cache, async {}));
//! server.await.unwrap().unwrap(); // the shutdown future was ready: stopped at once
//! engine.shutdown().await.unwrap();
//! # });
//! ```

#![warn(missing_docs)]

pub mod admin;
pub mod config;
pub mod key;
pub mod metrics;
pub mod policy;
pub mod proxy;
pub mod server;
pub mod stored;

pub use config::{ProxyConfig, Rule};
pub use proxy::{HttpCache, ProxyError};
pub use server::serve;
