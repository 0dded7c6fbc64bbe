//! Redis's view of read-modify-write: [`Session::update`] (a plain
//! [`Update`] over [`Session::modify`], the one primitive) and the
//! all-or-nothing multi-key insert `MSETNX` needs.

use super::Session;
use crate::entry::{now_ms, Entry};
use crate::error::Result;
use crate::modify::Change;
use bytes::Bytes;

/// What [`Session::update`] does with the key after looking at it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Update {
    /// Leave the key as it is.
    Keep,
    /// Store this value with the namespace's default TTL, as a plain `SET`
    /// does.
    Set(Bytes),
    /// Store this entry exactly, expiry included; an expiry already past
    /// deletes the key.
    SetEntry(Entry),
    /// Delete the key (nothing happens when it is absent).
    Delete,
}

/// What [`Session::rename`] and [`Session::copy`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoveOutcome {
    /// The source key does not exist; nothing changed.
    NoSource,
    /// The destination exists and the caller asked not to replace it;
    /// nothing changed.
    TargetExists,
    /// The destination now holds the source's value and expiry.
    Done,
}

impl Session<'_> {
    /// Reads `key`, lets `f` decide what to do with it, and does it, all
    /// under the key's write lock: no other write to the key can come in
    /// between. `f` also returns the caller's answer (the reply, or a
    /// command error that leaves the key alone with [`Update::Keep`]).
    ///
    /// ```
    /// # use tiercache_engine::{Engine, Update};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let engine = Engine::builder(dir.path()).build().await.unwrap();
    /// let mut s = engine.session();
    /// // APPEND: the new length.
    /// let len = s.update(b"k", |old| {
    ///     let mut v = old.map_or_else(Vec::new, |e| e.value.to_vec());
    ///     v.extend_from_slice(b"abc");
    ///     let len = v.len();
    ///     (Update::Set(v.into()), len)
    /// }).await.unwrap();
    /// assert_eq!(len, 3);
    /// s.commit().await.unwrap();
    /// # });
    /// ```
    pub async fn update<T>(
        &mut self,
        key: &[u8],
        f: impl FnOnce(Option<&Entry>) -> (Update, T),
    ) -> Result<T> {
        let key = Bytes::copy_from_slice(key);
        let modified = self
            .modify(key, |old| {
                let (update, answer) = f(old);
                let change = match update {
                    Update::Keep => Change::Keep,
                    Update::Set(value) => Change::Put(Entry::new(value)),
                    Update::SetEntry(e) => Change::Exact(e),
                    Update::Delete => Change::Delete,
                };
                (change, answer)
            })
            .await?;
        Ok(modified.result)
    }

    /// Writes every entry only if none of the keys exists (`MSETNX`);
    /// returns whether it wrote. Entries without expiry get their
    /// namespace's default TTL; a key named twice takes its last value.
    pub async fn set_many_if_absent(&mut self, entries: Vec<(Bytes, Entry)>) -> Result<bool> {
        let core = self.core;
        let _locks = core
            .lock_keys(entries.iter().map(|(k, _)| k.as_ref()))
            .await;
        let keys: Vec<Bytes> = entries.iter().map(|(k, _)| k.clone()).collect();
        if core.read_many(&keys).await?.iter().any(Option::is_some) {
            return Ok(false);
        }
        let ops = entries
            .into_iter()
            .map(|(k, e)| {
                let e = core.with_default_ttl(&k, e);
                (k, Some(e))
            })
            .collect();
        core.write_many(ops, &mut self.commit_through).await?;
        Ok(true)
    }

    /// Reads several keys, lets `f` decide a [`Change`] for each, and
    /// writes them, all under every key's lock: the read-modify-write of
    /// [`Session::modify`] across keys (Redis's `LMOVE`, `SMOVE`,
    /// `SINTERSTORE`...). `f` gets the entries in the order of `keys` and
    /// returns one change per key, in the same order, with its answer. A key
    /// named twice sees the same entry each time; its last change other
    /// than [`Change::Keep`] is the one written. [`Change::Touch`] is not
    /// supported here (it keeps the key).
    ///
    /// ```
    /// # use tiercache_engine::{Change, Engine, Entry};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let engine = Engine::builder(dir.path()).build().await.unwrap();
    /// let mut s = engine.session();
    /// s.set_many(vec![("from".into(), Entry::new("v"))]).await.unwrap();
    /// // Move the value, as RENAME would, and say whether there was one.
    /// let moved = s
    ///     .modify_many(vec!["from".into(), "to".into()], |found| match &found[0] {
    ///         Some(e) => (vec![Change::Delete, Change::Put(e.clone())], true),
    ///         None => (vec![Change::Keep, Change::Keep], false),
    ///     })
    ///     .await
    ///     .unwrap();
    /// assert!(moved);
    /// assert_eq!(s.get(b"to").await.unwrap().unwrap().value, "v");
    /// assert!(s.get(b"from").await.unwrap().is_none());
    /// s.commit().await.unwrap();
    /// # });
    /// ```
    pub async fn modify_many<T>(
        &mut self,
        keys: Vec<Bytes>,
        f: impl FnOnce(&[Option<Entry>]) -> (Vec<Change>, T),
    ) -> Result<T> {
        let core = self.core;
        let _locks = core.lock_keys(keys.iter().map(|k| k.as_ref())).await;
        let found = core.read_many(&keys).await?;
        let (changes, answer) = f(&found);
        assert_eq!(changes.len(), keys.len(), "one change per key");
        let now = now_ms();
        let mut ops: Vec<(Bytes, Option<Entry>)> = Vec::new();
        // A patch per operation, where the change was a patch of a value
        // that is there (see `crate::patch`).
        let mut patches: Vec<Option<Bytes>> = Vec::new();
        for ((key, change), old) in keys.into_iter().zip(changes).zip(&found) {
            let (op, patch) = match change {
                Change::Keep | Change::Touch(_) => continue,
                Change::Delete if old.is_none() => continue,
                Change::Delete => (None, None),
                Change::Put(e) => (Some(core.with_default_ttl(&key, e)), None),
                Change::Exact(e) => (Some(e), None),
                Change::Patch(e, patch) => (Some(e), old.is_some().then_some(patch)),
            };
            let op = op.filter(|e| !e.is_expired_at(now));
            let patch = patch.filter(|_| op.is_some());
            match ops.iter().position(|(k, _)| *k == key) {
                // A key named twice: its last change, never a patch (the
                // first change is not journaled to patch against).
                Some(at) => {
                    ops[at].1 = op;
                    patches[at] = None;
                }
                None => {
                    ops.push((key, op));
                    patches.push(patch);
                }
            }
        }
        if ops.is_empty() {
            return Ok(answer);
        }
        if patches.iter().any(Option::is_some) {
            core.write_patched_many(ops, patches, &mut self.commit_through)
                .await?;
        } else {
            core.write_many(ops, &mut self.commit_through).await?;
        }
        Ok(answer)
    }

    /// Moves `src`'s value and expiry to `dst` and deletes `src`, under
    /// both keys' locks (`RENAME`, and `RENAMENX` with `only_if_absent`).
    /// The destination's own expiry is replaced, never inherited. With
    /// `src == dst` nothing is written (the outcome still says whether the
    /// key exists).
    pub async fn rename(
        &mut self,
        src: Bytes,
        dst: Bytes,
        only_if_absent: bool,
    ) -> Result<MoveOutcome> {
        self.transfer(src, dst, only_if_absent, true).await
    }

    /// Writes a copy of `src`'s value and expiry at `dst` (`COPY`), unless
    /// `dst` exists and `replace` is false.
    pub async fn copy(&mut self, src: Bytes, dst: Bytes, replace: bool) -> Result<MoveOutcome> {
        self.transfer(src, dst, !replace, false).await
    }

    async fn transfer(
        &mut self,
        src: Bytes,
        dst: Bytes,
        only_if_absent: bool,
        delete_src: bool,
    ) -> Result<MoveOutcome> {
        let core = self.core;
        let _locks = core
            .lock_keys([src.as_ref(), dst.as_ref()].into_iter())
            .await;
        let found = core.read_many(&[src.clone(), dst.clone()]).await?;
        let Some(entry) = found[0].clone() else {
            return Ok(MoveOutcome::NoSource);
        };
        if only_if_absent && found[1].is_some() {
            return Ok(MoveOutcome::TargetExists);
        }
        if src == dst {
            return Ok(MoveOutcome::Done);
        }
        let moved = Entry::with_kind(entry.value, entry.expires_at, entry.flags, entry.kind);
        let mut ops = vec![(dst, Some(moved))];
        if delete_src {
            ops.push((src, None));
        }
        core.write_many(ops, &mut self.commit_through).await?;
        Ok(MoveOutcome::Done)
    }
}
