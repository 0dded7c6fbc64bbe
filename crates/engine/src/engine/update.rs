//! Atomic read-modify-write of one key, and all-or-nothing multi-key
//! inserts: what `APPEND`, `SETRANGE`, `GETDEL`, `GETEX`, `GETSET`,
//! `INCRBYFLOAT`, `PERSIST`, conditional `EXPIRE` and `MSETNX` need.

use super::Session;
use crate::entry::{now_ms, Entry};
use crate::error::Result;
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
        let core = self.core;
        let key = Bytes::copy_from_slice(key);
        let _lock = core.lock_keys(std::iter::once(key.as_ref())).await;
        let old = core.read(&key).await?;
        let (update, answer) = f(old.as_ref());
        let op = match update {
            Update::Keep => return Ok(answer),
            Update::Delete if old.is_none() => return Ok(answer),
            Update::Delete => None,
            Update::Set(value) => Some(core.with_default_ttl(&key, Entry::new(value))),
            Update::SetEntry(e) if e.is_expired_at(now_ms()) => {
                if old.is_none() {
                    return Ok(answer);
                }
                None
            }
            Update::SetEntry(e) => Some(e),
        };
        core.write_many(vec![(key, op)], &mut self.commit_through)
            .await?;
        Ok(answer)
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
}
