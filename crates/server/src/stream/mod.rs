//! The encoding of a Redis stream inside one engine value, and what the
//! stream commands do to it.
//!
//! A stream is one [`Entry`](tiercache_engine::Entry) of kind
//! [`ValueKind::Stream`](tiercache_engine::ValueKind::Stream); its value is
//! [`codec`]'s layout. Decoded, it is what Redis keeps:
//!
//! - the entries, in ID order, grouped in *nodes* as Redis groups them in
//!   the listpacks of its radix tree. The nodes matter to clients:
//!   approximate trimming (`MAXLEN ~`, `MINID ~`) removes whole nodes only,
//!   and `XINFO STREAM` reports their number. A node is closed when it
//!   holds `stream-node-max-entries` entries (deleted ones included) or its
//!   listpack would pass `stream-node-max-bytes` ([`listpack`] computes the
//!   size Redis would see);
//! - the last ID handed out, the largest deleted ID, and how many entries
//!   were ever added (what consumer groups' lag is computed from);
//! - the consumer groups ([`group`]).
//!
//! A stream may be empty and still exist (after `XDEL`, or `XGROUP CREATE
//! ... MKSTREAM`), as in Redis. A command decodes the whole stream, changes
//! it and writes it back, like the other collections here: a write costs
//! time in the stream's size.
//!
//! ```
//! use bytes::Bytes;
//! use tiercache_server::stream::{Limits, Stream, StreamId};
//! let mut s = Stream::default();
//! let fields = [Bytes::from("temp"), Bytes::from("21")];
//! s.append(StreamId::new(1, 0), &fields, Limits::default());
//! s.append(StreamId::new(2, 0), &fields, Limits::default());
//! let back = Stream::decode(&s.encode()).unwrap();
//! assert_eq!(back.len(), 2);
//! assert_eq!(back.last_id(), StreamId::new(2, 0));
//! let ids: Vec<_> = back.range(StreamId::MIN, StreamId::MAX).map(|i| i.id).collect();
//! assert_eq!(ids, [StreamId::new(1, 0), StreamId::new(2, 0)]);
//! ```

pub mod codec;
pub mod group;
mod id;
pub mod listpack;
mod rax;
mod trim;

pub use group::{Consumer, Group, Nack};
pub use id::{parse_xadd_id, string2ull, Sequence, StreamId, INVALID_ID};
pub use trim::{Trim, TrimBy};

use bytes::Bytes;
use std::collections::BTreeMap;

/// Redis's default `stream-node-max-entries`.
pub const NODE_MAX_ENTRIES: i64 = 100;
/// Redis's default `stream-node-max-bytes`.
pub const NODE_MAX_BYTES: i64 = 4096;
/// Redis's `STREAM_LISTPACK_MAX_SIZE`: the cap on a node's bytes.
const LISTPACK_MAX_SIZE: i64 = 1 << 30;

/// One stream entry: its ID and its field-value pairs, flattened
/// (`field, value, field, value...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// The entry's ID.
    pub id: StreamId,
    /// Fields and values, alternating.
    pub fields: Vec<Bytes>,
}

/// A run of entries, as one listpack of Redis's radix tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Node {
    /// The first ID ever added to the node (the radix tree key).
    pub master_id: StreamId,
    /// The field names of that first entry.
    pub master_fields: Vec<Bytes>,
    /// The live entries.
    pub items: Vec<Item>,
    /// How many entries were deleted from it (Redis keeps them, flagged).
    pub deleted: u64,
    /// The listpack bytes of those deleted entries.
    pub deleted_bytes: u64,
    /// The ID of the last entry added to it, deleted or not.
    pub last_id: StreamId,
}

impl Node {
    /// The bytes of this node's listpack in Redis.
    fn listpack_bytes(&self) -> usize {
        listpack::OVERHEAD
            + listpack::master(self.items.len(), self.deleted, &self.master_fields)
            + self
                .items
                .iter()
                .map(|i| listpack::entry(i, self.master_id, &self.master_fields))
                .sum::<usize>()
            + self.deleted_bytes as usize
    }

