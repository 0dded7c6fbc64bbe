//! `CONFIG GET pattern [pattern ...]`, `CONFIG SET name value [name value
//! ...]`, `CONFIG RESETSTAT`, `CONFIG REWRITE`: the parameters clients and
//! tools ask for, read from the running server.
//!
//! `CONFIG SET` changes what can change at run time (`requirepass`,
//! `timeout`) and accepts the others only when the value is the one in
//! force (tools often "set" `save ""` or `appendonly no`); anything else is
//! refused in Redis's words rather than accepted and ignored. The one
//! exception is the encoding thresholds (`list-max-listpack-size`,
//! `hash-max-listpack-entries`, ...): any valid integer is accepted and
//! reported back by `CONFIG GET`. The hash, set and sorted set ones change
//! only what `OBJECT ENCODING` reports, since each type has one encoding
//! here (Redis's own test suite sets and restores them around tests); the
//! stream ones (`stream-node-max-entries`, `stream-node-max-bytes`) decide
//! where a stream starts a new node, as in Redis, which approximate
//! trimming and `XINFO STREAM` show; `hll-sparse-max-bytes` where a
//! HyperLogLog turns dense.

use super::{
    arity_error, glob_match, parse_i64, unknown_subcommand, Args, Ctx, Flow, SYNTAX_ERROR,
};
use crate::hash::{LISTPACK_MAX_ENTRIES, LISTPACK_MAX_VALUE};
use crate::hll::SPARSE_MAX_BYTES;
use crate::resp::reply;
use std::time::Duration;

/// How a parameter reacts to `CONFIG SET`.
#[derive(Clone, Copy)]
enum Set {
    /// Redis cannot change it either.
    Immutable,
    /// Changes the idle client timeout.
    Timeout,
    /// Changes the password.
    Requirepass,
    /// Changes the keyspace notification classes.
    NotifyKeyspaceEvents,
    /// `slowlog-log-slower-than`: microseconds, -1 and up.
    SlowlogThreshold,
    /// `slowlog-max-len`: entries, 0 and up.
    SlowlogMaxLen,
    /// A byte size (`100mb`); only the current value is accepted.
    Memory,
    /// `yes`/`no`; only the current value.
    Bool,
    /// One of these words; only the current value.
    OneOf(&'static [&'static str]),
    /// An integer; only the current value.
    Int,
    /// Only the current value, verbatim.
    Same,
    /// An encoding threshold (canonical name, accepted values): any
    /// accepted value is kept.
    Tunable(&'static str, Range),
}

/// Encoding thresholds: name as clients write it, canonical name (Redis 7
/// aliases the old `ziplist` names), Redis 7.0's default, accepted values.
/// The list ones change nothing; the hash, set and sorted set ones decide
/// what `OBJECT ENCODING` says; the stream ones where nodes end; the HLL
/// one when a sparse HLL turns dense.
#[rustfmt::skip]
const TUNABLES: &[(&str, &str, i64, Range)] = &[
    ("list-max-listpack-size", "list-max-listpack-size", -2, INT),
    ("list-max-ziplist-size", "list-max-listpack-size", -2, INT),
    ("list-compress-depth", "list-compress-depth", 0, Range::Int(0, i32::MAX as i64)),
    ("set-max-intset-entries", "set-max-intset-entries", 512, SIZE),
    ("zset-max-listpack-entries", "zset-max-listpack-entries", 128, SIZE),
    ("zset-max-ziplist-entries", "zset-max-listpack-entries", 128, SIZE),
    ("zset-max-listpack-value", "zset-max-listpack-value", 64, Range::Memory),
    ("zset-max-ziplist-value", "zset-max-listpack-value", 64, Range::Memory),
    ("stream-node-max-entries", "stream-node-max-entries", 100, SIZE),
    ("stream-node-max-bytes", "stream-node-max-bytes", 4096, Range::Memory),
    ("hash-max-listpack-entries", "hash-max-listpack-entries", LISTPACK_MAX_ENTRIES, SIZE),
    ("hash-max-ziplist-entries", "hash-max-listpack-entries", LISTPACK_MAX_ENTRIES, SIZE),
    ("hash-max-listpack-value", "hash-max-listpack-value", LISTPACK_MAX_VALUE, Range::Memory),
    ("hash-max-ziplist-value", "hash-max-listpack-value", LISTPACK_MAX_VALUE, Range::Memory),
    ("hll-sparse-max-bytes", "hll-sparse-max-bytes", SPARSE_MAX_BYTES, Range::Memory),
    ("busy-reply-threshold", "busy-reply-threshold", 5000, Range::Int(0, i64::MAX)),
    ("lua-time-limit", "busy-reply-threshold", 5000, Range::Int(0, i64::MAX)),
    // Read when the first replica attaches (`crate::replication`).
    ("repl-ping-replica-period", "repl-ping-replica-period", 10, Range::Int(1, i32::MAX as i64)),
    ("repl-ping-slave-period", "repl-ping-replica-period", 10, Range::Int(1, i32::MAX as i64)),
    // Writes are refused (`NOREPLICAS`) with fewer good replicas.
    ("min-replicas-to-write", "min-replicas-to-write", 0, Range::Int(0, i32::MAX as i64)),
    ("min-slaves-to-write", "min-replicas-to-write", 0, Range::Int(0, i32::MAX as i64)),
    ("min-replicas-max-lag", "min-replicas-max-lag", 10, Range::Int(0, i32::MAX as i64)),
    ("min-slaves-max-lag", "min-replicas-max-lag", 10, Range::Int(0, i32::MAX as i64)),
];

