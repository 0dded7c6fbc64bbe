//! The stored form of a [`Stream`]: [`packed`](crate::packed)'s varints
//! and length-prefixed items, in this order:
//!
//! ```text
//! [version: u8 = 1]
//! last_id, max_deleted_id, entries_added
//! node count, then per node:
//!     master_id, last_id, deleted, deleted_bytes,
//!     master field count, the fields,
//!     entry count, then per entry: id, item count, the items
//! group count, then per group (in name order):
//!     name, last_id, entries_read + 1 (0: unknown),
//!     consumer count, then per consumer (in name order): name, seen_time
//!     pending count, then per pending entry (in ID order):
//!         id, consumer (index in the group's list), delivery_time, delivery_count
//! ```
//!
//! An ID is two varints (ms, seq). Decoding checks every count against
//! the bytes left, every order the structure relies on (entry IDs rising
//! within and across nodes, names and pending IDs rising), and every
//! reference (a pending entry's consumer), so a damaged value is a
//! [`Corrupt`] error, never a panic or a huge allocation.

use super::{Consumer, Group, Item, Nack, Node, Stream, StreamId};
use crate::packed::{put_item, put_varint, Corrupt, Reader};
use bytes::{Bytes, BytesMut};
use std::collections::BTreeMap;

const VERSION: u8 = 1;

fn put_id(out: &mut BytesMut, id: StreamId) {
    put_varint(out, id.ms);
    put_varint(out, id.seq);
}

fn read_id(r: &mut Reader<'_>) -> Result<StreamId, Corrupt> {
    Ok(StreamId::new(r.varint()?, r.varint()?))
}

impl Stream {
    /// The stored form.
    pub fn encode(&self) -> Bytes {
        let payload: usize = self
            .nodes
            .iter()
            .flat_map(|n| n.items.iter())
            .map(|i| 24 + i.fields.iter().map(|f| f.len() + 2).sum::<usize>())
            .sum();
        let mut out = BytesMut::with_capacity(64 + payload);
        out.extend_from_slice(&[VERSION]);
        put_id(&mut out, self.last_id);
        put_id(&mut out, self.max_deleted_id);
        put_varint(&mut out, self.entries_added);
        put_varint(&mut out, self.nodes.len() as u64);
        for n in &self.nodes {
            put_id(&mut out, n.master_id);
            put_id(&mut out, n.last_id);
            put_varint(&mut out, n.deleted);
            put_varint(&mut out, n.deleted_bytes);
            put_varint(&mut out, n.master_fields.len() as u64);
            for f in &n.master_fields {
                put_item(&mut out, f);
            }
            put_varint(&mut out, n.items.len() as u64);
            for i in &n.items {
                put_id(&mut out, i.id);
                put_varint(&mut out, i.fields.len() as u64);
                for f in &i.fields {
                    put_item(&mut out, f);
                }
            }
        }
        put_varint(&mut out, self.groups.len() as u64);
        for (name, g) in &self.groups {
            put_item(&mut out, name);
            put_id(&mut out, g.last_id);
            put_varint(&mut out, g.entries_read.map_or(0, |n| n as u64 + 1));
            put_varint(&mut out, g.consumers.len() as u64);
            for (cname, c) in &g.consumers {
                put_item(&mut out, cname);
                put_varint(&mut out, c.seen_time);
            }
            let index: BTreeMap<&Bytes, u64> = g
                .consumers
                .keys()
                .enumerate()
                .map(|(i, k)| (k, i as u64))
                .collect();
            put_varint(&mut out, g.pel.len() as u64);
            for (id, nack) in &g.pel {
                put_id(&mut out, *id);
                put_varint(&mut out, index[&nack.consumer]);
                put_varint(&mut out, nack.delivery_time);
                put_varint(&mut out, nack.delivery_count);
            }
        }
        out.freeze()
    }

    /// Decodes a stored stream (slices of `raw`, no copy).
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
        // Every node takes at least 8 bytes, every entry 3.
        let nodes = r.count(8)?;
        let mut previous: Option<StreamId> = None;
        let mut last_master: Option<StreamId> = None;
        for _ in 0..nodes {
            let master_id = read_id(&mut r)?;
            let last_id = read_id(&mut r)?;
            if last_id < master_id {
                return Err(Corrupt("node ends before it starts"));
            }
            if last_master.is_some_and(|m| m >= master_id)
                || previous.is_some_and(|p| p >= master_id)
            {
                return Err(Corrupt("nodes out of order"));
            }
            last_master = Some(master_id);
            let deleted = r.varint()?;
            let deleted_bytes = r.varint()?;
            let mut master_fields = Vec::with_capacity(r.count(1)?);
            for _ in 0..master_fields.capacity() {
                master_fields.push(r.item()?);
            }
            let mut items = Vec::with_capacity(r.count(3)?);
            for _ in 0..items.capacity() {
                let id = read_id(&mut r)?;
                if id < master_id || id > last_id || previous.is_some_and(|p| p >= id) {
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
            if items.is_empty() && deleted == 0 {
                return Err(Corrupt("empty node"));
            }
            previous = Some(last_id);
            s.length += items.len() as u64;
            s.nodes.push(Node {
                master_id,
                master_fields,
                items,
                deleted,
                deleted_bytes,
                last_id,
            });
        }
        if previous.is_some_and(|p| p > s.last_id) {
            return Err(Corrupt("entry above the last ID"));
        }
        let groups = r.count(4)?;
        for _ in 0..groups {
            let name = r.item()?;
            let group = read_group(&mut r)?;
            if s.groups
                .last_key_value()
                .is_some_and(|(last, _)| *last >= name)
            {
                return Err(Corrupt("groups out of order"));
            }
            s.groups.insert(name, group);
        }
        r.finish()?;
        Ok(s)
    }
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
