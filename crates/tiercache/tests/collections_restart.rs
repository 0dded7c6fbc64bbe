//! Redis hashes, lists, sets, sorted sets and streams survive restarts of the real server on the
//! default configuration (write-back, SQLite): through SQLite after a
//! SIGTERM flush, and through the write-back journal after a SIGKILL
//! before any flush. `TYPE` names each type afterwards, and hash field
//! order, list order, intset order, scores, and a stream's entries,
//! deletions and consumer group (last ID, pending entries) are kept.

mod support;

use std::time::Duration;
use support::{Client, Reply, Server};

fn bulk(s: &str) -> Reply {
    Reply::Bulk(Some(s.as_bytes().to_vec()))
}

/// Writes the hash, list, set and sorted set every test checks, and a string for contrast.
fn write_collections(server: &Server) {
    let mut client = server.client();
    let replies = client.pipeline(&[
        &[
            b"HSET", b"user:1", b"name", b"ada", b"lang", b"en", b"n", b"1",
        ],
        &[b"HINCRBY", b"user:1", b"n", b"41"],
        &[b"HSET", b"user:1", b"name", b"Ada"],
        &[b"HSET", b"gone", b"f", b"v"],
        &[b"HDEL", b"gone", b"f"],
        &[b"PEXPIRE", b"user:1", b"3600000"],
        &[b"SET", b"plain", b"\xff\x74\x63\x02 looks like an envelope"],
        &[b"RPUSH", b"queue", b"a", b"b", b"c"],
        &[b"LPOP", b"queue"],
        &[b"SADD", b"tags", b"30", b"1", b"x"],
        &[b"SREM", b"tags", b"x"],
        &[
            b"ZADD", b"board", b"2.5", b"bo", b"1", b"al", b"-inf", b"cy",
        ],
        &[b"XADD", b"events", b"1-1", b"kind", b"login"],
        &[b"XADD", b"events", b"2-1", b"kind", b"click", b"x", b"7"],
        &[b"XADD", b"events", b"3-1", b"kind", b"logout"],
        &[b"XDEL", b"events", b"2-1"],
        &[b"XGROUP", b"CREATE", b"events", b"audit", b"0"],
        &[
            b"XREADGROUP",
            b"GROUP",
            b"audit",
            b"ann",
            b"COUNT",
            b"1",
            b"STREAMS",
            b"events",
            b">",
        ],
    ]);
    assert_eq!(
        replies,
        [
            Reply::Int(3),
            Reply::Int(42),
            Reply::Int(0),
            Reply::Int(1),
            Reply::Int(1),
            Reply::Int(1),
            Reply::Simple("OK".into()),
            Reply::Int(3),
            bulk("a"),
            Reply::Int(3),
            Reply::Int(1),
            Reply::Int(3),
            bulk("1-1"),
            bulk("2-1"),
            bulk("3-1"),
            Reply::Int(1),
            Reply::Simple("OK".into()),
            Reply::Array(Some(vec![Reply::Array(Some(vec![
                bulk("events"),
                Reply::Array(Some(vec![Reply::Array(Some(vec![
                    bulk("1-1"),
                    Reply::Array(Some(vec![bulk("kind"), bulk("login")])),
                ]))])),
            ]))])),
        ]
    );
}

