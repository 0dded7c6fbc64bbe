//! `XINFO STREAM key [FULL [COUNT count]]`, `XINFO GROUPS key`, `XINFO
//! CONSUMERS key group`, `XINFO HELP`: Redis 7.0's fields, in its order.

use super::{corrupt, parse_count, read, reply_id, reply_item};
use crate::cmd::subcommand::{subcommand_syntax, subcommand_to_run};
use crate::cmd::{Args, Ctx, Flow};
use crate::resp::reply;
use crate::stream::{Corrupt, Group, Groups, Stream, StreamId};
use tiercache_engine::now_ms;

const SUBCOMMANDS: &[(&str, i32)] = &[("consumers", 4), ("groups", 3), ("stream", -3), ("help", 2)];

const HELP: &[&str] = &[
    "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CONSUMERS <key> <groupname>",
    "    Show consumers of <groupname>.",
    "GROUPS <key>",
    "    Show the stream consumer groups.",
    "STREAM <key> [FULL [COUNT <count>]",
    "    Show information about the stream.",
    "HELP",
    "    Prints this help.",
];

/// `XINFO subcommand ...`.
pub async fn xinfo(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let Some(sub) = subcommand_to_run(args, ctx, "xinfo", SUBCOMMANDS, HELP) else {
        return Flow::Continue;
    };
    let s = match read(ctx, args.get(2)).await {
        Ok(Some(s)) => s,
        Ok(None) => {
            ctx.error("ERR no such key");
            return Flow::Continue;
        }
        Err(msg) => {
            ctx.error(&msg);
            return Flow::Continue;
        }
    };
    // Everything that may fail to decode is read before the reply starts.
    let groups = match s.groups() {
        Ok(g) => g,
        Err(c) => {
            ctx.error(&corrupt(c));
            return Flow::Continue;
        }
    };
    let r = match sub {
        "consumers" => {
            consumers(args, ctx, groups);
            Ok(())
        }
        "groups" => {
            reply_groups(ctx, &s, groups);
            Ok(())
        }
        _ => stream(args, ctx, &s, groups),
    };
    if let Err(c) = r {
        ctx.error(&corrupt(c));
    }
    Flow::Continue
}

fn consumers(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, groups: &Groups) {
    let Some(g) = groups.get(args.get(3)) else {
        ctx.error(&format!(
            "NOGROUP No such consumer group '{}' for key name '{}'",
            String::from_utf8_lossy(args.get(3)),
            String::from_utf8_lossy(args.get(2))
        ));
        return;
    };
    let (now, proto) = (now_ms() as i64, ctx.proto());
    reply::array(ctx.out, g.consumers.len());
    for (name, c) in &g.consumers {
        reply::map(ctx.out, 3, proto);
        reply::bulk(ctx.out, b"name");
        reply::bulk(ctx.out, name);
        reply::bulk(ctx.out, b"pending");
        reply::integer(ctx.out, c.pel.len() as i64);
        reply::bulk(ctx.out, b"idle");
        reply::integer(ctx.out, (now - c.seen_time as i64).max(0));
    }
}

fn reply_groups(ctx: &mut Ctx<'_, '_>, s: &Stream, groups: &Groups) {
    let proto = ctx.proto();
    reply::array(ctx.out, groups.len());
    for (name, g) in groups {
        reply::map(ctx.out, 6, proto);
        reply::bulk(ctx.out, b"name");
        reply::bulk(ctx.out, name);
        reply::bulk(ctx.out, b"consumers");
        reply::integer(ctx.out, g.consumers.len() as i64);
        reply::bulk(ctx.out, b"pending");
        reply::integer(ctx.out, g.pel.len() as i64);
        reply::bulk(ctx.out, b"last-delivered-id");
        reply_id(ctx.out, g.last_id);
        reply_read_and_lag(ctx, s, g);
    }
}

/// A group's `entries-read` and `lag` (each null when unknown).
fn reply_read_and_lag(ctx: &mut Ctx<'_, '_>, s: &Stream, g: &Group) {
    let proto = ctx.proto();
    reply::bulk(ctx.out, b"entries-read");
    match g.entries_read {
        Some(n) => reply::integer(ctx.out, n),
        None => reply::null(ctx.out, proto),
    }
    reply::bulk(ctx.out, b"lag");
    match s.lag(g) {
        Some(n) => reply::integer(ctx.out, n),
        None => reply::null(ctx.out, proto),
    }
}