/// The values an encoding threshold accepts.
#[derive(Clone, Copy)]
enum Range {
    /// An integer between the two, inclusive.
    Int(i64, i64),
    /// A byte size with an optional unit (`1kb`), as Redis's `*-value`
    /// thresholds, up to `i64::MAX`.
    Memory,
}
/// A C `int`.
const INT: Range = Range::Int(i32::MIN as i64, i32::MAX as i64);
/// A non-negative `long long` (Redis's size parameters).
const SIZE: Range = Range::Int(0, i64::MAX);

const POLICIES: &[&str] = &[
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];

/// Every parameter: name, current value, and how `CONFIG SET` treats it.
fn params(ctx: &Ctx<'_, '_>) -> Vec<(&'static str, String, Set)> {
    let config = &ctx.server.config;
    let mut params = vec![
        (
            "maxmemory",
            ctx.engine.stats().memory_max_bytes.to_string(),
            Set::Memory,
        ),
        (
            "maxmemory-policy",
            "allkeys-lru".into(),
            Set::OneOf(POLICIES),
        ),
        ("maxclients", config.max_clients.to_string(), Set::Int),
        (
            "timeout",
            ctx.server.idle_timeout().as_secs().to_string(),
            Set::Timeout,
        ),
        (
            "requirepass",
            String::from_utf8_lossy(&ctx.server.requirepass()).into_owned(),
            Set::Requirepass,
        ),
        ("save", String::new(), Set::Same),
        // The write-back journal is the append-only file.
        (
            "appendonly",
            if ctx.engine.journals_writes() {
                "yes"
            } else {
                "no"
            }
            .into(),
            Set::Bool,
        ),
        (
            "appendfsync",
            "everysec".into(),
            Set::OneOf(&["always", "everysec", "no"]),
        ),
        ("databases", "1".into(), Set::Immutable),
        ("port", ctx.server.port.to_string(), Set::Int),
        ("daemonize", "no".into(), Set::Immutable),
        ("replicaof", String::new(), Set::Same),
        ("slaveof", String::new(), Set::Same),
        (
            "proto-max-bulk-len",
            config.limits.max_bulk_len.to_string(),
            Set::Memory,
        ),
        (
            "notify-keyspace-events",
            crate::notify::format_flags(ctx.server.keyspace_events.flags()),
            Set::NotifyKeyspaceEvents,
        ),
        ("cluster-enabled", "no".into(), Set::Immutable),
        (
            "slowlog-log-slower-than",
            ctx.server.slowlog.threshold_us().to_string(),
            Set::SlowlogThreshold,
        ),
        (
            "slowlog-max-len",
            ctx.server.slowlog.max_len().to_string(),
            Set::SlowlogMaxLen,
        ),
        // The latency monitor is not built: off, as in Redis by default.
        ("latency-monitor-threshold", "0".into(), Set::Int),
        ("replica-read-only", "yes".into(), Set::Bool),
        ("slave-read-only", "yes".into(), Set::Bool),
        ("lazyfree-lazy-user-flush", "no".into(), Set::Bool),
    ];
    for &(name, canonical, default, range) in TUNABLES {
        let value = ctx.server.tunable(canonical, default);
        params.push((name, value.to_string(), Set::Tunable(canonical, range)));
    }
    params
}

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if args.is(1, "get") {
        if args.len() < 3 {
            reply::error(ctx.out, &arity_error("config|get"));
        } else {
            get(args, ctx);
        }
    } else if args.is(1, "set") {
        if args.len() < 4 {
            reply::error(ctx.out, &arity_error("config|set"));
        } else if args.len() % 2 == 1 {
            reply::error(ctx.out, SYNTAX_ERROR);
        } else {
            set(args, ctx);
        }
    } else if args.is(1, "resetstat") {
        if args.len() != 2 {
            reply::error(ctx.out, &arity_error("config|resetstat"));
        } else {
            ctx.server.reset_error_counts();
            ctx.server.command_stats.reset();
            reply::ok(ctx.out);
        }
    } else if args.is(1, "rewrite") {
        reply::error(ctx.out, "ERR The server is running without a config file");
    } else {
        reply::error(ctx.out, &unknown_subcommand(args.get(1), "config"));
    }
    Flow::Continue
}

