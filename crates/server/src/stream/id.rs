//! Stream entry IDs: `<ms>-<seq>`, two unsigned 64-bit numbers, ordered
//! by milliseconds then sequence; parsed and printed as Redis 7.0 does.

use std::fmt;

/// A stream entry ID.
///
/// ```
/// use tiercache_server::stream::StreamId;
/// let id = StreamId::parse(b"5-3", 0).unwrap();
/// assert_eq!(id, StreamId::new(5, 3));
/// assert_eq!(id.to_string(), "5-3");
/// assert_eq!(StreamId::parse(b"5", u64::MAX).unwrap(), StreamId::new(5, u64::MAX));
/// assert!(StreamId::parse(b"5-x", 0).is_none());
/// assert!(StreamId::new(5, 3) < StreamId::new(6, 0));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    /// The milliseconds part.
    pub ms: u64,
    /// The sequence within the millisecond.
    pub seq: u64,
}

/// Redis's reply for an ID argument that does not parse.
pub const INVALID_ID: &str = "ERR Invalid stream ID specified as stream command argument";

impl StreamId {
    /// `0-0`, below every entry.
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    /// The largest ID.
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    /// The ID `ms-seq`.
    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    /// True for `0-0`.
    pub fn is_zero(self) -> bool {
        self == StreamId::MIN
    }

    /// The next ID, or `None` after [`StreamId::MAX`] (Redis's
    /// `streamIncrID`).
    pub fn next(self) -> Option<StreamId> {
        match (self.ms, self.seq) {
            (u64::MAX, u64::MAX) => None,
            (ms, u64::MAX) => Some(StreamId::new(ms + 1, 0)),
            (ms, seq) => Some(StreamId::new(ms, seq + 1)),
        }
    }

    /// The previous ID, or `None` before `0-0` (`streamDecrID`).
    pub fn prev(self) -> Option<StreamId> {
        match (self.ms, self.seq) {
            (0, 0) => None,
            (ms, 0) => Some(StreamId::new(ms - 1, u64::MAX)),
            (ms, seq) => Some(StreamId::new(ms, seq - 1)),
        }
    }

    /// Parses `-`, `+`, `<ms>` (sequence `missing_seq`) or `<ms>-<seq>`, as
    /// Redis's `streamParseIDOrReply`.
    pub fn parse(arg: &[u8], missing_seq: u64) -> Option<StreamId> {
        parse_id(arg, missing_seq, false, false).map(|(id, _)| id)
    }

    /// [`StreamId::parse`] refusing `-` and `+` (`streamParseStrictIDOrReply`).
    pub fn parse_strict(arg: &[u8], missing_seq: u64) -> Option<StreamId> {
        parse_id(arg, missing_seq, true, false).map(|(id, _)| id)
    }
}

/// How `XADD` was given its ID's sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sequence {
    /// `<ms>-<seq>` or `<ms>` (sequence 0): exactly this ID.
    Given,
    /// `<ms>-*`: the next sequence within that millisecond.
    Auto,
}

/// An explicit `XADD` ID: strict, and `<ms>-*` allowed.
pub fn parse_xadd_id(arg: &[u8]) -> Option<(StreamId, Sequence)> {
    parse_id(arg, 0, true, true).map(|(id, auto)| {
        let seq = if auto {
            Sequence::Auto
        } else {
            Sequence::Given
        };
        (id, seq)
    })
}

