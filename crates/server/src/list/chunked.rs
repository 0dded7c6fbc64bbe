//! A list stored in nodes, as Redis's quicklist stores it: a fixed-width
//! directory of nodes, then their bodies, each a run of length-prefixed
//! elements. Opening one reads its header; pushing or popping at either
//! end splices the bytes of the end node; reading by index or range reads
//! the nodes it needs.
//!
//! ```text
//! [version: u8 = 2] length, node count        (u64, little-endian)
//! per node: element count, body offset, body length   (3 × u64)
//! the bodies: per element, its length (varint) and bytes
//! ```
//!
//! A node closes at [`NODE_ITEMS`] elements or when an element would take
//! its body past [`NODE_BYTES`] (a bigger element gets a node of its own).
//! Every record is checked when its node is read; a damaged value is a
//! [`Corrupt`] error from the command that meets it.

use crate::packed::{put_item, Corrupt, Reader};
use bytes::{BufMut, Bytes, BytesMut};
use std::collections::VecDeque;

/// The version byte of this layout (1 is `packed`'s, which lists were
/// stored in before).
pub const VERSION: u8 = 2;
/// Most elements in a node.
pub const NODE_ITEMS: u64 = 128;
/// Most bytes of a node's body, as Redis's default
/// `list-max-listpack-size -2` (8 KB).
pub const NODE_BYTES: usize = 8192;
const HEADER: usize = 1 + 2 * 8;
const RECORD: usize = 3 * 8;

fn u64_at(raw: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(raw[at..at + 8].try_into().expect("8 bytes"))
}

/// One node: how many elements, and their bytes.
#[derive(Clone, Debug)]
struct Node {
    count: u64,
    body: Bytes,
}

impl Node {
    /// The start of each element, checking the body holds exactly
    /// `count` of them.
    fn starts(&self) -> Result<Vec<usize>, Corrupt> {
        let mut r = Reader::new(&self.body);
        let mut starts = Vec::with_capacity(self.count.min(NODE_ITEMS * 4) as usize);
        while r.position() < self.body.len() {
            starts.push(r.position());
            r.skip_item()?;
        }
        if starts.len() as u64 != self.count {
            return Err(Corrupt("element count disagrees with its node"));
        }
        Ok(starts)
    }

    /// Element `i` of the node.
    fn get(&self, i: usize) -> Result<Bytes, Corrupt> {
        let mut r = Reader::new(&self.body);
        for _ in 0..i {
            r.skip_item()?;
        }
        r.item()
    }

    /// Whether `item` still fits.
    fn has_room(&self, item: &[u8]) -> bool {
        self.count < NODE_ITEMS && self.body.len() + item.len() + 10 <= NODE_BYTES
    }
}

#[derive(Clone, Copy, Debug)]
enum Slot {
    Stored(u32),
    Owned(u32),
}

/// A list in nodes (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct Chunked {
    raw: Bytes,
    bodies_at: usize,
    bodies_len: usize,
    slots: VecDeque<Slot>,
    owned: Vec<Node>,
    len: u64,
}

fn item_bytes(item: &[u8]) -> BytesMut {
    let mut b = BytesMut::with_capacity(item.len() + 10);
    put_item(&mut b, item);
    b
}

impl Chunked {
    /// Opens a stored list: the header only.
    pub fn decode(raw: &Bytes) -> Result<Chunked, Corrupt> {
        if raw.len() < HEADER {
            return Err(Corrupt("truncated"));
        }
        if raw[0] != VERSION {
            return Err(Corrupt("unknown version"));
        }
        let count = u64_at(raw, 9);
        let dir = count
            .checked_mul(RECORD as u64)
            .filter(|&n| n <= (raw.len() - HEADER) as u64)
            .ok_or(Corrupt("item count exceeds the value"))? as usize;
        let len = u64_at(raw, 1);
        if (len == 0) != (count == 0) {
            return Err(Corrupt("element count disagrees with its nodes"));
        }
        Ok(Chunked {
            raw: raw.clone(),
            bodies_at: HEADER + dir,
            bodies_len: raw.len() - HEADER - dir,
            slots: (0..count as u32).map(Slot::Stored).collect(),
            owned: Vec::new(),
            len,
        })
    }

