//! `tiercache check-config` and `serve` refuse bad input with clear errors.

use std::process::Command;

fn tiercache(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tiercache"))
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// Writes `text` to a file named `name` and runs `check-config` on it.
fn check_config(name: &str, text: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    tiercache(&["check-config", path.to_str().unwrap()])
}

#[test]
fn check_config_accepts_a_valid_file() {
    let (code, text) = check_config(
        "ok.toml",
        "[memory]\nmax_bytes = \"64MiB\"\n\n[namespace.\"session:\"]\nwrite = \"through\"\nttl = \"30m\"\n",
    );
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("OK"), "{text}");
}

#[test]
fn check_config_names_file_line_and_field() {
    let (code, text) = check_config(
        "bad.toml",
        "[server]\nresp = \"127.0.0.1:6380\"\nmax_clients = \"many\"\n",
    );
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("bad.toml:3:") && text.contains("server.max_clients"),
        "{text}"
    );
}

#[test]
fn check_config_rejects_unknown_store_names() {
    let (code, text) = check_config("names.toml", "[namespace.default]\ntiers = [\"mian\"]\n");
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("names.toml:2:") && text.contains("mian"),
        "{text}"
    );
}

#[test]
fn check_config_says_which_store_types_this_build_cannot_run() {
    let (code, text) = check_config(
        "mysql.toml",
        "[namespace.default]\ntiers = [\"m\"]\n\n[store.m]\ntype = \"mysql\"\nurl = \"mysql://u@127.0.0.1/db\"\n",
    );
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("store 'm'") && text.contains("mysql"),
        "{text}"
    );
}

#[test]
fn check_config_accepts_redis_memcached_and_network_stores() {
    // Nothing connects at check time (nor at start: the stores connect on
    // first use), so no server is needed here.
    let (code, text) = check_config(
        "kv.toml",
        "[namespace.default]\ntiers = [\"r\", \"c\", \"m\", \"n\"]\n\n\
         [store.r]\ntype = \"redis\"\nurl = \"unix:/tmp/redis.sock\"\npool_size = 2\ntimeout = \"250ms\"\n\n\
         [store.c]\ntype = \"redis\"\ncluster = [\"127.0.0.1:7000\", \"127.0.0.1:7001\"]\n\n\
         [store.m]\ntype = \"memcached\"\nservers = [\"127.0.0.1:11211\"]\n\n\
         [store.n]\ntype = \"network\"\nurl = \"redis://127.0.0.1:6380\"\n",
    );
    assert_eq!(code, 0, "{text}");
}

#[test]
fn serve_refuses_a_public_listener_without_a_password() {
    let dir = tempfile::tempdir().unwrap();
    let (code, text) = tiercache(&[
        "serve",
        "--data-dir",
        dir.path().to_str().unwrap(),
        "--resp",
        "0.0.0.0:0",
        "--memcache",
        "off",
        "--admin",
        "off",
    ]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("non-loopback") && text.contains("--unsafe-no-auth"),
        "{text}"
    );
}

#[test]
fn serve_rejects_a_bad_listen_address() {
    let dir = tempfile::tempdir().unwrap();
    let (code, text) = tiercache(&[
        "serve",
        "--data-dir",
        dir.path().to_str().unwrap(),
        "--resp",
        "nonsense",
    ]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("--resp nonsense"), "{text}");
}
