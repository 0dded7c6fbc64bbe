//! Regressions found by running Redis's own test suites (strings,
//! counters, expiry, key space; see `docs/redis-compat.md`) against
//! tiercache. Each test pins one behaviour those suites rely on; the exact
//! reply bytes are also compared with a real redis-server in
//! `redis_diff.rs`, but these run without one.

mod common;

use common::{Client, Reply, TestServer};
use std::collections::HashMap;

fn int(r: Reply) -> i64 {
    match r {
        Reply::Int(n) => n,
        other => panic!("not an integer: {other:?}"),
    }
}

#[tokio::test]
async fn function_flush_succeeds_so_the_suite_can_reset_the_server() {
    // The harness sends FLUSHALL then FUNCTION FLUSH before every test
    // file in --host mode; an error there aborts the whole file.
    let server = TestServer::start().await;
    let mut c = server.client().await;
    assert_eq!(c.cmd(&["FUNCTION", "FLUSH"]).await, Reply::ok());
    assert_eq!(c.cmd(&["function", "flush", "async"]).await, Reply::ok());
    assert_eq!(
        c.cmd(&["FUNCTION", "LIST"]).await,
        Reply::Array(Some(vec![]))
    );
    assert!(c
        .cmd(&["FUNCTION", "FLUSH", "later"])
        .await
        .is_error_starting("ERR FUNCTION FLUSH only supports SYNC|ASYNC option"));
}

#[tokio::test]
async fn rename_moves_the_ttl_and_never_inherits_the_targets() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    c.cmd(&["SET", "a", "foo", "EX", "100"]).await;
    assert_eq!(c.cmd(&["RENAME", "a", "b"]).await, Reply::ok());
    assert_eq!(int(c.cmd(&["EXISTS", "a"]).await), 0);
    assert_eq!(c.cmd(&["GET", "b"]).await, Reply::bulk("foo"));
    assert!((95..=100).contains(&int(c.cmd(&["TTL", "b"]).await)));

    c.cmd(&["SET", "x", "plain"]).await;
    c.cmd(&["SET", "y", "old", "EX", "100"]).await;
    assert_eq!(c.cmd(&["RENAME", "x", "y"]).await, Reply::ok());
    assert_eq!(int(c.cmd(&["TTL", "y"]).await), -1);
    assert_eq!(c.cmd(&["GET", "y"]).await, Reply::bulk("plain"));

    // Same key: OK when it exists, an error when not; RENAMENX says 0.
    assert_eq!(c.cmd(&["RENAME", "y", "y"]).await, Reply::ok());
    assert_eq!(int(c.cmd(&["RENAMENX", "y", "y"]).await), 0);
    assert_eq!(
        c.cmd(&["RENAME", "nokey", "nokey"]).await,
        Reply::Error("ERR no such key".into())
    );
    assert_eq!(
        c.cmd(&["RENAMENX", "nokey", "z"]).await,
        Reply::Error("ERR no such key".into())
    );

    c.cmd(&["SET", "p", "1"]).await;
    assert_eq!(int(c.cmd(&["RENAMENX", "p", "y"]).await), 0);
    assert_eq!(int(c.cmd(&["RENAMENX", "p", "q"]).await), 1);
    assert_eq!(c.cmd(&["GET", "q"]).await, Reply::bulk("1"));

    // The write-back store ends up with the move too.
    server.engine.flush().await.unwrap();
    let stored = server.store.snapshot();
    assert!(!stored.contains_key(&b"a"[..]) && !stored.contains_key(&b"p"[..]));
    assert_eq!(&stored[&b"q"[..]].value[..], b"1");
}

