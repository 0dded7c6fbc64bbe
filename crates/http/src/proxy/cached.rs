//! [`Cached`]: a stored response decoded, with what the policy derives from
//! it (directives, freshness lifetime, age clock), and [`DecodedCache`],
//! which keeps decoded records beside the engine so a hit does not parse
//! the stored header section again.

use crate::config::ProxyConfig;
use crate::policy::freshness::{freshness_lifetime, header_date, stale_window, AgeClock};
use crate::policy::storable::configured_ttl_applies;
use crate::policy::validate::has_validator;
use crate::policy::vary::VarySpec;
use crate::policy::ResponseDirectives;
use crate::stored::{Record, StoredResponse};
use bytes::Bytes;
use hyper::header::{HeaderName, DATE};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// A stored response, decoded, with its derived policy inputs.
#[derive(Debug)]
pub struct Cached {
    /// The response as stored.
    pub stored: StoredResponse,
    /// Its `Cache-Control`.
    pub cc: ResponseDirectives,
    /// Freshness lifetime in seconds (configured TTLs applied).
    pub lifetime: u64,
    /// Its age clock.
    pub clock: AgeClock,
    /// Its `Vary` fields (empty without `Vary`).
    pub vary: Vec<HeaderName>,
}

impl Cached {
    /// Derives the policy inputs of `stored`, a response for `path`.
    pub fn new(stored: StoredResponse, config: &ProxyConfig, path: &str) -> Cached {
        let h = &stored.headers;
        let cc = ResponseDirectives::parse(h);
        let date = header_date(h, &DATE).unwrap_or(stored.response_time_ms / 1000);
        let age_value = crate::policy::freshness::age_value(h);
        let clock = AgeClock::new(
            date,
            age_value,
            stored.request_time_ms,
            stored.response_time_ms,
        );
        let lifetime = lifetime(&stored, &cc, date, config, path).unwrap_or(0);
        let vary = match VarySpec::of(h) {
            VarySpec::Fields(f) => f,
            _ => Vec::new(),
        };
        Cached {
            stored,
            cc,
            lifetime,
            clock,
            vary,
        }
    }

    /// Current age in seconds (RFC 9111 §4.2.3).
    pub fn age(&self, now_ms: u64) -> u64 {
        self.clock.current_age(now_ms)
    }

    /// When the engine may drop this record (Unix ms): when it is no longer
    /// fresh, nor inside a stale window, nor worth keeping for
    /// revalidation. `None` when it is useless already.
    pub fn keep_until_ms(&self, config: &ProxyConfig) -> Option<u64> {
        let fresh_for = self
            .lifetime
            .saturating_sub(self.clock.corrected_initial_age);
        let mut extra = stale_window(&self.cc);
        if has_validator(&self.stored.headers) {
            extra = extra.max(config.stale_retention.as_secs());
        }
        let keep_secs = fresh_for.saturating_add(extra);
        if keep_secs == 0 {
            return None;
        }
        Some(
            self.stored
                .response_time_ms
                .saturating_add(keep_secs.saturating_mul(1000)),
        )
    }
}

/// The freshness lifetime with the micro-cache's knobs: a rule's `ttl`
/// overrides; RFC 9111 otherwise; then a rule's or the global
/// `default_ttl` for responses without freshness information. Configured
/// TTLs never apply to responses that set cookies.
pub fn lifetime(
    stored: &StoredResponse,
    cc: &ResponseDirectives,
    date: u64,
    config: &ProxyConfig,
    path: &str,
) -> Option<u64> {
    let rule = config.rule_for(path);
    let configurable = configured_ttl_applies(stored.status, &stored.headers);
    if configurable {
        if let Some(ttl) = rule.and_then(|r| r.ttl) {
            return Some(ttl.as_secs());
        }
    }
    if let Some((l, _)) = freshness_lifetime(stored.status, &stored.headers, cc, date) {
        return Some(l);
    }
    if configurable {
        let default = rule.and_then(|r| r.default_ttl).or(config.default_ttl);
        return default.map(|d| d.as_secs());
    }
    None
}

/// A decoded record.
#[derive(Clone, Debug)]
pub enum Decoded {
    /// A response.
    Response(Arc<Cached>),
    /// A variant list (`Vary` fields).
    Variants(Arc<Vec<HeaderName>>),
}

impl Decoded {
    /// Decodes an engine value.
    pub fn decode(value: &Bytes, config: &ProxyConfig, path: &str) -> Option<Decoded> {
        match Record::decode(value).ok()? {
            Record::Response(r) => Some(Decoded::Response(Arc::new(Cached::new(r, config, path)))),
            Record::Variants(f) => Some(Decoded::Variants(Arc::new(f))),
        }
    }
}

struct Slot {
    /// The engine value this was decoded from: the identity check. Holding
    /// it keeps the buffer alive, so its address cannot be reused by
    /// another value while the slot exists.
    source: Bytes,
    decoded: Decoded,
}

struct Shard {
    map: HashMap<Bytes, Slot, ahash::RandomState>,
    bytes: u64,
}

/// Decoded records by engine key, each valid only while the engine still
/// hands out the very buffer it was decoded from (same address and length):
/// a write, purge or reload in the engine makes it stale automatically.
///
/// Bounded in bytes: a shard over its share of the budget is emptied (the
/// engine still has everything; the next hits re-decode).
pub struct DecodedCache {
    shards: Box<[Mutex<Shard>]>,
    hasher: ahash::RandomState,
    shard_budget: u64,
}

impl DecodedCache {
    /// A cache holding at most about `budget` bytes of values.
    pub fn new(budget: u64) -> Self {
        let n = 16;
        DecodedCache {
            shards: (0..n)
                .map(|_| {
                    Mutex::new(Shard {
                        map: HashMap::with_hasher(ahash::RandomState::new()),
                        bytes: 0,
                    })
                })
                .collect(),
            hasher: ahash::RandomState::new(),
            shard_budget: (budget / n as u64).max(1),
        }
    }

    fn shard(&self, key: &[u8]) -> &Mutex<Shard> {
        let h = self.hasher.hash_one(key);
        &self.shards[(h as usize) % self.shards.len()]
    }

    /// The decoded form of `source` stored under `key`, if decoded before.
    pub fn get(&self, key: &[u8], source: &Bytes) -> Option<Decoded> {
        let shard = self.shard(key).lock();
        let slot = shard.map.get(key)?;
        (slot.source.as_ptr() == source.as_ptr() && slot.source.len() == source.len())
            .then(|| slot.decoded.clone())
    }

    /// Remembers the decoded form of `source` under `key`.
    pub fn insert(&self, key: Bytes, source: Bytes, decoded: Decoded) {
        let mut shard = self.shard(&key).lock();
        let add = (key.len() + source.len()) as u64;
        if shard.bytes + add > self.shard_budget {
            shard.map.clear();
            shard.bytes = 0;
            if add > self.shard_budget {
                return;
            }
        }
        if let Some(old) = shard.map.insert(key.clone(), Slot { source, decoded }) {
            shard.bytes -= (key.len() + old.source.len()) as u64;
        }
        shard.bytes += add;
    }

    /// Forgets `key`.
    pub fn remove(&self, key: &[u8]) {
        let mut shard = self.shard(key).lock();
        if let Some(old) = shard.map.remove(key) {
            shard.bytes -= (key.len() + old.source.len()) as u64;
        }
    }
}
