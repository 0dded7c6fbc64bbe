//! A list stored in nodes, as Redis's quicklist stores it: a fixed-width
//! directory of nodes, then their bodies, each a run of length-prefixed
//! elements. Opening one reads its header; pushing or popping at either
//! end splices the bytes of the end node; reading by index or range reads
//! the nodes it needs.
//!
//! ```text
//! [version: u8 = 2] length, node count        (u64, little-endian)
//! per node: element count, body length          (2 × u64)
//! the bodies, in node order: per element, its length (varint) and bytes
//! ```
//!
//! A decoded list is the nodes taken out at its head (changed), a run of
//! stored nodes it has not touched, and the nodes taken out at its tail:
//! lists change only at their ends in this form (other changes decode the
//! whole list, see [`List::items_mut`](super::List::items_mut)). Encoding
//! copies the untouched run's records and bodies in two blocks.
//!
//! A node closes at [`NODE_ITEMS`] elements or when an element would take
//! its body past [`NODE_BYTES`] (a bigger element gets a node of its own).
//! A record is checked when its node is read; a damaged value is a
//! [`Corrupt`] error from the command that meets it.

use crate::packed::{buffer_apart, finish_apart, put_item, Corrupt, Reader};
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
const RECORD: usize = 2 * 8;

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
        if starts.len() as u64 != self.count || self.count == 0 {
            return Err(Corrupt("element count disagrees with its node"));
        }
        Ok(starts)
    }

    /// Whether `item` still fits.
    fn has_room(&self, item: &[u8]) -> bool {
        self.count < NODE_ITEMS && self.body.len() + item.len() + 10 <= NODE_BYTES
    }

    fn single(item: &[u8]) -> Node {
        let mut body = BytesMut::with_capacity(item.len() + 10);
        put_item(&mut body, item);
        Node {
            count: 1,
            body: body.freeze(),
        }
    }
}

/// The stored nodes not taken out: records `lo..hi` of the stored value,
/// whose bodies are the bytes `lo_at..hi_at` of its bodies.
#[derive(Clone, Debug, Default)]
struct Run {
    raw: Bytes,
    bodies_at: usize,
    lo: usize,
    hi: usize,
    lo_at: usize,
    hi_at: usize,
}

impl Run {
    fn len(&self) -> usize {
        self.hi - self.lo
    }

    /// Record `i`'s element count and body length.
    fn record(&self, i: usize) -> (u64, u64) {
        let at = HEADER + i * RECORD;
        (u64_at(&self.raw, at), u64_at(&self.raw, at + 8))
    }

    /// The node of record `i`, whose body starts `at` bytes into the bodies.
    fn node(&self, i: usize, at: usize) -> Result<Node, Corrupt> {
        let (count, len) = self.record(i);
        let end = (at as u64)
            .checked_add(len)
            .filter(|&e| e <= self.hi_at as u64)
            .ok_or(Corrupt("length exceeds the value"))?;
        if count == 0 {
            return Err(Corrupt("empty node"));
        }
        Ok(Node {
            count,
            body: self
                .raw
                .slice(self.bodies_at + at..self.bodies_at + end as usize),
        })
    }

    /// Takes the first stored node out.
    fn take_first(&mut self) -> Result<Node, Corrupt> {
        let node = self.node(self.lo, self.lo_at)?;
        self.lo += 1;
        self.lo_at += node.body.len();
        Ok(node)
    }

    /// Takes the last stored node out.
    fn take_last(&mut self) -> Result<Node, Corrupt> {
        let (_, len) = self.record(self.hi - 1);
        let at = (self.hi_at as u64)
            .checked_sub(len)
            .filter(|&a| a >= self.lo_at as u64)
            .ok_or(Corrupt("length exceeds the value"))? as usize;
        let node = self.node(self.hi - 1, at)?;
        self.hi -= 1;
        self.hi_at = at;
        Ok(node)
    }
}

