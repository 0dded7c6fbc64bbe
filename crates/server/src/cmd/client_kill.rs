//! `CLIENT KILL addr:port` (the old form: `+OK`, or an error when no
//! client has that address) and `CLIENT KILL <filter value> ...` (the
//! number killed), with Redis 7.0's filters `ID`, `TYPE`, `USER`, `ADDR`,
//! `LADDR` and `SKIPME`, checked in its order and words.
//!
//! A killed connection finishes the batch it runs, sends its replies and
//! closes (its [`Killer`](crate::shutdown::Killer)); a client that kills
//! itself gets its reply first, as Redis's close-after-reply.

use super::{parse_i64, Args, Ctx, Flow, SYNTAX_ERROR};
use crate::resp::reply;
use crate::state::ClientInfo;

/// Which clients a `TYPE` filter keeps: subscribers or not; `None` for
/// the types this server has no clients of (masters, replicas).
type Kind = Option<bool>;

#[derive(Default)]
struct Filter<'a> {
    id: Option<u64>,
    kind: Option<Kind>,
    addr: Option<&'a [u8]>,
    laddr: Option<&'a [u8]>,
    skip_me: bool,
}

impl Filter<'_> {
    fn matches(&self, c: &ClientInfo, me: u64) -> bool {
        self.addr.map_or(true, |a| a == c.addr.as_bytes())
            && self.laddr.map_or(true, |a| a == c.laddr.as_bytes())
            && self.kind.map_or(true, |k| k == Some(c.is_subscriber()))
            && self.id.map_or(true, |id| id == c.id)
            && !(self.skip_me && c.id == me)
    }
}

pub fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let old_form = args.len() == 3;
    let filter = if old_form {
        Filter {
            addr: Some(args.get(2)),
            ..Filter::default()
        }
    } else if args.len() % 2 == 0 {
        match parse_filters(args) {
            Ok(f) => f,
            Err(msg) => {
                ctx.error(&msg);
                return Flow::Continue;
            }
        }
    } else {
        ctx.error(SYNTAX_ERROR);
        return Flow::Continue;
    };
    let mut killed = 0;
    for c in ctx.server.clients() {
        if filter.matches(&c, ctx.client.id) {
            if let Some(killer) = c.killer.get() {
                killer.kill();
            }
            killed += 1;
        }
    }
    if !old_form {
        reply::integer(ctx.out, killed);
    } else if killed == 0 {
        ctx.error("ERR No such client");
    } else {
        reply::ok(ctx.out);
    }
    Flow::Continue
}

fn parse_filters<'a>(args: &Args<'a>) -> Result<Filter<'a>, String> {
    let mut f = Filter {
        skip_me: true,
        ..Filter::default()
    };
    for i in (2..args.len()).step_by(2) {
        let value = args.get(i + 1);
        if args.is(i, "id") {
            match parse_i64(value) {
                Some(id) if id > 0 => f.id = Some(id as u64),
                _ => return Err("ERR client-id should be greater than 0".into()),
            }
        } else if args.is(i, "type") {
            f.kind = Some(match &value.to_ascii_lowercase()[..] {
                b"normal" => Some(false),
                b"pubsub" => Some(true),
                b"master" | b"slave" | b"replica" => None,
                _ => return Err(format!("ERR Unknown client type '{}'", args.text(i + 1))),
            });
        } else if args.is(i, "addr") {
            f.addr = Some(value);
        } else if args.is(i, "laddr") {
            f.laddr = Some(value);
        } else if args.is(i, "user") {
            // One user, `default`, whom every connection is.
            if value != b"default" {
                return Err(format!("ERR No such user '{}'", args.text(i + 1)));
            }
        } else if args.is(i, "skipme") {
            f.skip_me = match &value.to_ascii_lowercase()[..] {
                b"yes" => true,
                b"no" => false,
                _ => return Err(SYNTAX_ERROR.into()),
            };
        } else {
            return Err(SYNTAX_ERROR.into());
        }
    }
    Ok(f)
}
