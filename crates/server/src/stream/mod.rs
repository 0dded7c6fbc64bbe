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
//! ... MKSTREAM`), as in Redis.
//!
//! Decoding is lazy, so that a command costs time in what it touches, not
//! in the stream's size: a node's header (its IDs and counts) is read at
//! once, its entries only when a command looks at them, and the consumer
//! groups only when a command uses them. Encoding copies the bytes of
//! every node (and of the groups) that was not changed. An `XADD` decodes
//! and re-encodes the tail node only; reading the first ten entries
//! decodes the first node only. Every structure is checked when it is
//! decoded, so a damaged value is a [`Corrupt`] error from the method
//! that meets it.
//!
//! ```
//! use bytes::Bytes;
//! use tiercache_server::stream::{Limits, Stream, StreamId};
//! let mut s = Stream::default();
//! let fields = [Bytes::from("temp"), Bytes::from("21")];
//! s.append(StreamId::new(1, 0), &fields, Limits::default()).unwrap();
//! s.append(StreamId::new(2, 0), &fields, Limits::default()).unwrap();
//! let back = Stream::decode(&s.encode()).unwrap();
//! assert_eq!(back.len(), 2);
//! assert_eq!(back.last_id(), StreamId::new(2, 0));
//! let ids: Vec<_> = back
//!     .range(StreamId::MIN, StreamId::MAX, usize::MAX)
//!     .unwrap()
//!     .iter()
//!     .map(|i| i.id)
//!     .collect();
//! assert_eq!(ids, [StreamId::new(1, 0), StreamId::new(2, 0)]);
//! ```

pub mod codec;
pub mod group;
mod id;
mod lazy;
pub mod listpack;
mod node;
pub(crate) mod patch;
mod rax;
mod trim;

pub use group::{Consumer, Group, Nack};
pub use id::{parse_xadd_id, string2ull, Sequence, StreamId, INVALID_ID};
pub use trim::{Trim, TrimBy};

pub use crate::packed::Corrupt;
use bytes::Bytes;
use lazy::Lazy;
use node::{Header, Node};
use std::borrow::Cow;
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

/// The consumer groups, by name.
pub type Groups = BTreeMap<Bytes, Group>;

/// A node of the stream: still where the stored value has it (by its
/// directory index), or taken out to be changed (by its index among the
/// stream's owned nodes). Plain numbers, so a stream of many nodes opens
/// and drops without work per node.
#[derive(Clone, Copy, Debug)]
enum Slot {
    Stored(u32),
    Owned(u32),
}

/// The node thresholds in force (`CONFIG SET stream-node-max-*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
#[derive(Clone, Debug, Default)]
pub struct Stream {
    /// The value this stream was decoded from (empty for a new one).
    stored: codec::Stored,
    nodes: Vec<Slot>,
    /// The nodes taken out of the stored value (or made here).
    owned: Vec<Node>,
    length: u64,
    last_id: StreamId,
    max_deleted_id: StreamId,
    entries_added: u64,
    groups: Lazy<Groups>,
    /// The changes made since it was decoded (`None` for a stream made
    /// here, which has nothing to patch), for [`Stream::take_patch`].
    ops: Option<Vec<patch::Op>>,
}

