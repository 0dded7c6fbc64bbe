//! Cache keys.
//!
//! The primary key of a request is
//! `PREFIX host path?query NUL "GET" [NUL name "=" value]…`: the host
//! lower-cased, the path and query as received, then the configured key
//! headers. Everything a URI can be invalidated or purged by is a byte
//! prefix of its keys: `PREFIX host path?query NUL` covers every method,
//! key-header value and `Vary` variant of one URI; `PREFIX host /a/`
//! covers a whole path prefix. A variant (RFC 9111 §4.1) lives at
//! `primary SOH secondary-key`.

use crate::policy::vary::{normalized_value, secondary_key};
use bytes::{BufMut, Bytes, BytesMut};
use hyper::header::{HeaderMap, HeaderName};

/// The key prefix of every stored record of one URI.
///
/// ```
/// use tiercache_http::key::uri_prefix;
/// assert_eq!(&uri_prefix("http:", "Example.COM", "/a?b=1")[..], b"http:example.com/a?b=1\0");
/// ```
pub fn uri_prefix(prefix: &str, host: &str, path_and_query: &str) -> Bytes {
    let mut b = BytesMut::with_capacity(prefix.len() + host.len() + path_and_query.len() + 1);
    b.put_slice(prefix.as_bytes());
    put_host(&mut b, host);
    b.put_slice(path_and_query.as_bytes());
    b.put_u8(0);
    b.freeze()
}

/// The key prefix of every stored record under a path prefix.
pub fn path_prefix(prefix: &str, host: &str, path: &str) -> Bytes {
    let mut b = BytesMut::with_capacity(prefix.len() + host.len() + path.len());
    b.put_slice(prefix.as_bytes());
    put_host(&mut b, host);
    b.put_slice(path.as_bytes());
    b.freeze()
}

fn put_host(b: &mut BytesMut, host: &str) {
    for c in host.bytes() {
        b.put_u8(c.to_ascii_lowercase());
    }
}

/// The primary key of a GET (or HEAD) request.
///
/// ```
/// use hyper::{HeaderMap, header::HeaderName};
/// use tiercache_http::key::primary;
/// let mut h = HeaderMap::new();
/// h.insert("accept-encoding", "gzip".parse().unwrap());
/// let k = primary("http:", "h", "/x", &[HeaderName::from_static("accept-encoding")], &h);
/// assert_eq!(&k[..], b"http:h/x\0GET\0accept-encoding=gzip");
/// ```
pub fn primary(
    prefix: &str,
    host: &str,
    path_and_query: &str,
    key_headers: &[HeaderName],
    headers: &HeaderMap,
) -> Bytes {
    let mut b = BytesMut::with_capacity(
        prefix.len() + host.len() + path_and_query.len() + 4 + 32 * key_headers.len(),
    );
    b.put_slice(prefix.as_bytes());
    put_host(&mut b, host);
    b.put_slice(path_and_query.as_bytes());
    b.put_slice(b"\0GET");
    for name in key_headers {
        b.put_u8(0);
        b.put_slice(name.as_str().as_bytes());
        match normalized_value(headers, name.as_str()) {
            Some(v) => {
                b.put_u8(b'=');
                b.put_slice(&v);
            }
            None => b.put_u8(b'!'),
        }
    }
    b.freeze()
}

/// The key of the variant of `primary` selected by `request` for the
/// `Vary` fields `fields`; also returns the secondary key itself.
pub fn variant(primary: &[u8], fields: &[HeaderName], request: &HeaderMap) -> (Bytes, Bytes) {
    let secondary = Bytes::from(secondary_key(fields, request));
    let mut b = BytesMut::with_capacity(primary.len() + 1 + secondary.len());
    b.put_slice(primary);
    b.put_u8(1);
    b.put_slice(&secondary);
    (b.freeze(), secondary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_of_a_uri_starts_with_its_uri_prefix_and_no_other_uri_does() {
        let h = HeaderMap::new();
        let k = primary("http:", "H", "/a", &[], &h);
        let (v, _) = variant(&k, &[HeaderName::from_static("accept")], &h);
        let p = uri_prefix("http:", "h", "/a");
        assert!(k.starts_with(&p) && v.starts_with(&p));
        assert!(!primary("http:", "h", "/ab", &[], &h).starts_with(&p));
        assert!(!primary("http:", "h", "/a?x", &[], &h).starts_with(&p));
        assert!(
            primary("http:", "h", "/a/b", &[], &h).starts_with(&path_prefix("http:", "h", "/a/"))
        );
    }
}
