//! `DEBUG DIGEST` and `DEBUG DIGEST-VALUE`: 160-bit digests of values and
//! of the whole data set, equal for equal contents whatever their
//! encoding or history, as Redis's are (tests compare a value with its
//! copy, a data set before and after a reload). Like Redis's: ordered
//! types mix their elements in order, sets and hashes XOR one digest per
//! element, and the data-set digest XORs one per key (key, type, value,
//! expiry). SHA-1, as Redis's, but over this server's items rather than
//! Redis's object encodings, so the numbers are not Redis's.

use crate::hash::Hash;
use crate::list::List;
use crate::packed::Corrupt;
use crate::set::Set;
use crate::stream::{Stream, StreamId};
use crate::zset::ZSet;
use bytes::Bytes;
use sha1::{Digest as _, Sha1};
use tiercache_engine::{Entry, ValueKind};

/// A 160-bit digest.
pub type Digest = [u8; 20];

/// The digest of nothing (an empty data set): all zeros, as Redis.
pub const EMPTY: Digest = [0; 20];

fn sha(parts: &[&[u8]]) -> Digest {
    let mut h = Sha1::new();
    for p in parts {
        // Length-prefixed, so that ("ab", "c") and ("a", "bc") differ.
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize().into()
}

/// Redis's `mixDigest`: the digest so far, then `parts`, hashed together.
fn mix(d: &mut Digest, parts: &[&[u8]]) {
    let mut all: Vec<&[u8]> = Vec::with_capacity(parts.len() + 1);
    all.push(&d[..]);
    all.extend_from_slice(parts);
    *d = sha(&all);
}

/// Redis's `xorDigest`: order does not matter.
fn xor(d: &mut Digest, parts: &[&[u8]]) {
    for (a, b) in d.iter_mut().zip(sha(parts)) {
        *a ^= b;
    }
}

/// The digest of one value, by its kind.
pub fn value_digest(kind: ValueKind, value: &Bytes) -> Result<Digest, Corrupt> {
    let mut d = EMPTY;
    match kind {
        ValueKind::String => mix(&mut d, &[value]),
        ValueKind::List => {
            let list = List::decode(value)?;
            for item in list.range(0..list.len())? {
                mix(&mut d, &[&item]);
            }
        }
        ValueKind::Set => {
            for m in Set::decode(value)?.iter() {
                xor(&mut d, &[m]);
            }
        }
        ValueKind::ZSet => {
            for (m, score) in ZSet::decode(value)?.iter() {
                xor(&mut d, &[m, &score.to_bits().to_le_bytes()]);
            }
        }
        ValueKind::Hash => {
            for (f, v) in Hash::decode(value)?.iter() {
                xor(&mut d, &[f, v]);
            }
        }
        ValueKind::Stream => {
            let s = Stream::decode(value)?;
            for item in s.range(StreamId::MIN, StreamId::MAX, usize::MAX)? {
                let id = format!("{}-{}", item.id.ms, item.id.seq);
                mix(&mut d, &[id.as_bytes()]);
                for f in &item.fields {
                    mix(&mut d, &[f]);
                }
            }
            let last = s.last_id();
            mix(&mut d, &[format!("{}-{}", last.ms, last.seq).as_bytes()]);
        }
    }
    Ok(d)
}

/// Adds the key `key` holding `e` to a data-set digest.
pub fn add_key(d: &mut Digest, key: &[u8], e: &Entry) -> Result<(), Corrupt> {
    let value = value_digest(e.kind, &e.value)?;
    let expiry = e.expires_at.unwrap_or(0).to_le_bytes();
    xor(d, &[key, &[e.kind.code()], &value, &expiry]);
    Ok(())
}

/// Lower-case hex, as Redis prints digests (and script SHA1s).
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_and_hashes_digest_alike_in_any_order_lists_do_not() {
        let a = Set::from_members([Bytes::from("x"), Bytes::from("y")]).encode();
        let b = Set::from_members([Bytes::from("y"), Bytes::from("x")]).encode();
        assert_eq!(
            value_digest(ValueKind::Set, &a),
            value_digest(ValueKind::Set, &b)
        );
        let mut h1 = Hash::default();
        h1.set("f".into(), "1".into());
        h1.set("g".into(), "2".into());
        let mut h2 = Hash::default();
        h2.set("g".into(), "2".into());
        h2.set("f".into(), "1".into());
        assert_eq!(
            value_digest(ValueKind::Hash, &h1.encode()),
            value_digest(ValueKind::Hash, &h2.encode())
        );
        let mut h3 = Hash::default();
        h3.set("f".into(), "12".into());
        assert_ne!(
            value_digest(ValueKind::Hash, &h1.encode()),
            value_digest(ValueKind::Hash, &h3.encode())
        );
        let l1 = List::from_items([Bytes::from("a"), Bytes::from("b")]).encode();
        let l2 = List::from_items([Bytes::from("b"), Bytes::from("a")]).encode();
        assert_ne!(
            value_digest(ValueKind::List, &l1),
            value_digest(ValueKind::List, &l2)
        );
        assert_ne!(
            value_digest(ValueKind::String, &Bytes::from("a")).unwrap(),
            EMPTY
        );
        assert_eq!(hex(&EMPTY), "0".repeat(40));
    }
}
