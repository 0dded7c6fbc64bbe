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
fn check_config_accepts_every_store_type() {
    // Every type in SPEC builds; check-config opens nothing, so the
    // servers need not exist.
    let (code, text) = check_config(
        "all.toml",
        "[namespace.default]\ntiers = [\"everything\"]\n\n\
         [store.everything]\ntype = \"multi\"\nreport_success = \"any\"\nstores = [\n\
         { type = \"redis\", url = \"redis://127.0.0.1:1\" },\n\
         { type = \"redis\", cluster = [\"127.0.0.1:1\"] },\n\
         { type = \"memcached\", servers = [\"127.0.0.1:1\"] },\n\
         { type = \"postgres\", url = \"postgres://u@127.0.0.1:1/db\" },\n\
         { type = \"mysql\", url = \"mysql://u:p@127.0.0.1:1/db\" },\n\
         { type = \"network\", url = \"redis://127.0.0.1:1\" },\n\
         { type = \"null\" },\n\
         { type = \"sqlite\", path = \"x.db\", timeout = \"1s\" },\n]\n",
    );
    assert_eq!(code, 0, "{text}");
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

/// `check-config` on nested stores: exit 2 naming file, line and field.
fn check_config_fails(name: &str, text: &str, line: usize, field: &str, fragment: &str) {
    let (code, out) = check_config(name, text);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains(&format!("{name}:{line}:")) && out.contains(&format!(": {field}: ")),
        "{out}"
    );
    assert!(out.contains(fragment), "{out}");
}

#[test]
fn check_config_accepts_nested_combinators() {
    let (code, text) = check_config(
        "nested.toml",
        "[namespace.default]\ntiers = [\"shards\"]\n\n[store.shards]\ntype = \"bucket\"\nbuckets = [\n  { type = \"buffer\", primary = { type = \"sqlite\", path = \"s0.db\" }, secondary = { type = \"file\", path = \"spool0\" } },\n  { type = \"multi\", stores = [\"main\", { type = \"null\", timeout = \"1s\" }] },\n]\n",
    );
    assert_eq!(code, 0, "{text}");
}

#[test]
fn check_config_rejects_a_cycle_through_a_bucket() {
    check_config_fails(
        "cycle.toml",
        "[namespace.default]\ntiers = [\"a\"]\n\n[store.a]\ntype = \"bucket\"\nbuckets = [\"b\"]\n\n[store.b]\ntype = \"buffer\"\nprimary = \"a\"\nsecondary = { type = \"file\", path = \"spool\" }\n",
        10,
        "store.b.primary",
        "store cycle: a -> b -> a",
    );
}

#[test]
fn check_config_rejects_an_unknown_nested_store_name() {
    check_config_fails(
        "unknown.toml",
        "[store.s]\ntype = \"multi\"\nstores = [\n  { type = \"bucket\", buckets = [\"main\", \"shard2\"] },\n]\n",
        4,
        "store.s.stores[0].buckets[1]",
        "unknown store 'shard2'",
    );
}

#[test]
fn check_config_rejects_an_unknown_key_in_an_inline_store() {
    check_config_fails(
        "key.toml",
        "[store.s]\ntype = \"buffer\"\nsecondary = { type = \"file\", path = \"spool\" }\nprimary = { type = \"sqlite\", path = \"p.db\", max_size = \"1MiB\" }\n",
        4,
        "store.s.primary.max_size",
        "unknown field `max_size` for store type `sqlite`",
    );
}

#[test]
fn check_config_rejects_a_wrong_type_in_a_nested_store() {
    check_config_fails(
        "type.toml",
        "[store.s]\ntype = \"bucket\"\nbuckets = [{ type = \"file\", path = \"f\" }]\nhash = 3\n",
        4,
        "store.s.hash",
        "invalid type",
    );
    check_config_fails(
        "type2.toml",
        "[store.s]\ntype = \"buffer\"\nprimary = \"main\"\nsecondary = { type = \"file\", path = \"spool\" }\nmax_queue_length = \"long\"\n",
        5,
        "store.s.max_queue_length",
        "invalid type",
    );
}

#[test]
fn check_config_rejects_a_secondary_that_cannot_replay() {
    check_config_fails(
        "secondary.toml",
        "[store.s]\ntype = \"buffer\"\nprimary = \"main\"\nsecondary = { type = \"sqlite\", path = \"q.db\" }\n",
        4,
        "store.s.secondary",
        "a buffer's secondary must be a `file` store",
    );
}
