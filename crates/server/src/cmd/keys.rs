//! `KEYS pattern`: every live key matching a Redis glob pattern, read
//! from the whole key space (memory tier, write-back queues and system of
//! record) page by page; a pattern with a literal prefix (`user:*`) reads
//! only that key range.

use super::{glob_match, Args, Ctx, Flow};
use crate::glob::literal_prefix;
use crate::resp::reply;
use bytes::Bytes;

/// Keys read from the engine per page.
const PAGE: usize = 1000;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let pattern = args.get(1);
    let all = pattern == b"*";
    let prefix = literal_prefix(pattern);
    let mut found: Vec<Bytes> = Vec::new();
    let mut after: Option<Bytes> = None;
    loop {
        let page = match ctx.session.scan_keys(after.as_deref(), prefix, PAGE).await {
            Ok(p) => p,
            Err(e) => {
                ctx.engine_error(&e);
                return Flow::Continue;
            }
        };
        found.extend(
            page.keys
                .into_iter()
                .filter(|k| all || glob_match(pattern, k, false)),
        );
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    reply::array(ctx.out, found.len());
    for k in &found {
        reply::bulk(ctx.out, k);
    }
    Flow::Continue
}
