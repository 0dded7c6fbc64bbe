//! Validation (RFC 9111 §4.3): conditional requests to the origin, what a
//! `304 Not Modified` does to a stored response, and answering a client's
//! own conditional request from the cache.

use super::freshness::header_date;
use super::storable::is_hop_by_hop;
use hyper::header::{
    HeaderMap, HeaderName, HeaderValue, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_RANGE, DATE,
    ETAG, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED, TRANSFER_ENCODING,
};

/// True when a response carries a validator (`ETag` or `Last-Modified`).
pub fn has_validator(headers: &HeaderMap) -> bool {
    headers.contains_key(ETAG) || headers.contains_key(LAST_MODIFIED)
}

/// The conditional header fields for revalidating a stored response
/// (§4.3.1): `If-None-Match` with its entity tag, `If-Modified-Since` with
/// its `Last-Modified` (never a date the origin did not send).
///
/// ```
/// use hyper::HeaderMap;
/// use tiercache_http::policy::validate::conditional_headers;
/// let mut stored = HeaderMap::new();
/// stored.insert("etag", "\"v1\"".parse().unwrap());
/// let c = conditional_headers(&stored);
/// assert_eq!(c["if-none-match"], "\"v1\"");
/// assert!(!c.contains_key("if-modified-since"));
/// ```
pub fn conditional_headers(stored: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    if let Some(etag) = stored.get(ETAG) {
        out.insert(IF_NONE_MATCH, etag.clone());
    }
    if let Some(lm) = stored.get(LAST_MODIFIED) {
        if header_date(stored, &LAST_MODIFIED).is_some() {
            out.insert(IF_MODIFIED_SINCE, lm.clone());
        }
    }
    out
}

/// An entity tag, split into weakness and opaque tag.
fn parse_etag(v: &[u8]) -> Option<(bool, &[u8])> {
    let v = v.trim_ascii();
    let (weak, rest) = match v.strip_prefix(b"W/") {
        Some(r) => (true, r),
        None => (false, v),
    };
    if rest.len() >= 2 && rest[0] == b'"' && rest[rest.len() - 1] == b'"' {
        Some((weak, rest))
    } else {
        None
    }
}

/// Strong comparison (RFC 9110 §8.8.3.2): both strong, same opaque tag.
pub fn strong_match(a: &[u8], b: &[u8]) -> bool {
    matches!((parse_etag(a), parse_etag(b)), (Some((false, x)), Some((false, y))) if x == y)
}

/// Weak comparison: same opaque tag, weakness ignored.
pub fn weak_match(a: &[u8], b: &[u8]) -> bool {
    matches!((parse_etag(a), parse_etag(b)), (Some((_, x)), Some((_, y))) if x == y)
}

