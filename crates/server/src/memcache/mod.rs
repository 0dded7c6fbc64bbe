//! The memcached protocol: the text protocol (`get gets gat gats set add
//! replace append prepend cas delete incr decr touch flush_all version
//! verbosity stats quit`, `noreply`) and the meta commands (`mg ms md ma mn
//! me`), per memcached's `doc/protocol.txt`, with memcached 1.6's replies
//! and error wording (its quirks included: numbers read like C `strtol`,
//! `incr` results padded in place, `bad data chunk` recovery).
//!
//! Map:
//! - [`parse`]: [`McParser`], one pass, resumable, token ranges into the
//!   read buffer; header checks, value limits and data-block framing.
//! - [`flags`]: number parsing, base64, the meta flag pre-pass.
//! - [`connection`]: [`McConnection`], one client: read, parse every
//!   buffered request, run them in one engine session, commit, one write.
//! - `storage`, `retrieval`, `arith`, `meta`, `misc`, `stats`: the
//!   commands, by family.
//!
//! Data model: an item is an engine [`Entry`](tiercache_engine::Entry):
//! its `flags` are memcached's client flags and its `cas` the cas unique,
//! both kept by the engine through every tier. Keys are shared with the
//! Redis protocol: a key written over RESP reads here with flags 0.
//!
//! Redis hashes (entries of kind
//! [`ValueKind::Hash`](tiercache_engine::ValueKind)) are not items here:
//! reads (`get gets gat gats mg me`) treat a hash key as a miss and leave it
//! untouched (no touch, no vivify); `incr`/`decr`/`ma` answer `CLIENT_ERROR
//! cannot increment or decrement non-numeric value` (memcached's reply for
//! an item arithmetic does not apply to) and `append`/`prepend` (also
//! through `ms`) `NOT_STORED` (memcached has no type error; that is its
//! reply when the data cannot be added to an item). `set`, `add`,
//! `replace`, `cas`, `delete`, `touch`, `md` and `ms` act on the key as on
//! any other: a set replaces the hash with a string.
//!
//! Deliberate differences from memcached (see `ARCHITECTURE.md`): the value limit is the server's `max_value_bytes`, not
//! memcached's 1 MiB item size; `mg` flags `h` and `l` are not tracked
//! (always `h0`, `l0`); stale items (`I`, `X`) are not kept: `md ... I`
//! deletes (recache tokens `W`/`Z` for `N` and `R` are kept, beside the
//! engine); the `k` echo of a key follows the request's form (memcached
//! follows the form the item was stored with); `stats` reports
//! tiercache's own counters.

pub mod connection;
pub mod flags;
pub mod parse;

mod arith;
mod meta;
mod misc;
mod replicate;
mod retrieval;
mod stats;
mod storage;

pub use connection::McConnection;
pub use parse::{McParser, Parsed, StoreCmd};
pub use stats::McStats;

use crate::state::ServerState;
use bytes::BytesMut;
use std::sync::Arc;
use tiercache_engine::{now_ms, Engine, EngineError, Session};

/// One request of a batch: its tokens (ranges into `buf`) and what the
/// parser made of it.
pub struct Req<'a> {
    buf: &'a [u8],
    tokens: &'a [(usize, usize)],
    parsed: Parsed,
}

impl<'a> Req<'a> {
    /// A request whose `tokens` index into `buf`.
    pub fn new(buf: &'a [u8], tokens: &'a [(usize, usize)], parsed: Parsed) -> Self {
        Req {
            buf,
            tokens,
            parsed,
        }
    }

    /// Token `i` (0 is the command).
    pub fn tok(&self, i: usize) -> &'a [u8] {
        let (s, e) = self.tokens[i];
        &self.buf[s..e]
    }

    /// The number of real tokens.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// True when the line has no token.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// memcached's `ntokens`: real tokens (capped at 23) plus the terminal one.
    pub fn ntokens(&self) -> usize {
        self.tokens.len().min(parse::MAX_TOKENS - 1) + 1
    }

    /// A byte range of the buffer (a data block).
    pub fn slice(&self, range: (usize, usize)) -> &'a [u8] {
        &self.buf[range.0..range.1]
    }

    /// The key a request acts on first (`tokens[1]`), for prefetching; any
    /// line with two tokens has one (a wrong guess costs a wasted load).
    pub fn key(&self) -> Option<&'a [u8]> {
        match self.parsed {
            Parsed::Reply { .. } => None,
            _ => (self.len() >= 2).then(|| self.tok(1)),
        }
    }

    /// What the parser made of the request.
    pub fn parsed(&self) -> Parsed {
        self.parsed
    }

    /// memcached's `set_noreply_maybe`: the last token is `noreply`.
    pub fn noreply(&self) -> bool {
        self.tokens
            .last()
            .is_some_and(|_| self.tok(self.len() - 1) == b"noreply")
    }
}

