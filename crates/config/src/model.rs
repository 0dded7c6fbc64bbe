//! The public, validated configuration types.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::units::{self, ListenAddr};

/// The whole configuration file, validated, with SPEC defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `[server]`: listeners and limits.
    pub server: ServerConfig,
    /// `[memory]`: the in-process memory tier (L1).
    pub memory: MemoryConfig,
    /// `[namespace.NAME]` by name (`"default"` or a key prefix). Always holds
    /// `"default"`. Prefer [`Config::namespaces`] for ordered access.
    pub namespaces: BTreeMap<String, NamespaceConfig>,
    /// `[store.NAME]` by name. Holds the implied `main` store (SQLite
    /// `tiercache.db`) when something uses `main` without defining it.
    pub stores: BTreeMap<String, StoreConfig>,
    /// `[http_cache]`: the HTTP micro-cache (`tiercache proxy`).
    pub http_cache: HttpCacheConfig,
}

/// `[server]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Redis-protocol listener; default `127.0.0.1:6380`.
    pub resp: ListenAddr,
    /// memcached-protocol listener; default `127.0.0.1:11212`.
    pub memcache: ListenAddr,
    /// Admin HTTP listener (`/metrics`, `/healthz`); default `127.0.0.1:9380`.
    pub admin: ListenAddr,
    /// When set, clients must `AUTH` with it.
    pub requirepass: Option<String>,
    /// Maximum simultaneous clients; default 10000.
    pub max_clients: u32,
    /// Largest key accepted, bytes; default 64 KiB.
    #[serde(deserialize_with = "units::de_size")]
    pub max_key_bytes: u64,
    /// Largest value accepted, bytes; default 64 MiB.
    #[serde(deserialize_with = "units::de_size")]
    pub max_value_bytes: u64,
    /// Largest request accepted, bytes; default 128 MiB.
    #[serde(deserialize_with = "units::de_size")]
    pub max_request_bytes: u64,
    /// Idle client timeout; zero (the default, `"0s"`) means none.
    /// See [`ServerConfig::idle_timeout`].
    #[serde(deserialize_with = "units::de_duration")]
    pub idle_timeout: Duration,
    /// Whether the server's thread keeps polling its sockets for a while
    /// after requests instead of going to sleep: `"auto"` (the default),
    /// a window such as `"50us"` (at most 1 s), or `"off"`/`"0s"`. See
    /// [`BusyPollSetting`].
    #[serde(deserialize_with = "units::de_busy_poll")]
    pub busy_poll: BusyPollSetting,
    /// Who may run Redis's `DEBUG` command: `"no"` (the default, as
    /// Redis 7), `"local"` (clients on loopback or the unix socket), or
    /// `"yes"` (anyone: for test suites).
    pub enable_debug_command: DebugCommand,
}

/// `[server] enable_debug_command`: Redis 7's `enable-debug-command`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DebugCommand {
    /// Refused to everyone.
    #[default]
    No,
    /// Allowed from loopback addresses and unix sockets.
    Local,
    /// Allowed to every client.
    Yes,
}

impl std::str::FromStr for DebugCommand {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "no" => Ok(DebugCommand::No),
            "local" => Ok(DebugCommand::Local),
            "yes" => Ok(DebugCommand::Yes),
            other => Err(format!("'{other}' is not one of no, local, yes")),
        }
    }
}

