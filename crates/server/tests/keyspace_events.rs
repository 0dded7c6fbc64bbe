//! Keyspace notifications over real TCP: `CONFIG SET
//! notify-keyspace-events` and its classes, the events commands raise (in
//! Redis's order, only when something changed, `del` when a write empties
//! a key), and `expired` events from active expiry. (Redis's own
//! `unit/pubsub` suite checks the same against the release binary:
//! docs/redis-compat.md.)

mod common;

use common::{Client, Reply, TestServer};
use std::time::Duration;

/// A subscriber to every channel (`PSUBSCRIBE *`).
async fn listen_all(server: &TestServer) -> Client {
    let mut sub = server.client().await;
    sub.send_raw(&common::send(&["PSUBSCRIBE", "*"])).await;
    assert_eq!(
        sub.read().await,
        Reply::Array(Some(vec![
            Reply::bulk("psubscribe"),
            Reply::bulk("*"),
            Reply::Int(1)
        ]))
    );
    sub
}

/// The next message as "channel payload".
async fn next(sub: &mut Client) -> String {
    match sub.read().await {
        Reply::Array(Some(parts)) if parts.len() == 4 && parts[0].text() == "pmessage" => {
            format!("{} {}", parts[2].text(), parts[3].text())
        }
        other => panic!("not a pmessage: {other:?}"),
    }
}

/// Runs `commands`, then publishes a marker, and returns every message
/// the subscriber got before the marker.
async fn events_of(c: &mut Client, sub: &mut Client, commands: &[&[&str]]) -> Vec<String> {
    for args in commands {
        let reply = c.cmd(args).await;
        assert!(!reply.is_error_starting(""), "{args:?} answered {reply:?}");
    }
    c.cmd(&["PUBLISH", "marker", "end"]).await;
    let mut got = Vec::new();
    loop {
        let m = next(sub).await;
        if m == "marker end" {
            return got;
        }
        got.push(m);
    }
}

