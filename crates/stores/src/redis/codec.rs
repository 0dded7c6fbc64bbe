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
//! `FF` never starts a UTF-8 text, so no text value is ever wrapped, and the
//! rule is unambiguous: a stored string of at least 8 bytes that begins with
//! [`MAGIC`] is an envelope, anything else is a raw value with flags 0. (A
//! value written by another client that happens to begin with these 4 bytes
//! would be read as an envelope; tiercache itself never writes such a value
//! raw.)
//!
//! The alternatives weighed (see BENCHMARKS.md, "Issue 5"): a hash per key
//! (`HSET key v <bytes> f <flags>`) costs every reader `HGET` instead of
//! `GET` and cannot go over a tiercache `network` store (no hashes there); a
//! companion flags key doubles the keys and the commands per write and
//! cannot share a cluster slot with arbitrary keys. The envelope keeps one
//! key, one `SET` per write and one `MGET` per read.

use bytes::{BufMut, Bytes, BytesMut};

/// The first four bytes of an envelope.
pub const MAGIC: [u8; 4] = [0xFF, b't', b'c', 0x01];

/// Envelope header length: magic and flags.
const HEADER: usize = 8;

/// The bytes to store for `value` with `flags`.
pub fn encode(value: &Bytes, flags: u32) -> Bytes {
    if flags == 0 && !value.starts_with(&MAGIC) {
        return value.clone();
    }
    let mut out = BytesMut::with_capacity(HEADER + value.len());
    out.put_slice(&MAGIC);
    out.put_u32(flags);
    out.put_slice(value);
    out.freeze()
}

/// The value and flags stored in `raw`.
pub fn decode(raw: Bytes) -> (Bytes, u32) {
    if raw.len() >= HEADER && raw.starts_with(&MAGIC) {
        let flags = u32::from_be_bytes([raw[4], raw[5], raw[6], raw[7]]);
        (raw.slice(HEADER..), flags)
    } else {
        (raw, 0)
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
        assert_eq!(decode(v.clone()), (v, 0));
        let short = Bytes::from_static(&[0xFF, b't', b'c', 0x01, 1]);
        assert_eq!(
            decode(short.clone()),
            (short, 0),
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
            assert_eq!(decode(enc), (v, f));
        }
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
