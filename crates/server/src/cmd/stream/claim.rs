//! `XPENDING`, `XCLAIM` and `XAUTOCLAIM`: inspecting a group's pending
//! entries and moving them between consumers.

use super::{corrupt, modify, no_group, parse_interval, read, reply_id, reply_item};
use crate::cmd::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::notify::class;
use crate::resp::reply;
use crate::stream::{Group, Item, Stream, StreamId, INVALID_ID};
use tiercache_engine::now_ms;

/// What `XPENDING`'s extended form parsed.
struct Extended<'a> {
    min_idle: i64,
    start: StreamId,
    end: StreamId,
    count: u64,
    consumer: Option<&'a [u8]>,
}

fn parse_extended<'a>(args: &Args<'a>) -> Result<Option<Extended<'a>>, &'static str> {
    let n = args.len();
    if n != 3 && !(6..=9).contains(&n) {
        return Err(SYNTAX_ERROR);
    }
    if n == 3 {
        return Ok(None);
    }
    let (mut at, mut min_idle) = (3, 0);
    if args.is(3, "idle") {
        min_idle = parse_i64(args.get(4)).ok_or(NOT_AN_INTEGER)?;
        if n < 8 {
            return Err(SYNTAX_ERROR);
        }
        at = 5;
    }
    let count = parse_i64(args.get(at + 2)).ok_or(NOT_AN_INTEGER)?.max(0) as u64;
    let start = parse_interval(args.get(at), true)?;
    let end = parse_interval(args.get(at + 1), false)?;
    Ok(Some(Extended {
        min_idle,
        start,
        end,
        count,
        consumer: (at + 3 < n).then(|| args.get(at + 3)),
    }))
}

/// `XPENDING key group [[IDLE min-idle-time] start end count [consumer]]`:
/// a summary (count, first and last ID, pending per consumer), or the
/// pending entries in a range.
pub async fn xpending(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let extended = match parse_extended(args) {
        Ok(e) => e,
        Err(msg) => {
            ctx.error(msg);
            return Flow::Continue;
        }
    };
    let s = match read(ctx, args.get(1)).await {
        Ok(s) => s,
        Err(msg) => {
            ctx.error(&msg);
            return Flow::Continue;
        }
    };
    let groups = match s.as_ref().map(Stream::groups).transpose() {
        Ok(groups) => groups,
        Err(c) => {
            ctx.error(&corrupt(c));
            return Flow::Continue;
        }
    };
    let Some(g) = groups.and_then(|g| g.get(args.get(2))) else {
        ctx.error(&no_group(args.get(1), args.get(2)));
        return Flow::Continue;
    };
    match extended {
        None => summary(ctx, g),
        Some(e) => pending_range(ctx, g, &e),
    }
    Flow::Continue
}

fn summary(ctx: &mut Ctx<'_, '_>, g: &Group) {
    let proto = ctx.proto();
    reply::array(ctx.out, 4);
    reply::integer(ctx.out, g.pel.len() as i64);
    let (Some((first, _)), Some((last, _))) = (g.pel.first_key_value(), g.pel.last_key_value())
    else {
        reply::null(ctx.out, proto);
        reply::null(ctx.out, proto);
        reply::null_array(ctx.out, proto);
        return;
    };
    reply_id(ctx.out, *first);
    reply_id(ctx.out, *last);
    let busy: Vec<_> = g
        .consumers
        .iter()
        .filter(|(_, c)| !c.pel.is_empty())
        .collect();
    reply::array(ctx.out, busy.len());
    for (name, c) in busy {
        reply::array(ctx.out, 2);
        reply::bulk(ctx.out, name);
        reply::bulk(ctx.out, c.pel.len().to_string().as_bytes());
    }
}

fn pending_range(ctx: &mut Ctx<'_, '_>, g: &Group, e: &Extended<'_>) {
    let ids: Vec<StreamId> = match e.consumer {
        Some(name) => match g.consumers.get(name) {
            Some(c) => c.pel.range(e.start..).copied().collect(),
            None => {
                reply::array(ctx.out, 0);
                return;
            }
        },
        None => g.pel.range(e.start..).map(|(id, _)| *id).collect(),
    };
    let now = now_ms() as i64;
    let mut rows = Vec::new();
    for id in ids.into_iter().take_while(|&id| id <= e.end) {
        if rows.len() as u64 >= e.count {
            break;
        }
        let nack = &g.pel[&id];
        let idle = now - nack.delivery_time as i64;
        if e.min_idle != 0 && idle < e.min_idle {
            continue;
        }
        rows.push((id, nack, idle.max(0)));
    }
    reply::array(ctx.out, rows.len());
    for (id, nack, idle) in rows {
        reply::array(ctx.out, 4);
        reply_id(ctx.out, id);
        reply::bulk(ctx.out, &nack.consumer);
        reply::integer(ctx.out, idle);
        reply::integer(ctx.out, nack.delivery_count as i64);
    }
}