/// What the connection does after a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Go on.
    Continue,
    /// Send the replies so far, then close (`quit`, an HTTP request).
    Close,
}

/// Everything a command may touch.
pub struct Ctx<'a, 'e> {
    /// The batch's session: committed before any reply is written.
    pub session: &'a mut Session<'e>,
    /// The engine (delayed `flush_all` keeps a handle).
    pub engine: &'a Arc<Engine>,
    /// The connection's output buffer.
    pub out: &'a mut BytesMut,
    /// Server-wide state: settings, counters.
    pub server: &'a ServerState,
}

impl<'a> Ctx<'a, '_> {
    /// memcached's counters.
    pub fn stats(&self) -> &'a McStats {
        &self.server.memcache
    }

    /// Writes `text\r\n` unless `noreply`.
    pub fn line(&mut self, noreply: bool, text: &[u8]) {
        if !noreply {
            self.out.extend_from_slice(text);
            self.out.extend_from_slice(b"\r\n");
        }
    }

    /// Replies with an engine error as memcached words server failures.
    /// Cold and out of line: it is on every command's error path, and
    /// inlined there it would spread the request path over more of the
    /// instruction cache.
    #[cold]
    #[inline(never)]
    pub fn engine_error(&mut self, noreply: bool, e: &EngineError) {
        let msg = engine_error_message(e);
        self.line(noreply, msg.as_bytes());
    }
}

/// `SERVER_ERROR ...` for an engine failure (one line).
pub fn engine_error_message(e: &EngineError) -> String {
    let text = match e {
        EngineError::WriteBackFull(_) => "out of memory storing object".to_string(),
        other => other.to_string(),
    };
    format!("SERVER_ERROR {}", text.replace(['\r', '\n'], " "))
}

/// memcached's `REALTIME_MAXDELTA`: exptimes above it are absolute.
const REALTIME_MAXDELTA: i64 = 60 * 60 * 24 * 30;

/// An exptime as an engine expiry at `now` (Unix ms): 0 never expires, up
/// to 30 days is relative seconds, larger is an absolute Unix time, a
/// negative one (or an absolute time already past) is expired at once,
/// returned as `Some(1)` (long past).
pub fn expiry_from_exptime(exptime: i32, now: u64) -> Option<u64> {
    let e = i64::from(exptime);
    if e == 0 {
        None
    } else if e < 0 {
        Some(1)
    } else if e > REALTIME_MAXDELTA {
        let at = e as u64 * 1000;
        Some(if at <= now { 1 } else { at })
    } else {
        Some(now + e as u64 * 1000)
    }
}

/// [`expiry_from_exptime`] at the current time, reading the clock only
/// for an exptime that needs it (most items never expire).
pub fn expiry_now(exptime: i32) -> Option<u64> {
    // 0 (never) and negatives (already expired) do not depend on `now`.
    let now = if exptime > 0 { now_ms() } else { 0 };
    expiry_from_exptime(exptime, now)
}

/// Remaining time to live in whole seconds, rounded up (`-1`: never).
pub fn ttl_secs(expires_at: Option<u64>, now: u64) -> i64 {
    match expires_at {
        None => -1,
        Some(t) => t.saturating_sub(now).div_ceil(1000) as i64,
    }
}

