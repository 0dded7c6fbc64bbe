//! `INFO [section ...]`: Redis's sections `server clients memory stats
//! keyspace` plus `tiercache`, as one bulk string of `name:value` lines.

use super::{Args, Ctx, Flow};
use crate::resp::reply;
use std::fmt::Write;
use std::sync::atomic::Ordering;

const SECTIONS: [&str; 6] = [
    "server",
    "clients",
    "memory",
    "stats",
    "keyspace",
    "tiercache",
];

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let all = args.len() == 1
        || (1..args.len())
            .any(|i| args.is(i, "all") || args.is(i, "default") || args.is(i, "everything"));
    let wanted = |s: &str| all || (1..args.len()).any(|i| args.is(i, s));
    let stats = ctx.engine.stats();
    let server = ctx.server;
    let mut text = String::new();
    for section in SECTIONS.into_iter().filter(|s| wanted(s)) {
        if !text.is_empty() {
            text.push_str("\r\n");
        }
        // Writing to a String cannot fail.
        let t = &mut text;
        match section {
            "server" => {
                let _ = write!(
                    t,
                    "# Server\r\nredis_version:7.0.0\r\ntiercache_version:{}\r\nredis_mode:standalone\r\nos:{}\r\narch_bits:{}\r\nprocess_id:{}\r\ntcp_port:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\n",
                    env!("CARGO_PKG_VERSION"),
                    std::env::consts::OS,
                    usize::BITS,
                    std::process::id(),
                    server.port,
                    server.started.elapsed().as_secs(),
                    server.started.elapsed().as_secs() / 86_400,
                );
            }
            "clients" => {
                let _ = write!(
                    t,
                    "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\n",
                    server.connected.load(Ordering::Relaxed),
                    server.config.max_clients
                );
            }
            "memory" => {
                let _ = write!(
                    t,
                    "# Memory\r\nused_memory:{}\r\nmaxmemory:{}\r\nmaxmemory_policy:allkeys-lru\r\nmemory_entries:{}\r\n",
                    stats.memory_bytes, stats.memory_max_bytes, stats.memory_entries
                );
            }
            "stats" => {
                let _ = write!(
                    t,
                    "# Stats\r\ntotal_commands_processed:{}\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\nevicted_keys:{}\r\nexpired_keys:{}\r\n",
                    server.commands.load(Ordering::Relaxed),
                    stats.hits,
                    stats.misses,
                    stats.evictions,
                    stats.expired
                );
            }
            "keyspace" => {
                t.push_str("# Keyspace\r\n");
                match ctx.session.dbsize().await {
                    // Redis lists only non-empty databases.
                    Ok(0) => {}
                    Ok(n) => {
                        let _ = write!(t, "db0:keys={n},expires=0,avg_ttl=0\r\n");
                    }
                    Err(e) => {
                        ctx.engine_error(&e);
                        return Flow::Continue;
                    }
                }
            }
            _ => {
                let _ = write!(
                    t,
                    "# Tiercache\r\nwriteback_pending:{}\r\nwriteback_oldest_ms:{}\r\nflushes:{}\r\nflush_errors:{}\r\n",
                    stats.writeback_pending, stats.writeback_oldest_ms, stats.flushes, stats.flush_errors
                );
            }
        }
    }
    reply::bulk(ctx.out, text.as_bytes());
    Flow::Continue
}