/// What a claim answers per entry.
enum Claimed {
    Id(StreamId),
    Entry(Item),
}

fn reply_claimed(ctx: &mut Ctx<'_, '_>, claimed: &[Claimed]) {
    reply::array(ctx.out, claimed.len());
    for c in claimed {
        match c {
            Claimed::Id(id) => reply_id(ctx.out, *id),
            Claimed::Entry(item) => reply_item(ctx.out, item),
        }
    }
}

/// The stream at a claim's key, if it has the group; else Redis's
/// `NOGROUP` error.
fn with_group<'s>(
    s: &'s mut Option<Stream>,
    key: &[u8],
    group: &[u8],
) -> Result<&'s mut Stream, String> {
    match s.as_mut() {
        Some(s) if s.groups().map_err(corrupt)?.contains_key(group) => Ok(s),
        _ => Err(no_group(key, group)),
    }
}

/// The group a claim works on (its stream passed [`with_group`]).
fn group_of<'s>(s: &'s mut Stream, group: &[u8]) -> Result<&'s mut Group, String> {
    Ok(s.groups_mut()
        .map_err(corrupt)?
        .get_mut(group)
        .expect("checked"))
}

/// Moves pending entry `id` to `consumer` (created, and seen, on first
/// use) with this delivery time; true when this created the consumer.
fn take_over(
    g: &mut Group,
    id: StreamId,
    consumer: &[u8],
    seen: &mut bool,
    now: u64,
    time: u64,
    count: u64,
) -> bool {
    let mut created = false;
    if !*seen {
        created = !g.consumers.contains_key(consumer);
        g.touch_consumer(consumer, now);
        *seen = true;
    }
    g.assign(id, consumer, time, count);
    created
}

/// A claim of `id` as replicas get it (Redis's `streamPropagateXCLAIM`):
/// forced, with the delivery time and count it came to and the group's
/// last ID, so that it does the same there whatever their clocks say.
fn claim_as(key: &[u8], group: &[u8], g: &Group, id: StreamId, consumer: &[u8]) -> Vec<Vec<u8>> {
    let text = |s: String| s.into_bytes();
    let (owner, time, count) = match g.pel.get(&id) {
        Some(n) => (n.consumer.to_vec(), n.delivery_time, n.delivery_count),
        None => (consumer.to_vec(), 0, 0),
    };
    vec![
        b"XCLAIM".to_vec(),
        key.to_vec(),
        group.to_vec(),
        owner,
        b"0".to_vec(),
        text(id.to_string()),
        b"TIME".to_vec(),
        text(time.to_string()),
        b"RETRYCOUNT".to_vec(),
        text(count.to_string()),
        b"FORCE".to_vec(),
        b"JUSTID".to_vec(),
        b"LASTID".to_vec(),
        text(g.last_id.to_string()),
    ]
}

/// Feeds what a claim propagates: the claims, or only the group's new last
/// ID (`last_id`, with its entries read) when it claimed nothing.
fn propagate_claims(
    ctx: &mut Ctx<'_, '_>,
    claims: &[Vec<Vec<u8>>],
    last_id: Option<(StreamId, i64)>,
    key: &[u8],
    group: &[u8],
) {
    ctx.propagate_nothing();
    for argv in claims {
        let argv: Vec<&[u8]> = argv.iter().map(|a| &a[..]).collect();
        ctx.propagate_as(&argv);
    }
    if let (true, Some((id, read))) = (claims.is_empty(), last_id) {
        let (id, read) = (id.to_string(), read.to_string());
        ctx.propagate_as(&[
            b"XGROUP",
            b"SETID",
            key,
            group,
            id.as_bytes(),
            b"ENTRIESREAD",
            read.as_bytes(),
        ]);
    }
    if !claims.is_empty() || last_id.is_some() {
        ctx.mark_dirty();
    }
}