/// `[server] busy_poll`: how long the server's thread polls its sockets
/// after a request before it sleeps.
///
/// Polling saves the wake-up per request under load (the client's `send`
/// no longer pays for waking a sleeping server), at the price of some CPU
/// spent polling; `tiercache_server::BusyPoll` has the details and the
/// bound on that CPU.
///
/// ```
/// use std::time::Duration;
/// use tiercache_config::BusyPollSetting;
///
/// // One worker thread: the thread that polls is the one that serves.
/// assert_eq!(BusyPollSetting::Auto.window(1), Some(BusyPollSetting::AUTO_WINDOW));
/// // Several: off, tokio's other workers would still sleep in epoll.
/// assert_eq!(BusyPollSetting::Auto.window(4), None);
/// let set = BusyPollSetting::Window(Duration::from_micros(50));
/// assert_eq!(set.window(4), Some(Duration::from_micros(50)));
/// assert_eq!(BusyPollSetting::Window(Duration::ZERO).window(1), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BusyPollSetting {
    /// `"auto"`: [`BusyPollSetting::AUTO_WINDOW`] when the server runs on
    /// one worker thread, off on several. On one thread the poller owns
    /// the sockets; with tokio's multi-threaded scheduler only the worker
    /// parked in `epoll_wait` polls them, so a spinning worker would burn
    /// CPU without catching a request.
    Auto,
    /// Poll for this long after each request; zero (`"0s"`, `"off"`)
    /// never polls.
    Window(Duration),
}

impl BusyPollSetting {
    /// The window `"auto"` uses. Windows of 5 to 50 µs all gave most of
    /// the gain against `redis-benchmark` (BENCHMARKS.md, sessions 32–33),
    /// and the shorter a window, the less CPU a quiet spell can cost.
    pub const AUTO_WINDOW: Duration = Duration::from_micros(10);

    /// The window to poll for on a runtime with `workers` threads, `None`
    /// when the server should not poll.
    pub fn window(self, workers: usize) -> Option<Duration> {
        match self {
            BusyPollSetting::Auto => (workers == 1).then_some(Self::AUTO_WINDOW),
            BusyPollSetting::Window(w) => (!w.is_zero()).then_some(w),
        }
    }
}

impl ServerConfig {
    /// The idle client timeout, `None` when off (configured as zero).
    pub fn idle_timeout(&self) -> Option<Duration> {
        (!self.idle_timeout.is_zero()).then_some(self.idle_timeout)
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            resp: ListenAddr::Tcp("127.0.0.1:6380".into()),
            memcache: ListenAddr::Tcp("127.0.0.1:11212".into()),
            admin: ListenAddr::Tcp("127.0.0.1:9380".into()),
            requirepass: None,
            max_clients: 10_000,
            max_key_bytes: 64 << 10,
            max_value_bytes: 64 << 20,
            max_request_bytes: 128 << 20,
            idle_timeout: Duration::ZERO,
            busy_poll: BusyPollSetting::Auto,
            enable_debug_command: DebugCommand::No,
        }
    }
}

/// `[memory]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// Budget for keys + values + per-entry overhead, bytes; default 256 MiB.
    #[serde(deserialize_with = "units::de_size")]
    pub max_bytes: u64,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            max_bytes: 256 << 20,
        }
    }
}

/// A namespace's write mode (`write = "through" | "back" | "around"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WriteMode {
    /// Acknowledged after the system of record has it.
    Through,
    /// Acknowledged after a durable journal append; flushed in batches.
    #[default]
    Back,
    /// Write the system of record, invalidate the memory tier.
    Around,
}

/// When the write-back journal is fsynced (`fsync = "always" | "everysec" | "no"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsyncMode {
    /// Before every acknowledgement.
    Always,
    /// At most once a second.
    #[default]
    Everysec,
    /// Left to the operating system.
    No,
}

/// `[namespace.NAME]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceConfig {
    /// Stores below the memory tier, top to bottom; the last is the system of
    /// record. Empty = pure cache. Default `["main"]`.
    pub tiers: Vec<StoreRef>,
    /// Default [`WriteMode::Back`].
    pub write: WriteMode,
    /// Write-back flush period; default 1 s.
    pub flush_interval: Duration,
    /// Write-back flush batch size (≥ 1); default 10000.
    pub flush_batch: usize,
    /// Default expiry of keys; zero (the default) = none.
    pub ttl: Duration,
    /// Journal fsync policy; default [`FsyncMode::Everysec`].
    pub fsync: FsyncMode,
}

