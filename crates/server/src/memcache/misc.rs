//! `delete`, `flush_all`, `version`, `verbosity`.

use super::flags::{strtol32, strtoul32};
use super::parse::valid_key;
use super::{expiry_from_exptime, Ctx, Req};
use bytes::Bytes;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tiercache_engine::{now_ms, GateSeat};

/// What `version` says: a memcached 1.6 protocol level (clients check it
/// for meta-command support), then who is really answering.
pub const VERSION: &str = concat!("1.6.0-tiercache-", env!("CARGO_PKG_VERSION"));

/// `delete <key> [0] [noreply]`: `DELETED` or `NOT_FOUND`.
pub async fn delete(req: &Req<'_>, ctx: &mut Ctx<'_, '_>) {
    let nt = req.ntokens();
    if !(3..=5).contains(&nt) {
        ctx.line(false, b"ERROR");
        return;
    }
    let noreply = req.noreply();
    if nt > 3 {
        // The old "hold time" argument survives only as a literal 0.
        let hold_is_zero = req.tok(2) == b"0";
        let valid = (nt == 4 && (hold_is_zero || noreply)) || (nt == 5 && hold_is_zero && noreply);
        if !valid {
            ctx.line(
                noreply,
                b"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]",
            );
            return;
        }
    }
    if !valid_key(req.tok(1)) {
        ctx.line(noreply, b"CLIENT_ERROR bad command line format");
        return;
    }
    let key = Bytes::copy_from_slice(req.tok(1));
    let stats = ctx.stats();
    match ctx.session.delete_many(&[key]).await {
        Ok(1) => {
            stats.delete_hits.incr();
            ctx.line(noreply, b"DELETED");
        }
        Ok(_) => {
            stats.delete_misses.incr();
            ctx.line(noreply, b"NOT_FOUND");
        }
        Err(e) => ctx.engine_error(noreply, &e),
    }
}

/// `flush_all [delay] [noreply]`: removes every key from every tier (the
/// stores included, as Redis `FLUSHALL` does). With a delay (relative
/// seconds, or an absolute Unix time past 30 days) the flush runs then,
/// unless a later `flush_all` replaced it; a delayed flush is not durable
/// across a restart before it runs.
pub async fn flush_all(req: &Req<'_>, ctx: &mut Ctx<'_, '_>) {
    let nt = req.ntokens();
    if !(2..=4).contains(&nt) {
        ctx.line(false, b"ERROR");
        return;
    }
    let noreply = req.noreply();
    let stats = ctx.stats();
    stats.cmd_flush.incr();
    let mut exptime = 0;
    if nt != if noreply { 3 } else { 2 } {
        match strtol32(req.tok(1)) {
            Some(e) => exptime = e,
            None => {
                ctx.line(noreply, b"CLIENT_ERROR invalid exptime argument");
                return;
            }
        }
    }
    let generation = stats.flush_generation.fetch_add(1, Ordering::SeqCst) + 1;
    if exptime > 0 {
        let at = expiry_from_exptime(exptime, now_ms()).unwrap_or(0);
        let delay = Duration::from_millis(at.saturating_sub(now_ms()));
        let engine = ctx.engine.clone();
        let replicas = ctx.server.replicas.clone();
        let server_generation = stats.flush_generation.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            if server_generation.load(Ordering::SeqCst) != generation {
                return; // a later flush_all replaced this one
            }
            let mut s = engine.session();
            // A request like any other: not in the middle of a transaction.
            let mut seat = GateSeat::new(0);
            engine.gate().enter(&mut seat).await;
            let order = match replicas.any() {
                true => Some(replicas.order().await),
                false => None,
            };
            let flushed = s.flush_all().await;
            if order.is_some() && flushed.is_ok() {
                replicas.feed_command(&[b"FLUSHALL"]);
            }
            drop(order);
            engine.gate().leave(&mut seat);
            let r = match flushed {
                Ok(()) => s.commit().await,
                Err(e) => Err(e),
            };
            if let Err(e) = r {
                tracing::warn!(error = %e, "delayed flush_all failed");
            }
        });
        ctx.line(noreply, b"OK");
        return;
    }
    match ctx.session.flush_all().await {
        Ok(()) => ctx.line(noreply, b"OK"),
        Err(e) => ctx.engine_error(noreply, &e),
    }
}

/// `version`
pub fn version(ctx: &mut Ctx<'_, '_>) {
    let line = format!("VERSION {VERSION}");
    ctx.line(false, line.as_bytes());
}

/// `verbosity <level> [noreply]`: accepted (logging is configured with
/// `RUST_LOG`), `OK`.
pub fn verbosity(req: &Req<'_>, ctx: &mut Ctx<'_, '_>) {
    let nt = req.ntokens();
    if nt != 3 && nt != 4 {
        ctx.line(false, b"ERROR");
        return;
    }
    let noreply = req.noreply();
    match strtoul32(req.tok(1)) {
        Some(_) => ctx.line(noreply, b"OK"),
        None => ctx.line(noreply, b"CLIENT_ERROR bad command line format"),
    }
}
