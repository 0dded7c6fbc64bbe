//! `DEBUG`: the subcommands of Redis's debugging command that mean
//! something here, behind Redis 7's `enable-debug-command` (`[server]
//! enable_debug_command`, refused by default):
//!
//! - `SLEEP seconds`: this client waits (Redis stops the whole server; here
//!   other clients are served meanwhile).
//! - `SET-ACTIVE-EXPIRE 0|1`: pauses or resumes the engine's active expiry.
//! - `RELOAD` and `LOADAOF`: what a restart leaves: everything queued is
//!   written back and the memory tier forgets what the stores hold, so
//!   that reads load it again ([`Engine::reload_from_stores`]).
//! - `OBJECT key`: Redis's line, with the value's address, its encoding,
//!   its serialized length (its `DUMP` payload's RDB object); access times
//!   are not tracked here, so `lru` is the clock now and
//!   `lru_seconds_idle` 0, and lists do not add the `ql_*` fields.
//! - `CHANGE-REPL-ID`: there is no replication, so nothing to change.
//!
//! [`Engine::reload_from_stores`]: tiercache_engine::Engine::reload_from_stores

use super::subcommand::{reply_help, subcommand_syntax};
use super::{Args, Ctx, Flow};
use crate::config::DebugCommand;
use crate::digest;
use crate::resp::reply;
use crate::resp::Proto;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The subcommands and their arities (`DEBUG` has no subcommand table in
/// Redis: these are its own argument checks).
const SUBCOMMANDS: &[(&str, i32)] = &[
    ("sleep", 3),
    ("set-active-expire", 3),
    ("reload", -2),
    ("loadaof", 2),
    ("object", 3),
    ("change-repl-id", 2),
    ("digest", 2),
    ("digest-value", -2),
    ("quicklist-packed-threshold", 3),
    ("set-disable-deny-scripts", 3),
    ("protocol", 3),
    ("help", 2),
];

const HELP: &[&str] = &[
    "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANGE-REPL-ID",
    "    Change the replication IDs of the instance.",
    "    Dangerous: should be used only for testing the replication subsystem.",
    "DIGEST",
    "    Output a hex signature representing the current DB content.",
    "DIGEST-VALUE <key> [<key> ...]",
    "    Output a hex signature of the values of all the specified keys.",
    "LOADAOF",
    "    Flush the AOF buffers on disk and reload the AOF in memory.",
    "OBJECT <key>",
    "    Show low level info about the `key` and associated value.",
    "PROTOCOL <type>",
    "    Reply with a test value of the specified type. <type> can be: string,",
    "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
    "    true, false.",
    "RELOAD [option ...]",
    "    Save the RDB on disk and reload it back to memory.",
    "SET-ACTIVE-EXPIRE <0|1>",
    "    Setting it to 0 disables expiring keys in background when they are not",
    "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
    "    default.",
    "QUICKLIST-PACKED-THRESHOLD <size>",
    "    Sets the threshold for elements to be inserted as plain vs packed nodes",
    "    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "HELP",
    "    Prints this help.",
];

/// Redis 7.0's refusal.
const NOT_ALLOWED: &str = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.";

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let allowed = match ctx.server.config.debug_command {
        DebugCommand::Yes => true,
        DebugCommand::Local => is_local(&ctx.client.info.addr),
        DebugCommand::No => false,
    };
    if !allowed {
        ctx.error(NOT_ALLOWED);
        return Flow::Continue;
    }
    // Redis words an unknown subcommand and a wrong argument count alike.
    let n = args.len() as i32;
    let found = SUBCOMMANDS
        .iter()
        .find(|(name, arity)| args.is(1, name) && (n == *arity || (*arity < 0 && n >= -arity)));
    let Some(&(sub, _)) = found else {
        ctx.error(&subcommand_syntax(args.get(1), "DEBUG"));
        return Flow::Continue;
    };
    match sub {
        "help" => reply_help(ctx, HELP),
        "sleep" => {
            let secs = std::str::from_utf8(args.get(2))
                .ok()
                .and_then(|t| t.parse::<f64>().ok())
                .filter(|s| s.is_finite() && *s >= 0.0)
                .unwrap_or(0.0);
            tokio::time::sleep(Duration::from_secs_f64(secs.min(3600.0))).await;
            reply::ok(ctx.out);
        }
        "set-active-expire" => {
            ctx.engine.set_active_expiry(args.get(2) != b"0");
            reply::ok(ctx.out);
        }
        "reload" | "loadaof" => match ctx.engine.reload_from_stores().await {
            Ok(()) => reply::ok(ctx.out),
            Err(e) => ctx.engine_error(&e),
        },
        "object" => object(args, ctx).await,
        "digest" => digest(ctx).await,
        "digest-value" => digest_values(args, ctx).await,
        // Where Redis stores a big element in a node of its own. Lists
        // here keep any element in their nodes: the size is checked as
        // Redis checks it, and changes nothing (as the encoding tunables).
        "set-disable-deny-scripts" => {
            let on = args.get(2) != b"0";
            ctx.server
                .scripts
                .deny_disabled
                .store(on, Ordering::Relaxed);
            reply::ok(ctx.out);
        }
        "protocol" => protocol(args.get(2), ctx),
        "quicklist-packed-threshold" => {
            let size = super::config::memory_value(&String::from_utf8_lossy(args.get(2)));
            match size {
                Some(sz) if sz <= (1 << 32) - (1 << 20) => reply::ok(ctx.out),
                _ => ctx.error(
                    "ERR argument must be a memory value bigger than 1 and smaller than 4gb",
                ),
            }
        }
        _ => reply::ok(ctx.out), // change-repl-id
    }
    Flow::Continue
}

