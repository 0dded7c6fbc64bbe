//! How an [`Entry`](tiercache_engine::Entry) is laid out in a Redis string, and which cluster slot a
//! key lives in.
//!
//! An entry is one Redis string key holding the value, with the expiry as
//! the key's own expiry (`SET key value PXAT ms`, read back exactly with
//! `PEXPIRETIME`). The common case (flags 0) stores the value's bytes
//! unchanged, so any Redis client can `GET` it. Only when the flags are not
//! 0 (memcached clients' flags), or when the value happens to begin with
//! the 4-byte [`MAGIC`], is the value wrapped in an 8-byte envelope:
//!
//! ```text
//! FF 74 63 01 | flags (u32, big endian) | value bytes
//! ```
//!
//! An entry whose kind is not a string ([`ValueKind::Hash`]: a Redis hash
//! in the tiercache server's encoding, opaque here) always uses the kind
//! envelope, 9 bytes:
//!
//! ```text
//! FF 74 63 02 | flags (u32, big endian) | kind (u8, ValueKind::code) | value bytes
//! ```
//!
//! `FF` never starts a UTF-8 text, so no text value is ever wrapped, and the
//! rule is unambiguous: a stored string of at least 8 bytes that begins with
//! [`MAGIC`] is an envelope, one of at least 9 bytes that begins with
//! [`MAGIC_KIND`] is a kind envelope, anything else is a raw string with
//! flags 0. A string that itself begins with either magic is wrapped in the
//! first envelope, so it never reads back as something else. (A value
//! written by another client that happens to begin with these 4 bytes
//! would be read as an envelope; tiercache itself never writes such a value
//! raw.) An unknown kind code is an error, never a string. Builds older
//! than kinds read a kind envelope as a string that begins with `FF 74 63 02`.
//!
//! The alternatives weighed (see BENCHMARKS.md, "Issue 5"): a hash per key
//! (`HSET key v <bytes> f <flags>`) costs every reader `HGET` instead of
//! `GET` and cannot go over a tiercache `network` store (no hashes there); a
//! companion flags key doubles the keys and the commands per write and
//! cannot share a cluster slot with arbitrary keys. The envelope keeps one
//! key, one `SET` per write and one `MGET` per read.

use bytes::{BufMut, Bytes, BytesMut};
use tiercache_engine::ValueKind;

/// The first four bytes of an envelope.
pub const MAGIC: [u8; 4] = [0xFF, b't', b'c', 0x01];

/// The first four bytes of a kind envelope.
pub const MAGIC_KIND: [u8; 4] = [0xFF, b't', b'c', 0x02];

/// Envelope header length: magic and flags.
const HEADER: usize = 8;

/// Kind envelope header length: magic, flags and kind.
const KIND_HEADER: usize = 9;

/// The bytes to store for a string `value` with `flags`.
pub fn encode(value: &Bytes, flags: u32) -> Bytes {
    encode_kind(value, flags, ValueKind::String)
}

/// The bytes to store for `value` with `flags` and `kind`.
pub fn encode_kind(value: &Bytes, flags: u32, kind: ValueKind) -> Bytes {
    if kind != ValueKind::String {
        let mut out = BytesMut::with_capacity(KIND_HEADER + value.len());
        out.put_slice(&MAGIC_KIND);
        out.put_u32(flags);
        out.put_u8(kind.code());
        out.put_slice(value);
        return out.freeze();
    }
    if flags == 0 && !value.starts_with(&MAGIC) && !value.starts_with(&MAGIC_KIND) {
        return value.clone();
    }
    let mut out = BytesMut::with_capacity(HEADER + value.len());
    out.put_slice(&MAGIC);
    out.put_u32(flags);
    out.put_slice(value);
    out.freeze()
}

/// A kind envelope naming a kind this build does not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownKind(pub u8);

impl std::fmt::Display for UnknownKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "stored value has unknown kind {}", self.0)
    }
}

/// The value, flags and kind stored in `raw`.
pub fn decode(raw: Bytes) -> Result<(Bytes, u32, ValueKind), UnknownKind> {
    if raw.len() >= HEADER && raw.starts_with(&MAGIC) {
        let flags = u32::from_be_bytes([raw[4], raw[5], raw[6], raw[7]]);
        Ok((raw.slice(HEADER..), flags, ValueKind::String))
    } else if raw.len() >= KIND_HEADER && raw.starts_with(&MAGIC_KIND) {
        let flags = u32::from_be_bytes([raw[4], raw[5], raw[6], raw[7]]);
        let kind = ValueKind::from_code(raw[8]).ok_or(UnknownKind(raw[8]))?;
        Ok((raw.slice(KIND_HEADER..), flags, kind))
    } else {
        Ok((raw, 0, ValueKind::String))
    }
}

