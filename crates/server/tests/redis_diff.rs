//! Differential test: the same scripted command sequences go to a real
//! `redis-server` (7.x, started here on a free port) and to a tiercache
//! server, over RESP2 and over RESP3, and every reply must be identical —
//! error cases included (arity, bad numbers, overflow, option clashes).
//!
//! What legitimately differs is listed, and checked more loosely:
//! - `HELLO`: `version` and `id` values (the map and the other fields must match);
//! - `CLIENT ID`, `CLIENT INFO`, `CLIENT LIST`, `INFO`, `COMMAND COUNT`,
//!   `COMMAND INFO` of known commands: only the reply type (contents are
//!   server specific);
//! - `CONFIG GET` of values that depend on the host (`maxmemory`,
//!   `maxclients`, `port`): only the parameter names;
//! - `PTTL` and `TTL` against absolute times: within a tolerance;
//! - `KEYS` and `SCAN`: order and cursors (compared as sets, a full
//!   `SCAN` iteration against a full iteration);
//! - `CLIENT SETINFO` is Redis 7.2 and not in 7.0: not sent;
//! - limits: Redis refuses values over 512 MB, tiercache over its
//!   `max_value_bytes` (64 MiB by default); only the over-both case is sent.
//!
//! Without `redis-server` on PATH the test says so loudly and passes,
//! unless `TIERCACHE_REQUIRE_BACKENDS=1`.

mod common;
mod diff_script;

use common::{encode, Client, Reply, TestServer};
use diff_script::{
    auth_script, bits_script, eval_script, function_script, geo_script, hash_script, hll_script,
    list_script, msgpack_script, set_script, sort_script, stream_script, strings_script,
    transactions_script, words, zset_script, Check, Step,
};
use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;
use tiercache_server::ServerConfig;
use tiercache_testkit::RedisServer;

/// Puts `version` and `id` of a HELLO reply out of the comparison.
fn normalize_hello(r: &Reply) -> Reply {
    let masked = |k: &Reply, v: &Reply| {
        if *k == Reply::bulk("version") || *k == Reply::bulk("id") {
            Reply::Null
        } else {
            v.clone()
        }
    };
    match r {
        Reply::Map(pairs) => Reply::Map(
            pairs
                .iter()
                .map(|(k, v)| (k.clone(), masked(k, v)))
                .collect(),
        ),
        Reply::Array(Some(items)) => {
            let mut out = items.clone();
            for i in (0..out.len().saturating_sub(1)).step_by(2) {
                out[i + 1] = masked(&items[i], &items[i + 1]);
            }
            Reply::Array(Some(out))
        }
        other => other.clone(),
    }
}

fn map_keys(r: &Reply) -> Option<BTreeSet<String>> {
    match r {
        Reply::Map(pairs) => Some(pairs.iter().map(|(k, _)| k.text()).collect()),
        Reply::Array(Some(items)) => Some(items.iter().step_by(2).map(|k| k.text()).collect()),
        _ => None,
    }
}

fn sorted(r: &Reply) -> Reply {
    match r {
        Reply::Array(Some(items)) => Reply::Array(Some(sorted_items(items))),
        Reply::Set(items) => Reply::Set(sorted_items(items)),
        other => other.clone(),
    }
}

fn sorted_items(items: &[Reply]) -> Vec<Reply> {
    let mut v = items.to_vec();
    v.sort_by_key(|x| format!("{x:?}"));
    v
}

fn same(check: Check, a: &Reply, b: &Reply) -> bool {
    match check {
        Check::Exact => a == b,
        Check::Unordered => sorted(a) == sorted(b),
        Check::Near(tol) => match (a, b) {
            (Reply::Int(x), Reply::Int(y)) => (x - y).abs() <= tol,
            _ => a == b,
        },
        Check::Shape => std::mem::discriminant(a) == std::mem::discriminant(b),
        Check::Hello => normalize_hello(a) == normalize_hello(b),
        Check::MapKeys => map_keys(a).is_some() && map_keys(a) == map_keys(b),
        Check::Timed => {
            const STAMP: i64 = 1_000_000_000_000;
            close(a, b, &|x, y| {
                x == y || (x >= STAMP && y >= STAMP && (x - y).abs() <= 10_000)
            })
        }
        Check::Idle(tol) => close(a, b, &|x, y| (x - y).abs() <= tol),
    }
}

/// Structural equality with integers compared by `near`.
fn close(a: &Reply, b: &Reply, near: &dyn Fn(i64, i64) -> bool) -> bool {
    let all = |x: &[Reply], y: &[Reply]| {
        x.len() == y.len() && x.iter().zip(y).all(|(x, y)| close(x, y, near))
    };
    match (a, b) {
        (Reply::Int(x), Reply::Int(y)) => near(*x, *y),
        (Reply::Array(Some(x)), Reply::Array(Some(y))) => all(x, y),
        (Reply::Set(x), Reply::Set(y)) => all(x, y),
        (Reply::Map(x), Reply::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((k1, v1), (k2, v2))| close(k1, k2, near) && close(v1, v2, near))
        }
        _ => a == b,
    }
}

