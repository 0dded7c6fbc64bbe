//! The stored form of a [`Stream`]: [`packed`](crate::packed)'s varints
//! and length-prefixed items, in this order:
//!
//! ```text
//! [version: u8 = 1]
//! last_id, max_deleted_id, entries_added
//! node count, then per node:
//!     master_id, last_id, first_live, last_live, live, deleted, deleted_bytes,
//!     master field count, the fields,
//!     entries length, the entries: per live entry, id, item count, the items
//! groups length, the groups: group count, then per group (in name order):
//!     name, last_id, entries_read + 1 (0: unknown),
//!     consumer count, then per consumer (in name order): name, seen_time
//!     pending count, then per pending entry (in ID order):
//!         id, consumer (index in the group's list), delivery_time, delivery_count
//! ```
//!
//! An ID is two varints (ms, seq). A node's entries and the groups are
//! length-prefixed so that decoding can leave them as bytes until used
//! (see [`Stream`]); the node header carries what the stream needs without
//! them (counts, first and last live IDs). Decoding checks every count
//! against the bytes left, every order the structure relies on (nodes
//! rising and not overlapping, entries rising within their node's bounds,
//! names and pending IDs rising), and every reference (a pending entry's
//! consumer), so a damaged value is a [`Corrupt`] error, never a panic or a
//! huge allocation.

use super::lazy::Lazy;
use super::{Consumer, Group, Groups, Item, Nack, Node, Stream, StreamId};
use crate::packed::{put_item, put_varint, Corrupt, Reader};
use bytes::{BufMut, Bytes, BytesMut};
use std::collections::BTreeMap;

const VERSION: u8 = 1;

fn put_id(out: &mut BytesMut, id: StreamId) {
    put_varint(out, id.ms);
    put_varint(out, id.seq);
}

fn read_id(r: &mut Reader<'_>) -> Result<StreamId, Corrupt> {
    Ok(StreamId::new(r.varint()?, r.varint()?))
}

/// Appends `part` (stored bytes, or an encoding of the value) with its
/// length in front.
fn put_part(out: &mut BytesMut, raw: Option<&Bytes>, encode: impl FnOnce(&mut BytesMut)) {
    match raw {
        Some(raw) => put_item(out, raw),
        None => {
            let mut part = BytesMut::new();
            encode(&mut part);
            put_item(out, &part);
        }
    }
}

impl Stream {
    /// The stored form.
    pub fn encode(&self) -> Bytes {
        let mut out = BytesMut::with_capacity(64);
        out.put_u8(VERSION);
        put_id(&mut out, self.last_id);
        put_id(&mut out, self.max_deleted_id);
        put_varint(&mut out, self.entries_added);
        put_varint(&mut out, self.nodes.len() as u64);
        for n in &self.nodes {
            put_id(&mut out, n.master_id);
            put_id(&mut out, n.last_id);
            put_id(&mut out, n.first_live);
            put_id(&mut out, n.last_live);
            put_varint(&mut out, n.live as u64);
            put_varint(&mut out, n.deleted);
            put_varint(&mut out, n.deleted_bytes);
            put_varint(&mut out, n.master_fields.len() as u64);
            for f in &n.master_fields {
                put_item(&mut out, f);
            }
            put_part(&mut out, n.items.raw(), |part| {
                let items = n.items.decoded().expect("a node has bytes or entries");
                for i in items {
                    put_id(part, i.id);
                    put_varint(part, i.fields.len() as u64);
                    for f in &i.fields {
                        put_item(part, f);
                    }
                }
            });
        }
        put_part(&mut out, self.groups.raw(), |part| {
            encode_groups(
                part,
                self.groups.decoded().expect("groups have bytes or a value"),
            )
        });
        out.freeze()
    }

    /// Decodes a stored stream: headers at once, a node's entries and the
    /// groups when first used (slices of `raw`, no copy).
    pub fn decode(raw: &Bytes) -> Result<Stream, Corrupt> {
        let mut r = Reader::new(raw);
        if r.byte()? != VERSION {
            return Err(Corrupt("unknown version"));
        }
        let mut s = Stream {
            last_id: read_id(&mut r)?,
            max_deleted_id: read_id(&mut r)?,
            entries_added: r.varint()?,
            ..Stream::default()
        };
        // Every node header takes at least 16 bytes.
        let nodes = r.count(16)?;
        s.nodes.reserve(nodes);
        let mut previous: Option<StreamId> = None;
        for _ in 0..nodes {
            let master_id = read_id(&mut r)?;
            let last_id = read_id(&mut r)?;
            let first_live = read_id(&mut r)?;
            let last_live = read_id(&mut r)?;
            let live = r.varint()?;
            let deleted = r.varint()?;
            let deleted_bytes = r.varint()?;
            let in_order = master_id <= last_id
                && !previous.is_some_and(|p| p >= master_id)
                && (live == 0
                    || (master_id <= first_live
                        && first_live <= last_live
                        && last_live <= last_id));
            if !in_order {
                return Err(Corrupt("nodes out of order"));
            }
            if live == 0 && deleted == 0 {
                return Err(Corrupt("empty node"));
            }
            previous = Some(last_id);
            let mut master_fields = Vec::with_capacity(r.count(1)?);
            for _ in 0..master_fields.capacity() {
                master_fields.push(r.item()?);
            }
            let entries = r.item()?;
            // Every entry takes at least 3 bytes.
            if live > entries.len() as u64 / 3 {
                return Err(Corrupt("item count exceeds the value"));
            }
            s.length += live;
            s.nodes.push(Node {
                master_id,
                master_fields,
                deleted,
                deleted_bytes,
                last_id,
                first_live,
                last_live,
                live: live as usize,
                items: Lazy::stored(entries),
            });
        }
        if previous.is_some_and(|p| p > s.last_id) {
            return Err(Corrupt("entry above the last ID"));
        }
        s.groups = Lazy::stored(r.item()?);
        r.finish()?;
        Ok(s)
    }
}

