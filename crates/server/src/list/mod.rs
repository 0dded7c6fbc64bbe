//! The encoding of a Redis list inside one engine value.
//!
//! A list is one [`Entry`](tiercache_engine::Entry) of kind
//! [`ValueKind::List`](tiercache_engine::ValueKind::List), stored in nodes
//! as Redis's quicklist stores it ([`chunked`]): pushing and popping at
//! either end, and reading by index or range, cost time in the nodes they
//! touch, not in the list's length. Commands that change the middle
//! (`LSET`, `LINSERT`, `LREM`, `LTRIM`) or search it (`LPOS`) decode every
//! element ([`List::items_mut`]), as they walk the list in Redis too.
//! Lists stored before the node layout ([`packed`](crate::packed)'s,
//! version 1) are read the same way and written in nodes.
//!
//! A list decoded from stored nodes records its pushes and pops, so that
//! write-back journals a `LPUSH` to a deep queue as the element pushed, not
//! the queue ([`List::take_patch`], the `patch` module).
//!
//! ```
//! use tiercache_server::list::{End, List};
//! let mut l = List::default();
//! l.push(End::Right, "b".into()).unwrap();
//! l.push(End::Left, "a".into()).unwrap();
//! let back = List::decode(&l.encode()).unwrap();
//! assert_eq!(back.range(0..2).unwrap(), ["a", "b"]);
//! ```

pub mod chunked;
pub(crate) mod patch;

use crate::packed::{decode_items, Corrupt};
use bytes::Bytes;
use chunked::Chunked;
use std::collections::VecDeque;

/// Which end of a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The head (`LEFT`).
    Left,
    /// The tail (`RIGHT`).
    Right,
}

#[derive(Clone, Debug)]
enum Repr {
    /// In nodes, read as needed.
    Nodes(Chunked),
    /// Every element decoded.
    Items(VecDeque<Bytes>),
}

/// A list's elements, head first.
#[derive(Clone, Debug)]
pub struct List {
    repr: Repr,
    /// The pushes and pops since it was decoded from nodes (`None`: no
    /// patch can describe the change; see [`List::take_patch`]).
    ops: Option<Vec<patch::Op>>,
}

impl Default for List {
    fn default() -> Self {
        List {
            repr: Repr::Nodes(Chunked::default()),
            ops: None,
        }
    }
}

impl PartialEq for List {
    fn eq(&self, other: &Self) -> bool {
        self.to_items().ok() == other.to_items().ok()
    }
}

impl List {
    /// Decodes a stored list: nodes (read as needed), or the older
    /// element-by-element layout (decoded at once, checked).
    pub fn decode(raw: &Bytes) -> Result<List, Corrupt> {
        if raw.first() == Some(&chunked::VERSION) {
            return Ok(List {
                repr: Repr::Nodes(Chunked::decode(raw)?),
                ops: Some(Vec::new()),
            });
        }
        Ok(List {
            repr: Repr::Items(decode_items(raw)?.into()),
            ops: None,
        })
    }

    /// The stored form (nodes).
    pub fn encode(&self) -> Bytes {
        match &self.repr {
            Repr::Nodes(c) => c.encode(),
            Repr::Items(items) => Chunked::from_items(items.iter()).encode(),
        }
    }

    /// A list of `items`, head first.
    pub fn from_items(items: impl IntoIterator<Item = Bytes>) -> List {
        List {
            repr: Repr::Items(items.into_iter().collect()),
            ops: None,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Nodes(c) => c.len() as usize,
            Repr::Items(items) => items.len(),
        }
    }