fn stream(
    args: &Args<'_>,
    ctx: &mut Ctx<'_, '_>,
    s: &Stream,
    groups: &Groups,
) -> Result<(), Corrupt> {
    let extra = args.len() - 3;
    let full = extra > 0;
    let mut count = 10;
    if full {
        let shape =
            (extra == 1 || extra == 3) && args.is(3, "full") && (extra == 1 || args.is(4, "count"));
        if !shape {
            ctx.error(&subcommand_syntax(args.get(1), "XINFO"));
            return Ok(());
        }
        if extra == 3 {
            match parse_count(args.get(5)) {
                Ok(n) => count = n,
                Err(msg) => {
                    ctx.error(msg);
                    return Ok(());
                }
            }
        }
    }
    let limit = if count == 0 {
        usize::MAX
    } else {
        count.min(usize::MAX as u64) as usize
    };
    let (first, last) = (s.first()?, s.last()?);
    let entries = if full {
        s.range(StreamId::MIN, StreamId::MAX, limit)?
    } else {
        Vec::new()
    };
    let proto = ctx.proto();
    reply::map(ctx.out, if full { 9 } else { 10 }, proto);
    reply::bulk(ctx.out, b"length");
    reply::integer(ctx.out, s.len() as i64);
    reply::bulk(ctx.out, b"radix-tree-keys");
    reply::integer(ctx.out, s.node_count() as i64);
    reply::bulk(ctx.out, b"radix-tree-nodes");
    reply::integer(ctx.out, s.radix_tree_nodes() as i64);
    reply::bulk(ctx.out, b"last-generated-id");
    reply_id(ctx.out, s.last_id());
    reply::bulk(ctx.out, b"max-deleted-entry-id");
    reply_id(ctx.out, s.max_deleted_id());
    reply::bulk(ctx.out, b"entries-added");
    reply::integer(ctx.out, s.entries_added() as i64);
    reply::bulk(ctx.out, b"recorded-first-entry-id");
    reply_id(ctx.out, s.first_id());
    if !full {
        reply::bulk(ctx.out, b"groups");
        reply::integer(ctx.out, groups.len() as i64);
        for (name, item) in [(&b"first-entry"[..], first), (b"last-entry", last)] {
            reply::bulk(ctx.out, name);
            match item {
                Some(item) => reply_item(ctx.out, &item),
                None => reply::null(ctx.out, proto),
            }
        }
        return Ok(());
    }
    reply::bulk(ctx.out, b"entries");
    reply::array(ctx.out, entries.len());
    for item in entries {
        reply_item(ctx.out, &item);
    }
    reply::bulk(ctx.out, b"groups");
    reply::array(ctx.out, groups.len());
    for (name, g) in groups {
        reply::map(ctx.out, 7, proto);
        reply::bulk(ctx.out, b"name");
        reply::bulk(ctx.out, name);
        reply::bulk(ctx.out, b"last-delivered-id");
        reply_id(ctx.out, g.last_id);
        reply_read_and_lag(ctx, s, g);
        reply::bulk(ctx.out, b"pel-count");
        reply::integer(ctx.out, g.pel.len() as i64);
        reply::bulk(ctx.out, b"pending");
        let pending: Vec<_> = g.pel.iter().take(limit).collect();
        reply::array(ctx.out, pending.len());
        for (id, nack) in pending {
            reply::array(ctx.out, 4);
            reply_id(ctx.out, *id);
            reply::bulk(ctx.out, &nack.consumer);
            reply::integer(ctx.out, nack.delivery_time as i64);
            reply::integer(ctx.out, nack.delivery_count as i64);
        }
        reply::bulk(ctx.out, b"consumers");
        reply::array(ctx.out, g.consumers.len());
        for (cname, c) in &g.consumers {
            reply::map(ctx.out, 4, proto);
            reply::bulk(ctx.out, b"name");
            reply::bulk(ctx.out, cname);
            reply::bulk(ctx.out, b"seen-time");
            reply::integer(ctx.out, c.seen_time as i64);
            reply::bulk(ctx.out, b"pel-count");
            reply::integer(ctx.out, c.pel.len() as i64);
            reply::bulk(ctx.out, b"pending");
            let mine: Vec<_> = c.pel.iter().take(limit).collect();
            reply::array(ctx.out, mine.len());
            for id in mine {
                let nack = &g.pel[id];
                reply::array(ctx.out, 3);
                reply_id(ctx.out, *id);
                reply::integer(ctx.out, nack.delivery_time as i64);
                reply::integer(ctx.out, nack.delivery_count as i64);
            }
        }
    }
    Ok(())
}
