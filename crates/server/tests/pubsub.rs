//! Pub/sub over real TCP: channels, patterns and shard channels, the
//! confirmations and their counts, RESP2's subscriber context and RESP3
//! pushes, `PUBSUB` introspection, and the resources a subscriber holds:
//! its subscriptions end with its connection, and one that stops reading
//! is disconnected once its messages pass the output limit while the
//! server goes on serving. (Redis's own `unit/pubsub` suite runs against
//! the release binary: docs/redis-compat.md.)

mod common;

use common::{Client, Reply, TestServer};
use std::time::Duration;

fn b(s: &str) -> Reply {
    Reply::bulk(s)
}

fn arr(items: Vec<Reply>) -> Reply {
    Reply::Array(Some(items))
}

/// A RESP2 confirmation or message: `[kind, name..., count or payload]`.
fn msg2(kind: &str, name: &str, last: Reply) -> Reply {
    arr(vec![b(kind), b(name), last])
}

/// The names a `PUBSUB CHANNELS`-like subcommand lists, sorted.
async fn sorted_names(c: &mut Client, sub: &str) -> Vec<String> {
    let mut names: Vec<String> = match c.cmd(&["PUBSUB", sub]).await {
        Reply::Array(Some(v)) => v.iter().map(Reply::text).collect(),
        other => panic!("{other:?}"),
    };
    names.sort();
    names
}

