//! Successful parses: the SPEC example, defaults, store references, units.

use std::path::PathBuf;
use std::time::Duration;

use tiercache_config::*;

const SPEC_EXAMPLE: &str = include_str!("spec_example.toml");

fn ok(text: &str) -> Config {
    parse(text, "t.toml").unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn spec_example_parses() {
    let c = ok(SPEC_EXAMPLE);
    assert_eq!(c.server.resp, ListenAddr::Tcp("127.0.0.1:6380".into()));
    assert_eq!(c.server.memcache, ListenAddr::Tcp("127.0.0.1:11212".into()));
    assert_eq!(c.server.admin, ListenAddr::Tcp("127.0.0.1:9380".into()));
    assert_eq!(c.server.requirepass.as_deref(), Some("change-me"));
    assert_eq!(c.server.max_clients, 10_000);
    assert_eq!(c.server.busy_poll, BusyPollSetting::Auto);
    assert_eq!(c.memory.max_bytes, 256 * 1024 * 1024);

    let names: Vec<&str> = c.namespaces().iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["default", "session:"]);
    let d = &c.namespaces["default"];
    assert_eq!(d.tiers, vec![StoreRef::Named("main".into())]);
    assert_eq!(d.write, WriteMode::Back);
    assert_eq!(d.flush_interval, Duration::from_secs(1));
    assert_eq!(d.flush_batch, 10_000);
    assert_eq!(d.ttl(), None);
    let s = &c.namespaces["session:"];
    assert_eq!(s.tiers, vec![StoreRef::Named("shared".into())]);
    assert_eq!(s.write, WriteMode::Through);
    assert_eq!(s.ttl, Duration::from_secs(30 * 60));
    assert_eq!(c.namespace_for("session:abc").0, "session:");
    assert_eq!(c.namespace_for("user:1").0, "default");

    assert_eq!(
        c.store("main"),
        Some(&StoreConfig::Sqlite(SqliteStore {
            path: PathBuf::from("tiercache.db"),
            table: "kv".into(),
            exclusive: true,
            write_nice: 19,
            timeout: None
        }))
    );
    let Some(StoreConfig::Buffer(b)) = c.store("shared") else {
        panic!("shared")
    };
    assert_eq!(b.retry_interval, Duration::from_secs(30));
    assert_eq!(b.retry_interval_range, Duration::from_secs(10));
    let StoreRef::Inline(p) = &b.primary else {
        panic!("primary inline")
    };
    assert_eq!(
        **p,
        StoreConfig::Redis(RedisStore {
            target: RedisTarget::Url("redis://127.0.0.1:6379".into()),
            pool_size: 8,
            timeout: None
        })
    );
    let StoreRef::Inline(sec) = &b.secondary else {
        panic!("secondary inline")
    };
    let StoreConfig::File(f) = &**sec else {
        panic!("file")
    };
    assert_eq!(f.path, PathBuf::from("spool"));
    assert_eq!(f.max_size, Some(64 << 20));
    assert_eq!(f.rotate_period, RotatePeriod::Never);

    let Some(StoreConfig::Bucket(sh)) = c.store("shards") else {
        panic!("shards")
    };
    assert_eq!(sh.hash, BucketHash::KeyHash);
    assert_eq!(sh.buckets.len(), 2);
    assert!(
        matches!(&sh.buckets[1], StoreRef::Inline(s) if matches!(&**s,
        StoreConfig::Sqlite(q) if q.path == std::path::Path::new("s1.db")))
    );

    let Some(StoreConfig::Multi(m)) = c.store("both") else {
        panic!("both")
    };
    assert_eq!(m.report_success, ReportSuccess::All);
    assert_eq!(
        m.stores[1].resolve(&c).map(|s| s.type_name()),
        Some("postgres")
    );

    assert_eq!(
        c.http_cache.listen,
        ListenAddr::Tcp("127.0.0.1:8380".into())
    );
    assert_eq!(
        c.http_cache.upstream.as_deref(),
        Some("http://127.0.0.1:8080")
    );
    assert_eq!(
        c.http_cache.tiers,
        Some(vec![StoreRef::Named("main".into())])
    );
    assert_eq!(c.http_cache.default_ttl, Duration::ZERO);
    assert_eq!(c.stores.len(), 4);
}