/// What a node's header says of its entries.
#[derive(Clone, Copy)]
pub(super) struct Bounds {
    pub master_id: StreamId,
    pub last_id: StreamId,
    pub first_live: StreamId,
    pub last_live: StreamId,
    pub live: usize,
}

/// Decodes a node's entries: exactly its live count, rising, from its
/// first to its last live ID, within its bounds.
pub(super) fn decode_items(raw: &Bytes, node: &Bounds) -> Result<Vec<Item>, Corrupt> {
    let mut r = Reader::new(raw);
    let mut items = Vec::with_capacity(node.live);
    let mut previous: Option<StreamId> = None;
    for _ in 0..node.live {
        let id = read_id(&mut r)?;
        if id < node.master_id || id > node.last_id || previous.is_some_and(|p| p >= id) {
            return Err(Corrupt("entries out of order"));
        }
        previous = Some(id);
        let n = r.count(1)?;
        if n == 0 || n % 2 != 0 {
            return Err(Corrupt("odd field count"));
        }
        let mut fields = Vec::with_capacity(n);
        for _ in 0..n {
            fields.push(r.item()?);
        }
        items.push(Item { id, fields });
    }
    r.finish()?;
    let edges = items.first().map(|i| i.id) == Some(node.first_live)
        && items.last().map(|i| i.id) == Some(node.last_live);
    if !items.is_empty() && !edges {
        return Err(Corrupt("entries disagree with their node"));
    }
    Ok(items)
}

fn encode_groups(out: &mut BytesMut, groups: &Groups) {
    put_varint(out, groups.len() as u64);
    for (name, g) in groups {
        put_item(out, name);
        put_id(out, g.last_id);
        put_varint(out, g.entries_read.map_or(0, |n| n as u64 + 1));
        put_varint(out, g.consumers.len() as u64);
        for (cname, c) in &g.consumers {
            put_item(out, cname);
            put_varint(out, c.seen_time);
        }
        let index: BTreeMap<&Bytes, u64> = g
            .consumers
            .keys()
            .enumerate()
            .map(|(i, k)| (k, i as u64))
            .collect();
        put_varint(out, g.pel.len() as u64);
        for (id, nack) in &g.pel {
            put_id(out, *id);
            put_varint(out, index[&nack.consumer]);
            put_varint(out, nack.delivery_time);
            put_varint(out, nack.delivery_count);
        }
    }
}

/// Decodes the groups section.
pub(super) fn decode_groups(raw: &Bytes) -> Result<Groups, Corrupt> {
    let mut r = Reader::new(raw);
    let mut groups = Groups::new();
    let count = r.count(4)?;
    for _ in 0..count {
        let name = r.item()?;
        let group = read_group(&mut r)?;
        if groups
            .last_key_value()
            .is_some_and(|(last, _)| *last >= name)
        {
            return Err(Corrupt("groups out of order"));
        }
        groups.insert(name, group);
    }
    r.finish()?;
    Ok(groups)
}

fn read_group(r: &mut Reader<'_>) -> Result<Group, Corrupt> {
    let last_id = read_id(r)?;
    let entries_read = match r.varint()? {
        0 => None,
        n => Some(i64::try_from(n - 1).map_err(|_| Corrupt("entries read overflows"))?),
    };
    let mut g = Group::new(last_id, entries_read);
    let consumers = r.count(2)?;
    let mut names = Vec::with_capacity(consumers);
    for _ in 0..consumers {
        let name = r.item()?;
        let seen_time = r.varint()?;
        if names.last().is_some_and(|last: &Bytes| *last >= name) {
            return Err(Corrupt("consumers out of order"));
        }
        names.push(name.clone());
        g.consumers.insert(
            name,
            Consumer {
                seen_time,
                ..Consumer::default()
            },
        );
    }
    let pending = r.count(5)?;
    for _ in 0..pending {
        let id = read_id(r)?;
        let owner = names
            .get(r.varint()? as usize)
            .ok_or(Corrupt("pending entry of no consumer"))?
            .clone();
        let delivery_time = r.varint()?;
        let delivery_count = r.varint()?;
        if g.pel.last_key_value().is_some_and(|(last, _)| *last >= id) {
            return Err(Corrupt("pending entries out of order"));
        }
        g.consumers
            .get_mut(&owner)
            .expect("names are the consumers")
            .pel
            .insert(id);
        g.pel.insert(
            id,
            Nack {
                consumer: owner,
                delivery_time,
                delivery_count,
            },
        );
    }
    Ok(g)
}
