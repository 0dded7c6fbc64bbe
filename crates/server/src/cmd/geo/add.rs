//! `GEOADD key [NX|XX] [CH] longitude latitude member [...]`.

use super::{is_word, parse_lonlat};
use crate::cmd::zset::write::zadd;
use crate::cmd::{Args, Ctx, Flow, SYNTAX_ERROR};
use crate::geohash::encode_score;

/// `GEOADD`: checks its options and coordinates, then runs `ZADD key
/// [options] score member ...` with each point's score, as Redis does
/// (so the reply, and what `ZADD` does to a key of another type, are
/// `ZADD`'s, and so is the sorted set it writes).
pub async fn geoadd(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let (mut nx, mut xx) = (false, false);
    let mut at = 2;
    while at < args.len() {
        let opt = args.get(at);
        if is_word(opt, "nx") {
            nx = true;
        } else if is_word(opt, "xx") {
            xx = true;
        } else if !is_word(opt, "ch") {
            break;
        }
        at += 1;
    }
    if (args.len() - at) % 3 != 0 || (xx && nx) {
        ctx.error(SYNTAX_ERROR);
        return Flow::Continue;
    }
    // The ZADD command line: name, key and options as given, then a
    // score and a member per point.
    let mut buf = Vec::new();
    let mut ranges = Vec::with_capacity(at + (args.len() - at) / 3 * 2);
    let mut push = |bytes: &[u8]| {
        let start = buf.len();
        buf.extend_from_slice(bytes);
        ranges.push((start, buf.len()));
    };
    push(b"zadd");
    push(args.get(1));
    for i in 2..at {
        // Normalised: ZADD compares its options whole, Redis up to a NUL.
        let opt = args.get(i);
        let word: &[u8] = if is_word(opt, "nx") {
            b"nx"
        } else if is_word(opt, "xx") {
            b"xx"
        } else {
            b"ch"
        };
        push(word);
    }
    for i in (at..args.len()).step_by(3) {
        let [lon, lat] = match parse_lonlat(args, i) {
            Ok(xy) => xy,
            Err(msg) => {
                ctx.error(&msg);
                return Flow::Continue;
            }
        };
        let score = encode_score(lon, lat).expect("within the limits checked");
        push(score.to_string().as_bytes());
        push(args.get(i + 2));
    }
    zadd(&Args::new(&buf, &ranges), ctx, false).await
}
