//! RFC 9111 conformance through the real proxy over TCP: a counting origin
//! behind it, assertions on what clients get and what the origin sees.

mod common;

use common::{Origin, Proxy, Reply};
use std::time::Duration;

fn now_http_date(offset: i64) -> String {
    let t = std::time::SystemTime::now();
    let t = if offset >= 0 {
        t + Duration::from_secs(offset as u64)
    } else {
        t - Duration::from_secs((-offset) as u64)
    };
    httpdate::fmt_http_date(t)
}

async fn setup(
    reply: impl Fn(&common::Seen, usize) -> Reply + Send + Sync + 'static,
) -> (Origin, Proxy, tempfile::TempDir) {
    let origin = Origin::start(reply).await;
    let dir = tempfile::tempdir().unwrap();
    let proxy = Proxy::start(&origin.url(), dir.path(), |_| {}).await;
    (origin, proxy, dir)
}

#[tokio::test]
async fn rfc9111_4_2_fresh_response_is_served_from_cache() {
    let (origin, proxy, _d) =
        setup(|_, _| Reply::ok("hello").header("cache-control", "max-age=60")).await;
    let a = proxy.get("/f").await;
    assert_eq!((a.status, a.x_cache(), a.text()), (200, "MISS", "hello"));
    assert!(a.h("cache-status").contains("fwd=uri-miss") && a.h("cache-status").contains("stored"));
    let b = proxy.get("/f").await;
    assert_eq!((b.status, b.x_cache(), b.text()), (200, "HIT", "hello"));
    assert!(
        b.h("cache-status").starts_with("tiercache; hit"),
        "{}",
        b.h("cache-status")
    );
    assert!(b.h("age").parse::<u64>().is_ok(), "hits carry Age (§5.1)");
    assert!(b.h("via").contains("tiercache"));
    assert_eq!(origin.count("/f"), 1);
}

#[tokio::test]
async fn rfc9111_4_2_3_age_from_upstream_counts_and_can_make_it_stale() {
    let (origin, proxy, _d) = setup(|s, _| {
        let r = Reply::ok("x").header("cache-control", "max-age=60");
        if s.path == "/old" {
            r.header("age", "100")
        } else {
            r.header("age", "10")
        }
    })
    .await;
    proxy.get("/young").await;
    let hit = proxy.get("/young").await;
    assert_eq!(hit.x_cache(), "HIT");
    assert!(hit.h("age").parse::<u64>().unwrap() >= 10);
    proxy.get("/old").await;
    let again = proxy.get("/old").await;
    assert_eq!(
        again.x_cache(),
        "MISS",
        "Age 100 > max-age 60: stale on arrival"
    );
    assert_eq!(origin.count("/old"), 2);
}

#[tokio::test]
async fn rfc9111_4_2_1_s_maxage_overrides_max_age_in_a_shared_cache() {
    let (origin, proxy, _d) =
        setup(|_, _| Reply::ok("x").header("cache-control", "max-age=0, s-maxage=60")).await;
    proxy.get("/s").await;
    assert_eq!(proxy.get("/s").await.x_cache(), "HIT");
    assert_eq!(origin.count("/s"), 1);
}

#[tokio::test]
async fn rfc9111_4_2_1_expires_and_date() {
    let (origin, proxy, _d) = setup(|s, _| {
        let r = Reply::ok("x").header("date", &now_http_date(0));
        match s.path.as_str() {
            "/future" => r.header("expires", &now_http_date(60)),
            "/past" => r.header("expires", &now_http_date(-60)),
            _ => r.header("expires", "0"), // invalid: already expired (§5.3)
        }
    })
    .await;
    for p in ["/future", "/past", "/invalid"] {
        proxy.get(p).await;
        proxy.get(p).await;
    }
    assert_eq!(origin.count("/future"), 1);
    assert_eq!(origin.count("/past"), 2);
    assert_eq!(origin.count("/invalid"), 2);
}

#[tokio::test]
async fn rfc9111_3_responses_without_freshness_are_not_reused_by_default() {
    let (origin, proxy, _d) = setup(|_, _| Reply::ok("x")).await;
    proxy.get("/n").await;
    let b = proxy.get("/n").await;
    assert_eq!(b.x_cache(), "MISS");
    assert!(
        b.h("cache-status").contains("detail=no-freshness"),
        "{}",
        b.h("cache-status")
    );
    assert_eq!(origin.count("/n"), 2);
}

