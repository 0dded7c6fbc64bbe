//! Meta commands: `mg ms md ma me` (`mn` is answered by the dispatcher).
//!
//! Return codes `HD VA EN NS EX NF`; flags echoed in request order (`O`
//! opaque, `k` key, base64 with ` b` when the key came as `b`); quiet mode
//! `q` suppresses the nominal reply only (`mg`: `EN`; `ms`/`md`: `HD`;
//! `ma`: a successful `HD`/`VA`), never an error, as in memcached 1.6.

use super::arith::{self, Delta};
use super::flags::{base64_encode, MetaFlags, MAX_OPAQUE_LEN};
use super::parse::{valid_key, KEY_MAX_LEN, MAX_META_TOKENS};
use super::storage::{self, Item, Outcome};
use super::{expiry_from_exptime, push_u64, ttl_secs, Ctx, Req, StoreCmd};
use bytes::{Bytes, BytesMut};
use tiercache_engine::{now_ms, Change, Entry, MemoryTier, ValueKind};

type Meta = Option<Result<MetaFlags, &'static str>>;

/// The checks memcached makes before the flag pre-pass (the parser skipped
/// it for these lines), then the pre-pass result. `dup_error` replaces the
/// pre-pass message (`md`/`ma` say "invalid or duplicate flag").
fn flags_or_reply(
    req: &Req<'_>,
    ctx: &mut Ctx<'_, '_>,
    meta: Meta,
    too_many: &str,
    dup_error: Option<&str>,
) -> Option<MetaFlags> {
    ctx.stats().cmd_meta.incr();
    let error = match meta {
        Some(Ok(f)) if f.key_binary || valid_key(req.tok(1)) => return Some(f),
        Some(Ok(_)) => "CLIENT_ERROR bad command line format",
        Some(Err(e)) => dup_error.unwrap_or(e),
        None if req.ntokens() < 3 => "ERROR",
        None if req.tok(1).len() > KEY_MAX_LEN => "CLIENT_ERROR bad command line format",
        None if req.ntokens() > MAX_META_TOKENS => too_many,
        None => "CLIENT_ERROR bad command line format",
    };
    ctx.line(false, error.as_bytes());
    None
}

/// Appends ` k<key>` (base64 and ` b` for a binary key).
fn push_key(out: &mut BytesMut, key: &[u8], binary: bool) {
    out.extend_from_slice(b" k");
    if binary {
        let mut enc = Vec::with_capacity(key.len() * 4 / 3 + 4);
        base64_encode(key, &mut enc);
        out.extend_from_slice(&enc);
        out.extend_from_slice(b" b");
    } else {
        out.extend_from_slice(key);
    }
}

/// Echoes `O` and `k` tokens in request order; `Err` when an opaque is too long.
fn push_echo(req: &Req<'_>, out: &mut BytesMut, first: usize, binary: bool) -> Result<(), ()> {
    for i in first..req.len() {
        let tok = req.tok(i);
        match tok[0] {
            b'O' if tok.len() > MAX_OPAQUE_LEN => return Err(()),
            b'O' => {
                out.extend_from_slice(b" ");
                out.extend_from_slice(tok);
            }
            b'k' => push_key(out, req.tok(1), binary),
            _ => {}
        }
    }
    Ok(())
}

fn push_flag_num(out: &mut BytesMut, flag: u8, n: i64) {
    out.extend_from_slice(&[b' ', flag]);
    if n < 0 {
        out.extend_from_slice(b"-");
    }
    push_u64(out, n.unsigned_abs());
}

fn opaque_error(ctx: &mut Ctx<'_, '_>, start: usize) {
    ctx.out.truncate(start);
    ctx.line(false, b"CLIENT_ERROR opaque token too long");
}

