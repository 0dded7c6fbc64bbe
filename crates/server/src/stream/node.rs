//! One node of a stream: a fixed-size header (what the directory stores)
//! and a body of bytes, changed by splicing bytes rather than by decoding
//! its entries.
//!
//! A body is the master entry's field names, then the live entries:
//!
//! ```text
//! field count, the fields                      (the master entry)
//! per live entry: ms, seq, item count, items   (varints; items length-prefixed)
//! ```
//!
//! The header keeps the listpack byte counts Redis's node would have
//! (see [`listpack`]), so deciding whether the node is full needs no
//! decoding, and appending an entry or dropping the first one only copies
//! bytes.

use super::{listpack, Item, StreamId};
use crate::packed::{put_item, put_varint, Corrupt, Reader};
use bytes::{Bytes, BytesMut};
use std::cell::OnceCell;

/// A node's header: its place in the ID space and its counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Header {
    /// The first ID ever added to the node (the radix tree key).
    pub master_id: StreamId,
    /// The ID of the last entry added to it, deleted or not.
    pub last_id: StreamId,
    /// The first and last live entries' IDs (meaningless when `live` is 0).
    pub first_live: StreamId,
    pub last_live: StreamId,
    /// Live entries.
    pub live: u64,
    /// Entries deleted from it (Redis keeps them, flagged).
    pub deleted: u64,
    /// Listpack bytes of the live entries.
    pub entries_lp: u64,
    /// Listpack bytes of the deleted entries.
    pub deleted_lp: u64,
}

/// A node: header and body, its entries decoded on first read.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub h: Header,
    body: Bytes,
    items: OnceCell<Result<Vec<Item>, Corrupt>>,
}

fn put_entry(out: &mut BytesMut, id: StreamId, fields: &[Bytes]) {
    put_varint(out, id.ms);
    put_varint(out, id.seq);
    put_varint(out, fields.len() as u64);
    for f in fields {
        put_item(out, f);
    }
}

/// Reads an entry's fields and values: a count (even, not zero), then
/// the items.
pub(crate) fn read_fields(r: &mut Reader<'_>) -> Result<Vec<Bytes>, Corrupt> {
    let n = r.count(1)?;
    if n == 0 || n % 2 != 0 {
        return Err(Corrupt("odd field count"));
    }
    let mut fields = Vec::with_capacity(n);
    for _ in 0..n {
        fields.push(r.item()?);
    }
    Ok(fields)
}

/// Reads one entry at the reader's position.
fn read_entry(r: &mut Reader<'_>) -> Result<Item, Corrupt> {
    let id = StreamId::new(r.varint()?, r.varint()?);
    Ok(Item {
        id,
        fields: read_fields(r)?,
    })
}

impl Node {
    /// A node from stored parts (checked when its body is first read).
    pub fn stored(h: Header, body: Bytes) -> Node {
        Node {
            h,
            body,
            items: OnceCell::new(),
        }
    }

    /// A new node whose first entry is `id` with `fields`.
    pub fn first(id: StreamId, fields: &[Bytes]) -> Node {
        let names: Vec<Bytes> = fields.iter().step_by(2).cloned().collect();
        let mut body = BytesMut::new();
        put_varint(&mut body, names.len() as u64);
        for f in &names {
            put_item(&mut body, f);
        }
        let mut node = Node::stored(
            Header {
                master_id: id,
                last_id: id,
                first_live: id,
                last_live: id,
                ..Header::default()
            },
            body.freeze(),
        );
        let item = Item {
            id,
            fields: fields.to_vec(),
        };
        node.push_encoded(&item, listpack::entry(&item, id, &names));
        node
    }

    /// The body's bytes (what the stored form holds).
    pub fn body(&self) -> &Bytes {
        &self.body
    }

    /// The master entry's field names, and where the entries start.
    fn master(&self) -> Result<(Vec<Bytes>, usize), Corrupt> {
        let mut r = Reader::new(&self.body);
        let n = r.count(1)?;
        let mut names = Vec::with_capacity(n);
        for _ in 0..n {
            names.push(r.item()?);
        }
        Ok((names, r.position()))
    }

    /// The live entries: exactly `live` of them, rising, between the
    /// header's first and last live IDs and within its bounds.
    pub fn items(&self) -> Result<&[Item], Corrupt> {
        self.items
            .get_or_init(|| self.decode_items())
            .as_ref()
            .map(Vec::as_slice)
            .map_err(|c| *c)
    }

    fn decode_items(&self) -> Result<Vec<Item>, Corrupt> {
        let (_, at) = self.master()?;
        let entries = self.body.slice(at..);
        let mut r = Reader::new(&entries);
        let live = usize::try_from(self.h.live).map_err(|_| Corrupt("count overflows"))?;
        if live > entries.len() / 3 {
            return Err(Corrupt("item count exceeds the value"));
        }
        let mut items = Vec::with_capacity(live);
        let mut previous: Option<StreamId> = None;
        for _ in 0..live {
            let item = read_entry(&mut r)?;
            let id = item.id;
            if id < self.h.master_id || id > self.h.last_id || previous.is_some_and(|p| p >= id) {
                return Err(Corrupt("entries out of order"));
            }
            previous = Some(id);
            items.push(item);
        }
        r.finish()?;
        let edges = items.first().map(|i| i.id) == Some(self.h.first_live)
            && items.last().map(|i| i.id) == Some(self.h.last_live);
        if !items.is_empty() && !edges {
            return Err(Corrupt("entries disagree with their node"));
        }
        Ok(items)
    }

