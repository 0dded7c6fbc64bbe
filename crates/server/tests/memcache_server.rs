//! The memcached front end over real TCP: every command, the error paths
//! (the server stays up and other clients are unaffected), pipelining,
//! limits, the client cap, shutdown, unix sockets, and RESP/memcached
//! sharing one key space.

mod mc;

use mc::{resp_call, McClient, McServer};
use std::time::Duration;
use tiercache_engine::Store;
use tiercache_server::{serve_memcache, ListenAddr, Listener, ServerConfig};

/// The cas unique of `key` from a `gets`.
async fn cas_of(c: &mut McClient, key: &str) -> u64 {
    let out = c.script(&format!("gets {key}\n")).await;
    let header = out.lines().next().unwrap();
    header.split(' ').nth(4).unwrap().parse().unwrap()
}

#[tokio::test]
async fn storage_and_retrieval() {
    let server = McServer::start().await;
    let mut c = server.client().await;
    let script = "set a 5 0 3\nabc\nget a\nadd a 0 0 1\nx\nadd b 7 0 2\nbb\nreplace c 0 0 1\nx\n\
                  replace b 8 0 3\nbbb\nappend b 99 0 2\n++\nprepend b 99 0 2\n--\nappend nope 0 0 1\nx\n\
                  prepend nope 0 0 1\nx\nget a b nope\nset n 0 0 1 noreply\n1\nget n\n";
    assert_eq!(
        c.script(script).await,
        "STORED\r\nVALUE a 5 3\r\nabc\r\nEND\r\nNOT_STORED\r\nSTORED\r\nNOT_STORED\r\nSTORED\r\n\
         STORED\r\nSTORED\r\nNOT_STORED\r\nNOT_STORED\r\n\
         VALUE a 5 3\r\nabc\r\nVALUE b 8 7\r\n--bbb++\r\nEND\r\nVALUE n 0 1\r\n1\r\nEND\r\n"
    );
    // Values are bytes: CR, LF and NUL inside a value are data.
    c.send(b"set bin 4294967295 0 5\r\n\r\n\x00\r\n\r\n").await;
    c.send(b"get bin\r\n").await;
    assert_eq!(
        c.run(b"").await,
        b"STORED\r\nVALUE bin 4294967295 5\r\n\r\n\x00\r\n\r\nEND\r\n"
    );
    // An empty value and a multi-get of 100 keys.
    let mut script = String::from("set empty 0 0 0\n\nget empty\n");
    let keys: Vec<String> = (0..100).map(|i| format!("k{i}")).collect();
    for k in &keys {
        script.push_str(&format!("set {k} 0 0 {}\n{k}\n", k.len()));
    }
    script.push_str(&format!("get {}\n", keys.join(" ")));
    let out = c.script(&script).await;
    assert!(
        out.starts_with("STORED\r\nVALUE empty 0 0\r\n\r\nEND\r\n"),
        "{out}"
    );
    assert_eq!(out.matches("VALUE k").count(), 100);
    server.shutdown().await;
}