/// `mg <key> <flags>*`
pub async fn mg(req: &Req<'_>, ctx: &mut Ctx<'_, '_>, meta: Meta) {
    let Some(f) = flags_or_reply(
        req,
        ctx,
        meta,
        "CLIENT_ERROR options flags are too long",
        None,
    ) else {
        return;
    };
    let key = Bytes::copy_from_slice(req.tok(1));
    let now = now_ms();
    let new_ttl = f.ttl.map(|t| expiry_from_exptime(t, now));
    let vivify_ttl = f.vivify.map(|t| expiry_from_exptime(t, now));
    // (the item as found or created, whether it was created)
    let found: Result<(Option<Entry>, bool), _> = if new_ttl.is_some() || vivify_ttl.is_some() {
        ctx.session
            .modify(key, |old| match (old, new_ttl, vivify_ttl) {
                // A Redis hash is a miss: neither touched nor replaced by a vivify.
                (Some(e), _, _) if e.kind != ValueKind::String => (Change::Keep, (None, false)),
                (Some(e), Some(at), _) => (Change::Touch(at), (Some(e.clone()), false)),
                (Some(e), None, _) => (Change::Keep, (Some(e.clone()), false)),
                (None, _, Some(at)) => (Change::Put(Entry::with_expiry("", at)), (None, true)),
                (None, _, None) => (Change::Keep, (None, false)),
            })
            .await
            .map(|m| match m.result {
                (None, true) => (m.entry, true),
                other => other,
            })
    } else {
        ctx.session
            .get(&key)
            .await
            .map(|e| (e.filter(|e| e.kind == ValueKind::String), false))
    };
    let (item, created) = match found {
        Ok(x) => x,
        Err(e) => return ctx.engine_error(false, &e),
    };
    let stats = ctx.stats();
    let start = ctx.out.len();
    let Some(item) = item else {
        if new_ttl.is_some() {
            stats.touch_misses.incr();
            stats.cmd_touch.incr();
        } else {
            stats.get_misses.incr();
            stats.cmd_get.incr();
        }
        ctx.out.extend_from_slice(b"EN");
        if push_echo(req, ctx.out, 2, f.key_binary).is_err() {
            return opaque_error(ctx, start);
        }
        ctx.out.extend_from_slice(b"\r\n");
        if f.quiet {
            ctx.out.truncate(start);
        }
        return;
    };
    if new_ttl.is_some() {
        stats.touch_hits.incr();
        stats.cmd_touch.incr();
    } else {
        stats.get_hits.incr();
        stats.cmd_get.incr();
    }
    // Recache tokens: the creator of an autovivified item wins (`W`), as
    // does the first reader whose `R` finds less TTL left; later readers of
    // that same item see `Z` (someone is already recaching it).
    let tokens = &stats.tokens_sent;
    let token_sent = !created && tokens.sent(req.tok(1), item.cas);
    let recache = (2..req.len())
        .find(|&i| req.tok(i)[0] == b'R')
        .and_then(|i| super::flags::strtol32(&req.tok(i)[1..]))
        .map(|t| expiry_from_exptime(t, now));
    let won = created
        || matches!((recache, item.expires_at), (Some(r), Some(e)) if !token_sent && e < r.unwrap_or(u64::MAX));
    if won {
        tokens.mark(req.tok(1), item.cas);
    }
    let out = &mut *ctx.out;
    if f.value {
        out.extend_from_slice(b"VA ");
        push_u64(out, item.value.len() as u64);
    } else {
        out.extend_from_slice(b"HD");
    }
    // Flags apply in order: a `t` before `T` shows the old TTL.
    let mut exp = if created { None } else { item.expires_at };
    for i in 2..req.len() {
        let tok = req.tok(i);
        match tok[0] {
            b'T' => exp = new_ttl.unwrap_or(exp),
            b'N' if created => exp = vivify_ttl.unwrap_or(exp),
            b's' => push_flag_num(out, b's', item.value.len() as i64),
            b't' => push_flag_num(out, b't', ttl_secs(exp, now)),
            b'c' => push_flag_num(out, b'c', item.cas as i64),
            b'f' => push_flag_num(out, b'f', i64::from(item.flags)),
            // Not tracked by the engine: reported as never hit, just accessed.
            b'h' => out.extend_from_slice(b" h0"),
            b'l' => out.extend_from_slice(b" l0"),
            b'O' if tok.len() > MAX_OPAQUE_LEN => return opaque_error(ctx, start),
            b'O' => {
                out.extend_from_slice(b" ");
                out.extend_from_slice(tok);
            }
            b'k' => push_key(out, req.tok(1), f.key_binary),
            _ => {}
        }
    }
    if token_sent {
        out.extend_from_slice(b" Z");
    }
    if won {
        out.extend_from_slice(b" W");
    }
    out.extend_from_slice(b"\r\n");
    if f.value {
        out.extend_from_slice(&item.value);
        out.extend_from_slice(b"\r\n");
    }
}

