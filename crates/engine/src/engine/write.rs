//! The engine's write path: the key stripe locks every write takes, and
//! the routing of a write to its namespace's write mode (write-back into
//! the journal and dirty queue; write-through and write-around into the
//! stores, then the memory tier).
//!
//! Not here: what a command writes (`session.rs`, `update.rs`,
//! `crate::modify`), nor how write-back journals and flushes
//! (`crate::writeback`).

use super::{Core, KEY_LOCK_STRIPES};
use crate::entry::{next_cas, Entry};
use crate::error::{EngineError, Result};
use crate::namespace::WriteMode;
use crate::store::Mutation;
use bytes::Bytes;
use smallvec::SmallVec;
use std::collections::HashMap;
use std::sync::atomic::Ordering;

/// The stripe locks a write holds (see [`Core::lock_keys`]); released on
/// drop. Inline for a pipelined batch of 16 distinct stripes.
pub(crate) type KeyLocks<'a> = SmallVec<[futures_util::lock::MutexGuard<'a, ()>; 16]>;

/// A write (`Some`) or delete (`None`) of one key.
type KeyOp = (Bytes, Option<Entry>);

impl Core {
    /// Takes the write lock of one key's stripe: [`Core::lock_keys`] for the
    /// one-key write, without its collect, sort and guard vector (a quarter
    /// of the engine's instructions for an unpipelined SET went there).
    ///
    /// Every write starts here, so this is also where it starts loading the
    /// key's memory-tier entry (the second of three prefetch steps, see
    /// `ARCHITECTURE.md`, "Prefetching"): the load overlaps the lock and the
    /// journal append instead of stalling the memory tier's insert.
    pub(crate) async fn lock_key(&self, key: &[u8]) -> futures_util::lock::MutexGuard<'_, ()> {
        self.l1.prefetch_entry(key);
        self.key_locks[self.hasher.hash_one(key) as usize % KEY_LOCK_STRIPES]
            .lock()
            .await
    }

    /// Takes the write locks of `keys`' stripes, in stripe order (so two
    /// multi-key writes cannot deadlock). Inline up to 16 stripes: a
    /// pipelined batch of 16 writes allocates nothing here.
    pub(crate) async fn lock_keys<'a>(&'a self, keys: impl Iterator<Item = &[u8]>) -> KeyLocks<'a> {
        let mut stripes: SmallVec<[usize; 16]> = keys
            .map(|k| {
                self.l1.prefetch_entry(k);
                self.hasher.hash_one(k) as usize % KEY_LOCK_STRIPES
            })
            .collect();
        stripes.sort_unstable();
        stripes.dedup();
        let mut guards = KeyLocks::with_capacity(stripes.len());
        for s in stripes {
            guards.push(self.key_locks[s].lock().await);
        }
        guards
    }

    /// Writes (`Some`) or deletes (`None`) keys per their namespace's write
    /// mode. The caller holds the keys' locks. Write-back sequence numbers
    /// to commit are recorded in `commit_through`.
    pub(crate) async fn write_many(
        &self,
        mut ops: Vec<(Bytes, Option<Entry>)>,
        commit_through: &mut [u64],
    ) -> Result<()> {
        for e in ops.iter_mut().filter_map(|(_, op)| op.as_mut()) {
            e.cas = next_cas();
        }
        self.write_stamped(ops, commit_through).await
    }

    /// [`Core::write_many`] for one key: stamps a fresh cas.
    pub(crate) async fn write_one(
        &self,
        key: Bytes,
        mut op: Option<Entry>,
        commit_through: &mut [u64],
    ) -> Result<()> {
        if let Some(e) = op.as_mut() {
            e.cas = next_cas();
        }
        self.write_stamped_one(key, op, commit_through).await
    }

    /// [`Core::write_stamped`] for one key, the path of every unpipelined
    /// write: no vector, no grouping by namespace. It is also far less
    /// code, which matters as much: the request path of an unpipelined
    /// `SET` must fit the instruction cache (BENCHMARKS.md, session 29).
    pub(crate) async fn write_stamped_one(
        &self,
        key: Bytes,
        op: Option<Entry>,
        commit_through: &mut [u64],
    ) -> Result<()> {
        if self.closing.load(Ordering::Relaxed) {
            return Err(EngineError::ShuttingDown);
        }
        self.watches.touch(&key);
        let idx = self.router.route(&key);
        let ns = &self.namespaces[idx];
        if ns.cfg.stores.is_empty() {
            self.writes.fetch_add(1, Ordering::Relaxed);
            self.apply_to_l1(key, op);
            return Ok(());
        }
        let Some(wb) = &ns.wb else {
            // Write-through and -around wait for the stores anyway; boxed,
            // their big future does not swell this one.
            return Box::pin(self.write_stamped(vec![(key, op)], commit_through)).await;
        };
        wb.wait_for_room(self.backpressure_wait).await?;
        // The third prefetch step (the entry's key bytes, which the insert
        // compares): the journal append runs while they load.
        self.l1.prefetch_key(&key);
        self.writes.fetch_add(1, Ordering::Relaxed);
        let seq = wb.write_one(key, op, |k| self.flights.invalidate(k));
        commit_through[idx] = commit_through[idx].max(seq);
        Ok(())
    }

    /// [`Core::write_stamped_one`] of an entry with a patch that makes its
    /// value of the key's current one (see `crate::patch`): write-back
    /// journals the patch when it can; other modes write the entry.
    pub(crate) async fn write_patched_one(
        &self,
        key: Bytes,
        entry: Entry,
        patch: Bytes,
        commit_through: &mut [u64],
    ) -> Result<()> {
        let idx = self.router.route(&key);
        let ns = &self.namespaces[idx];
        let Some(wb) = ns.wb.as_ref().filter(|_| !ns.cfg.stores.is_empty()) else {
            return self
                .write_stamped_one(key, Some(entry), commit_through)
                .await;
        };
        if self.closing.load(Ordering::Relaxed) {
            return Err(EngineError::ShuttingDown);
        }
        self.watches.touch(&key);
        wb.wait_for_room(self.backpressure_wait).await?;
        self.writes.fetch_add(1, Ordering::Relaxed);
        let seq = wb.write_one_patched(key, entry, patch, |k| self.flights.invalidate(k));
        commit_through[idx] = commit_through[idx].max(seq);
        Ok(())
    }

    /// [`Core::write_many`] where some operations carry a patch that makes
    /// their value of the key's current one: write-back journals those as
    /// patches when it can, if every key is in one write-back namespace;
    /// otherwise the entries are written whole.
    pub(crate) async fn write_patched_many(
        &self,
        mut ops: Vec<(Bytes, Option<Entry>)>,
        patches: Vec<Option<Bytes>>,
        commit_through: &mut [u64],
    ) -> Result<()> {
        let idx = self.router.route(&ops[0].0);
        let ns = &self.namespaces[idx];
        let one_namespace = ops.iter().all(|(k, _)| self.router.route(k) == idx);
        let Some(wb) = ns
            .wb
            .as_ref()
            .filter(|_| one_namespace && !ns.cfg.stores.is_empty())
        else {
            return self.write_many(ops, commit_through).await;
        };
        if self.closing.load(Ordering::Relaxed) {
            return Err(EngineError::ShuttingDown);
        }
        for e in ops.iter_mut().filter_map(|(_, op)| op.as_mut()) {
            e.cas = next_cas();
        }
        for (key, _) in &ops {
            self.watches.touch(key);
        }
        wb.wait_for_room(self.backpressure_wait).await?;
        self.writes.fetch_add(ops.len() as u64, Ordering::Relaxed);
        let seq = wb.write_many_patched(ops, patches, |k| self.flights.invalidate(k));
        commit_through[idx] = commit_through[idx].max(seq);
        Ok(())
    }

    /// [`Core::write_many`] for entries whose cas is already what it must
    /// be (freshly stamped, or kept by a touch).
    pub(crate) async fn write_stamped(
        &self,
        ops: Vec<(Bytes, Option<Entry>)>,
        commit_through: &mut [u64],
    ) -> Result<()> {
        if self.closing.load(Ordering::Relaxed) {
            return Err(EngineError::ShuttingDown);
        }
        if self.watches.any() {
            for (key, _) in &ops {
                self.watches.touch_watched(key);
            }
        }
        self.writes.fetch_add(ops.len() as u64, Ordering::Relaxed);
        // Almost every call touches one namespace: group without a map (or
        // any allocation) then.
        let first = ops.first().map_or(0, |(k, _)| self.router.route(k));
        let groups: SmallVec<[(usize, Vec<KeyOp>); 1]> = if ops
            .iter()
            .skip(1)
            .all(|(k, _)| self.router.route(k) == first)
        {
            smallvec::smallvec![(first, ops)]
        } else {
            let mut by_ns: HashMap<usize, Vec<KeyOp>> = HashMap::new();
            for (k, op) in ops {
                by_ns
                    .entry(self.router.route(&k))
                    .or_default()
                    .push((k, op));
            }
            by_ns.into_iter().collect()
        };
        for (idx, ops) in groups {
            let ns = &self.namespaces[idx];
            if ns.cfg.stores.is_empty() {
                for (k, op) in ops {
                    self.apply_to_l1(k, op);
                }
                continue;
            }
            match (&ns.wb, ns.cfg.write_mode) {
                (Some(wb), _) => {
                    wb.wait_for_room(self.backpressure_wait).await?;
                    for (key, _) in &ops {
                        self.l1.prefetch_key(key);
                    }
                    let seq = wb.write_many(ops, |k| self.flights.invalidate(k));
                    commit_through[idx] = commit_through[idx].max(seq);
                }
                (None, mode) => {
                    let ops = last_write_per_key(ops);
                    let batch: Vec<Mutation> = ops
                        .iter()
                        .map(|(k, op)| match op {
                            Some(e) => Mutation::Set(k.clone(), e.clone()),
                            None => Mutation::Delete(k.clone()),
                        })
                        .collect();
                    let (sor, upper) = ns.cfg.stores.split_last().expect("checked non-empty");
                    sor.apply(&batch).await?;
                    // Upper stores are caches: update them in `through`,
                    // invalidate them in `around`.
                    let upper_batch: Vec<Mutation> = match mode {
                        WriteMode::Around => batch
                            .iter()
                            .map(|m| Mutation::Delete(m.key().clone()))
                            .collect(),
                        _ => batch,
                    };
                    for store in upper.iter().rev() {
                        store.apply(&upper_batch).await?;
                    }
                    for (k, op) in ops {
                        let op = if mode == WriteMode::Around { None } else { op };
                        self.apply_to_l1(k.clone(), op);
                        self.flights.invalidate(&k);
                    }
                }
            }
        }
        Ok(())
    }

    pub(super) fn apply_to_l1(&self, key: Bytes, op: Option<Entry>) {
        match op {
            Some(e) => {
                self.l1.put(key, e, 0);
            }
            None => {
                self.l1.remove(&key);
            }
        }
    }
}

/// Keeps the last operation per key, in first-seen order (MSET a 1 a 2 = a 2).
fn last_write_per_key(ops: Vec<(Bytes, Option<Entry>)>) -> Vec<(Bytes, Option<Entry>)> {
    let mut index: HashMap<Bytes, usize> = HashMap::new();
    let mut out: Vec<(Bytes, Option<Entry>)> = Vec::with_capacity(ops.len());
    for (k, op) in ops {
        match index.get(&k) {
            Some(&i) => out[i].1 = op,
            None => {
                index.insert(k.clone(), out.len());
                out.push((k, op));
            }
        }
    }
    out
}