fn get(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) {
    let params = params(ctx);
    // Each parameter once, even when several patterns match it.
    let matched: Vec<&(&str, String, Set)> = params
        .iter()
        .filter(|(name, _, _)| {
            (2..args.len()).any(|i| glob_match(args.get(i), name.as_bytes(), true))
        })
        .collect();
    reply::map(ctx.out, matched.len(), ctx.client.proto);
    for (name, value, _) in matched {
        reply::bulk(ctx.out, name.as_bytes());
        reply::bulk(ctx.out, value.as_bytes());
    }
}

fn set(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) {
    let params = params(ctx);
    // Names first, as Redis: an unknown or repeated name is reported
    // before any value is looked at.
    let mut seen: Vec<&str> = Vec::new();
    for i in (2..args.len()).step_by(2) {
        let found = params
            .iter()
            .find(|(name, _, _)| args.get(i).eq_ignore_ascii_case(name.as_bytes()));
        match found {
            None => {
                let msg = format!(
                    "ERR Unknown option or number of arguments for CONFIG SET - '{}'",
                    args.text(i)
                );
                return reply::error(ctx.out, &msg);
            }
            Some((name, _, _)) if seen.contains(name) => {
                let msg = format!(
                    "ERR CONFIG SET failed (possibly related to argument '{name}') - duplicate parameter"
                );
                return reply::error(ctx.out, &msg);
            }
            Some((name, _, _)) => seen.push(name),
        }
    }
    let mut changes: Vec<(Set, &[u8])> = Vec::new();
    for i in (2..args.len()).step_by(2) {
        let Some((name, current, how)) = params
            .iter()
            .find(|(name, _, _)| args.get(i).eq_ignore_ascii_case(name.as_bytes()))
        else {
            reply::error(
                ctx.out,
                &format!(
                    "ERR Unknown option or number of arguments for CONFIG SET - '{}'",
                    args.text(i)
                ),
            );
            return;
        };
        let fail = |ctx: &mut Ctx<'_, '_>, msg: &str| {
            reply::error(
                ctx.out,
                &format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {msg}"),
            );
        };
        let value = args.get(i + 1);
        let text = String::from_utf8_lossy(value);
        let fixed = "tiercache cannot change this at run time (set it in the configuration file)";
        let same = match *how {
            Set::Immutable => return fail(ctx, "can't set immutable config"),
            Set::Timeout => match text.parse::<i64>() {
                Ok(n) if (0..=2_147_483_647).contains(&n) => true,
                Ok(_) => return fail(ctx, "argument must be between 0 and 2147483647 inclusive"),
                Err(_) => return fail(ctx, "argument couldn't be parsed into an integer"),
            },
            Set::Requirepass => true,
            Set::NotifyKeyspaceEvents => match crate::notify::parse_flags(&text) {
                Some(_) => true,
                None => return fail(ctx, "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."),
            },
            Set::SlowlogThreshold => match tunable_value(value, Range::Int(-1, i64::MAX)) {
                Ok(_) => true,
                Err(msg) => return fail(ctx, &msg),
            },
            Set::SlowlogMaxLen => match tunable_value(value, SIZE) {
                Ok(_) => true,
                Err(msg) => return fail(ctx, &msg),
            },
            Set::Memory => match memory_value(&text) {
                Some(v) => v.to_string() == *current,
                None => return fail(ctx, "argument must be a memory value"),
            },
            Set::Bool => match text.to_ascii_lowercase().as_str() {
                v @ ("yes" | "no") => v == current,
                _ => return fail(ctx, "argument must be 'yes' or 'no'"),
            },
            Set::OneOf(words) => {
                let v = text.to_ascii_lowercase();
                if !words.contains(&v.as_str()) {
                    return fail(
                        ctx,
                        &format!(
                            "argument(s) must be one of the following: {}",
                            words.join(", ")
                        ),
                    );
                }
                v == *current
            }
            Set::Int => match text.parse::<i64>() {
                Ok(n) => n.to_string() == *current,
                Err(_) => return fail(ctx, "argument couldn't be parsed into an integer"),
            },
            Set::Same => text == *current,
            Set::Tunable(_, range) => match tunable_value(value, range) {
                Ok(_) => true,
                Err(msg) => return fail(ctx, &msg),
            },
        };
        if !same {
            return fail(ctx, fixed);
        }
        changes.push((*how, value));
    }
    // Everything checked: apply all or nothing.
    for (how, value) in changes {
        match how {
            Set::Timeout => {
                let secs: u64 = String::from_utf8_lossy(value).parse().unwrap_or(0);
                ctx.server.set_idle_timeout(Duration::from_secs(secs));
            }
            Set::Requirepass => ctx.server.set_requirepass(value),
            Set::SlowlogThreshold => {
                if let Ok(us) = tunable_value(value, Range::Int(-1, i64::MAX)) {
                    ctx.server.slowlog.set_threshold_us(us);
                }
            }
            Set::SlowlogMaxLen => {
                if let Ok(len) = tunable_value(value, SIZE) {
                    ctx.server.slowlog.set_max_len(len as u64);
                }
            }
            Set::NotifyKeyspaceEvents => {
                let flags = crate::notify::parse_flags(&String::from_utf8_lossy(value));
                ctx.server.keyspace_events.set_flags(flags.unwrap_or(0));
            }
            Set::Tunable(name, range) => {
                if let Ok(n) = tunable_value(value, range) {
                    ctx.server.set_tunable(name, n);
                }
            }
            _ => {}
        }
    }
    reply::ok(ctx.out);
}