    /// Marks item `at` deleted.
    fn delete_at(&mut self, at: usize) {
        let item = self.items.remove(at);
        self.deleted += 1;
        self.deleted_bytes += listpack::entry(&item, self.master_id, &self.master_fields) as u64;
    }
}

/// The node thresholds in force (`CONFIG SET stream-node-max-*`).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// `stream-node-max-entries` (0: no limit).
    pub max_entries: i64,
    /// `stream-node-max-bytes` (0: Redis's cap).
    pub max_bytes: i64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_entries: NODE_MAX_ENTRIES,
            max_bytes: NODE_MAX_BYTES,
        }
    }
}

/// A Redis stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stream {
    nodes: Vec<Node>,
    length: u64,
    last_id: StreamId,
    max_deleted_id: StreamId,
    entries_added: u64,
    /// The consumer groups, by name.
    pub groups: BTreeMap<Bytes, Group>,
}

impl Stream {
    /// Number of live entries (`XLEN`).
    pub fn len(&self) -> u64 {
        self.length
    }

    /// True without live entries (the stream still exists).
    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    /// The last ID added (or set by `XSETID`).
    pub fn last_id(&self) -> StreamId {
        self.last_id
    }

    /// The largest ID deleted so far (`0-0`: none).
    pub fn max_deleted_id(&self) -> StreamId {
        self.max_deleted_id
    }

    /// How many entries were ever added.
    pub fn entries_added(&self) -> u64 {
        self.entries_added
    }

    /// Number of nodes (`XINFO STREAM`'s `radix-tree-keys`).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The node count of Redis's radix tree over the nodes
    /// (`radix-tree-nodes`).
    pub fn radix_tree_nodes(&self) -> usize {
        rax::node_count(self.nodes.iter().map(|n| n.master_id))
    }

    /// The first live entry's ID, `0-0` when empty (Redis's
    /// `recorded-first-entry-id`).
    pub fn first_id(&self) -> StreamId {
        self.first().map_or(StreamId::MIN, |i| i.id)
    }

    /// The last live entry's ID, `0-0` when empty (`streamLastValidID`).
    pub fn last_valid_id(&self) -> StreamId {
        self.last().map_or(StreamId::MIN, |i| i.id)
    }

    /// The first live entry.
    pub fn first(&self) -> Option<&Item> {
        self.nodes.iter().find_map(|n| n.items.first())
    }

    /// The last live entry.
    pub fn last(&self) -> Option<&Item> {
        self.nodes.iter().rev().find_map(|n| n.items.last())
    }

    /// Sets what `XSETID` sets; the caller checked it against the entries.
    pub fn set_id(
        &mut self,
        last: StreamId,
        entries_added: Option<u64>,
        max_deleted: Option<StreamId>,
    ) {
        self.last_id = last;
        if let Some(n) = entries_added {
            self.entries_added = n;
        }
        if let Some(id) = max_deleted {
            self.max_deleted_id = id;
        }
    }

    /// Adds an entry (`fields` alternate field and value) with an ID the
    /// caller checked is above [`Stream::last_id`].
    pub fn append(&mut self, id: StreamId, fields: &[Bytes], limits: Limits) {
        debug_assert!(id > self.last_id);
        let added_bytes: usize = fields.iter().map(|f| f.len()).sum();
        let max_bytes = if limits.max_bytes <= 0 || limits.max_bytes > LISTPACK_MAX_SIZE {
            LISTPACK_MAX_SIZE
        } else {
            limits.max_bytes
        } as usize;
        let full = match self.nodes.last() {
            None => true,
            Some(n) => {
                n.listpack_bytes() + added_bytes >= max_bytes
                    || (limits.max_entries > 0
                        && n.items.len() as i64 + n.deleted as i64 >= limits.max_entries)
            }
        };
        if full {
            self.nodes.push(Node {
                master_id: id,
                master_fields: fields.iter().step_by(2).cloned().collect(),
                items: Vec::new(),
                deleted: 0,
                deleted_bytes: 0,
                last_id: id,
            });
        }
        let node = self.nodes.last_mut().expect("a node was just made");
        node.items.push(Item {
            id,
            fields: fields.to_vec(),
        });
        node.last_id = id;
        self.length += 1;
        self.entries_added += 1;
        self.last_id = id;
    }

