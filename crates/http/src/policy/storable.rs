//! Whether a response may be stored by a shared cache (RFC 9111 §3, §3.5)
//! and which of its header fields are stored (§3.1).

use super::cache_control::{RequestDirectives, ResponseDirectives};
use super::freshness::heuristically_cacheable;
use hyper::header::{HeaderMap, HeaderName, AUTHORIZATION, CONNECTION, EXPIRES, SET_COOKIE};
use hyper::{Method, StatusCode};

/// Why a response is not stored (also the `detail` of `Cache-Status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotStorable {
    /// Only responses to GET are stored (HEAD is answered from them).
    Method,
    /// 1xx, 206 and 304 are never stored; other codes only with explicit
    /// freshness unless cacheable by default.
    Status,
    /// The request said `no-store` (§5.2.1.5).
    RequestNoStore,
    /// The response said `no-store` (§5.2.2.5).
    NoStore,
    /// The response said `private` (§5.2.2.7), unqualified.
    Private,
    /// The request carried `Authorization` and the response did not allow a
    /// shared cache to store it (§3.5).
    Authorization,
    /// `Vary: *` never matches a later request (§4.1).
    VaryStar,
    /// No explicit freshness, no heuristic allowed, no validator and no
    /// configured default TTL: nothing would ever make it reusable.
    NoFreshness,
    /// Bigger than the configured maximum object size.
    TooLarge,
}

impl NotStorable {
    /// A short token for `Cache-Status: …; detail=…` and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            NotStorable::Method => "method",
            NotStorable::Status => "status",
            NotStorable::RequestNoStore => "request-no-store",
            NotStorable::NoStore => "no-store",
            NotStorable::Private => "private",
            NotStorable::Authorization => "authorization",
            NotStorable::VaryStar => "vary-star",
            NotStorable::NoFreshness => "no-freshness",
            NotStorable::TooLarge => "too-large",
        }
    }
}

/// Status codes whose semantics this cache understands for
/// `must-understand` (§5.2.2.3): the ones it may store.
pub fn understood_status(status: StatusCode) -> bool {
    matches!(
        status.as_u16(),
        200 | 203 | 204 | 300 | 301 | 302 | 303 | 307 | 308 | 404 | 405 | 410 | 414 | 501
    )
}

/// What the storability check needs to know about the cache's own
/// extensions (RFC 9111 §3: "a cache extension that allows it to be
/// cached").
#[derive(Clone, Copy, Debug, Default)]
pub struct Extensions {
    /// A configured TTL (`default_ttl` or a rule's `ttl`) applies to this
    /// request's path.
    pub configured_ttl: bool,
}

/// RFC 9111 §3: may a shared cache store this response to this request?
///
/// `has_lifetime` says whether [`freshness_lifetime`](super::freshness::freshness_lifetime)
/// found explicit or heuristic freshness.
///
/// ```
/// use hyper::{HeaderMap, Method, StatusCode};
/// use tiercache_http::policy::{storable::*, RequestDirectives, ResponseDirectives};
/// let req = HeaderMap::new();
/// let mut resp = HeaderMap::new();
/// resp.insert("cache-control", "max-age=60".parse().unwrap());
/// let cc = ResponseDirectives::parse(&resp);
/// assert_eq!(
///     check(&Method::GET, &req, &RequestDirectives::default(), StatusCode::OK, &resp, &cc, true, Extensions::default()),
///     Ok(())
/// );
/// ```
#[allow(clippy::too_many_arguments)]
pub fn check(
    method: &Method,
    req_headers: &HeaderMap,
    req_cc: &RequestDirectives,
    status: StatusCode,
    resp_headers: &HeaderMap,
    cc: &ResponseDirectives,
    has_lifetime: bool,
    ext: Extensions,
) -> Result<(), NotStorable> {
    if method != Method::GET {
        return Err(NotStorable::Method);
    }
    if status.is_informational()
        || status == StatusCode::PARTIAL_CONTENT
        || status == StatusCode::NOT_MODIFIED
    {
        return Err(NotStorable::Status);
    }
    if req_cc.no_store {
        return Err(NotStorable::RequestNoStore);
    }
    // §5.2.2.3: with must-understand, a cache that understands the status
    // code ignores no-store; one that does not must not store.
    if cc.must_understand {
        if !understood_status(status) {
            return Err(NotStorable::Status);
        }
    } else if cc.no_store {
        return Err(NotStorable::NoStore);
    }
    if cc.private && cc.private_fields.is_empty() {
        return Err(NotStorable::Private);
    }
    // §3.5: a shared cache stores a response to a request with
    // Authorization only when the response explicitly allows it.
    if req_headers.contains_key(AUTHORIZATION)
        && !(cc.must_revalidate || cc.public || cc.s_maxage.is_some())
    {
        return Err(NotStorable::Authorization);
    }
    if super::vary::VarySpec::of(resp_headers) == super::vary::VarySpec::Star {
        return Err(NotStorable::VaryStar);
    }
    let explicit = cc.public
        || cc.max_age.is_some()
        || cc.s_maxage.is_some()
        || resp_headers.contains_key(EXPIRES);
    let by_default = heuristically_cacheable(status);
    if !(explicit
        || by_default
        || ext.configured_ttl && configured_ttl_applies(status, resp_headers))
    {
        return Err(NotStorable::Status);
    }
    // Storable in the RFC's sense; worth storing only if it can ever be
    // reused: it has freshness, a validator to revalidate with, or a
    // configured TTL.
    let validator = super::validate::has_validator(resp_headers);
    if !(has_lifetime
        || validator
        || ext.configured_ttl && configured_ttl_applies(status, resp_headers))
    {
        return Err(NotStorable::NoFreshness);
    }
    Ok(())
}

