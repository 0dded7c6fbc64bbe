//! Redis 7 functions across connections and restarts: what one
//! connection's script (`redis_diff.rs`, `functions_match_redis`) cannot
//! show. Libraries survive a restart through the functions file; a
//! damaged file stops the server with an error naming it; a long function
//! makes others `BUSY` with `FUNCTION KILL`'s wording, `FUNCTION STATS`
//! shows it, `SCRIPT KILL` refuses it and `FUNCTION KILL` stops it (and
//! refuses an `EVAL` script).

mod common;

use common::{Reply, TestServer};
use std::time::Duration;
use tiercache_server::ServerConfig;

const LIB: &str = "#!lua name=kept\nredis.register_function{function_name='kf', callback=function(keys, args) return 'kept ' .. args[1] end, flags={'no-writes'}, description='survives'}";

fn with_file(path: &std::path::Path) -> ServerConfig {
    ServerConfig {
        functions_file: Some(path.to_path_buf()),
        ..ServerConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn libraries_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("functions.rdb");
    let server = TestServer::start_with(with_file(&path)).await;
    let mut c = server.client().await;
    assert_eq!(c.cmd(&["FUNCTION", "LOAD", LIB]).await, Reply::bulk("kept"));
    let gone = "#!lua name=gone\nredis.register_function('gf', function() return 1 end)";
    assert_eq!(
        c.cmd(&["FUNCTION", "LOAD", gone]).await,
        Reply::bulk("gone")
    );
    assert_eq!(c.cmd(&["FUNCTION", "DELETE", "gone"]).await, Reply::ok());
    let listed = c.cmd(&["FUNCTION", "LIST", "WITHCODE"]).await;
    server.shutdown().await;
    assert!(path.exists());

    let server = TestServer::start_with(with_file(&path)).await;
    let mut c = server.client().await;
    assert_eq!(c.cmd(&["FUNCTION", "LIST", "WITHCODE"]).await, listed);
    assert_eq!(
        c.cmd(&["FCALL_RO", "kf", "0", "x"]).await,
        Reply::bulk("kept x")
    );
    assert!(c
        .cmd(&["FCALL", "gf", "0"])
        .await
        .is_error_starting("ERR Function not found"));
    // FLUSH is kept too.
    assert_eq!(c.cmd(&["FUNCTION", "FLUSH"]).await, Reply::ok());
    server.shutdown().await;
    let server = TestServer::start_with(with_file(&path)).await;
    let mut c = server.client().await;
    assert_eq!(
        c.cmd(&["FUNCTION", "LIST"]).await,
        Reply::Array(Some(vec![]))
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_functions_file_stops_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("functions.rdb");
    let server = TestServer::start_with(with_file(&path)).await;
    let mut c = server.client().await;
    assert_eq!(c.cmd(&["FUNCTION", "LOAD", LIB]).await, Reply::bulk("kept"));
    server.shutdown().await;
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[20] ^= 0x55;
    std::fs::write(&path, &bytes).unwrap();

    let listener = tiercache_server::Listener::bind(&tiercache_server::ListenAddr::Tcp(
        "127.0.0.1:0".parse().unwrap(),
    ))
    .await
    .unwrap();
    let engine = std::sync::Arc::new(
        tiercache_engine::Engine::builder(dir.path())
            .memory_bytes(1 << 20)
            .namespace(tiercache_engine::NamespaceConfig::new(
                "default",
                tiercache_engine::WriteMode::Back,
            ))
            .build()
            .await
            .unwrap(),
    );
    let served = tokio::time::timeout(
        Duration::from_secs(10),
        tiercache_server::serve(listener, engine.clone(), with_file(&path), async {}),
    )
    .await
    .expect("serve did not return");
    let err = served.expect_err("a corrupt file must stop the server");
    let text = err.to_string();
    assert!(
        text.contains("functions.rdb") && text.contains("corrupt"),
        "{text}"
    );
    engine.shutdown().await.unwrap();
}

/// Pings on `c` until the server answers BUSY; the message.
async fn until_busy(c: &mut common::Client) -> String {
    for _ in 0..300 {
        match c.cmd(&["PING"]).await {
            Reply::Error(e) if e.starts_with("BUSY") => return e,
            Reply::Simple(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            other => panic!("unexpected {other:?}"),
        }
    }
    panic!("the server never answered BUSY");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn function_kill_stops_a_function_and_script_kill_refuses_it() {
    let server = TestServer::start().await;
    let mut a = server.client().await;
    let mut b = server.client().await;
    let spin = "#!lua name=spin\nredis.register_function('spin', function(keys, args) local f = function() while true do redis.call('ping') end end while true do pcall(f) end end)";
    assert_eq!(
        a.cmd(&["FUNCTION", "LOAD", spin]).await,
        Reply::bulk("spin")
    );
    assert_eq!(
        b.cmd(&["CONFIG", "SET", "lua-time-limit", "50"]).await,
        Reply::ok()
    );
    a.send_raw(&common::encode(&[b"FCALL", b"spin", b"0"]))
        .await;
    let busy = until_busy(&mut b).await;
    assert_eq!(
        busy,
        "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
    );
    let stats = b.cmd(&["FUNCTION", "STATS"]).await;
    let Reply::Array(Some(items)) = &stats else {
        panic!("{stats:?}")
    };
    assert_eq!(items[0], Reply::bulk("running_script"));
    let Reply::Array(Some(running)) = &items[1] else {
        panic!("{stats:?}")
    };
    assert_eq!(
        running[..3],
        [
            Reply::bulk("name"),
            Reply::bulk("spin"),
            Reply::bulk("command")
        ]
    );
    assert_eq!(
        running[3],
        Reply::Array(Some(vec![
            Reply::bulk("FCALL"),
            Reply::bulk("spin"),
            Reply::bulk("0")
        ]))
    );
    assert_eq!(b.cmd(&["SCRIPT", "KILL"]).await, Reply::Error(busy.clone()));
    assert_eq!(b.cmd(&["FUNCTION", "KILL"]).await, Reply::ok());
    let r = a.read().await;
    assert!(
        r.is_error_starting("ERR Script killed by user with SCRIPT KILL..."),
        "{r:?}"
    );
    assert_eq!(b.cmd(&["PING"]).await, Reply::Simple("PONG".into()));

    // And the other way round: FUNCTION KILL refuses an EVAL script.
    a.send_raw(&common::encode(&[b"EVAL", b"while true do end", b"0"]))
        .await;
    let busy = until_busy(&mut b).await;
    assert_eq!(
        busy,
        "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
    );
    assert_eq!(
        b.cmd(&["FUNCTION", "KILL"]).await,
        Reply::Error(busy.clone())
    );
    assert_eq!(b.cmd(&["FUNCTION", "STATS"]).await, Reply::Error(busy));
    assert_eq!(b.cmd(&["SCRIPT", "KILL"]).await, Reply::ok());
    assert!(a.read().await.is_error_starting("ERR Script killed"));
    server.shutdown().await;
}
