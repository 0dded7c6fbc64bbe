//! [`Session`]: a batch of operations whose write-back journal appends are
//! made durable together (group commit), and the single- and multi-key
//! commands protocol servers run through it. The read and write paths
//! themselves live on `Core` in the parent module.

use super::{coalesce, Core, SetCondition, SetExpiry, SetOptions, SetOutcome};
use crate::entry::{now_ms, parse_i64, Entry, ValueKind};
use crate::error::{EngineError, Result};
use crate::journal::FsyncPolicy;
use bytes::Bytes;
use smallvec::SmallVec;

/// A sequence of operations whose write-back journal appends are made
/// durable together by [`Session::commit`] (group commit). Protocol servers
/// run each pipelined batch in one session and commit before replying.
pub struct Session<'a> {
    pub(crate) core: &'a Core,
    /// Per namespace, the highest journal sequence number written. Inline
    /// for up to four namespaces: a session per request batch allocates
    /// nothing for it.
    pub(crate) commit_through: SmallVec<[u64; 4]>,
    /// The time reads check expiry against, once frozen.
    clock: Option<u64>,
}

impl<'a> Session<'a> {
    pub(super) fn new(core: &'a Core) -> Self {
        Session {
            core,
            commit_through: smallvec::smallvec![0; core.namespaces.len()],
            clock: None,
        }
    }

    /// Makes this session's reads ([`Session::get`],
    /// [`Session::get_many`]) check expiry against the time of this call
    /// instead of reading the clock each time. For a protocol server's pipelined batch, which runs in
    /// microseconds: reading the clock per `GET` took 7% of a server under
    /// `redis-benchmark -t get -P 16`. An entry expiring while the batch
    /// runs is still answered by the batch's later reads, as if they had
    /// all run at its start.
    ///
    /// ```
    /// # use tiercache_engine::{Engine, Entry, now_ms};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let engine = Engine::builder(dir.path()).build().await.unwrap();
    /// let mut s = engine.session();
    /// s.freeze_clock();
    /// s.set_entry("k".into(), Entry::with_expiry("v", Some(now_ms() + 60_000))).await.unwrap();
    /// assert_eq!(s.get(b"k").await.unwrap().unwrap().value, "v");
    /// # s.commit().await.unwrap();
    /// # engine.shutdown().await.unwrap();
    /// # });
    /// ```
    pub fn freeze_clock(&mut self) {
        self.clock = Some(now_ms());
    }

    /// Reads one key.
    pub async fn get(&mut self, key: &[u8]) -> Result<Option<Entry>> {
        // A hit needs no owned key: copy it only to go below L1.
        let now = self.clock.unwrap_or_else(now_ms);
        let expired = match self.core.l1_hit(key, now) {
            Ok(e) => return Ok(Some(e)),
            Err(expired) => expired,
        };
        match self.core.l1_miss_known(key, now, expired) {
            Some(known) => Ok(known),
            None => self.core.load_below_l1(&Bytes::copy_from_slice(key)).await,
        }
    }

    /// Reads many keys; one slot per key in input order. Expiry is checked
    /// against the frozen clock, as in [`Session::get`].
    pub async fn get_many(&mut self, keys: &[Bytes]) -> Result<Vec<Option<Entry>>> {
        let now = self.clock.unwrap_or_else(now_ms);
        self.core.read_many_at(keys, now).await
    }

    /// Writes one key.
    pub async fn set(&mut self, key: Bytes, value: Bytes, opts: SetOptions) -> Result<SetOutcome> {
        let core = self.core;
        let _lock = core.lock_key(&key).await;
        let needs_old = opts.return_old
            || opts.condition != SetCondition::Always
            || opts.expiry == SetExpiry::Keep;
        let old = if needs_old {
            core.read(&key).await?
        } else {
            None
        };
        // Returning the old value is a string read (`SET ... GET`, `GETSET`):
        // another kind refuses the whole command, as in Redis.
        if opts.return_old && old.as_ref().is_some_and(|e| e.kind != ValueKind::String) {
            return Err(EngineError::WrongType);
        }
        let applies = match opts.condition {
            SetCondition::Always => true,
            SetCondition::IfAbsent => old.is_none(),
            SetCondition::IfPresent => old.is_some(),
        };
        if !applies {
            return Ok(SetOutcome {
                applied: false,
                old,
            });
        }
        let op = match opts.expiry {
            SetExpiry::Default => Some(core.with_default_ttl(&key, Entry::new(value))),
            SetExpiry::Keep => Some(Entry::with_expiry(
                value,
                old.as_ref().and_then(|e| e.expires_at),
            )),
            SetExpiry::At(t) if t <= now_ms() => None, // already expired: the key is gone
            SetExpiry::At(t) => Some(Entry::with_expiry(value, Some(t))),
        };
        core.write_one(key, op, &mut self.commit_through).await?;
        Ok(SetOutcome { applied: true, old })
    }