/// Appends the decimal form of `n`.
pub fn push_u64(out: &mut BytesMut, n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// Runs one request; its reply goes to `ctx.out`.
pub async fn execute(req: &Req<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if ctx.server.replicas.any() {
        if let Some(target) = replicate::target(req) {
            return execute_fed(req, ctx, target).await;
        }
    }
    execute_request(req, ctx).await
}

/// A write with replicas attached: run and fed under the stream's order
/// lock (`replicate.rs`).
#[cold]
async fn execute_fed(req: &Req<'_>, ctx: &mut Ctx<'_, '_>, target: replicate::Target<'_>) -> Flow {
    let server = ctx.server;
    let _order = server.replicas.order().await;
    let flow = execute_request(req, ctx).await;
    replicate::feed(ctx, target).await;
    flow
}

async fn execute_request(req: &Req<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    match req.parsed {
        Parsed::Swallowed => Flow::Continue,
        Parsed::Reply {
            text,
            noreply,
            delete_key,
        } => {
            if delete_key {
                storage::drop_key(req, ctx).await;
            }
            if text.starts_with("SERVER_ERROR object too large") {
                ctx.stats().store_too_large.incr();
            }
            ctx.line(noreply, text.as_bytes());
            Flow::Continue
        }
        Parsed::Store {
            cmd,
            flags,
            exptime,
            cas,
            noreply,
            data,
        } => {
            let item = storage::Item {
                flags,
                exptime,
                cas,
                value: req.slice(data),
            };
            storage::run_classic(req, ctx, cmd, item, noreply).await;
            Flow::Continue
        }
        Parsed::MetaSet { flags, data } => {
            meta::ms(req, ctx, flags, req.slice(data)).await;
            Flow::Continue
        }
        Parsed::Line { meta } => dispatch(req, ctx, meta).await,
    }
}

async fn dispatch(
    req: &Req<'_>,
    ctx: &mut Ctx<'_, '_>,
    meta: Option<Result<flags::MetaFlags, &'static str>>,
) -> Flow {
    let cmd = req.tok(0);
    let nt = req.ntokens();
    let error = |ctx: &mut Ctx<'_, '_>| ctx.line(false, b"ERROR");
    if cmd.len() == 2 && cmd[0] == b'm' {
        match cmd[1] {
            b'g' => meta::mg(req, ctx, meta).await,
            b'd' => meta::md(req, ctx, meta).await,
            b'a' => meta::ma(req, ctx, meta).await,
            b'n' => ctx.line(false, b"MN"),
            b'e' => meta::me(req, ctx).await,
            _ => error(ctx),
        }
        return Flow::Continue;
    }
    match cmd {
        b"get" | b"gets" | b"gat" | b"gats" | b"bget" => {
            if nt < 3 {
                error(ctx);
            } else {
                retrieval::get(req, ctx).await;
            }
        }
        b"touch" => retrieval::touch(req, ctx).await,
        b"incr" | b"decr" => arith::incr_decr(req, ctx, cmd == b"incr").await,
        b"delete" => misc::delete(req, ctx).await,
        b"flush_all" => misc::flush_all(req, ctx).await,
        b"version" => misc::version(ctx),
        b"verbosity" => misc::verbosity(req, ctx),
        b"stats" => stats::run(req, ctx),
        b"quit" => return Flow::Close,
        b"shutdown" => ctx.line(false, b"ERROR: shutdown not enabled"),
        _ if req.tok(req.len() - 1).starts_with(b"HTTP/") => return Flow::Close,
        _ => error(ctx),
    }
    Flow::Continue
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exptimes_follow_memcached() {
        let now = 1_700_000_000_000;
        assert_eq!(expiry_from_exptime(0, now), None);
        assert_eq!(expiry_from_exptime(-1, now), Some(1));
        assert_eq!(expiry_from_exptime(10, now), Some(now + 10_000));
        assert_eq!(
            expiry_from_exptime(REALTIME_MAXDELTA as i32, now),
            Some(now + REALTIME_MAXDELTA as u64 * 1000)
        );
        // Larger: absolute Unix seconds, in the future or already past.
        assert_eq!(
            expiry_from_exptime(1_800_000_000, now),
            Some(1_800_000_000_000)
        );
        assert_eq!(expiry_from_exptime(1_600_000_000, now), Some(1));
        assert_eq!(ttl_secs(None, now), -1);
        assert_eq!(ttl_secs(Some(now + 99_001), now), 100);
        assert_eq!(ttl_secs(Some(now - 5), now), 0);
    }

    #[test]
    fn expiry_now_agrees_with_expiry_from_exptime() {
        assert_eq!(expiry_now(0), None);
        assert_eq!(expiry_now(-5), Some(1));
        assert_eq!(expiry_now(1_600_000_000), Some(1)); // an absolute time past
        assert_eq!(expiry_now(2_000_000_000), Some(2_000_000_000_000));
        let before = now_ms();
        let at = expiry_now(10).unwrap();
        assert!((before + 10_000..=now_ms() + 10_000).contains(&at), "{at}");
    }

    #[test]
    fn decimal_encoding() {
        for n in [0, 7, 10, 1234567890, u64::MAX] {
            let mut out = BytesMut::new();
            push_u64(&mut out, n);
            assert_eq!(&out[..], n.to_string().as_bytes());
        }
    }
}
