//! A real client library against the real binary: `clients/redis_py_check.py`
//! drives `tiercache serve` (with `requirepass`) through redis-py over RESP2
//! and RESP3 — connection setup (AUTH, HELLO, CLIENT SETINFO), strings,
//! counters, expiry, pipelines, transactions (`pipeline()`, `WATCH`,
//! `transaction()`), collections, geo sets, blocking pops, streams
//! (consumer groups, claims, a blocking `XREAD`), `scan_iter`, `INFO` and
//! `CLIENT` parsing.
//!
//! Skips loudly without `python3` or the `redis` package, version 5 or later
//! (`pip3 install 'redis>=5'`), unless `TIERCACHE_REQUIRE_BACKENDS=1`.

mod support;

use std::process::Command;
use support::{backends_required, require_tool, Server};

const CONFIG: &str = "[server]\nrequirepass = \"py-secret\"\n";

#[test]
fn redis_py_uses_tiercache_like_redis() {
    let Some(python) = require_tool("python3") else {
        return;
    };
    let has_redis_py = Command::new(&python)
        .args([
            "-c",
            "import redis, sys; sys.exit(int(redis.__version__.split('.')[0]) < 5)",
        ])
        .status()
        .is_ok_and(|s| s.success());
    if !has_redis_py {
        if backends_required() {
            panic!(
                "redis-py is not installed but TIERCACHE_REQUIRE_BACKENDS=1 (pip3 install redis)"
            );
        }
        eprintln!("SKIPPED: redis-py >= 5 (RESP3) is not installed; `pip3 install 'redis>=5'` (see .ci/run) to run this test");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tiercache.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let server = Server::start_with(
        &dir.path().join("data"),
        &["--config", config.to_str().unwrap()],
    );
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/redis_py_check.py"
    );
    let out = Command::new(&python)
        .args([script, &server.port.to_string(), "py-secret"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "redis-py check failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