    /// Writes one entry exactly as given (expiry included).
    pub async fn set_entry(&mut self, key: Bytes, entry: Entry) -> Result<()> {
        let _lock = self.core.lock_key(&key).await;
        let op = (!entry.is_expired()).then_some(entry);
        self.core.write_one(key, op, &mut self.commit_through).await
    }

    /// Writes many keys; an entry without expiry gets its namespace's
    /// default TTL. A key named twice takes its last value (consecutive
    /// repeats are written once: see `coalesce.rs`).
    pub async fn set_many(&mut self, entries: Vec<(Bytes, Entry)>) -> Result<()> {
        let entries = coalesce::merge_repeats(entries);
        let core = self.core;
        let _locks = core
            .lock_keys(entries.iter().map(|(k, _)| k.as_ref()))
            .await;
        let ops = entries.into_iter().map(|(k, e)| {
            let e = core.with_default_ttl(&k, e);
            (k, Some(e))
        });
        core.write_many(ops.collect(), &mut self.commit_through)
            .await
    }

    /// Deletes keys; returns how many distinct keys existed.
    pub async fn delete_many(&mut self, keys: &[Bytes]) -> Result<u64> {
        Ok(self.delete_keys(keys).await?.len() as u64)
    }

    /// Deletes keys; returns the distinct keys that existed, in the order
    /// first named (what a caller reporting each deletion needs).
    pub async fn delete_keys(&mut self, keys: &[Bytes]) -> Result<Vec<Bytes>> {
        let core = self.core;
        let _locks = core.lock_keys(keys.iter().map(|k| k.as_ref())).await;
        let existing = core.read_many(keys).await?;
        let mut seen = std::collections::HashSet::new();
        let ops: Vec<(Bytes, Option<Entry>)> = keys
            .iter()
            .zip(existing)
            .filter(|(k, e)| e.is_some() && seen.insert((*k).clone()))
            .map(|(k, _)| (k.clone(), None))
            .collect();
        let deleted = ops.iter().map(|(k, _)| k.clone()).collect();
        core.write_many(ops, &mut self.commit_through).await?;
        Ok(deleted)
    }

    /// Counts how many of `keys` exist (a key named twice counts twice).
    pub async fn exists_many(&mut self, keys: &[Bytes]) -> Result<u64> {
        let now = self.clock.unwrap_or_else(now_ms);
        Ok(self
            .core
            .read_many_at(keys, now)
            .await?
            .iter()
            .filter(|e| e.is_some())
            .count() as u64)
    }

    /// Sets (`Some(unix_ms)`) or removes (`None`) a key's expiry; an expiry
    /// at or before now deletes the key. Returns whether the key existed.
    pub async fn expire(&mut self, key: &[u8], at: Option<u64>) -> Result<bool> {
        let core = self.core;
        let key = Bytes::copy_from_slice(key);
        let _lock = core.lock_key(&key).await;
        let Some(old) = core.read(&key).await? else {
            return Ok(false);
        };
        let op = match at {
            Some(t) if t <= now_ms() => None,
            at => Some(Entry::with_kind(old.value, at, old.flags, old.kind)),
        };
        core.write_one(key, op, &mut self.commit_through).await?;
        Ok(true)
    }

