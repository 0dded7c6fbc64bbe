//! The real binary when its write-back journal cannot grow (a full disk,
//! here a file-size limit): every write of a batch whose commit fails gets
//! an error instead of its acknowledgement, on both protocols, `noreply`
//! included (it stays silent); the server stays up and keeps serving reads;
//! once the disk has room again, the writes held back are journaled in
//! order and survive a `kill -9`.

mod support;

use support::{McText, Reply, Server};

const CONFIG: &str = r#"
[namespace.default]
tiers = ["main"]
write = "back"
# No flush during the test: a flush rotates the journal into a new file,
# which would have room again.
flush_interval = "1h"

[store.main]
type = "sqlite"
path = "tiercache.db"
"#;

/// The journal starts with a 1 MiB segment and doubles it when full: a
/// 1.5 MiB file limit lets the first segment be created and nothing grow.
const FILE_LIMIT: u64 = 3 << 19;
/// Two of these fill the first segment.
const BIG: usize = 700 << 10;

fn start(dir: &std::path::Path, limit: Option<u64>) -> Server {
    let config = dir.join("tiercache.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let args = ["--config", config.to_str().unwrap()];
    match limit {
        Some(bytes) => Server::start_with_file_size_limit(&dir.join("data"), &args, bytes),
        None => Server::start_with_memcache_and(&dir.join("data"), &args),
    }
}

fn journal_error(reply: &Reply) -> bool {
    matches!(reply, Reply::Error(e) if e.starts_with("ERR write-back journal") && e.contains("File too large"))
}

#[test]
fn writes_that_cannot_be_journaled_are_refused_and_kept_once_there_is_room() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), Some(FILE_LIMIT));
    let mut c = server.client();
    let mut mc = McText::connect(server.memcache_port.unwrap());
    let big1 = vec![b'1'; BIG];
    let big2 = vec![b'2'; BIG];

    assert_eq!(c.call(&[b"SET", b"a", b"1"]), Reply::Simple("OK".into()));
    assert_eq!(
        c.call(&[b"SET", b"big1", &big1]),
        Reply::Simple("OK".into())
    );

    // The second big value needs a bigger segment, which cannot be had.
    // It and every write after it are refused; the first SET is refused
    // too if it was read in the same batch (its commit is the batch's),
    // acknowledged if the server read it alone before the big value.
    let replies = c.pipeline(&[
        &[b"SET", b"b", b"1"],
        &[b"SET", b"big2", &big2],
        &[b"SET", b"c", b"1"],
        &[b"INCR", b"n"],
    ]);
    assert!(
        replies[0] == Reply::Simple("OK".into()) || journal_error(&replies[0]),
        "{:?}",
        replies[0]
    );
    assert!(replies[1..].iter().all(journal_error), "{replies:?}");

    // The connection and the server go on: reads are served...
    assert_eq!(c.call(&[b"PING"]), Reply::Simple("PONG".into()));
    assert_eq!(c.call(&[b"GET", b"a"]), Reply::Bulk(Some(b"1".to_vec())));
    // ...and later writes queue behind the held-back ones, refused too.
    // A batch whose commit fails answers nothing but the error, not even
    // for its reads.
    let replies = c.pipeline(&[&[b"SET", b"d", b"1"], &[b"GET", b"a"], &[b"INCR", b"n"]]);
    assert!(replies.iter().all(journal_error), "{replies:?}");

    mc.send(b"set m 5 0 1\r\nx\r\n").unwrap();
    let line = mc.line().unwrap();
    assert!(
        line.starts_with("SERVER_ERROR write-back journal") && line.contains("File too large"),
        "{line}"
    );
    // A `noreply` write stays silent even when it fails. The batch's one
    // reply (the `version`'s) is the error; the next is a `version` read
    // in a batch of its own.
    mc.send(b"set q 0 0 1 noreply\r\ny\r\nversion\r\n").unwrap();
    assert!(mc
        .line()
        .unwrap()
        .starts_with("SERVER_ERROR write-back journal"));
    mc.send(b"version\r\n").unwrap();
    let line = mc.line().unwrap();
    assert!(line.starts_with("VERSION "), "{line}");
    assert!(
        server.log().contains("commit failed; replying with errors"),
        "the failure is logged"
    );

    // Room again: the next commit journals everything held back, in order.
    server.lift_file_size_limit();
    assert_eq!(c.call(&[b"SET", b"e", b"1"]), Reply::Simple("OK".into()));
    mc.send(b"set m2 0 0 1\r\nz\r\n").unwrap();
    assert_eq!(mc.line().unwrap(), "STORED");

    // kill -9: only the journal can bring the writes back (no flush ran).
    server.kill9();
    let server = start(dir.path(), None);
    let mut c = server.client();
    let mut mc = McText::connect(server.memcache_port.unwrap());
    for key in ["a", "b", "c", "d", "e"] {
        assert_eq!(
            c.call(&[b"GET", key.as_bytes()]),
            Reply::Bulk(Some(b"1".to_vec())),
            "{key}"
        );
    }
    assert_eq!(c.call(&[b"GET", b"big1"]), Reply::Bulk(Some(big1)));
    assert_eq!(c.call(&[b"GET", b"big2"]), Reply::Bulk(Some(big2)));
    assert_eq!(c.call(&[b"GET", b"n"]), Reply::Bulk(Some(b"2".to_vec())));
    assert_eq!(mc.get("m"), Some((5, b"x".to_vec())));
    assert_eq!(mc.get("q"), Some((0, b"y".to_vec())));
    assert_eq!(mc.get("m2"), Some((0, b"z".to_vec())));
}
