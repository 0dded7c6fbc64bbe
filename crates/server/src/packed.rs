//! The byte layout shared by the server's encodings of Redis collections
//! ([`Hash`](crate::hash::Hash), [`List`](crate::list::List),
//! [`Set`](crate::set::Set)) inside one engine value:
//!
//! ```text
//! [version: u8][count: varint] then the items, each [len: varint][bytes]
//! ```
//!
//! Varints are LEB128 (7 bits per byte, low first, at most 10 bytes for a
//! `u64`), so a short item costs one length byte. Reading checks every
//! length against the bytes left and never trusts a count to size an
//! allocation: a corrupt value from a store is a [`Corrupt`] error, never
//! a panic or a huge allocation. Items are slices of the stored buffer (no
//! copy).
//!
//! ```
//! use bytes::Bytes;
//! use tiercache_server::packed::{decode_items, encode_items};
//! let items = [Bytes::from("a"), Bytes::from(""), Bytes::from("ccc")];
//! let raw = encode_items(items.iter());
//! assert_eq!(&raw[..], b"\x01\x03\x01a\x00\x03ccc");
//! assert_eq!(decode_items(&raw).unwrap(), items);
//! assert!(decode_items(&raw.slice(..4)).is_err());
//! ```

use crate::scan_index::Lookup;
use bytes::{BufMut, Bytes, BytesMut};

/// The layout's version byte; anything else is [`Corrupt`].
pub const VERSION: u8 = 1;

/// A stored value that does not decode, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Corrupt(pub &'static str);

impl std::fmt::Display for Corrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

/// Reads the layout: a cursor over the stored bytes.
pub struct Reader<'a> {
    raw: &'a Bytes,
    at: usize,
}

