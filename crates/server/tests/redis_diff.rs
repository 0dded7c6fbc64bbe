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

use common::{encode, require_tool, Client, Reply, TestServer};
use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tiercache_server::ServerConfig;

/// A `redis-server` child on a free port, killed on drop.
struct RedisServer {
    child: Child,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl RedisServer {
    async fn start(bin: &Path, extra: &[&str]) -> RedisServer {
        let dir = tempfile::tempdir().unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut args: Vec<String> = [
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--databases",
            "1",
            "--dir",
            dir.path().to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        let child = Command::new(bin)
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        // Owned from here on: dropping it kills and reaps the child.
        let server = RedisServer {
            child,
            addr: format!("127.0.0.1:{port}").parse().unwrap(),
            _dir: dir,
        };
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(server.addr).await.is_ok() {
                return server;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("redis-server did not start on {}", server.addr);
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How two replies are compared.
#[derive(Clone, Copy, Debug)]
enum Check {
    /// Byte for byte.
    Exact,
    /// Same elements, any order (`KEYS`).
    Unordered,
    /// Integers within this distance (`PTTL`).
    Near(i64),
    /// Same reply type only (server-specific contents).
    Shape,
    /// `HELLO`: everything but the `version` and `id` values.
    Hello,
    /// `CONFIG GET`: the same parameter names.
    MapKeys,
}

enum Step {
    Cmd(Vec<Vec<u8>>, Check),
    /// Bytes sent as they are (inline commands), then this many replies.
    Raw(&'static [u8], usize),
    /// A complete `SCAN 0 <options>` iteration, compared as a set of keys.
    ScanAll(Vec<Vec<u8>>),
    Sleep(u64),
}

/// Splits a command line on spaces; `"..."` groups (and `""` is empty).
fn words(line: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    let (mut quoted, mut any) = (false, false);
    for b in line.bytes() {
        match b {
            b'"' => {
                quoted = !quoted;
                any = true;
            }
            b' ' if !quoted => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            b => cur.push(b),
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn c(line: &str) -> Step {
    Step::Cmd(words(line), Check::Exact)
}

fn ck(line: &str, check: Check) -> Step {
    Step::Cmd(words(line), check)
}

fn scan_all(options: &str) -> Step {
    Step::ScanAll(words(options))
}

/// The string, counter, expiry and key-space script.
fn strings_script() -> Vec<Step> {
    let long = "x".repeat(60);
    let mut s = vec![
        c("FLUSHALL"),
        // Connection and errors.
        c("PING"),
        c("PING hello"),
        c("PING a b"),
        c("ECHO \"x y\""),
        c("ECHO"),
        c("NOSUCH a b"),
        c("GET"),
        c("GET a b"),
        c("SET a"),
        c("TTL"),
        c("SELECT 0"),
        c("SELECT 1"),
        c("SELECT -1"),
        c("SELECT abc"),
        // SET and its options.
        c("GET k"),
        c("SET k v"),
        c("GET k"),
        c("SET k v2 NX"),
        c("SET k v2 XX GET"),
        c("GET k"),
        c("SET k v NX XX"),
        c("SET k v XX NX"),
        c("SET k v EX 0"),
        c("SET k v EX -1"),
        c("SET k v PX 0"),
        c("SET k v EXAT 0"),
        c("SET k v PXAT -5"),
        c("SET k v EX abc"),
        c("SET k v EX 010"),
        c("SET k v EX 10 PX 10"),
        c("SET k v KEEPTTL EX 10"),
        c("SET k v EX 10 KEEPTTL"),
        c("SET k v EX"),
        c("SET k v BOGUS"),
        c("SET k v PERSIST"),
        c("SET k v EX 9223372036854775807"),
        c("SET k v PX 9223372036854775807"),
        c("SET k v EX 10 EX 100"),
        c("TTL k"),
        c("SET k v GET GET"),
        c("SET k v ex 100"),
        c("TTL k"),
        c("SET k v2 KEEPTTL"),
        c("TTL k"),
        c("SET k v3"),
        c("TTL k"),
        c("SET nx1 v NX GET"),
        c("GET nx1"),
        c("SET k x NX GET"),
        c("SET xx1 v XX GET"),
        c("EXISTS xx1"),
        c("SETNX k a"),
        c("SETNX new a"),
        c("SETNX k"),
        c("SETEX k 0 v"),
        c("SETEX k -5 v"),
        c("SETEX k abc v"),
        c("SETEX k 100 v"),
        c("TTL k"),
        c("PSETEX k 0 v"),
        c("PSETEX k 100000 v"),
        ck("PTTL k", Check::Near(100)),
        c("GETSET k newv"),
        c("TTL k"),
        c("GETSET missing2 v"),
        c("GETDEL k"),
        c("GETDEL k"),
        c("EXISTS k"),
        c("GETEX missing"),
        c("SET k v"),
        c("GETEX k EX 100"),
        c("TTL k"),
        c("GETEX k PERSIST"),
        c("TTL k"),
        c("GETEX k EX 10 PERSIST"),
        c("GETEX k PERSIST EX 10"),
        c("GETEX k NX"),
        c("GETEX k KEEPTTL"),
        c("GETEX k EX 0"),
        c("GETEX k PX abc"),
        c("GETEX k PXAT 1"),
        c("EXISTS k"),
        // Multi-key.
        c("MSET a 1 b 2"),
        c("MSET a"),
        c("MSET a 1 b"),
        c("MGET a missing b"),
        c("MSETNX a 1 c 3"),
        c("MSETNX c 3 d 4"),
        c("MSETNX c"),
        c("MSETNX x 1 x 2"),
        c("MGET a b c d x"),
        c("EXISTS a a c missing"),
        c("TYPE c"),
        c("TYPE missing"),
        c("TYPE"),
        c("DEL a b missing"),
        c("UNLINK c d"),
        c("DEL"),
        c("DEL x x"),
        // Expiry.
        c("SET e v"),
        c("EXPIRE e 100"),
        c("TTL e"),
        c("EXPIRE e 100 NX"),
        c("EXPIRE e 200 XX"),
        c("TTL e"),
        c("EXPIRE e 100 GT"),
        c("EXPIRE e 300 GT"),
        c("EXPIRE e 50 LT"),
        c("TTL e"),
        c("EXPIRE e 100 NX XX"),
        c("EXPIRE e 100 GT LT"),
        c("EXPIRE e 100 FOO"),
        c("EXPIRE e abc"),
        c("EXPIRE e abc FOO"),
        c("EXPIRE e 100 nx gt"),
        c("EXPIRE missing 100"),
        c("EXPIRE e 9223372036854775807"),
        c("EXPIRE e -9223372036854775808"),
        c("PEXPIRE e 9223372036854775807"),
        c("EXPIREAT e 9223372036854775807"),
        c("EXPIRE"),
        c("EXPIRE e"),
        c("PERSIST e"),
        c("PERSIST e"),
        c("TTL e"),
        c("PERSIST missing"),
        c("SET e2 v"),
        c("EXPIRE e2 100 LT"),
        c("TTL e2"),
        c("SET e3 v"),
        c("EXPIRE e3 100 GT"),
        c("EXPIRE e3 100 XX"),
        c("TTL e3"),
        c("EXPIRE e3 -1"),
        c("EXISTS e3"),
        c("SET e4 v"),
        c("PEXPIREAT e4 1"),
        c("GET e4"),
        c("SET e5 v"),
        c("EXPIREAT e5 4102444800"),
        ck("TTL e5", Check::Near(2)),
        c("PEXPIRE e5 100000"),
        ck("PTTL e5", Check::Near(100)),
        c("SET e6 v PX 50"),
        Step::Sleep(120),
        c("GET e6"),
        c("TTL missing"),
        c("PTTL missing"),
        // Counters.
        c("SET n 10"),
        c("INCR n"),
        c("DECR n"),
        c("INCRBY n 5"),
        c("DECRBY n 20"),
        c("INCRBY n abc"),
        c("INCRBY n 1.5"),
        c("INCR missing_n"),
        c("DECR missing_m"),
        c("SET big 9223372036854775807"),
        c("INCR big"),
        c("SET small -9223372036854775808"),
        c("DECR small"),
        c("DECRBY n -9223372036854775808"),
        c("INCRBY n 9223372036854775807"),
        c("INCRBY n 10"),
        c("SET s abc"),
        c("INCR s"),
        c("SET sp \" 1\""),
        c("INCR sp"),
        c("SET z 01"),
        c("INCR z"),
        c("SET ne -0"),
        c("INCR ne"),
        c("SET ttln 5 EX 100"),
        c("INCR ttln"),
        c("TTL ttln"),
        c("INCR"),
        c("INCRBYFLOAT f 10.5"),
        c("INCRBYFLOAT f 0.1"),
        c("INCRBYFLOAT f -1.1"),
        c("INCRBYFLOAT f abc"),
        c("INCRBYFLOAT s 1"),
        c("INCRBYFLOAT f 5.0e3"),
        c("INCRBYFLOAT f 2E-1"),
        c("SET fx 123456789012.5"),
        c("INCRBYFLOAT fx 0.1"),
        c("INCRBYFLOAT fx 1e50"),
        c("INCRBYFLOAT fx -1e50"),
        c("INCRBYFLOAT fx 3.3e-30"),
        c("SET fy 99999999999999999999999"),
        c("INCRBYFLOAT fy 0.5"),
        c("INCRBYFLOAT fy -0.75e-3"),
        c("INCRBYFLOAT f inf"),
        c("INCRBYFLOAT f -inf"),
        c("INCRBYFLOAT f nan"),
        c("INCRBYFLOAT f \"\""),
        c("INCRBYFLOAT f \" 1\""),
        c("INCRBYFLOAT f \"1 \""),
        c("GET f"),
        c("SET fi 3"),
        c("INCRBYFLOAT fi 1.5"),
        c("INCRBYFLOAT fi -4.5"),
        c("INCRBYFLOAT fi 0.25"),
        c("INCRBYFLOAT fi +.75"),
        c("INCRBYFLOAT fneg -0.0"),
        c("SET fttl 1 EX 100"),
        c("INCRBYFLOAT fttl 1"),
        c("TTL fttl"),
        // Strings.
        c("APPEND ap hello"),
        c("APPEND ap \" world\""),
        c("GET ap"),
        c("STRLEN ap"),
        c("STRLEN missing"),
        c("APPEND ap \"\""),
        c("SET ap2 v EX 100"),
        c("APPEND ap2 x"),
        c("TTL ap2"),
        c("GETRANGE ap 0 3"),
        c("GETRANGE ap -3 -1"),
        c("GETRANGE ap 0 -1"),
        c("GETRANGE ap 5 3"),
        c("GETRANGE ap 0 100"),
        c("GETRANGE ap -100 2"),
        c("GETRANGE ap -1 -5"),
        c("GETRANGE ap 100 200"),
        c("GETRANGE ap -9223372036854775808 9223372036854775807"),
        c("GETRANGE missing 0 -1"),
        c("GETRANGE ap a 1"),
        c("GETRANGE ap 0 b"),
        c("SET num 12345"),
        c("GETRANGE num 1 2"),
        c("SETRANGE sr 5 abc"),
        c("GET sr"),
        c("SETRANGE sr 0 XY"),
        c("GET sr"),
        c("SETRANGE sr -1 x"),
        c("SETRANGE sr 1 \"\""),
        c("SETRANGE missing_sr 3 \"\""),
        c("EXISTS missing_sr"),
        c("SETRANGE sr 536870912 x"),
        c("SETRANGE sr 9223372036854775807 x"),
        c("SETRANGE sr abc x"),
        c("SET srt hello EX 100"),
        c("SETRANGE srt 1 a"),
        c("TTL srt"),
        // Encodings.
        c("SET oi 12345"),
        c("OBJECT ENCODING oi"),
        c("SET oi2 -9223372036854775808"),
        c("OBJECT ENCODING oi2"),
        c("SET oi3 012"),
        c("OBJECT ENCODING oi3"),
        c("SET oe hello"),
        c("OBJECT ENCODING oe"),
        Step::Cmd(
            vec![b"SET".to_vec(), b"or".to_vec(), long.clone().into_bytes()],
            Check::Exact,
        ),
        c("OBJECT ENCODING or"),
        c("OBJECT ENCODING missing"),
        c("OBJECT ENCODING"),
        c("OBJECT FOO k"),
        c("OBJECT"),
        // Inline commands.
        Step::Raw(b"PING\r\n", 1),
        Step::Raw(b"SET il \"a b\"\r\nGET il\r\n", 2),
        Step::Raw(b"ECHO 'it\\'s' \"tab\\there\" \"\\x41\"\r\n", 1),
        Step::Raw(b"ECHO 'it''s'\r\n", 1),
        Step::Raw(b"SET q \"unbalanced\r\n", 1),
    ];
    s.extend([
        // The key space.
        c("FLUSHALL"),
        c("DBSIZE"),
        c("KEYS *"),
        c("MSET user:1 a user:2 b user:10 c other d h*llo e hallo f hello g"),
        c("SET empty-valued \"\""),
        c("DBSIZE"),
        ck("KEYS *", Check::Unordered),
        ck("KEYS user:*", Check::Unordered),
        ck("KEYS user:?", Check::Unordered),
        ck("KEYS h?llo", Check::Unordered),
        ck("KEYS h[ae]llo", Check::Unordered),
        ck("KEYS h[^e]llo", Check::Unordered),
        ck("KEYS h[a-f]llo", Check::Unordered),
        ck("KEYS h\\*llo", Check::Unordered),
        ck("KEYS *[", Check::Unordered),
        c("KEYS nomatch"),
        c("KEYS"),
        scan_all(""),
        scan_all("COUNT 2"),
        scan_all("MATCH user:*"),
        scan_all("MATCH h?llo COUNT 1"),
        scan_all("TYPE string"),
        scan_all("TYPE STRING COUNT 3"),
        scan_all("TYPE list"),
        scan_all("TYPE nosuchtype"),
        c("SCAN 0 COUNT 0"),
        c("SCAN 0 COUNT -1"),
        c("SCAN 0 COUNT abc"),
        c("SCAN abc"),
        c("SCAN -1x"),
        c("SCAN 0 FOO"),
        c("SCAN 0 MATCH"),
        c("SCAN 0 COUNT"),
        c("SCAN"),
        c("FLUSHDB"),
        c("DBSIZE"),
        c("SET a 1"),
        c("FLUSHDB ASYNC"),
        c("FLUSHDB FOO"),
        c("FLUSHDB SYNC"),
        c("FLUSHALL SYNC"),
        c("FLUSHALL a b"),
        c("DBSIZE a"),
        // Introspection and connection commands.
        c("AUTH x"),
        c("AUTH default x"),
        c("AUTH bob x"),
        c("AUTH a b c"),
        c("AUTH"),
        c("HELLO 4"),
        c("HELLO 1"),
        c("HELLO x"),
        c("HELLO 2 foo"),
        c("HELLO 2 SETNAME \"a b\""),
        c("HELLO 2 AUTH default"),
        c("HELLO 2 AUTH bob x"),
        c("CLIENT GETNAME"),
        c("CLIENT SETNAME n1"),
        c("CLIENT GETNAME"),
        c("CLIENT SETNAME \"\""),
        c("CLIENT GETNAME"),
        c("CLIENT SETNAME \"a b\""),
        c("CLIENT SETNAME"),
        c("CLIENT NO-EVICT on"),
        c("CLIENT NO-EVICT OFF"),
        c("CLIENT NO-EVICT maybe"),
        c("CLIENT NO-EVICT"),
        c("CLIENT FOO"),
        c("CLIENT"),
        c("CLIENT ID x"),
        ck("CLIENT ID", Check::Shape),
        ck("CLIENT INFO", Check::Shape),
        ck("CLIENT LIST", Check::Shape),
        ck("CLIENT LIST TYPE normal", Check::Shape),
        c("CLIENT LIST TYPE pubsub"),
        c("CLIENT LIST TYPE foo"),
        ck("CONFIG GET maxmemory", Check::MapKeys),
        ck("CONFIG GET maxclients", Check::MapKeys),
        c("CONFIG GET save"),
        c("CONFIG GET appendonly"),
        c("CONFIG GET databases"),
        c("CONFIG GET requirepass"),
        c("CONFIG GET timeout"),
        c("CONFIG GET nosuchparam"),
        c("CONFIG SET foo bar"),
        c("CONFIG SET timeout -1"),
        c("CONFIG SET timeout abc"),
        c("CONFIG SET save \"\""),
        c("CONFIG SET appendonly no"),
        c("CONFIG SET appendonly maybe"),
        c("CONFIG SET maxmemory abc"),
        c("CONFIG SET databases 2"),
        c("CONFIG SET timeout 0 timeout 1"),
        c("CONFIG SET timeout 0"),
        c("CONFIG SET maxmemory-policy foo"),
        c("CONFIG SET timeout"),
        c("CONFIG SET timeout 0 save"),
        c("CONFIG GET"),
        c("CONFIG FOO"),
        c("CONFIG"),
        c("CONFIG RESETSTAT"),
        ck("COMMAND COUNT", Check::Shape),
        c("COMMAND INFO nosuch"),
        ck("COMMAND INFO get", Check::Shape),
        c("COMMAND FOO"),
        ck("INFO", Check::Shape),
        ck("INFO keyspace", Check::Shape),
        c("RESET"),
        c("PING"),
        c("QUIT"),
    ]);
    s
}

/// Run under `requirepass secret`, starting in RESP2 (it switches to
/// RESP3 itself: `HELLO 3` needs authentication first).
fn auth_script() -> Vec<Step> {
    vec![
        c("GET k"),
        c("PING"),
        c("NOSUCH x"),
        c("GET"),
        c("CLIENT SETNAME x"),
        c("HELLO"),
        c("HELLO 3"),
        c("HELLO 3 AUTH default wrong"),
        c("AUTH wrong"),
        c("AUTH default wrong"),
        c("AUTH nobody secret"),
        c("AUTH a b c"),
        c("AUTH secret"),
        c("GET k"),
        c("SET k v"),
        c("RESET"),
        c("GET k"),
        ck("HELLO 2 AUTH default secret SETNAME me", Check::Hello),
        c("CLIENT GETNAME"),
        c("GET k"),
        ck("HELLO 3 AUTH default secret", Check::Hello),
        c("GET k"),
        c("MGET k nosuch"),
        c("CLIENT GETNAME"),
        c("RESET"),
        c("GET k"),
        c("AUTH default secret"),
        c("DEL k"),
        c("RESET"),
        c("QUIT"),
    ]
}

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
        Reply::Array(Some(items)) | Reply::Set(items) => {
            let mut v = items.clone();
            v.sort_by_key(|x| format!("{x:?}"));
            Reply::Array(Some(v))
        }
        other => other.clone(),
    }
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
    let Some(bin) = require_tool("redis-server") else {
        return;
    };
    let redis = RedisServer::start(&bin, &[]).await;
    let ours = TestServer::start().await;
    let script = strings_script();
    let mut diffs = run(&script, redis.addr, ours.addr, false).await;
    diffs.extend(run(&script, redis.addr, ours.addr, true).await);
    report(diffs);
    ours.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requirepass_matches_redis() {
    let Some(bin) = require_tool("redis-server") else {
        return;
    };
    let redis = RedisServer::start(&bin, &["--requirepass", "secret"]).await;
    let ours = TestServer::start_with(ServerConfig {
        requirepass: Some("secret".into()),
        ..Default::default()
    })
    .await;
    report(run(&auth_script(), redis.addr, ours.addr, false).await);
    ours.shutdown().await;
}