/// Splits an `If-None-Match` list into entity tags (commas inside quotes
/// kept).
fn etag_list(v: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut quoted = false;
    for (i, &c) in v.iter().enumerate() {
        match c {
            b'"' => quoted = !quoted,
            b',' if !quoted => {
                out.push(v[start..i].trim_ascii());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(v[start..].trim_ascii());
    out.retain(|t| !t.is_empty());
    out
}

/// §4.3.4: does a 304 apply to the stored response we validated? When the
/// 304 carries an `ETag`, it must match the stored one (strongly for a
/// strong tag, else weakly); otherwise, when it carries `Last-Modified`, that
/// must equal the stored one; with neither, it applies (we sent the
/// conditional request for this one stored response).
pub fn not_modified_applies(stored: &HeaderMap, not_modified: &HeaderMap) -> bool {
    if let Some(new) = not_modified.get(ETAG) {
        return match stored.get(ETAG) {
            Some(old) => weak_match(old.as_bytes(), new.as_bytes()),
            None => false,
        };
    }
    if let Some(new) = not_modified.get(LAST_MODIFIED) {
        return stored.get(LAST_MODIFIED) == Some(new);
    }
    true
}

/// Fields a 304 never changes in a stored response (§3.2): those the
/// stored body depends on, and `Content-Length`.
fn keep_stored(name: &HeaderName) -> bool {
    is_hop_by_hop(name)
        || name == CONTENT_LENGTH
        || name == CONTENT_ENCODING
        || name == CONTENT_RANGE
        || name == TRANSFER_ENCODING
}

/// §3.2 / §4.3.4: updates a stored response's header section with a 304's:
/// every field the 304 carries replaces the stored field of that name,
/// except the ones in `keep_stored`.
///
/// ```
/// use hyper::HeaderMap;
/// use tiercache_http::policy::validate::merge_not_modified;
/// let mut stored = HeaderMap::new();
/// stored.insert("cache-control", "max-age=1".parse().unwrap());
/// stored.insert("content-length", "5".parse().unwrap());
/// stored.insert("x-kept", "a".parse().unwrap());
/// let mut nm = HeaderMap::new();
/// nm.insert("cache-control", "max-age=60".parse().unwrap());
/// nm.insert("content-length", "0".parse().unwrap());
/// merge_not_modified(&mut stored, &nm);
/// assert_eq!(stored["cache-control"], "max-age=60");
/// assert_eq!(stored["content-length"], "5");
/// assert_eq!(stored["x-kept"], "a");
/// ```
pub fn merge_not_modified(stored: &mut HeaderMap, not_modified: &HeaderMap) {
    for name in not_modified.keys() {
        if keep_stored(name) {
            continue;
        }
        stored.remove(name);
        for v in not_modified.get_all(name) {
            stored.append(name.clone(), v.clone());
        }
    }
}

/// A client's conditional GET/HEAD evaluated against a stored response
/// (§4.3.2; RFC 9110 §13.2.2 order): `If-None-Match` when present (weak
/// comparison, `*` matches), else `If-Modified-Since` against
/// `Last-Modified` (or `Date` when there is none). True = answer 304.
///
/// ```
/// use hyper::HeaderMap;
/// use tiercache_http::policy::validate::client_not_modified;
/// let mut stored = HeaderMap::new();
/// stored.insert("etag", "\"v1\"".parse().unwrap());
/// let mut req = HeaderMap::new();
/// req.insert("if-none-match", "\"v0\", W/\"v1\"".parse().unwrap());
/// assert!(client_not_modified(&req, &stored));
/// ```
pub fn client_not_modified(request: &HeaderMap, stored: &HeaderMap) -> bool {
    if request.contains_key(IF_NONE_MATCH) {
        let Some(etag) = stored.get(ETAG) else {
            return request
                .get_all(IF_NONE_MATCH)
                .iter()
                .any(|v| v.as_bytes().trim_ascii() == b"*");
        };
        return request.get_all(IF_NONE_MATCH).iter().any(|v| {
            etag_list(v.as_bytes())
                .into_iter()
                .any(|t| t == b"*" || weak_match(t, etag.as_bytes()))
        });
    }
    let Some(since) = header_date(request, &IF_MODIFIED_SINCE) else {
        return false;
    };
    let modified = header_date(stored, &LAST_MODIFIED).or_else(|| header_date(stored, &DATE));
    modified.is_some_and(|m| m <= since)
}

/// The header fields of a 304 sent to a client from a stored response
/// (RFC 9110 §15.4.5): the ones a 200 would carry that describe caching
/// and the selected representation's validators.
pub fn not_modified_fields(stored: &HeaderMap) -> HeaderMap {
    let mut out = HeaderMap::new();
    for name in [
        hyper::header::CACHE_CONTROL,
        hyper::header::CONTENT_LOCATION,
        DATE,
        ETAG,
        hyper::header::EXPIRES,
        hyper::header::VARY,
        LAST_MODIFIED,
    ] {
        for v in stored.get_all(&name) {
            out.append(name.clone(), v.clone());
        }
    }
    out
}

/// Convenience for tests and callers building header maps.
pub fn value(s: &'static str) -> HeaderValue {
    HeaderValue::from_static(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for (k, v) in pairs {
            m.append(*k, value(v));
        }
        m
    }

    #[test]
    fn rfc9111_4_3_1_conditional_request_uses_stored_validators() {
        let c = conditional_headers(&h(&[
            ("etag", "W/\"x\""),
            ("last-modified", "Thu, 01 Jan 1970 00:16:40 GMT"),
        ]));
        assert_eq!(c["if-none-match"], "W/\"x\"");
        assert_eq!(c["if-modified-since"], "Thu, 01 Jan 1970 00:16:40 GMT");
        assert!(conditional_headers(&h(&[("date", "Thu, 01 Jan 1970 00:16:40 GMT")])).is_empty());
    }

    #[test]
    fn rfc9110_8_8_3_2_strong_and_weak_comparison() {
        assert!(strong_match(b"\"1\"", b"\"1\""));
        assert!(!strong_match(b"W/\"1\"", b"\"1\""));
        assert!(weak_match(b"W/\"1\"", b"\"1\""));
        assert!(!weak_match(b"\"1\"", b"\"2\""));
        assert!(!weak_match(b"1", b"1"), "unquoted tags are invalid");
    }

    #[test]
    fn rfc9111_4_3_4_304_must_match_the_stored_validator() {
        let stored = h(&[("etag", "\"a\"")]);
        assert!(not_modified_applies(&stored, &h(&[("etag", "\"a\"")])));
        assert!(!not_modified_applies(&stored, &h(&[("etag", "\"b\"")])));
        assert!(not_modified_applies(&stored, &h(&[])));
        let lm = h(&[("last-modified", "Thu, 01 Jan 1970 00:16:40 GMT")]);
        assert!(not_modified_applies(&lm, &lm));
        assert!(!not_modified_applies(
            &lm,
            &h(&[("last-modified", "Thu, 01 Jan 1970 00:16:41 GMT")])
        ));
    }

    #[test]
    fn rfc9111_3_2_304_updates_stored_headers_except_content_length() {
        let mut stored = h(&[
            ("x-a", "1"),
            ("x-b", "old"),
            ("content-length", "10"),
            ("content-encoding", "gzip"),
        ]);
        merge_not_modified(
            &mut stored,
            &h(&[
                ("x-b", "new"),
                ("x-b", "new2"),
                ("x-c", "3"),
                ("content-length", "0"),
                ("content-encoding", "br"),
                ("connection", "close"),
            ]),
        );
        assert_eq!(stored["x-a"], "1");
        assert_eq!(
            stored.get_all("x-b").iter().collect::<Vec<_>>(),
            ["new", "new2"]
        );
        assert_eq!(stored["x-c"], "3");
        assert_eq!(stored["content-length"], "10");
        assert_eq!(stored["content-encoding"], "gzip");
        assert!(!stored.contains_key("connection"));
    }

    #[test]
    fn rfc9111_4_3_2_if_none_match_from_client() {
        let stored = h(&[("etag", "\"v1\"")]);
        assert!(client_not_modified(
            &h(&[("if-none-match", "\"v1\"")]),
            &stored
        ));
        assert!(client_not_modified(&h(&[("if-none-match", "*")]), &stored));
        assert!(!client_not_modified(
            &h(&[("if-none-match", "\"v2\"")]),
            &stored
        ));
        assert!(client_not_modified(
            &h(&[("if-none-match", "\"a,b\", \"v1\"")]),
            &stored
        ));
    }

    #[test]
    fn rfc9111_4_3_2_if_modified_since_from_client() {
        let stored = h(&[("last-modified", "Thu, 01 Jan 1970 00:16:40 GMT")]);
        assert!(client_not_modified(
            &h(&[("if-modified-since", "Thu, 01 Jan 1970 00:16:40 GMT")]),
            &stored
        ));
        assert!(!client_not_modified(
            &h(&[("if-modified-since", "Thu, 01 Jan 1970 00:16:39 GMT")]),
            &stored
        ));
        assert!(!client_not_modified(
            &h(&[("if-modified-since", "garbage")]),
            &stored
        ));
        // If-None-Match takes precedence (RFC 9110 §13.2.2).
        assert!(!client_not_modified(
            &h(&[
                ("if-none-match", "\"x\""),
                ("if-modified-since", "Thu, 01 Jan 1970 00:16:40 GMT")
            ]),
            &stored
        ));
    }
}
