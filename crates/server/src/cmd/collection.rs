//! What the hash, list and set commands share: reading a key as one
//! collection type, and the read-modify-write that changes one.
//!
//! A collection is one engine entry of its [`ValueKind`] whose value is the
//! type's encoding (see [`crate::packed`]). Reads decode it; every write is
//! one [`Session::modify`](tiercache_engine::Session::modify) (read,
//! change, write under the key's lock), so concurrent writers never lose
//! an update. A key of another kind answers `WRONGTYPE`; a collection left
//! empty is deleted, as in Redis; a value that does not decode (a damaged
//! store) answers an error and is left alone; a collection that would
//! encode to more than the bulk length limit is refused, so no value grows
//! past what the memory tier and the stores are sized for.

use super::{engine_error_message, Ctx, WRONGTYPE};
use crate::hash::Hash;
use crate::list::List;
use crate::packed::Corrupt;
use crate::set::Set;
use crate::stream::Stream;
use crate::zset::ZSet;
use bytes::Bytes;
use tiercache_engine::{Change, Entry, ValueKind};

/// A Redis type stored as one encoded engine value.
pub trait Collection: Sized + Default {
    /// The entries' kind.
    const KIND: ValueKind;
    /// The type's name in error messages.
    const NAME: &'static str;
    /// Decodes a stored value.
    fn decode(raw: &Bytes) -> Result<Self, Corrupt>;
    /// The stored form.
    fn encode(&self) -> Bytes;
    /// True when empty (the key must then not exist).
    fn is_empty(&self) -> bool;
    /// The changes since it was decoded, as a patch of the bytes it was
    /// decoded from (see the engine's `Change::Patch`), for types that
    /// record them; `None` otherwise.
    fn take_patch(&mut self) -> Option<Bytes> {
        None
    }
}

impl Collection for Hash {
    const KIND: ValueKind = ValueKind::Hash;
    const NAME: &'static str = "hash";
    fn decode(raw: &Bytes) -> Result<Self, Corrupt> {
        Hash::decode(raw)
    }
    fn encode(&self) -> Bytes {
        Hash::encode(self)
    }
    fn is_empty(&self) -> bool {
        Hash::is_empty(self)
    }
    fn take_patch(&mut self) -> Option<Bytes> {
        Hash::take_patch(self)
    }
}

impl Collection for List {
    const KIND: ValueKind = ValueKind::List;
    const NAME: &'static str = "list";
    fn decode(raw: &Bytes) -> Result<Self, Corrupt> {
        List::decode(raw)
    }
    fn encode(&self) -> Bytes {
        List::encode(self)
    }
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn take_patch(&mut self) -> Option<Bytes> {
        List::take_patch(self)
    }
}

impl Collection for Set {
    const KIND: ValueKind = ValueKind::Set;
    const NAME: &'static str = "set";
    fn decode(raw: &Bytes) -> Result<Self, Corrupt> {
        Set::decode(raw)
    }
    fn encode(&self) -> Bytes {
        Set::encode(self)
    }
    fn is_empty(&self) -> bool {
        Set::is_empty(self)
    }
    fn take_patch(&mut self) -> Option<Bytes> {
        Set::take_patch(self)
    }
}

impl Collection for ZSet {
    const KIND: ValueKind = ValueKind::ZSet;
    const NAME: &'static str = "zset";
    fn decode(raw: &Bytes) -> Result<Self, Corrupt> {
        ZSet::decode(raw)
    }
    fn encode(&self) -> Bytes {
        ZSet::encode(self)
    }
    fn is_empty(&self) -> bool {
        ZSet::is_empty(self)
    }
    fn take_patch(&mut self) -> Option<Bytes> {
        ZSet::take_patch(self)
    }
}

impl Collection for Stream {
    const KIND: ValueKind = ValueKind::Stream;
    const NAME: &'static str = "stream";
    fn decode(raw: &Bytes) -> Result<Self, Corrupt> {
        Stream::decode(raw)
    }
    fn encode(&self) -> Bytes {
        Stream::encode(self)
    }
    /// A stream exists while its key does, entries or not.
    fn is_empty(&self) -> bool {
        false
    }
}