async fn scan_iteration(c: &mut Client, options: &[Vec<u8>]) -> Result<BTreeSet<Vec<u8>>, Reply> {
    let mut keys = BTreeSet::new();
    let mut cursor = b"0".to_vec();
    for _ in 0..10_000 {
        let mut args: Vec<&[u8]> = vec![b"SCAN", &cursor];
        args.extend(options.iter().map(|o| o.as_slice()));
        c.send_raw(&encode(&args)).await;
        let reply = c.read().await;
        let Reply::Array(Some(parts)) = &reply else {
            return Err(reply);
        };
        let (Reply::Bulk(Some(next)), Reply::Array(Some(page))) = (&parts[0], &parts[1]) else {
            return Err(reply);
        };
        for k in page {
            let Reply::Bulk(Some(k)) = k else {
                return Err(reply.clone());
            };
            keys.insert(k.clone());
        }
        if next == b"0" {
            return Ok(keys);
        }
        cursor = next.clone();
    }
    panic!("SCAN did not finish");
}

/// Runs `script` on both servers (RESP3 after `HELLO 3` when `resp3`)
/// and returns every difference.
async fn run(script: &[Step], redis: SocketAddr, ours: SocketAddr, resp3: bool) -> Vec<String> {
    let mut r = Client::connect(redis).await;
    let mut t = Client::connect(ours).await;
    let mut diffs = Vec::new();
    let proto = if resp3 { "RESP3" } else { "RESP2" };
    if resp3 {
        let hello = words("HELLO 3");
        let args: Vec<&[u8]> = hello.iter().map(|a| a.as_slice()).collect();
        r.send_raw(&encode(&args)).await;
        t.send_raw(&encode(&args)).await;
        let (a, b) = (r.read().await, t.read().await);
        assert!(
            matches!(a, Reply::Map(_)),
            "redis did not switch to RESP3: {a:?}"
        );
        if !same(Check::Hello, &a, &b) {
            diffs.push(format!(
                "[{proto}] HELLO 3\n  redis:     {a:?}\n  tiercache: {b:?}"
            ));
        }
    }
    for step in script {
        match step {
            Step::Cmd(args, check) => {
                let args: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
                r.send_raw(&encode(&args)).await;
                t.send_raw(&encode(&args)).await;
                let line: Vec<String> = args
                    .iter()
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect();
                let (Some(a), Some(b)) = (r.try_read().await, t.try_read().await) else {
                    if line[0] != "QUIT" {
                        diffs.push(format!("[{proto}] {}: a connection closed", line.join(" ")));
                    }
                    return diffs;
                };
                if !same(*check, &a, &b) {
                    diffs.push(format!(
                        "[{proto}] {}\n  redis:     {a:?}\n  tiercache: {b:?}",
                        line.join(" ")
                    ));
                }
            }
            Step::Raw(bytes, n) => {
                r.send_raw(bytes).await;
                t.send_raw(bytes).await;
                let mut closed = false;
                for _ in 0..*n {
                    let (Some(a), Some(b)) = (r.try_read().await, t.try_read().await) else {
                        diffs.push(format!(
                            "[{proto}] raw {:?}: a connection closed",
                            String::from_utf8_lossy(bytes)
                        ));
                        return diffs;
                    };
                    closed |= a.is_error_starting("ERR Protocol error");
                    if a != b {
                        diffs.push(format!(
                            "[{proto}] raw {:?}\n  redis:     {a:?}\n  tiercache: {b:?}",
                            String::from_utf8_lossy(bytes)
                        ));
                    }
                }
                if closed {
                    // A protocol error closes the connection on both.
                    assert!(
                        r.is_closed().await && t.is_closed().await,
                        "[{proto}] protocol error must close"
                    );
                    r = Client::connect(redis).await;
                    t = Client::connect(ours).await;
                    if resp3 {
                        for cl in [&mut r, &mut t] {
                            cl.send_raw(&encode(&[b"HELLO", b"3"])).await;
                            cl.read().await;
                        }
                    }
                }
            }
            Step::ScanAll(options) => {
                let (a, b) = (
                    scan_iteration(&mut r, options).await,
                    scan_iteration(&mut t, options).await,
                );
                if a != b {
                    diffs.push(format!(
                        "[{proto}] SCAN iteration {:?}\n  redis:     {a:?}\n  tiercache: {b:?}",
                        options
                            .iter()
                            .map(|o| String::from_utf8_lossy(o).into_owned())
                            .collect::<Vec<_>>()
                    ));
                }
            }
            Step::Sleep(ms) => tokio::time::sleep(Duration::from_millis(*ms)).await,
        }
    }
    diffs
}

