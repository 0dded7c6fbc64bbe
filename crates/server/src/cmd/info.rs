//! `INFO [section ...]`: Redis's sections `server clients memory
//! persistence stats replication commandstats errorstats keyspace` plus
//! `tiercache` (all but `commandstats` by default, as Redis), as one text of
//! `name:value` lines (a verbatim string in RESP3, as Redis 7 sends it).
//! `keyspace` counts the whole key space (write-back data is flushed
//! first), with the real number of keys that have an expiry.

use super::{Args, Ctx, Flow, REDIS_VERSION};
use crate::pubsub::Space;
use crate::resp::reply;
use std::fmt::Write;
use std::sync::atomic::Ordering;

const SECTIONS: [&str; 11] = [
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "commandstats",
    "errorstats",
    "keyspace",
    "tiercache",
];

/// System and user CPU seconds of `who` (`getrusage`), zeros if it fails.
fn cpu_seconds(who: libc::c_int) -> (f64, f64) {
    // SAFETY: `getrusage` writes a `rusage` into the zeroed one it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(who, &mut usage) != 0 {
            return (0.0, 0.0);
        }
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(usage.ru_stime), secs(usage.ru_utime))
}

/// `1.50M`-style sizes, as Redis's `bytesToHuman`.
fn human(n: u64) -> String {
    let n = n as f64;
    match n {
        n if n < 1024.0 => format!("{n}B"),
        n if n < 1024.0 * 1024.0 => format!("{:.2}K", n / 1024.0),
        n if n < 1024.0 * 1024.0 * 1024.0 => format!("{:.2}M", n / (1024.0 * 1024.0)),
        n => format!("{:.2}G", n / (1024.0 * 1024.0 * 1024.0)),
    }
}

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let all = (1..args.len()).any(|i| args.is(i, "all") || args.is(i, "everything"));
    let default = args.len() == 1 || (1..args.len()).any(|i| args.is(i, "default"));
    // As in Redis, `commandstats` is in `all` but not in the default set.
    let wanted =
        |s: &str| all || (default && s != "commandstats") || (1..args.len()).any(|i| args.is(i, s));
    let stats = ctx.engine.stats();
    let server = ctx.server;
    let uptime = server.started.elapsed().as_secs();
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
                    "# Server\r\nredis_version:{REDIS_VERSION}\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_mode:standalone\r\ntiercache_version:{}\r\nos:{}\r\narch_bits:{}\r\nmultiplexing_api:epoll\r\nprocess_id:{}\r\nrun_id:{:040x}\r\ntcp_port:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\nhz:10\r\nconfigured_hz:10\r\n",
                    env!("CARGO_PKG_VERSION"),
                    std::env::consts::OS,
                    usize::BITS,
                    std::process::id(),
                    server.started.elapsed().as_nanos() ^ std::process::id() as u128,
                    server.port,
                    uptime,
                    uptime / 86_400,
                );
            }
            "clients" => {
                let _ = write!(
                    t,
                    "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\nblocked_clients:{}\r\ntracking_clients:0\r\n",
                    server.connected.load(Ordering::Relaxed),
                    server.config.max_clients,
                    server.blocked_clients.load(Ordering::Relaxed),
                );
            }
            "memory" => {
                let _ = write!(
                    t,
                    "# Memory\r\nused_memory:{}\r\nused_memory_human:{}\r\nmaxmemory:{}\r\nmaxmemory_human:{}\r\nmaxmemory_policy:allkeys-lru\r\nmemory_entries:{}\r\n",
                    stats.memory_bytes,
                    human(stats.memory_bytes),
                    stats.memory_max_bytes,
                    human(stats.memory_max_bytes),
                    stats.memory_entries
                );
                let (lua, scripts, script_bytes) = server.scripts.memory();
                let (libraries, functions, function_bytes) = {
                    let registry = server.scripts.functions.registry();
                    let (libraries, functions) = registry.counts();
                    let bytes: usize = registry.libraries.values().map(|l| l.code.len()).sum();
                    (libraries, functions, bytes)
                };
                let all_bytes = script_bytes + function_bytes;
                let _ = write!(
                    t,
                    "used_memory_lua:{lua}\r\nused_memory_lua_human:{}\r\nused_memory_scripts_eval:{script_bytes}\r\nnumber_of_cached_scripts:{scripts}\r\nnumber_of_functions:{functions}\r\nnumber_of_libraries:{libraries}\r\nused_memory_functions:{function_bytes}\r\nused_memory_scripts:{all_bytes}\r\nused_memory_scripts_human:{}\r\n",
                    human(lua),
                    human(all_bytes as u64),
                );
            }
            "persistence" => {
                let saves = &server.saves;
                let _ = write!(
                    t,
                    "# Persistence\r\nloading:0\r\nasync_loading:0\r\nrdb_changes_since_last_save:{}\r\nrdb_bgsave_in_progress:{}\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:{}\r\naof_enabled:{}\r\naof_rewrite_in_progress:0\r\n",
                    saves.changes_since(stats.writes),
                    u8::from(saves.in_progress()),
                    saves.last_save(),
                    if saves.last_failed() { "err" } else { "ok" },
                    // The write-back journal is the append-only file.
                    u8::from(ctx.engine.journals_writes()),
                );
            }
            "stats" => {
                let _ = write!(
                    t,
                    "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\npubsub_channels:{}\r\npubsub_patterns:{}\r\npubsubshard_channels:{}\r\nevicted_keys:{}\r\nexpired_keys:{}\r\nmigrate_cached_sockets:0\r\ntotal_error_replies:{}\r\n",
                    server.connections_received.load(Ordering::Relaxed),
                    server.commands.load(Ordering::Relaxed),
                    stats.hits,
                    stats.misses,
                    server.pubsub.len(Space::Channel),
                    server.pubsub.len(Space::Pattern),
                    server.pubsub.len(Space::Shard),
                    stats.evictions,
                    stats.expired,
                    server.error_counts().0
                );
            }
            "cpu" => {
                let (sys, user) = cpu_seconds(libc::RUSAGE_SELF);
                let (sys_children, user_children) = cpu_seconds(libc::RUSAGE_CHILDREN);
                let _ = write!(
                    t,
                    "# CPU\r\nused_cpu_sys:{sys:.6}\r\nused_cpu_user:{user:.6}\r\nused_cpu_sys_children:{sys_children:.6}\r\nused_cpu_user_children:{user_children:.6}\r\n",
                );
            }
            "commandstats" => {
                t.push_str("# Commandstats\r\n");
                for (index, c) in server.command_stats.totals() {
                    let per_call = if c.calls == 0 {
                        0.0
                    } else {
                        c.usec as f64 / c.calls as f64
                    };
                    let _ = write!(
                        t,
                        "cmdstat_{}:calls={},usec={},usec_per_call={per_call:.2},rejected_calls={},failed_calls={}\r\n",
                        super::COMMANDS[index].name, c.calls, c.usec, c.rejected, c.failed
                    );
                }
            }
            "errorstats" => {
                t.push_str("# Errorstats\r\n");
                for (code, n) in server.error_counts().1 {
                    let _ = write!(t, "errorstat_{code}:count={n}\r\n");
                }
            }
            "replication" => {
                // A primary, with the replicas attached now (no backlog).
                let replicas = ctx.server.replicas.list();
                let offset = ctx.server.replicas.offset();
                t.push_str("# Replication\r\nrole:master\r\n");
                t.push_str(&format!("connected_slaves:{}\r\n", replicas.len()));
                for (i, r) in replicas.iter().enumerate() {
                    t.push_str(&format!(
                        "slave{i}:ip={},port={},state=online,offset={},lag=0\r\n",
                        r.ip, r.port, r.acked
                    ));
                }
                t.push_str(&format!(
                    "master_failover_state:no-failover\r\nmaster_replid:{}\r\nmaster_replid2:0000000000000000000000000000000000000000\r\nmaster_repl_offset:{offset}\r\nsecond_repl_offset:-1\r\nrepl_backlog_active:0\r\n",
                    ctx.server.replicas.replid()
                ));
            }
            "keyspace" => {
                t.push_str("# Keyspace\r\n");
                match ctx.session.key_stats().await {
                    // Redis lists only non-empty databases.
                    Ok(k) if k.keys == 0 => {}
                    Ok(k) => {
                        let _ = write!(
                            t,
                            "db0:keys={},expires={},avg_ttl={}\r\n",
                            k.keys, k.expires, k.avg_ttl_ms
                        );
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
                    "# Tiercache\r\nwriteback_pending:{}\r\nwriteback_oldest_ms:{}\r\nflushes:{}\r\nflush_errors:{}\r\nstore_lookups_skipped:{}\r\n",
                    stats.writeback_pending, stats.writeback_oldest_ms, stats.flushes, stats.flush_errors,
                    stats.store_lookups_skipped
                );
            }
        }
    }
    reply::verbatim(ctx.out, text.as_bytes(), ctx.client.proto);
    Flow::Continue
}
