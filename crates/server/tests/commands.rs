//! Behaviour that has no redis-server counterpart to compare with (see
//! `redis_diff.rs` for everything that has): SCAN's stronger guarantee
//! under concurrent writes, cursors shared between connections, run-time
//! `CONFIG SET requirepass`, the client registry.

mod common;

use common::{Reply, TestServer};
use std::collections::BTreeSet;

fn scan_page(reply: Reply) -> (String, Vec<String>) {
    let Reply::Array(Some(parts)) = reply else {
        panic!("{reply:?}")
    };
    let keys = match &parts[1] {
        Reply::Array(Some(k)) => k.iter().map(|k| k.text()).collect(),
        other => panic!("{other:?}"),
    };
    (parts[0].text(), keys)
}

#[tokio::test]
async fn scan_returns_every_stable_key_exactly_once_under_writes() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let mut w = server.client().await;
    let mut stable = BTreeSet::new();
    for i in 0..300 {
        let k = format!("k{i:03}");
        assert_eq!(c.cmd(&["SET", &k, "v"]).await, Reply::ok());
        stable.insert(k);
    }
    let mut seen = Vec::new();
    let mut cursor = "0".to_string();
    let mut round = 0;
    loop {
        let (next, keys) = scan_page(c.cmd(&["SCAN", &cursor, "COUNT", "13"]).await);
        seen.extend(keys);
        // Another client writes between pages: keys before and after the
        // cursor, some deleted again.
        round += 1;
        for j in 0..6 {
            let k = format!("{}{round}-{j}", ["a", "k", "z"][j % 3]);
            w.cmd(&["SET", &k, "x"]).await;
            if j % 2 == 1 {
                w.cmd(&["DEL", &k]).await;
            }
        }
        if next == "0" {
            break;
        }
        // The cursor works on any connection.
        cursor = next;
        std::mem::swap(&mut c, &mut w);
    }
    let unique: BTreeSet<String> = seen.iter().cloned().collect();
    assert_eq!(unique.len(), seen.len(), "a key came twice");
    assert!(stable.is_subset(&unique), "a stable key was missed");
    assert_eq!(
        c.cmd(&["SCAN", "987654321"]).await,
        Reply::Error("ERR invalid cursor".into())
    );
    server.shutdown().await;
}

#[tokio::test]
async fn config_set_requirepass_applies_to_new_connections() {
    let server = TestServer::start().await;
    let mut admin = server.client().await;
    assert_eq!(
        admin.cmd(&["CONFIG", "SET", "requirepass", "pw"]).await,
        Reply::ok()
    );
    // Already connected: still authenticated, as in Redis.
    assert_eq!(admin.cmd(&["SET", "k", "v"]).await, Reply::ok());
    let mut late = server.client().await;
    assert_eq!(
        late.cmd(&["GET", "k"]).await,
        Reply::Error("NOAUTH Authentication required.".into())
    );
    assert_eq!(late.cmd(&["AUTH", "default", "pw"]).await, Reply::ok());
    assert_eq!(late.cmd(&["GET", "k"]).await, Reply::bulk("v"));
    assert_eq!(
        late.cmd(&["CONFIG", "GET", "requirepass"]).await,
        Reply::Array(Some(vec![Reply::bulk("requirepass"), Reply::bulk("pw")]))
    );
    // RESET drops the authentication.
    assert_eq!(late.cmd(&["RESET"]).await, Reply::Simple("RESET".into()));
    assert!(late.cmd(&["GET", "k"]).await.is_error_starting("NOAUTH"));
    assert_eq!(
        admin.cmd(&["CONFIG", "SET", "requirepass", ""]).await,
        Reply::ok()
    );
    let mut open = server.client().await;
    assert_eq!(open.cmd(&["GET", "k"]).await, Reply::bulk("v"));
    server.shutdown().await;
}

#[tokio::test]
async fn client_list_shows_every_connection() {
    let server = TestServer::start().await;
    let mut a = server.client().await;
    let mut b = server.client().await;
    assert_eq!(a.cmd(&["CLIENT", "SETNAME", "alpha"]).await, Reply::ok());
    assert!(matches!(
        b.cmd(&["HELLO", "3", "SETNAME", "beta"]).await,
        Reply::Map(_)
    ));
    let list = a.cmd(&["CLIENT", "LIST"]).await.text();
    assert_eq!(list.lines().count(), 2, "{list}");
    assert!(
        list.contains("name=alpha") && list.contains("name=beta") && list.contains("resp=3"),
        "{list}"
    );
    assert!(list.contains("addr=127.0.0.1:"), "{list}");
    // cmd= is the other client's last command (HELLO), the caller's own
    // CLIENT LIST as Redis words it.
    let line = |list: &str, name: &str| {
        list.lines()
            .find(|l| l.contains(&format!("name={name} ")))
            .unwrap()
            .to_string()
    };
    assert!(line(&list, "beta").contains(" cmd=hello "), "{list}");
    assert!(line(&list, "alpha").contains(" cmd=client|list "), "{list}");
    b.cmd(&["SET", "k", "v"]).await;
    let list = a.cmd(&["CLIENT", "LIST"]).await.text();
    assert!(line(&list, "beta").contains(" cmd=set "), "{list}");
    // qbuf= is the request bytes not yet run: the caller's own command
    // (`*2\r\n$6\r\nCLIENT\r\n$4\r\nLIST\r\n`, 26 bytes, as in Redis's
    // test), nothing for an idle client.
    assert!(line(&list, "alpha").contains(" qbuf=26 "), "{list}");
    assert!(line(&list, "beta").contains(" qbuf=0 "), "{list}");
    // RESP3 clients get CLIENT INFO as a verbatim string.
    match b.cmd(&["CLIENT", "INFO"]).await {
        Reply::Verbatim(format, text) => {
            assert_eq!(format, "txt");
            assert!(String::from_utf8_lossy(&text).contains("name=beta"));
        }
        other => panic!("{other:?}"),
    }
    drop(b);
    // The server notices the close asynchronously.
    let mut lines = 0;
    for _ in 0..100 {
        lines = a.cmd(&["CLIENT", "LIST"]).await.text().lines().count();
        if lines == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(lines, 1);
    server.shutdown().await;
}