impl<'a> Reader<'a> {
    /// A cursor at the start of `raw`, for layouts that read their own
    /// header ([`crate::stream`]).
    pub fn new(raw: &'a Bytes) -> Reader<'a> {
        Reader { raw, at: 0 }
    }

    /// Checks the version byte and reads the item count, which must not
    /// claim more than `per_item` items per byte left (every item takes at
    /// least one length byte, a hash field and its value two).
    pub fn open(raw: &'a Bytes, min_bytes_per_count: u64) -> Result<(Reader<'a>, usize), Corrupt> {
        let mut r = Reader { raw, at: 0 };
        if r.byte()? != VERSION {
            return Err(Corrupt("unknown version"));
        }
        let count = r.varint()?;
        if count > (raw.len() - r.at) as u64 / min_bytes_per_count {
            return Err(Corrupt("item count exceeds the value"));
        }
        Ok((r, count as usize))
    }

    /// The next byte.
    pub fn byte(&mut self) -> Result<u8, Corrupt> {
        let b = *self.raw.get(self.at).ok_or(Corrupt("truncated"))?;
        self.at += 1;
        Ok(b)
    }

    /// The next LEB128 number.
    #[inline]
    pub fn varint(&mut self) -> Result<u64, Corrupt> {
        // Most lengths are under 128: one byte, no loop.
        match self.raw.get(self.at) {
            Some(&b) if b < 0x80 => {
                self.at += 1;
                Ok(u64::from(b))
            }
            _ => self.varint_long(),
        }
    }

    fn varint_long(&mut self) -> Result<u64, Corrupt> {
        let mut n: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            let bits = u64::from(b & 0x7f);
            if shift == 63 && bits > 1 {
                return Err(Corrupt("length overflows"));
            }
            n |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err(Corrupt("length overflows"))
    }

    /// The next number, read as a count of things that each take at least
    /// `min_bytes` of what is left: a count that claims more is
    /// [`Corrupt`], so it can size an allocation safely.
    pub fn count(&mut self, min_bytes: u64) -> Result<usize, Corrupt> {
        let n = self.varint()?;
        if n.saturating_mul(min_bytes.max(1)) > (self.raw.len() - self.at) as u64 {
            return Err(Corrupt("item count exceeds the value"));
        }
        Ok(n as usize)
    }

    /// The next item (a slice of the stored buffer).
    pub fn item(&mut self) -> Result<Bytes, Corrupt> {
        let len = self.varint()?;
        let left = (self.raw.len() - self.at) as u64;
        if len > left {
            return Err(Corrupt("length exceeds the value"));
        }
        let end = self.at + len as usize;
        let out = self.raw.slice(self.at..end);
        self.at = end;
        Ok(out)
    }

    /// Skips the next item (no slice made).
    pub fn skip_item(&mut self) -> Result<(), Corrupt> {
        self.item_span().map(drop)
    }

    /// Skips the next item, returning where its bytes are (after its
    /// length): `(start, end)`.
    pub fn item_span(&mut self) -> Result<(usize, usize), Corrupt> {
        let len = self.varint()?;
        if len > (self.raw.len() - self.at) as u64 {
            return Err(Corrupt("length exceeds the value"));
        }
        let start = self.at;
        self.at += len as usize;
        Ok((start, self.at))
    }

    /// Moves to byte `at` (a position an earlier read returned).
    pub fn seek(&mut self, at: usize) {
        debug_assert!(at <= self.raw.len());
        self.at = at.min(self.raw.len());
    }

    /// How many bytes were read so far.
    pub fn position(&self) -> usize {
        self.at
    }

    /// Checks that nothing trails the last item.
    pub fn finish(self) -> Result<(), Corrupt> {
        if self.at != self.raw.len() {
            return Err(Corrupt("trailing bytes"));
        }
        Ok(())
    }
}

/// Writes the header for `count` entries into a buffer sized for
/// `payload` more bytes.
pub fn start(count: usize, payload: usize) -> BytesMut {
    let mut out = BytesMut::with_capacity(1 + 10 + payload);
    out.put_u8(VERSION);
    put_varint(&mut out, count as u64);
    out
}

/// Appends one item.
pub fn put_item(out: &mut BytesMut, item: &[u8]) {
    put_varint(out, item.len() as u64);
    out.put_slice(item);
}

/// A buffer for a new value of `len` bytes, most of which (from byte
/// `dst_at` of the value on) will be copied from `src`, part of the value
/// it replaces. Returns the buffer and where the value starts in it: write
/// the value from there, then [`finish_apart`].
///
/// Why: the new value has nearly the old one's layout, and the allocator
/// puts buffers of one size at one offset within a page, so a copy's
/// destination would sit a few bytes past its source modulo 4096. The CPU
/// then takes each load for one that depends on the store just before it
/// ("4K aliasing") and stalls: `LPUSH` to a growing list ran at a third of
/// its speed (BENCHMARKS.md, session 37). Starting the value so that the
/// two are half a page apart avoids it; small values copy too little to
/// matter and get no slack.
pub fn buffer_apart(len: usize, dst_at: usize, src: &[u8]) -> (BytesMut, usize) {
    const PAGE: usize = 4096;
    if len < 4 * PAGE {
        return (BytesMut::with_capacity(len), 0);
    }
    let mut out = BytesMut::with_capacity(len + PAGE);
    let dst = out.as_ptr() as usize + dst_at;
    let start = (src.as_ptr() as usize)
        .wrapping_sub(dst)
        .wrapping_add(PAGE / 2)
        % PAGE;
    out.resize(start, 0);
    (out, start)
}

/// The stored value `raw` rewritten around one change, as a write of one
/// item of a big collection makes it: its header (which ends at
/// `header_end`) now counting `count` entries, the bytes in `cut` left
/// out, and `put` writing at most `extra` bytes at `place` (not inside
/// `cut`). The rest is copied in at most three pieces, into a buffer
/// placed apart from `raw` ([`buffer_apart`]).
pub fn splice(
    raw: &[u8],
    header_end: usize,
    count: usize,
    cut: Option<std::ops::Range<usize>>,
    place: usize,
    extra: usize,
    put: impl FnOnce(&mut BytesMut),
) -> Bytes {
    let head = start(count, 0);
    let len = head.len() + raw.len() + extra;
    let (mut out, apart) = buffer_apart(len, head.len(), &raw[header_end..]);
    out.extend_from_slice(&head);
    // The cut lies wholly on one side of `place`.
    let copy_around_cut = |out: &mut BytesMut, span: std::ops::Range<usize>| match &cut {
        Some(c) if span.start <= c.start && c.end <= span.end => {
            out.extend_from_slice(&raw[span.start..c.start]);
            out.extend_from_slice(&raw[c.end..span.end]);
        }
        _ => out.extend_from_slice(&raw[span]),
    };
    copy_around_cut(&mut out, header_end..place);
    put(&mut out);
    copy_around_cut(&mut out, place..raw.len());
    finish_apart(out, apart)
}

/// The value written into a [`buffer_apart`] buffer from `start`.
pub fn finish_apart(out: BytesMut, start: usize) -> Bytes {
    out.freeze().slice(start..)
}

/// Appends one LEB128 number.
pub fn put_varint(out: &mut BytesMut, mut n: u64) {
    while n >= 0x80 {
        out.put_u8((n as u8) | 0x80);
        n >>= 7;
    }
    out.put_u8(n as u8);
}

/// The stored form of a sequence of items.
pub fn encode_items<'a>(items: impl ExactSizeIterator<Item = &'a Bytes> + Clone) -> Bytes {
    let payload: usize = items.clone().map(|i| i.len() + 2).sum();
    let mut out = start(items.len(), payload);
    for i in items {
        put_item(&mut out, i);
    }
    out.freeze()
}

