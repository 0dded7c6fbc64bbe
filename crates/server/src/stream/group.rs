//! Consumer groups: each has a last delivered ID, a count of entries read
//! (for its lag), a pending entries list (PEL: delivered, not yet
//! acknowledged, each owned by one consumer), and its consumers, as in
//! Redis 7.0.

use super::StreamId;
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet};

/// A consumer group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Group {
    /// The last ID delivered to the group's consumers.
    pub last_id: StreamId,
    /// Entries read so far (Redis's `entries_read`), `None` when unknown.
    pub entries_read: Option<i64>,
    /// Delivered, unacknowledged entries, by ID.
    pub pel: BTreeMap<StreamId, Nack>,
    /// The consumers, by name.
    pub consumers: BTreeMap<Bytes, Consumer>,
}

/// A pending entry: who has it, when it was last delivered, how often.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nack {
    /// The consumer that owns it (a key of [`Group::consumers`]).
    pub consumer: Bytes,
    /// Unix milliseconds of the last delivery.
    pub delivery_time: u64,
    /// Deliveries so far.
    pub delivery_count: u64,
}

/// A consumer of a group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Consumer {
    /// Unix milliseconds of its last read or claim.
    pub seen_time: u64,
    /// The IDs of its pending entries (each also in [`Group::pel`]).
    pub pel: BTreeSet<StreamId>,
}

impl Group {
    /// A group delivering after `last_id`.
    pub fn new(last_id: StreamId, entries_read: Option<i64>) -> Group {
        Group {
            last_id,
            entries_read,
            ..Group::default()
        }
    }

    /// The consumer `name`, created (seen now) if new; its seen time is
    /// set to `now` either way (`streamLookupConsumer` /
    /// `streamCreateConsumer`).
    pub fn touch_consumer(&mut self, name: &[u8], now: u64) -> &mut Consumer {
        let c = self
            .consumers
            .entry(Bytes::copy_from_slice(name))
            .or_default();
        c.seen_time = now;
        c
    }

    /// Creates consumer `name` (`XGROUP CREATECONSUMER`); false if it
    /// exists.
    pub fn create_consumer(&mut self, name: &[u8], now: u64) -> bool {
        if self.consumers.contains_key(name) {
            return false;
        }
        self.touch_consumer(name, now);
        true
    }

    /// Deletes consumer `name` and its pending entries; returns how many
    /// it had, or `None` when there is no such consumer.
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let c = self.consumers.remove(name)?;
        for id in &c.pel {
            self.pel.remove(id);
        }
        Some(c.pel.len())
    }

    /// Gives pending entry `id` to `consumer` (which must exist), taking it
    /// from its owner, with this delivery time and count; creates it when
    /// absent.
    pub fn assign(
        &mut self,
        id: StreamId,
        consumer: &[u8],
        delivery_time: u64,
        delivery_count: u64,
    ) {
        let owner = Bytes::copy_from_slice(consumer);
        if let Some(old) = self.pel.get(&id) {
            if old.consumer != owner {
                let previous = old.consumer.clone();
                if let Some(c) = self.consumers.get_mut(&previous) {
                    c.pel.remove(&id);
                }
            }
        }
        if let Some(c) = self.consumers.get_mut(&owner) {
            c.pel.insert(id);
        }
        self.pel.insert(
            id,
            Nack {
                consumer: owner,
                delivery_time,
                delivery_count,
            },
        );
    }

    /// Acknowledges `id`: removes it from the PEL and its consumer's;
    /// false when it was not pending.
    pub fn ack(&mut self, id: StreamId) -> bool {
        let Some(nack) = self.pel.remove(&id) else {
            return false;
        };
        if let Some(c) = self.consumers.get_mut(&nack.consumer) {
            c.pel.remove(&id);
        }
        true
    }
}
