//! Redis's `DUMP` payload: one value serialized as an RDB object, then
//! the RDB version (2 bytes) and a CRC-64 of everything before it
//! (8 bytes), both little-endian (`createDumpPayload` in Redis's
//! `cluster.c`). `DUMP` and `RESTORE` speak it, so values move between
//! tiercache and Redis both ways: `DUMP` in one, `RESTORE` in the other,
//! or Redis's own `MIGRATE` into tiercache.
//!
//! - Reading ([`restore`]) takes what Redis 7.4 and every older Redis
//!   write for strings, lists, sets, sorted sets, hashes and streams:
//!   plain types, listpacks, ziplists, intsets, quicklists, LZF-compressed
//!   strings, the three stream layouts (`stream.rs`). Module values and
//!   hashes with field expiry (Redis 7.4) are refused with an error that
//!   names them.
//! - Writing ([`dump`]) uses RDB's plain types (`write.rs`) and stamps
//!   RDB version 10, as Redis 7.0 stamps every payload: a string's
//!   payload is Redis 7.0's byte for byte. A stream is written as Redis
//!   7.0 writes it. (Like Redis 7.0's, these payloads do not restore into
//!   a Redis older than 7.0, which refuses versions past its own.)
//!
//! - `functions.rs`: `FUNCTION DUMP`'s payload (libraries' codes).
//! - `file.rs` writes a whole RDB file (header, database 0, end mark),
//!   for a replica's full synchronisation (`crate::replication`); files
//!   are not read here.
//!
//! ```
//! use bytes::Bytes;
//! use tiercache_engine::ValueKind;
//! use tiercache_server::rdb;
//! let payload = rdb::dump(ValueKind::String, &Bytes::from("bar")).unwrap();
//! // Redis 7's `DUMP` of the same string, byte for byte but the version.
//! assert_eq!(&payload[..5], b"\x00\x03bar");
//! let (kind, value) = rdb::restore(&payload, 1 << 20).unwrap();
//! assert_eq!((kind, &value[..]), (ValueKind::String, &b"bar"[..]));
//! let mut damaged = payload.clone();
//! damaged[2] = b'c';
//! assert_eq!(
//!     rdb::restore(&damaged, 1 << 20).unwrap_err().to_string(),
//!     "ERR DUMP payload version or checksum are wrong"
//! );
//! ```

mod blob;
mod file;
mod functions;
mod lzf;
mod read;
mod stream;
mod write;

pub use file::file;
pub use functions::{dump_functions, restore_functions, FUNCTIONS_VERSION};

use crate::hash::Hash;
use crate::list::List;
use crate::set::Set;
use crate::stream::Stream;
use crate::zset::ZSet;
use bytes::Bytes;
use std::fmt;
use tiercache_engine::ValueKind;

/// The version [`dump`] stamps: Redis 7.0's `RDB_VERSION`. (Until session
/// 43 it was 8, the oldest that knows every type written here, so payloads
/// restored into Redis 4 to 6 too; Redis's own tests expect 7.0's bytes,
/// e.g. in the replication stream's `RESTORE`.)
pub const DUMP_VERSION: u16 = 10;

/// The version [`dump`] stamps on a stream: RDB 10 (Redis 7.0), the first
/// with `STREAM_LISTPACKS_2`.
pub const STREAM_DUMP_VERSION: u16 = 10;

/// The newest version [`restore`] accepts: Redis 7.4's (RDB 12). Redis
/// refuses a payload newer than itself; the types a newer Redis writes
/// for these values are read here, and the rest refused one by one.
pub const MAX_VERSION: u16 = 12;

/// Redis's CRC-64 (Jones polynomial, reflected, `crc64.c`).
const CRC: crc::Crc<u64> = crc::Crc::<u64>::new(&crc::CRC_64_REDIS);

/// A value as RDB sees it, between the payload and the stored encoding.
enum Object {
    String(Bytes),
    List(Vec<Bytes>),
    Set(Vec<Bytes>),
    ZSet(Vec<(Bytes, f64)>),
    Hash(Vec<(Bytes, Bytes)>),
    Stream(Stream),
}

/// Why [`restore`] refused a payload; `Display` is the error reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestoreError {
    /// Shorter than its footer, newer than [`MAX_VERSION`], or its CRC does
    /// not match.
    VersionOrChecksum,
    /// The object does not parse, or holds an empty collection, a
    /// repeated member or field, or a NaN score.
    BadFormat,
    /// A well-formed value of a type this server cannot hold.
    Unsupported(&'static str),
    /// The value would be over the value size limit of this many bytes.
    TooBig(usize),
}

impl fmt::Display for RestoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RestoreError::VersionOrChecksum => {
                f.write_str("ERR DUMP payload version or checksum are wrong")
            }
            RestoreError::BadFormat => f.write_str("ERR Bad data format"),
            RestoreError::Unsupported(what) => {
                write!(
                    f,
                    "ERR Bad data format: tiercache cannot restore a {what} value"
                )
            }
            RestoreError::TooBig(max) => {
                write!(
                    f,
                    "ERR value would exceed the maximum value size ({max} bytes)"
                )
            }
        }
    }
}