/// Redis's `streamGenericParseIDOrReply`. The argument is read as a C
/// string, so it ends at its first NUL byte. `strict` refuses `-` and
/// `+`; `auto` (only `XADD`) accepts `<ms>-*`. Returns the ID and whether
/// its sequence was `*`.
fn parse_id(arg: &[u8], missing_seq: u64, strict: bool, auto: bool) -> Option<(StreamId, bool)> {
    if arg.len() > 127 {
        return None;
    }
    let arg = &arg[..arg.iter().position(|&b| b == 0).unwrap_or(arg.len())];
    match arg {
        b"-" | b"+" if strict => return None,
        b"-" => return Some((StreamId::MIN, false)),
        b"+" => return Some((StreamId::MAX, false)),
        _ => {}
    }
    let (ms, seq) = match arg.iter().position(|&b| b == b'-') {
        Some(dash) => (&arg[..dash], Some(&arg[dash + 1..])),
        None => (arg, None),
    };
    let ms = string2ull(ms)?;
    match seq {
        None => Some((StreamId::new(ms, missing_seq), false)),
        Some(b"*") if auto => Some((StreamId::new(ms, 0), true)),
        Some(seq) => Some((StreamId::new(ms, string2ull(seq)?), false)),
    }
}

/// Redis's `string2ull`: a canonical `long long` that is not negative,
/// or else whatever C's `strtoull` reads in full (leading white space, a
/// sign — a minus negates modulo 2^64 —, digits; overflow fails).
pub fn string2ull(s: &[u8]) -> Option<u64> {
    if let Some(v) = crate::resp::parse_i64(s) {
        return u64::try_from(v).ok();
    }
    match crate::memcache::flags::strto(s)? {
        (negative, v, []) => Some(if negative { v.wrapping_neg() } else { v }),
        _ => None,
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_redis() {
        assert_eq!(StreamId::parse(b"-", 0), Some(StreamId::MIN));
        assert_eq!(StreamId::parse(b"+", 0), Some(StreamId::MAX));
        assert_eq!(StreamId::parse_strict(b"-", 0), None);
        assert_eq!(StreamId::parse(b"1-2", 0), Some(StreamId::new(1, 2)));
        assert_eq!(StreamId::parse(b"01-02", 0), Some(StreamId::new(1, 2)));
        assert_eq!(StreamId::parse(b" 7", 9), Some(StreamId::new(7, 9)));
        assert_eq!(StreamId::parse(b"-1", 0), None, "ms part is empty");
        assert_eq!(StreamId::parse(b"1--1", 0), None);
        assert_eq!(StreamId::parse(b"1-", 0), None);
        assert_eq!(StreamId::parse(b"", 0), None);
        assert_eq!(StreamId::parse(b"1-*", 0), None);
        assert_eq!(StreamId::parse_strict(b"1-*", 0), None);
        assert_eq!(
            parse_xadd_id(b"1-*"),
            Some((StreamId::new(1, 0), Sequence::Auto))
        );
        assert_eq!(
            parse_xadd_id(b"1"),
            Some((StreamId::new(1, 0), Sequence::Given))
        );
        assert_eq!(
            StreamId::parse(b"18446744073709551615-18446744073709551615", 0),
            Some(StreamId::MAX)
        );
        assert_eq!(StreamId::parse(b"18446744073709551616", 0), None);
        assert_eq!(StreamId::parse(b"3\0junk", 0), Some(StreamId::new(3, 0)));
        assert_eq!(StreamId::parse(&[b'1'; 128], 0), None);
    }

    #[test]
    fn string2ull_follows_strtoull_beyond_long_long() {
        assert_eq!(string2ull(b"-5"), None);
        assert_eq!(string2ull(b"-0"), Some(0));
        assert_eq!(string2ull(b"+5"), Some(5));
        assert_eq!(
            string2ull(b"-18446744073709551615"),
            Some(1),
            "strtoull negates"
        );
        assert_eq!(string2ull(b"5 "), None);
        assert_eq!(string2ull(b" "), None);
    }

    #[test]
    fn steps() {
        assert_eq!(StreamId::new(1, u64::MAX).next(), Some(StreamId::new(2, 0)));
        assert_eq!(StreamId::MAX.next(), None);
        assert_eq!(StreamId::new(2, 0).prev(), Some(StreamId::new(1, u64::MAX)));
        assert_eq!(StreamId::MIN.prev(), None);
    }
}