fn check_collections(server: &Server, how: &str) {
    let mut client = server.client();
    assert_eq!(
        client.call(&[b"HGETALL", b"user:1"]),
        Reply::Array(Some(vec![
            bulk("name"),
            bulk("Ada"),
            bulk("lang"),
            bulk("en"),
            bulk("n"),
            bulk("42"),
        ])),
        "{how}: fields, values and their order"
    );
    assert_eq!(
        client.call(&[b"TYPE", b"user:1"]),
        Reply::Simple("hash".into()),
        "{how}"
    );
    let Reply::Int(ttl) = client.call(&[b"TTL", b"user:1"]) else {
        panic!("{how}: TTL failed")
    };
    assert!(
        (3590..=3600).contains(&ttl),
        "{how}: the expiry survives ({ttl})"
    );
    assert_eq!(client.call(&[b"EXISTS", b"gone"]), Reply::Int(0), "{how}");
    assert_eq!(
        client.call(&[b"TYPE", b"plain"]),
        Reply::Simple("string".into()),
        "{how}"
    );
    assert_eq!(
        client.call(&[b"GET", b"plain"]),
        Reply::Bulk(Some(b"\xff\x74\x63\x02 looks like an envelope".to_vec())),
        "{how}"
    );
    assert!(
        matches!(client.call(&[b"GET", b"user:1"]), Reply::Error(e) if e.starts_with("WRONGTYPE")),
        "{how}: still a hash, not a string"
    );
    assert_eq!(
        client.call(&[b"LRANGE", b"queue", b"0", b"-1"]),
        Reply::Array(Some(vec![bulk("b"), bulk("c")])),
        "{how}: list order"
    );
    assert_eq!(
        client.call(&[b"TYPE", b"queue"]),
        Reply::Simple("list".into()),
        "{how}"
    );
    assert_eq!(
        client.call(&[b"SMEMBERS", b"tags"]),
        Reply::Array(Some(vec![bulk("1"), bulk("30")])),
        "{how}: set members"
    );
    assert_eq!(
        client.call(&[b"TYPE", b"tags"]),
        Reply::Simple("set".into()),
        "{how}"
    );
    assert_eq!(
        client.call(&[b"ZRANGE", b"board", b"0", b"-1", b"WITHSCORES"]),
        Reply::Array(Some(
            ["cy", "-inf", "al", "1", "bo", "2.5"].map(bulk).to_vec()
        )),
        "{how}: sorted set order and scores"
    );
    let entry = |id: &str, kind: &str| {
        Reply::Array(Some(vec![
            bulk(id),
            Reply::Array(Some(vec![bulk("kind"), bulk(kind)])),
        ]))
    };
    assert_eq!(
        client.call(&[b"XRANGE", b"events", b"-", b"+"]),
        Reply::Array(Some(vec![entry("1-1", "login"), entry("3-1", "logout")])),
        "{how}: stream entries, the deleted one gone"
    );
    assert_eq!(
        client.call(&[b"TYPE", b"events"]),
        Reply::Simple("stream".into()),
        "{how}"
    );
    let pending = client.call(&[b"XPENDING", b"events", b"audit"]);
    assert_eq!(
        pending,
        Reply::Array(Some(vec![
            Reply::Int(1),
            bulk("1-1"),
            bulk("1-1"),
            Reply::Array(Some(vec![Reply::Array(Some(vec![bulk("ann"), bulk("1")]))])),
        ])),
        "{how}: the group's pending entry"
    );
    // The group resumes after its last delivered ID, and the stream after
    // its last ID.
    assert_eq!(
        client.call(&[
            b"XREADGROUP",
            b"GROUP",
            b"audit",
            b"ann",
            b"STREAMS",
            b"events",
            b">"
        ]),
        Reply::Array(Some(vec![Reply::Array(Some(vec![
            bulk("events"),
            Reply::Array(Some(vec![entry("3-1", "logout")])),
        ]))])),
        "{how}: the group's last delivered ID"
    );
    assert!(
        matches!(client.call(&[b"XADD", b"events", b"3-1", b"a", b"b"]), Reply::Error(e) if e.contains("equal or smaller")),
        "{how}: the stream's last ID"
    );
}

#[test]
fn collections_survive_a_sigterm_through_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data);
    write_collections(&server);
    assert!(server.sigterm(Duration::from_secs(10)).success());
    // The SQLite file holds the hash with its kind.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        use tiercache::Store;
        let store = tiercache::stores::SqliteStore::open("check", &data.join("tiercache.db"), "kv")
            .unwrap();
        let keys = [
            "user:1".into(),
            "queue".into(),
            "tags".into(),
            "board".into(),
            "events".into(),
        ];
        let got = store.get_many(&keys).await.unwrap();
        let kinds: Vec<_> = got.iter().map(|e| e.as_ref().unwrap().kind).collect();
        use tiercache::engine::ValueKind;
        assert_eq!(
            kinds,
            [
                ValueKind::Hash,
                ValueKind::List,
                ValueKind::Set,
                ValueKind::ZSet,
                ValueKind::Stream
            ]
        );
    });
    let server = Server::start(&data);
    check_collections(&server, "after SIGTERM");
    assert!(server.sigterm(Duration::from_secs(10)).success());
}

#[test]
fn collections_survive_a_sigkill_through_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data);
    write_collections(&server);
    // Acknowledged, so in the journal; killed before the flusher ran
    // (its interval is longer than this test's writes).
    server.kill9();
    let server = Server::start(&data);
    check_collections(&server, "after SIGKILL");
    assert!(server.sigterm(Duration::from_secs(10)).success());
}

