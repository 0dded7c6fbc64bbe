//! The blocking commands across connections (the differential script
//! checks their one-connection answers against redis-server): a waiting
//! `BLPOP` is served by another client's push, pipelined requests behind
//! it wait with it, competing waiters each get one element and are served
//! in the order they blocked, a timeout
//! answers null, `CLIENT UNBLOCK` ends a wait, `INFO` counts blocked
//! clients, and a client that leaves
//! or a server that stops while one waits is handled.

mod common;

use common::{blocked_clients, send, until_blocked, Reply, TestServer};
use std::time::{Duration, Instant};

fn bulks(items: &[&str]) -> Reply {
    Reply::Array(Some(items.iter().map(|s| Reply::bulk(s)).collect()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_serves_a_waiting_blpop_and_the_pipeline_behind_it() {
    let server = TestServer::start().await;
    let mut waiter = server.client().await;
    let mut pusher = server.client().await;
    // PING answered at once; BLPOP waits; the second PING waits behind it.
    let mut pipeline = send(&["PING"]);
    pipeline.extend(send(&["BLPOP", "none", "jobs", "0"]));
    pipeline.extend(send(&["PING"]));
    waiter.send_raw(&pipeline).await;
    assert_eq!(waiter.read().await, Reply::Simple("PONG".into()));
    until_blocked(&mut pusher, 1).await;
    assert_eq!(
        pusher.cmd(&["RPUSH", "jobs", "j1", "j2"]).await,
        Reply::Int(2)
    );
    assert_eq!(waiter.read().await, bulks(&["jobs", "j1"]));
    assert_eq!(waiter.read().await, Reply::Simple("PONG".into()));
    assert_eq!(blocked_clients(&mut pusher).await, 0);
    assert_eq!(
        pusher.cmd(&["LRANGE", "jobs", "0", "-1"]).await,
        bulks(&["j2"])
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_behind_a_blocked_one_run_as_first_parsed() {
    let server = TestServer::start().await;
    let mut w = server.client().await;
    let mut c = server.client().await;
    // Inline, with quotes decoded in place when parsed; then half a request.
    w.send_raw(b"BLPOP q 0\r\nSET k \"a b\" \r\nAPPEND k \"\\x21\"\r\n*2\r\n$3\r\nGET\r\n$1\r\n")
        .await;
    until_blocked(&mut c, 1).await;
    c.cmd(&["RPUSH", "q", "x"]).await;
    assert_eq!(w.read().await, bulks(&["q", "x"]));
    assert_eq!(w.read().await, Reply::ok());
    assert_eq!(w.read().await, Reply::Int(4));
    w.send_raw(b"k\r\n").await;
    assert_eq!(w.read().await, Reply::bulk("a b!"));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn competing_waiters_each_get_one_element_and_the_rest_keep_waiting() {
    let server = TestServer::start().await;
    let mut waiters = Vec::new();
    for _ in 0..3 {
        let mut w = server.client().await;
        w.send_raw(&send(&["BRPOP", "q", "0"])).await;
        waiters.push(w);
    }
    let mut c = server.client().await;
    until_blocked(&mut c, 3).await;
    c.cmd(&["LPUSH", "q", "a", "b"]).await;
    // Two are served (in some order), one is still blocked.
    until_blocked(&mut c, 1).await;
    c.cmd(&["LPUSH", "q", "c"]).await;
    let mut got = Vec::new();
    for w in &mut waiters {
        match w.read().await {
            Reply::Array(Some(v)) if v.len() == 2 => got.push(v[1].text()),
            other => panic!("{other:?}"),
        }
    }
    got.sort();
    assert_eq!(got, ["a", "b", "c"]);
    assert_eq!(c.cmd(&["EXISTS", "q"]).await, Reply::Int(0));
    assert_eq!(blocked_clients(&mut c).await, 0);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_are_served_in_the_order_they_blocked() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let mut waiters = Vec::new();
    for n in 1..=3 {
        let mut w = server.client().await;
        w.send_raw(&send(&[
            "BLMPOP", "0", "2", "l1", "l2", "LEFT", "COUNT", "2",
        ]))
        .await;
        until_blocked(&mut c, n).await;
        waiters.push(w);
    }
    // One transaction pushes to both lists: the first waiter takes from
    // the first list, the second takes the rest of it, the third the
    // second list.
    c.cmd(&["MULTI"]).await;
    c.cmd(&["RPUSH", "l1", "a", "b", "c"]).await;
    c.cmd(&["RPUSH", "l2", "x"]).await;
    c.cmd(&["EXEC"]).await;
    let expect = [("l1", &["a", "b"][..]), ("l1", &["c"]), ("l2", &["x"])];
    for (w, (key, items)) in waiters.iter_mut().zip(expect) {
        assert_eq!(
            w.read().await,
            Reply::Array(Some(vec![Reply::bulk(key), bulks(items)]))
        );
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blmove_and_bzpopmin_wake_on_their_writes() {
    let server = TestServer::start().await;
    let mut mover = server.client().await;
    let mut popper = server.client().await;
    let mut c = server.client().await;
    mover
        .send_raw(&send(&["BLMOVE", "src", "dst", "LEFT", "RIGHT", "0"]))
        .await;
    popper.send_raw(&send(&["BZPOPMIN", "board", "0"])).await;
    until_blocked(&mut c, 2).await;
    c.cmd(&["RPUSH", "src", "x"]).await;
    c.cmd(&["ZADD", "board", "7", "ann", "3", "bob"]).await;
    assert_eq!(mover.read().await, Reply::bulk("x"));
    assert_eq!(c.cmd(&["LRANGE", "dst", "0", "-1"]).await, bulks(&["x"]));
    assert_eq!(popper.read().await, bulks(&["board", "bob", "3"]));
    // A key written by another command than a push (RENAME) wakes too.
    mover.send_raw(&send(&["BLPOP", "renamed", "0"])).await;
    until_blocked(&mut c, 1).await;
    c.cmd(&["RPUSH", "tmp", "y"]).await;
    c.cmd(&["RENAME", "tmp", "renamed"]).await;
    assert_eq!(mover.read().await, bulks(&["renamed", "y"]));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_answers_null_and_other_writes_do_not_end_the_wait() {
    let server = TestServer::start().await;
    let mut w = server.client().await;
    let mut c = server.client().await;
    let started = Instant::now();
    w.send_raw(&send(&["BLPOP", "q", "0.3"])).await;
    until_blocked(&mut c, 1).await;
    // A write of another key, and a string at the key, do not serve it.
    c.cmd(&["RPUSH", "other", "x"]).await;
    c.cmd(&["SET", "q", "not a list"]).await;
    assert_eq!(w.read().await, Reply::Array(None));
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "not before its timeout"
    );
    assert_eq!(blocked_clients(&mut c).await, 0);
    // The connection is usable afterwards.
    assert_eq!(w.cmd(&["PING"]).await, Reply::Simple("PONG".into()));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_unblock_ends_a_wait_as_a_timeout_or_an_error() {
    let server = TestServer::start().await;
    let mut w = server.client().await;
    let mut c = server.client().await;
    let Reply::Int(id) = w.cmd(&["CLIENT", "ID"]).await else {
        panic!("CLIENT ID")
    };
    let id = id.to_string();
    assert_eq!(
        c.cmd(&["CLIENT", "UNBLOCK", &id]).await,
        Reply::Int(0),
        "not blocked"
    );
    w.send_raw(&send(&["BLPOP", "q", "0"])).await;
    until_blocked(&mut c, 1).await;
    let list = c.cmd(&["CLIENT", "LIST", "ID", &id]).await.text();
    assert!(list.contains(" flags=b "), "{list}");
    assert_eq!(c.cmd(&["CLIENT", "UNBLOCK", &id]).await, Reply::Int(1));
    assert_eq!(w.read().await, Reply::Array(None), "answered as a timeout");
    w.send_raw(&send(&["BZPOPMIN", "z", "0"])).await;
    until_blocked(&mut c, 1).await;
    assert_eq!(
        c.cmd(&["CLIENT", "UNBLOCK", &id, "ERROR"]).await,
        Reply::Int(1)
    );
    assert!(w
        .read()
        .await
        .is_error_starting("UNBLOCKED client unblocked via CLIENT UNBLOCK"));
    assert_eq!(blocked_clients(&mut c).await, 0);
    // Still usable, and no longer waiting: a push is not taken.
    c.cmd(&["RPUSH", "q", "x"]).await;
    assert_eq!(w.cmd(&["LLEN", "q"]).await, Reply::Int(1));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_while_blocked_is_forgotten() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    {
        let mut w = server.client().await;
        w.send_raw(&send(&["BLPOP", "q", "0"])).await;
        until_blocked(&mut c, 1).await;
    }
    until_blocked(&mut c, 0).await;
    // Nothing was popped by the departed client.
    c.cmd(&["RPUSH", "q", "kept"]).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(c.cmd(&["LLEN", "q"]).await, Reply::Int(1));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_a_blocked_connection() {
    let server = TestServer::start().await;
    let mut w = server.client().await;
    let mut c = server.client().await;
    w.send_raw(&send(&["BLPOP", "q", "0"])).await;
    until_blocked(&mut c, 1).await;
    drop(c);
    // Shutdown completes (it would hang on a connection that never ends).
    tokio::time::timeout(Duration::from_secs(10), server.shutdown())
        .await
        .expect("shutdown finished");
    assert!(w.is_closed().await);
}
