//! The real binary over PostgreSQL: `tiercache serve` with a write-back
//! namespace over a `postgres` store writes entries back to the table, reads
//! through to rows it never saw, and lists them with `SCAN`; a write-through
//! namespace on the same store writes at once. The cluster is a temporary
//! one (`tiercache-testkit`), skipped loudly when PostgreSQL is missing.

mod support;

use std::time::{Duration, Instant};
use support::{Reply, Server};
use tiercache_testkit::Postgres;

fn config(url: &str) -> String {
    format!(
        r#"
[namespace.default]
tiers = ["pg"]
write = "back"
flush_interval = "100ms"

[namespace."wt:"]
tiers = ["pg"]
write = "through"

[store.pg]
type = "postgres"
url = "{url}"
table = "cache"
pool_size = 4
timeout = "5s"
"#
    )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// `(key, value, flags)` of every row, by key (none before the store has
/// created its table, on its first connection).
fn rows(rt: &tokio::runtime::Runtime, url: &str) -> Vec<(Vec<u8>, Vec<u8>, i64)> {
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        client
            .query("SELECT key, value, flags FROM cache ORDER BY key", &[])
            .await
            .unwrap_or_default()
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect()
    })
}

#[test]
fn serve_writes_back_to_postgres_and_reads_through_it() {
    let Some(pg) = Postgres::start() else { return };
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("tiercache.toml");
    std::fs::write(&config_path, config(&pg.url())).unwrap();
    let start = || {
        Server::start_with(
            &dir.path().join("data"),
            &["--config", config_path.to_str().unwrap()],
        )
    };
    let server = start();
    let mut c = server.client();

    // Write-back: acknowledged at once, in the table after a flush.
    assert_eq!(
        c.call(&[b"SET", b"user:1", b"ada"]),
        Reply::Simple("OK".into())
    );
    assert_eq!(
        c.call(&[b"SET", b"user:2", b"bob"]),
        Reply::Simple("OK".into())
    );
    assert_eq!(c.call(&[b"DEL", b"user:2"]), Reply::Int(1));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = rows(&rt, &pg.url());
        if got == vec![(b"user:1".to_vec(), b"ada".to_vec(), 0)] {
            break;
        }
        assert!(Instant::now() < deadline, "not written back: {got:?}");
        std::thread::sleep(Duration::from_millis(50));
    }

    // Write-through: in the table when the reply comes.
    assert_eq!(
        c.call(&[b"SET", b"wt:x", b"now"]),
        Reply::Simple("OK".into())
    );
    assert!(rows(&rt, &pg.url()).contains(&(b"wt:x".to_vec(), b"now".to_vec(), 0)));

    // Read-through: a row tiercache never saw.
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        client
            .execute(
                "INSERT INTO cache (key, value, flags) VALUES ('direct'::bytea, 'from sql'::bytea, 0)",
                &[],
            )
            .await
            .unwrap();
    });
    assert_eq!(
        c.call(&[b"GET", b"direct"]),
        Reply::Bulk(Some(b"from sql".to_vec()))
    );
    assert_eq!(c.call(&[b"DBSIZE"]), Reply::Int(3));

    // A restart of tiercache (empty memory tier) reads everything back.
    drop(c);
    assert!(server.sigterm(Duration::from_secs(10)).success());
    let server = start();
    let mut c = server.client();
    assert_eq!(
        c.call(&[b"GET", b"user:1"]),
        Reply::Bulk(Some(b"ada".to_vec()))
    );
    assert_eq!(c.call(&[b"GET", b"user:2"]), Reply::Bulk(None));
    let Reply::Array(Some(parts)) = c.call(&[b"SCAN", b"0", b"COUNT", b"100"]) else {
        panic!("SCAN failed")
    };
    assert_eq!(
        parts[1],
        Reply::Array(Some(vec![
            Reply::Bulk(Some(b"direct".to_vec())),
            Reply::Bulk(Some(b"user:1".to_vec())),
            Reply::Bulk(Some(b"wt:x".to_vec())),
        ]))
    );
}
