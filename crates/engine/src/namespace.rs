//! Namespaces: sets of keys chosen by prefix, each with its own tier stack,
//! write mode and default TTL (Scribe's categories).

use crate::journal::FsyncPolicy;
use crate::store::Store;
use std::sync::Arc;
use std::time::Duration;

/// When a write is acknowledged and how it reaches the stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteMode {
    /// Acknowledged after the stores (system of record first) have it.
    Through,
    /// Acknowledged after a durable journal append; stores are written in batches.
    Back,
    /// Written to the stores; the memory tier copy is invalidated, not updated.
    Around,
}

impl std::str::FromStr for WriteMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "through" => Ok(WriteMode::Through),
            "back" => Ok(WriteMode::Back),
            "around" => Ok(WriteMode::Around),
            other => Err(format!(
                "unknown write mode '{other}' (expected through, back or around)"
            )),
        }
    }
}

/// How one namespace behaves. The name is the key prefix, except `default`,
/// which catches every key no other prefix claims.
///
/// ```
/// use tiercache_engine::{NamespaceConfig, WriteMode};
/// use std::time::Duration;
/// let ns = NamespaceConfig::new("session:", WriteMode::Through).ttl(Duration::from_secs(1800));
/// assert_eq!(ns.prefix(), b"session:");
/// assert_eq!(NamespaceConfig::new("default", WriteMode::Back).prefix(), b"");
/// ```
#[derive(Clone)]
pub struct NamespaceConfig {
    /// `default` or the key prefix.
    pub name: String,
    /// Stores below the memory tier, top to bottom; the last is the system of record.
    pub stores: Vec<Arc<dyn Store>>,
    /// Write mode.
    pub write_mode: WriteMode,
    /// Expiry given to writes that carry none; zero means none.
    pub default_ttl: Duration,
    /// Write-back: flush at least this often.
    pub flush_interval: Duration,
    /// Write-back: flush as soon as this many keys are dirty; also the largest batch.
    pub flush_batch: usize,
    /// Write-back: when journal appends reach the disk.
    pub fsync: FsyncPolicy,
}

impl NamespaceConfig {
    /// A namespace with no stores (a pure cache) and the SPEC's defaults.
    pub fn new(name: impl Into<String>, write_mode: WriteMode) -> Self {
        NamespaceConfig {
            name: name.into(),
            stores: Vec::new(),
            write_mode,
            default_ttl: Duration::ZERO,
            flush_interval: Duration::from_secs(1),
            flush_batch: 10_000,
            fsync: FsyncPolicy::EverySec,
        }
    }

    /// Appends a store below the ones already added (the last added is the SoR).
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.stores.push(store);
        self
    }

    /// Sets the default TTL.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.default_ttl = ttl;
        self
    }

    /// Sets the write-back flush interval and batch size.
    pub fn flush(mut self, interval: Duration, batch: usize) -> Self {
        self.flush_interval = interval;
        self.flush_batch = batch.max(1);
        self
    }

    /// Sets the journal fsync policy.
    pub fn fsync(mut self, policy: FsyncPolicy) -> Self {
        self.fsync = policy;
        self
    }

    /// The key prefix this namespace claims (empty for `default`).
    pub fn prefix(&self) -> &[u8] {
        if self.name == "default" {
            b""
        } else {
            self.name.as_bytes()
        }
    }
}

/// Picks the namespace for a key: the longest matching prefix wins.
pub(crate) struct NamespaceRouter {
    /// (prefix, namespace index), longest prefix first.
    prefixes: Vec<(Vec<u8>, usize)>,
    default: usize,
}

impl NamespaceRouter {
    pub(crate) fn new(configs: &[NamespaceConfig]) -> Self {
        let mut prefixes: Vec<(Vec<u8>, usize)> = configs
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.prefix().is_empty())
            .map(|(i, c)| (c.prefix().to_vec(), i))
            .collect();
        prefixes.sort_by_key(|p| std::cmp::Reverse(p.0.len()));
        let default = configs
            .iter()
            .position(|c| c.prefix().is_empty())
            .unwrap_or(usize::MAX);
        NamespaceRouter { prefixes, default }
    }

    /// Index of the namespace owning `key`.
    pub(crate) fn route(&self, key: &[u8]) -> usize {
        self.prefixes
            .iter()
            .find(|(p, _)| key.starts_with(p))
            .map(|(_, i)| *i)
            .unwrap_or(self.default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins_and_default_catches_the_rest() {
        let cfgs = vec![
            NamespaceConfig::new("default", WriteMode::Back),
            NamespaceConfig::new("s:", WriteMode::Back),
            NamespaceConfig::new("s:long:", WriteMode::Back),
        ];
        let r = NamespaceRouter::new(&cfgs);
        assert_eq!(r.route(b"s:long:x"), 2);
        assert_eq!(r.route(b"s:x"), 1);
        assert_eq!(r.route(b"other"), 0);
        assert_eq!(r.route(b""), 0);
    }
}