/// A stream written many times between flushes is journaled as patches
/// (the journal stays small); a SIGKILL then loses none of it: replay
/// applies every patch, and the groups' state comes back with it.
#[test]
fn a_stream_journaled_as_patches_survives_a_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data);
    let mut client = server.client();
    let mut batch: Vec<Vec<Vec<u8>>> = Vec::new();
    for i in 1..=2000u32 {
        batch.push(vec![
            b"XADD".to_vec(),
            b"log".to_vec(),
            b"MAXLEN".to_vec(),
            b"~".to_vec(),
            b"500".to_vec(),
            format!("{i}-0").into_bytes(),
            b"n".to_vec(),
            i.to_string().into_bytes(),
        ]);
        if i % 7 == 0 {
            batch.push(
                ["XDEL", "log", &format!("{}-0", i - 3)]
                    .map(|s| s.as_bytes().to_vec())
                    .to_vec(),
            );
        }
        if i == 1000 {
            batch.push(
                ["XGROUP", "CREATE", "log", "g", "0"]
                    .map(|s| s.as_bytes().to_vec())
                    .to_vec(),
            );
        }
        if i > 1000 && i % 10 == 0 {
            batch.push(
                [
                    "XREADGROUP",
                    "GROUP",
                    "g",
                    "c",
                    "COUNT",
                    "3",
                    "STREAMS",
                    "log",
                    ">",
                ]
                .map(|s| s.as_bytes().to_vec())
                .to_vec(),
            );
        }
    }
    pipeline_all(&mut client, &batch, 100);
    let before = [
        client.call(&[b"XRANGE", b"log", b"-", b"+"]),
        client.call(&[b"XINFO", b"STREAM", b"log"]),
        client.call(&[b"XPENDING", b"log", b"g"]),
        client.call(&[b"XINFO", b"GROUPS", b"log"]),
    ];
    let Reply::Array(Some(entries)) = &before[0] else {
        panic!("{:?}", before[0])
    };
    assert!(
        entries.len() > 400,
        "trimmed to about 500 ({})",
        entries.len()
    );
    let journal = dir_bytes(&data.join("journal"));
    server.kill9();
    // 2,000 whole copies of a ~10 KB stream would be tens of MB.
    assert!(journal < 3 << 20, "journal holds {journal} bytes");
    let server = Server::start(&data);
    let mut client = server.client();
    let after = [
        client.call(&[b"XRANGE", b"log", b"-", b"+"]),
        client.call(&[b"XINFO", b"STREAM", b"log"]),
        client.call(&[b"XPENDING", b"log", b"g"]),
        client.call(&[b"XINFO", b"GROUPS", b"log"]),
    ];
    assert_eq!(after, before);
    assert!(server.sigterm(Duration::from_secs(10)).success());
}

/// Sends `batch` in pipelines of `chunk` commands, asserting no reply is an
/// error.
fn pipeline_all(client: &mut Client, batch: &[Vec<Vec<u8>>], chunk: usize) {
    for chunk in batch.chunks(chunk) {
        let args: Vec<Vec<&[u8]>> = chunk
            .iter()
            .map(|c| c.iter().map(|a| a.as_slice()).collect())
            .collect();
        let args: Vec<&[&[u8]]> = args.iter().map(|a| a.as_slice()).collect();
        for reply in client.pipeline(&args) {
            assert!(!matches!(reply, Reply::Error(_)), "{reply:?}");
        }
    }
}