/// `DEBUG PROTOCOL type`: one reply of each RESP3 type (Redis's
/// `debugCommand`), as the client's protocol allows.
fn protocol(name: &[u8], ctx: &mut Ctx<'_, '_>) {
    let proto = ctx.proto();
    let resp3 = proto == Proto::Resp3;
    let out = &mut *ctx.out;
    match name.to_ascii_lowercase().as_slice() {
        b"string" => reply::bulk(out, b"Hello World"),
        b"integer" => reply::integer(out, 12345),
        // Redis's literal, not π.
        #[allow(clippy::approx_constant)]
        b"double" => reply::double(out, 3.141, proto),
        b"bignum" if resp3 => out.extend_from_slice(b"(1234567999999999999999999999999999999\r\n"),
        b"bignum" => reply::bulk(out, b"1234567999999999999999999999999999999"),
        b"null" => reply::null(out, proto),
        b"array" | b"set" => {
            match name.eq_ignore_ascii_case(b"set") {
                true => reply::set(out, 3, proto),
                false => reply::array(out, 3),
            }
            for j in 0..3 {
                reply::integer(out, j);
            }
        }
        b"map" => {
            reply::map(out, 3, proto);
            for j in 0..3 {
                reply::integer(out, j);
                reply::boolean(out, j == 1, proto);
            }
        }
        b"attrib" => {
            if resp3 {
                out.extend_from_slice(b"|1\r\n");
                reply::bulk(out, b"key-popularity");
                reply::array(out, 2);
                reply::bulk(out, b"key:123");
                reply::integer(out, 90);
            }
            reply::bulk(out, b"Some real reply following the attribute");
        }
        b"push" if !resp3 => reply::error(out, "ERR RESP2 is not supported by this command"),
        b"push" => {
            reply::push(out, 2, proto);
            reply::bulk(out, b"server-cpu-usage");
            reply::integer(out, 42);
            reply::bulk(out, b"Some real reply following the push reply");
        }
        b"true" => reply::boolean(out, true, proto),
        b"false" => reply::boolean(out, false, proto),
        b"verbatim" => reply::verbatim(out, b"This is a verbatim\nstring", proto),
        _ => reply::error(
            out,
            "ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
        ),
    }
}

