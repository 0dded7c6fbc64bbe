//! `CLIENT ID | GETNAME | SETNAME name | INFO | LIST [TYPE t] [ID id ...] |
//! NO-EVICT on|off | REPLY ON|OFF|SKIP | SETINFO LIB-NAME|LIB-VER value |
//! UNBLOCK id [TIMEOUT|ERROR] | KILL ...` (`client_kill.rs`): what client
//! libraries send when they connect, and what operators look at.

use super::{arity_error, parse_i64, unknown_subcommand, Args, Ctx, Flow, SYNTAX_ERROR};
use crate::resp::reply;
use std::sync::atomic::Ordering;

/// Redis refuses names that would break `CLIENT LIST` output.
pub fn valid_name(name: &[u8]) -> bool {
    name.iter().all(|b| (b'!'..=b'~').contains(b))
}

/// Subcommands and their arity (Redis's `client|...` table).
const SUBCOMMANDS: [(&str, i32); 10] = [
    ("id", 2),
    ("getname", 2),
    ("setname", 3),
    ("info", 2),
    ("list", -2),
    ("no-evict", 3),
    ("reply", 3),
    ("setinfo", 4),
    ("unblock", -3),
    ("kill", -3),
];

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let Some(&(sub, arity)) = SUBCOMMANDS.iter().find(|(name, _)| args.is(1, name)) else {
        reply::error(ctx.out, &unknown_subcommand(args.get(1), "client"));
        return Flow::Continue;
    };
    let n = args.len() as i32;
    if (arity > 0 && n != arity) || n < -arity {
        reply::error(ctx.out, &arity_error(&format!("client|{sub}")));
        return Flow::Continue;
    }
    let p = ctx.proto();
    match sub {
        "kill" => return super::client_kill::run(args, ctx),
        "id" => reply::integer(ctx.out, ctx.client.id as i64),
        "getname" => {
            let name = ctx.client.info.names().name;
            ctx.bulk_or_null(name.as_deref());
        }
        "setname" => {
            let name = args.get(2);
            if !valid_name(name) {
                reply::error(
                    ctx.out,
                    "ERR Client names cannot contain spaces, newlines or special characters.",
                );
            } else {
                ctx.client
                    .info
                    .with_names(|n| n.name = (!name.is_empty()).then(|| name.to_vec()));
                reply::ok(ctx.out);
            }
        }
        "info" => {
            let line = ctx.client.info.line("client|info");
            reply::verbatim(ctx.out, line.as_bytes(), p);
        }
        "list" => list(args, ctx),
        "no-evict" => {
            if args.is(2, "on") || args.is(2, "off") {
                ctx.client
                    .info
                    .no_evict
                    .store(args.is(2, "on"), Ordering::Relaxed);
                reply::ok(ctx.out);
            } else {
                reply::error(ctx.out, SYNTAX_ERROR);
            }
        }
        "reply" => {
            use crate::state::ReplyMode;
            let mode = if args.is(2, "on") {
                ReplyMode::On
            } else if args.is(2, "off") {
                ReplyMode::Off
            } else if args.is(2, "skip") {
                ReplyMode::SkipThis
            } else {
                reply::error(ctx.out, SYNTAX_ERROR);
                return Flow::Continue;
            };
            // Written always; `execute` drops it unless the mode is `On`.
            ctx.client.replies = mode;
            reply::ok(ctx.out);
        }
        "unblock" => unblock(args, ctx),
        _ => setinfo(args, ctx),
    }
    Flow::Continue
}

/// `CLIENT UNBLOCK client-id [TIMEOUT|ERROR]`: 1 when that client was
/// waiting in a blocking command (it now answers as timed out, or with
/// `-UNBLOCKED`), 0 otherwise.
fn unblock(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) {
    if args.len() > 4 {
        // Redis 7.0's CLIENT parses this one itself.
        let msg = format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try CLIENT HELP.",
            args.text(1)
        );
        reply::error(ctx.out, &msg);
        return;
    }
    let reason = match args.len() {
        3 => crate::state::UNBLOCK_TIMEOUT,
        _ if args.is(3, "timeout") => crate::state::UNBLOCK_TIMEOUT,
        _ if args.is(3, "error") => crate::state::UNBLOCK_ERROR,
        _ => {
            reply::error(
                ctx.out,
                "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            );
            return;
        }
    };
    let Some(id) = parse_i64(args.get(2)) else {
        reply::error(ctx.out, super::NOT_AN_INTEGER);
        return;
    };
    let target = ctx
        .server
        .clients()
        .into_iter()
        .find(|c| i64::try_from(c.id) == Ok(id));
    let done = target.is_some_and(|c| c.unblock(reason));
    reply::integer(ctx.out, i64::from(done));
}

/// `CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id [id ...]]`.
fn list(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) {
    let mut ids: Option<Vec<u64>> = None;
    // Which clients a TYPE asks for: normal ones, subscribers, or none
    // (there are no replicas or masters here).
    let mut wanted: Option<Option<bool>> = None;
    if args.len() > 2 {
        if args.is(2, "type") && args.len() == 4 {
            let t = args.get(3);
            if t.eq_ignore_ascii_case(b"normal") {
                wanted = Some(Some(false));
            } else if t.eq_ignore_ascii_case(b"pubsub") {
                wanted = Some(Some(true));
            } else if ["master", "replica", "slave"]
                .iter()
                .any(|w| t.eq_ignore_ascii_case(w.as_bytes()))
            {
                wanted = Some(None);
            } else {
                reply::error(
                    ctx.out,
                    &format!("ERR Unknown client type '{}'", args.text(3)),
                );
                return;
            }
        } else if args.is(2, "id") && args.len() > 3 {
            let mut v = Vec::new();
            for i in 3..args.len() {
                match parse_i64(args.get(i)) {
                    Some(id) if id > 0 => v.push(id as u64),
                    _ => {
                        reply::error(ctx.out, "ERR Invalid client ID");
                        return;
                    }
                }
            }
            ids = Some(v);
        } else {
            reply::error(ctx.out, SYNTAX_ERROR);
            return;
        }
    }
    let mut text = String::new();
    if wanted != Some(None) {
        for c in ctx.server.clients() {
            let of_type = wanted.map_or(true, |w| w == Some(c.is_subscriber()));
            if of_type && ids.as_ref().map_or(true, |ids| ids.contains(&c.id)) {
                let cmd = if c.id == ctx.client.id {
                    "client|list"
                } else {
                    c.last_command()
                };
                text.push_str(&c.line(cmd));
            }
        }
    }
    reply::verbatim(ctx.out, text.as_bytes(), ctx.client.proto);
}

/// `CLIENT SETINFO LIB-NAME name | LIB-VER version` (Redis 7.2; clients
/// send it at connect and ignore failures).
fn setinfo(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) {
    let value = args.get(3);
    let attr = if args.is(2, "lib-name") {
        "lib-name"
    } else if args.is(2, "lib-ver") {
        "lib-ver"
    } else {
        reply::error(
            ctx.out,
            &format!("ERR Unrecognized option '{}'", args.text(2)),
        );
        return;
    };
    if !valid_name(value) {
        reply::error(
            ctx.out,
            &format!("ERR {attr} cannot contain spaces, newlines or special characters."),
        );
        return;
    }
    let value = (!value.is_empty()).then(|| value.to_vec());
    ctx.client.info.with_names(|n| {
        if attr == "lib-name" {
            n.lib_name = value;
        } else {
            n.lib_ver = value;
        }
    });
    reply::ok(ctx.out);
}
