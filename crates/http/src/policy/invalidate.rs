//! Invalidation after unsafe requests (RFC 9111 §4.4).
//!
//! A non-error response (2xx, 3xx) to an unsafe method invalidates the
//! target URI; this cache also invalidates the URIs in `Location` and
//! `Content-Location` when they have the same origin (the RFC's MAY, with
//! its same-origin condition against denial-of-service).

use hyper::header::{HeaderMap, CONTENT_LOCATION, LOCATION};
use hyper::{Method, StatusCode};

/// Safe methods (RFC 9110 §9.2.1) do not invalidate; every other method,
/// including unknown ones, does.
pub fn is_unsafe(method: &Method) -> bool {
    !matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE
    )
}

/// Resolves a `Location`/`Content-Location` value against the request's
/// host and path; `None` when it names another origin or cannot be parsed.
/// Returns the path-and-query.
///
/// ```
/// use tiercache_http::policy::invalidate::same_origin_path;
/// assert_eq!(same_origin_path("/a/b?x", "example.com", "/c").as_deref(), Some("/a/b?x"));
/// assert_eq!(same_origin_path("http://Example.com/a", "example.com", "/c").as_deref(), Some("/a"));
/// assert_eq!(same_origin_path("http://evil.test/a", "example.com", "/c"), None);
/// assert_eq!(same_origin_path("d", "example.com", "/c/e").as_deref(), Some("/c/d"));
/// ```
pub fn same_origin_path(value: &str, host: &str, request_path: &str) -> Option<String> {
    let v = value.trim();
    let v = v.split('#').next().unwrap_or("");
    if v.is_empty() {
        return None;
    }
    if let Some(rest) = v.strip_prefix("http://") {
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if !authority.eq_ignore_ascii_case(host) {
            return None;
        }
        let path = if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_owned()
        };
        return Some(path);
    }
    if v.contains("://") || v.starts_with("//") {
        return None; // another scheme, or a network-path reference
    }
    if v.starts_with('/') {
        return Some(v.to_owned());
    }
    // A relative reference: resolve against the request path's directory.
    let base = request_path.split('?').next().unwrap_or("/");
    let dir = &base[..base.rfind('/').map_or(0, |i| i + 1)];
    Some(format!("{}{v}", if dir.is_empty() { "/" } else { dir }))
}

/// The paths (on the request's host) to invalidate after a response to
/// `method`: empty for safe methods and error statuses.
///
/// ```
/// use hyper::{HeaderMap, Method, StatusCode};
/// use tiercache_http::policy::invalidate::targets;
/// let mut h = HeaderMap::new();
/// h.insert("location", "/items/7".parse().unwrap());
/// let t = targets(&Method::POST, StatusCode::CREATED, &h, "example.com", "/items");
/// assert_eq!(t, ["/items", "/items/7"]);
/// assert!(targets(&Method::GET, StatusCode::OK, &h, "example.com", "/items").is_empty());
/// ```
pub fn targets(
    method: &Method,
    status: StatusCode,
    response: &HeaderMap,
    host: &str,
    path_and_query: &str,
) -> Vec<String> {
    if !is_unsafe(method) || !(status.is_success() || status.is_redirection()) {
        return Vec::new();
    }
    let mut out = vec![path_and_query.to_owned()];
    for name in [LOCATION, CONTENT_LOCATION] {
        if let Some(p) = response
            .get(&name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| same_origin_path(v, host, path_and_query))
        {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    #[test]
    fn rfc9111_4_4_unsafe_methods_invalidate_on_non_error() {
        for m in [Method::POST, Method::PUT, Method::DELETE, Method::PATCH] {
            assert_eq!(
                targets(&m, StatusCode::OK, &HeaderMap::new(), "h", "/x"),
                ["/x"],
                "{m}"
            );
            assert_eq!(
                targets(&m, StatusCode::SEE_OTHER, &HeaderMap::new(), "h", "/x"),
                ["/x"],
                "{m}"
            );
            assert!(targets(
                &m,
                StatusCode::INTERNAL_SERVER_ERROR,
                &HeaderMap::new(),
                "h",
                "/x"
            )
            .is_empty());
            assert!(targets(&m, StatusCode::NOT_FOUND, &HeaderMap::new(), "h", "/x").is_empty());
        }
        let unknown = Method::from_bytes(b"FROB").unwrap();
        assert_eq!(
            targets(&unknown, StatusCode::OK, &HeaderMap::new(), "h", "/x"),
            ["/x"]
        );
    }

    #[test]
    fn rfc9111_4_4_safe_methods_do_not_invalidate() {
        for m in [Method::GET, Method::HEAD, Method::OPTIONS, Method::TRACE] {
            assert!(targets(&m, StatusCode::OK, &HeaderMap::new(), "h", "/x").is_empty());
        }
    }

    #[test]
    fn rfc9111_4_4_location_and_content_location_only_on_same_origin() {
        let mut h = HeaderMap::new();
        h.insert(LOCATION, HeaderValue::from_static("http://other.test/y"));
        h.insert(CONTENT_LOCATION, HeaderValue::from_static("http://h/z?q=1"));
        assert_eq!(
            targets(&Method::PUT, StatusCode::OK, &h, "h", "/x"),
            ["/x", "/z?q=1"]
        );
    }
}
