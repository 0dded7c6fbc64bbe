//! Lua scripts across connections: what one connection's script
//! (`redis_diff.rs`, `eval_matches_redis`) cannot show. A script runs
//! alone (another client's writes never land between its read and its
//! write); a script that fails mid-way keeps its earlier writes; runaway
//! recursion, huge scripts and bad scripts are errors, never a crash; and
//! scripts run on the single-threaded runtime too.

mod common;

use common::{Reply, TestServer};

/// Reads a counter, spins a while, writes it back plus one: without
/// atomicity another client's `INCR` in the spin would be lost.
const SLOW_INCR: &str = "local v = tonumber(redis.call('get', KEYS[1]) or '0') \
     local x = 0 for i = 1, 200000 do x = x + i end \
     redis.call('set', KEYS[1], v + 1) return v + 1";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_runs_alone() {
    let server = TestServer::start().await;
    let (scripts, incrs) = (40u64, 4000u64);
    let addr = server.addr;
    let incrementer = tokio::spawn(async move {
        let mut c = common::Client::connect(addr).await;
        for _ in 0..incrs {
            assert!(matches!(c.cmd(&["INCR", "counter"]).await, Reply::Int(_)));
        }
    });
    let mut c = server.client().await;
    for _ in 0..scripts {
        let r = c.cmd(&["EVAL", SLOW_INCR, "1", "counter"]).await;
        assert!(matches!(r, Reply::Int(_)), "{r:?}");
    }
    incrementer.await.unwrap();
    let total = c.cmd(&["GET", "counter"]).await;
    assert_eq!(total, Reply::bulk(&(scripts + incrs).to_string()));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_are_errors_and_earlier_writes_stay() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    c.cmd(&["SET", "s", "text"]).await;
    let r = c
        .cmd(&[
            "EVAL",
            "redis.call('set', 'a', 1) redis.call('incr', 's') redis.call('set', 'b', 1)",
            "0",
        ])
        .await;
    assert!(r.is_error_starting("ERR value is not an integer"), "{r:?}");
    assert_eq!(c.cmd(&["GET", "a"]).await, Reply::bulk("1"));
    assert_eq!(c.cmd(&["EXISTS", "b"]).await, Reply::Int(0));
    // Unbounded recursion, a huge script, a huge reply, a deep
    // table: errors or replies, and the server still answers.
    let r = c
        .cmd(&[
            "EVAL",
            "local function f(n) return f(n + 1) + 1 end return f(1)",
            "0",
        ])
        .await;
    assert!(
        r.is_error_starting("ERR user_script:1: stack overflow"),
        "{r:?}"
    );
    let huge = format!(
        "local t = {{}} {} return #t",
        "t[#t + 1] = 1 ".repeat(200_000)
    );
    assert_eq!(c.cmd(&["EVAL", &huge, "0"]).await, Reply::Int(200_000));
    // (A reply nested deeper than the converter's limit is a unit test of
    // `script::convert`: this test client would overflow reading it.)
    let r = c
        .cmd(&[
            "EVAL",
            "local t = {} local c = t for i = 1, 100000 do c[1] = {} c = c[1] end return #t",
            "0",
        ])
        .await;
    assert_eq!(r, Reply::Int(1));
    let r = c
        .cmd(&["EVAL", "return string.rep('x', 1000000)", "0"])
        .await;
    assert_eq!(r.text().len(), 1_000_000);
    let r = c.cmd(&["EVAL", "return {", "0"]).await;
    assert!(r.is_error_starting("ERR Error compiling script"), "{r:?}");
    assert_eq!(c.cmd(&["PING"]).await, Reply::Simple("PONG".into()));
    server.shutdown().await;
}

/// One worker: the server's current-thread runtime (`TOKIO_WORKER_THREADS=1`).
#[tokio::test]
async fn scripts_run_on_a_current_thread_runtime() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let r = c
        .cmd(&[
            "EVAL",
            "redis.call('rpush', KEYS[1], 'a', 'b') return redis.call('lrange', KEYS[1], 0, -1)",
            "1",
            "l",
        ])
        .await;
    assert_eq!(
        r,
        Reply::Array(Some(vec![Reply::bulk("a"), Reply::bulk("b")]))
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_from_many_clients_share_the_cache() {
    let server = TestServer::start().await;
    let mut a = server.client().await;
    let mut b = server.client().await;
    let sha = a
        .cmd(&["SCRIPT", "LOAD", "return ARGV[1] .. '!'"])
        .await
        .text();
    assert_eq!(
        b.cmd(&["EVALSHA", &sha, "0", "hi"]).await,
        Reply::bulk("hi!")
    );
    assert_eq!(b.cmd(&["SCRIPT", "FLUSH"]).await, Reply::ok());
    assert!(a
        .cmd(&["EVALSHA", &sha, "0", "hi"])
        .await
        .is_error_starting("NOSCRIPT"));
    server.shutdown().await;
}

/// Sends `EVAL script 0` on `c` without reading the reply.
async fn start_script(c: &mut common::Client, script: &str) {
    c.send_raw(&common::encode(&[b"EVAL", script.as_bytes(), b"0"]))
        .await;
}

/// Pings on `c` until the server answers BUSY.
async fn until_busy(c: &mut common::Client) {
    for _ in 0..200 {
        match c.cmd(&["PING"]).await {
            r if r.is_error_starting("BUSY Redis is busy running a script") => return,
            Reply::Simple(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
            other => panic!("unexpected {other:?}"),
        }
    }
    panic!("the server never answered BUSY");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_script_makes_others_busy_and_script_kill_stops_it() {
    let server = TestServer::start().await;
    let mut a = server.client().await;
    let mut b = server.client().await;
    assert_eq!(
        b.cmd(&["SCRIPT", "KILL"]).await,
        Reply::Error("NOTBUSY No scripts in execution right now.".into())
    );
    assert_eq!(
        b.cmd(&["CONFIG", "SET", "lua-time-limit", "50"]).await,
        Reply::ok()
    );
    // pcall cannot swallow the kill.
    start_script(
        &mut a,
        "local f = function() while true do redis.call('ping') end end while true do pcall(f) end",
    )
    .await;
    until_busy(&mut b).await;
    // A transaction started now fails as a whole (Redis's EXECABORT).
    let mut t = server.client().await;
    assert_eq!(t.cmd(&["MULTI"]).await, Reply::ok());
    assert!(t.cmd(&["INCR", "x"]).await.is_error_starting("BUSY"));
    assert_eq!(b.cmd(&["SCRIPT", "KILL"]).await, Reply::ok());
    let r = a.read().await;
    assert!(
        r.is_error_starting("ERR Script killed by user with SCRIPT KILL..."),
        "{r:?}"
    );
    assert_eq!(b.cmd(&["PING"]).await, Reply::Simple("PONG".into()));
    assert!(t.cmd(&["EXEC"]).await.is_error_starting("EXECABORT"));
    assert_eq!(t.cmd(&["EXISTS", "x"]).await, Reply::Int(0));
    // A script that wrote cannot be killed; it ends on its own.
    start_script(
        &mut a,
        "redis.call('set', 'w', 1) local x = 0 for i = 1, 100000000 do x = x + 1 end return x",
    )
    .await;
    until_busy(&mut b).await;
    assert!(b
        .cmd(&["SCRIPT", "KILL"])
        .await
        .is_error_starting("UNKILLABLE"));
    assert_eq!(a.read().await, Reply::Int(100_000_000));
    assert_eq!(b.cmd(&["GET", "w"]).await, Reply::bulk("1"));
    server.shutdown().await;
}