/// A configured TTL (`default_ttl`, a rule's `ttl`) applies only to
/// statuses cacheable by default (206 excepted) and never to a response
/// that sets a cookie: that one needs explicit freshness from its origin,
/// or one client's session could be handed to another.
pub fn configured_ttl_applies(status: StatusCode, resp_headers: &HeaderMap) -> bool {
    heuristically_cacheable(status)
        && status != StatusCode::PARTIAL_CONTENT
        && !resp_headers.contains_key(SET_COOKIE)
}

/// Hop-by-hop fields (RFC 9110 §7.6.1) and the fields named by
/// `Connection`: never forwarded, never stored (RFC 9111 §3.1).
pub fn is_hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "proxy-authenticate"
            | "proxy-authorization"
    )
}

/// Removes hop-by-hop fields, including those listed in `Connection`.
///
/// ```
/// use hyper::HeaderMap;
/// let mut h = HeaderMap::new();
/// h.insert("connection", "close, x-trace".parse().unwrap());
/// h.insert("x-trace", "1".parse().unwrap());
/// h.insert("keep-alive", "timeout=5".parse().unwrap());
/// h.insert("content-type", "text/plain".parse().unwrap());
/// tiercache_http::policy::storable::strip_hop_by_hop(&mut h);
/// assert_eq!(h.len(), 1);
/// ```
pub fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|s| s.split(','))
        .filter_map(|t| HeaderName::from_bytes(t.trim().as_bytes()).ok())
        .collect();
    for n in named {
        headers.remove(n);
    }
    let hop: Vec<HeaderName> = headers
        .keys()
        .filter(|n| is_hop_by_hop(n))
        .cloned()
        .collect();
    for n in hop {
        headers.remove(n);
    }
}

