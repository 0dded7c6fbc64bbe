//! `SUBSCRIBE`, `PSUBSCRIBE`, `SSUBSCRIBE` and `UNSUBSCRIBE`,
//! `PUNSUBSCRIBE`, `SUNSUBSCRIBE`.
//!
//! Each name gets its own confirmation, a push (an array in RESP2) of the
//! kind word, the name and the connection's subscription count after it
//! (channels and patterns together, shard channels on their own, as Redis
//! 7.0 counts). Confirmations are pushes, so `CLIENT REPLY OFF` does not
//! drop them. An unsubscribe with no names leaves every subscription of
//! its space, and answers once with a null name when there was none.

use crate::cmd::{Args, Ctx, Flow};
use crate::pubsub::Space;
use crate::resp::{reply, Proto};
use crate::state::ClientState;
use bytes::BytesMut;
use std::sync::atomic::Ordering;

fn confirm(out: &mut BytesMut, proto: Proto, word: &str, name: Option<&[u8]>, count: usize) {
    reply::push(out, 3, proto);
    reply::bulk(out, word.as_bytes());
    reply::bulk_or_null(out, name, proto);
    reply::integer(out, count as i64);
}

/// `SUBSCRIBE`, `PSUBSCRIBE` or `SSUBSCRIBE` (by `space`) every name.
pub async fn subscribe(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, space: Space) -> Flow {
    let proto = ctx.client.proto;
    let mailbox = ctx.client.mailbox();
    let subs = ctx.client.pubsub.get_or_insert_with(Box::default);
    for i in 1..args.len() {
        ctx.server
            .pubsub
            .subscribe(ctx.client.id, &mailbox, subs, space, args.get(i));
        let count = subs.reported_count(space);
        confirm(
            ctx.out,
            proto,
            space.subscribe_word(),
            Some(args.get(i)),
            count,
        );
    }
    ctx.client.pushed = true;
    publish_counts(ctx.client);
    Flow::Continue
}

/// `UNSUBSCRIBE`, `PUNSUBSCRIBE` or `SUNSUBSCRIBE` (by `space`) the
/// names, or every subscription of the space.
pub async fn unsubscribe(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, space: Space) -> Flow {
    let proto = ctx.client.proto;
    let word = space.unsubscribe_word();
    ctx.client.pushed = true;
    let Some(subs) = ctx.client.pubsub.as_mut() else {
        // Subscribed to nothing: every name answers 0.
        if args.len() == 1 {
            confirm(ctx.out, proto, word, None, 0);
        }
        for i in 1..args.len() {
            confirm(ctx.out, proto, word, Some(args.get(i)), 0);
        }
        return Flow::Continue;
    };
    if args.len() == 1 {
        let names = subs.names(space);
        if names.is_empty() {
            confirm(ctx.out, proto, word, None, subs.reported_count(space));
        }
        for name in names {
            ctx.server
                .pubsub
                .unsubscribe(ctx.client.id, subs, space, &name);
            confirm(
                ctx.out,
                proto,
                word,
                Some(&name),
                subs.reported_count(space),
            );
        }
    } else {
        for i in 1..args.len() {
            ctx.server
                .pubsub
                .unsubscribe(ctx.client.id, subs, space, args.get(i));
            confirm(
                ctx.out,
                proto,
                word,
                Some(args.get(i)),
                subs.reported_count(space),
            );
        }
    }
    if subs.total() == 0 {
        // Out of subscriber mode. Messages posted before the last
        // unsubscribe still go out.
        ctx.client.pubsub = None;
        ctx.client.release_mailbox(ctx.out);
    }
    publish_counts(ctx.client);
    Flow::Continue
}

/// Leaves every subscription without a confirmation (`RESET`, a closed
/// connection).
pub fn leave(client: &mut ClientState, pubsub: &crate::pubsub::PubSub) {
    if let Some(mut subs) = client.pubsub.take() {
        pubsub.unsubscribe_all(client.id, &mut subs);
        publish_counts(client);
    }
}

/// Shows the subscription counts in `CLIENT LIST`.
fn publish_counts(client: &ClientState) {
    for (n, space) in [Space::Channel, Space::Pattern, Space::Shard]
        .into_iter()
        .enumerate()
    {
        let count = client.pubsub.as_ref().map_or(0, |s| s.count(space));
        client.info.subscriptions[n].store(count as u32, Ordering::Relaxed);
    }
}
