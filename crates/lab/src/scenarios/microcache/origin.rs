//! The slow origin of the `microcache` scenario: seed 002's
//! `/api/v1/places`, a 672,864-byte JSON list that takes a while to
//! produce, and the memcached-backed app cache the seed built in front of it.

use crate::scenarios::http_app::{self, AppServer};
use crate::scenarios::http_load;
use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::Response;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tiercache_engine::{now_ms, Entry, Store};
use tiercache_stores::MemcachedStore;

/// The seed's document length.
pub const DOC_BYTES: usize = 672_864;

/// The seed's path.
pub const PATH: &str = "/api/v1/places";

/// How long the origin lets a response be reused: one second, nginx's
/// micro-caching (`proxy_cache_valid 1s`), stated by the origin so every
/// proxy applies the same lifetime. `stale-while-revalidate` lets a proxy
/// that supports it (nginx, tiercache) keep serving the old copy while one
/// request refreshes it, as nginx's micro-caching setup does with
/// `proxy_cache_use_stale updating`.
pub const CACHE_CONTROL_VALUE: &str = "public, max-age=1, stale-while-revalidate=10";

/// The memcached app cache's lifetime (the same second).
pub const APP_TTL: Duration = Duration::from_secs(1);

/// A deterministic JSON list of places, exactly [`DOC_BYTES`] long: items
/// like seed 002's API, the last one padded to the exact length.
pub fn document() -> Bytes {
    let item = |i: usize| {
        format!(
            r#"{{"id":{i},"name":"Ciudad de Mexico - Terminal Norte {i}","slug":"ciudad-de-mexico-terminal-norte-{i}","country":"MX","lat":{:.4},"lon":{:.4}}}"#,
            19.0 + (i % 1000) as f64 / 1000.0,
            -99.0 - (i % 700) as f64 / 1000.0
        )
    };
    let mut doc = String::with_capacity(DOC_BYTES);
    doc.push('[');
    let mut i = 0;
    // Room for the padded closing item: `,{"id":N,"pad":""}]`.
    while doc.len() + item(i).len() + 1 + 64 < DOC_BYTES {
        if i > 0 {
            doc.push(',');
        }
        doc.push_str(&item(i));
        i += 1;
    }
    let head = format!(r#",{{"id":{i},"pad":""#);
    let tail = "\"}]";
    let pad = DOC_BYTES - doc.len() - head.len() - tail.len();
    doc.push_str(&head);
    doc.push_str(&"x".repeat(pad));
    doc.push_str(tail);
    debug_assert_eq!(doc.len(), DOC_BYTES);
    Bytes::from(doc)
}

/// The slow origin: `GET /api/v1/places` answers [`document`] after
/// `delay`, with [`CACHE_CONTROL_VALUE`]; counts the requests it serves.
pub struct Origin {
    pub server: AppServer,
    pub requests: Arc<AtomicU64>,
}

impl Origin {
    pub fn start(
        rt: &tokio::runtime::Runtime,
        delay: Duration,
        doc: Bytes,
    ) -> std::io::Result<Origin> {
        let requests = Arc::new(AtomicU64::new(0));
        let counter = requests.clone();
        let server = http_app::spawn(rt, move |req| {
            let doc = doc.clone();
            let counter = counter.clone();
            async move {
                if req.uri().path() != PATH {
                    return http_app::text(404, "no such path");
                }
                counter.fetch_add(1, Ordering::Relaxed);
                // Stands for the seed's slow query and serialisation.
                tokio::time::sleep(delay).await;
                json(doc)
            }
        })?;
        Ok(Origin { server, requests })
    }

    /// Requests served so far.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}

fn json(body: Bytes) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body));
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r.headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static(CACHE_CONTROL_VALUE));
    r
}

/// Seed 002's memcached setup: the app looks the response up in memcached
/// by URL; on a miss it fetches it from the origin and stores it for
/// [`APP_TTL`]. Like the seed's app it does not coalesce misses or serve
/// stale copies: when the entry expires, the requests arriving during the
/// refetch all go to the origin.
pub fn memcached_app(
    rt: &tokio::runtime::Runtime,
    memcached: SocketAddr,
    origin: SocketAddr,
) -> Result<AppServer, String> {
    let store = Arc::new(
        MemcachedStore::open("memcached-app", &[memcached.to_string()], None)
            .map_err(|e| e.to_string())?,
    );
    // A fresh key per run: an earlier run's copy must not count.
    let key = Bytes::from(format!(
        "lab:microcache:{}:{}{PATH}",
        std::process::id(),
        now_ms()
    ));
    http_app::spawn(rt, move |req| {
        let (store, key) = (store.clone(), key.clone());
        async move {
            if req.uri().path() != PATH {
                return http_app::text(404, "no such path");
            }
            match store.get_many(std::slice::from_ref(&key)).await {
                Ok(mut v) => {
                    if let Some(Some(hit)) = v.pop() {
                        return json(hit.value);
                    }
                }
                Err(e) => return http_app::text(502, format!("memcached get: {e}")),
            }
            let body = match http_load::fetch(origin, PATH).await {
                Ok((200, body)) => Bytes::from(body),
                Ok((status, _)) => return http_app::text(502, format!("origin answered {status}")),
                Err(e) => return http_app::text(502, format!("origin: {e}")),
            };
            let expires = now_ms() + APP_TTL.as_millis() as u64;
            let entry = Entry::with_expiry(body.clone(), Some(expires));
            if let Err(e) = store.set_many(&[(key, entry)]).await {
                return http_app::text(502, format!("memcached set: {e}"));
            }
            json(body)
        }
    })
    .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_is_valid_json_of_the_seeds_length() {
        let doc = document();
        assert_eq!(doc.len(), DOC_BYTES);
        let v: serde_json::Value = serde_json::from_slice(&doc).expect("valid JSON");
        let list = v.as_array().unwrap();
        assert!(list.len() > 3000, "{}", list.len());
        assert_eq!(list[1]["id"], 1);
        assert_eq!(document(), doc, "deterministic");
    }
}
