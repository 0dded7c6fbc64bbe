//! `get gets gat gats` (and the ancient `bget`), `touch`.

use super::flags::strtol32;
use super::parse::valid_key;
use super::stats::McStats;
use super::{expiry_from_exptime, push_u64, Ctx, Req};
use bytes::{Bytes, BytesMut};
use tiercache_engine::{now_ms, Change, Entry, ValueKind};

/// A `get`'s answer for one key: its `VALUE` block on a hit (a Redis hash
/// is a miss), counted either way.
fn fetched(out: &mut BytesMut, stats: &McStats, key: &[u8], found: Option<&Entry>, with_cas: bool) {
    match found {
        Some(e) if e.kind == ValueKind::String => {
            stats.get_hits.incr();
            value_reply(out, key, e, with_cas);
        }
        _ => stats.get_misses.incr(),
    }
}

/// `VALUE <key> <flags> <bytes>[ <cas>]\r\n<data>\r\n`
fn value_reply(out: &mut BytesMut, key: &[u8], e: &Entry, with_cas: bool) {
    out.extend_from_slice(b"VALUE ");
    out.extend_from_slice(key);
    out.extend_from_slice(b" ");
    push_u64(out, u64::from(e.flags));
    out.extend_from_slice(b" ");
    push_u64(out, e.value.len() as u64);
    if with_cas {
        out.extend_from_slice(b" ");
        push_u64(out, e.cas);
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&e.value);
    out.extend_from_slice(b"\r\n");
}

/// `get|gets <key>*`, `gat|gats <exptime> <key>*`: every hit, then `END`.
/// A key over 250 bytes makes the whole reply
/// `CLIENT_ERROR bad command line format`, as in memcached.
pub async fn get(req: &Req<'_>, ctx: &mut Ctx<'_, '_>) {
    let cmd = req.tok(0);
    let with_cas = cmd == b"gets" || cmd == b"gats";
    let touch = cmd.starts_with(b"gat");
    let first_key = if touch { 2 } else { 1 };
    let expires_at = if touch {
        match strtol32(req.tok(1)) {
            Some(t) => Some(expiry_from_exptime(t, now_ms())),
            None => {
                ctx.line(false, b"CLIENT_ERROR invalid exptime argument");
                return;
            }
        }
    } else {
        None
    };
    let keys = first_key..req.len();
    if keys.clone().any(|i| !valid_key(req.tok(i))) {
        ctx.line(false, b"CLIENT_ERROR bad command line format");
        return;
    }
    let start = ctx.out.len();
    let stats = ctx.stats();
    match expires_at {
        None if keys.len() == 1 => {
            // The common `get <key>`: a hit needs no owned key and no vectors.
            let key = req.tok(keys.start);
            let found = match ctx.session.get(key).await {
                Ok(found) => found,
                Err(e) => return ctx.engine_error(false, &e),
            };
            stats.cmd_get.incr();
            fetched(ctx.out, stats, key, found.as_ref(), with_cas);
        }
        None => {
            let keys: Vec<Bytes> = keys.map(|i| Bytes::copy_from_slice(req.tok(i))).collect();
            let found = match ctx.session.get_many(&keys).await {
                Ok(found) => found,
                Err(e) => return ctx.engine_error(false, &e),
            };
            stats.cmd_get.add(keys.len() as u64);
            for (key, e) in keys.iter().zip(&found) {
                fetched(ctx.out, stats, key, e.as_ref(), with_cas);
            }
        }
        Some(at) => {
            for i in keys {
                let key = Bytes::copy_from_slice(req.tok(i));
                stats.cmd_touch.incr();
                // The reply shows the item as it was fetched; a touch into
                // the past removes it afterwards.
                let m = ctx
                    .session
                    .modify(key.clone(), |old| match old {
                        // A Redis hash is a miss, and is not touched.
                        Some(e) if e.kind != ValueKind::String => (Change::Keep, None),
                        old => (Change::Touch(at), old.cloned()),
                    })
                    .await;
                match m {
                    Ok(m) => match m.result {
                        Some(e) => {
                            stats.touch_hits.incr();
                            value_reply(ctx.out, &key, &e, with_cas);
                        }
                        None => stats.touch_misses.incr(),
                    },
                    Err(e) => {
                        ctx.out.truncate(start);
                        return ctx.engine_error(false, &e);
                    }
                }
            }
        }
    }
    ctx.out.extend_from_slice(b"END\r\n");
}

/// `touch <key> <exptime> [noreply]`: `TOUCHED` or `NOT_FOUND`.
pub async fn touch(req: &Req<'_>, ctx: &mut Ctx<'_, '_>) {
    let nt = req.ntokens();
    if nt != 4 && nt != 5 {
        ctx.line(false, b"ERROR");
        return;
    }
    let noreply = req.noreply();
    if !valid_key(req.tok(1)) {
        ctx.line(noreply, b"CLIENT_ERROR bad command line format");
        return;
    }
    let Some(exptime) = strtol32(req.tok(2)) else {
        ctx.line(noreply, b"CLIENT_ERROR invalid exptime argument");
        return;
    };
    let at = expiry_from_exptime(exptime, now_ms());
    let key = Bytes::copy_from_slice(req.tok(1));
    let stats = ctx.stats();
    stats.cmd_touch.incr();
    match ctx
        .session
        .modify(key, |old| (Change::Touch(at), old.is_some()))
        .await
    {
        Ok(m) if m.result => {
            stats.touch_hits.incr();
            ctx.line(noreply, b"TOUCHED");
        }
        Ok(_) => {
            stats.touch_misses.incr();
            ctx.line(noreply, b"NOT_FOUND");
        }
        Err(e) => ctx.engine_error(noreply, &e),
    }
}