    /// Adds `delta` to the decimal integer stored at `key` (absent = 0),
    /// keeping its expiry; returns the new value.
    pub async fn incr_by(&mut self, key: Bytes, delta: i64) -> Result<i64> {
        let core = self.core;
        let _lock = core.lock_key(&key).await;
        let old = core.read(&key).await?;
        let current = match &old {
            Some(e) if e.kind != ValueKind::String => return Err(EngineError::WrongType),
            Some(e) => parse_i64(&e.value).ok_or(EngineError::NotAnInteger)?,
            None => 0,
        };
        let new = current.checked_add(delta).ok_or(EngineError::Overflow)?;
        let value = Bytes::from(new.to_string());
        let entry = match old {
            Some(e) => Entry::with_flags(value, e.expires_at, e.flags),
            None => core.with_default_ttl(&key, Entry::new(value)),
        };
        core.write_one(key, Some(entry), &mut self.commit_through)
            .await?;
        Ok(new)
    }

    /// Number of live keys across all namespaces. Flushes write-back data
    /// first so the stores can count exactly.
    pub async fn dbsize(&mut self) -> Result<u64> {
        let core = self.core;
        for wb in core.namespaces.iter().filter_map(|n| n.wb.as_ref()) {
            wb.flush().await?;
        }
        let mut n = 0;
        for store in core.distinct_stores() {
            n += store.count().await?;
        }
        if core.namespaces.iter().any(|ns| ns.cfg.stores.is_empty()) {
            let now = now_ms();
            n += core
                .l1
                .count_matching(now, |k| core.namespace_of(k).1.cfg.stores.is_empty());
        }
        Ok(n)
    }

    /// Removes every key from every tier and namespace.
    pub async fn flush_all(&mut self) -> Result<()> {
        let core = self.core;
        for wb in core.namespaces.iter().filter_map(|n| n.wb.as_ref()) {
            wb.clear().await?;
        }
        for store in core.distinct_stores() {
            store.clear().await?;
        }
        // Each write-back queue dropped its dirty entries; one left is a
        // write that came after its namespace was cleared.
        core.l1.clear_clean();
        core.watches.touch_all_live();
        // One change, however many keys it removed.
        core.writes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// Adds `key` to `watch` (see [`Watch`](crate::Watch)): from now on,
    /// any write of it, or its expiry, marks the watch as touched.
    pub async fn watch_key(&mut self, watch: &mut crate::Watch, key: &[u8]) -> Result<()> {
        if !watch.add(key) {
            return Ok(());
        }
        // Live or not (an expired key is not live: it cannot expire again,
        // and a flush does not change it).
        if let Some(e) = self.get(key).await? {
            watch.set_live(key, e.expires_at);
        }
        Ok(())
    }

    /// Makes every write of this session durable (journal written, and
    /// fsynced under `fsync = always`). Call before acknowledging.
    pub async fn commit(&mut self) -> Result<()> {
        if self.committed_already() {
            return Ok(());
        }
        for (idx, seq) in self.commit_through.iter_mut().enumerate() {
            if *seq == 0 {
                continue;
            }
            let wb = self.core.namespaces[idx]
                .wb
                .clone()
                .expect("only write-back namespaces journal");
            let through = *seq;
            if wb.journal.policy() == FsyncPolicy::Always {
                tokio::task::spawn_blocking(move || wb.journal.commit(through))
                    .await
                    .map_err(|e| EngineError::Config(format!("journal task failed: {e}")))??;
            } else {
                // An append is in the kernel when it returns (the journal's
                // segment is a shared file mapping), so this is normally
                // done already. Not if the disk was full: then let the
                // other ready connections run first, so that one retry
                // serves them all.
                if !wb.journal.is_durable(through) {
                    tokio::task::yield_now().await;
                }
                wb.journal.commit(through)?;
            }
            *seq = 0;
        }
        Ok(())
    }

    /// Clears the appends that are durable already and reports whether
    /// that was all of them: under `everysec` and `no` an append is in the
    /// kernel when it returns, so a commit normally ends here, without
    /// touching a namespace's reference count or awaiting anything (it is
    /// run once per request batch).
    fn committed_already(&mut self) -> bool {
        let core = self.core;
        let mut done = true;
        for (idx, seq) in self.commit_through.iter_mut().enumerate() {
            if *seq == 0 {
                continue;
            }
            let journal = &core.namespaces[idx]
                .wb
                .as_ref()
                .expect("only write-back namespaces journal")
                .journal;
            if journal.policy() != FsyncPolicy::Always && journal.is_durable(*seq) {
                *seq = 0;
            } else {
                done = false;
            }
        }
        done
    }
}
