//! Read-modify-write of one key: [`Session::modify`] and what is built on
//! it ([`Session::compare_and_set`]). Protocols express their conditional
//! writes (memcached `cas`, `add`, `append`, `incr`, `touch`, ...) as a
//! closure over the current entry; the engine supplies the atomicity (the
//! key's lock stripe), the write mode, and a fresh cas unique per write.

use crate::engine::Session;
use crate::entry::{next_cas, now_ms, Entry};
use crate::error::Result;
use bytes::Bytes;

/// What a [`Session::modify`] closure decides to do with the key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// Leave the key as it is (a failed condition, a read).
    Keep,
    /// Store this entry under a fresh cas unique. An entry without expiry
    /// gets the namespace's default TTL (as [`Session::set_many`]); an entry
    /// already expired deletes the key.
    Put(Entry),
    /// Change only the expiry (`Some(unix_ms)`, or `None` for never),
    /// keeping value, flags and cas unique (memcached `touch`/`gat`: the
    /// data did not change). An expiry at or before now deletes the key.
    /// A no-op on an absent key.
    Touch(Option<u64>),
    /// Store this entry exactly as given, expiry included (no default TTL:
    /// `None` means never), under a fresh cas unique; an entry already
    /// expired deletes the key. What Redis's `PERSIST`, `EXPIRE` and
    /// `APPEND` need.
    Exact(Entry),
    /// Delete the key.
    Delete,
    /// [`Change::Exact`], with a patch that makes this entry's value of
    /// the key's current value: in write-back the journal records the
    /// patch instead of the value when it can (see [`Patcher`](crate::Patcher)).
    /// Elsewhere, and in multi-key writes, the same as `Exact`.
    Patch(Entry, Bytes),
}

/// The result of [`Session::modify`].
#[derive(Clone, Debug)]
pub struct Modified<T> {
    /// What the closure returned beside its [`Change`].
    pub result: T,
    /// The entry the key holds afterwards (with its cas unique), or `None`
    /// when it is absent afterwards.
    pub entry: Option<Entry>,
}

/// The result of [`Session::compare_and_set`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CasOutcome {
    /// Written; the new cas unique.
    Stored(u64),
    /// The key exists with another cas unique: someone wrote it since.
    Exists,
    /// The key does not exist.
    NotFound,
}

