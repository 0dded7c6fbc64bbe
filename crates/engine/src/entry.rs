//! Values as every tier sees them: bytes plus an absolute expiry, 32-bit
//! client flags, a value kind and a compare-and-set unique.

use bytes::Bytes;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The source of cas uniques: one monotonic counter per process, so every
/// write of every engine gets a distinct, increasing unique. Like
/// memcached's, uniques do not survive a restart (they are not stored).
static NEXT_CAS: AtomicU64 = AtomicU64::new(1);

/// A fresh cas unique (never 0).
pub(crate) fn next_cas() -> u64 {
    NEXT_CAS.fetch_add(1, Ordering::Relaxed)
}

/// Milliseconds since the Unix epoch, the clock every expiry is measured on.
///
/// Expiry is absolute (not a duration) so that a value copied from a lower tier
/// into an upper one keeps its *remaining* TTL without any arithmetic.
///
/// On Unix it reads `CLOCK_REALTIME` directly: `SystemTime::now()` then
/// `duration_since(UNIX_EPOCH)` took about 80 instructions a call, most of
/// them in the checked subtraction and the 128-bit milliseconds, against
/// about 30 here (callgrind; a memcached `set` read the clock up to three
/// times).
#[cfg(unix)]
pub fn now_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_REALTIME always
    // exists, and the call only writes `ts`.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    if rc != 0 || ts.tv_sec < 0 {
        return std_now_ms(); // before 1970, or a clock error: as std reports it
    }
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

/// Milliseconds since the Unix epoch, the clock every expiry is measured on.
#[cfg(not(unix))]
pub fn now_ms() -> u64 {
    std_now_ms()
}

fn std_now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// What the bytes of an [`Entry`] stand for.
///
/// The engine and the stores never interpret a value: they carry its kind
/// next to its bytes (memory tier, journal, every store), so that a front end
/// can tell a plain string from, say, a Redis hash it encoded itself.
///
/// ```
/// use tiercache_engine::ValueKind;
/// assert_eq!(ValueKind::default(), ValueKind::String);
/// assert_eq!(ValueKind::from_code(ValueKind::Hash.code()), Some(ValueKind::Hash));
/// assert_eq!(ValueKind::from_code(200), None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ValueKind {
    /// Plain bytes: every memcached item, every Redis string.
    #[default]
    String,
    /// A Redis hash, in the server's own encoding.
    Hash,
    /// A Redis list, in the server's own encoding.
    List,
    /// A Redis set, in the server's own encoding.
    Set,
    /// A Redis sorted set, in the server's own encoding.
    ZSet,
    /// A Redis stream, in the server's own encoding.
    Stream,
}

impl ValueKind {
    /// The kind's persisted code: 0 for `String` (so every format written
    /// before kinds existed reads as strings), 1 for `Hash`, 2 for `List`,
    /// 3 for `Set`, 4 for `ZSet`, 5 for `Stream`. Fixed forever.
    pub fn code(self) -> u8 {
        match self {
            ValueKind::String => 0,
            ValueKind::Hash => 1,
            ValueKind::List => 2,
            ValueKind::Set => 3,
            ValueKind::ZSet => 4,
            ValueKind::Stream => 5,
        }
    }

    /// The kind of a persisted code; `None` for a code this build does not
    /// know (a store should report it as corruption, never guess).
    pub fn from_code(code: u8) -> Option<ValueKind> {
        match code {
            0 => Some(ValueKind::String),
            1 => Some(ValueKind::Hash),
            2 => Some(ValueKind::List),
            3 => Some(ValueKind::Set),
            4 => Some(ValueKind::ZSet),
            5 => Some(ValueKind::Stream),
            _ => None,
        }
    }

    /// Packs client flags and a kind into one 64-bit number, `flags | code << 32`,
    /// for stores whose flags column is 64 bits wide (a `String` entry keeps
    /// the value older builds stored).
    pub fn pack_flags(self, flags: u32) -> u64 {
        u64::from(flags) | (u64::from(self.code()) << 32)
    }

    /// The inverse of [`ValueKind::pack_flags`]; `None` when the high bits
    /// hold an unknown kind.
    pub fn unpack_flags(packed: u64) -> Option<(u32, ValueKind)> {
        let kind = ValueKind::from_code(u8::try_from(packed >> 32).ok()?)?;
        Some((packed as u32, kind))
    }
}