/// `ms <key> <datalen> <flags>*` with its value (checked by the parser).
pub async fn ms(req: &Req<'_>, ctx: &mut Ctx<'_, '_>, f: MetaFlags, value: &[u8]) {
    ctx.stats().cmd_meta.incr();
    let mut cmd = match f.mode {
        Some(b'E') => StoreCmd::Add,
        Some(b'A') => StoreCmd::Append,
        Some(b'P') => StoreCmd::Prepend,
        Some(b'R') => StoreCmd::Replace,
        _ => StoreCmd::Set,
    };
    // A cas unique turns set and replace into cas; add ignores it.
    if f.cas.is_some() && matches!(cmd, StoreCmd::Set | StoreCmd::Replace) {
        cmd = StoreCmd::Cas;
    }
    let item = Item {
        flags: f.client_flags,
        exptime: f.ttl.unwrap_or(0),
        cas: if cmd == StoreCmd::Add {
            0
        } else {
            f.cas.unwrap_or(0)
        },
        value,
    };
    let (outcome, cas) = match storage::store(ctx, req.tok(1), cmd, &item).await {
        Ok(x) => x,
        Err(e) => return ctx.engine_error(false, &e),
    };
    let start = ctx.out.len();
    let out = &mut *ctx.out;
    out.extend_from_slice(match outcome {
        Outcome::Stored => b"HD",
        Outcome::NotStored => b"NS",
        Outcome::Exists => b"EX",
        Outcome::NotFound => b"NF",
    });
    for i in 3..req.len() {
        let tok = req.tok(i);
        match tok[0] {
            b'O' => {
                out.extend_from_slice(b" ");
                out.extend_from_slice(tok);
            }
            b'k' => push_key(out, req.tok(1), f.key_binary),
            b'c' => push_flag_num(out, b'c', cas as i64),
            _ => {}
        }
    }
    out.extend_from_slice(b"\r\n");
    if f.quiet && outcome == Outcome::Stored {
        ctx.out.truncate(start);
    }
}

/// `md <key> <flags>*`. `I` (invalidate) deletes: stale items are not kept.
pub async fn md(req: &Req<'_>, ctx: &mut Ctx<'_, '_>, meta: Meta) {
    let Some(f) = flags_or_reply(
        req,
        ctx,
        meta,
        "CLIENT_ERROR options flags too long",
        Some("CLIENT_ERROR invalid or duplicate flag"),
    ) else {
        return;
    };
    let key = Bytes::copy_from_slice(req.tok(1));
    let m = ctx
        .session
        .modify(key, |old| match old {
            None => (Change::Keep, &b"NF"[..]),
            Some(e) if f.cas.is_some_and(|c| c != e.cas) => (Change::Keep, &b"EX"[..]),
            Some(_) => (Change::Delete, &b"HD"[..]),
        })
        .await;
    let code = match m {
        Ok(m) => m.result,
        Err(e) => return ctx.engine_error(false, &e),
    };
    let stats = ctx.stats();
    if code == b"HD" {
        stats.delete_hits.incr();
    } else {
        stats.delete_misses.incr();
    }
    let start = ctx.out.len();
    ctx.out.extend_from_slice(code);
    if push_echo(req, ctx.out, 2, f.key_binary).is_err() {
        return opaque_error(ctx, start);
    }
    ctx.out.extend_from_slice(b"\r\n");
    if f.quiet && code == b"HD" {
        ctx.out.truncate(start);
    }
}