/// Finds the entry of `width` items (a hash field and its value: 2) whose
/// first item is `key`, scanning the stored bytes without decoding the
/// collection: a reader just past that item, or `None` when no entry has
/// it.
///
/// Why: a lookup of one field in a hash of 1,000 spent most of its time
/// building the decoded collection it then dropped (BENCHMARKS.md,
/// session 38).
pub fn find_entry<'a>(
    raw: &'a Bytes,
    width: u64,
    key: &[u8],
) -> Result<Option<Reader<'a>>, Corrupt> {
    find(raw, width, key, false)
}

/// [`find_entry`] for a read: a big collection's index is used, and built
/// the second time the same value is read (`scan_index.rs`). Writes
/// scan: the value they read is about to be replaced.
pub fn find_entry_indexed<'a>(
    raw: &'a Bytes,
    width: u64,
    key: &[u8],
) -> Result<Option<Reader<'a>>, Corrupt> {
    find(raw, width, key, true)
}

fn find<'a>(
    raw: &'a Bytes,
    width: u64,
    key: &[u8],
    indexed: bool,
) -> Result<Option<Reader<'a>>, Corrupt> {
    let (mut r, count) = Reader::open(raw, width)?;
    if indexed {
        match crate::scan_index::lookup(raw, width, count, key)? {
            Lookup::Scan => {}
            Lookup::At(after) => {
                r.seek(after);
                return Ok(Some(r));
            }
            Lookup::Absent => return Ok(None),
        }
    }
    for _ in 0..count {
        let (at, end) = r.item_span()?;
        if same(&raw[at..end], key) {
            return Ok(Some(r));
        }
        for _ in 1..width {
            r.skip_item()?;
        }
    }
    r.finish()?;
    Ok(None)
}

/// `a == b`, for scans that mostly meet near misses: the items of a
/// collection often share a prefix (`field:0000…`, `user:42:…`) and differ
/// at their end, so the last eight bytes are compared first, inline, and
/// the full comparison (a `memcmp` call) runs only when they match. A
/// profile of `HSET` on a hash of 60,000 fields had 42% of the time in
/// `memcmp` (BENCHMARKS.md, session 39).
#[inline]
pub fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n >= 8 {
        let tail = |s: &[u8]| u64::from_ne_bytes(s[n - 8..].try_into().expect("8 bytes"));
        if tail(a) != tail(b) {
            return false;
        }
    }
    a == b
}

/// Decodes a sequence of items written by [`encode_items`].
pub fn decode_items(raw: &Bytes) -> Result<Vec<Bytes>, Corrupt> {
    let (mut r, count) = Reader::open(raw, 1)?;
    let mut items = Vec::with_capacity(count);
    for _ in 0..count {
        items.push(r.item()?);
    }
    r.finish()?;
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_apart_puts_the_copy_half_a_page_from_its_source() {
        let old = Bytes::from(vec![7u8; 100_000]);
        let src = &old[1000..90_000];
        let (mut out, start) = buffer_apart(100_000, 500, src);
        let dst = out.as_ptr() as usize + start + 500;
        assert_eq!((src.as_ptr() as usize).wrapping_sub(dst) % 4096, 2048);
        out.extend_from_slice(&[1u8; 500]);
        out.extend_from_slice(src);
        let value = finish_apart(out, start);
        assert_eq!(value.len(), 500 + src.len());
        assert_eq!(&value[..500], &[1u8; 500][..]);
        assert_eq!(&value[500..], src);
        // A small value gets no slack.
        let (out, start) = buffer_apart(100, 0, &old[..10]);
        assert_eq!(start, 0);
        assert_eq!(finish_apart(out, start).len(), 0);
    }

    #[test]
    fn every_cut_and_a_lying_count_are_errors() {
        let items: Vec<Bytes> = (0..30).map(|i| Bytes::from("x".repeat(i * 7))).collect();
        let good = encode_items(items.iter());
        assert_eq!(decode_items(&good).unwrap(), items);
        for cut in 0..good.len() {
            assert!(decode_items(&good.slice(..cut)).is_err(), "cut at {cut}");
        }
        let mut trailing = good.to_vec();
        trailing.push(0);
        assert_eq!(
            decode_items(&Bytes::from(trailing)),
            Err(Corrupt("trailing bytes"))
        );
        let huge = Bytes::from_static(b"\x01\xff\xff\xff\xff\xff\xff\xff\xff\x7f");
        assert_eq!(
            decode_items(&huge),
            Err(Corrupt("item count exceeds the value"))
        );
        let overflow = Bytes::from_static(b"\x01\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02");
        assert_eq!(decode_items(&overflow), Err(Corrupt("length overflows")));
        assert_eq!(
            decode_items(&Bytes::from_static(b"\x02\x00")),
            Err(Corrupt("unknown version"))
        );
    }
}