/// Runs `script` against a fresh redis-server (one database, as
/// tiercache has: `SELECT` answers alike) and a fresh tiercache, over RESP2
/// then RESP3, and fails listing every reply that differs.
async fn matches_redis(script: Vec<Step>) {
    let Some(redis) = RedisServer::start(&["--databases", "1"]) else {
        return;
    };
    let ours = TestServer::start().await;
    let mut diffs = run(&script, redis.addr(), ours.addr, false).await;
    diffs.extend(run(&script, redis.addr(), ours.addr, true).await);
    report(diffs);
    ours.shutdown().await;
}

fn report(diffs: Vec<String>) {
    assert!(
        diffs.is_empty(),
        "{} replies differ from redis-server's:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strings_counters_expiry_and_key_space_match_redis() {
    matches_redis(strings_script()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hashes_match_redis() {
    matches_redis(hash_script()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_match_redis() {
    matches_redis(list_script()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sets_match_redis() {
    matches_redis(set_script()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sort_matches_redis() {
    matches_redis(sort_script()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bits_match_redis() {
    matches_redis(bits_script()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn geo_matches_redis() {
    matches_redis(geo_script()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hll_matches_redis() {
    matches_redis(hll_script()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sorted_sets_match_redis() {
    matches_redis(zset_script()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_match_redis() {
    matches_redis(stream_script()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eval_matches_redis() {
    matches_redis(eval_script()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cmsgpack_and_struct_match_redis() {
    matches_redis(msgpack_script()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn functions_match_redis() {
    matches_redis(function_script()).await;
}

/// A `FUNCTION DUMP` of one server restores in the other, both ways, and
/// lists the same libraries there (Redis compresses long codes with LZF).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn function_dumps_cross_servers() {
    let Some(redis) = RedisServer::start(&["--databases", "1"]) else {
        return;
    };
    let ours = TestServer::start().await;
    let mut r = Client::connect(redis.addr()).await;
    let mut t = Client::connect(ours.addr).await;
    let long = format!(
        "#!lua name=fromredis\nredis.register_function('fr', function() return '{}' end)",
        "a".repeat(200)
    );
    let short = "#!lua name=fromus\nredis.register_function('fu', function() return 2 end)";
    for (redis_first, code, f) in [(true, long.as_str(), "fr"), (false, short, "fu")] {
        let (from, to) = if redis_first {
            (&mut r, &mut t)
        } else {
            (&mut t, &mut r)
        };
        let loaded = cmd_bytes(from, &[b"FUNCTION", b"LOAD", code.as_bytes()]).await;
        assert!(matches!(loaded, Reply::Bulk(Some(_))), "{loaded:?}");
        let Reply::Bulk(Some(payload)) = cmd_bytes(from, &[b"FUNCTION", b"DUMP"]).await else {
            panic!("no dump");
        };
        let restored = cmd_bytes(to, &[b"FUNCTION", b"RESTORE", &payload]).await;
        assert_eq!(restored, Reply::ok(), "{code}");
        let listed_from = cmd_bytes(from, &[b"FUNCTION", b"LIST", b"WITHCODE"]).await;
        let listed_to = cmd_bytes(to, &[b"FUNCTION", b"LIST", b"WITHCODE"]).await;
        assert_eq!(listed_from, listed_to);
        let ran = cmd_bytes(to, &[b"FCALL", f.as_bytes(), b"0"]).await;
        assert!(!matches!(ran, Reply::Error(_)), "{ran:?}");
        let again = cmd_bytes(to, &[b"FUNCTION", b"RESTORE", &payload]).await;
        assert!(
            matches!(&again, Reply::Error(e) if e.contains("already exists")),
            "{again:?}"
        );
        for c in [&mut *from, &mut *to] {
            assert_eq!(cmd_bytes(c, &[b"FUNCTION", b"FLUSH"]).await, Reply::ok());
        }
    }
    ours.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_match_redis() {
    matches_redis(transactions_script()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requirepass_matches_redis() {
    let Some(redis) = RedisServer::start(&["--databases", "1", "--requirepass", "secret"]) else {
        return;
    };
    let ours = TestServer::start_with(ServerConfig {
        requirepass: Some("secret".into()),
        ..Default::default()
    })
    .await;
    report(run(&auth_script(), redis.addr(), ours.addr, false).await);
    ours.shutdown().await;
}

/// Sends `args` (bytes) and reads the reply.
async fn cmd_bytes(c: &mut Client, args: &[&[u8]]) -> Reply {
    c.send_raw(&encode(args)).await;
    c.read().await
}

/// The bytes of a bulk reply.
fn bulk_bytes(r: Reply) -> Vec<u8> {
    match r {
        Reply::Bulk(Some(b)) => b,
        other => panic!("not a bulk string: {other:?}"),
    }
}

/// HLLs cross between the servers as plain strings: a value Redis made
/// is read by tiercache (`GET` then `SET`, and `DUMP` then `RESTORE`) and
/// counts, grows and merges to the same bytes, and the other way round.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hll_values_move_between_redis_and_tiercache() {
    let Some(redis) = RedisServer::start(&["--databases", "1"]) else {
        return;
    };
    let ours = TestServer::start().await;
    let mut r = Client::connect(redis.addr()).await;
    let mut t = Client::connect(ours.addr).await;
    for n in [3usize, 200, 4000] {
        let elements: Vec<Vec<u8>> = (0..n).map(|i| format!("e{n}-{i}").into_bytes()).collect();
        let more: Vec<Vec<u8>> = (0..n).map(|i| format!("m{n}-{i}").into_bytes()).collect();
        let pfadd = |key: &'static [u8], items: &[Vec<u8>]| {
            let mut args: Vec<Vec<u8>> = vec![b"PFADD".to_vec(), key.to_vec()];
            args.extend(items.iter().cloned());
            args
        };
        // Redis makes "a", tiercache makes "b", from different elements.
        let add_a = pfadd(b"a", &elements);
        let add_b = pfadd(b"b", &more);
        let a_args: Vec<&[u8]> = add_a.iter().map(|x| x.as_slice()).collect();
        let b_args: Vec<&[u8]> = add_b.iter().map(|x| x.as_slice()).collect();
        assert_eq!(cmd_bytes(&mut r, &a_args).await, Reply::Int(1));
        assert_eq!(cmd_bytes(&mut t, &b_args).await, Reply::Int(1));
        let a = bulk_bytes(r.cmd(&["GET", "a"]).await);
        let b = bulk_bytes(t.cmd(&["GET", "b"]).await);
        // Each server takes the other's value as it is.
        assert_eq!(cmd_bytes(&mut t, &[b"SET", b"a", &a]).await, Reply::ok());
        assert_eq!(cmd_bytes(&mut r, &[b"SET", b"b", &b]).await, Reply::ok());
        for key in ["a", "b"] {
            let (x, y) = (
                r.cmd(&["PFCOUNT", key]).await,
                t.cmd(&["PFCOUNT", key]).await,
            );
            assert!(matches!(x, Reply::Int(_)), "{x:?}");
            assert_eq!(x, y, "PFCOUNT {key} of {n}");
            // The cached cardinality is written alike.
            assert_eq!(r.cmd(&["GET", key]).await, t.cmd(&["GET", key]).await);
        }
        // Both grow them to the same bytes.
        assert_eq!(
            cmd_bytes(&mut r, &b_args[..b_args.len().min(50)]).await,
            cmd_bytes(&mut t, &b_args[..b_args.len().min(50)]).await
        );
        assert_eq!(r.cmd(&["GET", "b"]).await, t.cmd(&["GET", "b"]).await);
        for c in [&mut r, &mut t] {
            assert_eq!(c.cmd(&["PFMERGE", "ab", "a", "b"]).await, Reply::ok());
        }
        assert_eq!(r.cmd(&["GET", "ab"]).await, t.cmd(&["GET", "ab"]).await);
        assert_eq!(
            r.cmd(&["PFCOUNT", "a", "b"]).await,
            t.cmd(&["PFCOUNT", "a", "b"]).await
        );
        // DUMP payloads restore on the other side to the same value.
        let dump_r = bulk_bytes(r.cmd(&["DUMP", "ab"]).await);
        let dump_t = bulk_bytes(t.cmd(&["DUMP", "ab"]).await);
        assert_eq!(
            cmd_bytes(&mut t, &[b"RESTORE", b"fromredis", b"0", &dump_r]).await,
            Reply::ok()
        );
        assert_eq!(
            cmd_bytes(&mut r, &[b"RESTORE", b"fromtc", b"0", &dump_t]).await,
            Reply::ok()
        );
        let want = r.cmd(&["GET", "ab"]).await;
        assert_eq!(t.cmd(&["GET", "fromredis"]).await, want);
        assert_eq!(r.cmd(&["GET", "fromtc"]).await, want);
        assert_eq!(
            r.cmd(&["PFCOUNT", "fromtc"]).await,
            t.cmd(&["PFCOUNT", "fromredis"]).await
        );
        for c in [&mut r, &mut t] {
            c.cmd(&["FLUSHALL"]).await;
        }
    }
    ours.shutdown().await;
}