impl Session<'_> {
    /// Atomic read-modify-write of one key: under the key's lock stripe
    /// (the lock every write of the key takes, so no write can come between
    /// the read and the write), `f` sees the live entry (or `None`) and
    /// decides the [`Change`]; the change is written through the
    /// namespace's write mode like any other write, and durable once the
    /// session commits. This is the one primitive behind conditional
    /// protocol commands: memcached `cas`, `add`, `replace`, `append`,
    /// `prepend`, `incr`/`decr`, `touch`, `gat`, and the meta commands.
    ///
    /// ```
    /// # use tiercache_engine::{Change, Engine, Entry};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let engine = Engine::builder(dir.path()).build().await.unwrap();
    /// let mut s = engine.session();
    /// // Append, keeping flags and expiry; "not stored" when absent.
    /// let append = |old: Option<&Entry>| match old {
    ///     Some(e) => {
    ///         let value = [&e.value[..], b"!"].concat();
    ///         (Change::Put(Entry::with_flags(value, e.expires_at, e.flags)), true)
    ///     }
    ///     None => (Change::Keep, false),
    /// };
    /// assert!(!s.modify("k".into(), append).await.unwrap().result);
    /// s.set_many(vec![("k".into(), Entry::with_flags("hi", None, 7))]).await.unwrap();
    /// let m = s.modify("k".into(), append).await.unwrap();
    /// assert!(m.result);
    /// let e = m.entry.unwrap();
    /// assert_eq!((&e.value[..], e.flags), (&b"hi!"[..], 7));
    /// assert_ne!(e.cas, 0, "every write gets a cas unique");
    /// s.commit().await.unwrap();
    /// # });
    /// ```
    pub async fn modify<T>(
        &mut self,
        key: Bytes,
        f: impl FnOnce(Option<&Entry>) -> (Change, T),
    ) -> Result<Modified<T>> {
        let core = self.core;
        let _lock = core.lock_key(&key).await;
        let old = core.read(&key).await?;
        let (change, result) = f(old.as_ref());
        let change = match change {
            // A patch needs the value it applies to; without one (or for
            // a value already expired: a delete) it is a whole write.
            Change::Patch(mut e, patch) if old.is_some() && !e.is_expired_at(now_ms()) => {
                e.cas = next_cas();
                core.write_patched_one(key, e.clone(), patch, &mut self.commit_through)
                    .await?;
                return Ok(Modified {
                    result,
                    entry: Some(e),
                });
            }
            Change::Patch(e, _) => Change::Exact(e),
            other => other,
        };
        let op = match change {
            Change::Keep => return Ok(Modified { result, entry: old }),
            Change::Delete => None,
            Change::Put(e) => {
                let mut e = core.with_default_ttl(&key, e);
                e.cas = next_cas();
                Some(e)
            }
            Change::Exact(mut e) => {
                e.cas = next_cas();
                Some(e)
            }
            Change::Patch(..) => unreachable!("made Exact above"),
            Change::Touch(at) => match old {
                None => {
                    return Ok(Modified {
                        result,
                        entry: None,
                    })
                }
                Some(ref e) => Some(Entry {
                    expires_at: at,
                    ..e.clone()
                }),
            },
        };
        let now = now_ms();
        let op = op.filter(|e| !e.is_expired_at(now));
        if op.is_none() && old.is_none() {
            return Ok(Modified {
                result,
                entry: None,
            });
        }
        core.write_stamped_one(key, op.clone(), &mut self.commit_through)
            .await?;
        Ok(Modified { result, entry: op })
    }

    /// Blind write of one entry (no read): like [`Session::set_many`] with
    /// one key (the namespace's default TTL applies to an entry without
    /// expiry; an entry already expired deletes the key), but returns the
    /// stored entry's fresh cas unique (`None` when it deleted). Only the
    /// cas comes back, not the entry: a copy of the entry would make its
    /// value shared, an allocation per write (memcached's `set`).
    pub async fn put(&mut self, key: Bytes, entry: Entry) -> Result<Option<u64>> {
        let core = self.core;
        let _lock = core.lock_key(&key).await;
        let mut e = core.with_default_ttl(&key, entry);
        e.cas = next_cas();
        let op = (!e.is_expired()).then_some(e);
        let cas = op.as_ref().map(|e| e.cas);
        core.write_stamped_one(key, op, &mut self.commit_through)
            .await?;
        Ok(cas)
    }

    /// [`Session::put`] for many keys at once, in order (a key named twice
    /// ends with its last entry), with one lock pass and one write for the
    /// batch; what was stored is not returned.
    ///
    /// ```
    /// # use tiercache_engine::{Engine, Entry};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let engine = Engine::builder(dir.path()).build().await.unwrap();
    /// let mut s = engine.session();
    /// s.put_many(vec![
    ///     ("a".into(), Entry::new("1")),
    ///     ("gone".into(), Entry::with_expiry("x", Some(1))), // already expired: a delete
    ///     ("a".into(), Entry::new("2")),
    /// ]).await.unwrap();
    /// s.commit().await.unwrap();
    /// assert_eq!(engine.get(b"a").await.unwrap().unwrap().value, "2");
    /// assert!(engine.get(b"gone").await.unwrap().is_none());
    /// # engine.shutdown().await.unwrap();
    /// # });
    /// ```
    pub async fn put_many(&mut self, entries: Vec<(Bytes, Entry)>) -> Result<()> {
        let core = self.core;
        let _locks = core
            .lock_keys(entries.iter().map(|(k, _)| k.as_ref()))
            .await;
        let now = now_ms();
        let ops = entries
            .into_iter()
            .map(|(key, entry)| {
                let mut e = core.with_default_ttl(&key, entry);
                e.cas = next_cas();
                let op = (!e.is_expired_at(now)).then_some(e);
                (key, op)
            })
            .collect();
        core.write_stamped(ops, &mut self.commit_through).await
    }

    /// Compare-and-set: writes `entry` only if `key` still holds the entry
    /// whose cas unique is `expected` (memcached's `cas`). Runs under the
    /// key's lock stripe like every conditional write.
    ///
    /// ```
    /// # use tiercache_engine::{CasOutcome, Engine, Entry};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let engine = Engine::builder(dir.path()).build().await.unwrap();
    /// engine.set("k", "v1").await.unwrap();
    /// let seen = engine.get(b"k").await.unwrap().unwrap().cas;
    /// let mut s = engine.session();
    /// let first = s.compare_and_set("k".into(), seen, Entry::new("v2")).await.unwrap();
    /// assert!(matches!(first, CasOutcome::Stored(_)));
    /// // The unique changed with that write: a second writer loses.
    /// let second = s.compare_and_set("k".into(), seen, Entry::new("v3")).await.unwrap();
    /// assert_eq!(second, CasOutcome::Exists);
    /// s.commit().await.unwrap();
    /// # });
    /// ```
    pub async fn compare_and_set(
        &mut self,
        key: Bytes,
        expected: u64,
        entry: Entry,
    ) -> Result<CasOutcome> {
        let m = self
            .modify(key, |old| match old {
                None => (Change::Keep, CasOutcome::NotFound),
                Some(e) if e.cas != expected => (Change::Keep, CasOutcome::Exists),
                Some(_) => (Change::Put(entry), CasOutcome::Stored(0)),
            })
            .await?;
        Ok(match m.result {
            CasOutcome::Stored(_) => CasOutcome::Stored(m.entry.map_or(0, |e| e.cas)),
            other => other,
        })
    }
}