fn space(key: &str, event: &str) -> String {
    format!("__keyspace@0__:{key} {event}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classes_are_set_shown_and_checked_as_redis_does() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let get = |reply: Reply| match reply {
        Reply::Array(Some(v)) => v[1].text(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        get(c.cmd(&["CONFIG", "GET", "notify-keyspace-events"]).await),
        ""
    );
    for (set, shown) in [
        ("KA", "AK"),
        ("gKE", "gKE"),
        ("$lshzxeKE", "$lshzxeKE"),
        ("", ""),
    ] {
        assert_eq!(
            c.cmd(&["CONFIG", "SET", "notify-keyspace-events", set])
                .await,
            Reply::ok()
        );
        assert_eq!(
            get(c.cmd(&["CONFIG", "GET", "notify-keyspace-events"]).await),
            shown
        );
    }
    let refused = c
        .cmd(&["CONFIG", "SET", "notify-keyspace-events", "KQ"])
        .await;
    assert_eq!(
        refused,
        Reply::Error(
            "ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - \
             Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
                .into()
        )
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_published_while_notifications_are_off() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let mut sub = listen_all(&server).await;
    let got = events_of(
        &mut c,
        &mut sub,
        &[&["SET", "a", "1"], &["LPUSH", "l", "x"], &["DEL", "a"]],
    )
    .await;
    assert_eq!(got, Vec::<String>::new());
    // Classes without K or E publish nothing either.
    c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "A"])
        .await;
    let got = events_of(&mut c, &mut sub, &[&["SET", "a", "1"]]).await;
    assert_eq!(got, Vec::<String>::new());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_raise_redis_events_in_order_and_only_on_change() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let mut sub = listen_all(&server).await;
    c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "KA"])
        .await;
    let got = events_of(
        &mut c,
        &mut sub,
        &[
            &["SET", "s", "1", "EX", "100"],
            &["INCR", "s"],
            &["SET", "s", "2", "NX"], // not applied: no event
            &["DEL", "s", "missing"],
            &["RPUSH", "l", "a", "b"],
            &["LPOP", "l"],
            &["RPOP", "l"],
            &["LPOP", "l"], // nothing left: no event
            &["HSET", "h", "f", "1"],
            &["HDEL", "h", "nope"],
            &["HDEL", "h", "f"],
            &["SADD", "set", "m"],
            &["SADD", "set", "m"],
            &["SMOVE", "set", "set2", "m"],
            &["ZADD", "z", "1", "a"],
            &["ZINCRBY", "z", "2", "a"],
            &["ZADD", "z", "3", "a"], // same score: no event
            &["SINTERSTORE", "set2", "nothing"],
            &["SET", "r", "v"],
            &["RENAME", "r", "r2"],
            &["EXPIRE", "r2", "-1"],
            &["XADD", "x", "MAXLEN", "1", "*", "f", "v"],
            &["XADD", "x", "MAXLEN", "1", "*", "f", "v"],
            &["GEOADD", "g", "13.36", "38.11", "pal"],
            &[
                "GEOSEARCHSTORE",
                "gs",
                "g",
                "FROMLONLAT",
                "13",
                "38",
                "BYRADIUS",
                "200",
                "km",
            ],
            &[
                "GEOSEARCHSTORE",
                "gs",
                "g",
                "FROMLONLAT",
                "0",
                "0",
                "BYRADIUS",
                "1",
                "km",
            ],
            &["GEORADIUS", "g", "13", "38", "200", "km", "STORE", "gr"],
        ],
    )
    .await;
    let want = [
        ("s", "set"),
        ("s", "expire"),
        ("s", "incrby"),
        ("s", "del"),
        ("l", "rpush"),
        ("l", "lpop"),
        ("l", "rpop"),
        ("l", "del"),
        ("h", "hset"),
        ("h", "hdel"),
        ("h", "del"),
        ("set", "sadd"),
        ("set", "srem"),
        ("set", "del"),
        ("set2", "sadd"),
        ("z", "zadd"),
        ("z", "zincr"),
        ("set2", "del"),
        ("r", "set"),
        ("r", "rename_from"),
        ("r2", "rename_to"),
        ("r2", "del"),
        ("x", "xadd"),
        ("x", "xadd"),
        ("x", "xtrim"),
        ("g", "zadd"),
        ("gs", "geosearchstore"),
        ("gs", "del"),
        ("gr", "georadiusstore"),
    ];
    let want: Vec<String> = want.iter().map(|(k, e)| space(k, e)).collect();
    assert_eq!(got, want);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classes_mask_events_and_keyevent_channels_carry_the_key() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let mut sub = listen_all(&server).await;
    c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "El"])
        .await;
    let got = events_of(
        &mut c,
        &mut sub,
        &[&["SET", "a", "1"], &["LPUSH", "q", "x"], &["DEL", "q"]],
    )
    .await;
    assert_eq!(got, vec!["__keyevent@0__:lpush q".to_string()]);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_keys_are_reported_once_and_overwritten_ones_not() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let mut sub = listen_all(&server).await;
    c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "Ex"])
        .await;
    // `early` would expire first, but is overwritten without a TTL.
    c.cmd(&["SET", "early", "1", "PX", "50"]).await;
    c.cmd(&["SET", "late", "1", "PX", "300"]).await;
    c.cmd(&["SET", "early", "2"]).await;
    // The write-back flush unpins the entries; active expiry (every
    // 100 ms) then drops `late`.
    let m = tokio::time::timeout(Duration::from_secs(10), next(&mut sub))
        .await
        .expect("no expired event");
    assert_eq!(m, "__keyevent@0__:expired late");
    assert_eq!(c.cmd(&["GET", "early"]).await, Reply::bulk("2"));
    server.shutdown().await;
}

