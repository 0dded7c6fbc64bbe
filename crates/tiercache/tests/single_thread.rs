//! `tiercache serve` with one worker thread (as under `taskset -c 0`) runs on
//! tokio's single-threaded scheduler. Everything that leaves the runtime
//! thread must still work there: SQLite reads on the blocking pool,
//! write-back flushes on the store's writer thread (which runs at a lower
//! priority), both protocols, a clean shutdown that flushes.

mod support;

use std::time::Duration;
use support::{McText, Reply, Server};

const ONE_WORKER: &[(&str, &str)] = &[("TOKIO_WORKER_THREADS", "1")];

#[test]
fn one_worker_thread_serves_both_protocols_and_reads_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start_with_env(&data, &[], ONE_WORKER);
    assert!(
        server.log().contains("single-threaded scheduler"),
        "expected the single-threaded scheduler; log: {}",
        server.log()
    );
    let mut c = server.client();
    for i in 0..500 {
        let k = format!("k{i}");
        let v = format!("v{i}");
        assert_eq!(
            c.call(&[b"SET", k.as_bytes(), v.as_bytes()]),
            Reply::Simple("OK".into())
        );
    }
    let mut mc = McText::connect(server.memcache_port.unwrap());
    mc.send(b"set m1 7 0 2\r\nhi\r\n").unwrap();
    assert_eq!(mc.line().unwrap(), "STORED");
    assert_eq!(mc.get("k7"), Some((0, b"v7".to_vec())));
    #[cfg(target_os = "linux")]
    {
        let pid = server.child.id();
        let server_nice = nice_of(&format!("/proc/{pid}/stat")).unwrap();
        assert_eq!(
            writer_thread_nice(pid),
            Some((server_nice + i64::from(tiercache_config::DEFAULT_WRITE_NICE)).min(19)),
            "the write-back flush runs on its own thread, write_nice steps below the server"
        );
    }
    // SIGTERM flushes the write-back queue into SQLite and exits 0.
    assert!(server.sigterm(Duration::from_secs(10)).success());

    // A fresh server starts with an empty memory tier: every read below
    // goes to SQLite through the blocking pool.
    let server = Server::start_with_env(&data, &[], ONE_WORKER);
    let mut c = server.client();
    for i in (0..500).step_by(7) {
        let k = format!("k{i}");
        assert_eq!(
            c.call(&[b"GET", k.as_bytes()]),
            Reply::Bulk(Some(format!("v{i}").into_bytes()))
        );
    }
    assert_eq!(c.call(&[b"GET", b"absent"]), Reply::Bulk(None));
    assert_eq!(c.call(&[b"DBSIZE"]), Reply::Int(501));
    let mut mc = McText::connect(server.memcache_port.unwrap());
    assert_eq!(mc.get("m1"), Some((7, b"hi".to_vec())));
    assert!(server.sigterm(Duration::from_secs(10)).success());
}

#[test]
fn busy_polling_serves_both_protocols_and_sleeps_when_idle() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("busy.toml");
    std::fs::write(&config, "[server]\nbusy_poll = \"200us\"\n").unwrap();
    let server = Server::start_with_env(
        &dir.path().join("data"),
        &["--config", config.to_str().unwrap()],
        ONE_WORKER,
    );
    assert!(
        server.log().contains("busy polling after requests") && server.log().contains("200µs"),
        "log: {}",
        server.log()
    );
    let mut c = server.client();
    for i in 0..200 {
        let (k, v) = (format!("k{i}"), format!("v{i}"));
        assert_eq!(
            c.call(&[b"SET", k.as_bytes(), v.as_bytes()]),
            Reply::Simple("OK".into())
        );
    }
    let mut mc = McText::connect(server.memcache_port.unwrap());
    assert_eq!(mc.get("k42"), Some((0, b"v42".to_vec())));
    #[cfg(target_os = "linux")]
    {
        // Long past the window, the thread sleeps: over a second without
        // requests the process uses a small fraction of a core (polling
        // all along would use all of it).
        std::thread::sleep(Duration::from_millis(200));
        let pid = server.child.id();
        let before = cpu_ticks(pid);
        std::thread::sleep(Duration::from_secs(1));
        let used = cpu_ticks(pid) - before;
        assert!(
            used < 30,
            "{used} clock ticks (of ~100 per second) in a second without requests"
        );
    }
    assert!(server.sigterm(Duration::from_secs(10)).success());
}

#[test]
fn busy_polling_is_on_by_default_on_one_worker_thread_only() {
    let dir = tempfile::tempdir().unwrap();
    let one = Server::start_with_env(&dir.path().join("one"), &[], ONE_WORKER);
    assert!(
        one.log().contains("busy polling after requests") && one.log().contains("10µs"),
        "\"auto\" on one worker: log: {}",
        one.log()
    );
    let mut c = one.client();
    assert_eq!(c.call(&[b"SET", b"k", b"v"]), Reply::Simple("OK".into()));
    assert!(one.sigterm(Duration::from_secs(10)).success());

    let two = Server::start_with_env(
        &dir.path().join("two"),
        &[],
        &[("TOKIO_WORKER_THREADS", "2")],
    );
    let mut c = two.client();
    assert_eq!(c.call(&[b"SET", b"k", b"v"]), Reply::Simple("OK".into()));
    assert!(
        !two.log().contains("busy polling"),
        "\"auto\" on two workers: log: {}",
        two.log()
    );
    assert!(two.sigterm(Duration::from_secs(10)).success());
}

/// User plus system clock ticks of every thread of `pid` so far.
#[cfg(target_os = "linux")]
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name, which is in parentheses.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 here.
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

/// Niceness of the server's `sqlite-writer` thread, once it exists (the
/// first flush starts it: `flush_interval` is 1 s by default).
#[cfg(target_os = "linux")]
fn writer_thread_nice(pid: u32) -> Option<i64> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        for task in std::fs::read_dir(format!("/proc/{pid}/task"))
            .ok()?
            .flatten()
        {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if comm.trim() == "sqlite-writer" {
                return nice_of(task.path().join("stat").to_str()?);
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

/// Niceness from a `/proc/.../stat` file (field 19).
#[cfg(target_os = "linux")]
fn nice_of(stat_path: &str) -> Option<i64> {
    let stat = std::fs::read_to_string(stat_path).ok()?;
    // Fields after the parenthesised name start at field 3.
    let after_name = &stat[stat.rfind(')')? + 2..];
    after_name.split(' ').nth(16)?.parse().ok()
}
