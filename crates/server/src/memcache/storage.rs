//! `set add replace append prepend cas`, and the store logic `ms` shares:
//! memcached's `do_store_item` as one engine read-modify-write.

use super::{expiry_from_exptime, expiry_now, Ctx, Parsed, Req, StoreCmd};
use bytes::Bytes;
use tiercache_engine::{copy_key_value, now_ms, Change, EngineError, Entry, ValueKind};

/// A storage request's item, as parsed.
pub struct Item<'a> {
    /// Client flags.
    pub flags: u32,
    /// Raw exptime.
    pub exptime: i32,
    /// The cas unique to compare (`cas`, `ms ... C`); 0 for none.
    pub cas: u64,
    /// The value, still in the read buffer.
    pub value: &'a [u8],
}

/// memcached's `store_item_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// `STORED` / `HD`
    Stored,
    /// `NOT_STORED` / `NS`
    NotStored,
    /// `EXISTS` / `EX`
    Exists,
    /// `NOT_FOUND` / `NF`
    NotFound,
}

/// Stores `item` under `key` per `cmd`; returns the outcome and the cas
/// unique of the stored entry (0 when nothing was stored).
///
/// `append`/`prepend` keep the existing flags and expiry (memcached ignores
/// the new ones) and, given a cas, only check it; `cas` compares the unique;
/// a result over the value limit is not stored.
pub async fn store(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    cmd: StoreCmd,
    item: &Item<'_>,
) -> Result<(Outcome, u64), EngineError> {
    let stats = ctx.stats();
    stats.cmd_set.incr();
    let expires_at = expiry_now(item.exptime);
    if cmd == StoreCmd::Set {
        // No read: the plain write path, as cheap as a RESP SET. Key and
        // value are copied out of the read buffer (the memory invariant).
        let (key, value) = copy_key_value(key, item.value);
        let entry = Entry::with_flags(value, expires_at, item.flags);
        let stored = ctx.session.put(key, entry).await?;
        stats.total_items.incr();
        return Ok((Outcome::Stored, stored.unwrap_or(0)));
    }
    let key = Bytes::copy_from_slice(key);
    let entry = || Entry::with_flags(Bytes::copy_from_slice(item.value), expires_at, item.flags);
    let max = ctx.server.config.limits.max_bulk_len;
    let m = ctx
        .session
        .modify(key, |old| match (cmd, old) {
            (StoreCmd::Add, Some(_)) => (Change::Keep, Outcome::NotStored),
            (StoreCmd::Replace | StoreCmd::Append | StoreCmd::Prepend, None) => {
                (Change::Keep, Outcome::NotStored)
            }
            (StoreCmd::Cas, None) => (Change::Keep, Outcome::NotFound),
            (StoreCmd::Cas, Some(e)) if e.cas != item.cas => (Change::Keep, Outcome::Exists),
            // A Redis hash cannot be appended to: memcached has no type
            // error, and NOT_STORED is its answer for an item the data
            // cannot be added to (as for a missing one).
            (StoreCmd::Append | StoreCmd::Prepend, Some(e)) if e.kind != ValueKind::String => {
                (Change::Keep, Outcome::NotStored)
            }
            (StoreCmd::Append | StoreCmd::Prepend, Some(e)) => {
                if item.cas != 0 && item.cas != e.cas {
                    return (Change::Keep, Outcome::Exists);
                }
                if e.value.len() + item.value.len() > max {
                    return (Change::Keep, Outcome::NotStored);
                }
                let (a, b) = if cmd == StoreCmd::Append {
                    (&e.value[..], item.value)
                } else {
                    (item.value, &e.value[..])
                };
                let mut v = Vec::with_capacity(a.len() + b.len());
                v.extend_from_slice(a);
                v.extend_from_slice(b);
                (
                    Change::Put(Entry::with_flags(v, e.expires_at, e.flags)),
                    Outcome::Stored,
                )
            }
            _ => (Change::Put(entry()), Outcome::Stored),
        })
        .await?;
    match m.result {
        Outcome::Stored => {
            stats.total_items.incr();
            if cmd == StoreCmd::Cas {
                stats.cas_hits.incr();
            }
        }
        Outcome::NotFound => stats.cas_misses.incr(),
        Outcome::Exists if cmd == StoreCmd::Cas => stats.cas_badval.incr(),
        _ => {}
    }
    let cas = match m.result {
        Outcome::Stored => m.entry.map_or(0, |e| e.cas),
        _ => 0,
    };
    Ok((m.result, cas))
}

/// A classic storage command: store, reply in words.
pub async fn run_classic(
    req: &Req<'_>,
    ctx: &mut Ctx<'_, '_>,
    cmd: StoreCmd,
    item: Item<'_>,
    noreply: bool,
) {
    match store(ctx, req.tok(1), cmd, &item).await {
        Ok((outcome, _)) => {
            let word: &[u8] = match outcome {
                Outcome::Stored => b"STORED",
                Outcome::NotStored => b"NOT_STORED",
                Outcome::Exists => b"EXISTS",
                Outcome::NotFound => b"NOT_FOUND",
            };
            ctx.line(noreply, word);
        }
        Err(e) => ctx.engine_error(noreply, &e),
    }
}

/// An over-size `set`/`ms` value: memcached drops the key rather than let a
/// stale value outlive a failed overwrite.
pub async fn drop_key(req: &Req<'_>, ctx: &mut Ctx<'_, '_>) {
    let key = Bytes::copy_from_slice(req.tok(1));
    if let Err(e) = ctx.session.delete_many(&[key]).await {
        tracing::warn!(error = %e, "dropping the key of an over-size value failed");
    }
}

/// True for a well-formed `set`: the requests [`run_set_batch`] may take
/// together. Everything else runs one by one.
pub fn is_plain_set(req: &Req<'_>) -> bool {
    matches!(
        req.parsed(),
        Parsed::Store {
            cmd: StoreCmd::Set,
            ..
        }
    )
}

/// Runs consecutive `set` requests of one pipelined batch as one engine
/// write (`Session::put_many`): one lock pass and one journal append for the
/// run instead of one of each per request. Same result as running them in
/// order; each gets its own `STORED` (or nothing with `noreply`), and an
/// engine error fails every request of the run.
pub async fn run_set_batch(reqs: &[Req<'_>], ctx: &mut Ctx<'_, '_>) {
    let stats = ctx.stats();
    let now = now_ms();
    let mut entries = Vec::with_capacity(reqs.len());
    for req in reqs {
        let Parsed::Store {
            flags,
            exptime,
            data,
            ..
        } = req.parsed()
        else {
            unreachable!("is_plain_set admits only Store requests");
        };
        stats.cmd_set.incr();
        // Key and value are copied out of the read buffer (the memory
        // invariant), into one allocation.
        let (key, value) = copy_key_value(req.tok(1), req.slice(data));
        let entry = Entry::with_flags(value, expiry_from_exptime(exptime, now), flags);
        entries.push((key, entry));
    }
    let noreply = |req: &Req<'_>| matches!(req.parsed(), Parsed::Store { noreply: true, .. });
    match ctx.session.put_many(entries).await {
        Ok(()) => {
            for req in reqs {
                stats.total_items.incr();
                ctx.line(noreply(req), b"STORED");
            }
        }
        Err(e) => {
            for req in reqs {
                ctx.engine_error(noreply(req), &e);
            }
        }
    }
}
