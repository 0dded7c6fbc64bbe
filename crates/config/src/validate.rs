//! Raw file → [`Config`]: store types and their keys, store references,
//! cycles, namespace names, value ranges.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::error::{render_path, ConfigError, Locator, Seg};
use crate::model::*;
use crate::raw::{RawConfig, RawStore, RawStoreRef};

const STORE_TYPES: &[&str] = &[
    "sqlite",
    "redis",
    "memcached",
    "postgres",
    "mysql",
    "file",
    "network",
    "null",
    "buffer",
    "bucket",
    "multi",
];

/// Keys each store type takes besides `type` and `timeout`.
fn keys_of(ty: &str) -> &'static [&'static str] {
    match ty {
        "sqlite" => &["path", "table", "exclusive", "write_nice"],
        "redis" => &["url", "cluster", "pool_size"],
        "memcached" => &["servers"],
        "postgres" | "mysql" => &["url", "table", "pool_size"],
        "file" => &["path", "base_filename", "rotate_period", "max_size"],
        "network" => &["url"],
        "buffer" => &[
            "primary",
            "secondary",
            "max_queue_length",
            "retry_interval",
            "retry_interval_range",
        ],
        "bucket" => &["buckets", "hash", "delimiter"],
        "multi" => &["stores", "report_success"],
        _ => &[],
    }
}

const DEFAULT_POOL: u32 = 8;

struct Ctx<'a> {
    file: &'a str,
    text: &'a str,
    /// Names a reference may use: defined stores plus the implied `main`.
    known: BTreeSet<String>,
    /// Named references made, with where they were made.
    refs: Vec<(String, Vec<Seg>)>,
    /// Buffer secondaries given by name, with where (checked once every
    /// store is known).
    named_secondaries: Vec<(String, Vec<Seg>)>,
}

type Res<T> = Result<T, ConfigError>;

fn key(k: &str) -> Seg {
    Seg::Key(k.to_owned())
}

fn with(path: &[Seg], seg: Seg) -> Vec<Seg> {
    let mut p = path.to_vec();
    p.push(seg);
    p
}

