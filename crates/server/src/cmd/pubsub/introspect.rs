//! `PUBSUB CHANNELS [pattern]`, `NUMSUB [channel ...]`, `NUMPAT`,
//! `SHARDCHANNELS [pattern]`, `SHARDNUMSUB [channel ...]`, `HELP`.

use crate::cmd::subcommand::{subcommand_syntax, subcommand_to_run};
use crate::cmd::{Args, Ctx, Flow};
use crate::pubsub::Space;
use crate::resp::reply;

/// The subcommands and their arities, as Redis 7.0's table has them.
const SUBCOMMANDS: &[(&str, i32)] = &[
    ("channels", -2),
    ("numsub", -2),
    ("numpat", 2),
    ("shardchannels", -2),
    ("shardnumsub", -2),
    ("help", 2),
];

/// Redis 7.0's `PUBSUB HELP`.
const HELP: &[&str] = &[
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
    "    Prints this help.",
];

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let Some(sub) = subcommand_to_run(args, ctx, "pubsub", SUBCOMMANDS, HELP) else {
        return Flow::Continue;
    };
    let pubsub = &ctx.server.pubsub;
    match sub {
        "channels" | "shardchannels" => {
            if args.len() > 3 {
                ctx.error(&subcommand_syntax(args.get(1), "PUBSUB"));
                return Flow::Continue;
            }
            let space = if sub == "channels" {
                Space::Channel
            } else {
                Space::Shard
            };
            let names = pubsub.active(space, (args.len() == 3).then(|| args.get(2)));
            reply::array(ctx.out, names.len());
            for name in names {
                reply::bulk(ctx.out, &name);
            }
        }
        "numsub" | "shardnumsub" => {
            let space = if sub == "numsub" {
                Space::Channel
            } else {
                Space::Shard
            };
            reply::array(ctx.out, 2 * (args.len() - 2));
            for i in 2..args.len() {
                reply::bulk(ctx.out, args.get(i));
                reply::integer(ctx.out, pubsub.subscribers(space, args.get(i)) as i64);
            }
        }
        _ => reply::integer(ctx.out, pubsub.len(Space::Pattern) as i64),
    }
    Flow::Continue
}