    /// Builds the nodes of `items`, in order.
    pub fn from_items<'a>(items: impl Iterator<Item = &'a Bytes>) -> Chunked {
        let mut c = Chunked::default();
        for i in items {
            c.push_back(i);
        }
        c
    }

    /// Number of elements.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True without elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn count(&self, slot: Slot) -> u64 {
        match slot {
            Slot::Stored(j) => u64_at(&self.raw, HEADER + j as usize * RECORD),
            Slot::Owned(k) => self.owned[k as usize].count,
        }
    }

    fn node(&self, slot: Slot) -> Result<Node, Corrupt> {
        match slot {
            Slot::Stored(j) => {
                let at = HEADER + j as usize * RECORD;
                let (count, off, len) = (
                    u64_at(&self.raw, at),
                    u64_at(&self.raw, at + 8),
                    u64_at(&self.raw, at + 16),
                );
                let end = off
                    .checked_add(len)
                    .filter(|&e| e <= self.bodies_len as u64)
                    .ok_or(Corrupt("length exceeds the value"))?;
                if count == 0 {
                    return Err(Corrupt("empty node"));
                }
                let body = self
                    .raw
                    .slice(self.bodies_at + off as usize..self.bodies_at + end as usize);
                Ok(Node { count, body })
            }
            Slot::Owned(k) => Ok(self.owned[k as usize].clone()),
        }
    }

    /// Stores `node` in place of slot `at`.
    fn set(&mut self, at: usize, node: Node) {
        match self.slots[at] {
            Slot::Owned(k) => self.owned[k as usize] = node,
            Slot::Stored(_) => {
                self.owned.push(node);
                self.slots[at] = Slot::Owned((self.owned.len() - 1) as u32);
            }
        }
    }

    fn own(&mut self, node: Node) -> Slot {
        self.owned.push(node);
        Slot::Owned((self.owned.len() - 1) as u32)
    }

    /// Adds `item` at the head.
    pub fn push_front(&mut self, item: &Bytes) {
        let first = self.slots.front().copied();
        match first.map(|s| self.node(s)) {
            Some(Ok(n)) if n.has_room(item) => {
                let mut body = item_bytes(item);
                body.extend_from_slice(&n.body);
                self.set(
                    0,
                    Node {
                        count: n.count + 1,
                        body: body.freeze(),
                    },
                );
            }
            _ => {
                let slot = self.own(Node {
                    count: 1,
                    body: item_bytes(item).freeze(),
                });
                self.slots.push_front(slot);
            }
        }
        self.len += 1;
    }

    /// Adds `item` at the tail.
    pub fn push_back(&mut self, item: &Bytes) {
        let last = self.slots.back().copied();
        match last.map(|s| self.node(s)) {
            Some(Ok(n)) if n.has_room(item) => {
                let mut body = BytesMut::with_capacity(n.body.len() + item.len() + 10);
                body.extend_from_slice(&n.body);
                put_item(&mut body, item);
                let at = self.slots.len() - 1;
                self.set(
                    at,
                    Node {
                        count: n.count + 1,
                        body: body.freeze(),
                    },
                );
            }
            _ => {
                let slot = self.own(Node {
                    count: 1,
                    body: item_bytes(item).freeze(),
                });
                self.slots.push_back(slot);
            }
        }
        self.len += 1;
    }

    /// Removes the head element.
    pub fn pop_front(&mut self) -> Result<Option<Bytes>, Corrupt> {
        let Some(&slot) = self.slots.front() else {
            return Ok(None);
        };
        let n = self.node(slot)?;
        let mut r = Reader::new(&n.body);
        let item = r.item()?;
        if n.count == 1 {
            if r.position() != n.body.len() {
                return Err(Corrupt("element count disagrees with its node"));
            }
            self.slots.pop_front();
        } else {
            let rest = n.body.slice(r.position()..);
            self.set(
                0,
                Node {
                    count: n.count - 1,
                    body: rest,
                },
            );
        }
        self.len -= 1;
        Ok(Some(item))
    }

    /// Removes the tail element.
    pub fn pop_back(&mut self) -> Result<Option<Bytes>, Corrupt> {
        let Some(&slot) = self.slots.back() else {
            return Ok(None);
        };
        let n = self.node(slot)?;
        let last = *n.starts()?.last().expect("a node holds an element");
        let item = Reader::new(&n.body.slice(last..)).item()?;
        if n.count == 1 {
            self.slots.pop_back();
        } else {
            let at = self.slots.len() - 1;
            self.set(
                at,
                Node {
                    count: n.count - 1,
                    body: n.body.slice(..last),
                },
            );
        }
        self.len -= 1;
        Ok(Some(item))
    }

    /// The node holding element `i`, and `i`'s place in it.
    fn locate(&self, mut i: u64) -> Option<(usize, u64)> {
        for (at, &slot) in self.slots.iter().enumerate() {
            let count = self.count(slot);
            if i < count {
                return Some((at, i));
            }
            i -= count;
        }
        None
    }

    /// Element `i` (head first).
    pub fn get(&self, i: u64) -> Result<Option<Bytes>, Corrupt> {
        match self.locate(i) {
            Some((at, j)) => self.node(self.slots[at])?.get(j as usize).map(Some),
            None => Ok(None),
        }
    }

    /// Elements `range` (head first), reading only their nodes.
    pub fn range(&self, range: std::ops::Range<u64>) -> Result<Vec<Bytes>, Corrupt> {
        let mut out = Vec::with_capacity((range.end - range.start).min(1 << 16) as usize);
        let Some((mut at, mut skip)) = self.locate(range.start) else {
            return Ok(out);
        };
        let mut left = range.end - range.start;
        while left > 0 && at < self.slots.len() {
            let n = self.node(self.slots[at])?;
            let mut r = Reader::new(&n.body);
            for _ in 0..skip {
                r.skip_item()?;
            }
            for _ in skip..n.count {
                if left == 0 {
                    break;
                }
                out.push(r.item()?);
                left -= 1;
            }
            skip = 0;
            at += 1;
        }
        Ok(out)
    }

    /// Every element, decoded (checking every node).
    pub fn items(&self) -> Result<VecDeque<Bytes>, Corrupt> {
        let mut out = VecDeque::with_capacity(self.len.min(1 << 20) as usize);
        for &slot in &self.slots {
            let n = self.node(slot)?;
            let mut r = Reader::new(&n.body);
            for _ in 0..n.count {
                out.push_back(r.item()?);
            }
            r.finish()?;
        }
        if out.len() as u64 != self.len {
            return Err(Corrupt("element count disagrees with its nodes"));
        }
        Ok(out)
    }

    /// The stored form: untouched bodies copied as they are. A damaged
    /// node is carried over unread (its body left out).
    pub fn encode(&self) -> Bytes {
        let nodes: Vec<(u64, &[u8])> = self.slots.iter().map(|&slot| self.parts(slot)).collect();
        let bodies: usize = nodes.iter().map(|(_, b)| b.len()).sum();
        let mut out = BytesMut::with_capacity(HEADER + nodes.len() * RECORD + bodies);
        out.put_u8(VERSION);
        out.put_u64_le(self.len);
        out.put_u64_le(nodes.len() as u64);
        let mut offset = 0u64;
        for (count, body) in &nodes {
            out.put_u64_le(*count);
            out.put_u64_le(offset);
            out.put_u64_le(body.len() as u64);
            offset += body.len() as u64;
        }
        for (_, body) in &nodes {
            out.extend_from_slice(body);
        }
        out.freeze()
    }

    /// A node's count and body bytes, as they are (empty for a damaged
    /// record's body).
    fn parts(&self, slot: Slot) -> (u64, &[u8]) {
        match slot {
            Slot::Owned(k) => {
                let n = &self.owned[k as usize];
                (n.count, &n.body[..])
            }
            Slot::Stored(j) => {
                let at = HEADER + j as usize * RECORD;
                let (count, off, len) = (
                    u64_at(&self.raw, at),
                    u64_at(&self.raw, at + 8),
                    u64_at(&self.raw, at + 16),
                );
                let body = off
                    .checked_add(len)
                    .filter(|&e| e <= self.bodies_len as u64)
                    .map_or(&[][..], |end| {
                        &self.raw[self.bodies_at + off as usize..self.bodies_at + end as usize]
                    });
                (count, body)
            }
        }
    }
}