/// A value, the moment it stops existing, its client flags, its kind and its cas unique.
///
/// - `flags` are opaque to the engine: memcached clients store 32 bits with
///   every item (serialisation format, compression). They are kept by every
///   tier: the memory tier, the write-back journal and the stores. Redis
///   writes store 0.
/// - `cas` is a version stamp: the engine assigns a fresh unique on every
///   write (see [`Session::modify`](crate::Session::modify)), so a client can
///   tell whether a key changed since it read it. It is not persisted: an
///   entry read back from a store gets a new unique. `0` means "not
///   assigned" (an entry built by a caller and not yet written).
///
/// - `kind` says what the bytes stand for ([`ValueKind`]); stores carry it,
///   never interpret it.
///
/// Equality compares value, expiry, flags and kind, not `cas`: two entries holding
/// the same data are equal whatever write produced them.
///
/// ```
/// use tiercache_engine::{Entry, ValueKind};
/// let e = Entry::with_expiry(bytes::Bytes::from_static(b"v"), Some(1_000));
/// assert!(e.is_expired_at(1_000));
/// assert!(!e.is_expired_at(999));
/// assert_eq!(e.flags, 0);
/// assert!(!Entry::new(bytes::Bytes::from_static(b"v")).is_expired_at(u64::MAX));
/// let f = Entry::with_flags("v", None, 42);
/// assert_eq!(f.flags, 42);
/// assert_ne!(f, Entry::new("v"));
/// let h = Entry::with_kind("v", None, 0, ValueKind::Hash);
/// assert_eq!(h.kind, ValueKind::Hash);
/// assert_ne!(h, Entry::new("v"), "the kind is part of the value");
/// ```
#[derive(Clone, Debug)]
pub struct Entry {
    /// The value bytes (cheaply cloneable; tiers share one buffer).
    pub value: Bytes,
    /// Absolute expiry in Unix milliseconds; `None` never expires.
    pub expires_at: Option<u64>,
    /// Opaque client flags (memcached's 32-bit flags); 0 for Redis writes.
    pub flags: u32,
    /// What the bytes stand for; [`ValueKind::String`] unless a front end says otherwise.
    pub kind: ValueKind,
    /// Compare-and-set unique assigned by the engine on write; 0 = unassigned.
    pub cas: u64,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
            && self.expires_at == other.expires_at
            && self.flags == other.flags
            && self.kind == other.kind
    }
}

impl Eq for Entry {}

impl Entry {
    /// A value that never expires, with flags 0.
    pub fn new(value: impl Into<Bytes>) -> Self {
        Entry::with_flags(value, None, 0)
    }

    /// A value with an optional absolute expiry (Unix milliseconds), flags 0.
    pub fn with_expiry(value: impl Into<Bytes>, expires_at: Option<u64>) -> Self {
        Entry::with_flags(value, expires_at, 0)
    }

    /// A value with an optional absolute expiry and client flags.
    pub fn with_flags(value: impl Into<Bytes>, expires_at: Option<u64>, flags: u32) -> Self {
        Entry::with_kind(value, expires_at, flags, ValueKind::String)
    }

    /// A value of any kind, with an optional absolute expiry and client flags.
    pub fn with_kind(
        value: impl Into<Bytes>,
        expires_at: Option<u64>,
        flags: u32,
        kind: ValueKind,
    ) -> Self {
        Entry {
            value: value.into(),
            expires_at,
            flags,
            kind,
            cas: 0,
        }
    }

    /// True when the entry no longer exists at `now` (Unix milliseconds).
    /// An entry expiring at `t` is gone from `t` on, as in Redis.
    pub fn is_expired_at(&self, now: u64) -> bool {
        matches!(self.expires_at, Some(t) if t <= now)
    }

    /// [`Entry::is_expired_at`] now, reading the clock only for an entry
    /// that can expire (most never do).
    pub fn is_expired(&self) -> bool {
        self.expires_at.is_some_and(|t| t <= now_ms())
    }

    /// Remaining time to live in milliseconds at `now`; `None` when it never expires.
    pub fn ttl_ms_at(&self, now: u64) -> Option<u64> {
        self.expires_at.map(|t| t.saturating_sub(now))
    }
}

/// Redis's `string2ll`: optional `-`, decimal digits, no `+`, no leading
/// zeros, no spaces, fits in an `i64`. The one integer parser: `INCR` on a
/// stored value here, RESP header lengths and every integer argument in
/// the server, so `SET k v EX 010` fails as it does in Redis.
///
/// ```
/// use tiercache_engine::parse_i64;
/// assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
/// assert_eq!(parse_i64(b"010"), None);
/// ```
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.first()? {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    match digits {
        [] => return None,
        [b'0'] if !neg => return Some(0),
        [b'0', ..] => return None,
        _ => {}
    }
    if digits.len() > 19 {
        return None;
    }
    // Accumulate negatively so that i64::MIN parses.
    let mut v: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_sub((d - b'0') as i64)?;
    }
    if neg {
        Some(v)
    } else {
        v.checked_neg()
    }
}

#[cfg(test)]
mod tests {
    use super::{now_ms, parse_i64, std_now_ms, Entry};

    #[test]
    fn is_expired_reads_the_clock_for_entries_that_expire() {
        assert!(!Entry::new("v").is_expired());
        assert!(Entry::with_expiry("v", Some(1)).is_expired());
        assert!(Entry::with_expiry("v", Some(now_ms())).is_expired());
        assert!(!Entry::with_expiry("v", Some(now_ms() + 60_000)).is_expired());
    }

    #[test]
    fn the_fast_clock_reads_what_std_reads() {
        for _ in 0..100 {
            let before = std_now_ms();
            let now = now_ms();
            let after = std_now_ms();
            assert!(
                before <= now && now <= after,
                "{before} <= {now} <= {after}"
            );
        }
    }

    #[test]
    fn integers_parse_like_redis() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-12"), Some(-12));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"+1",
            b" 1",
            b"01",
            b"-0",
            b"1.0",
            b"1 ",
            b"1a",
            b"9223372036854775808",
            b"abc",
        ] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
