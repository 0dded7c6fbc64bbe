//! The admin endpoints, under the proxy's own listener at
//! `admin_prefix` (default `/_tiercache/`):
//!
//! - `GET /_tiercache/metrics`: Prometheus text (counters only, no
//!   secrets; not authenticated).
//! - `GET /_tiercache/healthz`: `ok`.
//! - `POST /_tiercache/purge?url=URL` or `?prefix=PATH`: removes every
//!   stored response of one URL (all variants) or under a path prefix.
//!   `URL` is a path (`/a?b=1`, on the `host=` parameter's host or the
//!   request's `Host`) or an absolute `http://host/path`.
//! - `PURGE /path`: the same for one URL on the request's `Host`.
//!
//! Purges need `Authorization: Bearer TOKEN` with the configured
//! `purge_token` (compared in constant time): `401` without it, `403`
//! when no token is configured (purging disabled).

use crate::key;
use crate::proxy::body::ProxyBody;
use crate::proxy::HttpCache;
use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, HOST, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use std::sync::atomic::Ordering;
use std::sync::Arc;

fn text(status: StatusCode, body: String) -> Response<ProxyBody> {
    let mut r = Response::new(ProxyBody::full(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// Answers an admin request or a `PURGE`.
pub async fn handle(cache: &Arc<HttpCache>, req: Request<Incoming>) -> Response<ProxyBody> {
    let prefix = &cache.config().admin_prefix;
    let path = req.uri().path();
    let host = req
        .headers()
        .get(HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if req.method() == "PURGE" && !path.starts_with(prefix.as_str()) {
        if let Err(r) = authorize(cache, &req) {
            return *r;
        }
        let pq = req
            .uri()
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/")
            .to_owned();
        return purge(
            cache,
            key::uri_prefix(&cache.config().key_prefix, &host, &pq),
            &pq,
        )
        .await;
    }
    match &path[prefix.len()..] {
        "metrics" => {
            let mut out = String::with_capacity(4096);
            cache.metrics().render(&mut out);
            let mut r = text(StatusCode::OK, out);
            r.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            );
            r
        }
        "healthz" => text(StatusCode::OK, "ok\n".into()),
        "purge" => {
            if !(req.method() == Method::POST
                || req.method() == "PURGE"
                || req.method() == Method::DELETE)
            {
                let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "use POST\n".into());
                r.headers_mut().insert(
                    hyper::header::ALLOW,
                    HeaderValue::from_static("POST, PURGE, DELETE"),
                );
                return r;
            }
            if let Err(r) = authorize(cache, &req) {
                return *r;
            }
            let query = req.uri().query().unwrap_or("");
            let param = |name: &str| {
                query.split('&').find_map(|kv| {
                    let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                    (k == name).then(|| percent_decode(v))
                })
            };
            let host = param("host")
                .map(|h| h.to_ascii_lowercase())
                .unwrap_or(host);
            let kp = &cache.config().key_prefix;
            match (param("url"), param("prefix")) {
                (Some(url), None) => {
                    let (host, pq) = split_url(&url, &host);
                    purge(cache, key::uri_prefix(kp, &host, &pq), &url).await
                }
                (None, Some(p)) => {
                    let (host, path) = split_url(&p, &host);
                    purge(cache, key::path_prefix(kp, &host, &path), &p).await
                }
                _ => text(
                    StatusCode::BAD_REQUEST,
                    "give exactly one of ?url=/path or ?prefix=/path/ (optionally &host=HOST)\n"
                        .into(),
                ),
            }
        }
        _ => text(
            StatusCode::NOT_FOUND,
            format!("not found: try {prefix}metrics, {prefix}healthz or {prefix}purge\n"),
        ),
    }
}

fn authorize(cache: &HttpCache, req: &Request<Incoming>) -> Result<(), Box<Response<ProxyBody>>> {
    let Some(token) = &cache.config().purge_token else {
        return Err(Box::new(text(
            StatusCode::FORBIDDEN,
            "purging is disabled: set http_cache.purge_token\n".into(),
        )));
    };
    let given = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    if constant_time_eq(given.as_bytes(), token.as_bytes()) {
        return Ok(());
    }
    let mut r = text(
        StatusCode::UNAUTHORIZED,
        "purge needs Authorization: Bearer <purge_token>\n".into(),
    );
    r.headers_mut()
        .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    Err(Box::new(r))
}

async fn purge(cache: &HttpCache, prefix: Bytes, what: &str) -> Response<ProxyBody> {
    match cache.delete_prefix(&prefix).await {
        Ok(n) => {
            cache.metrics().purged.fetch_add(n, Ordering::Relaxed);
            text(
                StatusCode::OK,
                format!("purged {n} stored records for {what}\n"),
            )
        }
        Err(e) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("purge failed: {e}\n"),
        ),
    }
}

/// `http://host/p?q` → (host, `/p?q`); `/p` → (default host, `/p`).
fn split_url(url: &str, default_host: &str) -> (String, String) {
    if let Some(rest) = url.strip_prefix("http://") {
        let i = rest.find(['/', '?']).unwrap_or(rest.len());
        let path = if i == rest.len() {
            "/".to_owned()
        } else {
            rest[i..].to_owned()
        };
        return (rest[..i].to_ascii_lowercase(), path);
    }
    (default_host.to_owned(), url.to_owned())
}

/// Decodes `%XX` and `+` in a query parameter.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(v) => {
                        out.push(v);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("%2Fa%2Fb%3Fx%3D1"), "/a/b?x=1");
        assert_eq!(percent_decode("a+b%"), "a b%");
        assert_eq!(percent_decode("%zz"), "%zz");
    }

    #[test]
    fn urls_split_into_host_and_path() {
        assert_eq!(
            split_url("http://H.test/a?b", "x"),
            ("h.test".into(), "/a?b".into())
        );
        assert_eq!(split_url("http://h", "x"), ("h".into(), "/".into()));
        assert_eq!(split_url("/a", "x"), ("x".into(), "/a".into()));
    }
}
