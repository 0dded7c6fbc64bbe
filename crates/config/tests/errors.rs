//! Each error class names the right line, column and field.

use tiercache_config::{parse, ConfigError};

fn err(text: &str) -> ConfigError {
    match parse(text, "tiercache.toml") {
        Ok(c) => panic!("expected an error, got {c:?}"),
        Err(e) => e,
    }
}

/// Asserts line, field and a message fragment; returns the rendered error.
fn check(text: &str, line: usize, field: &str, fragment: &str) -> String {
    let e = err(text);
    let s = e.to_string();
    assert_eq!(e.line(), Some(line), "{s}");
    assert_eq!(e.field(), field, "{s}");
    assert!(e.message().contains(fragment), "{s}");
    assert!(s.starts_with(&format!("tiercache.toml:{line}:")), "{s}");
    assert!(s.contains(&format!(": {field}: ")), "{s}");
    s
}

#[test]
fn unknown_key() {
    check(
        "[server]\nresp = \"off\"\nmax_client = 3\n",
        3,
        "server.max_client",
        "unknown field `max_client`",
    );
    check("[bogus]\n", 1, "bogus", "unknown field `bogus`");
    check(
        "\n[namespace.default]\nflush = 1\n",
        3,
        "namespace.default.flush",
        "unknown field `flush`",
    );
    // A key of another store type is unknown for this one, and says so.
    let s = check(
        "[store.main]\ntype = \"sqlite\"\npath = \"x.db\"\nurl = \"redis://h\"\n",
        4,
        "store.main.url",
        "unknown field `url` for store type `sqlite`, expected one of path, table, exclusive, write_nice, type, timeout",
    );
    assert!(s.starts_with("tiercache.toml:4:"), "{s}");
    // In an inline store too.
    check(
        "[namespace.default]\ntiers = [\n  { type = \"null\", colour = 1 },\n]\n",
        3,
        "namespace.default.tiers[0].colour",
        "unknown field `colour`",
    );
}

#[test]
fn wrong_type() {
    let s = check(
        "\n\n[server]\nmax_clients = \"x\"\n",
        4,
        "server.max_clients",
        "invalid type: string \"x\", expected u32",
    );
    assert_eq!(
        s,
        "tiercache.toml:4:15: server.max_clients: invalid type: string \"x\", expected u32"
    );
    check(
        "[namespace.default]\ntiers = \"main\"\n",
        2,
        "namespace.default.tiers",
        "invalid type",
    );
    check(
        "[store.m]\ntype = \"redis\"\nurl = \"r://h\"\npool_size = \"big\"\n",
        4,
        "store.m.pool_size",
        "invalid type",
    );
    check(
        "[namespace.default]\ntiers = [3]\n",
        2,
        "namespace.default.tiers[0]",
        "store name or an inline store",
    );
}

#[test]
fn unknown_store_name() {
    let text = "[namespace.default]\ntiers = [\"main\"]\n\n[store.main]\ntype = \"sqlite\"\npath = \"a.db\"\n\n[store.shared]\ntype = \"buffer\"\nsecondary = \"main\"\n\nprimary = \"redsi\"\n";
    let s = check(
        text,
        12,
        "store.shared.primary",
        "unknown store 'redsi' (known: main, shared)",
    );
    assert_eq!(
        s,
        "tiercache.toml:12:11: store.shared.primary: unknown store 'redsi' (known: main, shared)"
    );
    check(
        "[namespace.\"s:\"]\ntiers = [\"main\", \"nope\"]\n",
        2,
        "namespace.\"s:\".tiers[1]",
        "unknown store 'nope'",
    );
    check(
        "[store.b]\ntype = \"bucket\"\nbuckets = [{ type = \"multi\", stores = [\"ghost\"] }]\n",
        3,
        "store.b.buckets[0].stores[0]",
        "unknown store 'ghost'",
    );
    check(
        "[http_cache]\ntiers = [\"cdn\"]\n",
        2,
        "http_cache.tiers[0]",
        "unknown store 'cdn'",
    );
}

#[test]
fn cycles() {
    check(
        "[store.a]\ntype = \"buffer\"\nprimary = \"a\"\nsecondary = { type = \"file\", path = \"spool\" }\n",
        3,
        "store.a.primary",
        "store cycle: a -> a",
    );
    check(
        "[store.a]\ntype = \"multi\"\nstores = [\"b\"]\n[store.b]\ntype = \"bucket\"\nbuckets = [{ type = \"multi\", stores = [\"a\"] }]\n",
        6,
        "store.b.buckets[0].stores[0]",
        "store cycle: a -> b -> a",
    );
}

#[test]
fn enum_fields_of_the_wrong_type_say_so() {
    check(
        "[namespace.default]\nwrite = 3\n",
        2,
        "namespace.default.write",
        "invalid type: integer `3`, expected a string",
    );
    check(
        "[store.m]\ntype = \"multi\"\nstores = [\"main\"]\nreport_success = true\n",
        4,
        "store.m.report_success",
        "invalid type: boolean `true`, expected a string",
    );
    check(
        "[store.b]\ntype = \"bucket\"\nbuckets = [\"main\"]\nhash = \"crc\"\n",
        4,
        "store.b.hash",
        "unknown variant `crc`, expected `key_hash` or `key_modulo`",
    );
}