    /// Where the live entry `id` is: (node, position).
    fn locate(&self, id: StreamId) -> Option<(usize, usize)> {
        let n = self
            .nodes
            .partition_point(|n| n.master_id <= id)
            .checked_sub(1)?;
        let at = self.nodes[n]
            .items
            .binary_search_by(|i| i.id.cmp(&id))
            .ok()?;
        Some((n, at))
    }

    /// The live entry `id`.
    pub fn get(&self, id: StreamId) -> Option<&Item> {
        self.locate(id).map(|(n, at)| &self.nodes[n].items[at])
    }

    /// Deletes the live entry `id` (`XDEL`); false when there is none. A
    /// node left without live entries goes, as in Redis.
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some((n, at)) = self.locate(id) else {
            return false;
        };
        if self.nodes[n].items.len() == 1 {
            self.nodes.remove(n);
        } else {
            self.nodes[n].delete_at(at);
        }
        self.length -= 1;
        if id > self.max_deleted_id {
            self.max_deleted_id = id;
        }
        true
    }

    /// The live entries from `start` to `end`, both inclusive, in order.
    pub fn range(&self, start: StreamId, end: StreamId) -> impl Iterator<Item = &Item> {
        // A node whose last ID is below `start` holds nothing in range.
        let first = self.nodes.partition_point(|n| n.last_id < start);
        self.nodes[first..]
            .iter()
            .take_while(move |n| n.master_id <= end)
            .flat_map(|n| n.items.iter())
            .skip_while(move |i| i.id < start)
            .take_while(move |i| i.id <= end)
    }

    /// [`Stream::range`] from `end` down to `start`.
    pub fn range_rev(&self, start: StreamId, end: StreamId) -> impl Iterator<Item = &Item> {
        let past = self.nodes.partition_point(|n| n.master_id <= end);
        self.nodes[..past]
            .iter()
            .rev()
            .take_while(move |n| n.last_id >= start)
            .flat_map(|n| n.items.iter().rev())
            .skip_while(move |i| i.id > end)
            .take_while(move |i| i.id >= start)
    }

    /// Redis's `streamRangeHasTombstones`: whether an entry between
    /// `start` and `end` (inclusive; `None` for the open ends) may have
    /// been deleted, judged from the largest deleted ID.
    pub fn range_has_tombstones(&self, start: Option<StreamId>, end: Option<StreamId>) -> bool {
        if self.length == 0 || self.max_deleted_id.is_zero() {
            return false;
        }
        if self.first_id() > self.max_deleted_id {
            return false;
        }
        let start = start.unwrap_or(StreamId::MIN);
        let end = end.unwrap_or(StreamId::MAX);
        start <= self.max_deleted_id && self.max_deleted_id <= end
    }

    /// Redis's `streamEstimateDistanceFromFirstEverEntry`: the number of
    /// entries added up to `id` (a group's `entries-read` at that ID), when
    /// it can be known.
    pub fn estimate_entries_read(&self, id: StreamId) -> Option<u64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if self.length == 0 && id <= self.last_id {
            return Some(self.entries_added);
        }
        match id.cmp(&self.last_id) {
            std::cmp::Ordering::Equal => return Some(self.entries_added),
            std::cmp::Ordering::Greater => return None,
            std::cmp::Ordering::Less => {}
        }
        let first = self.first_id();
        if self.max_deleted_id.is_zero() || self.max_deleted_id < first {
            match id.cmp(&first) {
                std::cmp::Ordering::Less => return Some(self.entries_added - self.length),
                std::cmp::Ordering::Equal => return Some(self.entries_added - self.length + 1),
                std::cmp::Ordering::Greater => {}
            }
        }
        None
    }

    /// A group's lag: entries added that it has not read, when known.
    pub fn lag(&self, group: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if let Some(read) = group.entries_read {
            if !self.range_has_tombstones(Some(group.last_id), None) {
                return Some(self.entries_added as i64 - read);
            }
        }
        self.estimate_entries_read(group.last_id)
            .map(|read| self.entries_added as i64 - read as i64)
    }
}

#[cfg(test)]
mod tests;