impl NamespaceConfig {
    /// The default TTL, `None` when zero (no expiry).
    pub fn ttl(&self) -> Option<Duration> {
        (!self.ttl.is_zero()).then_some(self.ttl)
    }
}

impl Default for NamespaceConfig {
    fn default() -> Self {
        NamespaceConfig {
            tiers: vec![StoreRef::Named("main".into())],
            write: WriteMode::Back,
            flush_interval: Duration::from_secs(1),
            flush_batch: 10_000,
            ttl: Duration::ZERO,
            fsync: FsyncMode::Everysec,
        }
    }
}

/// A nested store: the name of a `[store.NAME]` or an inline table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreRef {
    /// `"main"`: refers to `[store.main]` (checked to exist).
    Named(String),
    /// `{ type = "sqlite", path = "a.db" }`.
    Inline(Box<StoreConfig>),
}

impl StoreRef {
    /// Follows a name through `config`; inline stores are returned as is.
    pub fn resolve<'a>(&'a self, config: &'a Config) -> Option<&'a StoreConfig> {
        match self {
            StoreRef::Named(n) => config.stores.get(n),
            StoreRef::Inline(s) => Some(s),
        }
    }
}

/// `[store.NAME]` or an inline store, by `type`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreConfig {
    /// `type = "sqlite"`.
    Sqlite(SqliteStore),
    /// `type = "redis"`.
    Redis(RedisStore),
    /// `type = "memcached"`.
    Memcached(MemcachedStore),
    /// `type = "postgres"`.
    Postgres(SqlStore),
    /// `type = "mysql"`.
    Mysql(SqlStore),
    /// `type = "file"`.
    File(FileStore),
    /// `type = "network"`.
    Network(NetworkStore),
    /// `type = "null"`.
    Null(NullStore),
    /// `type = "buffer"`.
    Buffer(BufferStore),
    /// `type = "bucket"`.
    Bucket(BucketStore),
    /// `type = "multi"`.
    Multi(MultiStore),
}

impl StoreConfig {
    /// The `type` string (`"sqlite"`, `"buffer"`, ...).
    pub fn type_name(&self) -> &'static str {
        match self {
            StoreConfig::Sqlite(_) => "sqlite",
            StoreConfig::Redis(_) => "redis",
            StoreConfig::Memcached(_) => "memcached",
            StoreConfig::Postgres(_) => "postgres",
            StoreConfig::Mysql(_) => "mysql",
            StoreConfig::File(_) => "file",
            StoreConfig::Network(_) => "network",
            StoreConfig::Null(_) => "null",
            StoreConfig::Buffer(_) => "buffer",
            StoreConfig::Bucket(_) => "bucket",
            StoreConfig::Multi(_) => "multi",
        }
    }

    /// The optional per-operation `timeout` every store takes.
    pub fn timeout(&self) -> Option<Duration> {
        match self {
            StoreConfig::Sqlite(s) => s.timeout,
            StoreConfig::Redis(s) => s.timeout,
            StoreConfig::Memcached(s) => s.timeout,
            StoreConfig::Postgres(s) | StoreConfig::Mysql(s) => s.timeout,
            StoreConfig::File(s) => s.timeout,
            StoreConfig::Network(s) => s.timeout,
            StoreConfig::Null(s) => s.timeout,
            StoreConfig::Buffer(s) => s.timeout,
            StoreConfig::Bucket(s) => s.timeout,
            StoreConfig::Multi(s) => s.timeout,
        }
    }

    /// The nested store references of a combinator (empty for leaf stores).
    pub fn children(&self) -> Vec<&StoreRef> {
        match self {
            StoreConfig::Buffer(b) => vec![&b.primary, &b.secondary],
            StoreConfig::Bucket(b) => b.buckets.iter().collect(),
            StoreConfig::Multi(m) => m.stores.iter().collect(),
            _ => Vec::new(),
        }
    }
}