impl Ctx<'_> {
    fn err(&self, path: &[Seg], msg: impl Into<String>) -> ConfigError {
        let off = Locator::new(self.text).offset_of(path);
        ConfigError::at(self.file, self.text, off, render_path(path), msg)
    }

    fn store_ref(&mut self, r: RawStoreRef, path: Vec<Seg>) -> Res<StoreRef> {
        match r {
            RawStoreRef::Named(n) => {
                if !self.known.contains(&n) {
                    let known: Vec<&str> = self.known.iter().map(String::as_str).collect();
                    return Err(self.err(
                        &path,
                        format!("unknown store '{n}' (known: {})", known.join(", ")),
                    ));
                }
                self.refs.push((n.clone(), path));
                Ok(StoreRef::Named(n))
            }
            RawStoreRef::Inline(s) => Ok(StoreRef::Inline(Box::new(self.store(*s, &path)?))),
        }
    }

    fn refs(&mut self, v: Vec<RawStoreRef>, path: &[Seg], field: &str) -> Res<Vec<StoreRef>> {
        let p = with(path, key(field));
        v.into_iter()
            .enumerate()
            .map(|(i, r)| self.store_ref(r, with(&p, Seg::Index(i))))
            .collect()
    }

    fn required<T>(&self, v: Option<T>, path: &[Seg], ty: &str, field: &str) -> Res<T> {
        v.ok_or_else(|| self.err(path, format!("store type `{ty}` requires `{field}`")))
    }

    fn non_empty<T>(&self, v: Vec<T>, path: &[Seg], field: &str) -> Res<Vec<T>> {
        if v.is_empty() {
            return Err(self.err(&with(path, key(field)), "must not be empty"));
        }
        Ok(v)
    }

    fn pool(&self, v: Option<u32>, path: &[Seg]) -> Res<u32> {
        match v {
            Some(0) => Err(self.err(&with(path, key("pool_size")), "must be at least 1")),
            Some(n) => Ok(n),
            None => Ok(DEFAULT_POOL),
        }
    }

    fn write_nice(&self, v: Option<i64>, path: &[Seg]) -> Res<u8> {
        match v {
            None => Ok(crate::model::DEFAULT_WRITE_NICE),
            Some(n) => u8::try_from(n).ok().filter(|n| *n <= 19).ok_or_else(|| {
                self.err(
                    &with(path, key("write_nice")),
                    format!("must be a niceness from 0 to 19, got {n}"),
                )
            }),
        }
    }

    fn store(&mut self, s: RawStore, path: &[Seg]) -> Res<StoreConfig> {
        let Some(ty) = s.ty.clone() else {
            return Err(self.err(
                path,
                format!("missing field `type` (one of {})", STORE_TYPES.join(", ")),
            ));
        };
        if !STORE_TYPES.contains(&ty.as_str()) {
            return Err(self.err(
                &with(path, key("type")),
                format!(
                    "unknown store type `{ty}`, expected one of {}",
                    STORE_TYPES.join(", ")
                ),
            ));
        }
        let allowed = keys_of(&ty);
        if let Some(bad) = s.keys.iter().find(|k| {
            !(k.as_str() == "type" || k.as_str() == "timeout" || allowed.contains(&k.as_str()))
        }) {
            let mut expected: Vec<&str> = allowed.to_vec();
            expected.extend(["type", "timeout"]);
            return Err(self.err(
                &with(path, key(bad)),
                format!(
                    "unknown field `{bad}` for store type `{ty}`, expected one of {}",
                    expected.join(", ")
                ),
            ));
        }
        let timeout = s.timeout;
        let table = |t: Option<String>| t.unwrap_or_else(|| "kv".to_owned());
        Ok(match ty.as_str() {
            "sqlite" => StoreConfig::Sqlite(SqliteStore {
                path: PathBuf::from(self.required(s.path, path, &ty, "path")?),
                table: table(s.table),
                exclusive: s.exclusive.unwrap_or(true),
                write_nice: self.write_nice(s.write_nice, path)?,
                timeout,
            }),
            "redis" => {
                let target = match (s.url, s.cluster) {
                    (Some(u), None) => RedisTarget::Url(u),
                    (None, Some(c)) => RedisTarget::Cluster(self.non_empty(c, path, "cluster")?),
                    (Some(_), Some(_)) => {
                        return Err(self.err(
                            &with(path, key("cluster")),
                            "give either `url` or `cluster`, not both",
                        ))
                    }
                    (None, None) => {
                        return Err(self.err(path, "store type `redis` requires `url` or `cluster`"))
                    }
                };
                StoreConfig::Redis(RedisStore {
                    target,
                    pool_size: self.pool(s.pool_size, path)?,
                    timeout,
                })
            }
            "memcached" => {
                let servers = self.required(s.servers, path, &ty, "servers")?;
                StoreConfig::Memcached(MemcachedStore {
                    servers: self.non_empty(servers, path, "servers")?,
                    timeout,
                })
            }
            "postgres" | "mysql" => {
                let sql = SqlStore {
                    url: self.required(s.url, path, &ty, "url")?,
                    table: table(s.table),
                    pool_size: self.pool(s.pool_size, path)?,
                    timeout,
                };
                if ty == "postgres" {
                    StoreConfig::Postgres(sql)
                } else {
                    StoreConfig::Mysql(sql)
                }
            }
            "file" => StoreConfig::File(FileStore {
                path: PathBuf::from(self.required(s.path, path, &ty, "path")?),
                base_filename: s.base_filename.unwrap_or_else(|| "tiercache".to_owned()),
                rotate_period: s.rotate_period.unwrap_or_default(),
                max_size: s.max_size,
                timeout,
            }),
            "network" => StoreConfig::Network(NetworkStore {
                url: self.required(s.url, path, &ty, "url")?,
                timeout,
            }),
            "null" => StoreConfig::Null(NullStore { timeout }),
            "buffer" => {
                let primary = self.required(s.primary, path, &ty, "primary")?;
                let secondary = self.required(s.secondary, path, &ty, "secondary")?;
                let primary = self.store_ref(primary, with(path, key("primary")))?;
                let at = with(path, key("secondary"));
                let secondary = self.store_ref(secondary, at.clone())?;
                match &secondary {
                    StoreRef::Named(n) => self.named_secondaries.push((n.clone(), at)),
                    StoreRef::Inline(c) => self.secondary_is_a_log(c, &at)?,
                }
                StoreConfig::Buffer(BufferStore {
                    primary,
                    secondary,
                    max_queue_length: s.max_queue_length.unwrap_or(2_000_000),
                    retry_interval: s
                        .retry_interval
                        .unwrap_or(std::time::Duration::from_secs(300)),
                    retry_interval_range: s
                        .retry_interval_range
                        .unwrap_or(std::time::Duration::from_secs(60)),
                    timeout,
                })
            }
            "bucket" => {
                let buckets = self.required(s.buckets, path, &ty, "buckets")?;
                let buckets = self.non_empty(buckets, path, "buckets")?;
                StoreConfig::Bucket(BucketStore {
                    buckets: self.refs(buckets, path, "buckets")?,
                    hash: s.hash.unwrap_or_default(),
                    delimiter: s.delimiter,
                    timeout,
                })
            }
            _ => {
                let stores = self.required(s.stores, path, &ty, "stores")?;
                let stores = self.non_empty(stores, path, "stores")?;
                StoreConfig::Multi(MultiStore {
                    stores: self.refs(stores, path, "stores")?,
                    report_success: s.report_success.unwrap_or_default(),
                    timeout,
                })
            }
        })
    }
}

