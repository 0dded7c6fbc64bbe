//! The `pages` scenario end to end (quick mode), and the HTTP load
//! generator it shares with `microcache`: wrong, short or failed answers are
//! counted and turn into errors, chunked bodies are read.

use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;
use tiercache_lab::scenarios::http_app;
use tiercache_lab::scenarios::http_load::{run_load, Choose, Load, Resource};
use tiercache_lab::{ChartKind, Ctx, LabOptions};

fn ctx() -> Ctx {
    Ctx::new(LabOptions {
        quick: true,
        require: false,
        data_dir: std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data"),
        progress: false,
    })
    .unwrap()
}

#[test]
fn pages_measures_every_setup_on_verified_pages() {
    let mut ctx = ctx();
    let report = tiercache_lab::scenarios::pages::run(&mut ctx).expect("pages runs");
    ctx.stop_servers();
    println!("{}", tiercache_lab::report::table::render(&report));
    assert_eq!(report.baseline.as_deref(), Some("db"));
    assert_eq!(report.parameters["connections"], 12);
    assert_eq!(report.parameters["page_bytes"], 6662);
    for k in &report.skipped {
        if tiercache_testkit::backends_required() {
            panic!("pages: {} skipped: {}", k.setup, k.reason);
        }
        eprintln!("SKIPPED pages/{}: {}", k.setup, k.reason);
    }
    let measured: Vec<&str> = ["db", "db+redis", "tiercache"]
        .into_iter()
        .filter(|s| !report.skipped.iter().any(|k| k.setup == *s))
        .collect();
    assert!(measured.contains(&"db") && measured.contains(&"tiercache"));
    for s in &measured {
        let rps = report.value(s, "req_per_sec").unwrap();
        assert!(rps > 50.0, "{s}: {rps} req/s");
        let p99 = report.value(s, "p99_ms").unwrap();
        assert!(p99 > 0.0 && p99 < 1000.0, "{s}: p99 {p99} ms");
        let pct = report
            .percentiles
            .iter()
            .find(|p| p.setup == *s)
            .expect("percentiles");
        assert!(pct.samples > 100, "{s}: {} samples", pct.samples);
        let (p50, p99b, max) = (
            pct.at(50.0).unwrap(),
            pct.at(99.0).unwrap(),
            pct.at(100.0).unwrap(),
        );
        assert!(p50 <= p99b && p99b <= max, "{s}: {p50} {p99b} {max}");
        assert_eq!(p99b, p99);
    }
    // The database answered every request of `db`, and far fewer behind
    // a cache: the caches really cached.
    let db_q = report.value("db", "db_queries").unwrap();
    let db_served = report
        .percentiles
        .iter()
        .find(|p| p.setup == "db")
        .unwrap()
        .samples as f64;
    assert!(
        db_q >= db_served,
        "db: {db_q} queries for {db_served} requests"
    );
    let tier_q = report.value("tiercache", "db_queries").unwrap();
    assert!(
        tier_q <= 2000.0 && tier_q < db_q,
        "tiercache: {tier_q} queries"
    );
    assert!(report.notes.iter().any(|n| n.contains("byte for byte")));
    let ChartKind::Bars { bars } = &report.charts[0].kind else {
        panic!("bars expected")
    };
    assert_eq!(bars.len(), measured.len());
    assert!(!report.charts[0].lower_is_better);
}

/// A server answering `/ok` right, `/wrong` with another body of the same
/// length, `/short` with a truncated body, `/missing` with 404.
fn test_server(rt: &tokio::runtime::Runtime) -> http_app::AppServer {
    http_app::spawn(rt, |req| async move {
        let body = match req.uri().path() {
            "/ok" => "hello, world",
            "/wrong" => "hello, WORLD",
            "/missing" => return http_app::text(404, "nope"),
            _ => "hello",
        };
        http_app::text(200, body)
    })
    .unwrap()
}

/// A raw HTTP/1.1 server whose every response is chunked (hyper's `Full`
/// always sends a length), with a chunk extension and a trailer field.
fn chunked_server(rt: &tokio::runtime::Runtime) -> std::net::SocketAddr {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    rt.spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut stream = BufReader::new(stream);
                let mut line = String::new();
                loop {
                    // Read one request head.
                    loop {
                        line.clear();
                        if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let reply = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
                                 5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: 1\r\n\r\n";
                    if stream.get_mut().write_all(reply.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

fn resources(paths: &[&str]) -> Arc<Vec<Resource>> {
    Arc::new(
        paths
            .iter()
            .map(|p| Resource {
                path: p.to_string(),
                expected: Bytes::from_static(b"hello, world"),
            })
            .collect(),
    )
}

#[test]
fn the_load_generator_counts_wrong_and_failed_answers() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = test_server(&rt);
    let load = Load {
        connections: 3,
        duration: Duration::from_millis(300),
        seed: 1,
    };
    let ok = run_load(server.addr, resources(&["/ok"]), Choose::First, &load, None).unwrap();
    assert!(ok.ok > 10, "{}", ok.ok);
    assert_eq!(ok.failed, 0);
    ok.check("ok").unwrap();
    assert_eq!(ok.body_bytes, ok.ok * 12);
    assert_eq!(ok.hist.len(), ok.ok);

    for (path, what) in [
        ("/wrong", "same length, different content"),
        ("/short", "wrong body (5 bytes, expected 12"),
        ("/missing", "status 404"),
    ] {
        let r = run_load(server.addr, resources(&[path]), Choose::First, &load, None).unwrap();
        assert_eq!(r.ok, 0, "{path}");
        assert!(r.failed > 0, "{path}");
        let e = r.check(path).unwrap_err();
        assert!(e.contains(what), "{path}: {e}");
    }

    // Zipf over 3 resources, one of which is wrong: requests to all three
    // happen, and the wrong one's failures are caught.
    let mixed = run_load(
        server.addr,
        resources(&["/ok", "/ok", "/wrong"]),
        Choose::Zipf { s: 1.0 },
        &load,
        None,
    )
    .unwrap();
    assert!(
        mixed.per_resource[0] > mixed.per_resource[1],
        "{:?}",
        mixed.per_resource
    );
    assert!(mixed.failed > 0 && mixed.ok > 0);
    assert!(mixed.check("mixed").is_err());

    let chunked = chunked_server(&rt);
    let c = run_load(chunked, resources(&["/ok"]), Choose::First, &load, None).unwrap();
    c.check("chunked").unwrap();
    assert!(c.ok > 10);

    // A server that is gone: connection failures, not a hang.
    let addr = server.addr;
    drop(server);
    std::thread::sleep(Duration::from_millis(50));
    let gone = run_load(addr, resources(&["/ok"]), Choose::First, &load, None).unwrap();
    assert_eq!(gone.ok, 0);
    assert!(gone.check("gone").is_err());
}