/// The Redis Cluster slot of `key`: CRC16 (XMODEM) of the key, or of its
/// hash tag (the bytes between the first `{` and the next `}`, when not
/// empty), modulo 16384.
pub fn slot(key: &[u8]) -> u16 {
    let hashed = match key.iter().position(|&b| b == b'{') {
        Some(open) => match key[open + 1..].iter().position(|&b| b == b'}') {
            Some(len) if len > 0 => &key[open + 1..open + 1 + len],
            _ => key,
        },
        None => key,
    };
    crc16_xmodem(hashed) % 16384
}

fn crc16_xmodem(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in data {
        crc ^= (byte as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// `prefix` as a Redis glob that matches exactly the keys beginning with it
/// (`*?[]\` escaped), followed by `*`.
pub fn prefix_glob(prefix: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(prefix.len() + 1);
    for &b in prefix {
        if matches!(b, b'*' | b'?' | b'[' | b']' | b'\\') {
            out.push(b'\\');
        }
        out.push(b);
    }
    out.push(b'*');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_values_stay_raw() {
        let v = Bytes::from_static(b"hello");
        assert_eq!(encode(&v, 0), v);
        assert_eq!(decode(v.clone()), Ok((v, 0, ValueKind::String)));
        let short = Bytes::from_static(&[0xFF, b't', b'c', 0x01, 1]);
        assert_eq!(
            decode(short.clone()),
            Ok((short, 0, ValueKind::String)),
            "too short for an envelope"
        );
    }

    #[test]
    fn envelopes_round_trip() {
        for (v, f) in [
            (&b""[..], 1u32),
            (b"x", u32::MAX),
            (&[0xFF, b't', b'c', 0x01, 0, 0, 0, 0, 9][..], 0),
            (&[0xFF, b't', b'c', 0x01][..], 0),
        ] {
            let v = Bytes::copy_from_slice(v);
            let enc = encode(&v, f);
            assert!(enc.len() == v.len() + 8);
            assert_eq!(decode(enc), Ok((v, f, ValueKind::String)));
        }
    }

    #[test]
    fn kinds_round_trip_and_strings_that_look_like_them_stay_strings() {
        for (v, f) in [(&b""[..], 0u32), (b"fields", 0), (b"x", u32::MAX)] {
            let v = Bytes::copy_from_slice(v);
            let enc = encode_kind(&v, f, ValueKind::Hash);
            assert_eq!(&enc[..4], &MAGIC_KIND);
            assert_eq!(enc.len(), v.len() + 9);
            assert_eq!(decode(enc), Ok((v, f, ValueKind::Hash)));
        }
        // A string beginning with the kind magic is wrapped, not misread.
        let tricky = Bytes::from_static(&[0xFF, b't', b'c', 0x02, 0, 0, 0, 0, 1, b'v']);
        let enc = encode(&tricky, 0);
        assert_eq!(&enc[..4], &MAGIC);
        assert_eq!(decode(enc), Ok((tricky, 0, ValueKind::String)));
        let unknown = Bytes::from_static(&[0xFF, b't', b'c', 0x02, 0, 0, 0, 0, 77]);
        assert_eq!(decode(unknown), Err(UnknownKind(77)));
    }

    #[test]
    fn slots_match_redis() {
        // Values from `CLUSTER KEYSLOT` on redis-server 7.0.
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"bar"), 5061);
        assert_eq!(slot(b"{user1000}.following"), slot(b"user1000"));
        assert_eq!(slot(b"foo{}{bar}"), slot(b"foo{}{bar}"));
        assert_eq!(slot(b"foo{{bar}}zap"), slot(b"{bar"));
        assert_eq!(slot(b""), 0);
    }

    #[test]
    fn globs_escape() {
        assert_eq!(prefix_glob(b"a*b?[c]\\"), b"a\\*b\\?\\[c\\]\\\\*".to_vec());
        assert_eq!(prefix_glob(b""), b"*".to_vec());
    }
}
