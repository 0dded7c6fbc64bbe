//! `CONFIG GET pattern [pattern ...]`: the parameters client libraries and
//! tools ask for, as a flat array of name/value pairs. Nothing can be set.

use super::{glob_match, unknown_subcommand, Args, Ctx, Flow};
use crate::resp::reply;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if !args.is(1, "get") {
        reply::error(ctx.out, &unknown_subcommand(args.get(1), "config"));
        return Flow::Continue;
    }
    if args.len() < 3 {
        reply::error(
            ctx.out,
            "ERR wrong number of arguments for 'config|get' command",
        );
        return Flow::Continue;
    }
    let config = &ctx.server.config;
    let params: [(&str, String); 9] = [
        ("maxmemory", ctx.engine.stats().memory_max_bytes.to_string()),
        ("maxmemory-policy", "allkeys-lru".to_string()),
        ("save", String::new()),
        ("appendonly", "no".to_string()),
        ("databases", "1".to_string()),
        ("port", ctx.server.port.to_string()),
        ("maxclients", config.max_clients.to_string()),
        ("timeout", config.idle_timeout.as_secs().to_string()),
        ("proto-max-bulk-len", config.limits.max_bulk_len.to_string()),
    ];
    // Each parameter once, even when several patterns match it.
    let matched: Vec<&(&str, String)> = params
        .iter()
        .filter(|(name, _)| (2..args.len()).any(|i| glob_match(args.get(i), name.as_bytes(), true)))
        .collect();
    reply::array(ctx.out, matched.len() * 2);
    for (name, value) in matched {
        reply::bulk(ctx.out, name.as_bytes());
        reply::bulk(ctx.out, value.as_bytes());
    }
    Flow::Continue
}