impl Ctx<'_> {
    /// A buffer's secondary must replay its writes in order: a `file` store.
    fn secondary_is_a_log(&self, store: &StoreConfig, at: &[Seg]) -> Res<()> {
        if matches!(store, StoreConfig::File(_)) {
            return Ok(());
        }
        Err(self.err(
            at,
            format!(
                "a buffer's secondary must be a `file` store, which keeps its writes (deletes too) in order so they can be replayed to the primary; `{}` cannot",
                store.type_name()
            ),
        ))
    }
}

/// Finds a cycle among named stores; returns the reference that closes it.
fn find_cycle(
    edges: &BTreeMap<String, Vec<(String, Vec<Seg>)>>,
) -> Option<(Vec<String>, Vec<Seg>)> {
    // 0 = unvisited, 1 = on the stack, 2 = done
    fn dfs(
        n: &str,
        edges: &BTreeMap<String, Vec<(String, Vec<Seg>)>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<(Vec<String>, Vec<Seg>)> {
        state.insert(n.to_owned(), 1);
        stack.push(n.to_owned());
        for (to, at) in edges.get(n).into_iter().flatten() {
            match state.get(to).copied().unwrap_or(0) {
                1 => {
                    let start = stack.iter().position(|s| s == to).unwrap_or(0);
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(to.clone());
                    return Some((cycle, at.clone()));
                }
                0 => {
                    if let Some(c) = dfs(to, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_owned(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in edges.keys() {
        if state.get(n).copied().unwrap_or(0) == 0 {
            if let Some(c) = dfs(n, edges, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// Lower-cases header field names and checks they are tokens (RFC 9110 §5.1).
fn header_names(cx: &Ctx<'_>, names: Vec<String>, path: &[Seg]) -> Res<Vec<String>> {
    names
        .into_iter()
        .enumerate()
        .map(|(i, n)| {
            let tchar = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
            if n.is_empty() || !n.chars().all(tchar) {
                return Err(cx.err(
                    &with(path, Seg::Index(i)),
                    format!("invalid header field name {n:?}"),
                ));
            }
            Ok(n.to_ascii_lowercase())
        })
        .collect()
}

/// Validates the raw file and fills in defaults.
pub(crate) fn validate(raw: RawConfig, file: &str, text: &str) -> Res<Config> {
    let mut known: BTreeSet<String> = raw.store.keys().cloned().collect();
    known.insert("main".to_owned());
    let mut cx = Ctx {
        file,
        text,
        known,
        refs: Vec::new(),
        named_secondaries: Vec::new(),
    };

    if let crate::model::BusyPollSetting::Window(w) = raw.server.busy_poll {
        if w > std::time::Duration::from_secs(1) {
            return Err(cx.err(
                &[key("server"), key("busy_poll")],
                concat!(
                    "must be at most 1s (a window after each request, typically \"10us\"; ",
                    "\"auto\" is the default, \"off\" turns it off)"
                ),
            ));
        }
    }
    if raw.server.max_clients == 0 {
        return Err(cx.err(&[key("server"), key("max_clients")], "must be at least 1"));
    }
    for (name, v) in [
        ("max_key_bytes", raw.server.max_key_bytes),
        ("max_value_bytes", raw.server.max_value_bytes),
        ("max_request_bytes", raw.server.max_request_bytes),
    ] {
        if v == 0 {
            return Err(cx.err(&[key("server"), key(name)], "must be at least 1 byte"));
        }
    }

    // Named stores, and the named references each makes (for cycles).
    let mut stores = BTreeMap::new();
    let mut edges: BTreeMap<String, Vec<(String, Vec<Seg>)>> = BTreeMap::new();
    for (name, s) in raw.store {
        let path = [key("store"), key(&name)];
        let before = cx.refs.len();
        let conf = cx.store(s, &path)?;
        edges.insert(name.clone(), cx.refs[before..].to_vec());
        stores.insert(name, conf);
    }
    if let Some((cycle, at)) = find_cycle(&edges) {
        return Err(cx.err(&at, format!("store cycle: {}", cycle.join(" -> "))));
    }

    let mut namespaces = BTreeMap::new();
    for (name, ns) in raw.namespace {
        let path = [key("namespace"), key(&name)];
        if name.is_empty() {
            return Err(cx.err(
                &path,
                "a namespace name must be \"default\" or a non-empty key prefix",
            ));
        }
        if ns.flush_batch == 0 {
            return Err(cx.err(&with(&path, key("flush_batch")), "must be at least 1"));
        }
        let tiers = match ns.tiers {
            Some(t) => cx.refs(t, &path, "tiers")?,
            None => {
                cx.refs.push(("main".to_owned(), path.to_vec()));
                NamespaceConfig::default().tiers
            }
        };
        namespaces.insert(
            name,
            NamespaceConfig {
                tiers,
                write: ns.write,
                flush_interval: ns.flush_interval,
                flush_batch: ns.flush_batch,
                ttl: ns.ttl,
                fsync: ns.fsync,
            },
        );
    }
    if !namespaces.contains_key("default") {
        cx.refs.push(("main".to_owned(), Vec::new()));
        namespaces.insert("default".to_owned(), NamespaceConfig::default());
    }

    let h = raw.http_cache;
    let hpath = [key("http_cache")];
    if let Some(u) = &h.upstream {
        if !(u.starts_with("http://") || u.starts_with("https://")) {
            return Err(cx.err(
                &with(&hpath, key("upstream")),
                format!("invalid upstream {u:?}: expected an http:// or https:// URL"),
            ));
        }
    }
    let tiers = match h.tiers {
        Some(t) => Some(cx.refs(t, &hpath, "tiers")?),
        None => None,
    };
    let field = |f: &str| with(&hpath, key(f));
    if h.max_object_size == 0 {
        return Err(cx.err(&field("max_object_size"), "must be at least 1 byte"));
    }
    if h.max_header_bytes < 1024 {
        return Err(cx.err(&field("max_header_bytes"), "must be at least 1KiB"));
    }
    for name in ["coalesce_timeout", "upstream_timeout"] {
        let v = if name == "coalesce_timeout" {
            h.coalesce_timeout
        } else {
            h.upstream_timeout
        };
        if v.is_zero() {
            return Err(cx.err(&field(name), "must be more than zero"));
        }
    }
    if h.purge_token.as_deref() == Some("") {
        return Err(cx.err(
            &field("purge_token"),
            "must not be empty (omit it to disable purging)",
        ));
    }
    if !(h.admin_prefix.starts_with('/')
        && h.admin_prefix.ends_with('/')
        && h.admin_prefix.len() > 1)
    {
        return Err(cx.err(
            &field("admin_prefix"),
            format!(
                "invalid admin prefix {:?}: expected a path like \"/_tiercache/\"",
                h.admin_prefix
            ),
        ));
    }
    let key_headers = header_names(&cx, h.key_headers, &field("key_headers"))?;
    let mut rules = Vec::new();
    for (i, r) in h.rule.into_iter().enumerate() {
        let rpath = with(&field("rule"), Seg::Index(i));
        let Some(prefix) = r.prefix else {
            return Err(cx.err(
                &rpath,
                "a rule needs a `prefix` (a request path prefix such as \"/api/\")",
            ));
        };
        if !prefix.starts_with('/') {
            return Err(cx.err(
                &with(&rpath, key("prefix")),
                format!("invalid prefix {prefix:?}: must start with '/'"),
            ));
        }
        for c in &r.bypass_cookies {
            if c.is_empty() || c.contains([';', '=', ' ']) {
                return Err(cx.err(
                    &with(&rpath, key("bypass_cookies")),
                    format!("invalid cookie name {c:?}"),
                ));
            }
        }
        rules.push(HttpRule {
            prefix,
            ttl: r.ttl.map(|d| d.0),
            default_ttl: r.default_ttl.map(|d| d.0),
            bypass: r.bypass,
            bypass_headers: header_names(
                &cx,
                r.bypass_headers,
                &with(&rpath, key("bypass_headers")),
            )?,
            bypass_cookies: r.bypass_cookies,
        });
    }
    let http_cache = HttpCacheConfig {
        listen: h.listen,
        upstream: h.upstream,
        tiers,
        default_ttl: h.default_ttl,
        max_object_size: h.max_object_size,
        coalesce_timeout: h.coalesce_timeout,
        upstream_timeout: h.upstream_timeout,
        stale_retention: h.stale_retention,
        key_headers,
        purge_token: h.purge_token,
        admin_prefix: h.admin_prefix,
        max_header_bytes: h.max_header_bytes,
        rules,
    };

    if !stores.contains_key("main") && cx.refs.iter().any(|(n, _)| n == "main") {
        stores.insert("main".to_owned(), crate::default_main_store());
    }

    // A named secondary is a file store used by that buffer alone: another
    // user (a tier, a second buffer) would see or replay its writes.
    for (name, at) in &cx.named_secondaries {
        let store = stores
            .get(name)
            .expect("references were resolved against the defined stores");
        cx.secondary_is_a_log(store, at)?;
        let uses = cx.refs.iter().filter(|(n, _)| n == name).count();
        if uses > 1 {
            return Err(cx.err(
                at,
                format!(
                    "store '{name}' is a buffer's secondary and is used {uses} times; a secondary must be used by its buffer alone"
                ),
            ));
        }
    }

    Ok(Config {
        server: raw.server,
        memory: raw.memory,
        namespaces,
        stores,
        http_cache,
    })
}