#[tokio::test]
async fn cas_uniques_and_compare_and_set() {
    let server = McServer::start().await;
    let mut c = server.client().await;
    assert_eq!(c.script("set k 0 0 1\nx\n").await, "STORED\r\n");
    let first = cas_of(&mut c, "k").await;
    assert_eq!(
        c.script(&format!("cas k 3 0 1 {first}\ny\n")).await,
        "STORED\r\n"
    );
    let second = cas_of(&mut c, "k").await;
    assert!(second > first, "a write changes the unique");
    // The old unique loses; a missing key is NOT_FOUND; noreply is silent.
    assert_eq!(
        c.script(&format!(
            "cas k 0 0 1 {first}\nz\ncas nope 0 0 1 {first}\nz\ncas k 0 0 1 {first} noreply\nz\nget k\n"
        ))
        .await,
        "EXISTS\r\nNOT_FOUND\r\nVALUE k 3 1\r\ny\r\nEND\r\n"
    );
    // touch keeps the unique (the data did not change), append changes it.
    assert_eq!(c.script("touch k 100\n").await, "TOUCHED\r\n");
    assert_eq!(cas_of(&mut c, "k").await, second);
    c.script("append k 0 0 1\n!\n").await;
    assert!(cas_of(&mut c, "k").await > second);
    // Meta: ms returns the unique it stored, C compares it.
    let out = c.script("ms m 2 c\nhi\n").await;
    let unique: u64 = out.trim().strip_prefix("HD c").unwrap().parse().unwrap();
    assert_eq!(
        c.script(&format!(
            "ms m 2 C{}\nho\nms m 2 C{unique}\nhe\nmg m v\n",
            unique + 1000
        ))
        .await,
        "EX\r\nHD\r\nVA 2\r\nhe\r\n"
    );
    assert_eq!(
        c.script(&format!("md m C{unique}\nmd m\nmd m\n")).await,
        "EX\r\nHD\r\nNF\r\n"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn incr_and_decr() {
    let server = McServer::start().await;
    let mut c = server.client().await;
    let script = "incr nope 1\nset n 5 0 2\n10\ndecr n 1\nget n\nincr n 90\ndecr n 1000\n\
                  set big 0 0 20\n18446744073709551615\nincr big 2\nset t 0 0 3\nabc\nincr t 1\n\
                  incr n x\nincr n -1\nincr n 1 noreply\nget n\nincr n\n";
    assert_eq!(
        c.script(script).await,
        "NOT_FOUND\r\nSTORED\r\n9\r\nVALUE n 5 2\r\n9 \r\nEND\r\n99\r\n0\r\nSTORED\r\n1\r\nSTORED\r\n\
         CLIENT_ERROR cannot increment or decrement non-numeric value\r\n\
         CLIENT_ERROR invalid numeric delta argument\r\nCLIENT_ERROR invalid numeric delta argument\r\n\
         VALUE n 5 2\r\n1 \r\nEND\r\nERROR\r\n"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn expiry_touch_and_gat() {
    let server = McServer::start().await;
    let mut c = server.client().await;
    let past = 1_000_000_000; // an absolute Unix time, long gone
    let future = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600;
    let script = format!(
        "set neg 0 -1 1\nx\nset past 0 {past} 1\nx\nset fut 0 {future} 1\nx\nset short 0 1 1\nx\n\
         set keep 0 1 1\nx\nget neg past fut\nmg fut t\n"
    );
    let out = c.script(&script).await;
    assert!(
        out.starts_with(
            "STORED\r\nSTORED\r\nSTORED\r\nSTORED\r\nSTORED\r\nVALUE fut 0 1\r\nx\r\nEND\r\nHD t"
        ),
        "{out}"
    );
    let ttl: i64 = out.trim().rsplit('t').next().unwrap().parse().unwrap();
    assert!((3590..=3600).contains(&ttl), "{out}");
    // gat and touch extend `keep`; `short` expires.
    assert_eq!(
        c.script("gats 100 keep nope\n")
            .await
            .lines()
            .next()
            .unwrap(),
        "VALUE keep 0 1 ".to_string() + &cas_of(&mut c, "keep").await.to_string()
    );
    assert_eq!(
        c.script("touch nope 10\ntouch keep 100 noreply\n").await,
        "NOT_FOUND\r\n"
    );
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(
        c.script("get short keep\nmg keep t v\n").await,
        "VALUE keep 0 1\r\nx\r\nEND\r\nVA 1 t99\r\nx\r\n"
    );
    // A touch or gat into the past removes the item (gat still shows it once).
    assert_eq!(
        c.script("gat -1 keep\nget keep\ntouch fut -1\nget fut\n")
            .await,
        "VALUE keep 0 1\r\nx\r\nEND\r\nEND\r\nTOUCHED\r\nEND\r\n"
    );
    assert_eq!(
        c.script("gat x keep\ntouch k x\ntouch k\n").await,
        "CLIENT_ERROR invalid exptime argument\r\nCLIENT_ERROR invalid exptime argument\r\nERROR\r\n"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn delete_and_flush_all() {
    let server = McServer::start().await;
    let mut c = server.client().await;
    let script = "set a 0 0 1\nx\nset b 0 0 1\nx\ndelete a\ndelete a\ndelete b 0 noreply\nget b\n\
                  delete b 5\ndelete\ndelete a b c d\n";
    assert_eq!(
        c.script(script).await,
        "STORED\r\nSTORED\r\nDELETED\r\nNOT_FOUND\r\nEND\r\n\
         CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\nERROR\r\nERROR\r\n"
    );
    assert_eq!(
        c.script("set a 0 0 1\nx\nflush_all\nget a\nflush_all x\nflush_all noreply\n")
            .await,
        "STORED\r\nOK\r\nEND\r\nCLIENT_ERROR invalid exptime argument\r\n"
    );
    // The flush reached the store too.
    server.engine.flush().await.unwrap();
    assert!(server.store.is_empty());
    // A delayed flush runs later; a newer flush_all replaces a pending one.
    assert_eq!(
        c.script("set a 0 0 1\nx\nflush_all 1\nget a\n").await,
        "STORED\r\nOK\r\nVALUE a 0 1\r\nx\r\nEND\r\n"
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(c.script("get a\n").await, "END\r\n");
    assert_eq!(
        c.script("flush_all 1\nflush_all 0\nset a 0 0 1\nx\n").await,
        "OK\r\nOK\r\nSTORED\r\n"
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(c.script("get a\n").await, "VALUE a 0 1\r\nx\r\nEND\r\n");
    server.shutdown().await;
}

#[tokio::test]
async fn meta_commands() {
    let server = McServer::start().await;
    let mut c = server.client().await;
    let script = "ms k 3 T0 F7 k O42 q\nabc\nmg k s v f t k O1 q\nmg nope v q\nmg nope v k Ox\n\
                  mg k\nms k 1 MA\nd\nms k 1 MP\n_\nmg k v\nms new 1 MR\nx\nms k 1 ME\nx\n\
                  ms k 1 MX\nx\nmd k q\nmd k q\nmg k v\n";
    assert_eq!(
        c.script(script).await,
        "VA 3 s3 f7 t-1 kk O1\r\nabc\r\nEN knope Ox\r\nHD\r\nHD\r\nHD\r\nVA 5\r\n_abcd\r\n\
         NS\r\nNS\r\nCLIENT_ERROR invalid mode for ms M token\r\nNF\r\nEN\r\n"
    );
    // ma: counters with autovivify, modes, quiet, cas.
    let script = "ma c\nma c N0 J10 v\nma c v\nma c MD D100 v\nma c q\nma c D-1\nma c MX\n\
                  ms s 1\nx\nma s\nma c v t\n";
    assert_eq!(
        c.script(script).await,
        "NF\r\nVA 2 W\r\n10\r\nVA 2\r\n11\r\nVA 1\r\n0\r\n\
         CLIENT_ERROR invalid or duplicate flag\r\nCLIENT_ERROR invalid mode for ma M token\r\n\
         HD\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\nVA 1 t-1\r\n2\r\n"
            .replace("VA 2 W", "VA 2")
    );
    // mg autovivify wins once, then the item exists.
    assert_eq!(
        c.script("mg lock N30 s\nmg lock N30 s\n").await,
        "HD s0 W\r\nHD s0 Z\r\n"
    );
    // Base64 keys: stored decoded, echoed encoded.
    assert_eq!(
        c.script("ms AAEC 2 b k\nhi\nmg AAEC b k v\nmg !!! b\nme AAEC b\n")
            .await
            .lines()
            .take(4)
            .collect::<Vec<_>>(),
        vec![
            "HD kAAEC b",
            "VA 2 kAAEC b",
            "hi",
            "CLIENT_ERROR error decoding key"
        ]
    );
    // Flag errors.
    assert_eq!(
        c.script("mg\nmg k v v\nmg k z\nms k\nms k x\nmg k O123456789012345678901234567890123\n")
            .await,
        "ERROR\r\nCLIENT_ERROR duplicate flag\r\nCLIENT_ERROR invalid flag\r\n\
         CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n\
         CLIENT_ERROR opaque token too long\r\n"
    );
    let me = c.script("me k\nset k 0 0 1\nx\nme k\n").await;
    assert!(
        me.starts_with("EN\r\nSTORED\r\nME k exp=-1 la=0 cas="),
        "{me}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn garbage_and_limits_keep_the_server_up() {
    let config = ServerConfig {
        limits: tiercache_server::Limits {
            max_bulk_len: 1024,
            ..Default::default()
        },
        ..Default::default()
    };
    let server = McServer::start_with(config).await;
    let mut bystander = server.client().await;
    assert_eq!(bystander.script("set safe 0 0 2\nok\n").await, "STORED\r\n");
    let mut c = server.client().await;
    let long_key = "k".repeat(251);
    let script = format!(
        "\nx\nfoo bar\nGET a\nset {long_key} 0 0 1\nx\nget a {long_key}\nset a 0 0 -1\n\
         set a 0 0 2147483647\nset a x 0 1\nset a 0 0 3\nabcde\n"
    );
    assert_eq!(
        c.script(&script).await,
        "ERROR\r\nERROR\r\nERROR\r\nERROR\r\nCLIENT_ERROR bad command line format\r\nERROR\r\n\
         CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n\
         CLIENT_ERROR bad command line format\r\nCLIENT_ERROR bad command line format\r\n\
         CLIENT_ERROR bad data chunk\r\nERROR\r\n"
    );
    // Over the value limit: answered at once, the bytes swallowed (never
    // buffered), the old value dropped, the connection still usable.
    assert_eq!(c.script("set big 0 0 1\nx\n").await, "STORED\r\n");
    let mut req = b"set big 0 0 100000\r\n".to_vec();
    c.send(&req).await;
    for _ in 0..100 {
        c.send(&[b'x'; 1000]).await;
    }
    req.clear();
    req.extend_from_slice(b"\r\nget big\r\nms big 5000 T0\r\n");
    req.extend_from_slice(&[b'y'; 5000]);
    req.extend_from_slice(b"\r\nset big 0 0 2\r\nok\r\n");
    assert_eq!(
        c.run(&req).await,
        b"SERVER_ERROR object too large for cache\r\nEND\r\n\
          SERVER_ERROR object too large for cache\r\nSTORED\r\n"
    );
    // A claimed length past any limit costs nothing: answered at once (the
    // connection then swallows that many bytes, as memcached does).
    let mut huge = server.client().await;
    huge.send(b"set huge 0 0 2147483640\r\n").await;
    assert_eq!(
        huge.read_line().await,
        "SERVER_ERROR object too large for cache\r\n"
    );
    drop(huge);
    assert_eq!(
        c.script("get big\n").await,
        "VALUE big 0 2\r\nok\r\nEND\r\n"
    );
    // A long line that is not a get closes that connection only, as memcached does.
    let mut doomed = server.client().await;
    doomed.send(&[b'z'; 3000]).await;
    assert_eq!(doomed.read_to_eof().await, b"");
    // So does the binary protocol's magic byte.
    let mut binary = server.client().await;
    binary.send(&[0x80, 0x0a, 0, 0, 0, 0, 0, 0]).await;
    assert_eq!(binary.read_to_eof().await, b"");
    // A long multi-get is fine.
    let keys = vec!["safe"; 1000].join(" ");
    let out = c.script(&format!("get {keys}\n")).await;
    assert_eq!(out.matches("VALUE safe").count(), 1000);
    assert_eq!(
        bystander.script("get safe\n").await,
        "VALUE safe 0 2\r\nok\r\nEND\r\n"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn split_reads_and_pipelining() {
    let server = McServer::start().await;
    let mut c = server.client().await;
    // Byte by byte: every state of the parser resumes.
    let script = b"set a 1 0 5\r\nhello\r\nms b 2 F3\r\nhi\r\nget a b\r\nmn\r\n";
    for &b in script {
        c.send(&[b]).await;
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(
        c.read_until_marker().await,
        b"STORED\r\nHD\r\nVALUE a 1 5\r\nhello\r\nVALUE b 3 2\r\nhi\r\nEND\r\n"
    );
    // 5000 pipelined requests in one write, answered in order.
    let mut req = Vec::new();
    for i in 0..2500 {
        req.extend_from_slice(
            format!("set key{i} {i} 0 {}\r\nv{i}\r\n", 1 + i.to_string().len()).as_bytes(),
        );
        req.extend_from_slice(format!("get key{i}\r\n").as_bytes());
    }
    let out = String::from_utf8(c.run(&req).await).unwrap();
    let mut expected = String::new();
    for i in 0..2500 {
        expected.push_str(&format!(
            "STORED\r\nVALUE key{i} {i} {}\r\nv{i}\r\nEND\r\n",
            1 + i.to_string().len()
        ));
    }
    assert_eq!(out, expected);
    server.shutdown().await;
}

/// Runs of `set` in one pipelined batch are written as one engine batch;
/// replies, final values, flags, expiry and the store's content must be
/// those of running them one by one.
#[tokio::test]
async fn pipelined_sets_act_like_sets_run_one_by_one() {
    let server = McServer::start().await;
    let mut c = server.client().await;
    c.script("set gone 0 0 1\nx\n").await;
    let out = c
        .script(concat!(
            "set a 1 0 1\n1\n",
            "set b 2 0 1\n2\n",
            "set a 3 0 1 noreply\n3\n",
            "get a\n",
            "set gone 0 -1 1\ny\n",
            "set c 4 100 1\n4\n",
            "set a 5 0 1\n5\n",
            "add a 0 0 1\nz\n",
            "set d 6 0 1\n6\n",
            "delete d\n",
            "set e 7 0 1\n7\n",
            "set b 8 0 1\n8\n",
            "get a b c d e gone\n",
        ))
        .await;
    assert_eq!(
        out,
        concat!(
            "STORED\r\nSTORED\r\n",
            "VALUE a 3 1\r\n3\r\nEND\r\n",
            "STORED\r\nSTORED\r\nSTORED\r\n",
            "NOT_STORED\r\n",
            "STORED\r\nDELETED\r\nSTORED\r\nSTORED\r\n",
            "VALUE a 5 1\r\n5\r\nVALUE b 8 1\r\n8\r\nVALUE c 4 1\r\n4\r\nVALUE e 7 1\r\n7\r\nEND\r\n",
        )
    );
    let ttl = server.engine.get(b"c").await.unwrap().unwrap().expires_at;
    assert!(ttl.is_some(), "c keeps its exptime");
    server.engine.flush().await.unwrap();
    let keys: Vec<bytes::Bytes> = ["a", "b", "gone", "d"]
        .iter()
        .map(|k| (*k).into())
        .collect();
    let stored = server.store.get_many(&keys).await.unwrap();
    assert_eq!(stored[0].as_ref().unwrap().value, "5");
    assert_eq!(stored[0].as_ref().unwrap().flags, 5);
    assert_eq!(stored[1].as_ref().unwrap().value, "8");
    assert!(stored[2].is_none(), "a negative exptime deletes");
    assert!(
        stored[3].is_none(),
        "the delete between two runs stays in order"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn stats_version_verbosity_quit() {
    let server = McServer::start().await;
    let mut c = server.client().await;
    c.script("set a 0 0 1\nx\nget a\nget b\n").await;
    let stats = c.script("stats\n").await;
    for name in [
        "pid",
        "uptime",
        "time",
        "version",
        "curr_connections",
        "total_connections",
        "cmd_get",
        "cmd_set",
        "get_hits",
        "get_misses",
        "curr_items",
        "total_items",
        "evictions",
        "bytes",
        "limit_maxbytes",
    ] {
        assert!(
            stats.contains(&format!("STAT {name} ")),
            "{name} missing: {stats}"
        );
    }
    assert!(
        stats.contains("STAT cmd_get 2\r\n") && stats.contains("STAT get_hits 1\r\n"),
        "{stats}"
    );
    assert!(stats.ends_with("END\r\n"));
    assert_eq!(
        c.script("stats reset\nstats nonsense\n").await,
        "RESET\r\nERROR\r\n"
    );
    assert!(c.script("stats\n").await.contains("STAT cmd_get 0\r\n"));
    assert!(c
        .script("stats settings\n")
        .await
        .contains("STAT item_size_max "));
    assert!(c
        .script("version\n")
        .await
        .starts_with("VERSION 1.6.0-tiercache-"));
    assert_eq!(
        c.script("verbosity 1\nverbosity\nverbosity x\nverbosity 1 noreply\n")
            .await,
        "OK\r\nERROR\r\nCLIENT_ERROR bad command line format\r\n"
    );
    c.send(b"get a\r\nquit\r\nget a\r\n").await;
    assert_eq!(c.read_to_eof().await, b"VALUE a 0 1\r\nx\r\nEND\r\n");
    server.shutdown().await;
}

#[tokio::test]
async fn both_protocols_share_one_key_space() {
    let server = McServer::start().await;
    let mut c = server.client().await;
    // RESP SET → memcached get, flags 0.
    assert_eq!(
        resp_call(server.resp_addr, &[b"SET", b"r", b"from-resp"]).await,
        b"+OK\r\n"
    );
    assert_eq!(
        c.script("get r\n").await,
        "VALUE r 0 9\r\nfrom-resp\r\nEND\r\n"
    );
    // memcached set (with flags) → RESP GET; a RESP SET resets the flags.
    assert_eq!(c.script("set m 42 0 7\nfrom-mc\n").await, "STORED\r\n");
    assert_eq!(
        resp_call(server.resp_addr, &[b"GET", b"m"]).await,
        b"$7\r\nfrom-mc\r\n"
    );
    resp_call(server.resp_addr, &[b"SET", b"m", b"again"]).await;
    assert_eq!(c.script("mg m f v\n").await, "VA 5 f0\r\nagain\r\n");
    // Counters across protocols; RESP INCR keeps memcached's flags.
    assert_eq!(
        c.script("set n 9 0 1\n5\nincr n 1\n").await,
        "STORED\r\n6\r\n"
    );
    assert_eq!(
        resp_call(server.resp_addr, &[b"INCR", b"n"]).await,
        b":7\r\n"
    );
    assert_eq!(c.script("get n\n").await, "VALUE n 9 1\r\n7\r\nEND\r\n");
    // A memcached delete is seen by RESP; a RESP EXPIRE by memcached.
    c.script("delete r\n").await;
    assert_eq!(
        resp_call(server.resp_addr, &[b"EXISTS", b"r"]).await,
        b":0\r\n"
    );
    resp_call(server.resp_addr, &[b"EXPIRE", b"n", b"500"]).await;
    assert_eq!(c.script("mg n t f\n").await, "HD t500 f9\r\n");
    server.shutdown().await;
}

#[tokio::test]
async fn the_client_cap_covers_memcache_and_shutdown_closes_connections() {
    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(1));
    let config = ServerConfig {
        shared_client_slots: Some(slots),
        ..Default::default()
    };
    let server = McServer::start_with(config).await;
    let mut first = server.client().await;
    assert_eq!(first.script("set a 0 0 1\nx\n").await, "STORED\r\n");
    // The one slot is taken (shared with RESP): both protocols refuse.
    let mut second = server.client().await;
    assert_eq!(
        second.read_to_eof().await,
        b"ERROR Too many open connections\r\n"
    );
    let refused = resp_call(server.resp_addr, &[b"PING"]).await;
    assert!(
        refused.starts_with(b"-ERR max number of clients"),
        "{refused:?}"
    );
    drop(first);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut third = server.client().await;
    assert_eq!(third.script("get a\n").await, "VALUE a 0 1\r\nx\r\nEND\r\n");
    // Shutdown returns although `third` stays connected and idle.
    server.shutdown().await;
    assert_eq!(third.read_to_eof().await, b"");
}

#[tokio::test]
async fn unix_socket_listener() {
    let dir = tempfile::tempdir().unwrap();
    let engine = std::sync::Arc::new(
        tiercache_engine::Engine::builder(dir.path())
            .build()
            .await
            .unwrap(),
    );
    let path = dir.path().join("mc.sock");
    let listener = Listener::bind(&ListenAddr::Unix(path.clone()))
        .await
        .unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let handle = tokio::spawn(serve_memcache(
        listener,
        engine.clone(),
        ServerConfig::default(),
        async {
            let _ = rx.await;
        },
    ));
    let mut s = tokio::net::UnixStream::connect(&path).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    s.write_all(b"set u 0 0 2\r\nok\r\nget u\r\nquit\r\n")
        .await
        .unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    assert_eq!(out, b"STORED\r\nVALUE u 0 2\r\nok\r\nEND\r\n");
    let _ = tx.send(());
    handle.await.unwrap().unwrap();
    assert!(!path.exists(), "the socket file is removed at shutdown");
    engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_half_sent_request_is_closed_after_the_partial_request_timeout() {
    let server = McServer::start_with(ServerConfig {
        partial_request_timeout: Duration::from_millis(300),
        ..Default::default()
    })
    .await;
    let mut quiet = server.client().await;
    assert_eq!(quiet.script("set a 0 0 1\nx\n").await, "STORED\r\n");
    let mut stalled = server.client().await;
    let started = std::time::Instant::now();
    // A data block promising 100 bytes, of which 3 arrive.
    stalled.send(b"set b 0 0 100\r\nabc").await;
    assert!(
        stalled.read_to_eof().await.is_empty(),
        "closed without a reply"
    );
    assert!(started.elapsed() >= Duration::from_millis(250));
    // A client between requests is not affected (no idle timeout set).
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(quiet.script("get b\n").await, "END\r\n");
    server.shutdown().await;
}

#[tokio::test]
async fn an_idle_client_is_closed_after_the_idle_timeout() {
    let server = McServer::start_with(ServerConfig {
        idle_timeout: Duration::from_millis(300),
        ..Default::default()
    })
    .await;
    let mut idle = server.client().await;
    assert_eq!(
        idle.script("version\n").await.split(' ').next(),
        Some("VERSION")
    );
    let started = std::time::Instant::now();
    assert!(
        idle.read_to_eof().await.is_empty(),
        "closed without a reply"
    );
    assert!(started.elapsed() >= Duration::from_millis(250));
    // The server is still up for others.
    let mut other = server.client().await;
    assert_eq!(other.script("set a 0 0 1\nx\n").await, "STORED\r\n");
    server.shutdown().await;
}

#[tokio::test]
async fn busy_polling_serves_requests_and_stops_with_the_server() {
    let poll = tiercache_server::BusyPoll::start(Duration::from_millis(5));
    let server = McServer::start_with(ServerConfig {
        busy_poll: Some(poll.clone()),
        ..Default::default()
    })
    .await;
    let mut c = server.client().await;
    for i in 0..20 {
        assert_eq!(
            c.script(&format!("set k{i} 0 0 1\n{}\n", i % 10)).await,
            "STORED\r\n"
        );
    }
    assert_eq!(c.script("get k13\n").await, "VALUE k13 0 1\r\n3\r\nEND\r\n");
    assert!(poll.spins() > 0, "requests must start the polling");
    // Polling or parked, the poller does not hold shutdown up.
    tokio::time::timeout(Duration::from_secs(10), server.shutdown())
        .await
        .expect("shutdown with busy polling on");
}
