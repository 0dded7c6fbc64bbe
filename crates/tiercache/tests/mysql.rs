//! The real binary over MariaDB: `tiercache serve` with a write-back
//! namespace over a `mysql` store writes entries back to the table (flags
//! included, from the memcached protocol), reads through to rows it never
//! saw, and lists them with `SCAN`. The server is a temporary one
//! (`tiercache-testkit`), skipped loudly when MariaDB is missing.

mod support;

use mysql_async::prelude::Queryable;
use std::time::{Duration, Instant};
use support::{McText, Reply, Server};
use tiercache_testkit::Mariadb;

fn config(url: &str) -> String {
    format!(
        r#"
[namespace.default]
tiers = ["db"]
write = "back"
flush_interval = "100ms"

[store.db]
type = "mysql"
url = "{url}"
table = "cache"
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
fn rows(rt: &tokio::runtime::Runtime, url: &str) -> Vec<(Vec<u8>, Vec<u8>, u32)> {
    rt.block_on(async {
        let mut conn = mysql_async::Conn::from_url(url).await.unwrap();
        let rows = conn
            .query("SELECT `key`, value, flags FROM cache ORDER BY `key`")
            .await
            .unwrap_or_default();
        conn.disconnect().await.unwrap();
        rows
    })
}

#[test]
fn serve_writes_back_to_mariadb_and_reads_through_it() {
    let Some(db) = Mariadb::start() else { return };
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("tiercache.toml");
    std::fs::write(&config_path, config(&db.url())).unwrap();
    let server = Server::start_with_memcache_and(
        &dir.path().join("data"),
        &["--config", config_path.to_str().unwrap()],
    );
    let mut c = server.client();
    let mut mc = McText::connect(server.memcache_port.unwrap());

    assert_eq!(
        c.call(&[b"SET", b"user:1", b"ada"]),
        Reply::Simple("OK".into())
    );
    mc.send(b"set flagged 42 0 3\r\nabc\r\n").unwrap();
    assert_eq!(mc.line().unwrap(), "STORED");
    let want = vec![
        (b"flagged".to_vec(), b"abc".to_vec(), 42),
        (b"user:1".to_vec(), b"ada".to_vec(), 0),
    ];
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = rows(&rt, &db.url());
        if got == want {
            break;
        }
        assert!(Instant::now() < deadline, "not written back: {got:?}");
        std::thread::sleep(Duration::from_millis(50));
    }

    // Read-through: a row tiercache never saw.
    rt.block_on(async {
        let mut conn = mysql_async::Conn::from_url(db.url()).await.unwrap();
        conn.query_drop("INSERT INTO cache (`key`, value, flags) VALUES ('direct', 'from sql', 7)")
            .await
            .unwrap();
        conn.disconnect().await.unwrap();
    });
    assert_eq!(
        c.call(&[b"GET", b"direct"]),
        Reply::Bulk(Some(b"from sql".to_vec()))
    );
    assert_eq!(mc.get("direct"), Some((7, b"from sql".to_vec())));
    let Reply::Array(Some(parts)) = c.call(&[b"SCAN", b"0", b"COUNT", b"100"]) else {
        panic!("SCAN failed")
    };
    assert_eq!(
        parts[1],
        Reply::Array(Some(vec![
            Reply::Bulk(Some(b"direct".to_vec())),
            Reply::Bulk(Some(b"flagged".to_vec())),
            Reply::Bulk(Some(b"user:1".to_vec())),
        ]))
    );
}
