//! The bytes of a [`FileStore`](super::FileStore) segment: one record per
//! mutation, `[len: u32 LE][crc32: u32 LE][payload]` (see the parent
//! module for the payloads).

use bytes::Bytes;
use std::io::{ErrorKind, Read};
use tiercache_engine::{Entry, Mutation, ValueKind};

pub(super) const OP_SET: u8 = 1;
pub(super) const OP_DELETE: u8 = 2;
pub(super) const OP_CLEAR: u8 = 3;
/// A set of a value that is not a string: op 1's layout plus a kind byte
/// after the flags (strings keep op 1, so old files read unchanged).
pub(super) const OP_SET_KIND: u8 = 4;
pub(super) const HEADER: u64 = 8;
/// Larger claimed lengths are corruption (values are at most 64 MiB by default).
pub(super) const MAX_RECORD: u32 = 1 << 30;

/// A decoded record; `value_at` is the value's offset within the payload.
pub(super) enum Record {
    Set {
        key: Bytes,
        entry: Entry,
        value_at: u64,
    },
    Delete(Bytes),
    Clear,
}

pub(super) fn encode(out: &mut Vec<u8>, m: &Mutation) -> u64 {
    let start = out.len();
    out.extend_from_slice(&[0; HEADER as usize]);
    let value_at = match m {
        Mutation::Set(key, e) => {
            let kinded = e.kind != ValueKind::String;
            out.push(if kinded { OP_SET_KIND } else { OP_SET });
            out.extend_from_slice(&e.flags.to_le_bytes());
            if kinded {
                out.push(e.kind.code());
            }
            out.push(e.expires_at.is_some() as u8);
            out.extend_from_slice(&e.expires_at.unwrap_or(0).to_le_bytes());
            out.extend_from_slice(&(key.len() as u32).to_le_bytes());
            out.extend_from_slice(key);
            let at = out.len();
            out.extend_from_slice(&e.value);
            at
        }
        Mutation::Delete(key) => {
            out.push(OP_DELETE);
            out.extend_from_slice(key);
            out.len()
        }
    };
    seal(out, start);
    (value_at - start) as u64
}

pub(super) fn encode_clear(out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0; HEADER as usize]);
    out.push(OP_CLEAR);
    seal(out, start);
}

pub(super) fn seal(out: &mut [u8], start: usize) {
    let payload = &out[start + HEADER as usize..];
    let len = payload.len() as u32;
    let crc = crc32fast::hash(payload);
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

pub(super) fn decode(payload: &[u8]) -> Option<Record> {
    let (&op, rest) = payload.split_first()?;
    match op {
        OP_SET | OP_SET_KIND => {
            let flags = u32::from_le_bytes(rest.get(0..4)?.try_into().ok()?);
            let (kind, rest) = if op == OP_SET_KIND {
                (ValueKind::from_code(*rest.get(4)?)?, &rest[5..])
            } else {
                (ValueKind::String, &rest[4..])
            };
            let kind_len = usize::from(op == OP_SET_KIND);
            if rest.len() < 13 {
                return None;
            }
            let has_exp = rest[0];
            let exp = u64::from_le_bytes(rest[1..9].try_into().ok()?);
            let key_len = u32::from_le_bytes(rest[9..13].try_into().ok()?) as usize;
            let kv = &rest[13..];
            if kv.len() < key_len || has_exp > 1 {
                return None;
            }
            Some(Record::Set {
                key: Bytes::copy_from_slice(&kv[..key_len]),
                entry: Entry::with_kind(
                    Bytes::copy_from_slice(&kv[key_len..]),
                    (has_exp == 1).then_some(exp),
                    flags,
                    kind,
                ),
                value_at: (1 + 17 + kind_len + key_len) as u64,
            })
        }
        OP_DELETE => Some(Record::Delete(Bytes::copy_from_slice(rest))),
        OP_CLEAR if rest.is_empty() => Some(Record::Clear),
        _ => None,
    }
}

/// Reads one record from `r`: `Ok(None)` at a clean end, `Err(())` when
/// what follows is not a whole, valid record.
pub(super) fn read_record(r: &mut impl Read) -> Result<Option<(Vec<u8>, u64)>, ()> {
    let mut header = [0u8; HEADER as usize];
    let mut got = 0;
    while got < header.len() {
        match r.read(&mut header[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(()),
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Err(()),
        }
    }
    let len = u32::from_le_bytes(header[..4].try_into().unwrap());
    let crc = u32::from_le_bytes(header[4..].try_into().unwrap());
    if len == 0 || len > MAX_RECORD {
        return Err(());
    }
    let mut payload = vec![0; len as usize];
    r.read_exact(&mut payload).map_err(|_| ())?;
    if crc32fast::hash(&payload) != crc {
        return Err(());
    }
    Ok(Some((payload, HEADER + len as u64)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let mut buf = Vec::new();
        let set = Mutation::Set(
            "k".into(),
            Entry::with_flags("value", Some(12_345), 0xfeed_f00d),
        );
        let rel = encode(&mut buf, &set);
        encode(&mut buf, &Mutation::Delete("gone".into()));
        let mut r = &buf[..];
        let (p, len) = read_record(&mut r).unwrap().unwrap();
        match decode(&p).unwrap() {
            Record::Set {
                key,
                entry,
                value_at,
            } => {
                assert_eq!(key, "k");
                assert_eq!(entry, Entry::with_flags("value", Some(12_345), 0xfeed_f00d));
                assert_eq!(value_at + HEADER, rel);
                assert_eq!(&buf[rel as usize..len as usize], b"value");
            }
            _ => panic!("not a set"),
        }
        let (p, _) = read_record(&mut r).unwrap().unwrap();
        assert!(matches!(decode(&p), Some(Record::Delete(k)) if k == "gone"));
        // A hash: op 4, and its value offset accounts for the kind byte.
        let h = Entry::with_kind("fields", None, 3, ValueKind::Hash);
        let mut hb = Vec::new();
        let rel = encode(&mut hb, &Mutation::Set("h".into(), h.clone()));
        assert_eq!(hb[HEADER as usize], OP_SET_KIND);
        match decode(&hb[HEADER as usize..]).unwrap() {
            Record::Set {
                entry, value_at, ..
            } => {
                assert_eq!(entry, h);
                assert_eq!(&hb[(value_at + HEADER) as usize..], b"fields");
                assert_eq!(value_at + HEADER, rel);
            }
            _ => panic!("not a set"),
        }
        // An unknown kind code is not a record this build can read.
        hb[HEADER as usize + 5] = 99;
        assert!(decode(&hb[HEADER as usize..]).is_none());
        assert_eq!(read_record(&mut r), Ok(None));
        // A cut record is not whole.
        let mut cut = &buf[..buf.len() - 1];
        read_record(&mut cut).unwrap();
        assert_eq!(read_record(&mut cut), Err(()));
    }
}
