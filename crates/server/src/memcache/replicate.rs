//! Feeding replicas (`crate::replication`) the writes made through the
//! memcached protocol. A Redis replica knows neither flags nor cas
//! uniques, so a write is fed as the state it left: under the stream's
//! order lock the request runs, then its key is read back and fed as `SET
//! key value [PXAT ms]`, or `DEL key` when the key is gone (an expired
//! `set`, a `delete`, a miss: harmless on the replica). `flush_all` is
//! fed as `FLUSHALL` (a delayed one when it happens, `misc.rs`).
//!
//! With no replica attached a request pays one atomic load.

use super::{Ctx, Parsed, Req};
use bytes::Bytes;
use tiercache_engine::ValueKind;

/// What a request changes, for replicas.
pub(super) enum Target<'a> {
    /// One key.
    Key(&'a [u8]),
    /// Everything (`flush_all` without a delay).
    All,
}

/// What `req` may change: `None` for a read (or a `flush_all` with a
/// delay, fed when it runs).
pub(super) fn target<'a>(req: &Req<'a>) -> Option<Target<'a>> {
    let key = || req.key().map(Target::Key);
    match req.parsed() {
        Parsed::Swallowed => None,
        Parsed::Reply { delete_key, .. } => delete_key.then(key).flatten(),
        Parsed::Store { .. } | Parsed::MetaSet { .. } => key(),
        Parsed::Line { .. } => match req.tok(0) {
            b"touch" | b"incr" | b"decr" | b"delete" | b"gat" | b"gats" | b"md" | b"ma" => key(),
            // `mg` writes only when it touches (`T`) or vivifies (`N`).
            b"mg" => (2..req.len())
                .any(|i| matches!(req.tok(i).first(), Some(b'T' | b'N')))
                .then(key)
                .flatten(),
            b"flush_all"
                if req.ntokens() == 2 || req.tok(1) == b"noreply" || req.tok(1) == b"0" =>
            {
                Some(Target::All)
            }
            _ => None,
        },
    }
}

/// Feeds the state `target` is in now (call under the order lock, after
/// the request ran).
pub(super) async fn feed(ctx: &mut Ctx<'_, '_>, target: Target<'_>) {
    let replicas = &ctx.server.replicas;
    let key = match target {
        Target::All => return replicas.feed_command(&[b"FLUSHALL"]),
        Target::Key(key) => key,
    };
    match ctx.session.get(key).await {
        Ok(Some(e)) if e.kind == ValueKind::String => match e.expires_at {
            Some(at) => {
                let at = at.to_string();
                replicas.feed_command(&[b"SET", key, &e.value, b"PXAT", at.as_bytes()]);
            }
            None => replicas.feed_command(&[b"SET", key, &e.value]),
        },
        // A collection written through RESP: the memcached request could
        // not change it.
        Ok(Some(_)) => {}
        Ok(None) => replicas.feed_command(&[b"DEL", key]),
        // A store that did not answer: the write failed with it, or the
        // key's state is unknown; the replica keeps what it had.
        Err(e) => {
            tracing::warn!(error = %e, key = ?Bytes::copy_from_slice(key), "not fed to replicas")
        }
    }
}