/// Bytes of the files under `dir`, recursively.
fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| {
                    let p = e.path();
                    if p.is_dir() {
                        dir_bytes(&p)
                    } else {
                        e.metadata().map_or(0, |m| m.len())
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

/// A deep queue pushed, popped and moved (`LMOVE`, two keys at once)
/// thousands of times between flushes is journaled as patches (each push
/// or pop, not the queue); a SIGKILL then loses none of it.
#[test]
fn a_queue_journaled_as_patches_survives_a_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data);
    let mut client = server.client();
    let mut batch: Vec<Vec<Vec<u8>>> = Vec::new();
    for i in 0..6000u32 {
        let job = format!("job-{i}-{}", "p".repeat((i % 50) as usize));
        batch.push(vec![b"LPUSH".to_vec(), b"q".to_vec(), job.into_bytes()]);
        if i % 3 == 0 {
            batch.push(vec![b"RPOP".to_vec(), b"q".to_vec()]);
        }
        if i % 5 == 0 {
            batch.push(
                ["LMOVE", "q", "done", "RIGHT", "LEFT"]
                    .map(|s| s.as_bytes().to_vec())
                    .to_vec(),
            );
        }
        if i % 1000 == 999 {
            batch.push(vec![
                b"LSET".to_vec(),
                b"q".to_vec(),
                b"5".to_vec(),
                b"edited".to_vec(),
            ]);
        }
    }
    pipeline_all(&mut client, &batch, 200);
    let before = client.call(&[b"LRANGE", b"q", b"0", b"-1"]);
    let Reply::Array(Some(items)) = &before else {
        panic!("{before:?}")
    };
    let done = client.call(&[b"LRANGE", b"done", b"0", b"-1"]);
    let Reply::Array(Some(moved)) = &done else {
        panic!("{done:?}")
    };
    // 6,000 pushed, 2,000 popped; the first move found the queue empty.
    assert_eq!((items.len(), moved.len()), (2801, 1199));
    let journal = dir_bytes(&data.join("journal"));
    server.kill9();
    // 8,000 whole copies of a queue of up to 4,000 elements would be
    // hundreds of MB.
    assert!(journal < 8 << 20, "journal holds {journal} bytes");
    let server = Server::start(&data);
    let mut client = server.client();
    assert_eq!(client.call(&[b"LRANGE", b"q", b"0", b"-1"]), before);
    assert_eq!(client.call(&[b"LRANGE", b"done", b"0", b"-1"]), done);
    assert_eq!(client.call(&[b"LLEN", b"q"]), Reply::Int(2801));
    assert!(server.sigterm(Duration::from_secs(10)).success());
}

/// A big hash, set and sorted set written thousands of times between
/// flushes are journaled as patches (each field or member written, not
/// the collection); a SIGKILL then loses none of it, order included.
#[test]
fn big_hashes_sets_and_sorted_sets_journaled_as_patches_survive_a_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data);
    let mut client = server.client();
    let cmd = |parts: &[&str]| parts.iter().map(|s| s.as_bytes().to_vec()).collect();
    let mut batch: Vec<Vec<Vec<u8>>> = Vec::new();
    for i in 0..3000u32 {
        let n = (i * 7919 % 1500).to_string();
        let field = format!("field:{n}");
        let member = format!("member:{n}");
        batch.push(cmd(&["HSET", "h", &field, &i.to_string()]));
        batch.push(cmd(&["SADD", "s", &member]));
        batch.push(cmd(&["ZADD", "z", &(i % 97).to_string(), &member]));
        match i % 10 {
            0 => {
                let gone = format!("field:{}", i % 1500);
                batch.push(cmd(&["HDEL", "h", &gone]));
                batch.push(cmd(&["SREM", "s", &format!("member:{}", i % 1500)]));
                batch.push(cmd(&["ZREM", "z", &format!("member:{}", i % 1500)]));
            }
            3 => {
                batch.push(cmd(&["HINCRBY", "h", "counter", "3"]));
                batch.push(cmd(&["ZINCRBY", "z", "2.5", &member]));
            }
            7 => {
                batch.push(cmd(&["ZPOPMIN", "z"]));
                batch.push(cmd(&["ZREMRANGEBYSCORE", "z", "95", "96"]));
            }
            _ => {}
        }
    }
    pipeline_all(&mut client, &batch, 300);
    let reads: [&[&[u8]]; 3] = [
        &[b"HGETALL", b"h"],
        &[b"SMEMBERS", b"s"],
        &[b"ZRANGE", b"z", b"0", b"-1", b"WITHSCORES"],
    ];
    let before: Vec<Reply> = reads.iter().map(|r| client.call(r)).collect();
    for reply in &before {
        let Reply::Array(Some(items)) = reply else {
            panic!("{reply:?}")
        };
        assert!(items.len() > 1000, "{} items", items.len());
    }
    let journal = dir_bytes(&data.join("journal"));
    server.kill9();
    // 3,000 whole copies of each of three ~30 KB collections would be
    // hundreds of MB.
    assert!(journal < 8 << 20, "journal holds {journal} bytes");
    let server = Server::start(&data);
    let mut client = server.client();
    for (read, before) in reads.iter().zip(&before) {
        assert_eq!(&client.call(read), before);
    }
    assert!(server.sigterm(Duration::from_secs(10)).success());
}
