//! Values as every tier sees them: bytes plus an absolute expiry.

use bytes::Bytes;
use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, the clock every expiry is measured on.
///
/// Expiry is absolute (not a duration) so that a value copied from a lower tier
/// into an upper one keeps its *remaining* TTL without any arithmetic.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A value and the moment it stops existing.
///
/// ```
/// use tiercache_engine::Entry;
/// let e = Entry::with_expiry(bytes::Bytes::from_static(b"v"), Some(1_000));
/// assert!(e.is_expired_at(1_000));
/// assert!(!e.is_expired_at(999));
/// assert!(!Entry::new(bytes::Bytes::from_static(b"v")).is_expired_at(u64::MAX));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The value bytes (cheaply cloneable; tiers share one buffer).
    pub value: Bytes,
    /// Absolute expiry in Unix milliseconds; `None` never expires.
    pub expires_at: Option<u64>,
}

impl Entry {
    /// A value that never expires.
    pub fn new(value: impl Into<Bytes>) -> Self {
        Entry {
            value: value.into(),
            expires_at: None,
        }
    }

    /// A value with an optional absolute expiry (Unix milliseconds).
    pub fn with_expiry(value: impl Into<Bytes>, expires_at: Option<u64>) -> Self {
        Entry {
            value: value.into(),
            expires_at,
        }
    }

    /// True when the entry no longer exists at `now` (Unix milliseconds).
    /// An entry expiring at `t` is gone from `t` on, as in Redis.
    pub fn is_expired_at(&self, now: u64) -> bool {
        matches!(self.expires_at, Some(t) if t <= now)
    }

    /// Remaining time to live in milliseconds at `now`; `None` when it never expires.
    pub fn ttl_ms_at(&self, now: u64) -> Option<u64> {
        self.expires_at.map(|t| t.saturating_sub(now))
    }
}