#[tokio::test]
async fn copy_keeps_the_ttl_and_replaces_only_when_asked() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    c.cmd(&["SET", "src", "foobar", "EX", "100"]).await;
    assert_eq!(int(c.cmd(&["COPY", "src", "dst"]).await), 1);
    assert!((95..=100).contains(&int(c.cmd(&["TTL", "dst"]).await)));
    assert_eq!(c.cmd(&["GET", "src"]).await, Reply::bulk("foobar"));
    c.cmd(&["SET", "src", "other"]).await;
    assert_eq!(int(c.cmd(&["COPY", "src", "dst"]).await), 0);
    assert_eq!(int(c.cmd(&["COPY", "src", "dst", "REPLACE"]).await), 1);
    assert_eq!(int(c.cmd(&["TTL", "dst"]).await), -1);
    assert_eq!(int(c.cmd(&["COPY", "nokey", "dst"]).await), 0);
    assert_eq!(
        c.cmd(&["COPY", "src", "dst", "DB", "notanumber"]).await,
        Reply::Error("ERR value is not an integer or out of range".into())
    );
    assert_eq!(
        c.cmd(&["COPY", "src", "dst", "DB", "9"]).await,
        Reply::Error("ERR DB index is out of range".into())
    );
    assert_eq!(
        c.cmd(&["MOVE", "src", "0"]).await,
        Reply::Error("ERR source and destination objects are the same".into())
    );
}

#[tokio::test]
async fn randomkey_sees_every_key_of_a_small_key_space() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    assert_eq!(c.cmd(&["RANDOMKEY"]).await, Reply::Bulk(None));
    c.cmd(&["SET", "foo", "x"]).await;
    c.cmd(&["SET", "bar", "y"]).await;
    let (mut foo, mut bar) = (false, false);
    for _ in 0..100 {
        match c.cmd(&["RANDOMKEY"]).await.text().as_str() {
            "foo" => foo = true,
            "bar" => bar = true,
            other => panic!("{other}"),
        }
    }
    assert!(foo && bar);
    c.cmd(&["DEL", "foo", "bar"]).await;
    assert_eq!(c.cmd(&["RANDOMKEY"]).await, Reply::Bulk(None));
}

#[tokio::test]
async fn expiretime_answers_absolute_times() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    c.cmd(&["SET", "k", "v", "PXAT", "4102444800123"]).await;
    assert_eq!(int(c.cmd(&["PEXPIRETIME", "k"]).await), 4102444800123);
    assert_eq!(int(c.cmd(&["EXPIRETIME", "k"]).await), 4102444800);
    c.cmd(&["SET", "k", "v"]).await;
    assert_eq!(int(c.cmd(&["EXPIRETIME", "k"]).await), -1);
    assert_eq!(int(c.cmd(&["PEXPIRETIME", "nokey"]).await), -2);
    let Reply::Array(Some(t)) = c.cmd(&["TIME"]).await else {
        panic!("TIME is not an array")
    };
    assert_eq!(t.len(), 2);
    assert!(t[0].text().parse::<u64>().unwrap() > 1_600_000_000);
    assert!(t[1].text().parse::<u32>().unwrap() < 1_000_000);
}

#[tokio::test]
async fn setbit_and_getbit_follow_a_bit_model() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let mut model = vec![0u8; 0];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..500 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let bit = (seed % 2048) as usize;
        let on = (seed >> 20) & 1 == 1;
        let byte = bit / 8;
        let mask = 0x80u8 >> (bit % 8);
        let old = model.get(byte).is_some_and(|b| b & mask != 0);
        if model.len() <= byte {
            model.resize(byte + 1, 0);
        }
        if on {
            model[byte] |= mask;
        } else {
            model[byte] &= !mask;
        }
        let reply = c
            .cmd(&[
                "SETBIT",
                "bits",
                &bit.to_string(),
                if on { "1" } else { "0" },
            ])
            .await;
        assert_eq!(int(reply), old as i64);
    }
    assert_eq!(
        c.cmd(&["GET", "bits"]).await,
        Reply::Bulk(Some(model.clone()))
    );
    for bit in [0usize, 7, 100, 2047, 5000] {
        let want = model
            .get(bit / 8)
            .is_some_and(|b| b & (0x80 >> (bit % 8)) != 0);
        assert_eq!(
            int(c.cmd(&["GETBIT", "bits", &bit.to_string()]).await),
            want as i64
        );
    }
    // An integer-encoded string becomes raw; its expiry stays.
    c.cmd(&["SET", "n", "1", "EX", "100"]).await;
    assert_eq!(int(c.cmd(&["SETBIT", "n", "6", "1"]).await), 0);
    assert_eq!(c.cmd(&["GET", "n"]).await, Reply::bulk("3"));
    assert_eq!(
        c.cmd(&["OBJECT", "ENCODING", "n"]).await,
        Reply::bulk("raw")
    );
    assert!(int(c.cmd(&["TTL", "n"]).await) > 90);
    for bad in [["-1", "1"], ["4294967296", "1"], ["0", "2"], ["0", "-1"]] {
        assert!(c
            .cmd(&["SETBIT", "n", bad[0], bad[1]])
            .await
            .is_error_starting("ERR bit"));
    }
}

