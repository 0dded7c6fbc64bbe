//! Counters of the proxy, rendered as Prometheus text.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counters since start. All relaxed atomics: they are statistics.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Requests received (admin requests included).
    pub requests: AtomicU64,
    /// Answered from a fresh stored response.
    pub hits: AtomicU64,
    /// Answered after going to the origin for a GET/HEAD (stored or not).
    pub misses: AtomicU64,
    /// Answered with a stale stored response (stale-while-revalidate,
    /// stale-if-error, max-stale).
    pub stale: AtomicU64,
    /// Forwarded without the cache (unsafe methods, rules, Range, …).
    pub bypass: AtomicU64,
    /// Revalidations answered `304 Not Modified` by the origin.
    pub revalidated: AtomicU64,
    /// Responses written to the cache.
    pub stored: AtomicU64,
    /// Origin failures: connection errors, timeouts, truncated bodies.
    pub upstream_errors: AtomicU64,
    /// Requests that waited for another request's fetch instead of
    /// fetching themselves.
    pub coalesced_waiters: AtomicU64,
    /// Waiters released by the coalescing timeout.
    pub coalesce_timeouts: AtomicU64,
    /// Background refreshes started (stale-while-revalidate).
    pub background_refreshes: AtomicU64,
    /// `only-if-cached` requests answered 504.
    pub only_if_cached_misses: AtomicU64,
    /// Stored records removed by invalidation (RFC 9111 §4.4).
    pub invalidated: AtomicU64,
    /// Stored records removed by purge requests.
    pub purged: AtomicU64,
    /// Engine errors while reading or writing the cache (answered as misses).
    pub cache_errors: AtomicU64,
}

/// Adds one to a counter.
pub(crate) fn inc(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

impl Metrics {
    /// Writes every counter in Prometheus text format 0.0.4.
    ///
    /// ```
    /// let m = tiercache_http::metrics::Metrics::default();
    /// let mut out = String::new();
    /// m.render(&mut out);
    /// assert!(out.contains("tiercache_http_requests_total{outcome=\"hit\"} 0\n"));
    /// ```
    pub fn render(&self, out: &mut String) {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "# HELP tiercache_http_requests_total HTTP requests by cache outcome.\n\
             # TYPE tiercache_http_requests_total counter"
        );
        for (outcome, c) in [
            ("hit", &self.hits),
            ("miss", &self.misses),
            ("stale", &self.stale),
            ("bypass", &self.bypass),
        ] {
            let _ = writeln!(
                out,
                "tiercache_http_requests_total{{outcome=\"{outcome}\"}} {}",
                get(c)
            );
        }
        for (name, help, c) in [
            (
                "tiercache_http_received_total",
                "HTTP requests received.",
                &self.requests,
            ),
            (
                "tiercache_http_revalidated_total",
                "Revalidations answered 304 by the origin.",
                &self.revalidated,
            ),
            (
                "tiercache_http_stored_total",
                "Responses written to the cache.",
                &self.stored,
            ),
            (
                "tiercache_http_upstream_errors_total",
                "Origin connection errors, timeouts and truncated bodies.",
                &self.upstream_errors,
            ),
            (
                "tiercache_http_coalesced_waiters_total",
                "Requests that waited for another request's fetch of the same key.",
                &self.coalesced_waiters,
            ),
            (
                "tiercache_http_coalesce_timeouts_total",
                "Waiters released by the coalescing timeout.",
                &self.coalesce_timeouts,
            ),
            (
                "tiercache_http_background_refreshes_total",
                "Background refreshes (stale-while-revalidate).",
                &self.background_refreshes,
            ),
            (
                "tiercache_http_only_if_cached_misses_total",
                "only-if-cached requests answered 504.",
                &self.only_if_cached_misses,
            ),
            (
                "tiercache_http_invalidated_total",
                "Stored records removed after unsafe requests.",
                &self.invalidated,
            ),
            (
                "tiercache_http_purged_total",
                "Stored records removed by purge requests.",
                &self.purged,
            ),
            (
                "tiercache_http_cache_errors_total",
                "Engine errors while using the cache.",
                &self.cache_errors,
            ),
        ] {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                get(c)
            );
        }
    }
}
