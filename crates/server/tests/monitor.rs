//! `MONITOR` and `CLIENT KILL` over real TCP: a monitor sees each command
//! after it ran, in Redis's line format (`EXEC` after the commands it
//! ran, nothing for refused or administrative commands, passwords
//! redacted), and `CLIENT KILL` closes the connections its filters pick,
//! after they send the replies of the batch they run.

mod common;

use common::{Client, Reply, TestServer};

/// The quoted arguments of a monitor line (`+<time> [0 <addr>] "a" "b"`).
fn monitored(r: Reply) -> String {
    let Reply::Simple(line) = r else {
        panic!("not a status line: {r:?}")
    };
    let (time, rest) = line.split_once(" [0 ").expect("a time, then the client");
    assert!(time.parse::<f64>().is_ok(), "{line}");
    rest.split_once("] ")
        .expect("the client's address")
        .1
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_monitor_sees_commands_after_they_ran() {
    let server = TestServer::start().await;
    let mut monitor = server.client().await;
    let mut c = server.client().await;
    assert_eq!(monitor.cmd(&["MONITOR"]).await, Reply::ok());
    c.cmd(&["SET", "foo", "bar \"q\"\n"]).await;
    assert_eq!(
        monitored(monitor.read().await),
        r#""SET" "foo" "bar \"q\"\n""#
    );
    c.cmd(&["MULTI"]).await;
    c.cmd(&["INCR", "n"]).await;
    c.cmd(&["EXEC"]).await;
    assert_eq!(monitored(monitor.read().await), r#""MULTI""#);
    assert_eq!(monitored(monitor.read().await), r#""INCR" "n""#);
    assert_eq!(monitored(monitor.read().await), r#""EXEC""#);
    // Refused (unknown, arity) and administrative commands are not shown;
    // passwords are redacted.
    c.cmd(&["NOSUCH"]).await;
    c.cmd(&["GET"]).await;
    c.cmd(&["CONFIG", "GET", "maxclients"]).await;
    c.cmd(&["AUTH", "user", "secret"]).await;
    assert_eq!(
        monitored(monitor.read().await),
        r#""AUTH" "(redacted)" "(redacted)""#
    );
    let list = c.cmd(&["CLIENT", "INFO"]).await.text();
    assert_eq!(monitored(monitor.read().await), r#""CLIENT" "INFO""#);
    assert!(list.contains("flags=N"), "{list}");
    let all = c.cmd(&["CLIENT", "LIST"]).await.text();
    assert!(all.lines().any(|l| l.contains("flags=O ")), "{all}");
    // A second MONITOR answers nothing; RESET ends it.
    monitor.send_raw(&common::send(&["MONITOR"])).await;
    assert_eq!(monitor.cmd(&["RESET"]).await, Reply::Simple("RESET".into()));
    c.cmd(&["PING"]).await;
    assert_eq!(monitor.cmd(&["ECHO", "quiet"]).await, Reply::bulk("quiet"));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_kill_closes_what_its_filters_pick() {
    let server = TestServer::start().await;
    let mut me = server.client().await;
    let mut a = server.client().await;
    let mut b = server.client().await;
    let a_id = match a.cmd(&["CLIENT", "ID"]).await {
        Reply::Int(n) => n,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        me.cmd(&["CLIENT", "KILL", "ID", &a_id.to_string()]).await,
        Reply::Int(1)
    );
    assert!(a.is_closed().await, "the killed client is closed");
    assert_eq!(b.cmd(&["PING"]).await, Reply::Simple("PONG".into()));
    // The old form: by address, +OK or an error.
    let info = b.cmd(&["CLIENT", "INFO"]).await.text();
    let addr = info
        .split(' ')
        .find_map(|f| f.strip_prefix("addr="))
        .unwrap()
        .to_string();
    assert_eq!(me.cmd(&["CLIENT", "KILL", &addr]).await, Reply::ok());
    assert!(b.is_closed().await);
    assert_eq!(
        me.cmd(&["CLIENT", "KILL", "127.0.0.1:1"]).await,
        Reply::Error("ERR No such client".into())
    );
    // Errors, in Redis's words.
    for (args, error) in [
        (
            vec!["CLIENT", "KILL"],
            "ERR wrong number of arguments for 'client|kill' command",
        ),
        (vec!["CLIENT", "KILL", "ID", "1", "x"], "ERR syntax error"),
        (
            vec!["CLIENT", "KILL", "ID", "0"],
            "ERR client-id should be greater than 0",
        ),
        (
            vec!["CLIENT", "KILL", "TYPE", "x"],
            "ERR Unknown client type 'x'",
        ),
        (vec!["CLIENT", "KILL", "USER", "x"], "ERR No such user 'x'"),
        (vec!["CLIENT", "KILL", "SKIPME", "x"], "ERR syntax error"),
    ] {
        assert_eq!(me.cmd(&args).await, Reply::Error(error.into()), "{args:?}");
    }
    // SKIPME no: every client, this one too, after its reply.
    let mut c = server.client().await;
    c.cmd(&["PING"]).await;
    assert_eq!(
        me.cmd(&["CLIENT", "KILL", "SKIPME", "no"]).await,
        Reply::Int(2)
    );
    assert!(me.is_closed().await);
    assert!(c.is_closed().await);
    let mut fresh: Client = server.client().await;
    assert_eq!(fresh.cmd(&["PING"]).await, Reply::Simple("PONG".into()));
    server.shutdown().await;
}