/// The collection `entry` holds (`None` when absent), or the error reply
/// for a key of another type or a value that does not decode.
pub fn collection_of<C: Collection>(entry: Option<&Entry>) -> Result<Option<C>, String> {
    match entry {
        None => Ok(None),
        Some(e) if e.kind != C::KIND => Err(WRONGTYPE.to_string()),
        Some(e) => C::decode(&e.value).map(Some).map_err(corrupt::<C>),
    }
}

/// The error reply for a stored `C` that does not decode.
fn corrupt<C: Collection>(c: Corrupt) -> String {
    format!("ERR corrupt {} value: {c}", C::NAME)
}

/// Runs `f` on the stored bytes of the `C` at `key` (`None` when absent),
/// for a command that reads a little of a big collection without decoding
/// it (see [`crate::packed::find_entry`]); replies the error for a key of
/// another type, a failed read, or an `Err` from `f` (which must then not
/// have replied).
pub async fn with_stored<C: Collection>(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    f: impl FnOnce(&mut Ctx<'_, '_>, Option<&Bytes>) -> Result<(), Corrupt>,
) {
    let r = match ctx.session.get(key).await {
        Ok(None) => f(ctx, None),
        Ok(Some(e)) if e.kind != C::KIND => {
            ctx.error(WRONGTYPE);
            Ok(())
        }
        Ok(Some(e)) => f(ctx, Some(&e.value)),
        Err(e) => {
            ctx.engine_error(&e);
            Ok(())
        }
    };
    if let Err(c) = r {
        ctx.error(&corrupt::<C>(c));
    }
}

/// Reads `key` as a `C`: `Ok(None)` when absent, `Err(reply)` on failure.
pub async fn read<C: Collection>(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> Result<Option<C>, String> {
    match ctx.session.get(key).await {
        Ok(e) => collection_of(e.as_ref()),
        Err(e) => Err(engine_error_message(&e)),
    }
}

/// What a write closure reports: its answer, and whether the collection
/// changed (an unchanged one is not written again).
pub type Edit<T> = Result<(T, bool), String>;

/// The error for a collection that would grow past the bulk length limit.
pub fn too_big(name: &str, max: usize) -> String {
    format!("ERR {name} would exceed the maximum value size ({max} bytes)")
}

/// The change that stores `c` in place of `old` (keeping `old`'s expiry;
/// a new key gets its namespace's default TTL), or deletes the key when
/// `c` is empty; `Err` when the encoding is over `max` bytes.
pub fn store<C: Collection>(old: Option<&Entry>, c: &C, max: usize) -> Result<Change, String> {
    if c.is_empty() {
        return Ok(if old.is_some() {
            Change::Delete
        } else {
            Change::Keep
        });
    }
    let value = c.encode();
    if value.len() > max {
        return Err(too_big(C::NAME, max));
    }
    Ok(match old {
        Some(e) => Change::Exact(Entry::with_kind(value, e.expires_at, 0, C::KIND)),
        None => Change::Put(Entry::with_kind(value, None, 0, C::KIND)),
    })
}

/// [`store`], as a patch when `c` was decoded from `old` and recorded
/// its changes (a one-key write: write-back then journals the patch).
pub fn store_patched<C: Collection>(
    old: Option<&Entry>,
    c: &mut C,
    max: usize,
) -> Result<Change, String> {
    let patch = c.take_patch();
    let change = store(old, c, max)?;
    Ok(match (change, patch) {
        (Change::Exact(entry), Some(patch)) => Change::Patch(entry, patch),
        (change, _) => change,
    })
}

/// Read-modify-write of the `C` at `key` (an absent key starts empty):
/// `f` edits it under the key's lock and the result is [`store`]d.
/// `Err` is the error reply.
pub async fn modify<C: Collection, T>(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    f: impl FnOnce(&mut C) -> Edit<T>,
) -> Result<T, String> {
    modify_entry(ctx, key, |old, max| {
        let mut c = match collection_of::<C>(old) {
            Ok(c) => c.unwrap_or_default(),
            Err(msg) => return (Change::Keep, Err(msg)),
        };
        let answer = match f(&mut c) {
            Err(msg) => return (Change::Keep, Err(msg)),
            Ok((answer, false)) => return (Change::Keep, Ok(answer)),
            Ok((answer, true)) => answer,
        };
        match store_patched(old, &mut c, max) {
            Ok(change) => (change, Ok(answer)),
            Err(msg) => (Change::Keep, Err(msg)),
        }
    })
    .await
}

/// What a collection write did to its key: recorded by [`modify_entry`]
/// in `ClientState::last_change`, read by [`notify_change`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LastChange {
    /// Nothing was written (or the write failed).
    #[default]
    Unchanged,
    /// The key was written.
    Written,
    /// The key was deleted (the collection was emptied).
    Deleted,
}

