//! The journal's record format: encoding and decoding, nothing of files.
//!
//! Each record is `[len: u32 LE][crc: u32 LE][payload]`, the payload being
//! `[op: u8][seq: u64][expires_at: u64, 0 = none][key_len: u32][key][value]`.
//!
//! Operations: 1 = set, 2 = delete, 3 = clear, and 4 = set with client
//! flags, whose payload has `[flags: u32 LE]` between the key and the
//! value. A set whose flags are 0 is written as op 1, so journals of
//! Redis-only workloads are byte-for-byte what older builds wrote, and
//! journals written by older builds replay unchanged (flags 0). An older
//! build reading an op-4 record stops there as it would at corruption.
//! Op 5 is a set of a value whose kind is not a string (a Redis hash):
//! `[flags: u32 LE][kind: u8]` between the key and the value. Strings never
//! use it, so the two older layouts stay as they were.
//!
//! Op 6 is a patch (see `crate::patch`): the layout of op 5, the value
//! bytes being the patch, which replay applies to the key's value before
//! it; expiry, flags and kind are those of the value after.
//!
//! `crc` is the payload's CRC-32C (Castagnoli). Builds before 2026-11-23
//! wrote its CRC-32 (IEEE, zlib's); replay accepts either, so their
//! journals replay unchanged (an older build takes a CRC-32C record for
//! damage: downgrade only after a clean shutdown, which flushes the
//! queue). Why CRC-32C: see `checksum.rs`.

use super::checksum;
use crate::entry::{Entry, ValueKind};
use bytes::Bytes;

/// One journaled operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// `key` now holds `entry`.
    Set {
        /// Sequence number.
        seq: u64,
        /// Key.
        key: Bytes,
        /// Value and expiry.
        entry: Entry,
    },
    /// `key` was deleted.
    Delete {
        /// Sequence number.
        seq: u64,
        /// Key.
        key: Bytes,
    },
    /// Everything was deleted (`FLUSHALL`); earlier records are void and the
    /// stores must be cleared.
    Clear {
        /// Sequence number.
        seq: u64,
    },
    /// `key` now holds what `patch.value` (a patch) makes of its value;
    /// `patch`'s expiry, flags and kind are the new value's.
    Patch {
        /// Sequence number.
        seq: u64,
        /// Key.
        key: Bytes,
        /// The patch, with the new value's metadata.
        patch: Entry,
    },
}

impl Record {
    /// The record's sequence number.
    pub fn seq(&self) -> u64 {
        match self {
            Record::Set { seq, .. }
            | Record::Delete { seq, .. }
            | Record::Clear { seq }
            | Record::Patch { seq, .. } => *seq,
        }
    }
}

pub(super) const OP_SET: u8 = 1;
pub(super) const OP_DELETE: u8 = 2;
pub(super) const OP_CLEAR: u8 = 3;
/// A set carrying non-zero client flags (format extension, see the module doc).
pub(super) const OP_SET_FLAGS: u8 = 4;
/// A set of a non-string kind (format extension, see the module doc).
pub(super) const OP_SET_KIND: u8 = 5;
/// A patch (format extension, see the module doc).
pub(super) const OP_PATCH: u8 = 6;
pub(super) const HEADER: usize = 8;
pub(super) const FIXED_PAYLOAD: usize = 1 + 8 + 8 + 4;
/// Largest record accepted on replay: a claimed length above it is corruption.
const MAX_RECORD: usize = 1 << 30;

/// The op `op` is written as for `entry`, and the record's size in bytes.
pub(super) fn layout(op: u8, key: &[u8], entry: Option<&Entry>) -> (u8, usize) {
    let op = match (op, entry) {
        (OP_SET, Some(e)) if e.kind != ValueKind::String => OP_SET_KIND,
        (OP_SET, Some(e)) if e.flags != 0 => OP_SET_FLAGS,
        (op, _) => op,
    };
    let flags_len = match op {
        OP_SET_FLAGS => 4,
        OP_SET_KIND | OP_PATCH => 5,
        _ => 0,
    };
    let value_len = entry.map_or(0, |e| e.value.len());
    (
        op,
        HEADER + FIXED_PAYLOAD + key.len() + flags_len + value_len,
    )
}

