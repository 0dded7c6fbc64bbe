//! [`ProxyConfig`]: what the proxy needs to run, already validated. The
//! binary builds it from `[http_cache]` (crate `tiercache-config`); tests
//! build it directly.

use hyper::header::HeaderName;
use hyper::Uri;
use std::time::Duration;

/// A per-path-prefix rule (`[[http_cache.rule]]`). The longest matching
/// prefix applies.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rule {
    /// Path prefix (`/api/`), matched against the request path.
    pub prefix: String,
    /// Overrides the freshness lifetime of storable responses under the
    /// prefix (never applied to responses that set a cookie).
    pub ttl: Option<Duration>,
    /// Freshness lifetime for responses without freshness information under
    /// the prefix (replaces the global `default_ttl`).
    pub default_ttl: Option<Duration>,
    /// Never cache under this prefix: every request is forwarded.
    pub bypass: bool,
    /// Forward (do not use or fill the cache) when the request has any of
    /// these header fields.
    pub bypass_headers: Vec<HeaderName>,
    /// Forward when the request has any of these cookies.
    pub bypass_cookies: Vec<String>,
}

/// The proxy's settings.
#[derive(Clone, Debug)]
pub struct ProxyConfig {
    /// The origin: `http://host:port` (a path, if any, is ignored).
    pub upstream: Uri,
    /// Freshness lifetime for responses without freshness information;
    /// `None` = RFC 9111 behaviour (not reused without validation).
    pub default_ttl: Option<Duration>,
    /// Per-path rules.
    pub rules: Vec<Rule>,
    /// Request header fields added to the cache key (beyond method, host,
    /// path and query), e.g. `accept-encoding` for an origin that forgets
    /// `Vary`.
    pub key_headers: Vec<HeaderName>,
    /// Responses larger than this are forwarded, not stored. Default 8 MiB.
    pub max_object_size: u64,
    /// How long a request waits for another request's in-flight fetch of
    /// the same key before giving up with a stale response (when allowed)
    /// or `504`. Default 10 s.
    pub coalesce_timeout: Duration,
    /// How long the origin may take to answer (headers and, for stored
    /// responses, the whole body). Default 30 s.
    pub upstream_timeout: Duration,
    /// How long a stale response with a validator is kept, past its stale
    /// windows, for conditional revalidation. Default 10 min.
    pub stale_retention: Duration,
    /// Bearer token for purges; `None` disables purging.
    pub purge_token: Option<String>,
    /// Path prefix of the admin endpoints (`purge`, `metrics`). Default
    /// `/_tiercache/`.
    pub admin_prefix: String,
    /// Engine key prefix of every stored record. Default `http:`.
    pub key_prefix: String,
    /// Largest request head (request line and header fields) accepted from
    /// a client, bytes; bigger gets `431`. Default 64 KiB.
    pub max_header_bytes: usize,
}

impl ProxyConfig {
    /// Defaults for an origin.
    ///
    /// ```
    /// let c = tiercache_http::ProxyConfig::new("http://127.0.0.1:8080".parse().unwrap());
    /// assert_eq!(c.max_object_size, 8 << 20);
    /// assert!(c.default_ttl.is_none());
    /// ```
    pub fn new(upstream: Uri) -> Self {
        ProxyConfig {
            upstream,
            default_ttl: None,
            rules: Vec::new(),
            key_headers: Vec::new(),
            max_object_size: 8 << 20,
            coalesce_timeout: Duration::from_secs(10),
            upstream_timeout: Duration::from_secs(30),
            stale_retention: Duration::from_secs(600),
            purge_token: None,
            admin_prefix: "/_tiercache/".into(),
            key_prefix: "http:".into(),
            max_header_bytes: 64 << 10,
        }
    }

    /// The rule with the longest prefix of `path`, if any.
    pub fn rule_for(&self, path: &str) -> Option<&Rule> {
        self.rules
            .iter()
            .filter(|r| path.starts_with(&r.prefix))
            .max_by_key(|r| r.prefix.len())
    }
}