    /// Pushes onto `out` the live entries from `start` to `end`
    /// (inclusive), in order or, with `rev`, from the last, until `out`
    /// holds `limit`: only those are decoded. A forward read walks from
    /// the first entry and stops when done; a reverse one walks every
    /// entry, without decoding, to find where each starts. Every entry
    /// walked is checked as [`Node::items`] checks them.
    pub fn scan(
        &self,
        start: StreamId,
        end: StreamId,
        limit: usize,
        rev: bool,
        out: &mut Vec<Item>,
    ) -> Result<(), Corrupt> {
        let (_, at) = self.master()?;
        let mut r = Reader::new(&self.body);
        r.seek(at);
        let mut walked: u64 = 0;
        let mut previous: Option<StreamId> = None;
        let mut starts = Vec::new();
        while walked < self.h.live {
            let offset = r.position();
            let id = StreamId::new(r.varint()?, r.varint()?);
            let in_bounds = id >= self.h.master_id && id <= self.h.last_id;
            if !in_bounds || previous.is_some_and(|p| p >= id) {
                return Err(Corrupt("entries out of order"));
            }
            if walked == 0 && id != self.h.first_live {
                return Err(Corrupt("entries disagree with their node"));
            }
            previous = Some(id);
            walked += 1;
            if !rev && (id > end || out.len() >= limit) {
                return Ok(());
            }
            if rev || id < start {
                let n = r.count(1)?;
                for _ in 0..n {
                    r.skip_item()?;
                }
                if rev && id >= start && id <= end {
                    starts.push(offset);
                }
                continue;
            }
            r.seek(offset);
            out.push(read_entry(&mut r)?);
        }
        if r.position() != self.body.len() || previous != Some(self.h.last_live) {
            return Err(Corrupt("entries disagree with their node"));
        }
        for &offset in starts.iter().rev() {
            if out.len() >= limit {
                break;
            }
            r.seek(offset);
            out.push(read_entry(&mut r)?);
        }
        Ok(())
    }

    /// The bytes of this node's listpack in Redis.
    pub fn listpack_bytes(&self) -> Result<u64, Corrupt> {
        let (names, _) = self.master()?;
        Ok(
            (listpack::OVERHEAD + listpack::master(self.h.live as usize, self.h.deleted, &names))
                as u64
                + self.h.entries_lp
                + self.h.deleted_lp,
        )
    }

    /// Appends an entry above every ID in the node, copying the body once
    /// and decoding nothing.
    pub fn append(&mut self, id: StreamId, fields: &[Bytes]) -> Result<(), Corrupt> {
        let (names, _) = self.master()?;
        let item = Item {
            id,
            fields: fields.to_vec(),
        };
        let size = listpack::entry(&item, self.h.master_id, &names);
        self.push_encoded(&item, size);
        Ok(())
    }

    fn push_encoded(&mut self, item: &Item, lp_size: usize) {
        let mut body = BytesMut::with_capacity(self.body.len() + 32);
        body.extend_from_slice(&self.body);
        put_entry(&mut body, item.id, &item.fields);
        self.body = body.freeze();
        if self.h.live == 0 {
            self.h.first_live = item.id;
        }
        self.h.live += 1;
        self.h.last_live = item.id;
        self.h.last_id = item.id;
        self.h.entries_lp += lp_size as u64;
        self.items = OnceCell::new();
    }

    /// Deletes the first live entry (head trimming), decoding only it and
    /// the next one's ID.
    pub fn delete_first(&mut self) -> Result<(), Corrupt> {
        let (names, at) = self.master()?;
        let entries = self.body.slice(at..);
        let mut r = Reader::new(&entries);
        let first = read_entry(&mut r)?;
        if first.id != self.h.first_live {
            return Err(Corrupt("entries disagree with their node"));
        }
        let rest = r.position();
        let next = if self.h.live > 1 {
            Some(StreamId::new(r.varint()?, r.varint()?))
        } else {
            None
        };
        let mut body = BytesMut::with_capacity(self.body.len());
        body.extend_from_slice(&self.body[..at]);
        body.extend_from_slice(&entries[rest..]);
        self.body = body.freeze();
        self.mark_deleted(listpack::entry(&first, self.h.master_id, &names) as u64);
        if let Some(next) = next {
            self.h.first_live = next;
        }
        Ok(())
    }

    /// Deletes the live entry at position `at` (decoding the node).
    pub fn delete_at(&mut self, at: usize) -> Result<(), Corrupt> {
        let (names, start) = self.master()?;
        let mut items = self.items()?.to_vec();
        let item = items.remove(at);
        let mut body = BytesMut::with_capacity(self.body.len());
        body.extend_from_slice(&self.body[..start]);
        for i in &items {
            put_entry(&mut body, i.id, &i.fields);
        }
        self.body = body.freeze();
        self.mark_deleted(listpack::entry(&item, self.h.master_id, &names) as u64);
        if let (Some(first), Some(last)) = (items.first(), items.last()) {
            self.h.first_live = first.id;
            self.h.last_live = last.id;
        }
        self.items = OnceCell::from(Ok(items));
        Ok(())
    }

    fn mark_deleted(&mut self, lp_size: u64) {
        self.h.live -= 1;
        self.h.deleted += 1;
        self.h.entries_lp = self.h.entries_lp.saturating_sub(lp_size);
        self.h.deleted_lp += lp_size;
        self.items = OnceCell::new();
    }
}
