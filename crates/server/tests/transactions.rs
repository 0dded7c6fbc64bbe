//! Transactions across connections and protocols: what one connection's
//! script (`redis_diff.rs`, `transactions_match_redis`) cannot show.
//! `EXEC` runs with no other client's request in between, RESP or
//! memcached; a write from another connection or the memcached protocol
//! aborts a watching `EXEC`; a whole transaction pipelined in one write is
//! answered in order; a transaction is bounded in size; a client that
//! leaves mid-transaction blocks no one.

mod common;
mod mc;

use common::{encode, Client, Reply};
use mc::{McClient, McServer};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tiercache_server::{Limits, ServerConfig};

fn null_array() -> Reply {
    Reply::Array(None)
}

/// Runs `MULTI`, the commands, `EXEC` on `c` and returns `EXEC`'s reply.
async fn transaction(c: &mut Client, commands: &[&[&str]]) -> Reply {
    assert_eq!(c.cmd(&["MULTI"]).await, Reply::ok());
    for args in commands {
        assert_eq!(c.cmd(args).await, Reply::Simple("QUEUED".into()));
    }
    c.cmd(&["EXEC"]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_runs_with_no_other_request_in_between() {
    let server = McServer::start().await;
    let stop = Arc::new(AtomicBool::new(false));
    let writes = Arc::new(AtomicU64::new(0));
    // Two writers of the same key, one per protocol, as fast as they can.
    let resp_writer = {
        let (stop, writes, addr) = (stop.clone(), writes.clone(), server.resp_addr);
        tokio::spawn(async move {
            let mut c = Client::connect(addr).await;
            let set = encode(&[b"SET", b"k", b"resp"]);
            while !stop.load(Ordering::Relaxed) {
                c.send_raw(&set).await;
                assert_eq!(c.read().await, Reply::ok());
                writes.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let mc_writer = {
        let (stop, writes, addr) = (stop.clone(), writes.clone(), server.mc_addr);
        tokio::spawn(async move {
            let mut c = McClient::connect(addr).await;
            while !stop.load(Ordering::Relaxed) {
                assert_eq!(c.script("set k 0 0 2\nmc\n").await, "STORED\r\n");
                writes.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let mut c = Client::connect(server.resp_addr).await;
    let mut reads: Vec<&[&str]> = vec![&["SET", "k", "tx"]];
    reads.extend(std::iter::repeat(&["GET", "k"][..]).take(300));
    for round in 0..20 {
        let before = writes.load(Ordering::Relaxed);
        let Reply::Array(Some(replies)) = transaction(&mut c, &reads).await else {
            panic!("EXEC did not answer an array");
        };
        assert_eq!(replies[0], Reply::ok());
        for (i, r) in replies[1..].iter().enumerate() {
            assert_eq!(
                *r,
                Reply::bulk("tx"),
                "round {round}: GET {i} of the transaction saw another client's write"
            );
        }
        // The writers went on between transactions (they were not just idle).
        while writes.load(Ordering::Relaxed) < before + 10 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    stop.store(true, Ordering::Relaxed);
    resp_writer.await.unwrap();
    mc_writer.await.unwrap();
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_from_other_connections_and_memcached_abort_a_watching_exec() {
    let server = McServer::start().await;
    let mut a = Client::connect(server.resp_addr).await;
    let mut b = Client::connect(server.resp_addr).await;
    let mut m = server.client().await;
    assert_eq!(a.cmd(&["SET", "k", "1"]).await, Reply::ok());

    // Another RESP connection writes the key.
    assert_eq!(a.cmd(&["WATCH", "k"]).await, Reply::ok());
    assert_eq!(b.cmd(&["INCR", "k"]).await, Reply::Int(2));
    assert_eq!(
        transaction(&mut a, &[&["SET", "k", "lost"]]).await,
        null_array()
    );
    assert_eq!(b.cmd(&["GET", "k"]).await, Reply::bulk("2"));

    // A write of another key does not abort it.
    assert_eq!(a.cmd(&["WATCH", "k"]).await, Reply::ok());
    assert_eq!(b.cmd(&["SET", "other", "x"]).await, Reply::ok());
    assert_eq!(
        transaction(&mut a, &[&["INCR", "k"]]).await,
        Reply::Array(Some(vec![Reply::Int(3)]))
    );

    // The memcached protocol: set, incr, delete, touch all change the key.
    for (script, reply) in [
        ("set k 0 0 1\n5\n", "STORED\r\n"),
        ("incr k 1\n", "6\r\n"),
        ("touch k 100\n", "TOUCHED\r\n"),
        ("delete k\n", "DELETED\r\n"),
    ] {
        assert_eq!(a.cmd(&["WATCH", "k"]).await, Reply::ok());
        assert_eq!(m.script(script).await, reply, "{script:?}");
        assert_eq!(
            transaction(&mut a, &[&["SET", "k", "lost"]]).await,
            null_array(),
            "EXEC ran after memcached's {script:?}"
        );
    }
    assert_eq!(m.script("get k\n").await, "END\r\n");

    // A memcached flush_all changes a watched key that exists.
    assert_eq!(a.cmd(&["SET", "k", "1"]).await, Reply::ok());
    assert_eq!(a.cmd(&["WATCH", "k"]).await, Reply::ok());
    assert_eq!(m.script("flush_all\n").await, "OK\r\n");
    assert_eq!(transaction(&mut a, &[&["PING"]]).await, null_array());
    server.shutdown().await;
}

#[tokio::test]
async fn a_pipelined_transaction_is_answered_in_order() {
    let server = McServer::start().await;
    let mut c = Client::connect(server.resp_addr).await;
    // What redis-py's `pipeline()` sends: the whole transaction in one write.
    let mut bytes = Vec::new();
    for args in [
        &[&b"SET"[..], b"n", b"1"][..],
        &[b"MULTI"],
        &[b"INCR", b"n"],
        &[b"SET", b"a", b"1"],
        &[b"SET", b"b", b"2"],
        &[b"GET", b"n"],
        &[b"EXEC"],
        &[b"GET", b"b"],
    ] {
        bytes.extend(encode(args));
    }
    c.send_raw(&bytes).await;
    let queued = Reply::Simple("QUEUED".into());
    assert_eq!(c.read().await, Reply::ok());
    assert_eq!(c.read().await, Reply::ok());
    for _ in 0..4 {
        assert_eq!(c.read().await, queued);
    }
    assert_eq!(
        c.read().await,
        Reply::Array(Some(vec![
            Reply::Int(2),
            Reply::ok(),
            Reply::ok(),
            Reply::bulk("2"),
        ]))
    );
    assert_eq!(c.read().await, Reply::bulk("2"));
    server.shutdown().await;
}

#[tokio::test]
async fn a_transaction_is_bounded_by_the_request_limit() {
    let server = McServer::start_with(ServerConfig {
        limits: Limits {
            max_request_len: 4096,
            ..Limits::default()
        },
        ..ServerConfig::default()
    })
    .await;
    let mut c = Client::connect(server.resp_addr).await;
    let value = "v".repeat(1500);
    assert_eq!(c.cmd(&["MULTI"]).await, Reply::ok());
    for _ in 0..2 {
        assert_eq!(
            c.cmd(&["SET", "k", &value]).await,
            Reply::Simple("QUEUED".into())
        );
    }
    let refused = c.cmd(&["SET", "k", &value]).await;
    assert!(
        refused.is_error_starting("ERR transaction too large"),
        "{refused:?}"
    );
    assert!(c.cmd(&["EXEC"]).await.is_error_starting("EXECABORT"));
    assert_eq!(c.cmd(&["EXISTS", "k"]).await, Reply::Int(0));
    // The connection is usable, and a small transaction runs.
    assert_eq!(
        transaction(&mut c, &[&["SET", "k", "1"]]).await,
        Reply::Array(Some(vec![Reply::ok()]))
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_mid_transaction_blocks_no_one() {
    let server = McServer::start().await;
    for _ in 0..20 {
        let mut gone = Client::connect(server.resp_addr).await;
        assert_eq!(gone.cmd(&["WATCH", "k"]).await, Reply::ok());
        assert_eq!(gone.cmd(&["MULTI"]).await, Reply::ok());
        assert_eq!(
            gone.cmd(&["SET", "k", "never"]).await,
            Reply::Simple("QUEUED".into())
        );
        drop(gone);
    }
    let mut c = Client::connect(server.resp_addr).await;
    let mut m = server.client().await;
    let exec = tokio::time::timeout(
        Duration::from_secs(10),
        transaction(&mut c, &[&["SET", "k", "1"], &["GET", "k"]]),
    )
    .await
    .expect("EXEC waited for connections that are gone");
    assert_eq!(
        exec,
        Reply::Array(Some(vec![Reply::ok(), Reply::bulk("1")]))
    );
    assert_eq!(m.script("get k\n").await, "VALUE k 0 1\r\n1\r\nEND\r\n");
    server.shutdown().await;
}

#[tokio::test]
async fn client_list_shows_a_transaction_being_queued() {
    let server = McServer::start().await;
    let mut a = Client::connect(server.resp_addr).await;
    let mut b = Client::connect(server.resp_addr).await;
    assert_eq!(a.cmd(&["CLIENT", "SETNAME", "queuer"]).await, Reply::ok());
    let line_of_a = |list: Reply| {
        list.text()
            .lines()
            .find(|l| l.contains("name=queuer "))
            .expect("a is listed")
            .to_string()
    };
    assert_eq!(a.cmd(&["MULTI"]).await, Reply::ok());
    for _ in 0..2 {
        assert_eq!(a.cmd(&["PING"]).await, Reply::Simple("QUEUED".into()));
    }
    let line = line_of_a(b.cmd(&["CLIENT", "LIST"]).await);
    assert!(
        line.contains(" flags=x ") && line.contains(" multi=2 "),
        "{line}"
    );
    a.cmd(&["EXEC"]).await;
    let line = line_of_a(b.cmd(&["CLIENT", "LIST"]).await);
    assert!(
        line.contains(" flags=N ") && line.contains(" multi=-1 "),
        "{line}"
    );
    server.shutdown().await;
}
