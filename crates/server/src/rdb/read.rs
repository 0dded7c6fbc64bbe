//! Reading one RDB object (`rdbLoadObject`): its type byte, then lengths
//! and strings in RDB's encodings, nested blobs ([`super::blob`]) for the
//! compact types. Every length is checked against the bytes left before
//! anything is allocated for it.

use super::{blob, lzf, Object, RestoreError};
use bytes::Bytes;

/// The RDB object types (`rdb.h`).
pub(super) mod types {
    pub const STRING: u8 = 0;
    pub const LIST: u8 = 1;
    pub const SET: u8 = 2;
    pub const ZSET: u8 = 3;
    pub const HASH: u8 = 4;
    pub const ZSET_2: u8 = 5;
    pub const MODULE: u8 = 6;
    pub const MODULE_2: u8 = 7;
    pub const HASH_ZIPMAP: u8 = 9;
    pub const LIST_ZIPLIST: u8 = 10;
    pub const SET_INTSET: u8 = 11;
    pub const ZSET_ZIPLIST: u8 = 12;
    pub const HASH_ZIPLIST: u8 = 13;
    pub const LIST_QUICKLIST: u8 = 14;
    pub const STREAM_LISTPACKS: u8 = 15;
    pub const HASH_LISTPACK: u8 = 16;
    pub const ZSET_LISTPACK: u8 = 17;
    pub const LIST_QUICKLIST_2: u8 = 18;
    pub const STREAM_LISTPACKS_2: u8 = 19;
    pub const SET_LISTPACK: u8 = 20;
    pub const STREAM_LISTPACKS_3: u8 = 21;
    pub const HASH_METADATA_PRE_GA: u8 = 22;
    pub const HASH_LISTPACK_EX: u8 = 25;
}
use types::*;

/// A quicklist node holding one element as it is (`QUICKLIST_NODE_CONTAINER_PLAIN`).
const CONTAINER_PLAIN: u64 = 1;
/// A quicklist node holding a listpack (`QUICKLIST_NODE_CONTAINER_PACKED`).
const CONTAINER_PACKED: u64 = 2;

/// A length, or the marker of a specially encoded string.
enum Len {
    Plain(u64),
    Encoded(u8),
}

pub(super) type Read<T> = Result<T, RestoreError>;
pub(super) const BAD: RestoreError = RestoreError::BadFormat;

/// A cursor over the payload's object bytes.
pub(super) struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
    /// The largest string this payload may decompress to.
    max_string: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8], max_string: usize) -> Self {
        Reader {
            buf,
            at: 0,
            max_string,
        }
    }

    pub fn at_end(&self) -> bool {
        self.at == self.buf.len()
    }

    pub fn byte(&mut self) -> Read<u8> {
        let b = *self.buf.get(self.at).ok_or(BAD)?;
        self.at += 1;
        Ok(b)
    }

    pub fn take(&mut self, n: u64) -> Read<&'a [u8]> {
        let n = usize::try_from(n).map_err(|_| BAD)?;
        let end = self.at.checked_add(n).ok_or(BAD)?;
        let s = self.buf.get(self.at..end).ok_or(BAD)?;
        self.at = end;
        Ok(s)
    }

    /// `rdbLoadLen`: 6 bits, 14 bits, 32 or 64 bits big-endian, or an
    /// encoded string's marker.
    fn len_or_encoding(&mut self) -> Read<Len> {
        let b = self.byte()?;
        Ok(match b >> 6 {
            0 => Len::Plain(u64::from(b & 0x3F)),
            1 => Len::Plain((u64::from(b & 0x3F) << 8) | u64::from(self.byte()?)),
            3 => Len::Encoded(b & 0x3F),
            _ => match b {
                0x80 => Len::Plain(u64::from(u32::from_be_bytes(
                    self.take(4)?.try_into().map_err(|_| BAD)?,
                ))),
                0x81 => Len::Plain(u64::from_be_bytes(
                    self.take(8)?.try_into().map_err(|_| BAD)?,
                )),
                _ => return Err(BAD),
            },
        })
    }

    pub fn len(&mut self) -> Read<u64> {
        match self.len_or_encoding()? {
            Len::Plain(n) => Ok(n),
            Len::Encoded(_) => Err(BAD),
        }
    }

    /// A count of items that follow, each at least one byte: never more
    /// than the bytes left, so no claimed count sizes an allocation.
    /// Redis refuses an empty collection: so does this.
    pub fn count(&mut self) -> Read<usize> {
        match self.count_any()? {
            0 => Err(BAD),
            n => Ok(n),
        }
    }

    /// [`Reader::count`], zero allowed (a stream's groups, nodes, PELs).
    pub fn count_any(&mut self) -> Read<usize> {
        let n = self.len()?;
        if n > (self.buf.len() - self.at) as u64 {
            return Err(BAD);
        }
        Ok(n as usize)
    }

    /// `rdbGenericLoadStringObject`: raw, an 8/16/32-bit integer, or LZF.
    pub fn string(&mut self) -> Read<Bytes> {
        match self.len_or_encoding()? {
            Len::Plain(n) => Ok(Bytes::copy_from_slice(self.take(n)?)),
            Len::Encoded(0) => Ok(int(i64::from(self.take(1)?[0] as i8))),
            Len::Encoded(1) => Ok(int(i64::from(i16::from_le_bytes(
                self.take(2)?.try_into().map_err(|_| BAD)?,
            )))),
            Len::Encoded(2) => Ok(int(i64::from(i32::from_le_bytes(
                self.take(4)?.try_into().map_err(|_| BAD)?,
            )))),
            Len::Encoded(3) => {
                let compressed = self.len()?;
                let len = self.len()?;
                if len == 0 || len > self.max_string as u64 {
                    return Err(BAD);
                }
                let data = self.take(compressed)?;
                lzf::decompress(data, len as usize)
                    .map(Bytes::from)
                    .ok_or(BAD)
            }
            Len::Encoded(_) => Err(BAD),
        }
    }

    /// `rdbLoadBinaryDoubleValue`: 8 bytes, little-endian IEEE 754.
    fn binary_double(&mut self) -> Read<f64> {
        Ok(f64::from_le_bytes(
            self.take(8)?.try_into().map_err(|_| BAD)?,
        ))
    }

    /// `rdbLoadDoubleValue`: a length byte (253 NaN, 254 +inf, 255 -inf)
    /// then the number as text.
    fn text_double(&mut self) -> Read<f64> {
        match self.byte()? {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            n => {
                let text = self.take(u64::from(n))?;
                score(text)
            }
        }
    }

    fn strings(&mut self, n: usize) -> Read<Vec<Bytes>> {
        (0..n).map(|_| self.string()).collect()
    }
}