/// The value `CONFIG SET` gives a threshold, or the reason in Redis's words.
fn tunable_value(value: &[u8], range: Range) -> Result<i64, String> {
    match range {
        Range::Int(min, max) => match parse_i64(value) {
            Some(n) if (min..=max).contains(&n) => Ok(n),
            Some(_) => Err(format!(
                "argument must be between {min} and {max} inclusive"
            )),
            None => Err("argument couldn't be parsed into an integer".into()),
        },
        Range::Memory => match memory_value(&String::from_utf8_lossy(value)) {
            Some(n) => i64::try_from(n)
                .map_err(|_| format!("argument must be between 0 and {} inclusive", i64::MAX)),
            None => Err("argument must be a memory value".into()),
        },
    }
}

/// Redis's `memtoull`: a number with an optional unit (`k`=1000,
/// `kb`=1024, `m`, `mb`, `g`, `gb`; any case).
pub(super) fn memory_value(s: &str) -> Option<u64> {
    let lower = s.to_ascii_lowercase();
    let digits_end = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (num, unit) = lower.split_at(digits_end);
    let mul: u64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    num.parse::<u64>().ok()?.checked_mul(mul)
}

#[cfg(test)]
mod tests {
    use super::memory_value;

    #[test]
    fn memory_units() {
        assert_eq!(memory_value("100mb"), Some(100 << 20));
        assert_eq!(memory_value("1k"), Some(1000));
        assert_eq!(memory_value("7"), Some(7));
        assert_eq!(memory_value("1GB"), Some(1 << 30));
        assert_eq!(memory_value("abc"), None);
        assert_eq!(memory_value("-1"), None);
    }
}
