//! `OBJECT ENCODING key`: the encoding Redis would report for the value:
//! `int` for a canonical 64-bit integer, `embstr` up to 44 bytes, `raw`
//! beyond — unless the value's history says otherwise (`raw` after
//! `APPEND`/`SETRANGE`, never `int` after `INCRBYFLOAT`), which the
//! server's [`EncodingHints`](crate::state::EncodingHints) remember. A
//! hash says `listpack` while it has at most `hash-max-listpack-entries`
//! fields (128) of at most `hash-max-listpack-value` bytes (64, fields and
//! values), `hashtable` beyond, from its current contents and the current
//! thresholds (Redis never converts a `hashtable` back; this is only what
//! Redis would have built for these contents). A list is a `quicklist`
//! (Redis 7.0's only list encoding); a set is an `intset` while all its
//! members are integers and at most `set-max-intset-entries` (512) of
//! them, `hashtable` beyond, on the same terms as a hash; a sorted set
//! `listpack` while it has at most `zset-max-listpack-entries` (128)
//! members of at most `zset-max-listpack-value` bytes (64), `skiplist`
//! beyond. A stream is a `stream`.

use super::{arity_error, parse_i64, unknown_subcommand, Args, Ctx, Flow};
use crate::hash::{Hash, LISTPACK_MAX_ENTRIES, LISTPACK_MAX_VALUE};
use crate::resp::reply;
use crate::set::{Set, INTSET_MAX_ENTRIES};
use crate::zset::{self, ZSet};
use tiercache_engine::{Entry, ValueKind};

use crate::state::EMBSTR_MAX;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if args.is(1, "refcount") {
        return refcount(args, ctx).await;
    }
    if !args.is(1, "encoding") {
        if args.is(1, "help") {
            reply::array(ctx.out, 2);
            reply::simple(ctx.out, "OBJECT ENCODING <key>");
            reply::simple(ctx.out, "OBJECT REFCOUNT <key>");
        } else {
            reply::error(ctx.out, &unknown_subcommand(args.get(1), "object"));
        }
        return Flow::Continue;
    }
    if args.len() != 3 {
        reply::error(ctx.out, &arity_error("object|encoding"));
        return Flow::Continue;
    }
    match ctx.session.get(args.get(2)).await {
        Ok(Some(e)) => match entry_encoding(ctx, args.get(2), &e) {
            Ok(enc) => reply::bulk(ctx.out, enc.as_bytes()),
            Err(msg) => ctx.error(&msg),
        },
        Ok(None) => ctx.null(),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

/// What `OBJECT ENCODING` says of `e`, the value of `key` (Redis's
/// encoding for it, by this server's thresholds), or the error reply for
/// a value that does not decode.
pub(super) fn entry_encoding(
    ctx: &Ctx<'_, '_>,
    key: &[u8],
    e: &Entry,
) -> Result<&'static str, String> {
    let server = &ctx.server;
    Ok(match e.kind {
        ValueKind::Hash => {
            let h = Hash::decode(&e.value).map_err(|c| format!("ERR corrupt hash value: {c}"))?;
            let entries = server.tunable("hash-max-listpack-entries", LISTPACK_MAX_ENTRIES);
            let value = server.tunable("hash-max-listpack-value", LISTPACK_MAX_VALUE);
            h.encoding(entries, value)
        }
        ValueKind::List => "quicklist",
        ValueKind::Stream => "stream",
        ValueKind::Set => {
            let s = Set::decode(&e.value).map_err(|c| format!("ERR corrupt set value: {c}"))?;
            s.encoding(server.tunable("set-max-intset-entries", INTSET_MAX_ENTRIES))
        }
        ValueKind::ZSet => {
            let z = ZSet::decode(&e.value).map_err(|c| format!("ERR corrupt zset value: {c}"))?;
            let entries = server.tunable("zset-max-listpack-entries", zset::LISTPACK_MAX_ENTRIES);
            let value = server.tunable("zset-max-listpack-value", zset::LISTPACK_MAX_VALUE);
            z.encoding(entries, value)
        }
        ValueKind::String => server
            .encodings
            .get(key, &e.value)
            .unwrap_or_else(|| encoding(&e.value)),
    })
}

/// Redis's `OBJ_SHARED_REFCOUNT`: what `OBJECT REFCOUNT` says of a shared
/// integer.
const SHARED_REFCOUNT: i64 = i32::MAX as i64;
/// Redis shares the integers below `OBJ_SHARED_INTEGERS`.
const SHARED_INTEGERS: i64 = 10_000;

/// `OBJECT REFCOUNT key`: values are never shared here, but Redis shares
/// the integers 0..9999 (with no `maxmemory`) and clients (Redis's own
/// test suite among them) look at that; an integer-encoded value in that
/// range answers Redis's shared count, anything else 1.
async fn refcount(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if args.len() != 3 {
        reply::error(ctx.out, &arity_error("object|refcount"));
        return Flow::Continue;
    }
    match ctx.session.get(args.get(2)).await {
        Ok(Some(e)) => {
            let int = e.kind == ValueKind::String
                && ctx
                    .server
                    .encodings
                    .get(args.get(2), &e.value)
                    .unwrap_or_else(|| encoding(&e.value))
                    == "int";
            let shared =
                int && parse_i64(&e.value).is_some_and(|n| (0..SHARED_INTEGERS).contains(&n));
            reply::integer(ctx.out, if shared { SHARED_REFCOUNT } else { 1 });
        }
        Ok(None) => ctx.null(),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

/// The encoding Redis's `tryObjectEncoding` picks for a fresh value.
pub fn encoding(v: &[u8]) -> &'static str {
    if v.len() <= 20 && parse_i64(v).is_some() {
        "int"
    } else if v.len() <= EMBSTR_MAX {
        "embstr"
    } else {
        "raw"
    }
}

#[cfg(test)]
mod tests {
    use super::encoding;

    #[test]
    fn encodings() {
        assert_eq!(encoding(b"12345"), "int");
        assert_eq!(encoding(b"-9223372036854775808"), "int");
        assert_eq!(encoding(b"9223372036854775808"), "embstr");
        assert_eq!(encoding(b"012"), "embstr");
        assert_eq!(encoding(&[b'a'; 44]), "embstr");
        assert_eq!(encoding(&[b'a'; 45]), "raw");
    }
}
