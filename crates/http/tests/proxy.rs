//! The proxy as a service: coalescing, timeouts, restarts, bad input,
//! purge, metrics, micro-cache knobs.

mod common;

use common::{Origin, Proxy, Reply};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn five_hundred_concurrent_requests_for_one_cold_url_reach_the_origin_once() {
    let body = "x".repeat(64 << 10);
    let b2 = body.clone();
    let origin = Origin::start(move |_, _| {
        Reply::ok(&b2)
            .header("cache-control", "max-age=60")
            .delay(Duration::from_millis(500))
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let proxy = Proxy::start(&origin.url(), dir.path(), |_| {}).await;
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..500 {
        let addr = proxy.addr;
        set.spawn(async move { common::request(addr, "GET", "/cold", &[]).await });
    }
    let mut statuses = std::collections::BTreeMap::new();
    while let Some(r) = set.join_next().await {
        let r = r.unwrap();
        assert_eq!(r.body.len(), body.len());
        *statuses
            .entry((r.status, r.x_cache().to_owned()))
            .or_insert(0) += 1;
    }
    assert_eq!(origin.count("/cold"), 1, "{statuses:?}");
    assert!(statuses.keys().all(|(s, _)| *s == 200), "{statuses:?}");
    let m = proxy.cache.metrics();
    assert!(
        m.coalesced_waiters
            .load(std::sync::atomic::Ordering::Relaxed)
            > 0
    );
    proxy.stop().await;
}

#[tokio::test]
async fn a_hung_upstream_releases_waiters_after_the_coalescing_timeout() {
    let origin = Origin::start(|_, _| Reply {
        hang: true,
        ..Reply::ok("never")
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let proxy = Proxy::start(&origin.url(), dir.path(), |c| {
        c.coalesce_timeout = Duration::from_millis(200);
        c.upstream_timeout = Duration::from_secs(30);
    })
    .await;
    let addr = proxy.addr;
    let leader = tokio::spawn(async move { common::request(addr, "GET", "/hang", &[]).await });
    // Wait until the leader's fetch is in flight.
    while origin.count("/hang") == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut waiters = tokio::task::JoinSet::new();
    for _ in 0..20 {
        waiters.spawn(async move { common::request(addr, "GET", "/hang", &[]).await });
    }
    // The waiters come back (the guard is far below the 30 s upstream
    // timeout the leader is stuck behind) ...
    let released = tokio::time::timeout(Duration::from_secs(10), async {
        let mut out = Vec::new();
        while let Some(r) = waiters.join_next().await {
            out.push(r.unwrap());
        }
        out
    })
    .await
    .expect("waiters released by the coalescing timeout");
    for r in &released {
        assert_eq!(r.status, 504);
        assert!(
            r.h("cache-status").contains("detail=coalesce-timeout"),
            "{}",
            r.h("cache-status")
        );
    }
    // ... while the leader is still waiting for the origin, and nobody else
    // went to the origin.
    assert!(!leader.is_finished());
    assert_eq!(origin.count("/hang"), 1);
    leader.abort();
}

#[tokio::test]
async fn upstream_timeout_gives_504() {
    let origin = Origin::start(|_, _| Reply {
        hang: true,
        ..Reply::ok("never")
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let proxy = Proxy::start(&origin.url(), dir.path(), |c| {
        c.upstream_timeout = Duration::from_millis(200)
    })
    .await;
    let r = proxy.get("/slow").await;
    assert_eq!(r.status, 504);
    let r = proxy.req("POST", "/slow", &[]).await;
    assert_eq!(r.status, 504);
}

#[tokio::test]
async fn responses_cached_before_a_restart_are_hits_after_it_without_the_origin() {
    let origin = Origin::start(|s, _| {
        Reply::ok(&format!("body of {}", s.path)).header("cache-control", "max-age=3600")
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let proxy = Proxy::start(&origin.url(), dir.path(), |_| {}).await;
    for i in 0..20 {
        assert_eq!(proxy.get(&format!("/keep/{i}")).await.x_cache(), "MISS");
    }
    proxy.stop().await;
    origin.stop();
    let proxy = Proxy::start(&origin.url(), dir.path(), |_| {}).await;
    for i in 0..20 {
        let r = proxy.get(&format!("/keep/{i}")).await;
        assert_eq!((r.status, r.x_cache()), (200, "HIT"));
        assert_eq!(r.text(), format!("body of /keep/{i}"));
    }
    proxy.stop().await;
}

#[tokio::test]
async fn garbage_and_oversized_requests_get_clear_errors_and_the_proxy_stays_up() {
    let origin =
        Origin::start(|_, _| Reply::ok("fine").header("cache-control", "max-age=60")).await;
    let dir = tempfile::tempdir().unwrap();
    let proxy = Proxy::start(&origin.url(), dir.path(), |c| c.max_header_bytes = 16 << 10).await;
    let out = common::raw(
        proxy.addr,
        b"\x16\x03\x01garbage\r\n\r\n",
        Duration::from_secs(5),
    )
    .await;
    assert!(
        out.starts_with(b"HTTP/1.1 400"),
        "{}",
        String::from_utf8_lossy(&out)
    );
    let out = common::raw(
        proxy.addr,
        b"GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
        Duration::from_secs(5),
    )
    .await;
    assert!(
        out.starts_with(b"HTTP/1.1 400"),
        "{}",
        String::from_utf8_lossy(&out)
    );
    let mut big = b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: ".to_vec();
    big.extend(std::iter::repeat_n(b'a', 64 << 10));
    big.extend_from_slice(b"\r\n\r\n");
    let out = common::raw(proxy.addr, &big, Duration::from_secs(5)).await;
    assert!(
        out.starts_with(b"HTTP/1.1 431"),
        "{}",
        String::from_utf8_lossy(&out[..out.len().min(200)])
    );
    // Still serving.
    assert_eq!(proxy.get("/ok").await.text(), "fine");
}

/// An origin that promises 1000 bytes and closes after 10.
async fn truncating_origin() -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let task = tokio::spawn(async move {
        loop {
            let (mut s, _) = l.accept().await.unwrap();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = tokio::io::AsyncReadExt::read(&mut s, &mut buf).await;
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nCache-Control: max-age=60\r\n\r\n0123456789")
                    .await;
                let _ = s.shutdown().await;
            });
        }
    });
    (addr, task)
}

#[tokio::test]
async fn an_upstream_closing_mid_body_gives_502_and_stores_nothing() {
    let (addr, task) = truncating_origin().await;
    let dir = tempfile::tempdir().unwrap();
    let proxy = Proxy::start(&format!("http://{addr}"), dir.path(), |_| {}).await;
    for _ in 0..2 {
        let r = proxy.get("/trunc").await;
        assert_eq!(r.status, 502);
        assert_ne!(r.x_cache(), "HIT");
    }
    let only = proxy
        .req("GET", "/trunc", &[("cache-control", "only-if-cached")])
        .await;
    assert_eq!(only.status, 504, "nothing partial was stored");
    task.abort();
}

#[tokio::test]
async fn an_unreachable_origin_gives_502() {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    let dir = tempfile::tempdir().unwrap();
    let proxy = Proxy::start(&format!("http://{addr}"), dir.path(), |_| {}).await;
    assert_eq!(proxy.get("/x").await.status, 502);
    assert_eq!(proxy.req("DELETE", "/x", &[]).await.status, 502);
}

#[tokio::test]
async fn objects_over_max_object_size_are_served_but_not_stored() {
    let origin = Origin::start(|s, _| {
        let n = if s.path == "/big" { 5000 } else { 100 };
        Reply::ok(&"b".repeat(n)).header("cache-control", "max-age=60")
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let proxy = Proxy::start(&origin.url(), dir.path(), |c| c.max_object_size = 1000).await;
    for _ in 0..2 {
        let r = proxy.get("/big").await;
        assert_eq!(r.body.len(), 5000);
        assert!(r.h("cache-status").contains("detail=too-large"));
    }
    assert_eq!(origin.count("/big"), 2);
    proxy.get("/small").await;
    assert_eq!(proxy.get("/small").await.x_cache(), "HIT");
}

#[tokio::test]
async fn purge_by_url_and_prefix_needs_the_token() {
    let origin = Origin::start(|_, _| Reply::ok("x").header("cache-control", "max-age=60")).await;
    let dir = tempfile::tempdir().unwrap();
    let proxy = Proxy::start(&origin.url(), dir.path(), |_| {}).await;
    for p in ["/a/1", "/a/2", "/b/1"] {
        proxy.get(p).await;
    }
    let denied = proxy.req("POST", "/_tiercache/purge?url=/a/1", &[]).await;
    assert_eq!(denied.status, 401);
    let denied = proxy
        .req(
            "POST",
            "/_tiercache/purge?url=/a/1",
            &[("authorization", "Bearer wrong")],
        )
        .await;
    assert_eq!(denied.status, 401);
    assert_eq!(proxy.get("/a/1").await.x_cache(), "HIT");
    let auth = [("authorization", "Bearer sekret")];
    let ok = proxy
        .req("POST", "/_tiercache/purge?url=%2Fa%2F1", &auth)
        .await;
    assert_eq!(ok.status, 200, "{}", ok.text());
    assert!(ok.text().contains("purged 1"), "{}", ok.text());
    assert_eq!(proxy.get("/a/1").await.x_cache(), "MISS");
    let ok = proxy
        .req("POST", "/_tiercache/purge?prefix=/a/", &auth)
        .await;
    assert!(ok.text().contains("purged 2"), "{}", ok.text());
    assert_eq!(proxy.get("/a/2").await.x_cache(), "MISS");
    assert_eq!(proxy.get("/b/1").await.x_cache(), "HIT");
    // The PURGE method.
    assert_eq!(proxy.req("PURGE", "/b/1", &[]).await.status, 401);
    assert_eq!(proxy.req("PURGE", "/b/1", &auth).await.status, 200);
    assert_eq!(proxy.get("/b/1").await.x_cache(), "MISS");
}

#[tokio::test]
async fn purge_is_refused_when_no_token_is_configured() {
    let origin = Origin::start(|_, _| Reply::ok("x")).await;
    let dir = tempfile::tempdir().unwrap();
    let proxy = Proxy::start(&origin.url(), dir.path(), |c| c.purge_token = None).await;
    let r = proxy
        .req(
            "POST",
            "/_tiercache/purge?url=/x",
            &[("authorization", "Bearer ")],
        )
        .await;
    assert_eq!(r.status, 403);
}

#[tokio::test]
async fn metrics_count_outcomes() {
    let origin = Origin::start(|_, _| Reply::ok("x").header("cache-control", "max-age=60")).await;
    let dir = tempfile::tempdir().unwrap();
    let proxy = Proxy::start(&origin.url(), dir.path(), |_| {}).await;
    proxy.get("/m").await;
    proxy.get("/m").await;
    proxy.req("POST", "/m", &[]).await;
    let m = proxy.get("/_tiercache/metrics").await;
    assert_eq!(m.status, 200);
    let t = m.text();
    assert!(
        t.contains("tiercache_http_requests_total{outcome=\"hit\"} 1\n"),
        "{t}"
    );
    assert!(
        t.contains("tiercache_http_requests_total{outcome=\"miss\"} 1\n"),
        "{t}"
    );
    assert!(
        t.contains("tiercache_http_requests_total{outcome=\"bypass\"} 1\n"),
        "{t}"
    );
    assert!(t.contains("tiercache_http_stored_total 1\n"), "{t}");
}

#[tokio::test]
async fn rules_override_ttl_and_bypass_by_header_or_cookie() {
    let origin = Origin::start(|_, _| Reply::ok("x").header("cache-control", "max-age=0")).await;
    let dir = tempfile::tempdir().unwrap();
    let proxy = Proxy::start(&origin.url(), dir.path(), |c| {
        c.rules = vec![tiercache_http::Rule {
            prefix: "/api/".into(),
            ttl: Some(Duration::from_secs(5)),
            bypass_headers: vec![hyper::header::HeaderName::from_static("x-debug")],
            bypass_cookies: vec!["session".into()],
            ..Default::default()
        }];
    })
    .await;
    proxy.get("/api/x").await;
    assert_eq!(proxy.get("/api/x").await.x_cache(), "HIT", "ttl override");
    proxy.get("/other").await;
    assert_eq!(
        proxy.get("/other").await.x_cache(),
        "MISS",
        "max-age=0 elsewhere"
    );
    assert_eq!(
        proxy
            .req("GET", "/api/x", &[("x-debug", "1")])
            .await
            .x_cache(),
        "BYPASS"
    );
    assert_eq!(
        proxy
            .req("GET", "/api/x", &[("cookie", "a=1; session=abc")])
            .await
            .x_cache(),
        "BYPASS"
    );
    assert_eq!(
        proxy
            .req("GET", "/api/x", &[("cookie", "a=1; sessionx=abc")])
            .await
            .x_cache(),
        "HIT"
    );
}

#[tokio::test]
async fn key_headers_split_the_cache() {
    let origin = Origin::start(|s, _| {
        let enc = s
            .headers
            .get("accept-encoding")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        Reply::ok(&enc).header("cache-control", "max-age=60")
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let proxy = Proxy::start(&origin.url(), dir.path(), |c| {
        c.key_headers = vec![hyper::header::HeaderName::from_static("accept-encoding")]
    })
    .await;
    assert_eq!(
        proxy
            .req("GET", "/k", &[("accept-encoding", "gzip")])
            .await
            .text(),
        "gzip"
    );
    assert_eq!(
        proxy
            .req("GET", "/k", &[("accept-encoding", "br")])
            .await
            .text(),
        "br"
    );
    let r = proxy.req("GET", "/k", &[("accept-encoding", "gzip")]).await;
    assert_eq!((r.x_cache(), r.text()), ("HIT", "gzip"));
}

#[tokio::test]
async fn keep_alive_connections_serve_many_requests() {
    let origin = Origin::start(|_, _| Reply::ok("ka").header("cache-control", "max-age=60")).await;
    let dir = tempfile::tempdir().unwrap();
    let proxy = Proxy::start(&origin.url(), dir.path(), |_| {}).await;
    let req = b"GET /ka HTTP/1.1\r\nHost: x\r\n\r\n".repeat(5);
    let mut last = b"GET /ka HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_vec();
    let mut all = req.clone();
    all.append(&mut last);
    let out = common::raw(proxy.addr, &all, Duration::from_secs(5)).await;
    let text = String::from_utf8_lossy(&out);
    assert_eq!(text.matches("HTTP/1.1 200 OK").count(), 6, "{text}");
    assert_eq!(origin.count("/ka"), 1);
}