impl LastChange {
    fn of(change: &Change) -> Self {
        match change {
            Change::Keep => LastChange::Unchanged,
            Change::Delete => LastChange::Deleted,
            _ => LastChange::Written,
        }
    }
}

/// One `Session::modify` of `key`: `f` gets its entry (under the key's
/// lock) and the value size limit, and returns the change to make and the
/// answer or error reply. What it did is left in
/// `ctx.client.last_change`.
pub async fn modify_entry<T>(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    f: impl FnOnce(Option<&Entry>, usize) -> (Change, Result<T, String>),
) -> Result<T, String> {
    let key = Bytes::copy_from_slice(key);
    let max = ctx.server.config.limits.max_bulk_len;
    let mut last = LastChange::Unchanged;
    let r = ctx
        .session
        .modify(key, |old| {
            let (change, answer) = f(old, max);
            last = LastChange::of(&change);
            (change, answer)
        })
        .await;
    ctx.client.last_change = match &r {
        Ok(_) => last,
        Err(_) => LastChange::Unchanged,
    };
    match r {
        Ok(m) => m.result,
        Err(e) => Err(engine_error_message(&e)),
    }
}

/// The keyspace events of the collection write just made on `key`
/// through [`modify_entry`] (or [`modify`], [`modify_stored`]): `event`
/// if the key changed, then `del` if the write emptied it, as Redis
/// raises them.
pub fn notify_change(ctx: &Ctx<'_, '_>, class: u32, event: &str, key: &[u8]) {
    match ctx.client.last_change {
        LastChange::Unchanged => {}
        LastChange::Written => ctx.notify(class, event, key),
        LastChange::Deleted => {
            ctx.notify(class, event, key);
            ctx.notify(crate::notify::class::GENERIC, "del", key);
        }
    }
}

/// The events of a `*STORE` command's write of `dst` (`SINTERSTORE`,
/// `ZUNIONSTORE`, `SORT ... STORE`...), as Redis raises them: `event` when
/// the result was stored, `del` when an empty result deleted a key that
/// existed, nothing otherwise.
pub fn notify_stored(
    ctx: &Ctx<'_, '_>,
    class: u32,
    event: &str,
    dst: &[u8],
    stored: bool,
    existed: bool,
) {
    if stored {
        ctx.notify(class, event, dst);
    } else if existed {
        ctx.notify(crate::notify::class::GENERIC, "del", dst);
    }
}

/// What a write on a collection's stored bytes ([`modify_stored`]) does.
pub enum StoredEdit {
    /// Nothing (the key is left as it was).
    Keep,
    /// Stores this value whole.
    Whole(Bytes),
    /// Stores this value, which this patch makes from the one before.
    Patched(Bytes, Bytes),
}

/// Read-modify-write of the `C` at `key` on its stored bytes, for a write
/// that changes a little of a big collection without decoding it (`HSET`
/// of one field). `f` gets the stored value (`None` when absent) and
/// returns the edit and its answer; a value is stored as [`modify`] would
/// (expiry kept, size limit checked).
pub async fn modify_stored<C: Collection, T>(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    f: impl FnOnce(Option<&Bytes>) -> Result<(StoredEdit, T), Corrupt>,
) -> Result<T, String> {
    modify_entry(ctx, key, |old, max| {
        let edit = match old {
            Some(e) if e.kind != C::KIND => return (Change::Keep, Err(WRONGTYPE.to_string())),
            Some(e) => f(Some(&e.value)),
            None => f(None),
        };
        let (value, patch, answer) = match edit {
            Ok((StoredEdit::Keep, answer)) => return (Change::Keep, Ok(answer)),
            Ok((StoredEdit::Whole(value), answer)) => (value, None, answer),
            Ok((StoredEdit::Patched(value, patch), answer)) => (value, Some(patch), answer),
            Err(c) => return (Change::Keep, Err(corrupt::<C>(c))),
        };
        if value.len() > max {
            return (Change::Keep, Err(too_big(C::NAME, max)));
        }
        let change = match (old, patch) {
            (Some(e), Some(patch)) => {
                Change::Patch(Entry::with_kind(value, e.expires_at, 0, C::KIND), patch)
            }
            (Some(e), None) => Change::Exact(Entry::with_kind(value, e.expires_at, 0, C::KIND)),
            (None, _) => Change::Put(Entry::with_kind(value, None, 0, C::KIND)),
        };
        (change, Ok(answer))
    })
    .await
}