/// With active expiry paused (`DEBUG SET-ACTIVE-EXPIRE 0`), an expired key
/// is held and counted until a read comes across it; the read drops it and
/// raises `expired`, as Redis's lazy expiry does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_of_an_expired_key_drops_it_and_reports_it() {
    let server = TestServer::start().await;
    server.engine.set_active_expiry(false);
    let mut c = server.client().await;
    let mut sub = listen_all(&server).await;
    c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "Ex"])
        .await;
    c.cmd(&["SET", "k", "1", "PX", "50"]).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    // A dirty entry stays until stored: store it.
    server.engine.flush().await.unwrap();
    assert_eq!(c.cmd(&["DBSIZE"]).await, Reply::Int(1));
    assert_eq!(
        events_of(&mut c, &mut sub, &[&["MGET", "k", "other"]]).await,
        ["__keyevent@0__:expired k"]
    );
    assert_eq!(c.cmd(&["DBSIZE"]).await, Reply::Int(0));
    // Once dropped, a read finds nothing to report.
    assert!(events_of(&mut c, &mut sub, &[&["GET", "k"]])
        .await
        .is_empty());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_keys_are_announced_before_their_first_event() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let mut sub = listen_all(&server).await;
    c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "KEn$l"])
        .await;
    // A pipeline of plain SETs, as the batched path runs them.
    c.send_raw(
        &[
            common::send(&["SET", "a", "1"]),
            common::send(&["SET", "a", "2"]),
        ]
        .concat(),
    )
    .await;
    assert_eq!(c.read().await, Reply::ok());
    assert_eq!(c.read().await, Reply::ok());
    let got = events_of(
        &mut c,
        &mut sub,
        &[
            &["RPUSH", "l", "x"],
            &["RPUSH", "l", "y"],
            &["LMOVE", "l", "l2", "LEFT", "RIGHT"],
            &["SET", "b", "1", "NX"],
            &["SET", "b", "1", "NX"],
        ],
    )
    .await;
    let mut want = Vec::new();
    for (key, event) in [
        ("a", "new"),
        ("a", "set"),
        ("a", "set"),
        ("l", "new"),
        ("l", "rpush"),
        ("l", "rpush"),
        ("l2", "new"),
        ("l2", "rpush"),
        ("l", "lpop"),
        ("b", "new"),
        ("b", "set"),
    ] {
        // Both channels, `new` included (checked against redis-server).
        want.push(space(key, event));
        want.push(format!("__keyevent@0__:{event} {key}"));
    }
    assert_eq!(got, want);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hll_writes_raise_pfadd_as_redis_does() {
    // hyperloglog.c: PFADD raises `pfadd` only when it changed the value
    // (or created it), PFMERGE always on its destination, and neither
    // PFCOUNT's cache write nor PFDEBUG's conversions raise anything.
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let mut sub = listen_all(&server).await;
    c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "K$n"])
        .await;
    let got = events_of(
        &mut c,
        &mut sub,
        &[
            &["PFADD", "h", "a", "b"],
            &["PFADD", "h", "a", "b"],
            &["PFADD", "h"],
            &["PFCOUNT", "h"],
            &["PFCOUNT", "h", "nokey"],
            &["PFMERGE", "h2", "h"],
            &["PFMERGE", "h2", "h"],
            &["PFDEBUG", "TODENSE", "h"],
            &["PFDEBUG", "GETREG", "h2"],
            &["PFADD", "h", "c"],
            &["PFADD", "h3"],
        ],
    )
    .await;
    let want: Vec<String> = [
        ("h", "new"),
        ("h", "pfadd"),
        ("h2", "new"),
        ("h2", "pfadd"),
        ("h2", "pfadd"),
        ("h", "pfadd"),
        ("h3", "new"),
        ("h3", "pfadd"),
    ]
    .iter()
    .map(|(k, e)| space(k, e))
    .collect();
    assert_eq!(got, want);
    server.shutdown().await;
}