#[tokio::test]
async fn substr_and_lcs_answer_like_redis() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    c.cmd(&["SET", "key", "abcde"]).await;
    assert_eq!(
        c.cmd(&["SUBSTR", "key", "-4", "-1"]).await,
        Reply::bulk("bcde")
    );
    c.cmd(&["SET", "a", "ohmytext"]).await;
    c.cmd(&["SET", "b", "mynewtext"]).await;
    assert_eq!(c.cmd(&["LCS", "a", "b"]).await, Reply::bulk("mytext"));
    assert_eq!(int(c.cmd(&["LCS", "a", "b", "LEN"]).await), 6);
    let range = |a: i64, b: i64| Reply::Array(Some(vec![Reply::Int(a), Reply::Int(b)]));
    assert_eq!(
        c.cmd(&["LCS", "a", "b", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"])
            .await,
        Reply::Array(Some(vec![
            Reply::bulk("matches"),
            Reply::Array(Some(vec![Reply::Array(Some(vec![
                range(4, 7),
                range(5, 8),
                Reply::Int(4)
            ]))])),
            Reply::bulk("len"),
            Reply::Int(6),
        ]))
    );
    assert_eq!(
        c.cmd(&["LCS", "a", "b", "LEN", "IDX"]).await,
        Reply::Error("ERR If you want both the length and indexes, please just use IDX.".into())
    );
}

#[tokio::test]
async fn encoding_thresholds_of_absent_types_can_be_set_and_read_back() {
    // The key-space suite saves, sets and restores list-max-listpack-size
    // outside any test: an error there would abort the rest of the file.
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let get = |v: &str| {
        Reply::Array(Some(vec![
            Reply::bulk("list-max-listpack-size"),
            Reply::bulk(v),
        ]))
    };
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "list-max-listpack-size"]).await,
        get("-2")
    );
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "list-max-ziplist-size", "-1"])
            .await,
        Reply::ok()
    );
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "list-max-listpack-size"]).await,
        get("-1")
    );
    assert!(c
        .cmd(&["CONFIG", "SET", "list-max-listpack-size", "x"])
        .await
        .is_error_starting("ERR CONFIG SET failed"));
}

#[tokio::test]
async fn object_refcount_reports_redis_shared_integers() {
    // unit/type/incr: "INCR uses shared objects in the 0-9999 range" checks
    // OBJECT REFCOUNT unless needs:debug tests are skipped.
    let server = TestServer::start().await;
    let mut c = server.client().await;
    c.cmd(&["SET", "foo", "-1"]).await;
    c.cmd(&["INCR", "foo"]).await;
    assert!(int(c.cmd(&["OBJECT", "REFCOUNT", "foo"]).await) > 1);
    c.cmd(&["SET", "foo", "9998"]).await;
    c.cmd(&["INCR", "foo"]).await;
    assert!(int(c.cmd(&["OBJECT", "REFCOUNT", "foo"]).await) > 1);
    c.cmd(&["INCR", "foo"]).await;
    assert_eq!(int(c.cmd(&["OBJECT", "REFCOUNT", "foo"]).await), 1);
    assert_eq!(
        c.cmd(&["OBJECT", "REFCOUNT", "nokey"]).await,
        Reply::Bulk(None)
    );
}

fn config_pair(name: &str, value: &str) -> Reply {
    Reply::Array(Some(vec![Reply::bulk(name), Reply::bulk(value)]))
}

