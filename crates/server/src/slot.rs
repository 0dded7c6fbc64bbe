//! One item of a decoded collection: still where it was stored, or new.
//!
//! Decoding a hash of 1,000 fields into a reference-counted slice per item
//! cost two atomic operations per item, and re-encoding it copied the
//! items one by one: together 55% of an `HSET` to such a hash
//! (BENCHMARKS.md, session 37). A [`Slot`] keeps the offsets of a stored
//! item instead, and [`encode_slots`] copies runs of stored items that are
//! still adjacent with one `memcpy`, so a write that changes one field
//! copies the rest of the value in at most two pieces.
//!
//! This is not a general container: the owner keeps the stored bytes the
//! slots point into (the `raw` every method takes) alongside them.

use crate::packed::{buffer_apart, finish_apart, put_item, start, Corrupt, Reader};
use bytes::{BufMut, Bytes, BytesMut};
use std::ops::Range;

/// An item of a collection decoded from `raw` bytes.
#[derive(Clone, Debug)]
pub(crate) enum Slot {
    /// Bytes `at..end` of the stored value, its length prefix from `start`.
    Stored { start: usize, at: usize, end: usize },
    /// An item written since.
    New(Bytes),
}

impl Slot {
    /// Reads the next item of `r` (bounds-checked, no copy).
    pub(crate) fn read(r: &mut Reader<'_>) -> Result<Slot, Corrupt> {
        let start = r.position();
        let (at, end) = r.item_span()?;
        Ok(Slot::Stored { start, at, end })
    }

    /// The item's bytes.
    pub(crate) fn get<'a>(&'a self, raw: &'a [u8]) -> &'a [u8] {
        match self {
            Slot::Stored { at, end, .. } => &raw[*at..*end],
            Slot::New(b) => b,
        }
    }

    /// The item's bytes as a shared buffer (a slice of `raw`, no copy).
    pub(crate) fn to_bytes(&self, raw: &Bytes) -> Bytes {
        match self {
            Slot::Stored { at, end, .. } => raw.slice(*at..*end),
            Slot::New(b) => b.clone(),
        }
    }

    /// Where the stored item lies in `raw`, length prefix included, while
    /// it is unchanged.
    pub(crate) fn span(&self) -> Option<Range<usize>> {
        match self {
            Slot::Stored { start, end, .. } => Some(*start..*end),
            Slot::New(_) => None,
        }
    }

    /// At least the bytes [`encode_slots`] writes for it.
    pub(crate) fn encoded_len(&self) -> usize {
        match self {
            Slot::Stored { start, end, .. } => end - start,
            Slot::New(b) => b.len() + 10,
        }
    }
}

/// Reads a sequence of items ([`crate::packed::encode_items`]'s layout)
/// as slots of `raw`.
pub(crate) fn read_slots(raw: &Bytes) -> Result<Vec<Slot>, Corrupt> {
    let (mut r, count) = Reader::open(raw, 1)?;
    let mut slots = Vec::with_capacity(count);
    for _ in 0..count {
        slots.push(Slot::read(&mut r)?);
    }
    r.finish()?;
    Ok(slots)
}

/// The stored form of `count` entries made of `slots` (items of `raw` or
/// new), in a buffer placed apart from `raw` ([`buffer_apart`]).
pub(crate) fn encode_slots<'a>(
    raw: &[u8],
    count: usize,
    slots: impl Iterator<Item = &'a Slot> + Clone,
) -> Bytes {
    let size: usize = slots.clone().map(Slot::encoded_len).sum();
    encode_runs(
        raw,
        count,
        size,
        slots,
        |s| s.span(),
        |out, slot| put_item(out, slot.get(raw)),
    )
}

/// The stored form of `count` entries of at most `size` bytes: each of
/// `items` either unchanged, at the span of `raw` that `stored` gives, or
/// written by `put_new`. Unchanged items still adjacent in `raw` are
/// copied together, in a buffer placed apart from `raw`
/// ([`buffer_apart`]).
pub(crate) fn encode_runs<T>(
    raw: &[u8],
    count: usize,
    size: usize,
    items: impl Iterator<Item = T>,
    stored: impl Fn(&T) -> Option<Range<usize>>,
    mut put_new: impl FnMut(&mut BytesMut, T),
) -> Bytes {
    let header = start(count, 0);
    let (mut out, at) = buffer_apart(header.len() + size, header.len(), raw);
    out.extend_from_slice(&header);
    let mut run = 0..0;
    for item in items {
        match stored(&item) {
            Some(span) if span.start == run.end && !run.is_empty() => run.end = span.end,
            Some(span) => {
                out.put_slice(&raw[run]);
                run = span;
            }
            None => {
                out.put_slice(&raw[run]);
                run = 0..0;
                put_new(&mut out, item);
            }
        }
    }
    out.put_slice(&raw[run]);
    finish_apart(out, at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packed::encode_items;

    #[test]
    fn stored_and_new_items_encode_as_items() {
        // Small and big (a buffer placed apart: beyond 16 KiB) values.
        for big in [300, 40_000] {
            let items: Vec<Bytes> = ["a", "", "ccc", &"d".repeat(big), "e"]
                .iter()
                .map(|s| Bytes::copy_from_slice(s.as_bytes()))
                .collect();
            let raw = encode_items(items.iter());
            let mut slots = read_slots(&raw).unwrap();
            let got: Vec<&[u8]> = slots.iter().map(|s| s.get(&raw)).collect();
            assert_eq!(got, items.iter().map(|i| &i[..]).collect::<Vec<_>>());
            assert_eq!(slots[3].to_bytes(&raw), items[3]);
            assert_eq!(encode_slots(&raw, slots.len(), slots.iter()), raw);
            // Change the order, drop one, add one: the result reads back.
            slots.swap(0, 4);
            slots.remove(2);
            slots.insert(1, Slot::New(Bytes::from_static(b"new")));
            let out = encode_slots(&raw, slots.len(), slots.iter());
            assert!(out.len() <= 11 + slots.iter().map(Slot::encoded_len).sum::<usize>());
            let back = crate::packed::decode_items(&out).unwrap();
            let want: Vec<&[u8]> = vec![b"e", b"new", b"", &items[3], b"a"];
            assert_eq!(back.iter().map(|b| &b[..]).collect::<Vec<_>>(), want);
        }
    }

    #[test]
    fn a_truncated_item_is_corrupt() {
        let raw = Bytes::from_static(b"\x05abc");
        assert!(Slot::read(&mut Reader::new(&raw)).is_err());
    }
}