/// Takes from the first non-empty `C` of `keys` (`LMPOP`, `ZMPOP` and the
/// blocking pops), under every key's lock: `take` removes what it pops
/// from it, and the collection is stored back (or deleted when emptied).
/// Returns which key, and what `take` returned; `None` when every key is
/// empty. A key of another type is an error, or is passed over with
/// `skip_wrong_type` (a blocked client waking up).
pub async fn take_from_first<C: Collection, T>(
    ctx: &mut Ctx<'_, '_>,
    keys: &[Bytes],
    skip_wrong_type: bool,
    take: impl FnOnce(&mut C) -> Result<T, String>,
) -> Result<Option<(usize, T)>, String> {
    let max = ctx.server.config.limits.max_bulk_len;
    let mut take = Some(take);
    if let [key] = keys {
        // One key (a `BLPOP` on one queue): a one-key write, which
        // write-back can journal as a patch.
        let mut last = LastChange::Unchanged;
        let r = ctx
            .session
            .modify(key.clone(), |old| {
                let (change, taken) = take_from::<C, T>(old, skip_wrong_type, max, &mut take);
                last = LastChange::of(&change);
                (change, taken)
            })
            .await;
        ctx.client.last_change = if r.is_ok() {
            last
        } else {
            LastChange::Unchanged
        };
        return match r {
            Ok(m) => m.result.map(|t| t.map(|t| (0, t))),
            Err(e) => Err(engine_error_message(&e)),
        };
    }
    let mut last = LastChange::Unchanged;
    let r = ctx
        .session
        .modify_many(keys.to_vec(), |found| {
            let mut changes = vec![Change::Keep; found.len()];
            for (at, entry) in found.iter().enumerate() {
                match take_from::<C, T>(entry.as_ref(), skip_wrong_type, max, &mut take) {
                    (_, Ok(None)) => continue,
                    (change, Ok(Some(t))) => {
                        last = LastChange::of(&change);
                        changes[at] = change;
                        return (changes, Ok(Some((at, t))));
                    }
                    (_, Err(msg)) => return (changes, Err(msg)),
                }
            }
            (changes, Ok(None))
        })
        .await;
    ctx.client.last_change = if r.is_ok() {
        last
    } else {
        LastChange::Unchanged
    };
    r.map_err(|e| engine_error_message(&e))?
}

/// [`take_from_first`] on one key's entry: `Ok(None)` when it holds
/// nothing to take (absent, or of another type with `skip_wrong_type`);
/// else the change that stores what `take` left.
fn take_from<C: Collection, T>(
    entry: Option<&Entry>,
    skip_wrong_type: bool,
    max: usize,
    take: &mut Option<impl FnOnce(&mut C) -> Result<T, String>>,
) -> (Change, Result<Option<T>, String>) {
    let mut c = match collection_of::<C>(entry) {
        Ok(Some(c)) => c,
        Ok(None) => return (Change::Keep, Ok(None)),
        Err(_) if skip_wrong_type => return (Change::Keep, Ok(None)),
        Err(msg) => return (Change::Keep, Err(msg)),
    };
    let take = take.take().expect("one collection is taken from");
    let taken = match take(&mut c) {
        Ok(t) => t,
        Err(msg) => return (Change::Keep, Err(msg)),
    };
    match store_patched(entry, &mut c, max) {
        Ok(change) => (change, Ok(Some(taken))),
        Err(msg) => (Change::Keep, Err(msg)),
    }
}

/// The optional `count` of a pop (`LPOP`, `SPOP`, `ZPOPMIN`... at
/// argument 2), or Redis's error for a negative or unreadable one.
pub fn optional_count(args: &super::Args<'_>) -> Result<Option<u64>, &'static str> {
    if args.len() < 3 {
        return Ok(None);
    }
    super::parse_i64(args.get(2))
        .filter(|&n| n >= 0)
        .map(|n| Some(n as u64))
        .ok_or("ERR value is out of range, must be positive")
}