/// A list in nodes (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct Chunked {
    /// Nodes before the stored run, head first.
    head: VecDeque<Node>,
    run: Run,
    /// Nodes after the stored run, head first.
    tail: Vec<Node>,
    len: u64,
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
            head: VecDeque::new(),
            run: Run {
                raw: raw.clone(),
                bodies_at: HEADER + dir,
                lo: 0,
                hi: count as usize,
                lo_at: 0,
                hi_at: raw.len() - HEADER - dir,
            },
            tail: Vec::new(),
            len,
        })
    }

    /// Builds the nodes of `items`, in order.
    pub fn from_items<'a>(items: impl Iterator<Item = &'a Bytes>) -> Chunked {
        let mut c = Chunked::default();
        for i in items {
            // Only nodes made here: nothing to check, nothing to fail.
            c.push_back(i).expect("no stored node");
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

    /// The first node, taken out to change (`None` when empty).
    fn first_mut(&mut self) -> Result<Option<&mut Node>, Corrupt> {
        if self.head.is_empty() {
            let node = if self.run.len() > 0 {
                self.run.take_first()?
            } else if !self.tail.is_empty() {
                self.tail.remove(0)
            } else {
                return Ok(None);
            };
            self.head.push_back(node);
        }
        Ok(self.head.front_mut())
    }

    /// The last node, taken out to change (`None` when empty).
    fn last_mut(&mut self) -> Result<Option<&mut Node>, Corrupt> {
        if self.tail.is_empty() {
            let node = if self.run.len() > 0 {
                self.run.take_last()?
            } else if let Some(node) = self.head.pop_back() {
                node
            } else {
                return Ok(None);
            };
            self.tail.push(node);
        }
        Ok(self.tail.last_mut())
    }

    /// Adds `item` at the head.
    pub fn push_front(&mut self, item: &Bytes) -> Result<(), Corrupt> {
        match self.first_mut()? {
            Some(n) if n.has_room(item) => {
                let mut body = BytesMut::with_capacity(n.body.len() + item.len() + 10);
                put_item(&mut body, item);
                body.extend_from_slice(&n.body);
                n.body = body.freeze();
                n.count += 1;
            }
            _ => self.head.push_front(Node::single(item)),
        }
        self.len += 1;
        Ok(())
    }

    /// Adds `item` at the tail.
    pub fn push_back(&mut self, item: &Bytes) -> Result<(), Corrupt> {
        match self.last_mut()? {
            Some(n) if n.has_room(item) => {
                let mut body = BytesMut::with_capacity(n.body.len() + item.len() + 10);
                body.extend_from_slice(&n.body);
                put_item(&mut body, item);
                n.body = body.freeze();
                n.count += 1;
            }
            _ => self.tail.push(Node::single(item)),
        }
        self.len += 1;
        Ok(())
    }

    /// Removes the head element.
    pub fn pop_front(&mut self) -> Result<Option<Bytes>, Corrupt> {
        let Some(n) = self.first_mut()? else {
            return Ok(None);
        };
        let mut r = Reader::new(&n.body);
        let item = r.item()?;
        let rest = n.body.slice(r.position()..);
        if n.count == 1 {
            if !rest.is_empty() {
                return Err(Corrupt("element count disagrees with its node"));
            }
            self.head.pop_front();
        } else {
            n.body = rest;
            n.count -= 1;
        }
        self.len -= 1;
        Ok(Some(item))
    }

    /// Removes the tail element.
    pub fn pop_back(&mut self) -> Result<Option<Bytes>, Corrupt> {
        let Some(n) = self.last_mut()? else {
            return Ok(None);
        };
        let last = *n.starts()?.last().expect("a node holds an element");
        let item = Reader::new(&n.body.slice(last..)).item()?;
        if n.count == 1 {
            self.tail.pop();
        } else {
            n.body = n.body.slice(..last);
            n.count -= 1;
        }
        self.len -= 1;
        Ok(Some(item))
    }

    /// Visits the nodes in order, reading each only when `visit` asks
    /// for it: `visit(count)` answers `Some(Some(skip))` to read that node
    /// from its element `skip` on, `Some(None)` to pass it, `None` to stop;
    /// `read(node, skip)` then gets it.
    fn walk(
        &self,
        mut visit: impl FnMut(u64) -> Option<Option<u64>>,
        mut read: impl FnMut(&Node, u64) -> Result<(), Corrupt>,
    ) -> Result<(), Corrupt> {
        for n in &self.head {
            match visit(n.count) {
                None => return Ok(()),
                Some(Some(skip)) => read(n, skip)?,
                Some(None) => {}
            }
        }
        let mut at = self.run.lo_at;
        for i in self.run.lo..self.run.hi {
            let (count, len) = self.run.record(i);
            match visit(count) {
                None => return Ok(()),
                Some(Some(skip)) => read(&self.run.node(i, at)?, skip)?,
                Some(None) => {}
            }
            at = at.saturating_add(len as usize);
        }
        for n in &self.tail {
            match visit(n.count) {
                None => return Ok(()),
                Some(Some(skip)) => read(n, skip)?,
                Some(None) => {}
            }
        }
        Ok(())
    }

    /// Element `i` (head first).
    pub fn get(&self, i: u64) -> Result<Option<Bytes>, Corrupt> {
        let out = self.range(i..i.saturating_add(1))?;
        Ok(out.into_iter().next())
    }

    /// Elements `range` (head first), reading only their nodes.
    pub fn range(&self, range: std::ops::Range<u64>) -> Result<Vec<Bytes>, Corrupt> {
        let want = range.end.saturating_sub(range.start);
        let mut out = Vec::with_capacity(want.min(1 << 16) as usize);
        let mut first = 0u64; // the position of the node visited
        self.walk(
            |count| {
                if first >= range.end {
                    return None;
                }
                let skip = range.start.saturating_sub(first);
                first += count;
                Some((skip < count).then_some(skip))
            },
            |n, skip| {
                let mut r = Reader::new(&n.body);
                for _ in 0..skip {
                    r.skip_item()?;
                }
                for _ in skip..n.count {
                    if out.len() as u64 >= want {
                        break;
                    }
                    out.push(r.item()?);
                }
                Ok(())
            },
        )?;
        Ok(out)
    }

    /// Every element, decoded (checking every node).
    pub fn items(&self) -> Result<VecDeque<Bytes>, Corrupt> {
        let mut out = VecDeque::with_capacity(self.len.min(1 << 20) as usize);
        self.walk(
            |_| Some(Some(0)),
            |n, _| {
                let mut r = Reader::new(&n.body);
                for _ in 0..n.count {
                    out.push_back(r.item()?);
                }
                r.finish()
            },
        )?;
        if out.len() as u64 != self.len {
            return Err(Corrupt("element count disagrees with its nodes"));
        }
        Ok(out)
    }

    /// The stored form: the untouched run's records and bodies copied in
    /// one block each.
    pub fn encode(&self) -> Bytes {
        let run = &self.run;
        let (run_records, run_bodies) = if run.len() > 0 {
            (
                &run.raw[HEADER + run.lo * RECORD..HEADER + run.hi * RECORD],
                run.raw
                    .get(run.bodies_at + run.lo_at..run.bodies_at + run.hi_at)
                    .unwrap_or(&[]),
            )
        } else {
            (&[][..], &[][..])
        };
        let owned = self.head.iter().chain(&self.tail);
        let owned_bodies: usize = owned.clone().map(|n| n.body.len()).sum();
        let nodes = self.head.len() + run.len() + self.tail.len();
        let head_bodies: usize = self.head.iter().map(|n| n.body.len()).sum();
        let (mut out, start) = buffer_apart(
            HEADER + nodes * RECORD + owned_bodies + run_bodies.len(),
            HEADER + nodes * RECORD + head_bodies,
            run_bodies,
        );
        out.put_u8(VERSION);
        out.put_u64_le(self.len);
        out.put_u64_le(nodes as u64);
        let record = |out: &mut BytesMut, n: &Node| {
            out.put_u64_le(n.count);
            out.put_u64_le(n.body.len() as u64);
        };
        self.head.iter().for_each(|n| record(&mut out, n));
        out.extend_from_slice(run_records);
        self.tail.iter().for_each(|n| record(&mut out, n));
        self.head
            .iter()
            .for_each(|n| out.extend_from_slice(&n.body));
        out.extend_from_slice(run_bodies);
        self.tail
            .iter()
            .for_each(|n| out.extend_from_slice(&n.body));
        finish_apart(out, start)
    }
}