#[test]
fn cycle_through_a_bucket() {
    // a -> bucket[b] -> a, the closing reference named.
    check(
        "[store.a]\ntype = \"bucket\"\nbuckets = [\"b\", { type = \"null\" }]\n\n[store.b]\ntype = \"multi\"\nstores = [{ type = \"null\" }, \"a\"]\n",
        7,
        "store.b.stores[1]",
        "store cycle: a -> b -> a",
    );
}

#[test]
fn nested_inline_stores_are_checked_like_top_level_ones() {
    check(
        "[store.s]\ntype = \"bucket\"\nbuckets = [\n  { type = \"sqlite\", path = \"a.db\" },\n  { type = \"sqlite\", path = \"b.db\", colour = \"red\" },\n]\n",
        5,
        "store.s.buckets[1].colour",
        "unknown field `colour` for store type `sqlite`",
    );
    check(
        "[store.s]\ntype = \"buffer\"\nprimary = { type = \"multi\", stores = [{ type = \"sqlite\", path = 3 }] }\nsecondary = { type = \"file\", path = \"spool\" }\n",
        3,
        "store.s.primary.stores[0].path",
        "invalid type: integer `3`, expected a string",
    );
    check(
        "[store.s]\ntype = \"buffer\"\nprimary = { type = \"null\" }\nsecondary = { type = \"file\", path = \"spool\", max_size = \"lots\" }\n",
        4,
        "store.s.secondary.max_size",
        "lots",
    );
}

#[test]
fn a_buffer_secondary_must_be_an_unshared_file_store() {
    let s = check(
        "[store.s]\ntype = \"buffer\"\nprimary = { type = \"null\" }\nsecondary = { type = \"sqlite\", path = \"q.db\" }\n",
        4,
        "store.s.secondary",
        "a buffer's secondary must be a `file` store",
    );
    assert!(s.contains("`sqlite` cannot"), "{s}");
    check(
        "[store.q]\ntype = \"null\"\n\n[store.s]\ntype = \"buffer\"\nprimary = \"main\"\nsecondary = \"q\"\n",
        7,
        "store.s.secondary",
        "`null` cannot",
    );
    check(
        "[namespace.default]\ntiers = [\"s\"]\n[namespace.\"x:\"]\ntiers = [\"q\"]\n\n[store.q]\ntype = \"file\"\npath = \"spool\"\n\n[store.s]\ntype = \"buffer\"\nprimary = \"main\"\nsecondary = \"q\"\n",
        13,
        "store.s.secondary",
        "store 'q' is a buffer's secondary and is used 2 times",
    );
}

#[test]
fn bad_enum_value() {
    check(
        "[namespace.default]\nwrite = \"sideways\"\n",
        2,
        "namespace.default.write",
        "unknown variant `sideways`, expected one of `through`, `back`, `around`",
    );
    check(
        "[namespace.default]\nfsync = \"sometimes\"\n",
        2,
        "namespace.default.fsync",
        "unknown variant",
    );
    check(
        "[store.x]\ntype = \"bucket\"\nbuckets = [\"main\"]\nhash = \"crc\"\n",
        4,
        "store.x.hash",
        "unknown variant `crc`",
    );
    check(
        "[store.x]\ntype = \"multi\"\nstores = [\"main\"]\nreport_success = \"most\"\n",
        4,
        "store.x.report_success",
        "unknown variant",
    );
    check(
        "[store.x]\ntype = \"file\"\npath = \"p\"\nrotate_period = \"weekly\"\n",
        4,
        "store.x.rotate_period",
        "unknown variant",
    );
    check(
        "[store.x]\ntype = \"sqlight\"\n",
        2,
        "store.x.type",
        "unknown store type `sqlight`",
    );
}

#[test]
fn bad_duration() {
    check(
        "[namespace.default]\nttl = \"5 parsecs\"\n",
        2,
        "namespace.default.ttl",
        "invalid duration \"5 parsecs\"",
    );
    check(
        "[server]\nbusy_poll = \"fast\"\n",
        2,
        "server.busy_poll",
        "invalid duration \"fast\"",
    );
    check(
        "[server]\nbusy_poll = \"automatic\"\n",
        2,
        "server.busy_poll",
        "(or \"auto\", or \"off\")",
    );
    check(
        "[server]\nidle_timeout = -1\n",
        2,
        "server.idle_timeout",
        "must not be negative",
    );
    check(
        "[store.x]\ntype = \"null\"\ntimeout = true\n",
        3,
        "store.x.timeout",
        "invalid type",
    );
}

#[test]
fn bad_size() {
    check(
        "[memory]\nmax_bytes = \"12 parsecs\"\n",
        2,
        "memory.max_bytes",
        "invalid size \"12 parsecs\"",
    );
    check(
        "[server]\nmax_value_bytes = -5\n",
        2,
        "server.max_value_bytes",
        "must not be negative",
    );
    check(
        "[store.x]\ntype = \"buffer\"\nprimary = \"main\"\nsecondary = { type = \"file\", path = \"s\", max_size = \"big\" }\n",
        4,
        "store.x.secondary.max_size",
        "invalid size",
    );
}