#[tokio::test]
async fn hash_encoding_thresholds_are_configurable_and_drive_object_encoding() {
    // unit/type/hash sets hash-max-ziplist-value outside any test and then
    // asserts each hash's encoding: an error, or a wrong encoding, there
    // stops the whole file.
    let server = TestServer::start().await;
    let mut c = server.client().await;
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "hash-max-listpack-entries"]).await,
        config_pair("hash-max-listpack-entries", "128")
    );
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "hash-max-ziplist-value"]).await,
        config_pair("hash-max-ziplist-value", "64")
    );
    let long = "x".repeat(11);
    c.cmd(&["HSET", "small", "a", "1"]).await;
    c.cmd(&["HSET", "wide", "a", &long]).await;
    assert_eq!(
        c.cmd(&["OBJECT", "ENCODING", "wide"]).await,
        Reply::bulk("listpack")
    );
    // The ziplist alias and the listpack name are one setting.
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "hash-max-ziplist-value", "10"])
            .await,
        Reply::ok()
    );
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "hash-max-listpack-value"]).await,
        config_pair("hash-max-listpack-value", "10")
    );
    assert_eq!(
        c.cmd(&["OBJECT", "ENCODING", "wide"]).await,
        Reply::bulk("hashtable")
    );
    assert_eq!(
        c.cmd(&["OBJECT", "ENCODING", "small"]).await,
        Reply::bulk("listpack")
    );
    c.cmd(&["HSET", "small", "b", "2", "c", "3"]).await;
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "hash-max-listpack-entries", "2"])
            .await,
        Reply::ok()
    );
    assert_eq!(
        c.cmd(&["OBJECT", "ENCODING", "small"]).await,
        Reply::bulk("hashtable")
    );
    // The value thresholds are memory values in Redis (units allowed, no
    // sign); the entry counts plain non-negative integers.
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "hash-max-listpack-value", "1kb"])
            .await,
        Reply::ok()
    );
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "hash-max-ziplist-value"]).await,
        config_pair("hash-max-ziplist-value", "1024")
    );
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "hash-max-listpack-value", "-1"])
            .await,
        Reply::Error(
            "ERR CONFIG SET failed (possibly related to argument 'hash-max-listpack-value') - \
             argument must be a memory value"
                .into()
        )
    );
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "zset-max-listpack-value", "2kb"])
            .await,
        Reply::ok()
    );
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "hash-max-ziplist-entries", "-1"])
            .await,
        Reply::Error(
            "ERR CONFIG SET failed (possibly related to argument 'hash-max-ziplist-entries') - \
             argument must be between 0 and 9223372036854775807 inclusive"
                .into()
        )
    );
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "hash-max-listpack-entries", "1kb"])
            .await,
        Reply::Error(
            "ERR CONFIG SET failed (possibly related to argument 'hash-max-listpack-entries') - \
             argument couldn't be parsed into an integer"
                .into()
        )
    );
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "hash-max-listpack-entries"]).await,
        config_pair("hash-max-listpack-entries", "2")
    );
}