async fn numsub(c: &mut Client, sub: &str, channel: &str) -> i64 {
    match c.cmd(&["PUBSUB", sub, channel]).await {
        Reply::Array(Some(v)) => match v[1] {
            Reply::Int(n) => n,
            ref other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribers_get_what_is_published_and_confirmations_count_subscriptions() {
    let server = TestServer::start().await;
    let mut sub = server.client().await;
    let mut publisher = server.client().await;

    sub.send_raw(&common::send(&["SUBSCRIBE", "news", "sport", "news"]))
        .await;
    assert_eq!(sub.read().await, msg2("subscribe", "news", Reply::Int(1)));
    assert_eq!(sub.read().await, msg2("subscribe", "sport", Reply::Int(2)));
    assert_eq!(sub.read().await, msg2("subscribe", "news", Reply::Int(2)));
    sub.send_raw(&common::send(&["PSUBSCRIBE", "n*"])).await;
    // Channels and patterns count together.
    assert_eq!(sub.read().await, msg2("psubscribe", "n*", Reply::Int(3)));

    // Subscribed to the channel and a matching pattern: two receivers.
    assert_eq!(
        publisher.cmd(&["PUBLISH", "news", "hello"]).await,
        Reply::Int(2)
    );
    assert_eq!(
        publisher.cmd(&["PUBLISH", "nothing", "x"]).await,
        Reply::Int(1)
    );
    assert_eq!(
        publisher.cmd(&["PUBLISH", "weather", "x"]).await,
        Reply::Int(0)
    );
    assert_eq!(sub.read().await, msg2("message", "news", b("hello")));
    assert_eq!(
        sub.read().await,
        arr(vec![b("pmessage"), b("n*"), b("news"), b("hello")])
    );
    assert_eq!(
        sub.read().await,
        arr(vec![b("pmessage"), b("n*"), b("nothing"), b("x")])
    );

    // Introspection.
    assert_eq!(
        sorted_names(&mut publisher, "CHANNELS").await,
        ["news", "sport"]
    );
    assert_eq!(
        publisher.cmd(&["PUBSUB", "CHANNELS", "s*"]).await,
        arr(vec![b("sport")])
    );
    assert_eq!(
        publisher.cmd(&["PUBSUB", "NUMSUB", "news", "none"]).await,
        arr(vec![b("news"), Reply::Int(1), b("none"), Reply::Int(0)])
    );
    assert_eq!(publisher.cmd(&["PUBSUB", "NUMPAT"]).await, Reply::Int(1));
    let info = publisher.cmd(&["INFO", "stats"]).await.text();
    assert!(info.contains("pubsub_channels:2\r\n"), "{info}");
    assert!(info.contains("pubsub_patterns:1\r\n"), "{info}");
    let list = publisher
        .cmd(&["CLIENT", "LIST", "TYPE", "pubsub"])
        .await
        .text();
    assert_eq!(list.lines().count(), 1, "{list}");
    assert!(
        list.contains("flags=P ") && list.contains("sub=2 psub=1 ssub=0"),
        "{list}"
    );

    // Unsubscribing one channel, then everything.
    sub.send_raw(&common::send(&["UNSUBSCRIBE", "news"])).await;
    assert_eq!(sub.read().await, msg2("unsubscribe", "news", Reply::Int(2)));
    assert_eq!(
        publisher.cmd(&["PUBLISH", "news", "again"]).await,
        Reply::Int(1)
    );
    assert_eq!(
        sub.read().await,
        arr(vec![b("pmessage"), b("n*"), b("news"), b("again")])
    );
    sub.send_raw(&common::send(&["PUNSUBSCRIBE"])).await;
    assert_eq!(sub.read().await, msg2("punsubscribe", "n*", Reply::Int(1)));
    sub.send_raw(&common::send(&["UNSUBSCRIBE"])).await;
    assert_eq!(
        sub.read().await,
        msg2("unsubscribe", "sport", Reply::Int(0))
    );
    // Out of subscriber mode: an ordinary client again.
    assert_eq!(sub.cmd(&["PING"]).await, Reply::Simple("PONG".into()));
    assert_eq!(sub.cmd(&["SET", "k", "v"]).await, Reply::ok());
    assert_eq!(
        publisher.cmd(&["PUBLISH", "sport", "x"]).await,
        Reply::Int(0)
    );
    // Nothing to leave: one confirmation with a null name.
    sub.send_raw(&common::send(&["UNSUBSCRIBE"])).await;
    assert_eq!(
        sub.read().await,
        arr(vec![b("unsubscribe"), Reply::Bulk(None), Reply::Int(0)])
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resp2_subscriber_runs_only_subscriber_commands_and_reset_leaves() {
    let server = TestServer::start().await;
    let mut sub = server.client().await;
    let mut other = server.client().await;
    sub.send_raw(&common::send(&["SUBSCRIBE", "c"])).await;
    sub.read().await;
    assert_eq!(
        sub.cmd(&["GET", "k"]).await,
        Reply::Error("ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context".into())
    );
    // PING answers in the subscriber's shape.
    assert_eq!(sub.cmd(&["PING"]).await, arr(vec![b("pong"), b("")]));
    assert_eq!(
        sub.cmd(&["PING", "hi"]).await,
        arr(vec![b("pong"), b("hi")])
    );
    // Arity is checked before the context, as Redis does.
    assert!(sub
        .cmd(&["GET"])
        .await
        .is_error_starting("ERR wrong number of arguments"));
    assert_eq!(sub.cmd(&["RESET"]).await, Reply::Simple("RESET".into()));
    assert_eq!(other.cmd(&["PUBLISH", "c", "x"]).await, Reply::Int(0));
    assert_eq!(numsub(&mut other, "NUMSUB", "c").await, 0);
    assert_eq!(sub.cmd(&["GET", "k"]).await, Reply::Bulk(None));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resp3_subscribers_get_pushes_and_run_any_command() {
    let server = TestServer::start().await;
    let mut sub = server.client().await;
    let mut publisher = server.client().await;
    assert!(matches!(sub.cmd(&["HELLO", "3"]).await, Reply::Map(_)));
    sub.send_raw(&common::send(&["SUBSCRIBE", "c"])).await;
    assert_eq!(
        sub.read().await,
        Reply::Push(vec![b("subscribe"), b("c"), Reply::Int(1)])
    );
    assert_eq!(publisher.cmd(&["PUBLISH", "c", "m1"]).await, Reply::Int(1));
    // A message published before a command goes out before its reply.
    assert_eq!(
        sub.read().await,
        Reply::Push(vec![b("message"), b("c"), b("m1")])
    );
    assert_eq!(sub.cmd(&["SET", "k", "v"]).await, Reply::ok());
    assert_eq!(sub.cmd(&["PING"]).await, Reply::Simple("PONG".into()));
    assert_eq!(publisher.cmd(&["PUBLISH", "c", "m2"]).await, Reply::Int(1));
    sub.send_raw(&common::send(&["GET", "k"])).await;
    assert_eq!(
        sub.read().await,
        Reply::Push(vec![b("message"), b("c"), b("m2")])
    );
    assert_eq!(sub.read().await, b("v"));
    // Confirmations are pushes: CLIENT REPLY OFF does not drop them.
    sub.send_raw(&common::send(&["CLIENT", "REPLY", "OFF"]))
        .await;
    sub.send_raw(&common::send(&["UNSUBSCRIBE", "c"])).await;
    assert_eq!(
        sub.read().await,
        Reply::Push(vec![b("unsubscribe"), b("c"), Reply::Int(0)])
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shard_channels_are_their_own_space() {
    let server = TestServer::start().await;
    let mut sub = server.client().await;
    let mut publisher = server.client().await;
    sub.send_raw(&common::send(&["SSUBSCRIBE", "a", "b"])).await;
    assert_eq!(sub.read().await, msg2("ssubscribe", "a", Reply::Int(1)));
    assert_eq!(sub.read().await, msg2("ssubscribe", "b", Reply::Int(2)));
    sub.send_raw(&common::send(&["SUBSCRIBE", "a"])).await;
    // Shard channels do not count with channels.
    assert_eq!(sub.read().await, msg2("subscribe", "a", Reply::Int(1)));
    assert_eq!(publisher.cmd(&["SPUBLISH", "a", "s"]).await, Reply::Int(1));
    assert_eq!(sub.read().await, msg2("smessage", "a", b("s")));
    assert_eq!(publisher.cmd(&["PUBLISH", "a", "p"]).await, Reply::Int(1));
    assert_eq!(sub.read().await, msg2("message", "a", b("p")));
    assert_eq!(numsub(&mut publisher, "SHARDNUMSUB", "b").await, 1);
    assert_eq!(
        sorted_names(&mut publisher, "SHARDCHANNELS").await,
        ["a", "b"]
    );
    sub.send_raw(&common::send(&["SUNSUBSCRIBE"])).await;
    // In any order; the counts go down one by one.
    let (first, second) = (sub.read().await, sub.read().await);
    let name = |r: &Reply| match r {
        Reply::Array(Some(v)) => v[1].text(),
        other => panic!("{other:?}"),
    };
    let mut names = vec![name(&first), name(&second)];
    names.sort();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(first, msg2("sunsubscribe", &name(&first), Reply::Int(1)));
    assert_eq!(second, msg2("sunsubscribe", &name(&second), Reply::Int(0)));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pubsub_command_errors_are_redis_s() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    assert_eq!(
        c.cmd(&["PUBSUB", "NOPE"]).await,
        Reply::Error("ERR unknown subcommand 'NOPE'. Try PUBSUB HELP.".into())
    );
    assert_eq!(
        c.cmd(&["PUBSUB", "NUMPAT", "x"]).await,
        Reply::Error("ERR wrong number of arguments for 'pubsub|numpat' command".into())
    );
    assert_eq!(
        c.cmd(&["PUBSUB", "CHANNELS", "a", "b"]).await,
        Reply::Error(
            "ERR unknown subcommand or wrong number of arguments for 'CHANNELS'. Try PUBSUB HELP."
                .into()
        )
    );
    assert_eq!(
        c.cmd(&["PUBLISH", "c"]).await,
        Reply::Error("ERR wrong number of arguments for 'publish' command".into())
    );
    assert_eq!(
        c.cmd(&["SUBSCRIBE"]).await,
        Reply::Error("ERR wrong number of arguments for 'subscribe' command".into())
    );
    match c.cmd(&["PUBSUB", "HELP"]).await {
        Reply::Array(Some(lines)) => {
            assert_eq!(lines.len(), 14);
            assert_eq!(lines[1], Reply::Simple("CHANNELS [<pattern>]".into()));
        }
        other => panic!("{other:?}"),
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_connection_leaves_its_subscriptions() {
    let server = TestServer::start().await;
    let mut sub = server.client().await;
    let mut other = server.client().await;
    sub.send_raw(&common::send(&["SUBSCRIBE", "gone"])).await;
    sub.read().await;
    assert_eq!(numsub(&mut other, "NUMSUB", "gone").await, 1);
    drop(sub);
    for _ in 0..500 {
        if numsub(&mut other, "NUMSUB", "gone").await == 0 {
            assert_eq!(other.cmd(&["PUBLISH", "gone", "x"]).await, Reply::Int(0));
            server.shutdown().await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the closed subscriber is still subscribed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_stops_reading_is_disconnected_past_the_limit() {
    let server = TestServer::start().await;
    // Subscribes, then never reads again.
    let mut sub = server.client().await;
    sub.send_raw(&common::send(&["SUBSCRIBE", "flood"])).await;
    sub.read().await;
    let mut publisher = server.client().await;
    let payload = "x".repeat(1 << 20);
    // Twice the 32 MiB limit, more than the socket buffers absorb.
    for _ in 0..64 {
        publisher.cmd(&["PUBLISH", "flood", &payload]).await;
    }
    for _ in 0..500 {
        let list = publisher
            .cmd(&["CLIENT", "LIST", "TYPE", "pubsub"])
            .await
            .text();
        if list.is_empty() {
            // Gone, its subscription with it, and the server serves on.
            assert_eq!(
                publisher.cmd(&["PUBLISH", "flood", "x"]).await,
                Reply::Int(0)
            );
            assert_eq!(publisher.cmd(&["PING"]).await, Reply::Simple("PONG".into()));
            server.shutdown().await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the subscriber over its limit is still connected");
}