/// Writes one record into `dst`, which is exactly as long as [`layout`]
/// said, with the op it returned.
pub(super) fn encode_into(dst: &mut [u8], op: u8, seq: u64, key: &[u8], entry: Option<&Entry>) {
    let value: &[u8] = entry.map(|e| e.value.as_ref()).unwrap_or(&[]);
    let expires = entry.and_then(|e| e.expires_at).unwrap_or(0);
    let len = dst.len() - HEADER;
    let (fixed, rest) = dst.split_at_mut(HEADER + FIXED_PAYLOAD);
    fixed[0..4].copy_from_slice(&(len as u32).to_le_bytes());
    // fixed[4..8]: the checksum, filled in below.
    fixed[8] = op;
    fixed[9..17].copy_from_slice(&seq.to_le_bytes());
    fixed[17..25].copy_from_slice(&expires.to_le_bytes());
    fixed[25..29].copy_from_slice(&(key.len() as u32).to_le_bytes());
    let (key_dst, mut rest) = rest.split_at_mut(key.len());
    key_dst.copy_from_slice(key);
    if op == OP_SET_FLAGS || op == OP_SET_KIND || op == OP_PATCH {
        let flags = entry.map_or(0, |e| e.flags);
        rest[..4].copy_from_slice(&flags.to_le_bytes());
        rest = &mut rest[4..];
    }
    if op == OP_SET_KIND || op == OP_PATCH {
        rest[0] = entry.map_or(ValueKind::String, |e| e.kind).code();
        rest = &mut rest[1..];
    }
    rest.copy_from_slice(value);
    let crc = checksum::crc32c(&dst[HEADER..]);
    dst[4..8].copy_from_slice(&crc.to_le_bytes());
}

/// Appends one record to `out`.
pub(super) fn encode(out: &mut Vec<u8>, op: u8, seq: u64, key: &[u8], entry: Option<&Entry>) {
    let (op, n) = layout(op, key, entry);
    let start = out.len();
    out.resize(start + n, 0);
    encode_into(&mut out[start..], op, seq, key, entry);
}

/// Decodes the record at the start of `buf`: `Ok(Some((record, used)))`,
/// `Ok(None)` when `buf` ends mid-record, `Err(why)` when it is damaged.
pub(super) fn decode(buf: &[u8]) -> std::result::Result<Option<(Record, usize)>, &'static str> {
    if buf.len() < HEADER {
        return Ok(None);
    }
    let len = u32::from_le_bytes(buf[0..4].try_into().unwrap()) as usize;
    if !(FIXED_PAYLOAD..=MAX_RECORD).contains(&len) {
        return Err("bad record length");
    }
    if buf.len() < HEADER + len {
        return Ok(None);
    }
    let crc = u32::from_le_bytes(buf[4..8].try_into().unwrap());
    let p = &buf[HEADER..HEADER + len];
    if !checksum::matches(p, crc) {
        return Err("checksum mismatch");
    }
    let op = p[0];
    let seq = u64::from_le_bytes(p[1..9].try_into().unwrap());
    let expires = u64::from_le_bytes(p[9..17].try_into().unwrap());
    let key_len = u32::from_le_bytes(p[17..21].try_into().unwrap()) as usize;
    if FIXED_PAYLOAD + key_len > len {
        return Err("bad key length");
    }
    let key = Bytes::copy_from_slice(&p[21..21 + key_len]);
    let mut rest = &p[21 + key_len..];
    let expires_at = (expires != 0).then_some(expires);
    let record = match op {
        OP_SET => Record::Set {
            seq,
            key,
            entry: Entry::with_expiry(Bytes::copy_from_slice(rest), expires_at),
        },
        OP_SET_FLAGS => {
            if rest.len() < 4 {
                return Err("bad flags length");
            }
            let flags = u32::from_le_bytes(rest[..4].try_into().unwrap());
            rest = &rest[4..];
            Record::Set {
                seq,
                key,
                entry: Entry::with_flags(Bytes::copy_from_slice(rest), expires_at, flags),
            }
        }
        OP_SET_KIND | OP_PATCH => {
            if rest.len() < 5 {
                return Err("bad flags length");
            }
            let flags = u32::from_le_bytes(rest[..4].try_into().unwrap());
            let kind = ValueKind::from_code(rest[4]).ok_or("unknown value kind")?;
            rest = &rest[5..];
            let entry = Entry::with_kind(Bytes::copy_from_slice(rest), expires_at, flags, kind);
            if op == OP_PATCH {
                Record::Patch {
                    seq,
                    key,
                    patch: entry,
                }
            } else {
                Record::Set { seq, key, entry }
            }
        }
        OP_DELETE => Record::Delete { seq, key },
        OP_CLEAR => Record::Clear { seq },
        _ => return Err("unknown operation"),
    };
    Ok(Some((record, HEADER + len)))
}