#[tokio::test]
async fn memory_usage_answers_the_bytes_charged_for_a_key() {
    // unit/type/hash calls MEMORY USAGE outside any test (coverage for
    // Redis's objectComputeSize); an unknown command there stops the file.
    let server = TestServer::start().await;
    let mut c = server.client().await;
    c.cmd(&["HSET", "h", "field", "value"]).await;
    c.cmd(&["SET", "s", &"v".repeat(1000)]).await;
    let h = int(c.cmd(&["MEMORY", "USAGE", "h"]).await);
    let s = int(c.cmd(&["memory", "usage", "s", "SAMPLES", "0"]).await);
    // At least the key and the value; a bigger value costs more.
    assert!(h > 1 + 10, "{h}");
    assert!(s >= 1001 && s > h, "{s} vs {h}");
    assert_eq!(
        c.cmd(&["MEMORY", "USAGE", "s", "SAMPLES", "5", "SAMPLES", "1"])
            .await,
        Reply::Int(s)
    );
    assert_eq!(
        c.cmd(&["MEMORY", "USAGE", "nokey"]).await,
        Reply::Bulk(None)
    );
    for (args, err) in [
        (
            &["MEMORY", "USAGE"][..],
            "ERR wrong number of arguments for 'memory|usage' command",
        ),
        (
            &["MEMORY"][..],
            "ERR wrong number of arguments for 'memory' command",
        ),
        (&["MEMORY", "USAGE", "s", "SAMPLES"][..], "ERR syntax error"),
        (
            &["MEMORY", "USAGE", "s", "SAMPLES", "-1"][..],
            "ERR syntax error",
        ),
        (
            &["MEMORY", "USAGE", "s", "FOO", "1"][..],
            "ERR syntax error",
        ),
        (
            &["MEMORY", "USAGE", "nokey", "SAMPLES", "x"][..],
            "ERR value is not an integer or out of range",
        ),
        (
            &["MEMORY", "DOCTOR"][..],
            "ERR unknown subcommand 'DOCTOR'. Try MEMORY HELP.",
        ),
        (
            &["MEMORY", "HELP", "x"][..],
            "ERR wrong number of arguments for 'memory|help' command",
        ),
    ] {
        assert_eq!(c.cmd(args).await, Reply::Error(err.into()), "{args:?}");
    }
    let Reply::Array(Some(help)) = c.cmd(&["MEMORY", "HELP"]).await else {
        panic!("MEMORY HELP is not an array");
    };
    assert!(help.contains(&Reply::Simple("USAGE <key> [SAMPLES <count>]".into())));
}

#[tokio::test]
async fn hrandfield_checks_its_count_in_redis_order() {
    // Found while checking unit/type/hash's "HRANDFIELD count overflow":
    // with WITHVALUES the count is limited to half the range both ways,
    // and the range of the count is checked before the syntax.
    let server = TestServer::start().await;
    let mut c = server.client().await;
    c.cmd(&["HSET", "h", "a", "1", "b", "2"]).await;
    let out_of_range = Reply::Error("ERR value is out of range".into());
    for count in [
        "9223372036854775807",
        "4611686018427387904",
        "-4611686018427387904",
    ] {
        assert_eq!(
            c.cmd(&["HRANDFIELD", "h", count, "WITHVALUES"]).await,
            out_of_range,
            "{count}"
        );
    }
    assert_eq!(
        c.cmd(&["HRANDFIELD", "h", "4611686018427387903", "WITHVALUES"])
            .await,
        Reply::Array(Some(vec![
            Reply::bulk("a"),
            Reply::bulk("1"),
            Reply::bulk("b"),
            Reply::bulk("2"),
        ]))
    );
    assert_eq!(
        c.cmd(&["HRANDFIELD", "h", "-9223372036854775808", "x"])
            .await,
        Reply::Error(
            "ERR value is out of range, value must between -9223372036854775807 and \
             9223372036854775807"
                .into()
        )
    );
    assert_eq!(
        c.cmd(&["HRANDFIELD", "h", "9223372036854775807", "x"])
            .await,
        Reply::Error("ERR syntax error".into())
    );
    // A negative count repeats: as many picks as asked, all from the hash.
    let Reply::Array(Some(picks)) = c.cmd(&["HRANDFIELD", "h", "-1000"]).await else {
        panic!("not an array");
    };
    assert_eq!(picks.len(), 1000);
    assert!(picks
        .iter()
        .all(|p| *p == Reply::bulk("a") || *p == Reply::bulk("b")));
    assert!(picks.contains(&Reply::bulk("a")) && picks.contains(&Reply::bulk("b")));
}

/// `INFO errorstats` line `errorstat_<code>:count=<n>`, if any.
async fn errorstat(c: &mut common::Client, code: &str) -> Option<u64> {
    let info = c.cmd(&["INFO", "errorstats"]).await.text();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("errorstat_{code}:count=")))
        .map(|n| n.trim().parse().unwrap())
}

async fn total_errors(c: &mut common::Client) -> u64 {
    let info = c.cmd(&["INFO", "stats"]).await.text();
    info.lines()
        .find_map(|l| l.strip_prefix("total_error_replies:"))
        .map(|n| n.trim().parse().unwrap())
        .expect("total_error_replies in INFO stats")
}