/// Default [`SqliteStore::write_nice`]: a flush runs in the CPU time the
/// request path leaves (measured in `tiercache-stores`' `sqlite/writer.rs`).
pub const DEFAULT_WRITE_NICE: u8 = 19;

/// `type = "sqlite"`: `path` (relative to the data dir), `table` (default `kv`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteStore {
    /// Database file, relative paths are relative to `--data-dir`.
    pub path: PathBuf,
    /// Table name; default `kv`.
    pub table: String,
    /// Only tiercache writes this database (default true): misses on keys
    /// it never wrote are answered without a lookup. Set false when other
    /// programs write the file.
    pub exclusive: bool,
    /// How many niceness steps below the server its writes (the write-back
    /// flush) run, 0–19; default [`DEFAULT_WRITE_NICE`]. Linux only.
    pub write_nice: u8,
    /// Optional operation timeout.
    pub timeout: Option<Duration>,
}

/// Where a Redis store connects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedisTarget {
    /// `url = "redis://host:port/db"` or `"unix:/path"`.
    Url(String),
    /// `cluster = ["host:port", ...]` (non-empty).
    Cluster(Vec<String>),
}

/// `type = "redis"`: `url` or `cluster`, `pool_size`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisStore {
    /// Exactly one of `url` / `cluster`.
    pub target: RedisTarget,
    /// Connections; default 8.
    pub pool_size: u32,
    /// Optional operation timeout.
    pub timeout: Option<Duration>,
}

/// `type = "memcached"`: `servers`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemcachedStore {
    /// `["host:port", ...]`, non-empty.
    pub servers: Vec<String>,
    /// Optional operation timeout.
    pub timeout: Option<Duration>,
}

/// `type = "postgres"` / `"mysql"`: `url`, `table`, `pool_size`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlStore {
    /// Connection URL (`postgres://...`, `mysql://...`).
    pub url: String,
    /// Table name; default `kv`.
    pub table: String,
    /// Connections; default 8.
    pub pool_size: u32,
    /// Optional operation timeout.
    pub timeout: Option<Duration>,
}

/// `rotate_period` of a file store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RotatePeriod {
    /// A new file every hour.
    Hourly,
    /// A new file every day.
    Daily,
    /// Rotate by `max_size` only (the default).
    #[default]
    Never,
}

/// `type = "file"`: append-only log with rotation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStore {
    /// Directory of the log files, relative to the data dir when relative.
    pub path: PathBuf,
    /// File name prefix; default `tiercache`.
    pub base_filename: String,
    /// Default [`RotatePeriod::Never`].
    pub rotate_period: RotatePeriod,
    /// Rotate when a file exceeds this many bytes; `None` = no limit.
    pub max_size: Option<u64>,
    /// Optional operation timeout.
    pub timeout: Option<Duration>,
}

/// `type = "network"`: another tiercache server over RESP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkStore {
    /// `redis://host:port`.
    pub url: String,
    /// Optional operation timeout.
    pub timeout: Option<Duration>,
}

/// `type = "null"`: stores nothing, finds nothing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NullStore {
    /// Optional operation timeout.
    pub timeout: Option<Duration>,
}

/// `type = "buffer"`: primary with a secondary spool while it is down.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferStore {
    /// Where writes go normally.
    pub primary: StoreRef,
    /// Where writes queue while the primary is down.
    pub secondary: StoreRef,
    /// Queue length after which writes go to the secondary; default 2000000.
    pub max_queue_length: u64,
    /// Retry period for a down primary; default 300 s.
    pub retry_interval: Duration,
    /// Random ± spread on `retry_interval`; default 60 s.
    pub retry_interval_range: Duration,
    /// Optional operation timeout.
    pub timeout: Option<Duration>,
}

/// `hash` of a bucket store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BucketHash {
    /// Hash of the key (the default).
    #[default]
    KeyHash,
    /// The key (or its part before `delimiter`) as a number, modulo buckets.
    KeyModulo,
}

