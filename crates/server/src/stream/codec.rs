//! The stored form of a [`Stream`]: a fixed-width header and node
//! directory, so that a command reaches any node without reading the
//! others, then the node bodies and the consumer groups.
//!
//! ```text
//! [version: u8 = 1]
//! last_id.ms, last_id.seq, max_deleted_id.ms, max_deleted_id.seq,
//! entries_added, length, node count, groups length    (u64, little-endian)
//! per node, 14 × u64:
//!     master_id, last_id, first_live, last_live (2 each),
//!     live, deleted, entries_lp, deleted_lp, body offset, body length
//! the node bodies (see `node.rs`), one after the other
//! the groups: group count, then per group (in name order):
//!     name, last_id, entries_read + 1 (0: unknown),
//!     consumer count, then per consumer (in name order): name, seen_time
//!     pending count, then per pending entry (in ID order):
//!         id, consumer (index in the group's list), delivery_time, delivery_count
//! ```
//!
//! Decoding reads the header only: opening a stream costs the same
//! whatever its size. A node's directory record is checked when a command
//! reads the node (its bounds and counts consistent, its body inside the
//! value), its body when a command reads its entries, the groups when a
//! command uses them. A damaged value is a [`Corrupt`] error from the
//! command that meets the damage, never a panic or an allocation sized by
//! a damaged count; nodes out of order across the directory go unnoticed
//! until then, and are never a cause of either.

use super::lazy::Lazy;
use super::node::{Header, Node};
use super::{Consumer, Group, Groups, Nack, Slot, Stream, StreamId};
use crate::packed::{buffer_apart, finish_apart, put_item, put_varint, Corrupt, Reader};
use bytes::{BufMut, Bytes, BytesMut};
use std::collections::BTreeMap;

const VERSION: u8 = 1;
/// Version byte and eight numbers.
const HEADER: usize = 1 + 8 * 8;
/// A directory record: fourteen numbers.
const RECORD: usize = 14 * 8;

/// The value a decoded stream came from: where its untouched nodes are read.
#[derive(Clone, Debug, Default)]
pub(super) struct Stored {
    raw: Bytes,
    bodies_at: usize,
    bodies_len: usize,
}

fn u64_at(raw: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(raw[at..at + 8].try_into().expect("8 bytes"))
}

fn id_at(raw: &[u8], at: usize) -> StreamId {
    StreamId::new(u64_at(raw, at), u64_at(raw, at + 8))
}

impl Stored {
    /// Directory record `i`: the header, and the body's offset and length
    /// among the bodies. (Checked at decode.)
    fn record(&self, i: u32) -> (Header, usize, usize) {
        let at = HEADER + i as usize * RECORD;
        let r = &self.raw[at..at + RECORD];
        let h = Header {
            master_id: id_at(r, 0),
            last_id: id_at(r, 16),
            first_live: id_at(r, 32),
            last_live: id_at(r, 48),
            live: u64_at(r, 64),
            deleted: u64_at(r, 72),
            entries_lp: u64_at(r, 80),
            deleted_lp: u64_at(r, 88),
        };
        (h, u64_at(r, 96) as usize, u64_at(r, 104) as usize)
    }

    /// Node `i`'s header.
    pub(super) fn header(&self, i: u32) -> Header {
        self.record(i).0
    }

    /// Node `i`, its body a slice of the stored value, once its record is
    /// checked.
    pub(super) fn node(&self, i: u32) -> Result<Node, Corrupt> {
        let (h, off, len) = self.record(i);
        let ordered = h.master_id <= h.last_id
            && (h.live == 0
                || (h.master_id <= h.first_live
                    && h.first_live <= h.last_live
                    && h.last_live <= h.last_id));
        if !ordered {
            return Err(Corrupt("nodes out of order"));
        }
        if h.live == 0 && h.deleted == 0 {
            return Err(Corrupt("empty node"));
        }
        let range = self
            .body_range(off, len)
            .ok_or(Corrupt("length exceeds the value"))?;
        Ok(Node::stored(h, self.raw.slice(range)))
    }

    fn body_range(&self, off: usize, len: usize) -> Option<std::ops::Range<usize>> {
        let end = off.checked_add(len).filter(|&e| e <= self.bodies_len)?;
        Some(self.bodies_at + off..self.bodies_at + end)
    }

    /// Node `i`'s body bytes; none when its record is damaged (the node
    /// then stays unreadable rather than take another's bytes).
    fn body(&self, i: u32) -> &[u8] {
        let (_, off, len) = self.record(i);
        self.body_range(off, len).map_or(&[][..], |r| &self.raw[r])
    }
}

fn put_u64(out: &mut BytesMut, n: u64) {
    out.put_u64_le(n);
}

fn put_id(out: &mut BytesMut, id: StreamId) {
    put_u64(out, id.ms);
    put_u64(out, id.seq);
}

