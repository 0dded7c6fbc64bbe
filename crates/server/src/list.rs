//! The encoding of a Redis list inside one engine value.
//!
//! A list is one [`Entry`](tiercache_engine::Entry) of kind
//! [`ValueKind::List`](tiercache_engine::ValueKind::List) whose value is
//! [`packed`](crate::packed)'s layout: the elements, head first. The
//! engine and the stores carry it as opaque bytes.
//!
//! A command decodes the whole list, changes it and writes it back: every
//! write costs time in the list's size, where Redis's quicklist pays only
//! at the ends. Lists here are meant for what a cache holds (recent items,
//! small queues); a value is bounded by the value size limit (64 MiB by
//! default) like any other.
//!
//! ```
//! use tiercache_server::list::List;
//! let mut l = List::default();
//! l.push_back("b".into());
//! l.push_front("a".into());
//! let back = List::decode(&l.encode()).unwrap();
//! assert_eq!(back.iter().collect::<Vec<_>>(), ["a", "b"]);
//! ```

use crate::packed::{decode_items, encode_items, Corrupt};
use bytes::Bytes;
use std::collections::VecDeque;
use std::ops::{Deref, DerefMut};

/// A list's elements, head first. It derefs to a [`VecDeque`] for the
/// edits commands make.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct List {
    items: VecDeque<Bytes>,
}

impl List {
    /// Decodes a stored list (one pass, bounds-checked; slices of `raw`).
    pub fn decode(raw: &Bytes) -> Result<List, Corrupt> {
        Ok(List {
            items: decode_items(raw)?.into(),
        })
    }

    /// The stored form.
    pub fn encode(&self) -> Bytes {
        encode_items(self.items.iter())
    }

    /// Resolves Redis's `start`/`stop` pair (negative counts from the
    /// tail, both inclusive) to the range of positions it covers, empty
    /// when the range misses the list (`LRANGE`, `LTRIM`).
    pub fn span(&self, start: i64, stop: i64) -> std::ops::Range<usize> {
        rank_span(self.items.len(), start, stop)
    }

    /// The position of Redis's `index` (negative counts from the tail), if
    /// it is inside the list.
    pub fn position(&self, index: i64) -> Option<usize> {
        let len = self.items.len() as i64;
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

impl Deref for List {
    type Target = VecDeque<Bytes>;
    fn deref(&self) -> &VecDeque<Bytes> {
        &self.items
    }
}

impl DerefMut for List {
    fn deref_mut(&mut self) -> &mut VecDeque<Bytes> {
        &mut self.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(n: usize) -> List {
        let mut l = List::default();
        for i in 0..n {
            l.push_back(Bytes::from(i.to_string()));
        }
        l
    }

    #[test]
    fn spans_follow_redis() {
        let l = list(5);
        assert_eq!(l.span(0, -1), 0..5);
        assert_eq!(l.span(-2, -1), 3..5);
        assert_eq!(l.span(-100, 1), 0..2);
        assert_eq!(l.span(3, 100), 3..5);
        assert_eq!(l.span(4, 3), 0..0);
        assert_eq!(l.span(5, 10), 0..0);
        assert_eq!(l.span(0, -6), 0..0);
        assert_eq!(list(0).span(0, -1), 0..0);
        assert_eq!(l.position(-1), Some(4));
        assert_eq!(l.position(5), None);
        assert_eq!(l.position(-6), None);
    }

    #[test]
    fn round_trips_and_rejects_corruption() {
        let l = list(300);
        let raw = l.encode();
        assert_eq!(List::decode(&raw).unwrap(), l);
        assert!(List::decode(&raw.slice(..raw.len() - 1)).is_err());
        assert!(List::decode(&List::default().encode()).unwrap().is_empty());
    }
}