#[tokio::test]
async fn micro_cache_default_ttl_caches_responses_without_freshness() {
    let origin = Origin::start(|s, _| {
        if s.path == "/cookie" {
            Reply::ok("x").header("set-cookie", "sid=1")
        } else {
            Reply::ok("x")
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let proxy = Proxy::start(&origin.url(), dir.path(), |c| {
        c.default_ttl = Some(Duration::from_secs(60))
    })
    .await;
    proxy.get("/d").await;
    assert_eq!(proxy.get("/d").await.x_cache(), "HIT");
    proxy.get("/cookie").await;
    assert_eq!(
        proxy.get("/cookie").await.x_cache(),
        "MISS",
        "default_ttl never caches Set-Cookie"
    );
}

#[tokio::test]
async fn rfc9111_5_2_2_no_store_and_private_are_not_stored() {
    let (origin, proxy, _d) = setup(|s, _| match s.path.as_str() {
        "/ns" => Reply::ok("x").header("cache-control", "max-age=60, no-store"),
        _ => Reply::ok("x").header("cache-control", "max-age=60, private"),
    })
    .await;
    for p in ["/ns", "/p"] {
        proxy.get(p).await;
        assert_eq!(proxy.get(p).await.x_cache(), "MISS", "{p}");
        assert_eq!(origin.count(p), 2, "{p}");
    }
}

#[tokio::test]
async fn rfc9111_5_2_1_5_request_no_store() {
    let (origin, proxy, _d) =
        setup(|_, _| Reply::ok("x").header("cache-control", "max-age=60")).await;
    proxy
        .req("GET", "/rns", &[("cache-control", "no-store")])
        .await;
    proxy.get("/rns").await;
    assert_eq!(origin.count("/rns"), 2);
}

#[tokio::test]
async fn rfc9111_3_5_authorization() {
    let (origin, proxy, _d) = setup(|s, _| match s.path.as_str() {
        "/pub" => Reply::ok("x").header("cache-control", "max-age=60, public"),
        _ => Reply::ok("x").header("cache-control", "max-age=60"),
    })
    .await;
    let auth = [("authorization", "Basic dTpw")];
    proxy.req("GET", "/priv", &auth).await;
    proxy.req("GET", "/priv", &auth).await;
    assert_eq!(origin.count("/priv"), 2);
    proxy.req("GET", "/pub", &auth).await;
    assert_eq!(proxy.req("GET", "/pub", &auth).await.x_cache(), "HIT");
    assert_eq!(origin.count("/pub"), 1);
}

#[tokio::test]
async fn rfc9111_4_1_vary_selects_variants_with_normalised_values() {
    let (origin, proxy, _d) = setup(|s, _| {
        let lang = s
            .headers
            .get("accept-language")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        Reply::ok(&format!("lang={lang}"))
            .header("cache-control", "max-age=60")
            .header("vary", "Accept-Language")
    })
    .await;
    let en = proxy.req("GET", "/v", &[("accept-language", "en")]).await;
    assert_eq!(en.text(), "lang=en");
    let en2 = proxy
        .req("GET", "/v", &[("accept-language", "  en ")])
        .await;
    assert_eq!((en2.x_cache(), en2.text()), ("HIT", "lang=en"));
    let fr = proxy.req("GET", "/v", &[("accept-language", "fr")]).await;
    assert_eq!((fr.x_cache(), fr.text()), ("MISS", "lang=fr"));
    assert!(fr.h("cache-status").contains("fwd=vary-miss"));
    let none = proxy.get("/v").await;
    assert_eq!((none.x_cache(), none.text()), ("MISS", "lang="));
    assert_eq!(
        proxy
            .req("GET", "/v", &[("accept-language", "en")])
            .await
            .x_cache(),
        "HIT"
    );
    assert_eq!(
        proxy
            .req("GET", "/v", &[("accept-language", "fr")])
            .await
            .x_cache(),
        "HIT"
    );
    assert_eq!(origin.count("/v"), 3);
}

#[tokio::test]
async fn rfc9111_4_1_vary_star_never_matches() {
    let (origin, proxy, _d) = setup(|_, _| {
        Reply::ok("x")
            .header("cache-control", "max-age=60")
            .header("vary", "*")
    })
    .await;
    proxy.get("/star").await;
    proxy.get("/star").await;
    assert_eq!(origin.count("/star"), 2);
}

#[tokio::test]
async fn rfc9111_4_3_revalidation_304_merges_headers() {
    let (origin, proxy, _d) = setup(|s, n| {
        if n == 1 {
            Reply::ok("body-v1")
                .header("cache-control", "max-age=0")
                .header("etag", "\"v1\"")
                .header("x-version", "1")
        } else {
            assert_eq!(
                s.headers.get("if-none-match").unwrap(),
                "\"v1\"",
                "conditional request (§4.3.1)"
            );
            Reply::default()
                .status(304)
                .header("etag", "\"v1\"")
                .header("cache-control", "max-age=60")
                .header("x-version", "2")
        }
    })
    .await;
    assert_eq!(proxy.get("/rv").await.x_cache(), "MISS");
    let b = proxy.get("/rv").await;
    assert_eq!(
        (b.status, b.text(), b.h("x-version")),
        (200, "body-v1", "2")
    );
    assert!(
        b.h("cache-status").contains("fwd=stale; fwd-status=304"),
        "{}",
        b.h("cache-status")
    );
    let c = proxy.get("/rv").await;
    assert_eq!(
        (
            c.x_cache(),
            c.text(),
            c.h("x-version"),
            c.h("cache-control")
        ),
        ("HIT", "body-v1", "2", "max-age=60")
    );
    assert_eq!(origin.count("/rv"), 2);
}

#[tokio::test]
async fn rfc9111_5_2_2_4_no_cache_response_is_revalidated_every_time() {
    let (origin, proxy, _d) = setup(|s, n| {
        if n > 1 && s.headers.get("if-none-match").is_some() {
            Reply::default().status(304).header("etag", "\"a\"")
        } else {
            Reply::ok("nc")
                .header("cache-control", "no-cache, max-age=60")
                .header("etag", "\"a\"")
        }
    })
    .await;
    for _ in 0..3 {
        assert_eq!(proxy.get("/nc").await.text(), "nc");
    }
    assert_eq!(origin.count("/nc"), 3);
    assert!(origin.last("/nc").headers.contains_key("if-none-match"));
}

#[tokio::test]
async fn rfc9111_5_2_1_request_directives() {
    let (origin, proxy, _d) = setup(|_, _| {
        Reply::ok("x")
            .header("cache-control", "max-age=60")
            .header("age", "20")
    })
    .await;
    proxy.get("/rd").await;
    assert_eq!(proxy.get("/rd").await.x_cache(), "HIT");
    // no-cache: go to the origin.
    assert_eq!(
        proxy
            .req("GET", "/rd", &[("cache-control", "no-cache")])
            .await
            .x_cache(),
        "MISS"
    );
    // max-age=5 while the response is >= 20 s old.
    assert_eq!(
        proxy
            .req("GET", "/rd", &[("cache-control", "max-age=5")])
            .await
            .x_cache(),
        "MISS"
    );
    // min-fresh=50 while only 40 s of freshness remain.
    assert_eq!(
        proxy
            .req("GET", "/rd", &[("cache-control", "min-fresh=50")])
            .await
            .x_cache(),
        "MISS"
    );
    assert_eq!(
        proxy
            .req("GET", "/rd", &[("cache-control", "min-fresh=10")])
            .await
            .x_cache(),
        "HIT"
    );
    assert_eq!(origin.count("/rd"), 4);
}

#[tokio::test]
async fn rfc9111_5_2_1_2_max_stale_accepts_stale() {
    let (origin, proxy, _d) = setup(|_, _| {
        Reply::ok("x")
            .header("cache-control", "max-age=60")
            .header("age", "70")
            .header("etag", "\"e\"")
    })
    .await;
    proxy.get("/ms").await;
    let r = proxy
        .req("GET", "/ms", &[("cache-control", "max-stale=30")])
        .await;
    assert_eq!(r.x_cache(), "STALE");
    assert_eq!(origin.count("/ms"), 1);
}

#[tokio::test]
async fn rfc9111_5_2_1_7_only_if_cached() {
    let (origin, proxy, _d) =
        setup(|_, _| Reply::ok("x").header("cache-control", "max-age=60")).await;
    let miss = proxy
        .req("GET", "/oic", &[("cache-control", "only-if-cached")])
        .await;
    assert_eq!(miss.status, 504);
    assert_eq!(origin.count("/oic"), 0);
    proxy.get("/oic").await;
    let hit = proxy
        .req("GET", "/oic", &[("cache-control", "only-if-cached")])
        .await;
    assert_eq!((hit.status, hit.x_cache()), (200, "HIT"));
}

#[tokio::test]
async fn rfc9111_4_4_unsafe_methods_invalidate() {
    let (origin, proxy, _d) = setup(|s, _| match (s.method.as_str(), s.path.as_str()) {
        ("GET", _) => Reply::ok("x").header("cache-control", "max-age=60"),
        ("POST", "/create") => Reply::ok("").status(201).header("location", "/items/1"),
        ("DELETE", _) => Reply::ok("").status(500),
        _ => Reply::ok("done"),
    })
    .await;
    for p in ["/items", "/items/1", "/items?page=2"] {
        proxy.get(p).await;
        assert_eq!(proxy.get(p).await.x_cache(), "HIT");
    }
    for m in ["POST", "PUT", "PATCH"] {
        let r = proxy.req(m, "/items", &[]).await;
        assert_eq!(r.x_cache(), "BYPASS");
        assert_eq!(
            proxy.get("/items").await.x_cache(),
            "MISS",
            "{m} invalidates"
        );
        assert_eq!(proxy.get("/items").await.x_cache(), "HIT");
    }
    assert_eq!(
        proxy.get("/items?page=2").await.x_cache(),
        "HIT",
        "another URI is untouched"
    );
    // Location on the same origin is invalidated too.
    proxy.req("POST", "/create", &[]).await;
    assert_eq!(proxy.get("/items/1").await.x_cache(), "MISS");
    // An error response does not invalidate.
    proxy.req("DELETE", "/items/1", &[]).await;
    assert_eq!(proxy.get("/items/1").await.x_cache(), "HIT");
    assert!(origin.count("/items") >= 4);
}

#[tokio::test]
async fn rfc5861_stale_if_error_on_origin_500_and_origin_down() {
    let (origin, proxy, _d) = setup(|_, n| {
        if n == 1 {
            Reply::ok("good")
                .header("cache-control", "max-age=60, stale-if-error=600")
                .header("age", "100")
        } else {
            Reply::ok("boom").status(500)
        }
    })
    .await;
    assert_eq!(proxy.get("/sie").await.text(), "good");
    let r = proxy.get("/sie").await;
    assert_eq!((r.status, r.x_cache(), r.text()), (200, "STALE", "good"));
    assert!(r.h("cache-status").contains("stale-if-error"));
    origin.stop();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let r = proxy.get("/sie").await;
    assert_eq!((r.status, r.x_cache(), r.text()), (200, "STALE", "good"));
}

#[tokio::test]
async fn rfc9111_4_2_4_must_revalidate_is_never_served_stale_on_error() {
    let (origin, proxy, _d) = setup(|_, n| {
        if n == 1 {
            Reply::ok("good")
                .header(
                    "cache-control",
                    "max-age=60, must-revalidate, stale-if-error=600",
                )
                .header("age", "100")
                .header("etag", "\"m\"")
        } else {
            Reply::ok("boom").status(500)
        }
    })
    .await;
    proxy.get("/mr").await;
    let r = proxy.get("/mr").await;
    assert_eq!((r.status, r.text()), (500, "boom"));
    drop(origin);
}

#[tokio::test]
async fn rfc5861_stale_while_revalidate_serves_stale_and_refreshes_once() {
    let (origin, proxy, _d) = setup(|_, n| {
        if n == 1 {
            Reply::ok("v1")
                .header("cache-control", "max-age=60, stale-while-revalidate=600")
                .header("age", "100")
        } else {
            Reply::ok("v2")
                .header("cache-control", "max-age=60")
                .delay(Duration::from_millis(200))
        }
    })
    .await;
    assert_eq!(proxy.get("/swr").await.text(), "v1");
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..20 {
        let addr = proxy.addr;
        set.spawn(async move { common::request(addr, "GET", "/swr", &[]).await });
    }
    while let Some(r) = set.join_next().await {
        let r = r.unwrap();
        assert_eq!((r.x_cache(), r.text()), ("STALE", "v1"));
    }
    proxy.idle().await;
    assert_eq!(origin.count("/swr"), 2, "one background refresh");
    let r = proxy.get("/swr").await;
    assert_eq!((r.x_cache(), r.text()), ("HIT", "v2"));
}

#[tokio::test]
async fn rfc9110_9_3_2_head_is_answered_from_a_stored_get() {
    let (origin, proxy, _d) =
        setup(|_, _| Reply::ok("0123456789").header("cache-control", "max-age=60")).await;
    let h = proxy.req("HEAD", "/h", &[]).await;
    assert_eq!(
        (h.status, h.body.len(), h.h("content-length")),
        (200, 0, "10")
    );
    assert_eq!(
        origin.last("/h").method,
        "GET",
        "a HEAD miss fills the cache with a GET"
    );
    let g = proxy.get("/h").await;
    assert_eq!((g.x_cache(), g.text()), ("HIT", "0123456789"));
    let h2 = proxy.req("HEAD", "/h", &[]).await;
    assert_eq!(
        (h2.x_cache(), h2.body.len(), h2.h("content-length")),
        ("HIT", 0, "10")
    );
    assert_eq!(origin.count("/h"), 1);
}

#[tokio::test]
async fn rfc9111_3_4_range_requests_pass_through_and_never_corrupt_the_cache() {
    let (origin, proxy, _d) = setup(|s, _| {
        if s.headers.contains_key("range") {
            Reply::ok("234")
                .status(206)
                .header("content-range", "bytes 2-4/10")
                .header("cache-control", "max-age=60")
        } else {
            Reply::ok("0123456789").header("cache-control", "max-age=60")
        }
    })
    .await;
    // Cold: a 206 is passed through and not stored.
    let p = proxy.req("GET", "/r", &[("range", "bytes=2-4")]).await;
    assert_eq!((p.status, p.text(), p.x_cache()), (206, "234", "BYPASS"));
    let full = proxy.get("/r").await;
    assert_eq!((full.x_cache(), full.text()), ("MISS", "0123456789"));
    // Warm: still passed through; the stored full response is intact.
    let p = proxy.req("GET", "/r", &[("range", "bytes=2-4")]).await;
    assert_eq!(p.status, 206);
    let full = proxy.get("/r").await;
    assert_eq!((full.x_cache(), full.text()), ("HIT", "0123456789"));
    assert_eq!(origin.count("/r"), 3);
}

#[tokio::test]
async fn rfc9111_4_3_2_client_conditionals_answered_from_cache() {
    let (origin, proxy, _d) = setup(|_, _| {
        Reply::ok("x")
            .header("cache-control", "max-age=60")
            .header("etag", "\"t\"")
            .header("last-modified", "Thu, 01 Jan 2015 00:00:00 GMT")
    })
    .await;
    proxy.get("/c").await;
    let r = proxy.req("GET", "/c", &[("if-none-match", "\"t\"")]).await;
    assert_eq!((r.status, r.body.len(), r.h("etag")), (304, 0, "\"t\""));
    let r = proxy
        .req(
            "GET",
            "/c",
            &[("if-modified-since", "Thu, 01 Jan 2015 00:00:00 GMT")],
        )
        .await;
    assert_eq!(r.status, 304);
    let r = proxy
        .req("GET", "/c", &[("if-none-match", "\"other\"")])
        .await;
    assert_eq!((r.status, r.text()), (200, "x"));
    // A cold conditional request: the cache fetches a full response (its
    // own conditionals only), then answers the client's.
    let r = proxy.req("GET", "/c2", &[("if-none-match", "\"t\"")]).await;
    assert_eq!(r.status, 304);
    assert!(!origin.last("/c2").headers.contains_key("if-none-match"));
    assert_eq!(origin.count("/c"), 1);
}

#[tokio::test]
async fn rfc9110_7_6_hop_by_hop_headers_are_not_forwarded_or_stored() {
    let (origin, proxy, _d) = setup(|_, _| {
        Reply::ok("x")
            .header("cache-control", "max-age=60")
            .header("connection", "x-hop")
            .header("x-hop", "1")
            .header("x-end", "2")
    })
    .await;
    proxy
        .req(
            "GET",
            "/hop",
            &[
                ("connection", "x-client-hop"),
                ("x-client-hop", "1"),
                ("keep-alive", "300"),
            ],
        )
        .await;
    let seen = origin.last("/hop");
    assert!(!seen.headers.contains_key("x-client-hop"));
    assert!(!seen.headers.contains_key("keep-alive"));
    assert!(seen
        .headers
        .get("via")
        .unwrap()
        .to_str()
        .unwrap()
        .contains("tiercache"));
    let hit = proxy.get("/hop").await;
    assert_eq!(hit.x_cache(), "HIT");
    assert!(!hit.headers.contains_key("x-hop"));
    assert_eq!(hit.h("x-end"), "2");
}