#[test]
fn bad_address() {
    check(
        "[server]\nresp = \"localhost\"\n",
        2,
        "server.resp",
        "invalid address \"localhost\"",
    );
    check(
        "[server]\nadmin = \"127.0.0.1:70000\"\n",
        2,
        "server.admin",
        "bad port",
    );
    check(
        "[server]\nmemcache = \"unix:relative.sock\"\n",
        2,
        "server.memcache",
        "absolute path",
    );
    check(
        "[http_cache]\nlisten = \"on\"\n",
        2,
        "http_cache.listen",
        "invalid address",
    );
    check(
        "[http_cache]\nupstream = \"ftp://x\"\n",
        2,
        "http_cache.upstream",
        "http://",
    );
}

#[test]
fn semantic_ranges_and_names() {
    check(
        "[namespace.\"\"]\ntiers = []\n",
        1,
        "namespace.\"\"",
        "non-empty key prefix",
    );
    check(
        "[namespace.default]\nflush_batch = 0\n",
        2,
        "namespace.default.flush_batch",
        "at least 1",
    );
    check(
        "[server]\nbusy_poll = \"2s\"\n",
        2,
        "server.busy_poll",
        "must be at most 1s",
    );
    check(
        "[server]\nmax_clients = 0\n",
        2,
        "server.max_clients",
        "at least 1",
    );
    check(
        "[store.r]\ntype = \"redis\"\npool_size = 0\nurl = \"redis://h\"\n",
        3,
        "store.r.pool_size",
        "at least 1",
    );
    check(
        "[store.s]\ntype = \"sqlite\"\npath = \"a.db\"\nwrite_nice = 20\n",
        4,
        "store.s.write_nice",
        "must be a niceness from 0 to 19, got 20",
    );
    check(
        "[store.s]\ntype = \"sqlite\"\npath = \"a.db\"\nwrite_nice = -1\n",
        4,
        "store.s.write_nice",
        "got -1",
    );
    check(
        "[store.b]\ntype = \"bucket\"\nbuckets = []\n",
        3,
        "store.b.buckets",
        "must not be empty",
    );
    check(
        "\n[store.s]\ntype = \"sqlite\"\n",
        2,
        "store.s",
        "requires `path`",
    );
    check(
        "[store.r]\ntype = \"redis\"\n",
        1,
        "store.r",
        "requires `url` or `cluster`",
    );
    check(
        "[namespace.default]\ntiers = [{ path = \"a.db\" }]\n",
        2,
        "namespace.default.tiers[0]",
        "missing field `type`",
    );
}

#[test]
fn syntax_error_has_a_line() {
    let e = err("[server]\nresp = \n");
    assert_eq!(e.line(), Some(2), "{e}");
    let e = err("[server\n");
    assert_eq!(e.line(), Some(1), "{e}");
}

#[test]
fn dotted_keys_are_located_too() {
    check(
        "namespace.default.tiers = [\"main\"]\nstore.main.type = \"sqlite\"\nstore.main.path = 5\n",
        3,
        "store.main.path",
        "invalid type",
    );
    check(
        "server.resp = \"nowhere\"\n",
        1,
        "server.resp",
        "invalid address",
    );
}

#[test]
fn http_cache_knobs() {
    check(
        "[http_cache]\nmax_object_size = \"big\"\n",
        2,
        "http_cache.max_object_size",
        "invalid size",
    );
    check(
        "[http_cache]\ncoalesce_timeout = \"0s\"\n",
        2,
        "http_cache.coalesce_timeout",
        "more than zero",
    );
    check(
        "[http_cache]\nkey_headers = [\"ok\", \"bad header\"]\n",
        2,
        "http_cache.key_headers[1]",
        "invalid header field name",
    );
    check(
        "[http_cache]\npurge_token = \"\"\n",
        2,
        "http_cache.purge_token",
        "must not be empty",
    );
    check(
        "[http_cache]\nadmin_prefix = \"admin\"\n",
        2,
        "http_cache.admin_prefix",
        "invalid admin prefix",
    );
    check(
        "[http_cache]\nupstream = \"http://x\"\n\n[[http_cache.rule]]\nprefix = \"/a/\"\n\n[[http_cache.rule]]\nprefix = \"b/\"\n",
        8,
        "http_cache.rule[1].prefix",
        "must start with '/'",
    );
    check(
        "[[http_cache.rule]]\nprefix = \"/a/\"\nttl = \"soon\"\n",
        3,
        "http_cache.rule[0].ttl",
        "invalid duration",
    );
    check(
        "[[http_cache.rule]]\nprefix = \"/a/\"\nbypas = true\n",
        3,
        "http_cache.rule[0].bypas",
        "unknown field",
    );
    check(
        "[[http_cache.rule]]\nprefix = \"/a/\"\nbypass_headers = [\"a b\"]\n",
        3,
        "http_cache.rule[0].bypass_headers[0]",
        "invalid header field name",
    );
}
