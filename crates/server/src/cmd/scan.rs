//! `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]`.
//!
//! The key space is listed in byte order of the keys, so a cursor stands
//! for the last key a page returned ([`crate::state::ScanCursors`] maps the
//! number to the key). Guarantee, stronger than Redis's: a key present
//! for the whole scan is returned exactly once, whatever is inserted or
//! deleted meanwhile. `COUNT` is the number of keys examined per call, as
//! in Redis: with `MATCH` or `TYPE` a page may be empty while the cursor
//! is not 0. An unknown cursor (never handed out, or forgotten after many
//! newer ones) is an error rather than a silent restart.

use super::keytype::type_name;
use super::{glob_match, parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::glob::literal_prefix;
use crate::resp::reply;
use bytes::Bytes;

/// Most keys examined by one call, whatever `COUNT` says.
const MAX_COUNT: usize = 100_000;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let cursor = match parse_cursor(args.get(1)) {
        Some(c) => c,
        None => {
            reply::error(ctx.out, "ERR invalid cursor");
            return Flow::Continue;
        }
    };
    let mut count: usize = 10;
    let mut pattern: Option<&[u8]> = None;
    let mut type_filter: Option<&[u8]> = None;
    let mut i = 2;
    while i < args.len() {
        let more = i + 1 < args.len();
        if args.is(i, "count") && more {
            match parse_i64(args.get(i + 1)) {
                None => {
                    reply::error(ctx.out, NOT_AN_INTEGER);
                    return Flow::Continue;
                }
                Some(n) if n < 1 => {
                    reply::error(ctx.out, SYNTAX_ERROR);
                    return Flow::Continue;
                }
                Some(n) => count = (n as u64).min(MAX_COUNT as u64) as usize,
            }
        } else if args.is(i, "match") && more {
            pattern = Some(args.get(i + 1)).filter(|p| *p != b"*");
        } else if args.is(i, "type") && more {
            type_filter = Some(args.get(i + 1));
        } else {
            reply::error(ctx.out, SYNTAX_ERROR);
            return Flow::Continue;
        }
        i += 2;
    }
    let after: Option<Bytes> = if cursor == 0 {
        None
    } else {
        match ctx.server.scans.get(cursor) {
            Some(k) => Some(k),
            None => {
                reply::error(ctx.out, "ERR invalid cursor");
                return Flow::Continue;
            }
        }
    };
    let prefix = pattern.map_or(&b""[..], literal_prefix);
    let page = match ctx.session.scan_keys(after.as_deref(), prefix, count).await {
        Ok(p) => p,
        Err(e) => {
            ctx.engine_error(&e);
            return Flow::Continue;
        }
    };
    let mut keys: Vec<&Bytes> = page
        .keys
        .iter()
        .filter(|k| pattern.map_or(true, |p| glob_match(p, k, false)))
        .collect();
    if let Some(wanted) = type_filter {
        // The type lives in the value: read the page's keys (one batch) and
        // keep those of that type; a key gone meanwhile is not listed.
        let owned: Vec<Bytes> = keys.iter().map(|k| (*k).clone()).collect();
        let entries = match ctx.session.get_many(&owned).await {
            Ok(e) => e,
            Err(e) => {
                ctx.engine_error(&e);
                return Flow::Continue;
            }
        };
        let mut of_type = entries.iter().map(|e| {
            e.as_ref()
                .is_some_and(|e| wanted.eq_ignore_ascii_case(type_name(e.kind).as_bytes()))
        });
        keys.retain(|_| of_type.next().unwrap_or(false));
    }
    let next = page.next.map_or(0, |k| ctx.server.scans.open(k));
    reply::array(ctx.out, 2);
    reply::bulk(ctx.out, next.to_string().as_bytes());
    reply::array(ctx.out, keys.len());
    for k in keys {
        reply::bulk(ctx.out, k);
    }
    Flow::Continue
}

/// An unsigned decimal cursor, as Redis's `strtoul` check accepts it.
fn parse_cursor(raw: &[u8]) -> Option<u64> {
    if raw.is_empty() || !raw.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(raw).ok()?.parse().ok()
}
