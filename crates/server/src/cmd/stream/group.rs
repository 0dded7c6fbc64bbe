//! `XGROUP CREATE|SETID|DESTROY|CREATECONSUMER|DELCONSUMER|HELP` and
//! `XACK`.

use super::{corrupt, modify};
use crate::cmd::collection;
use crate::cmd::subcommand::{subcommand_syntax, subcommand_to_run};
use crate::cmd::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER};
use crate::notify::class;
use crate::resp::reply;
use crate::stream::{Group, Stream, StreamId, INVALID_ID};
use bytes::Bytes;
use tiercache_engine::now_ms;

/// The subcommands and their arities, as Redis 7.0's table has them.
const SUBCOMMANDS: &[(&str, i32)] = &[
    ("create", -5),
    ("setid", -5),
    ("destroy", 4),
    ("createconsumer", 5),
    ("delconsumer", 5),
    ("help", 2),
];

const HELP: &[&str] = &[
    "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
    "HELP",
    "    Prints this help.",
];

/// `XGROUP subcommand ...`.
pub async fn xgroup(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let Some(sub) = subcommand_to_run(args, ctx, "xgroup", SUBCOMMANDS, HELP) else {
        return Flow::Continue;
    };
    let (mkstream, entries_read) = match parse_options(args, sub) {
        Ok(o) => o,
        Err(msg) => {
            ctx.error(&msg);
            return Flow::Continue;
        }
    };
    let now = now_ms();
    let key = args.get(2);
    let name = args.get(3);
    let r = modify(ctx, key, |s| {
        if !mkstream {
            let Some(st) = s.as_ref() else {
                return Err("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.".into());
            };
            let has = st.groups().map_err(corrupt)?.contains_key(name);
            if !has && matches!(sub, "setid" | "createconsumer" | "delconsumer") {
                return Err(format!(
                    "NOGROUP No such consumer group '{}' for key name '{}'",
                    String::from_utf8_lossy(name),
                    String::from_utf8_lossy(key)
                ));
            }
        }
        let n = args.len();
        match sub {
            "create" if (5..=8).contains(&n) => {
                let id = group_id(args.get(4), s.as_ref(), true)?;
                let groups = s
                    .get_or_insert_with(Stream::default)
                    .groups_mut()
                    .map_err(corrupt)?;
                if groups.contains_key(name) {
                    return Err("BUSYGROUP Consumer Group name already exists".into());
                }
                groups.insert(Bytes::copy_from_slice(name), Group::new(id, entries_read));
                Ok((Answer::Ok, true))
            }
            "setid" if n == 5 || n == 7 => {
                let id = group_id(args.get(4), s.as_ref(), false)?;
                let g = group_mut(s, name)?;
                g.last_id = id;
                g.entries_read = entries_read;
                Ok((Answer::Ok, true))
            }
            "destroy" => {
                let gone = match s.as_mut() {
                    Some(s) => s.groups_mut().map_err(corrupt)?.remove(name).is_some(),
                    None => false,
                };
                Ok((Answer::Int(i64::from(gone)), gone))
            }
            "createconsumer" => {
                let made = group_mut(s, name)?.create_consumer(args.get(4), now);
                Ok((Answer::Int(i64::from(made)), made))
            }
            "delconsumer" => {
                let pending = group_mut(s, name)?.delete_consumer(args.get(4));
                Ok((Answer::Int(pending.unwrap_or(0) as i64), pending.is_some()))
            }
            _ => Err(subcommand_syntax(args.get(1), "XGROUP")),
        }
    })
    .await;
    let event = match sub {
        "create" => "xgroup-create",
        "setid" => "xgroup-setid",
        "destroy" => "xgroup-destroy",
        "createconsumer" => "xgroup-createconsumer",
        _ => "xgroup-delconsumer",
    };
    collection::notify_change(ctx, class::STREAM, event, key);
    match r {
        Ok(Answer::Ok) => reply::ok(ctx.out),
        Ok(Answer::Int(n)) => reply::integer(ctx.out, n),
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

enum Answer {
    Ok,
    Int(i64),
}

/// The group `name` of a stream the caller checked has it.
fn group_mut<'s>(s: &'s mut Option<Stream>, name: &[u8]) -> Result<&'s mut Group, String> {
    let groups = s.as_mut().expect("checked before").groups_mut();
    Ok(groups
        .map_err(corrupt)?
        .get_mut(name)
        .expect("checked before"))
}

/// `CREATE`'s and `SETID`'s ID: `$` for the stream's last ID (0-0 without
/// a stream); otherwise strict for `CREATE`, not for `SETID`.
fn group_id(arg: &[u8], s: Option<&Stream>, strict: bool) -> Result<StreamId, String> {
    if arg == b"$" {
        return Ok(s.map_or(StreamId::MIN, Stream::last_id));
    }
    let id = if strict {
        StreamId::parse_strict(arg, 0)
    } else {
        StreamId::parse(arg, 0)
    };
    id.ok_or_else(|| INVALID_ID.to_string())
}

/// `CREATE`'s `MKSTREAM` and `ENTRIESREAD n`, `SETID`'s `ENTRIESREAD n`,
/// from argument 5.
fn parse_options(args: &Args<'_>, sub: &str) -> Result<(bool, Option<i64>), String> {
    let (mut mkstream, mut entries_read) = (false, None);
    if sub != "create" && sub != "setid" {
        return Ok((false, None));
    }
    let mut i = 5;
    while i < args.len() {
        if sub == "create" && args.is(i, "mkstream") {
            mkstream = true;
        } else if args.is(i, "entriesread") && i + 1 < args.len() {
            let n = parse_i64(args.get(i + 1)).ok_or(NOT_AN_INTEGER)?;
            if n < -1 {
                return Err("ERR value for ENTRIESREAD must be positive or -1".into());
            }
            entries_read = (n >= 0).then_some(n);
            i += 1;
        } else {
            return Err(subcommand_syntax(args.get(1), "XGROUP"));
        }
        i += 1;
    }
    Ok((mkstream, entries_read))
}

/// `XACK key group id [id ...]`: how many of the IDs were pending. Redis
/// parses the IDs only once key and group are found.
pub async fn xack(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let r = modify(ctx, args.get(1), |s| {
        let Some(s) = s.as_mut() else {
            return Ok((0, false));
        };
        let Some(g) = s.groups_mut().map_err(corrupt)?.get_mut(args.get(2)) else {
            return Ok((0, false));
        };
        let ids = (3..args.len())
            .map(|i| StreamId::parse_strict(args.get(i), 0))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| INVALID_ID.to_string())?;
        let acked = ids.iter().filter(|&&id| g.ack(id)).count();
        Ok((acked as i64, acked > 0))
    })
    .await;
    match r {
        Ok(n) => {
            // No event in Redis, but a change replicas get.
            if n > 0 {
                ctx.mark_dirty();
            }
            reply::integer(ctx.out, n)
        }
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}