/// The event of a claim that created its consumer.
fn notify_created(ctx: &Ctx<'_, '_>, key: &[u8], created: bool) {
    if created {
        ctx.notify(class::STREAM, "xgroup-createconsumer", key);
    }
}

/// `XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME
/// ms] [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID id]`.
pub async fn xclaim(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let now = now_ms();
    let r = modify(ctx, args.get(1), |s| {
        let (group, consumer) = (args.get(2), args.get(3));
        let s = with_group(s, args.get(1), group)?;
        let min_idle = parse_i64(args.get(4))
            .ok_or("ERR Invalid min-idle-time argument for XCLAIM")?
            .max(0);
        let mut j = 5;
        let mut ids = Vec::new();
        while j < args.len() {
            match StreamId::parse_strict(args.get(j), 0) {
                Some(id) => ids.push(id),
                None => break,
            }
            j += 1;
        }
        let o = parse_claim_options(args, j, now)?;
        let g = group_of(s, group)?;
        let mut changed = false;
        let mut moved_to = None;
        if o.last_id > g.last_id {
            g.last_id = o.last_id;
            moved_to = Some((g.last_id, g.entries_read.unwrap_or(-1)));
            changed = true;
        }
        let mut claims = Vec::new();
        let time = match o.delivery_time {
            Some(t) if t >= 0 && t <= now as i64 => t as u64,
            _ => now,
        };
        let mut claimed = Vec::new();
        let (mut seen, mut created) = (false, false);
        for id in ids {
            let Some(item) = s.get(id).map_err(corrupt)? else {
                // The entry is gone: so is its pending entry.
                let g = group_of(s, group)?;
                if g.pel.contains_key(&id) {
                    claims.push(claim_as(args.get(1), group, g, id, consumer));
                }
                changed |= g.ack(id);
                continue;
            };
            let g = group_of(s, group)?;
            let (idle_since, count) = match g.pel.get(&id) {
                Some(n) => (Some(n.delivery_time), n.delivery_count),
                None if o.force => (None, 1),
                None => continue,
            };
            if let Some(t) = idle_since {
                if min_idle != 0 && (now as i64 - t as i64) < min_idle {
                    continue;
                }
            }
            let count = match o.retry_count {
                Some(n) => n,
                None if o.just_id => count,
                None => count + 1,
            };
            created |= take_over(g, id, consumer, &mut seen, now, time, count);
            claims.push(claim_as(args.get(1), group, g, id, consumer));
            changed = true;
            claimed.push(if o.just_id {
                Claimed::Id(id)
            } else {
                Claimed::Entry(item)
            });
        }
        Ok(((claimed, created, claims, moved_to), changed))
    })
    .await;
    match r {
        Ok((claimed, created, claims, moved_to)) => {
            notify_created(ctx, args.get(1), created);
            propagate_claims(ctx, &claims, moved_to, args.get(1), args.get(2));
            reply_claimed(ctx, &claimed)
        }
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

struct ClaimOptions {
    force: bool,
    just_id: bool,
    delivery_time: Option<i64>,
    retry_count: Option<u64>,
    last_id: StreamId,
}

/// `XCLAIM`'s options, from argument `j` (where the IDs stopped).
fn parse_claim_options(args: &Args<'_>, mut j: usize, now: u64) -> Result<ClaimOptions, String> {
    let mut o = ClaimOptions {
        force: false,
        just_id: false,
        delivery_time: None,
        retry_count: None,
        last_id: StreamId::MIN,
    };
    while j < args.len() {
        let more = args.len() - 1 - j;
        if args.is(j, "force") {
            o.force = true;
        } else if args.is(j, "justid") {
            o.just_id = true;
        } else if args.is(j, "idle") && more > 0 {
            j += 1;
            let idle =
                parse_i64(args.get(j)).ok_or("ERR Invalid IDLE option argument for XCLAIM")?;
            o.delivery_time = Some((now as i64).wrapping_sub(idle));
        } else if args.is(j, "time") && more > 0 {
            j += 1;
            let t = parse_i64(args.get(j)).ok_or("ERR Invalid TIME option argument for XCLAIM")?;
            o.delivery_time = Some(t);
        } else if args.is(j, "retrycount") && more > 0 {
            j += 1;
            let n = parse_i64(args.get(j))
                .ok_or("ERR Invalid RETRYCOUNT option argument for XCLAIM")?;
            // A negative count reads as "not given", as in Redis.
            o.retry_count = (n >= 0).then_some(n as u64);
        } else if args.is(j, "lastid") && more > 0 {
            j += 1;
            o.last_id = StreamId::parse_strict(args.get(j), 0).ok_or(INVALID_ID)?;
        } else {
            return Err(format!(
                "ERR Unrecognized XCLAIM option '{}'",
                String::from_utf8_lossy(args.get(j))
            ));
        }
        j += 1;
    }
    Ok(o)
}

/// `XAUTOCLAIM key group consumer min-idle-time start [COUNT count]
/// [JUSTID]`: `[next cursor, claimed, deleted IDs]`.
pub async fn xautoclaim(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let parsed = parse_autoclaim(args);
    let (min_idle, start, count, just_id) = match parsed {
        Ok(p) => p,
        Err(msg) => {
            ctx.error(&msg);
            return Flow::Continue;
        }
    };
    let now = now_ms();
    let consumer = args.get(3);
    let r = modify(ctx, args.get(1), |s| {
        let s = with_group(s, args.get(1), args.get(2))?;
        let mut budget = count.saturating_mul(10);
        let mut left = count;
        let candidates: Vec<StreamId> = group_of(s, args.get(2))?
            .pel
            .range(start..)
            .take(budget.min(usize::MAX as u64 - 1) as usize + 1)
            .map(|(id, _)| *id)
            .collect();
        let (mut claimed, mut deleted, mut seen, mut changed) =
            (Vec::new(), Vec::new(), false, false);
        let mut created = false;
        let mut claims = Vec::new();
        let mut next = 0;
        while budget > 0 && left > 0 && next < candidates.len() {
            budget -= 1;
            let id = candidates[next];
            next += 1;
            let item = s.get(id).map_err(corrupt)?;
            let g = group_of(s, args.get(2))?;
            let Some(item) = item else {
                claims.push(claim_as(args.get(1), args.get(2), g, id, consumer));
                g.ack(id);
                deleted.push(id);
                changed = true;
                left -= 1;
                continue;
            };
            let nack = &g.pel[&id];
            if min_idle != 0 && (now as i64 - nack.delivery_time as i64) < min_idle {
                continue;
            }
            let count = nack.delivery_count + u64::from(!just_id);
            created |= take_over(g, id, consumer, &mut seen, now, now, count);
            claims.push(claim_as(args.get(1), args.get(2), g, id, consumer));
            changed = true;
            claimed.push(if just_id {
                Claimed::Id(id)
            } else {
                Claimed::Entry(item)
            });
            left -= 1;
        }
        let cursor = candidates.get(next).copied().unwrap_or(StreamId::MIN);
        Ok(((cursor, claimed, deleted, created, claims), changed))
    })
    .await;
    match r {
        Ok((cursor, claimed, deleted, created, claims)) => {
            notify_created(ctx, args.get(1), created);
            propagate_claims(ctx, &claims, None, args.get(1), args.get(2));
            reply::array(ctx.out, 3);
            reply_id(ctx.out, cursor);
            reply_claimed(ctx, &claimed);
            reply::array(ctx.out, deleted.len());
            for id in deleted {
                reply_id(ctx.out, id);
            }
        }
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

/// `XAUTOCLAIM`'s arguments, checked before the key as Redis does.
fn parse_autoclaim(args: &Args<'_>) -> Result<(i64, StreamId, u64, bool), String> {
    let min_idle = parse_i64(args.get(4))
        .ok_or("ERR Invalid min-idle-time argument for XAUTOCLAIM")?
        .max(0);
    let start = parse_interval(args.get(5), true)?;
    let (mut count, mut just_id) = (100u64, false);
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if args.is(j, "count") && more > 0 {
            // Redis bounds COUNT so that COUNT * 10 attempts cannot overflow.
            let max = i64::MAX / 16;
            const BAD_COUNT: &str = "ERR COUNT must be > 0";
            let n = parse_i64(args.get(j + 1)).ok_or(BAD_COUNT)?;
            if !(1..=max).contains(&n) {
                return Err(BAD_COUNT.into());
            }
            count = n as u64;
            j += 1;
        } else if args.is(j, "justid") {
            just_id = true;
        } else {
            return Err(SYNTAX_ERROR.into());
        }
        j += 1;
    }
    Ok((min_idle, start, count, just_id))
}
