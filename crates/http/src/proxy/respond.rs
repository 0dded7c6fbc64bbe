//! Building responses: from a stored response (hits, stale, shared
//! misses), errors, and the headers every response carries (`Via`,
//! `X-Cache`, RFC 9211 `Cache-Status`).

use super::body::ProxyBody;
use super::cached::Cached;
use crate::policy::validate::{client_not_modified, not_modified_fields};
use hyper::header::{HeaderMap, HeaderName, HeaderValue, AGE, CONTENT_LENGTH, CONTENT_TYPE, VIA};
use hyper::{Method, Response, StatusCode};
use std::fmt::Write as _;

/// `X-Cache`.
pub const X_CACHE: HeaderName = HeaderName::from_static("x-cache");
/// `Cache-Status` (RFC 9211).
pub const CACHE_STATUS: HeaderName = HeaderName::from_static("cache-status");
/// Our `Via` entry and `Cache-Status` cache name.
pub const VIA_VALUE: HeaderValue = HeaderValue::from_static("1.1 tiercache");

/// How a response was produced, for `X-Cache` and `Cache-Status`.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// Fresh from the cache.
    Hit,
    /// Stale from the cache; the detail says why it was allowed.
    Stale(&'static str),
    /// From the origin for a cacheable request.
    Miss {
        /// RFC 9211 `fwd` reason: `uri-miss`, `vary-miss`, `stale`, `request`.
        fwd: &'static str,
        /// The origin's status (304 for a revalidation).
        fwd_status: u16,
        /// Whether the response is now stored.
        stored: bool,
        /// Whether this request waited for another's fetch.
        collapsed: bool,
        /// Why it was not stored, or what failed.
        detail: Option<&'static str>,
    },
    /// Forwarded without the cache; `fwd` is `bypass` or `method`.
    Bypass {
        /// RFC 9211 `fwd` reason.
        fwd: &'static str,
        /// Why (`range`, `rule`, …).
        detail: Option<&'static str>,
    },
}

impl Outcome {
    fn x_cache(&self) -> &'static str {
        match self {
            Outcome::Hit => "HIT",
            Outcome::Stale(_) => "STALE",
            Outcome::Miss { .. } => "MISS",
            Outcome::Bypass { .. } => "BYPASS",
        }
    }

    /// The `Cache-Status` member; `ttl` is the remaining freshness of a
    /// stored response (negative when stale).
    fn cache_status(&self, ttl: Option<i64>) -> String {
        let mut s = String::from("tiercache");
        match self {
            Outcome::Hit => s.push_str("; hit"),
            Outcome::Stale(detail) => {
                s.push_str("; hit");
                if let Some(t) = ttl {
                    let _ = write!(s, "; ttl={t}");
                }
                let _ = write!(s, "; detail={detail}");
                return s;
            }
            Outcome::Miss {
                fwd,
                fwd_status,
                stored,
                collapsed,
                detail,
            } => {
                let _ = write!(s, "; fwd={fwd}; fwd-status={fwd_status}");
                if *stored {
                    s.push_str("; stored");
                }
                if *collapsed {
                    s.push_str("; collapsed");
                }
                if let Some(d) = detail {
                    let _ = write!(s, "; detail={d}");
                }
            }
            Outcome::Bypass { fwd, detail } => {
                let _ = write!(s, "; fwd={fwd}");
                if let Some(d) = detail {
                    let _ = write!(s, "; detail={d}");
                }
                return s;
            }
        }
        if let Some(t) = ttl {
            let _ = write!(s, "; ttl={t}");
        }
        s
    }
}

/// Adds `Via`, `X-Cache` and `Cache-Status` (after any upstream cache's).
pub fn stamp(headers: &mut HeaderMap, outcome: &Outcome, ttl: Option<i64>) {
    headers.append(VIA, VIA_VALUE);
    headers.insert(X_CACHE, HeaderValue::from_static(outcome.x_cache()));
    if let Ok(v) = HeaderValue::try_from(outcome.cache_status(ttl)) {
        headers.append(CACHE_STATUS, v);
    }
}

/// Statuses that never have a body (RFC 9110 §6.4.1).
fn bodiless(status: StatusCode) -> bool {
    status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
}

/// Answers a request from a stored response: a `304` when the client's
/// own conditional matches (RFC 9111 §4.3.2), else the stored response
/// with `Age` (RFC 9111 §5.1) and, for HEAD, no body.
pub fn from_cached(
    cached: &Cached,
    method: &Method,
    request: &HeaderMap,
    outcome: &Outcome,
    now_ms: u64,
) -> Response<ProxyBody> {
    let stored = &cached.stored;
    let age = cached.age(now_ms);
    let ttl = cached.lifetime as i64 - age as i64;
    // Age says the response was not just produced by the origin: always
    // on answers from the cache, and on origin answers already aged.
    let with_age = !matches!(outcome, Outcome::Miss { .. }) || age > 0;
    let conditional =
        stored.status == StatusCode::OK && client_not_modified(request, &stored.headers);
    let (status, mut headers, body) = if conditional {
        (
            StatusCode::NOT_MODIFIED,
            not_modified_fields(&stored.headers),
            ProxyBody::Empty,
        )
    } else {
        let mut h = stored.headers.clone();
        if !bodiless(stored.status) {
            h.insert(CONTENT_LENGTH, HeaderValue::from(stored.body.len() as u64));
        }
        let body = if *method == Method::HEAD {
            ProxyBody::Empty
        } else {
            ProxyBody::full(stored.body.clone())
        };
        (stored.status, h, body)
    };
    if with_age {
        headers.insert(AGE, HeaderValue::from(age));
    }
    stamp(&mut headers, outcome, Some(ttl));
    let mut r = Response::new(body);
    *r.status_mut() = status;
    *r.headers_mut() = headers;
    r
}

/// A plain-text response generated by the proxy itself.
pub fn error(status: StatusCode, message: &str, outcome: &Outcome) -> Response<ProxyBody> {
    let mut r = Response::new(ProxyBody::full(bytes::Bytes::from(format!("{message}\n"))));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    stamp(h, outcome, None);
    r
}