impl Stream {
    /// The stored form. Bodies of untouched nodes, and untouched groups,
    /// are copied as they are.
    pub fn encode(&self) -> Bytes {
        let bodies: usize = (0..self.nodes.len()).map(|i| self.body_len(i)).sum();
        let groups = match self.groups.raw() {
            Some(raw) => raw.clone(),
            None => {
                let mut g = BytesMut::new();
                encode_groups(
                    &mut g,
                    self.groups.decoded().expect("groups have bytes or a value"),
                );
                g.freeze()
            }
        };
        // Place the buffer against the first untouched body it copies (see
        // `buffer_apart`).
        let len = HEADER + self.nodes.len() * RECORD + bodies + groups.len();
        let first_stored = self
            .nodes
            .iter()
            .enumerate()
            .find_map(|(i, slot)| match *slot {
                Slot::Stored(j) => Some((i, j)),
                Slot::Owned(_) => None,
            });
        let (mut out, start) = match first_stored {
            Some((i, j)) => {
                let before: usize = (0..i).map(|k| self.body_len(k)).sum();
                let dst_at = HEADER + self.nodes.len() * RECORD + before;
                buffer_apart(len, dst_at, self.stored.body(j))
            }
            None => (BytesMut::with_capacity(len), 0),
        };
        out.put_u8(VERSION);
        put_id(&mut out, self.last_id);
        put_id(&mut out, self.max_deleted_id);
        put_u64(&mut out, self.entries_added);
        put_u64(&mut out, self.length);
        put_u64(&mut out, self.nodes.len() as u64);
        put_u64(&mut out, groups.len() as u64);
        let mut offset = 0u64;
        for i in 0..self.nodes.len() {
            let h = self.header(i);
            let len = self.body_len(i) as u64;
            for id in [h.master_id, h.last_id, h.first_live, h.last_live] {
                put_id(&mut out, id);
            }
            for n in [h.live, h.deleted, h.entries_lp, h.deleted_lp, offset, len] {
                put_u64(&mut out, n);
            }
            offset += len;
        }
        for slot in &self.nodes {
            match *slot {
                Slot::Stored(j) => out.extend_from_slice(self.stored.body(j)),
                Slot::Owned(k) => out.extend_from_slice(self.owned[k as usize].body()),
            }
        }
        out.extend_from_slice(&groups);
        finish_apart(out, start)
    }

    fn body_len(&self, i: usize) -> usize {
        match self.nodes[i] {
            Slot::Stored(j) => self.stored.body(j).len(),
            Slot::Owned(k) => self.owned[k as usize].body().len(),
        }
    }

    /// Decodes a stored stream: the header only; nodes and groups are
    /// read when a command uses them (slices of `raw`, no copy).
    pub fn decode(raw: &Bytes) -> Result<Stream, Corrupt> {
        if raw.len() < HEADER {
            return Err(Corrupt("truncated"));
        }
        if raw[0] != VERSION {
            return Err(Corrupt("unknown version"));
        }
        let count = u64_at(raw, 49);
        let groups_len = u64_at(raw, 57);
        let dir_len = count
            .checked_mul(RECORD as u64)
            .filter(|&n| n <= (raw.len() - HEADER) as u64)
            .ok_or(Corrupt("item count exceeds the value"))? as usize;
        let bodies_at = HEADER + dir_len;
        let rest = (raw.len() - bodies_at) as u64;
        if groups_len > rest {
            return Err(Corrupt("length exceeds the value"));
        }
        let bodies_len = (rest - groups_len) as usize;
        let s = Stream {
            stored: Stored {
                raw: raw.clone(),
                bodies_at,
                bodies_len,
            },
            nodes: (0..count as u32).map(Slot::Stored).collect(),
            owned: Vec::new(),
            length: u64_at(raw, 41),
            last_id: id_at(raw, 1),
            max_deleted_id: id_at(raw, 17),
            entries_added: u64_at(raw, 33),
            groups: Lazy::stored(raw.slice(bodies_at + bodies_len..)),
            ops: Some(Vec::new()),
        };
        if count > 0 && s.stored.header(count as u32 - 1).last_id > s.last_id {
            return Err(Corrupt("entry above the last ID"));
        }
        Ok(s)
    }
}

pub(super) fn encode_groups(out: &mut BytesMut, groups: &Groups) {
    put_varint(out, groups.len() as u64);
    for (name, g) in groups {
        put_item(out, name);
        put_varint(out, g.last_id.ms);
        put_varint(out, g.last_id.seq);
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
            put_varint(out, id.ms);
            put_varint(out, id.seq);
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

fn read_id(r: &mut Reader<'_>) -> Result<StreamId, Corrupt> {
    Ok(StreamId::new(r.varint()?, r.varint()?))
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