    /// True without elements (such a key does not exist).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn record(&mut self, op: patch::Op) {
        if let Some(ops) = &mut self.ops {
            patch::push_op(ops, op);
        }
    }

    /// Adds `item` at `end`.
    pub fn push(&mut self, end: End, item: Bytes) -> Result<(), Corrupt> {
        match (&mut self.repr, end) {
            (Repr::Nodes(c), End::Left) => c.push_front(&item)?,
            (Repr::Nodes(c), End::Right) => c.push_back(&item)?,
            (Repr::Items(i), End::Left) => i.push_front(item.clone()),
            (Repr::Items(i), End::Right) => i.push_back(item.clone()),
        }
        self.record(patch::Op::Push(end, vec![item]));
        Ok(())
    }

    /// Removes an element from `end`.
    pub fn pop(&mut self, end: End) -> Result<Option<Bytes>, Corrupt> {
        let popped = match (&mut self.repr, end) {
            (Repr::Nodes(c), End::Left) => c.pop_front()?,
            (Repr::Nodes(c), End::Right) => c.pop_back()?,
            (Repr::Items(i), End::Left) => i.pop_front(),
            (Repr::Items(i), End::Right) => i.pop_back(),
        };
        if popped.is_some() {
            self.record(patch::Op::Pop(end, 1));
        }
        Ok(popped)
    }

    /// Element `i` (head first).
    pub fn get(&self, i: usize) -> Result<Option<Bytes>, Corrupt> {
        match &self.repr {
            Repr::Nodes(c) => c.get(i as u64),
            Repr::Items(items) => Ok(items.get(i).cloned()),
        }
    }

    /// Elements at positions `range`, head first.
    pub fn range(&self, range: std::ops::Range<usize>) -> Result<Vec<Bytes>, Corrupt> {
        match &self.repr {
            Repr::Nodes(c) => c.range(range.start as u64..range.end as u64),
            Repr::Items(items) => Ok(items.range(range).cloned().collect()),
        }
    }

    /// Every element, decoded.
    pub fn to_items(&self) -> Result<VecDeque<Bytes>, Corrupt> {
        match &self.repr {
            Repr::Nodes(c) => c.items(),
            Repr::Items(items) => Ok(items.clone()),
        }
    }

    /// Every element, to change in any way; the change is then journaled
    /// as the whole list.
    pub fn items_mut(&mut self) -> Result<&mut VecDeque<Bytes>, Corrupt> {
        if let Repr::Nodes(c) = &self.repr {
            self.repr = Repr::Items(c.items()?);
        }
        self.ops = None;
        match &mut self.repr {
            Repr::Items(items) => Ok(items),
            Repr::Nodes(_) => unreachable!("decoded just above"),
        }
    }

    /// The pushes and pops made since this list was decoded from nodes, as
    /// a patch that turns those bytes into [`List::encode`]'s; `None` for a
    /// list made here, decoded from the older layout, changed otherwise,
    /// or unchanged.
    pub fn take_patch(&mut self) -> Option<Bytes> {
        let ops = self.ops.take()?;
        (!ops.is_empty()).then(|| patch::encode(&ops))
    }

    /// Resolves Redis's `start`/`stop` pair (negative counts from the
    /// tail, both inclusive) to the range of positions it covers, empty
    /// when the range misses the list (`LRANGE`, `LTRIM`).
    pub fn span(&self, start: i64, stop: i64) -> std::ops::Range<usize> {
        rank_span(self.len(), start, stop)
    }

    /// The position of Redis's `index` (negative counts from the tail), if
    /// it is inside the list.
    pub fn position(&self, index: i64) -> Option<usize> {
        let len = self.len() as i64;
        let i = if index < 0 { len + index } else { index };
        (0..len).contains(&i).then_some(i as usize)
    }
}

/// Redis's `start`/`stop` sanitizing over `len` items (inclusive ends,
/// negative counting from the end; `LRANGE`, `LTRIM`, `ZRANGE`,
/// `ZREMRANGEBYRANK`): the positions covered, empty when none.
pub fn rank_span(len: usize, start: i64, stop: i64) -> std::ops::Range<usize> {
    let len = len as i64;
    let start = if start < 0 {
        (len + start).max(0)
    } else {
        start
    };
    let stop = if stop < 0 {
        len + stop
    } else {
        stop.min(len - 1)
    };
    if start > stop || start >= len {
        return 0..0;
    }
    start as usize..stop as usize + 1
}

#[cfg(test)]
mod tests;
