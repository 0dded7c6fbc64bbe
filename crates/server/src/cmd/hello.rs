//! `HELLO [protover [AUTH username password] [SETNAME name]]`: switches
//! the reply protocol (2 or 3), optionally authenticates and names the
//! client, and answers Redis 7's server map.

use super::auth::authenticate;
use super::client::valid_name;
use super::{parse_i64, Args, Ctx, Flow, REDIS_VERSION, WRONGPASS};
use crate::resp::{reply, Proto};

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let mut proto = None;
    let mut next = 1;
    if args.len() >= 2 {
        next = 2;
        match parse_i64(args.get(1)) {
            None => {
                reply::error(
                    ctx.out,
                    "ERR Protocol version is not an integer or out of range",
                );
                return Flow::Continue;
            }
            Some(2) => proto = Some(Proto::Resp2),
            Some(3) => proto = Some(Proto::Resp3),
            Some(_) => {
                reply::error(ctx.out, "NOPROTO unsupported protocol version");
                return Flow::Continue;
            }
        }
    }
    let mut auth = None;
    let mut name = None;
    let mut j = next;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if args.is(j, "auth") && more >= 2 {
            auth = Some((args.get(j + 1), args.get(j + 2)));
            j += 2;
        } else if args.is(j, "setname") && more >= 1 {
            name = Some(args.get(j + 1));
            j += 1;
        } else {
            reply::error(
                ctx.out,
                &format!("ERR Syntax error in HELLO option '{}'", args.text(j)),
            );
            return Flow::Continue;
        }
        j += 1;
    }
    if let Some((user, pass)) = auth {
        if !authenticate(ctx, user, pass) {
            reply::error(ctx.out, WRONGPASS);
            return Flow::Continue;
        }
    }
    if !ctx.client.authenticated {
        reply::error(
            ctx.out,
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time",
        );
        return Flow::Continue;
    }
    if let Some(name) = name {
        if !valid_name(name) {
            reply::error(
                ctx.out,
                "ERR Client names cannot contain spaces, newlines or special characters.",
            );
            return Flow::Continue;
        }
        ctx.client
            .info
            .with_names(|n| n.name = (!name.is_empty()).then(|| name.to_vec()));
    }
    if let Some(p) = proto {
        ctx.client.set_proto(p);
    }
    let p = ctx.proto();
    let out = &mut *ctx.out;
    reply::map(out, 7, p);
    reply::bulk(out, b"server");
    reply::bulk(out, b"redis");
    reply::bulk(out, b"version");
    reply::bulk(out, REDIS_VERSION.as_bytes());
    reply::bulk(out, b"proto");
    reply::integer(out, p.version());
    reply::bulk(out, b"id");
    reply::integer(out, ctx.client.id as i64);
    reply::bulk(out, b"mode");
    reply::bulk(out, b"standalone");
    reply::bulk(out, b"role");
    reply::bulk(out, b"master");
    reply::bulk(out, b"modules");
    reply::array(out, 0);
    Flow::Continue
}