/// The `DUMP` payload of a stored value of `kind`; `Err` is the error
/// reply (a stream, or a value that does not decode).
pub fn dump(kind: ValueKind, value: &Bytes) -> Result<Vec<u8>, String> {
    let name = crate::cmd::keytype::type_name(kind);
    let corrupt = |c| format!("ERR corrupt {name} value: {c}");
    let obj = match kind {
        ValueKind::String => Object::String(value.clone()),
        ValueKind::List => Object::List(
            List::decode(value)
                .and_then(|l| l.to_items())
                .map_err(corrupt)?
                .into(),
        ),
        ValueKind::Set => Object::Set(Set::decode(value).map_err(corrupt)?.iter_bytes().collect()),
        ValueKind::ZSet => {
            Object::ZSet(ZSet::decode(value).map_err(corrupt)?.iter_bytes().collect())
        }
        ValueKind::Hash => Object::Hash(
            Hash::decode(value)
                .map_err(corrupt)?
                .iter()
                .map(|(f, v)| (Bytes::copy_from_slice(f), Bytes::copy_from_slice(v)))
                .collect(),
        ),
        ValueKind::Stream => Object::Stream(Stream::decode(value).map_err(corrupt)?),
    };
    let mut out = Vec::with_capacity(value.len() + 16);
    write::object(&mut out, &obj).map_err(corrupt)?;
    let version = match kind {
        ValueKind::Stream => STREAM_DUMP_VERSION,
        _ => DUMP_VERSION,
    };
    footer(&mut out, version);
    Ok(out)
}

/// Appends a payload's footer: `version`, then the CRC-64 of everything.
fn footer(out: &mut Vec<u8>, version: u16) {
    out.extend_from_slice(&version.to_le_bytes());
    let crc = CRC.checksum(out);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// A payload of the RDB object bytes `object`, stamped `version` (for
/// tests and the fuzzer: what a writer of any version would send).
pub fn frame(object: &[u8], version: u16) -> Vec<u8> {
    let mut out = object.to_vec();
    footer(&mut out, version);
    out
}

/// The value a `DUMP` payload holds, as this server stores it: its kind
/// and encoding, at most `max_value` bytes (strings inside the payload
/// are bounded by it too before they are decompressed).
pub fn restore(payload: &[u8], max_value: usize) -> Result<(ValueKind, Bytes), RestoreError> {
    let body = verify(payload)?;
    let mut r = read::Reader::new(body, max_value);
    let ty = r.byte()?;
    let obj = read::object(&mut r, ty)?;
    if !r.at_end() {
        return Err(RestoreError::BadFormat);
    }
    let (kind, value) = stored(obj)?;
    if value.len() > max_value {
        return Err(RestoreError::TooBig(max_value));
    }
    Ok((kind, value))
}

/// `verifyDumpPayload`: the object bytes of a payload whose version and
/// CRC are right.
fn verify(payload: &[u8]) -> Result<&[u8], RestoreError> {
    let body_len = payload
        .len()
        .checked_sub(10)
        .ok_or(RestoreError::VersionOrChecksum)?;
    let (body, footer) = payload.split_at(body_len);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    let crc = u64::from_le_bytes(footer[2..].try_into().expect("8 bytes"));
    if version > MAX_VERSION || CRC.checksum(&payload[..body_len + 2]) != crc {
        return Err(RestoreError::VersionOrChecksum);
    }
    Ok(body)
}

/// Encodes an object as this server stores its kind. Redis refuses an
/// empty collection, a member or field twice, and a NaN score: so does
/// this.
fn stored(obj: Object) -> Result<(ValueKind, Bytes), RestoreError> {
    const BAD: RestoreError = RestoreError::BadFormat;
    Ok(match obj {
        Object::String(s) => (ValueKind::String, s),
        Object::Stream(s) => (ValueKind::Stream, s.encode()),
        Object::List(items) if !items.is_empty() => {
            (ValueKind::List, List::from_items(items).encode())
        }
        Object::Set(members) if !members.is_empty() => {
            let n = members.len();
            let set = Set::from_members(members);
            if set.len() != n {
                return Err(BAD);
            }
            (ValueKind::Set, set.encode())
        }
        Object::ZSet(members) if !members.is_empty() => {
            if members.iter().any(|(_, s)| s.is_nan()) {
                return Err(BAD);
            }
            let mut repeated = false;
            let mut z = ZSet::default();
            z.update_many(members, |old, score| {
                repeated |= old.is_some();
                Some(score)
            });
            if repeated {
                return Err(BAD);
            }
            (ValueKind::ZSet, z.encode())
        }
        Object::Hash(fields) if !fields.is_empty() => {
            let n = fields.len();
            let mut h = Hash::default();
            if h.set_many(fields) != n {
                return Err(BAD);
            }
            (ValueKind::Hash, h.encode())
        }
        _ => return Err(BAD),
    })
}

#[cfg(test)]
mod tests;