/// `type = "bucket"`: sharding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketStore {
    /// The shards, non-empty.
    pub buckets: Vec<StoreRef>,
    /// Default [`BucketHash::KeyHash`].
    pub hash: BucketHash,
    /// Hash only the part of the key before this.
    pub delimiter: Option<String>,
    /// Optional operation timeout.
    pub timeout: Option<Duration>,
}

/// `report_success` of a multi store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReportSuccess {
    /// Success when every store succeeded (the default).
    #[default]
    All,
    /// Success when one store succeeded.
    Any,
}

/// `type = "multi"`: replication.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultiStore {
    /// The replicas, non-empty.
    pub stores: Vec<StoreRef>,
    /// Default [`ReportSuccess::All`].
    pub report_success: ReportSuccess,
    /// Optional operation timeout.
    pub timeout: Option<Duration>,
}

/// `[http_cache]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpCacheConfig {
    /// Default `127.0.0.1:8380`.
    pub listen: ListenAddr,
    /// `http://host:port` of the origin; `None` = must be given with `--upstream`.
    pub upstream: Option<String>,
    /// Where responses live beyond memory; `None` (the default) = the tiers of
    /// the `default` namespace.
    pub tiers: Option<Vec<StoreRef>>,
    /// TTL for responses without freshness information; zero (the default)
    /// = pure RFC 9111 behaviour.
    pub default_ttl: Duration,
    /// Responses larger than this are forwarded, not stored; default 8 MiB.
    pub max_object_size: u64,
    /// How long a request waits for another request's fetch of the same key
    /// before it gets a stale response (when allowed) or `504`; default 10 s.
    pub coalesce_timeout: Duration,
    /// How long the origin may take to answer; default 30 s.
    pub upstream_timeout: Duration,
    /// How long a stale response with a validator is kept for conditional
    /// revalidation; default 10 min.
    pub stale_retention: Duration,
    /// Request header fields added to the cache key (lower-cased).
    pub key_headers: Vec<String>,
    /// Bearer token for purge requests; `None` (the default) disables purging.
    pub purge_token: Option<String>,
    /// Path prefix of the admin endpoints; default `/_tiercache/`.
    pub admin_prefix: String,
    /// Largest request head accepted from a client; default 64 KiB.
    pub max_header_bytes: u64,
    /// `[[http_cache.rule]]`, in file order.
    pub rules: Vec<HttpRule>,
}

impl HttpCacheConfig {
    /// The default TTL, `None` when zero (RFC 9111 behaviour).
    pub fn default_ttl(&self) -> Option<Duration> {
        (!self.default_ttl.is_zero()).then_some(self.default_ttl)
    }
}

impl Default for HttpCacheConfig {
    fn default() -> Self {
        HttpCacheConfig {
            listen: ListenAddr::Tcp("127.0.0.1:8380".into()),
            upstream: None,
            tiers: None,
            default_ttl: Duration::ZERO,
            max_object_size: 8 << 20,
            coalesce_timeout: Duration::from_secs(10),
            upstream_timeout: Duration::from_secs(30),
            stale_retention: Duration::from_secs(600),
            key_headers: Vec::new(),
            purge_token: None,
            admin_prefix: "/_tiercache/".into(),
            max_header_bytes: 64 << 10,
            rules: Vec::new(),
        }
    }
}

/// `[[http_cache.rule]]`: settings for request paths under `prefix` (the
/// longest matching prefix wins).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HttpRule {
    /// Path prefix, starting with `/`.
    pub prefix: String,
    /// Overrides the freshness lifetime of storable responses.
    pub ttl: Option<Duration>,
    /// Freshness lifetime for responses without freshness information.
    pub default_ttl: Option<Duration>,
    /// Never use the cache under this prefix.
    pub bypass: bool,
    /// Bypass the cache when the request has any of these header fields.
    pub bypass_headers: Vec<String>,
    /// Bypass the cache when the request has any of these cookies.
    pub bypass_cookies: Vec<String>,
}