#[tokio::test]
async fn error_replies_are_counted_by_code_until_resetstat() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    assert_eq!(c.cmd(&["CONFIG", "RESETSTAT"]).await, Reply::ok());
    assert_eq!(total_errors(&mut c).await, 0);
    c.cmd(&["SET", "s", "x"]).await;
    // WRONGTYPE, an unknown command and an arity error (ERR, at dispatch),
    // a NOGROUP, and one inside EXEC: each counts once under its code.
    assert!(c
        .cmd(&["LPUSH", "s", "a"])
        .await
        .is_error_starting("WRONGTYPE"));
    assert!(c.cmd(&["NOSUCH"]).await.is_error_starting("ERR"));
    assert!(c.cmd(&["GET"]).await.is_error_starting("ERR"));
    assert!(c
        .cmd(&["XREADGROUP", "GROUP", "g", "c", "STREAMS", "nokey", ">"])
        .await
        .is_error_starting("NOGROUP"));
    c.cmd(&["MULTI"]).await;
    c.cmd(&["INCR", "s"]).await;
    c.cmd(&["EXEC"]).await;
    assert_eq!(errorstat(&mut c, "WRONGTYPE").await, Some(1));
    assert_eq!(errorstat(&mut c, "ERR").await, Some(3));
    assert_eq!(errorstat(&mut c, "NOGROUP").await, Some(1));
    assert_eq!(total_errors(&mut c).await, 5);
    assert!(c.cmd(&["INFO"]).await.text().contains("# Errorstats"));
    c.cmd(&["CONFIG", "RESETSTAT"]).await;
    assert_eq!(errorstat(&mut c, "ERR").await, None);
    assert_eq!(total_errors(&mut c).await, 0);
    server.shutdown().await;
}

/// `cmdstat_NAME`'s fields from `INFO commandstats`, by name.
async fn cmdstat(c: &mut common::Client, name: &str) -> Option<HashMap<String, String>> {
    let info = c.cmd(&["INFO", "commandstats"]).await.text();
    let line = info
        .lines()
        .find_map(|l| l.strip_prefix(&format!("cmdstat_{name}:")))?;
    Some(
        line.trim()
            .split(',')
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap();
                (k.to_string(), v.to_string())
            })
            .collect(),
    )
}

fn field(stat: &Option<HashMap<String, String>>, name: &str) -> u64 {
    stat.as_ref().expect("listed")[name].parse::<f64>().unwrap() as u64
}

#[tokio::test]
async fn commands_are_counted_per_command_until_resetstat() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    assert_eq!(c.cmd(&["CONFIG", "RESETSTAT"]).await, Reply::ok());
    assert_eq!(cmdstat(&mut c, "get").await, None);
    c.cmd(&["SET", "s", "x"]).await;
    c.cmd(&["GET", "s"]).await;
    // A pipeline of plain SETs runs as one engine write: each one counts.
    let pipeline: Vec<u8> = (0..10)
        .flat_map(|i| common::encode(&[b"SET", format!("k{i}").as_bytes(), b"v"]))
        .collect();
    c.send_raw(&pipeline).await;
    for _ in 0..10 {
        assert_eq!(c.read().await, Reply::ok());
    }
    // Refused at dispatch (arity): rejected, not called.
    assert!(c.cmd(&["GET"]).await.is_error_starting("ERR"));
    // Ran and failed.
    assert!(c
        .cmd(&["LPUSH", "s", "a"])
        .await
        .is_error_starting("WRONGTYPE"));
    // Inside EXEC: the queued INCR runs (and fails) once, at EXEC.
    c.cmd(&["MULTI"]).await;
    c.cmd(&["INCR", "s"]).await;
    c.cmd(&["EXEC"]).await;
    // A blocking command that waits counts once, when it answers.
    assert_eq!(c.cmd(&["BLPOP", "q", "0.05"]).await, Reply::Array(None));

    let set = cmdstat(&mut c, "set").await;
    assert_eq!((field(&set, "calls"), field(&set, "failed_calls")), (11, 0));
    let get = cmdstat(&mut c, "get").await;
    assert_eq!(
        (
            field(&get, "calls"),
            field(&get, "rejected_calls"),
            field(&get, "failed_calls")
        ),
        (1, 1, 0)
    );
    let lpush = cmdstat(&mut c, "lpush").await;
    assert_eq!(
        (field(&lpush, "calls"), field(&lpush, "failed_calls")),
        (1, 1)
    );
    let incr = cmdstat(&mut c, "incr").await;
    assert_eq!(
        (field(&incr, "calls"), field(&incr, "failed_calls")),
        (1, 1)
    );
    assert_eq!(field(&cmdstat(&mut c, "exec").await, "calls"), 1);
    let blpop = cmdstat(&mut c, "blpop").await;
    assert_eq!(field(&blpop, "calls"), 1);

    // Not in the default INFO, in INFO all (as Redis).
    assert!(!c.cmd(&["INFO"]).await.text().contains("# Commandstats"));
    assert!(c
        .cmd(&["INFO", "all"])
        .await
        .text()
        .contains("cmdstat_get:calls=1,"));
    c.cmd(&["CONFIG", "RESETSTAT"]).await;
    assert_eq!(cmdstat(&mut c, "get").await, None);
    server.shutdown().await;
}

