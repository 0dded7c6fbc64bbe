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
        "redis.toml",
        "[namespace.default]\ntiers = [\"r\"]\n\n[store.r]\ntype = \"redis\"\nurl = \"redis://127.0.0.1:6379\"\n",
    );
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("store 'r'") && text.contains("redis"),
        "{text}"
    );
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
fn serve_refuses_a_public_memcache_listener_even_with_a_password() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.toml");
    std::fs::write(&config, "[server]\nrequirepass = \"secret\"\n").unwrap();
    let (code, text) = tiercache(&[
        "serve",
        "--config",
        config.to_str().unwrap(),
        "--data-dir",
        dir.path().to_str().unwrap(),
        "--resp",
        "off",
        "--memcache",
        "0.0.0.0:0",
        "--admin",
        "off",
    ]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("memcache")
            && text.contains("no authentication")
            && text.contains("--unsafe-no-auth"),
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
