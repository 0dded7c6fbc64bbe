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
    /// nodes go without being decoded.
    pub fn trim(&mut self, t: Trim) -> Result<u64, Corrupt> {
        let mut removed = 0u64;
        while let Some(node) = self.nodes.first() {
            if let TrimBy::MaxLen(max) = t.by {
                if self.length <= max {
                    break;
                }
            }
            let live = node.live as u64;
            if t.limit != 0 && removed + live > t.limit {
                break;
            }
            let whole = match t.by {
                TrimBy::MaxLen(max) => self.length - live >= max,
                TrimBy::MinId(min) => node.last_id < min,
            };
            if whole {
                self.nodes.remove(0);
                self.length -= live;
                removed += live;
                continue;
            }
            if t.approx {
                break;
            }
            // Delete entries inside this node until the threshold holds;
            // the node stays, even if no live entry is left in it.
            let node = &mut self.nodes[0];
            while node.live > 0 {
                let stop = match t.by {
                    TrimBy::MaxLen(max) => self.length <= max,
                    TrimBy::MinId(min) => node.first_live >= min,
                };
                if stop {
                    break;
                }
                node.delete_at(0)?;
                self.length -= 1;
                removed += 1;
            }
            break;
        }
        Ok(removed)
    }
}