/// `DEBUG OBJECT key`: as Redis, it also finds a key that expired but is
/// still held (active expiry paused), without dropping it.
async fn object(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) {
    let held = ctx.engine.memory().peek(args.get(2));
    let e = match held {
        Some(e) => e,
        None => match ctx.session.get(args.get(2)).await {
            Ok(Some(e)) => e,
            Ok(None) => return ctx.error("ERR no such key"),
            Err(e) => return ctx.engine_error(&e),
        },
    };
    let encoding = match super::object::entry_encoding(ctx, args.get(2), &e) {
        Ok(enc) => enc,
        Err(msg) => return ctx.error(&msg),
    };
    // The DUMP payload is the RDB object (type byte first), then 2 bytes
    // of version and 8 of CRC: Redis's serialized length leaves all three
    // out.
    let serialized = crate::rdb::dump(e.kind, &e.value).map_or(0, |p| p.len().saturating_sub(11));
    let clock = (tiercache_engine::now_ms() / 1000) & ((1 << 24) - 1);
    // Redis reports its value object's address. Here that is the key's
    // slot in the memory tier, which an overwrite (`INCR`) keeps; a key
    // the tier does not hold reports its value's bytes.
    let at = ctx
        .engine
        .memory_address(args.get(2))
        .unwrap_or(e.value.as_ptr() as usize);
    let line = format!(
        "Value at:{at:#x} refcount:1 encoding:{encoding} serializedlength:{serialized} lru:{clock} lru_seconds_idle:0"
    );
    reply::simple(ctx.out, &line);
}

/// `DEBUG DIGEST-VALUE key...`: one digest per key (zeros for a missing
/// one, as Redis).
async fn digest_values(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) {
    let keys = args.bytes_from(2);
    let found = match ctx.session.get_many(&keys).await {
        Ok(found) => found,
        Err(e) => return ctx.engine_error(&e),
    };
    let mut digests = Vec::with_capacity(found.len());
    for e in &found {
        match e {
            None => digests.push(digest::EMPTY),
            Some(e) => match digest::value_digest(e.kind, &e.value) {
                Ok(d) => digests.push(d),
                Err(c) => return ctx.error(&format!("ERR corrupt value: {c}")),
            },
        }
    }
    reply::array(ctx.out, digests.len());
    for d in &digests {
        reply::simple(ctx.out, &digest::hex(d));
    }
}

/// `DEBUG DIGEST`: the whole data set's digest, every key listed and read.
async fn digest(ctx: &mut Ctx<'_, '_>) {
    let mut d = digest::EMPTY;
    let mut after: Option<bytes::Bytes> = None;
    loop {
        let page = match ctx.session.scan_keys(after.as_deref(), b"", 1000).await {
            Ok(page) => page,
            Err(e) => return ctx.engine_error(&e),
        };
        let found = match ctx.session.get_many(&page.keys).await {
            Ok(found) => found,
            Err(e) => return ctx.engine_error(&e),
        };
        for (key, e) in page.keys.iter().zip(found) {
            // A key deleted since it was listed is not in the data set.
            if let Some(e) = e {
                if let Err(c) = digest::add_key(&mut d, key, &e) {
                    return ctx.error(&format!("ERR corrupt value: {c}"));
                }
            }
        }
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    reply::simple(ctx.out, &digest::hex(&d));
}

/// A loopback or unix-socket client (Redis's `islocalClient`): `addr`
/// is `CLIENT LIST`'s, a socket path or `ip:port`.
fn is_local(addr: &str) -> bool {
    addr.starts_with('/')
        || addr
            .parse::<std::net::SocketAddr>()
            .is_ok_and(|a| a.ip().to_canonical().is_loopback())
}

#[cfg(test)]
mod tests {
    #[test]
    fn local_clients_are_loopback_or_unix_socket_ones() {
        for addr in [
            "127.0.0.1:5000",
            "127.9.9.9:1",
            "[::1]:6380",
            "[::ffff:127.0.0.1]:7",
            "/tmp/s.sock",
        ] {
            assert!(super::is_local(addr), "{addr}");
        }
        for addr in ["10.0.0.1:5000", "[2001:db8::1]:1", "garbage"] {
            assert!(!super::is_local(addr), "{addr}");
        }
    }
}