#[test]
fn defaults_match_spec() {
    let d = Config::default();
    assert_eq!(ok(""), d);
    assert_eq!(ok("[memory]\n"), d);
    assert_eq!(d.server.resp.to_string(), "127.0.0.1:6380");
    assert_eq!(d.server.memcache.to_string(), "127.0.0.1:11212");
    assert_eq!(d.server.admin.to_string(), "127.0.0.1:9380");
    assert_eq!(d.server.requirepass, None);
    assert_eq!(d.server.max_clients, 10_000);
    assert_eq!(d.server.max_key_bytes, 64 * 1024);
    assert_eq!(d.server.max_value_bytes, 64 * 1024 * 1024);
    assert_eq!(d.server.max_request_bytes, 128 * 1024 * 1024);
    assert_eq!(d.server.idle_timeout(), None);
    assert_eq!(d.memory.max_bytes, 256 * 1024 * 1024);
    let ns = d.namespaces();
    assert_eq!(ns.len(), 1);
    assert_eq!(ns[0].0, "default");
    assert_eq!(ns[0].1.tiers, vec![StoreRef::Named("main".into())]);
    assert_eq!(ns[0].1.write, WriteMode::Back);
    assert_eq!(ns[0].1.fsync, FsyncMode::Everysec);
    let Some(StoreConfig::Sqlite(main)) = d.store("main") else {
        panic!()
    };
    assert_eq!(main.path, PathBuf::from("tiercache.db"));
    assert_eq!(main.table, "kv");
    assert_eq!(d.http_cache.listen.to_string(), "127.0.0.1:8380");
    assert_eq!(d.http_cache.tiers, None);
}

#[test]
fn default_namespace_is_added_and_main_implied() {
    let c = ok("[namespace.\"a:\"]\ntiers = [\"r\"]\n[store.r]\ntype = \"null\"\n");
    assert_eq!(c.namespaces().len(), 2);
    assert_eq!(c.namespaces()[0].0, "default");
    assert!(matches!(c.store("main"), Some(StoreConfig::Sqlite(_))));

    // A redefined main is kept; an unused store set adds nothing.
    let c = ok("[store.main]\ntype = \"redis\"\ncluster = [\"h:1\", \"h:2\"]\npool_size = 4\n");
    let Some(StoreConfig::Redis(r)) = c.store("main") else {
        panic!()
    };
    assert_eq!(
        r.target,
        RedisTarget::Cluster(vec!["h:1".into(), "h:2".into()])
    );
    assert_eq!(r.pool_size, 4);

    // Pure-cache namespaces do not pull in main.
    let c = ok("[namespace.default]\ntiers = []\n");
    assert!(c.namespaces["default"].tiers.is_empty());
    assert_eq!(c.store("main"), None);
}

