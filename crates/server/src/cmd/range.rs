//! `GETRANGE key start end` and `SETRANGE key offset value`, with Redis
//! 7's index rules (negative indexes count from the end, out-of-range
//! ones are clamped) and zero padding.

use super::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER, TOO_BIG};
use crate::notify::class;
use crate::resp::reply;
use crate::state::hint_fingerprint;
use tiercache_engine::Update;

pub async fn getrange(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let (Some(start), Some(end)) = (parse_i64(args.get(2)), parse_i64(args.get(3))) else {
        reply::error(ctx.out, NOT_AN_INTEGER);
        return Flow::Continue;
    };
    match super::get_string(ctx.session, args.get(1)).await {
        Ok(e) => {
            let value = e.map(|e| e.value).unwrap_or_default();
            reply::bulk(ctx.out, substring(&value, start, end));
        }
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

/// Redis's `getrangeCommand` index arithmetic.
fn substring(s: &[u8], mut start: i64, mut end: i64) -> &[u8] {
    let len = s.len() as i64;
    if start < 0 && end < 0 && start > end {
        return &[];
    }
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if start > end || len == 0 {
        return &[];
    }
    &s[start as usize..=end as usize]
}

pub async fn setrange(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let Some(offset) = parse_i64(args.get(2)) else {
        reply::error(ctx.out, NOT_AN_INTEGER);
        return Flow::Continue;
    };
    if offset < 0 {
        reply::error(ctx.out, "ERR offset is out of range");
        return Flow::Continue;
    }
    let patch = args.get(3);
    let max = ctx.server.config.limits.max_bulk_len as i64;
    let r = super::update_string(ctx.session, args.get(1), |old| {
        let old_len = old.map_or(0, |e| e.value.len());
        if patch.is_empty() {
            // Nothing to write: the current length, and no key is created.
            return (Update::Keep, Ok((old_len, None)));
        }
        let end = match offset.checked_add(patch.len() as i64) {
            Some(end) if end <= max => end as usize,
            _ => return (Update::Keep, Err(())),
        };
        let mut v = old.map_or_else(Vec::new, |e| e.value.to_vec());
        if v.len() < end {
            v.resize(end, 0);
        }
        v[offset as usize..end].copy_from_slice(patch);
        let len = v.len();
        // A string written in place is `raw` in Redis.
        let fp = hint_fingerprint(&v);
        let update = super::rewrite_string(old, v);
        (update, Ok((len, fp)))
    })
    .await;
    match r {
        Ok(Ok((len, fp))) => {
            if !patch.is_empty() {
                ctx.notify(class::STRING, "setrange", args.get(1));
            }
            if let Some(fp) = fp {
                ctx.server.encodings.note(args.get(1), fp, "raw");
            }
            reply::integer(ctx.out, len as i64);
        }
        Ok(Err(())) => reply::error(ctx.out, TOO_BIG),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

#[cfg(test)]
mod tests {
    use super::substring;

    #[test]
    fn redis_index_rules() {
        let s = b"Hello World";
        assert_eq!(substring(s, 0, 3), b"Hell");
        assert_eq!(substring(s, -3, -1), b"rld");
        assert_eq!(substring(s, 0, -1), s);
        assert_eq!(substring(s, 5, 3), b"");
        assert_eq!(substring(s, 0, 100), s);
        assert_eq!(substring(s, -100, 2), b"Hel");
        assert_eq!(substring(s, -1, -5), b"");
        assert_eq!(substring(b"", 0, -1), b"");
        assert_eq!(substring(s, i64::MIN, i64::MAX), s);
    }
}