/// The header section to store (§3.1): hop-by-hop fields removed, and the
/// fields named by a qualified `private="…"` (§5.2.2.7) or `no-cache="…"`
/// (§5.2.2.4) left out.
pub fn headers_to_store(headers: &HeaderMap, cc: &ResponseDirectives) -> HeaderMap {
    let mut h = headers.clone();
    strip_hop_by_hop(&mut h);
    for f in cc.private_fields.iter().chain(&cc.no_cache_fields) {
        h.remove(f.as_str());
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::freshness::freshness_lifetime;
    use hyper::header::HeaderValue;

    fn h(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for (k, v) in pairs {
            m.append(*k, HeaderValue::from_static(v));
        }
        m
    }

    fn run(
        method: Method,
        req: &[(&'static str, &'static str)],
        status: u16,
        resp: &[(&'static str, &'static str)],
        ext: Extensions,
    ) -> Result<(), NotStorable> {
        let req = h(req);
        let resp = h(resp);
        let cc = ResponseDirectives::parse(&resp);
        let status = StatusCode::from_u16(status).unwrap();
        let has_lifetime = freshness_lifetime(status, &resp, &cc, 1000).is_some();
        check(
            &method,
            &req,
            &RequestDirectives::parse(&req),
            status,
            &resp,
            &cc,
            has_lifetime,
            ext,
        )
    }

    const NONE: Extensions = Extensions {
        configured_ttl: false,
    };

    #[test]
    fn rfc9111_3_only_get_responses_are_stored() {
        assert_eq!(
            run(
                Method::POST,
                &[],
                200,
                &[("cache-control", "max-age=5")],
                NONE
            ),
            Err(NotStorable::Method)
        );
        assert_eq!(
            run(
                Method::GET,
                &[],
                200,
                &[("cache-control", "max-age=5")],
                NONE
            ),
            Ok(())
        );
    }

    #[test]
    fn rfc9111_3_partial_and_not_modified_are_not_stored() {
        assert_eq!(
            run(
                Method::GET,
                &[],
                206,
                &[("cache-control", "max-age=5")],
                NONE
            ),
            Err(NotStorable::Status)
        );
        assert_eq!(
            run(
                Method::GET,
                &[],
                304,
                &[("cache-control", "max-age=5")],
                NONE
            ),
            Err(NotStorable::Status)
        );
    }

    #[test]
    fn rfc9111_5_2_2_5_no_store() {
        assert_eq!(
            run(
                Method::GET,
                &[],
                200,
                &[("cache-control", "max-age=5, no-store")],
                NONE
            ),
            Err(NotStorable::NoStore)
        );
    }

    #[test]
    fn rfc9111_5_2_1_5_request_no_store() {
        assert_eq!(
            run(
                Method::GET,
                &[("cache-control", "no-store")],
                200,
                &[("cache-control", "max-age=5")],
                NONE
            ),
            Err(NotStorable::RequestNoStore)
        );
    }

    #[test]
    fn rfc9111_5_2_2_7_private_unqualified_is_not_stored_qualified_is() {
        assert_eq!(
            run(
                Method::GET,
                &[],
                200,
                &[("cache-control", "max-age=5, private")],
                NONE
            ),
            Err(NotStorable::Private)
        );
        assert_eq!(
            run(
                Method::GET,
                &[],
                200,
                &[("cache-control", "max-age=5, private=\"set-cookie\"")],
                NONE
            ),
            Ok(())
        );
        let resp = h(&[
            ("cache-control", "max-age=5, private=\"set-cookie\""),
            ("set-cookie", "a=b"),
            ("x", "y"),
        ]);
        let stored = headers_to_store(&resp, &ResponseDirectives::parse(&resp));
        assert!(!stored.contains_key("set-cookie"));
        assert!(stored.contains_key("x"));
    }

    #[test]
    fn rfc9111_3_5_authorization_requires_explicit_permission() {
        let auth = [("authorization", "Bearer x")];
        assert_eq!(
            run(
                Method::GET,
                &auth,
                200,
                &[("cache-control", "max-age=5")],
                NONE
            ),
            Err(NotStorable::Authorization)
        );
        for cc in [
            "max-age=5, public",
            "s-maxage=5",
            "max-age=5, must-revalidate",
        ] {
            let resp = [("cache-control", cc)];
            assert_eq!(run(Method::GET, &auth, 200, &resp, NONE), Ok(()), "{cc}");
        }
    }

    #[test]
    fn rfc9111_5_2_2_3_must_understand_overrides_no_store_for_understood_codes() {
        assert_eq!(
            run(
                Method::GET,
                &[],
                200,
                &[("cache-control", "max-age=5, no-store, must-understand")],
                NONE
            ),
            Ok(())
        );
        assert_eq!(
            run(
                Method::GET,
                &[],
                299,
                &[("cache-control", "max-age=5, no-store, must-understand")],
                NONE
            ),
            Err(NotStorable::Status)
        );
    }

    #[test]
    fn rfc9111_4_1_vary_star_is_not_stored() {
        assert_eq!(
            run(
                Method::GET,
                &[],
                200,
                &[("cache-control", "max-age=5"), ("vary", "*")],
                NONE
            ),
            Err(NotStorable::VaryStar)
        );
    }

    #[test]
    fn rfc9111_3_status_not_cacheable_by_default_needs_explicit_freshness() {
        assert_eq!(
            run(Method::GET, &[], 201, &[("etag", "\"a\"")], NONE),
            Err(NotStorable::Status)
        );
        assert_eq!(
            run(
                Method::GET,
                &[],
                302,
                &[("cache-control", "max-age=5")],
                NONE
            ),
            Ok(())
        );
        assert_eq!(
            run(
                Method::GET,
                &[],
                500,
                &[("cache-control", "max-age=5")],
                NONE
            ),
            Ok(())
        );
    }

    #[test]
    fn without_freshness_or_validator_nothing_is_stored_by_default() {
        assert_eq!(
            run(Method::GET, &[], 200, &[], NONE),
            Err(NotStorable::NoFreshness)
        );
        // A validator makes it worth keeping for revalidation.
        assert_eq!(
            run(Method::GET, &[], 200, &[("etag", "\"v1\"")], NONE),
            Ok(())
        );
        // The micro-cache extension.
        let ttl = Extensions {
            configured_ttl: true,
        };
        assert_eq!(run(Method::GET, &[], 200, &[], ttl), Ok(()));
        // ... but never for a response setting a cookie.
        assert_eq!(
            run(Method::GET, &[], 200, &[("set-cookie", "s=1")], ttl),
            Err(NotStorable::NoFreshness)
        );
    }

    #[test]
    fn rfc9110_7_6_1_hop_by_hop_fields_are_not_stored() {
        let resp = h(&[
            ("connection", "x-hop"),
            ("x-hop", "1"),
            ("keep-alive", "timeout=5"),
            ("transfer-encoding", "chunked"),
            ("content-type", "text/plain"),
        ]);
        let stored = headers_to_store(&resp, &ResponseDirectives::default());
        assert_eq!(
            stored.keys().map(|k| k.as_str()).collect::<Vec<_>>(),
            ["content-type"]
        );
    }
}
