//! Trimming a stream (`XTRIM`, and `XADD`'s `MAXLEN`/`MINID`), node by node
//! as Redis's `streamTrim` does: whole nodes go from the head while they
//! can; exact trimming then deletes entries inside the next node; an
//! approximate trim (`~`) stops at the first node it cannot drop whole.

use super::{Corrupt, Stream, StreamId};

/// What to trim to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimBy {
    /// At most this many entries.
    MaxLen(u64),
    /// No entry below this ID.
    MinId(StreamId),
}

/// A trim request, as parsed from `MAXLEN|MINID [=|~] threshold [LIMIT n]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trim {
    /// The strategy and its threshold.
    pub by: TrimBy,
    /// `~`: remove whole nodes only.
    pub approx: bool,
    /// The most entries to remove (0: no limit).
    pub limit: u64,
}

impl Stream {
    /// Trims the stream; returns how many entries were removed. Whole
    /// nodes go without being read; exact trimming then drops entries from
    /// the head of the next node, one at a time.
    pub fn trim(&mut self, t: Trim) -> Result<u64, Corrupt> {
        let removed = self.trim_nodes(t)?;
        if removed > 0 {
            self.record(super::patch::Op::Trim(t));
        }
        Ok(removed)
    }

    fn trim_nodes(&mut self, t: Trim) -> Result<u64, Corrupt> {
        let mut removed = 0u64;
        // Whole nodes from the head: counted first, removed at once.
        let mut whole = 0;
        let mut length = self.length;
        while whole < self.nodes.len() {
            if let TrimBy::MaxLen(max) = t.by {
                if length <= max {
                    break;
                }
            }
            let h = self.header(whole);
            if t.limit != 0 && removed + h.live > t.limit {
                break;
            }
            let drop = match t.by {
                TrimBy::MaxLen(max) => length - h.live >= max,
                TrimBy::MinId(min) => h.last_id < min,
            };
            if !drop {
                break;
            }
            length -= h.live;
            removed += h.live;
            whole += 1;
        }
        self.nodes.drain(..whole);
        self.length = length;
        let limited = t.limit != 0
            && self.nodes.first().is_some_and(|_| {
                let h = self.header(0);
                removed + h.live > t.limit
            });
        if t.approx || limited || self.nodes.is_empty() {
            return Ok(removed);
        }
        if let TrimBy::MaxLen(max) = t.by {
            if self.length <= max {
                return Ok(removed);
            }
        }
        // Delete entries inside the next node until the threshold holds;
        // the node stays, even if no live entry is left in it.
        while self.header(0).live > 0 {
            let stop = match t.by {
                TrimBy::MaxLen(max) => self.length <= max,
                TrimBy::MinId(min) => self.header(0).first_live >= min,
            };
            if stop {
                break;
            }
            self.node_mut(0)?.delete_first()?;
            self.length -= 1;
            removed += 1;
        }
        Ok(removed)
    }
}
