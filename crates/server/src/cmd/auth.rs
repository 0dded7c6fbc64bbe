//! `AUTH password` and `AUTH username password`: the only user is
//! `default`, whose password is `requirepass`. Without `requirepass`,
//! `AUTH password` is Redis's "no password configured" error and
//! `AUTH default anything` succeeds, as with Redis's `nopass` user.

use super::{Args, Ctx, Flow, SYNTAX_ERROR, WRONGPASS};
use crate::resp::reply;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if args.len() > 3 {
        reply::error(ctx.out, SYNTAX_ERROR);
        return Flow::Continue;
    }
    if args.len() == 2 && !ctx.server.auth_required() {
        reply::error(
            ctx.out,
            "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
        );
        return Flow::Continue;
    }
    let (user, pass) = if args.len() == 2 {
        (&b"default"[..], args.get(1))
    } else {
        (args.get(1), args.get(2))
    };
    if authenticate(ctx, user, pass) {
        reply::ok(ctx.out);
    } else {
        reply::error(ctx.out, WRONGPASS);
    }
    Flow::Continue
}

/// Checks `user`/`pass`; on success the connection is authenticated.
pub fn authenticate(ctx: &mut Ctx<'_, '_>, user: &[u8], pass: &[u8]) -> bool {
    // Check the password even for a wrong user, so timing tells nothing.
    let pass_ok = ctx.server.check_password(pass);
    let ok = pass_ok && user == b"default";
    if ok {
        ctx.client.authenticated = true;
    }
    ok
}