#[test]
fn named_and_inline_refs() {
    let c = ok(r#"
[namespace.default]
tiers = ["front", { type = "null", timeout = "250ms" }]
[store.front]
type = "buffer"
primary = { type = "multi", report_success = "any", stores = ["a", { type = "memcached", servers = ["m:11211"] }] }
secondary = { type = "file", path = "spool" }
max_queue_length = 5
[store.a]
type = "bucket"
hash = "key_modulo"
delimiter = ":"
buckets = [{ type = "mysql", url = "mysql://u:p@h:3306/db", table = "t" }]
"#);
    let tiers = &c.namespaces["default"].tiers;
    assert_eq!(tiers[0], StoreRef::Named("front".into()));
    let StoreRef::Inline(n) = &tiers[1] else {
        panic!()
    };
    assert_eq!(n.timeout(), Some(Duration::from_millis(250)));
    let Some(StoreConfig::Buffer(b)) = c.resolve(&tiers[0]) else {
        panic!()
    };
    assert!(matches!(&b.secondary, StoreRef::Inline(f) if matches!(**f, StoreConfig::File(_))));
    assert_eq!(b.max_queue_length, 5);
    assert_eq!(b.retry_interval, Duration::from_secs(300));
    let StoreRef::Inline(m) = &b.primary else {
        panic!()
    };
    let StoreConfig::Multi(m) = &**m else {
        panic!()
    };
    assert_eq!(m.report_success, ReportSuccess::Any);
    assert_eq!(m.stores[0], StoreRef::Named("a".into()));
    let Some(StoreConfig::Bucket(a)) = c.store("a") else {
        panic!()
    };
    assert_eq!(a.hash, BucketHash::KeyModulo);
    assert_eq!(a.delimiter.as_deref(), Some(":"));
    let StoreConfig::Mysql(sql) = a.buckets[0].resolve(&c).unwrap() else {
        panic!()
    };
    assert_eq!((sql.table.as_str(), sql.pool_size), ("t", 8));
    assert_eq!(c.store("main"), None);
}

#[test]
fn sizes_durations_addresses() {
    let c = ok(r#"
[server]
resp = "off"
memcache = "unix:/run/tc.sock"
admin = "localhost:0"
max_key_bytes = 1024
max_value_bytes = "1MB"
max_request_bytes = "2 GiB"
idle_timeout = 90
busy_poll = "50us"
[memory]
max_bytes = "64KiB"
[namespace.default]
flush_interval = "250ms"
ttl = "1h 30m"
fsync = "always"
[store.main]
type = "file"
path = "log"
rotate_period = "hourly"
max_size = 1000
timeout = "2s"
"#);
    assert!(c.server.resp.is_off());
    assert_eq!(c.server.memcache, ListenAddr::Unix("/run/tc.sock".into()));
    assert_eq!(c.server.admin, ListenAddr::Tcp("localhost:0".into()));
    assert!(c.server.admin.is_local());
    assert_eq!(c.server.max_key_bytes, 1024);
    assert_eq!(c.server.max_value_bytes, 1_000_000);
    assert_eq!(c.server.max_request_bytes, 2 << 30);
    assert_eq!(c.server.idle_timeout(), Some(Duration::from_secs(90)));
    assert_eq!(
        c.server.busy_poll,
        BusyPollSetting::Window(Duration::from_micros(50))
    );
    assert_eq!(c.memory.max_bytes, 65_536);
    let d = &c.namespaces["default"];
    assert_eq!(d.flush_interval, Duration::from_millis(250));
    assert_eq!(d.ttl, Duration::from_secs(5400));
    assert_eq!(d.fsync, FsyncMode::Always);
    let Some(StoreConfig::File(f)) = c.store("main") else {
        panic!()
    };
    assert_eq!(f.rotate_period, RotatePeriod::Hourly);
    assert_eq!(f.max_size, Some(1000));
    assert_eq!(f.base_filename, "tiercache");
    assert_eq!(f.timeout, Some(Duration::from_secs(2)));
}

#[test]
fn load_reads_a_file_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tc.toml");
    std::fs::write(&path, SPEC_EXAMPLE).unwrap();
    assert_eq!(load(&path).unwrap(), ok(SPEC_EXAMPLE));
    std::fs::write(&path, "[memory]\nmax_bytes = \"lots\"\n").unwrap();
    let e = load(&path).unwrap_err();
    assert_eq!(e.file(), path.display().to_string());
    assert_eq!(e.line(), Some(2));
    let missing = dir.path().join("nope.toml");
    let e = load(&missing).unwrap_err();
    assert!(
        e.to_string()
            .starts_with(&format!("{}: cannot read", missing.display())),
        "{e}"
    );
}

#[test]
fn http_cache_micro_cache_knobs() {
    let c = ok(r#"
[http_cache]
upstream = "http://127.0.0.1:8080"
default_ttl = "1s"
max_object_size = "1MiB"
coalesce_timeout = "2s"
upstream_timeout = "5s"
stale_retention = "1h"
key_headers = ["Accept-Encoding"]
purge_token = "t0ken"
admin_prefix = "/_cache/"
max_header_bytes = "32KiB"

[[http_cache.rule]]
prefix = "/api/"
ttl = "5s"
bypass_headers = ["X-Debug"]
bypass_cookies = ["session"]

[[http_cache.rule]]
prefix = "/admin/"
bypass = true
"#);
    let h = &c.http_cache;
    assert_eq!(h.default_ttl(), Some(Duration::from_secs(1)));
    assert_eq!(h.max_object_size, 1 << 20);
    assert_eq!(h.coalesce_timeout, Duration::from_secs(2));
    assert_eq!(h.upstream_timeout, Duration::from_secs(5));
    assert_eq!(h.stale_retention, Duration::from_secs(3600));
    assert_eq!(h.key_headers, ["accept-encoding"]);
    assert_eq!(h.purge_token.as_deref(), Some("t0ken"));
    assert_eq!(h.admin_prefix, "/_cache/");
    assert_eq!(h.max_header_bytes, 32 << 10);
    assert_eq!(
        h.rules,
        vec![
            HttpRule {
                prefix: "/api/".into(),
                ttl: Some(Duration::from_secs(5)),
                bypass_headers: vec!["x-debug".into()],
                bypass_cookies: vec!["session".into()],
                ..Default::default()
            },
            HttpRule {
                prefix: "/admin/".into(),
                bypass: true,
                ..Default::default()
            },
        ]
    );
}

#[test]
fn http_cache_defaults() {
    let h = ok("").http_cache;
    assert_eq!(h.default_ttl(), None);
    assert_eq!(h.max_object_size, 8 << 20);
    assert_eq!(h.coalesce_timeout, Duration::from_secs(10));
    assert_eq!(h.upstream_timeout, Duration::from_secs(30));
    assert_eq!(h.purge_token, None);
    assert_eq!(h.admin_prefix, "/_tiercache/");
    assert!(h.rules.is_empty());
}

#[test]
fn sqlite_store_options() {
    let c =
        ok("[store.main]\ntype = \"sqlite\"\npath = \"a.db\"\nexclusive = false\nwrite_nice = 0\n");
    let Some(StoreConfig::Sqlite(s)) = c.store("main") else {
        panic!("main is sqlite")
    };
    assert!(!s.exclusive);
    assert_eq!(s.write_nice, 0);
    let c = ok("[store.main]\ntype = \"sqlite\"\npath = \"a.db\"\n");
    let Some(StoreConfig::Sqlite(s)) = c.store("main") else {
        panic!("main is sqlite")
    };
    assert_eq!(s.write_nice, tiercache_config::DEFAULT_WRITE_NICE);
}