/// `ma <key> <flags>*`: arithmetic with autovivify (`N`, `J`), delta `D`,
/// mode `M` (`I`/`+` incr, `D`/`-` decr), cas check `C`, new TTL `T`.
pub async fn ma(req: &Req<'_>, ctx: &mut Ctx<'_, '_>, meta: Meta) {
    let Some(f) = flags_or_reply(
        req,
        ctx,
        meta,
        "CLIENT_ERROR options flags too long",
        Some("CLIENT_ERROR invalid or duplicate flag"),
    ) else {
        return;
    };
    let incr = match f.mode {
        None | Some(b'I' | b'+') => true,
        Some(b'D' | b'-') => false,
        Some(_) => return ctx.line(false, b"CLIENT_ERROR invalid mode for ma M token"),
    };
    let now = now_ms();
    let new_ttl = f.ttl.map(|t| expiry_from_exptime(t, now));
    let vivify_ttl = f.vivify.map(|t| expiry_from_exptime(t, now));
    let key = Bytes::copy_from_slice(req.tok(1));
    let m = ctx
        .session
        .modify(key, |old| match (old, vivify_ttl) {
            (None, Some(at)) => {
                let e = Entry::with_expiry(f.initial.to_string(), at);
                (Change::Put(e), (Delta::Done(f.initial), true))
            }
            _ => match arith::apply(old, incr, f.delta, f.cas.unwrap_or(0)) {
                (Change::Put(mut e), d) => {
                    if let Some(at) = new_ttl {
                        e.expires_at = at;
                    }
                    (Change::Put(e), (d, false))
                }
                (c, d) => (c, (d, false)),
            },
        })
        .await;
    let ((delta, created), entry) = match m {
        Ok(m) => (m.result, m.entry),
        Err(e) => return ctx.engine_error(false, &e),
    };
    let stats = ctx.stats();
    let start = ctx.out.len();
    let n = match delta {
        Delta::Done(n) => n,
        Delta::NonNumeric => {
            return ctx.line(
                false,
                b"CLIENT_ERROR cannot increment or decrement non-numeric value",
            )
        }
        Delta::NotFound | Delta::CasMismatch => {
            if delta == Delta::NotFound {
                if incr {
                    stats.incr_misses.incr();
                } else {
                    stats.decr_misses.incr();
                }
            }
            let code: &[u8] = if delta == Delta::NotFound {
                b"NF"
            } else {
                b"EX"
            };
            ctx.out.extend_from_slice(code);
            if push_echo(req, ctx.out, 2, f.key_binary).is_err() {
                return opaque_error(ctx, start);
            }
            ctx.out.extend_from_slice(b"\r\n");
            return;
        }
    };
    if !created {
        if incr {
            stats.incr_hits.incr();
        } else {
            stats.decr_hits.incr();
        }
    }
    let number = n.to_string();
    let out = &mut *ctx.out;
    if f.value {
        out.extend_from_slice(b"VA ");
        push_u64(out, number.len() as u64);
    } else {
        out.extend_from_slice(b"HD");
    }
    let cas = entry.as_ref().map_or(0, |e| e.cas);
    let exp = entry.as_ref().and_then(|e| e.expires_at);
    for i in 2..req.len() {
        let tok = req.tok(i);
        match tok[0] {
            b'c' => push_flag_num(out, b'c', cas as i64),
            b't' => push_flag_num(out, b't', ttl_secs(exp, now)),
            b'O' if tok.len() > MAX_OPAQUE_LEN => return opaque_error(ctx, start),
            b'O' => {
                out.extend_from_slice(b" ");
                out.extend_from_slice(tok);
            }
            b'k' => push_key(out, req.tok(1), f.key_binary),
            _ => {}
        }
    }
    out.extend_from_slice(b"\r\n");
    if f.value {
        out.extend_from_slice(number.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    // Quiet hides a successful arithmetic reply, not a created one.
    if f.quiet && !created {
        ctx.out.truncate(start);
    }
}

/// `me <key> [b]`: memcached's debug line for an item, or `EN`.
pub async fn me(req: &Req<'_>, ctx: &mut Ctx<'_, '_>) {
    ctx.stats().cmd_meta.incr();
    if req.ntokens() < 3 || req.tok(1).len() > KEY_MAX_LEN || !valid_key_or_binary(req) {
        return ctx.line(false, b"CLIENT_ERROR bad command line format");
    }
    let binary = req.len() >= 3 && req.tok(2) == b"b";
    let key = req.tok(1);
    let e = match ctx.session.get(key).await {
        Ok(Some(e)) if e.kind == ValueKind::String => e,
        Ok(Some(_)) => return ctx.line(false, b"EN"),
        Ok(None) => return ctx.line(false, b"EN"),
        Err(e) => return ctx.engine_error(false, &e),
    };
    let out = &mut *ctx.out;
    out.extend_from_slice(b"ME ");
    if binary {
        let mut enc = Vec::new();
        base64_encode(key, &mut enc);
        out.extend_from_slice(&enc);
    } else {
        out.extend_from_slice(key);
    }
    let ttl = ttl_secs(e.expires_at, now_ms());
    out.extend_from_slice(b" exp=");
    if ttl < 0 {
        out.extend_from_slice(b"-1");
    } else {
        // memcached prints `now - exptime`: minus the remaining TTL.
        out.extend_from_slice(b"-");
        push_u64(out, ttl as u64);
    }
    out.extend_from_slice(b" la=0 cas=");
    push_u64(out, e.cas);
    out.extend_from_slice(b" fetch=no cls=1 size=");
    push_u64(out, MemoryTier::charge(key, &e));
    out.extend_from_slice(b"\r\n");
}

fn valid_key_or_binary(req: &Req<'_>) -> bool {
    (req.len() >= 3 && req.tok(2) == b"b") || valid_key(req.tok(1))
}
