//! `SLOWLOG` over real TCP (what is logged, trimmed, redacted, kept; which
//! commands are timed at which threshold), and the small commands a
//! primary without replicas, cluster or latency monitor answers as Redis
//! does: `ROLE`, `WAIT`, `CLUSTER`/`READONLY`/`READWRITE`/`ASKING`,
//! `LATENCY`, `SWAPDB`, `LOLWUT`, `BGREWRITEAOF`. (Redis's own
//! `unit/slowlog` runs against the release binary: docs/redis-compat.md.)

mod common;

use common::{Client, Reply, TestServer};
use std::time::{Duration, Instant};

/// `SLOWLOG GET -1`, each entry's arguments joined by spaces, newest first.
async fn logged(c: &mut Client) -> Vec<String> {
    match c.cmd(&["SLOWLOG", "GET", "-1"]).await {
        Reply::Array(Some(entries)) => entries
            .iter()
            .map(|e| match e {
                Reply::Array(Some(f)) => match &f[3] {
                    Reply::Array(Some(args)) => {
                        args.iter().map(Reply::text).collect::<Vec<_>>().join(" ")
                    }
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            })
            .collect(),
        other => panic!("{other:?}"),
    }
}

async fn set_threshold(c: &mut Client, us: &str) {
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", us])
            .await,
        Reply::ok()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_threshold_logs_every_command_trimmed_and_redacted() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    assert_eq!(c.cmd(&["SLOWLOG", "LEN"]).await, Reply::Int(0));
    c.cmd(&["CLIENT", "SETNAME", "logged"]).await;
    set_threshold(&mut c, "0").await;
    // Pipelined fast commands are timed one by one at a fine threshold.
    c.send_raw(
        &[
            common::send(&["SET", "a", "1"]),
            common::send(&["GET", "a"]),
        ]
        .concat(),
    )
    .await;
    c.read().await;
    c.read().await;
    let many: Vec<String> = (1..=33).map(|i| i.to_string()).collect();
    let mut sadd = vec!["SADD", "s"];
    sadd.extend(many.iter().map(String::as_str));
    c.cmd(&sadd).await;
    let long = "A".repeat(129);
    c.cmd(&["SADD", "s", &long]).await;
    c.cmd(&["CONFIG", "SET", "requirepass", ""]).await;
    c.cmd(&["AUTH", "nobody", "wrong"]).await;
    c.cmd(&["MULTI"]).await;
    c.cmd(&["INCR", "n"]).await;
    c.cmd(&["EXEC"]).await;
    // A script is logged once, as itself, not the commands it called.
    c.cmd(&["EVAL", "return redis.call('get', KEYS[1])", "1", "a"])
        .await;
    let got = logged(&mut c).await;
    // 35 arguments: 31 kept, the 32nd says how many more there were.
    let sadd_logged = format!(
        "SADD s {} ... (4 more arguments)",
        (1..=29)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let want = [
        "EVAL return redis.call('get', KEYS[1]) 1 a".to_string(),
        // EXEC is not logged, what it ran is; MULTI is, as in Redis, and
        // the INCR it queued is logged once, when EXEC runs it.
        "INCR n".into(),
        "MULTI".into(),
        "AUTH (redacted) (redacted)".into(),
        "CONFIG SET requirepass (redacted)".into(),
        format!("SADD s {}... (1 more bytes)", "A".repeat(128)),
        sadd_logged,
        "GET a".into(),
        "SET a 1".into(),
        "CONFIG SET slowlog-log-slower-than 0".into(),
    ];
    assert_eq!(&got[..want.len()], &want[..]);
    // Each entry: id, time, duration, arguments, address, name.
    let Reply::Array(Some(entries)) = c.cmd(&["SLOWLOG", "GET", "1"]).await else {
        panic!()
    };
    let Reply::Array(Some(e)) = &entries[0] else {
        panic!()
    };
    assert_eq!(e.len(), 6);
    assert!(matches!(e[1], Reply::Int(t) if t > 1_700_000_000));
    assert!(e[4].text().starts_with("127.0.0.1:"));
    assert_eq!(e[5].text(), "logged");

    assert_eq!(
        c.cmd(&["SLOWLOG", "GET", "-2"]).await,
        Reply::Error("ERR count should be greater than or equal to -1".into())
    );
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "slowlog-max-len", "2"]).await,
        Reply::ok()
    );
    assert_eq!(c.cmd(&["SLOWLOG", "LEN"]).await, Reply::Int(2));
    assert_eq!(c.cmd(&["SLOWLOG", "RESET"]).await, Reply::ok());
    set_threshold(&mut c, "-1").await;
    c.cmd(&["PING"]).await;
    // The RESET is logged after it ran (as in Redis); nothing after -1.
    assert_eq!(logged(&mut c).await, vec!["SLOWLOG RESET".to_string()]);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coarse_threshold_logs_only_what_took_that_long() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    // 100,000 elements: sorting them alphabetically takes milliseconds.
    for chunk in 0..10 {
        let items: Vec<String> = (0..10_000)
            .map(|i| format!("e{}", chunk * 10_000 + i))
            .collect();
        let mut args = vec!["RPUSH", "big"];
        args.extend(items.iter().map(String::as_str));
        c.cmd(&args).await;
    }
    set_threshold(&mut c, "1000").await;
    c.cmd(&["SLOWLOG", "RESET"]).await;
    c.cmd(&["GET", "missing"]).await;
    let t = Instant::now();
    c.cmd(&["SORT", "big", "ALPHA", "LIMIT", "0", "1"]).await;
    let took = t.elapsed();
    let got = logged(&mut c).await;
    assert!(
        took >= Duration::from_millis(1),
        "the sort was too quick to test with"
    );
    assert_eq!(got, vec!["SORT big ALPHA LIMIT 0 1".to_string()]);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_replicas_cluster_or_latency_monitor_says_so() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    assert_eq!(
        c.cmd(&["ROLE"]).await,
        Reply::Array(Some(vec![
            Reply::bulk("master"),
            Reply::Int(0),
            Reply::Array(Some(vec![]))
        ]))
    );
    assert_eq!(c.cmd(&["WAIT", "0", "0"]).await, Reply::Int(0));
    let t = Instant::now();
    assert_eq!(c.cmd(&["WAIT", "1", "150"]).await, Reply::Int(0));
    assert!(
        t.elapsed() >= Duration::from_millis(150),
        "WAIT waits its timeout out"
    );
    assert_eq!(
        c.cmd(&["WAIT", "1", "-1"]).await,
        Reply::Error("ERR timeout is negative".into())
    );
    // A WAIT that never ends holds only its own connection.
    let mut waiter = server.client().await;
    waiter.send_raw(&common::send(&["WAIT", "1", "0"])).await;
    assert_eq!(c.cmd(&["SET", "k", "v"]).await, Reply::ok());
    for cmd in [
        &["CLUSTER", "INFO"][..],
        &["READONLY"],
        &["READWRITE"],
        &["ASKING"],
    ] {
        assert_eq!(
            c.cmd(cmd).await,
            Reply::Error("ERR This instance has cluster support disabled".into())
        );
    }
    assert_eq!(
        c.cmd(&["LATENCY", "LATEST"]).await,
        Reply::Array(Some(vec![]))
    );
    assert_eq!(c.cmd(&["LATENCY", "RESET"]).await, Reply::Int(0));
    assert!(c
        .cmd(&["LATENCY", "DOCTOR"])
        .await
        .text()
        .starts_with("I'm sorry, Dave"));
    assert_eq!(
        c.cmd(&["LATENCY", "GRAPH", "command"]).await,
        Reply::Error("ERR No samples available for event 'command'".into())
    );
    assert_eq!(c.cmd(&["SWAPDB", "0", "0"]).await, Reply::ok());
    assert_eq!(
        c.cmd(&["SWAPDB", "0", "1"]).await,
        Reply::Error("ERR DB index is out of range".into())
    );
    assert_eq!(
        c.cmd(&["SWAPDB", "x", "1"]).await,
        Reply::Error("ERR invalid first DB index".into())
    );
    assert_eq!(c.cmd(&["LOLWUT"]).await.text(), "Redis ver. 7.0.15\n");
    assert_eq!(
        c.cmd(&["BGREWRITEAOF"]).await,
        Reply::Simple("Background append only file rewriting started".into())
    );
    server.shutdown().await;
}