impl PartialEq for Stream {
    /// Equal when they encode alike (the encoding is canonical).
    fn eq(&self, other: &Self) -> bool {
        self.encode() == other.encode()
    }
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
        rax::node_count((0..self.nodes.len()).map(|i| self.header(i).master_id))
    }

    /// The consumer groups.
    pub fn groups(&self) -> Result<&Groups, Corrupt> {
        self.groups.get(codec::decode_groups)
    }

    /// The consumer groups, to change.
    pub fn groups_mut(&mut self) -> Result<&mut Groups, Corrupt> {
        self.groups.get_mut(codec::decode_groups)
    }

    /// Sets the groups to their stored form `raw` (replaying a patch).
    fn replace_groups(&mut self, raw: Bytes) {
        self.groups = Lazy::stored(raw);
    }

    fn record(&mut self, op: patch::Op) {
        if let Some(ops) = &mut self.ops {
            ops.push(op);
        }
    }

    /// The changes made since this stream was decoded, as a patch that
    /// turns the bytes it was decoded from into [`Stream::encode`]'s (see
    /// `stream/patch.rs`); `None` for a stream made here or unchanged.
    pub fn take_patch(&mut self) -> Option<Bytes> {
        let mut ops = self.ops.take()?;
        if self.groups.raw().is_none() {
            if let Some(groups) = self.groups.decoded() {
                let mut raw = bytes::BytesMut::new();
                codec::encode_groups(&mut raw, groups);
                ops.push(patch::Op::Groups(raw.freeze()));
            }
        }
        (!ops.is_empty()).then(|| patch::encode(&ops))
    }

    /// Node `i`'s header (no body read).
    fn header(&self, i: usize) -> Header {
        match self.nodes[i] {
            Slot::Stored(j) => self.stored.header(j),
            Slot::Owned(k) => self.owned[k as usize].h,
        }
    }

    /// Node `i` (its directory record checked).
    fn node(&self, i: usize) -> Result<Cow<'_, Node>, Corrupt> {
        match self.nodes[i] {
            Slot::Stored(j) => Ok(Cow::Owned(self.stored.node(j)?)),
            Slot::Owned(k) => Ok(Cow::Borrowed(&self.owned[k as usize])),
        }
    }

    /// Node `i`, to change.
    fn node_mut(&mut self, i: usize) -> Result<&mut Node, Corrupt> {
        if let Slot::Stored(j) = self.nodes[i] {
            let node = self.stored.node(j)?;
            self.nodes[i] = self.own(node);
        }
        match self.nodes[i] {
            Slot::Owned(k) => Ok(&mut self.owned[k as usize]),
            Slot::Stored(_) => unreachable!("taken out just above"),
        }
    }

    /// Keeps `node` among the owned ones; its slot.
    fn own(&mut self, node: Node) -> Slot {
        self.owned.push(node);
        Slot::Owned((self.owned.len() - 1) as u32)
    }

    /// The first node with live entries, and the last.
    fn first_live_node(&self) -> Option<usize> {
        (0..self.nodes.len()).find(|&i| self.header(i).live > 0)
    }

    fn last_live_node(&self) -> Option<usize> {
        (0..self.nodes.len())
            .rev()
            .find(|&i| self.header(i).live > 0)
    }

    /// The first live entry's ID, `0-0` when empty (Redis's
    /// `recorded-first-entry-id`).
    pub fn first_id(&self) -> StreamId {
        self.first_live_node()
            .map_or(StreamId::MIN, |i| self.header(i).first_live)
    }

    /// The last live entry's ID, `0-0` when empty (`streamLastValidID`).
    pub fn last_valid_id(&self) -> StreamId {
        self.last_live_node()
            .map_or(StreamId::MIN, |i| self.header(i).last_live)
    }

    /// The first live entry.
    pub fn first(&self) -> Result<Option<Item>, Corrupt> {
        match self.first_live_node() {
            Some(i) => Ok(self.node(i)?.items()?.first().cloned()),
            None => Ok(None),
        }
    }

    /// The last live entry.
    pub fn last(&self) -> Result<Option<Item>, Corrupt> {
        match self.last_live_node() {
            Some(i) => Ok(self.node(i)?.items()?.last().cloned()),
            None => Ok(None),
        }
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
        self.record(patch::Op::SetId {
            last,
            entries_added,
            max_deleted,
        });
    }

    /// Adds an entry (`fields` alternate field and value) with an ID the
    /// caller checked is above [`Stream::last_id`]. Only the tail node's
    /// body is copied; no entry is decoded.
    pub fn append(
        &mut self,
        id: StreamId,
        fields: &[Bytes],
        limits: Limits,
    ) -> Result<(), Corrupt> {
        debug_assert!(id > self.last_id);
        let added_bytes: u64 = fields.iter().map(|f| f.len() as u64).sum();
        let max_bytes = if limits.max_bytes <= 0 || limits.max_bytes > LISTPACK_MAX_SIZE {
            LISTPACK_MAX_SIZE
        } else {
            limits.max_bytes
        } as u64;
        let full = match self.nodes.len().checked_sub(1) {
            None => true,
            Some(last) => {
                let h = self.header(last);
                self.node(last)?.listpack_bytes()? + added_bytes >= max_bytes
                    || (limits.max_entries > 0 && (h.live + h.deleted) as i64 >= limits.max_entries)
            }
        };
        if full {
            let slot = self.own(Node::first(id, fields));
            self.nodes.push(slot);
        } else {
            let last = self.nodes.len() - 1;
            self.node_mut(last)?.append(id, fields)?;
        }
        self.length += 1;
        self.entries_added += 1;
        self.last_id = id;
        self.record(patch::Op::Append {
            id,
            fields: fields.to_vec(),
            limits,
        });
        Ok(())
    }

    /// The number of leading nodes whose header satisfies `pred` (which
    /// holds for a prefix of the nodes): a binary search over headers.
    fn partition(&self, pred: impl Fn(&Header) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.nodes.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if pred(&self.header(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The node that would hold live entry `id`.
    fn node_of(&self, id: StreamId) -> Option<usize> {
        let n = self.partition(|h| h.master_id <= id).checked_sub(1)?;
        let h = self.header(n);
        (h.live > 0 && h.first_live <= id && id <= h.last_live).then_some(n)
    }

    /// The live entry `id`.
    pub fn get(&self, id: StreamId) -> Result<Option<Item>, Corrupt> {
        let Some(n) = self.node_of(id) else {
            return Ok(None);
        };
        let node = self.node(n)?;
        let items = node.items()?;
        Ok(items
            .binary_search_by(|i| i.id.cmp(&id))
            .ok()
            .map(|at| items[at].clone()))
    }

    /// Deletes the live entry `id` (`XDEL`); false when there is none. A
    /// node left without live entries goes, as in Redis.
    pub fn delete(&mut self, id: StreamId) -> Result<bool, Corrupt> {
        let Some(n) = self.node_of(id) else {
            return Ok(false);
        };
        let Ok(at) = self.node(n)?.items()?.binary_search_by(|i| i.id.cmp(&id)) else {
            return Ok(false);
        };
        if self.header(n).live == 1 {
            self.nodes.remove(n);
        } else {
            self.node_mut(n)?.delete_at(at)?;
        }
        self.length -= 1;
        if id > self.max_deleted_id {
            self.max_deleted_id = id;
        }
        self.record(patch::Op::Delete(id));
        Ok(true)
    }

    /// Up to `limit` live entries from `start` to `end`, both inclusive, in
    /// order; only the nodes in that range are read, and in them only the
    /// entries needed are decoded.
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
        limit: usize,
    ) -> Result<Vec<Item>, Corrupt> {
        let mut out = Vec::new();
        // A node whose last ID is below `start` holds nothing in range.
        for n in self.partition(|h| h.last_id < start)..self.nodes.len() {
            let h = self.header(n);
            if h.master_id > end || out.len() >= limit {
                break;
            }
            if h.live == 0 || h.last_live < start {
                continue;
            }
            self.node(n)?.scan(start, end, limit, false, &mut out)?;
        }
        Ok(out)
    }

    /// [`Stream::range`] from `end` down to `start`.
    pub fn range_rev(
        &self,
        start: StreamId,
        end: StreamId,
        limit: usize,
    ) -> Result<Vec<Item>, Corrupt> {
        let mut out = Vec::new();
        // Nodes whose first ID is above `end` hold nothing in range.
        for n in (0..self.partition(|h| h.master_id <= end)).rev() {
            let h = self.header(n);
            if h.last_id < start || out.len() >= limit {
                break;
            }
            if h.live == 0 || h.first_live > end {
                continue;
            }
            self.node(n)?.scan(start, end, limit, true, &mut out)?;
        }
        Ok(out)
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
