//! The file as deserialized, before semantic validation. Stores are read
//! field by field (any `type`'s keys) so that a key that is wrong for one
//! store type can be reported with that type's list of keys.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

use crate::model::{
    BucketHash, FsyncMode, MemoryConfig, ReportSuccess, RotatePeriod, ServerConfig, WriteMode,
};
use crate::units::{self, ListenAddr};

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct RawConfig {
    pub server: ServerConfig,
    pub memory: MemoryConfig,
    pub namespace: BTreeMap<String, RawNamespace>,
    pub store: BTreeMap<String, RawStore>,
    pub http_cache: RawHttpCache,
}

#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct RawNamespace {
    pub tiers: Option<Vec<RawStoreRef>>,
    #[serde(deserialize_with = "units::de_enum")]
    pub write: WriteMode,
    #[serde(deserialize_with = "units::de_duration")]
    pub flush_interval: Duration,
    pub flush_batch: usize,
    #[serde(deserialize_with = "units::de_duration")]
    pub ttl: Duration,
    #[serde(deserialize_with = "units::de_enum")]
    pub fsync: FsyncMode,
}

impl Default for RawNamespace {
    fn default() -> Self {
        let d = crate::model::NamespaceConfig::default();
        RawNamespace {
            tiers: None,
            write: d.write,
            flush_interval: d.flush_interval,
            flush_batch: d.flush_batch,
            ttl: d.ttl,
            fsync: d.fsync,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct RawHttpCache {
    pub listen: ListenAddr,
    pub upstream: Option<String>,
    pub tiers: Option<Vec<RawStoreRef>>,
    #[serde(deserialize_with = "units::de_duration")]
    pub default_ttl: Duration,
    #[serde(deserialize_with = "units::de_size")]
    pub max_object_size: u64,
    #[serde(deserialize_with = "units::de_duration")]
    pub coalesce_timeout: Duration,
    #[serde(deserialize_with = "units::de_duration")]
    pub upstream_timeout: Duration,
    #[serde(deserialize_with = "units::de_duration")]
    pub stale_retention: Duration,
    pub key_headers: Vec<String>,
    pub purge_token: Option<String>,
    pub admin_prefix: String,
    #[serde(deserialize_with = "units::de_size")]
    pub max_header_bytes: u64,
    pub rule: Vec<RawHttpRule>,
}

impl Default for RawHttpCache {
    fn default() -> Self {
        let d = crate::model::HttpCacheConfig::default();
        RawHttpCache {
            listen: d.listen,
            upstream: None,
            tiers: None,
            default_ttl: d.default_ttl,
            max_object_size: d.max_object_size,
            coalesce_timeout: d.coalesce_timeout,
            upstream_timeout: d.upstream_timeout,
            stale_retention: d.stale_retention,
            key_headers: Vec::new(),
            purge_token: None,
            admin_prefix: d.admin_prefix,
            max_header_bytes: d.max_header_bytes,
            rule: Vec::new(),
        }
    }
}

/// `[[http_cache.rule]]`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct RawHttpRule {
    pub prefix: Option<String>,
    pub ttl: Option<Dur>,
    pub default_ttl: Option<Dur>,
    pub bypass: bool,
    pub bypass_headers: Vec<String>,
    pub bypass_cookies: Vec<String>,
}

#[derive(Debug)]
pub(crate) enum RawStoreRef {
    Named(String),
    Inline(Box<RawStore>),
}

impl<'de> Deserialize<'de> for RawStoreRef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawStoreRef;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a store name or an inline store table with a `type`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawStoreRef, E> {
                Ok(RawStoreRef::Named(v.to_owned()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawStoreRef, A::Error> {
                RawStoreVisitor
                    .visit_map(map)
                    .map(|s| RawStoreRef::Inline(Box::new(s)))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug)]
pub(crate) struct Dur(pub Duration);

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        units::de_duration(d).map(Dur)
    }
}

struct Size(u64);

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        units::de_size(d).map(Size)
    }
}

/// Every key any store type takes; which ones are allowed is checked later.
#[derive(Debug, Default)]
pub(crate) struct RawStore {
    /// All keys in file order (including unknown ones).
    pub keys: Vec<String>,
    pub ty: Option<String>,
    pub timeout: Option<Duration>,
    pub path: Option<String>,
    pub table: Option<String>,
    pub exclusive: Option<bool>,
    pub write_nice: Option<i64>,
    pub url: Option<String>,
    pub cluster: Option<Vec<String>>,
    pub pool_size: Option<u32>,
    pub servers: Option<Vec<String>>,
    pub base_filename: Option<String>,
    pub rotate_period: Option<RotatePeriod>,
    pub max_size: Option<u64>,
    pub primary: Option<RawStoreRef>,
    pub secondary: Option<RawStoreRef>,
    pub max_queue_length: Option<u64>,
    pub retry_interval: Option<Duration>,
    pub retry_interval_range: Option<Duration>,
    pub buckets: Option<Vec<RawStoreRef>>,
    pub hash: Option<BucketHash>,
    pub delimiter: Option<String>,
    pub stores: Option<Vec<RawStoreRef>>,
    pub report_success: Option<ReportSuccess>,
}

impl<'de> Deserialize<'de> for RawStore {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(RawStoreVisitor)
    }
}

struct RawStoreVisitor;

impl<'de> Visitor<'de> for RawStoreVisitor {
    type Value = RawStore;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a store table with a `type`")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawStore, A::Error> {
        let mut s = RawStore::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "type" => s.ty = Some(map.next_value()?),
                "timeout" => s.timeout = Some(map.next_value::<Dur>()?.0),
                "path" => s.path = Some(map.next_value()?),
                "table" => s.table = Some(map.next_value()?),
                "exclusive" => s.exclusive = Some(map.next_value()?),
                "write_nice" => s.write_nice = Some(map.next_value()?),
                "url" => s.url = Some(map.next_value()?),
                "cluster" => s.cluster = Some(map.next_value()?),
                "pool_size" => s.pool_size = Some(map.next_value()?),
                "servers" => s.servers = Some(map.next_value()?),
                "base_filename" => s.base_filename = Some(map.next_value()?),
                "rotate_period" => s.rotate_period = Some(map.next_value::<units::EnumStr<_>>()?.0),
                "max_size" => s.max_size = Some(map.next_value::<Size>()?.0),
                "primary" => s.primary = Some(map.next_value()?),
                "secondary" => s.secondary = Some(map.next_value()?),
                "max_queue_length" => s.max_queue_length = Some(map.next_value()?),
                "retry_interval" => s.retry_interval = Some(map.next_value::<Dur>()?.0),
                "retry_interval_range" => s.retry_interval_range = Some(map.next_value::<Dur>()?.0),
                "buckets" => s.buckets = Some(map.next_value()?),
                "hash" => s.hash = Some(map.next_value::<units::EnumStr<_>>()?.0),
                "delimiter" => s.delimiter = Some(map.next_value()?),
                "stores" => s.stores = Some(map.next_value()?),
                "report_success" => {
                    s.report_success = Some(map.next_value::<units::EnumStr<_>>()?.0)
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            s.keys.push(key);
        }
        Ok(s)
    }
}