fn int(v: i64) -> Bytes {
    Bytes::from(v.to_string())
}

/// A score read as text (`strtod`); NaN is refused later, with the rest.
fn score(text: &[u8]) -> Read<f64> {
    std::str::from_utf8(text)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .ok_or(BAD)
}

fn pairs(items: Vec<Bytes>) -> Read<Vec<(Bytes, Bytes)>> {
    if items.len() % 2 != 0 {
        return Err(BAD);
    }
    let mut it = items.into_iter();
    let mut out = Vec::with_capacity(it.len() / 2);
    while let (Some(a), Some(b)) = (it.next(), it.next()) {
        out.push((a, b));
    }
    Ok(out)
}

fn scored(items: Vec<Bytes>) -> Read<Vec<(Bytes, f64)>> {
    pairs(items)?
        .into_iter()
        .map(|(m, s)| Ok((m, score(&s)?)))
        .collect()
}

/// One object of RDB type `ty`.
pub(super) fn object(r: &mut Reader<'_>, ty: u8) -> Read<Object> {
    Ok(match ty {
        STRING => Object::String(r.string()?),
        LIST => {
            let n = r.count()?;
            Object::List(r.strings(n)?)
        }
        SET => {
            let n = r.count()?;
            Object::Set(r.strings(n)?)
        }
        ZSET | ZSET_2 => {
            let n = r.count()?;
            let mut members = Vec::new();
            for _ in 0..n {
                let m = r.string()?;
                let s = if ty == ZSET_2 {
                    r.binary_double()?
                } else {
                    r.text_double()?
                };
                members.push((m, s));
            }
            Object::ZSet(members)
        }
        HASH => {
            let n = r.count()?;
            let mut fields = Vec::new();
            for _ in 0..n {
                fields.push((r.string()?, r.string()?));
            }
            Object::Hash(fields)
        }
        LIST_ZIPLIST => Object::List(blob::ziplist(&r.string()?).ok_or(BAD)?),
        SET_INTSET => Object::Set(blob::intset(&r.string()?).ok_or(BAD)?),
        SET_LISTPACK => Object::Set(blob::listpack(&r.string()?).ok_or(BAD)?),
        ZSET_ZIPLIST => Object::ZSet(scored(blob::ziplist(&r.string()?).ok_or(BAD)?)?),
        ZSET_LISTPACK => Object::ZSet(scored(blob::listpack(&r.string()?).ok_or(BAD)?)?),
        HASH_ZIPLIST => Object::Hash(pairs(blob::ziplist(&r.string()?).ok_or(BAD)?)?),
        HASH_LISTPACK => Object::Hash(pairs(blob::listpack(&r.string()?).ok_or(BAD)?)?),
        LIST_QUICKLIST | LIST_QUICKLIST_2 => {
            let nodes = r.count()?;
            let mut items = Vec::new();
            for _ in 0..nodes {
                let container = if ty == LIST_QUICKLIST_2 {
                    r.len()?
                } else {
                    CONTAINER_PACKED
                };
                let data = r.string()?;
                match container {
                    CONTAINER_PLAIN => items.push(data),
                    CONTAINER_PACKED if ty == LIST_QUICKLIST_2 => {
                        items.extend(blob::listpack(&data).ok_or(BAD)?)
                    }
                    CONTAINER_PACKED => items.extend(blob::ziplist(&data).ok_or(BAD)?),
                    _ => return Err(BAD),
                }
            }
            Object::List(items)
        }
        STREAM_LISTPACKS | STREAM_LISTPACKS_2 | STREAM_LISTPACKS_3 => {
            Object::Stream(super::stream::read(r, ty)?)
        }
        MODULE | MODULE_2 => return Err(RestoreError::Unsupported("module")),
        HASH_METADATA_PRE_GA..=HASH_LISTPACK_EX => {
            return Err(RestoreError::Unsupported(
                "hash with field expiry (Redis 7.4)",
            ))
        }
        HASH_ZIPMAP => return Err(RestoreError::Unsupported("zipmap (Redis 2.4) hash")),
        _ => return Err(BAD),
    })
}
