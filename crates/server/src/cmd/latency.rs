//! `LATENCY`: Redis's latency monitor, which is off in Redis unless
//! `latency-monitor-threshold` is set, and is not built here (the
//! threshold stays 0: `CONFIG SET` takes only 0). So the answers are
//! Redis's with the monitor off: no events (`LATEST`, `HISTORY`), nothing
//! to reset, no samples to graph, and `DOCTOR`'s "disabled" report.
//! `HISTOGRAM` (per-command latency distributions) is refused: commands
//! are timed per batch here (`INFO commandstats`), not one by one.

use super::subcommand::subcommand_to_run;
use super::{Args, Ctx, Flow};
use crate::resp::reply;

/// The subcommands and their arities, as Redis 7.0's table has them.
const SUBCOMMANDS: &[(&str, i32)] = &[
    ("doctor", 2),
    ("graph", 3),
    ("history", 3),
    ("latest", 2),
    ("reset", -2),
    ("histogram", -2),
    ("help", 2),
];

/// Redis 7.0's `LATENCY HELP`.
const HELP: &[&str] = &[
    "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return a human readable latency analysis report.",
    "GRAPH <event>",
    "    Return an ASCII latency graph for the <event> class.",
    "HISTORY <event>",
    "    Return time-latency samples for the <event> class.",
    "LATEST",
    "    Return the latest latency samples for all events.",
    "RESET [<event> ...]",
    "    Reset latency data of one or more <event> classes.",
    "    (default: reset all data for all event classes)",
    "HISTOGRAM [COMMAND ...]",
    "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
    "    If no commands are specified then all histograms are replied.",
    "HELP",
    "    Prints this help.",
];

/// Redis's `LATENCY DOCTOR` with the monitor off.
const DISABLED: &str = "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n";

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let Some(sub) = subcommand_to_run(args, ctx, "latency", SUBCOMMANDS, HELP) else {
        return Flow::Continue;
    };
    match sub {
        "latest" | "history" => reply::array(ctx.out, 0),
        "reset" => reply::integer(ctx.out, 0),
        "doctor" => {
            let proto = ctx.proto();
            reply::verbatim(ctx.out, DISABLED.as_bytes(), proto);
        }
        "graph" => ctx.error(&format!(
            "ERR No samples available for event '{}'",
            args.text(2)
        )),
        _ => ctx.error(
            "ERR LATENCY HISTOGRAM is not supported: tiercache times commands per batch (see INFO commandstats)",
        ),
    }
    Flow::Continue
}
