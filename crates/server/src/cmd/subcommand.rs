//! Container commands (`XGROUP`, `XINFO`, `PUBSUB`): the subcommand
//! checks Redis's dispatch makes (unknown subcommand, its arity) and the
//! replies shared by their handlers (`HELP`, a syntax error).

use crate::cmd::{arity_error, unknown_subcommand, Args, Ctx};
use crate::resp::reply;

/// Redis's reply for a subcommand whose arguments do not fit.
pub fn subcommand_syntax(sub: &[u8], cmd: &str) -> String {
    format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try {cmd} HELP.",
        String::from_utf8_lossy(&sub[..sub.len().min(128)])
    )
}

/// The subcommand of a container command (`XGROUP`, `XINFO`) to run, in
/// lower case; `None` when it was answered here: an unknown subcommand or
/// a wrong argument count (Redis's dispatch errors), or `HELP`.
pub fn subcommand_to_run(
    args: &Args<'_>,
    ctx: &mut Ctx<'_, '_>,
    cmd: &str,
    table: &[(&'static str, i32)],
    help: &[&str],
) -> Option<&'static str> {
    match subcommand(args, cmd, table) {
        Ok("help") => {
            reply_help(ctx, help);
            None
        }
        Ok(sub) => Some(sub),
        Err(msg) => {
            ctx.error(&msg);
            None
        }
    }
}

/// Checks a container command's subcommand and its arity, as Redis's
/// dispatch does: `Ok(name)` (lower case) or the error reply.
fn subcommand(
    args: &Args<'_>,
    cmd: &str,
    table: &[(&'static str, i32)],
) -> Result<&'static str, String> {
    let Some(&(name, arity)) = table.iter().find(|(name, _)| args.is(1, name)) else {
        return Err(unknown_subcommand(args.get(1), cmd));
    };
    let n = args.len() as i32;
    if (arity > 0 && n != arity) || n < -arity {
        return Err(arity_error(&format!("{cmd}|{name}")));
    }
    Ok(name)
}

/// Replies with a help text, as Redis's `addReplyHelp`.
pub fn reply_help(ctx: &mut Ctx<'_, '_>, lines: &[&str]) {
    reply::array(ctx.out, lines.len());
    for line in lines {
        reply::simple(ctx.out, line);
    }
}
