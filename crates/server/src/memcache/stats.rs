//! `stats`, `stats settings`, `stats reset`, and the counters behind them.
//!
//! The general `stats` reply uses memcached's names for what tiercache can
//! say truthfully: process and connection figures, per-command counters
//! kept by the memcached front end, and the engine's memory-tier figures
//! (`curr_items`, `bytes`, `limit_maxbytes`, `evictions` are the memory
//! tier's: items that live only in a store below it are not counted).
//! memcached's slab, LRU and thread internals have no counterpart and are
//! not reported.

use super::{push_u64, Ctx, Req};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A relaxed counter.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds one.
    pub fn incr(&self) {
        self.add(1);
    }

    /// Adds `n`.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// The current value.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    fn reset(&self) {
        self.0.store(0, Ordering::Relaxed);
    }
}

macro_rules! counters {
    ($($name:ident),* $(,)?) => {
        /// The memcached front end's counters, named as memcached names them.
        #[derive(Debug, Default)]
        #[allow(missing_docs)]
        pub struct McStats {
            $(pub $name: Counter,)*
            /// Connections accepted since start (not reset by `stats reset`).
            pub total_connections: Counter,
            /// Connections refused at the client limit.
            pub rejected_connections: Counter,
            /// Bumped by every `flush_all`: a delayed flush runs only if no
            /// later `flush_all` replaced it.
            pub flush_generation: std::sync::Arc<AtomicU64>,
            /// Meta-get win tokens handed out (`W`), by key, with the cas
            /// unique of the item they were won for: later `mg`s of that
            /// same item see `Z`. A new write (a new unique) ends it.
            pub tokens_sent: TokensSent,
        }

        impl McStats {
            fn write_counters(&self, out: &mut bytes::BytesMut) {
                $(stat(out, stringify!($name), self.$name.get());)*
            }

            fn reset(&self) {
                $(self.$name.reset();)*
            }
        }
    };
}

counters!(
    cmd_get,
    cmd_set,
    cmd_flush,
    cmd_touch,
    cmd_meta,
    get_hits,
    get_misses,
    get_expired,
    get_flushed,
    delete_misses,
    delete_hits,
    incr_misses,
    incr_hits,
    decr_misses,
    decr_hits,
    cas_misses,
    cas_hits,
    cas_badval,
    touch_hits,
    touch_misses,
    store_too_large,
    store_no_memory,
    auth_cmds,
    auth_errors,
    bytes_read,
    bytes_written,
    total_items,
);

/// memcached's per-item `ITEM_TOKEN_SENT` bit, kept beside the engine
/// (which knows nothing of leases): `(key → cas unique)` of items whose
/// recache token was won. Bounded: past [`TokensSent::MAX`] entries it is
/// cleared (a token may then be won again, which only costs a recache).
#[derive(Debug, Default)]
pub struct TokensSent(std::sync::Mutex<std::collections::HashMap<bytes::Bytes, u64>>);

impl TokensSent {
    /// Most entries kept.
    pub const MAX: usize = 1 << 16;

    /// Whether the token of `key`'s item `cas` was already won.
    pub fn sent(&self, key: &[u8], cas: u64) -> bool {
        let map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.get(key) == Some(&cas)
    }

    /// Records that the token of `key`'s item `cas` was won.
    pub fn mark(&self, key: &[u8], cas: u64) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= Self::MAX {
            map.clear();
        }
        map.insert(bytes::Bytes::copy_from_slice(key), cas);
    }
}

fn stat(out: &mut bytes::BytesMut, name: &str, value: u64) {
    out.extend_from_slice(b"STAT ");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b" ");
    push_u64(out, value);
    out.extend_from_slice(b"\r\n");
}

fn stat_str(out: &mut bytes::BytesMut, name: &str, value: &str) {
    out.extend_from_slice(b"STAT ");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b" ");
    out.extend_from_slice(value.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// `stats [settings|reset|items|slabs|sizes|conns]`.
pub fn run(req: &Req<'_>, ctx: &mut Ctx<'_, '_>) {
    if req.len() == 1 {
        general(ctx);
        return;
    }
    match req.tok(1) {
        b"reset" => {
            ctx.stats().reset();
            ctx.line(false, b"RESET");
        }
        b"settings" => settings(ctx),
        // memcached's slab and connection tables have no counterpart here.
        b"items" | b"slabs" | b"sizes" | b"conns" => ctx.line(false, b"END"),
        b"detail" => ctx.line(false, b"CLIENT_ERROR usage: stats detail on|off|dump"),
        _ => ctx.line(false, b"ERROR"),
    }
}

fn general(ctx: &mut Ctx<'_, '_>) {
    let server = ctx.server;
    let engine = ctx.engine.stats();
    let s = &server.memcache;
    let out = &mut *ctx.out;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    stat(out, "pid", u64::from(std::process::id()));
    stat(out, "uptime", server.started.elapsed().as_secs());
    stat(out, "time", now);
    stat_str(out, "version", super::misc::VERSION);
    stat(out, "pointer_size", usize::BITS as u64);
    stat(out, "max_connections", server.config.max_clients as u64);
    stat(
        out,
        "curr_connections",
        server.connected.load(Ordering::Relaxed),
    );
    stat(out, "total_connections", s.total_connections.get());
    stat(out, "rejected_connections", s.rejected_connections.get());
    s.write_counters(out);
    stat(out, "limit_maxbytes", engine.memory_max_bytes);
    stat(
        out,
        "threads",
        std::thread::available_parallelism().map_or(1, |n| n.get()) as u64,
    );
    stat(out, "bytes", engine.memory_bytes);
    stat(out, "curr_items", engine.memory_entries);
    stat(out, "evictions", engine.evictions);
    stat(out, "expired", engine.expired);
    stat(out, "writeback_pending", engine.writeback_pending);
    out.extend_from_slice(b"END\r\n");
}

fn settings(ctx: &mut Ctx<'_, '_>) {
    let server = ctx.server;
    let engine = ctx.engine.stats();
    let out = &mut *ctx.out;
    stat(out, "maxbytes", engine.memory_max_bytes);
    stat(out, "maxconns", server.config.max_clients as u64);
    stat(out, "tcpport", u64::from(server.port));
    stat_str(out, "evictions", "on");
    stat_str(out, "cas_enabled", "yes");
    stat(
        out,
        "item_size_max",
        server.config.limits.max_bulk_len as u64,
    );
    stat(out, "idle_timeout", server.config.idle_timeout.as_secs());
    stat_str(out, "flush_enabled", "yes");
    stat_str(out, "binding_protocol", "ascii");
    out.extend_from_slice(b"END\r\n");
}