/// `used_cpu_user:<seconds>` of `INFO cpu`.
async fn cpu_user(c: &mut Client) -> f64 {
    let info = c.cmd(&["INFO", "cpu"]).await.text();
    let line = info
        .lines()
        .find_map(|l| l.strip_prefix("used_cpu_user:"))
        .unwrap_or_else(|| panic!("no used_cpu_user in {info}"));
    line.parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn info_cpu_reports_the_process_cpu_time() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let before = cpu_user(&mut c).await;
    // Burn some user time in this process (the server runs in it).
    let start = std::time::Instant::now();
    let mut x = 0u64;
    while start.elapsed() < std::time::Duration::from_millis(300) {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
    }
    std::hint::black_box(x);
    let after = cpu_user(&mut c).await;
    assert!(after >= before + 0.1, "user CPU {before} -> {after}");
    // In the default set and in `all`, once each, as in Redis.
    for args in [&["INFO"][..], &["INFO", "all"], &["INFO", "cpu", "default"]] {
        let info = c.cmd(args).await.text();
        assert_eq!(
            info.matches("used_cpu_user_children:").count(),
            1,
            "{args:?}"
        );
        assert!(info.contains("master_repl_offset:0"), "{args:?}");
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_reply_off_and_skip_drop_replies_until_on() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let mut pipeline = Vec::new();
    for args in [
        &["CLIENT", "REPLY", "OFF"][..],
        &["SET", "a", "1"],
        &["GET", "a"],
        &["NOSUCHCOMMAND"],
        &["CLIENT", "REPLY", "ON"],
        &["GET", "a"],
        &["CLIENT", "REPLY", "SKIP"],
        &["INCR", "a"],
        &["GET", "a"],
        &["CLIENT", "REPLY", "OFF"],
        &["RESET"],
        &["PING"],
        &["CLIENT", "REPLY", "MAYBE"],
    ] {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        pipeline.extend(common::encode(&args));
    }
    c.send_raw(&pipeline).await;
    // OFF: nothing until ON, whose OK is sent; SKIP: its own reply and the
    // next one's dropped; RESET turns replies back on.
    assert_eq!(c.read().await, Reply::ok());
    assert_eq!(c.read().await, Reply::bulk("1"));
    assert_eq!(c.read().await, Reply::bulk("2"), "the INCR ran, unanswered");
    assert_eq!(c.read().await, Reply::Simple("RESET".into()));
    assert_eq!(c.read().await, Reply::Simple("PONG".into()));
    assert_eq!(c.read().await, Reply::Error("ERR syntax error".into()));
    // Nothing else was sent: the next reply is the next command's.
    assert_eq!(c.cmd(&["ECHO", "last"]).await, Reply::bulk("last"));
    server.shutdown().await;
}
