//! `XRANGE`, `XREVRANGE`, `XREAD` and `XREADGROUP`.
//!
//! `XREAD`/`XREADGROUP` with `BLOCK` and nothing to serve wait as
//! [`blocking`](crate::cmd::blocking) describes, and run again when a key
//! they read is written. A blocked `XREAD` keeps the IDs it resolved on its
//! first run, so `$` means "after the last entry when I blocked". On a
//! second run, a key that now holds another type is passed over by
//! `XREAD`; `XREADGROUP` then answers Redis's errors for a stream or group
//! that went away. Redis serves a woken client from the one key that
//! became ready; here every key with new entries is served.

use super::{corrupt, no_group, parse_count, parse_interval, read, reply_id, reply_item, store};
use crate::cmd::blocking::{finish, null_array, start};
use crate::cmd::collection::collection_of;
use crate::cmd::{engine_error_message, parse_i64, Args, Ctx, Flow, SYNTAX_ERROR};
use crate::notify::class;
use crate::resp::{reply, Proto};
use crate::stream::{Item, Stream, StreamId, INVALID_ID};
use bytes::{Bytes, BytesMut};
use std::time::Duration;
use tiercache_engine::{now_ms, Change};

/// How many entries a woken blocked read serves when it named no `COUNT`
/// (Redis's `XREAD_BLOCKED_DEFAULT_COUNT`).
const BLOCKED_DEFAULT_COUNT: u64 = 1000;

/// `XRANGE key start end [COUNT count]`, and `XREVRANGE key end start
/// [COUNT count]` (`rev`).
pub async fn xrange(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, rev: bool) -> Flow {
    let (start_at, end_at) = if rev { (3, 2) } else { (2, 3) };
    let bounds = parse_interval(args.get(start_at), true)
        .and_then(|s| parse_interval(args.get(end_at), false).map(|e| (s, e)));
    let (start, end) = match bounds {
        Ok(b) => b,
        Err(msg) => {
            ctx.error(msg);
            return Flow::Continue;
        }
    };
    let mut count = None;
    let mut j = 4;
    while j < args.len() {
        if args.is(j, "count") && j + 1 < args.len() {
            match parse_count(args.get(j + 1)) {
                Ok(n) => count = Some(n),
                Err(msg) => {
                    ctx.error(msg);
                    return Flow::Continue;
                }
            }
            j += 2;
        } else {
            ctx.error(SYNTAX_ERROR);
            return Flow::Continue;
        }
    }
    let s = match read(ctx, args.get(1)).await {
        Ok(Some(s)) => s,
        Ok(None) => {
            reply::array(ctx.out, 0);
            return Flow::Continue;
        }
        Err(msg) => {
            ctx.error(&msg);
            return Flow::Continue;
        }
    };
    if count == Some(0) {
        null_array(ctx);
        return Flow::Continue;
    }
    let limit = count.map_or(usize::MAX, |n| n.min(usize::MAX as u64) as usize);
    let items = if rev {
        s.range_rev(start, end, limit)
    } else {
        s.range(start, end, limit)
    };
    let items = match items {
        Ok(items) => items,
        Err(c) => {
            ctx.error(&corrupt(c));
            return Flow::Continue;
        }
    };
    reply::array(ctx.out, items.len());
    for item in items {
        reply_item(ctx.out, &item);
    }
    Flow::Continue
}

/// The options of `XREAD` and `XREADGROUP`, up to `STREAMS`.
struct ReadArgs<'a> {
    /// `BLOCK`: `Some(None)` waits for ever.
    block: Option<Option<Duration>>,
    count: u64,
    /// `GROUP group consumer`.
    group: Option<(&'a [u8], &'a [u8])>,
    noack: bool,
    /// Where the keys start, and how many streams.
    streams_at: usize,
    streams: usize,
}

/// Redis's `xreadCommand` option loop.
fn parse_read<'a>(args: &Args<'a>, xreadgroup: bool) -> Result<ReadArgs<'a>, String> {
    let mut a = ReadArgs {
        block: None,
        count: 0,
        group: None,
        noack: false,
        streams_at: 0,
        streams: 0,
    };
    let mut i = 1;
    while i < args.len() {
        let more = args.len() - i - 1;
        if args.is(i, "block") && more > 0 {
            i += 1;
            a.block = Some(parse_block_ms(args.get(i))?);
        } else if args.is(i, "count") && more > 0 {
            i += 1;
            a.count = parse_count(args.get(i))?;
        } else if args.is(i, "streams") && more > 0 {
            a.streams_at = i + 1;
            let n = args.len() - a.streams_at;
            if n % 2 != 0 {
                // Redis 7.0 words this the same for XREADGROUP.
                return Err("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.".into());
            }
            a.streams = n / 2;
            break;
        } else if args.is(i, "group") && more >= 2 {
            if !xreadgroup {
                return Err(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."
                        .into(),
                );
            }
            a.group = Some((args.get(i + 1), args.get(i + 2)));
            i += 2;
        } else if args.is(i, "noack") {
            if !xreadgroup {
                return Err(
                    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."
                        .into(),
                );
            }
            a.noack = true;
        } else {
            return Err(SYNTAX_ERROR.into());
        }
        i += 1;
    }
    if a.streams_at == 0 {
        return Err(SYNTAX_ERROR.into());
    }
    if xreadgroup && a.group.is_none() {
        return Err("ERR Missing GROUP option for XREADGROUP".into());
    }
    Ok(a)
}

/// A `BLOCK` argument: integer milliseconds, as Redis's
/// `getTimeoutFromObjectOrReply`; 0 waits for ever.
fn parse_block_ms(arg: &[u8]) -> Result<Option<Duration>, String> {
    let ms = parse_i64(arg).ok_or("ERR timeout is not an integer or out of range")?;
    if ms < 0 {
        return Err("ERR timeout is negative".into());
    }
    if ms > i64::MAX - now_ms() as i64 {
        return Err("ERR timeout is out of range".into());
    }
    Ok((ms > 0).then(|| Duration::from_millis(ms as u64)))
}

/// What one stream of a read serves: its position among the `STREAMS`,
/// and its entries (`Err(id)` for a pending entry since deleted, which
/// Redis answers with a null in place of the fields).
type Served = Vec<(usize, Vec<Result<Item, StreamId>>)>;

/// `XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]`
/// and `XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds]
/// [NOACK] STREAMS key [key ...] id [id ...]` (`group`).
pub async fn xread(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, group: bool) -> Flow {
    let a = match parse_read(args, group) {
        Ok(a) => a,
        Err(msg) => {
            ctx.error(&msg);
            return Flow::Continue;
        }
    };
    let keys: Vec<Bytes> = (0..a.streams)
        .map(|i| args.bytes(a.streams_at + i))
        .collect();
    let mut retry = false;
    if let Some(timeout) = a.block {
        match start(ctx, keys.iter().map(|k| &k[..]), timeout) {
            Some(r) => retry = r,
            None => return Flow::Continue,
        }
    }
    let count = if retry && a.count == 0 {
        BLOCKED_DEFAULT_COUNT
    } else {
        a.count
    };
    let looked = if let Some((name, consumer)) = a.group {
        let ids_at = a.streams_at + a.streams;
        let grouped = GroupRead {
            keys: &keys,
            ids: (0..a.streams).map(|i| args.get(ids_at + i)).collect(),
            group: name,
            consumer,
            count,
            noack: a.noack,
            retry,
        };
        read_group(ctx, grouped).await
    } else {
        read_plain(ctx, args, &a, &keys, count, retry).await
    };
    finish(ctx, looked, null_array, |ctx, served| {
        reply_served(ctx.out, ctx.client.proto, &keys, served)
    })
}

/// `XREAD`: entries after each ID, from the streams that have any.
async fn read_plain(
    ctx: &mut Ctx<'_, '_>,
    args: &Args<'_>,
    a: &ReadArgs<'_>,
    keys: &[Bytes],
    count: u64,
    retry: bool,
) -> Result<Option<Served>, String> {
    let stashed: Vec<StreamId> = ctx
        .client
        .blocked
        .as_ref()
        .map(|b| b.stream_ids.clone())
        .unwrap_or_default();
    let mut streams = Vec::with_capacity(keys.len());
    let mut ids = Vec::with_capacity(keys.len());
    for (i, key) in keys.iter().enumerate() {
        let s = match read(ctx, key).await {
            Ok(s) => s,
            // A woken read passes over a key that changed type.
            Err(_) if retry => None,
            Err(msg) => return Err(msg),
        };
        let arg = args.get(a.streams_at + a.streams + i);
        let id = if let Some(&id) = stashed.get(i) {
            id
        } else if arg == b"$" {
            s.as_ref().map_or(StreamId::MIN, Stream::last_id)
        } else if arg == b">" {
            return Err("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.".into());
        } else {
            StreamId::parse_strict(arg, 0).ok_or(INVALID_ID)?
        };
        streams.push(s);
        ids.push(id);
    }
    if let Some(b) = ctx.client.blocked.as_mut() {
        if b.stream_ids.is_empty() {
            b.stream_ids = ids.clone();
        }
    }
    let limit = take_limit(count);
    let mut served = Served::new();
    for (i, s) in streams.iter().enumerate() {
        let Some(s) = s else { continue };
        if s.is_empty() || s.last_valid_id() <= ids[i] {
            continue;
        }
        let from = ids[i].next().unwrap_or(ids[i]);
        let items = s.range(from, StreamId::MAX, limit).map_err(corrupt)?;
        served.push((i, items.into_iter().map(Ok).collect()));
    }
    Ok((!served.is_empty()).then_some(served))
}

/// What `XREADGROUP` reads.
struct GroupRead<'a> {
    keys: &'a [Bytes],
    ids: Vec<&'a [u8]>,
    group: &'a [u8],
    consumer: &'a [u8],
    count: u64,
    noack: bool,
    retry: bool,
}

/// Which entries a group read asks for.
#[derive(Clone, Copy)]
enum Want {
    /// `>`: entries never delivered to the group.
    New,
    /// An ID: the consumer's own pending entries after it.
    History(StreamId),
}

/// `XREADGROUP`, under every key's lock: delivers new entries (into the
/// PEL unless `NOACK`), or serves the consumer's history.
async fn read_group(ctx: &mut Ctx<'_, '_>, r: GroupRead<'_>) -> Result<Option<Served>, String> {
    let mut unique: Vec<Bytes> = Vec::new();
    let slot: Vec<usize> = r
        .keys
        .iter()
        .map(|k| match unique.iter().position(|u| u == k) {
            Some(at) => at,
            None => {
                unique.push(k.clone());
                unique.len() - 1
            }
        })
        .collect();
    let max = ctx.server.config.limits.max_bulk_len;
    // What the read changed in each stream, or the error reply.
    let changes_of = |found: &[Option<tiercache_engine::Entry>]| {
        let outcome = serve_group(found, &slot, &r).and_then(|(mut streams, changed, served)| {
            let mut changes = vec![Change::Keep; found.len()];
            for (u, s) in streams.iter_mut().enumerate() {
                if changed[u] {
                    changes[u] = store(found[u].as_ref(), s.as_mut(), max)?;
                }
            }
            Ok((changes, served))
        });
        match outcome {
            Ok((changes, served)) => (changes, Ok(served)),
            Err(msg) => (vec![Change::Keep; found.len()], Err(msg)),
        }
    };
    let result = if let [key] = &unique[..] {
        // One stream, the usual read: a one-key write, which write-back
        // can journal as a patch.
        ctx.session
            .modify(key.clone(), |old| {
                let (mut changes, served) = changes_of(&[old.cloned()]);
                (changes.pop().expect("one key"), served)
            })
            .await
            .map(|m| m.result)
    } else {
        ctx.session
            .modify_many(unique.clone(), |found| {
                let (changes, served) = changes_of(found);
                (changes, served)
            })
            .await
    };
    let served = result.map_err(|e| engine_error_message(&e))??;
    Ok(served.map(|(served, created, propagated)| {
        // A consumer a read created is an event of its stream (Redis's
        // `streamCreateConsumer`).
        for u in created {
            ctx.notify(class::STREAM, "xgroup-createconsumer", &unique[u]);
        }
        // Never propagated as sent: what the delivery did instead.
        ctx.propagate_nothing();
        if !propagated.is_empty() {
            ctx.mark_dirty();
        }
        for argv in &propagated {
            let argv: Vec<&[u8]> = argv.iter().map(|a| &a[..]).collect();
            ctx.propagate_as(&argv);
        }
        served
    }))
}

/// The streams, which of them changed, and what was served with the
/// streams (by `unique` index) where the read created the consumer and
/// the commands replicas get for it.
type GroupServed = (
    Vec<Option<Stream>>,
    Vec<bool>,
    Option<(Served, Vec<usize>, Vec<Vec<Vec<u8>>>)>,
);

fn serve_group(
    found: &[Option<tiercache_engine::Entry>],
    slot: &[usize],
    r: &GroupRead<'_>,
) -> Result<GroupServed, String> {
    const GONE_KEY: &str = "UNBLOCKED the stream key no longer exists";
    const GONE_GROUP: &str =
        "NOGROUP the consumer group this client was blocked on no longer exists";
    let mut streams = Vec::with_capacity(found.len());
    for e in found {
        streams.push(match collection_of::<Stream>(e.as_ref()) {
            Ok(s) => s,
            Err(_) if r.retry => None,
            Err(msg) => return Err(msg),
        });
    }
    let mut wants = Vec::with_capacity(slot.len());
    for (i, &u) in slot.iter().enumerate() {
        let has_group = match &streams[u] {
            Some(s) => s.groups().map_err(corrupt)?.contains_key(r.group),
            None => false,
        };
        if !has_group {
            return Err(match (r.retry, streams[u].is_some()) {
                (true, false) => GONE_KEY.into(),
                (true, true) => GONE_GROUP.into(),
                (false, _) => format!(
                    "{} in XREADGROUP with GROUP option",
                    no_group(&r.keys[i], r.group)
                ),
            });
        }
        wants.push(match r.ids[i] {
            b"$" => return Err("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.".into()),
            b">" => Want::New,
            arg => Want::History(StreamId::parse_strict(arg, 0).ok_or(INVALID_ID)?),
        });
    }
    let now = now_ms();
    let limit = take_limit(r.count);
    let mut changed = vec![false; streams.len()];
    let mut served = Served::new();
    let mut created = Vec::new();
    let mut propagated = Vec::new();
    for (i, (&u, want)) in slot.iter().zip(wants).enumerate() {
        let s = streams[u].as_mut().expect("checked above");
        let known = s.groups().map_err(corrupt)?[r.group]
            .consumers
            .contains_key(r.consumer);
        let items = match want {
            Want::History(after) => history(s, r, after, limit, now)?,
            Want::New => {
                let last = s.groups().map_err(corrupt)?[r.group].last_id;
                if s.is_empty() || s.last_valid_id() <= last {
                    continue;
                }
                let items = deliver(s, r, last, limit, now)?;
                let group = &s.groups().map_err(corrupt)?[r.group];
                propagated.extend(delivered_as(&r.keys[i], r, group, known, &items, now));
                items
            }
        };
        changed[u] = true;
        if !known && !created.contains(&u) {
            created.push(u);
        }
        served.push((i, items));
    }
    let served = (!served.is_empty()).then_some((served, created, propagated));
    Ok((streams, changed, served))
}

/// What a delivery of new entries propagates (Redis's
/// `streamPropagateXCLAIM`, `streamPropagateGroupID`,
/// `streamPropagateConsumerCreation`): each entry as an `XCLAIM` that
/// gives it to the consumer as delivered now, once, moving the group's
/// last ID to it; with `NOACK`, the consumer's creation and the group's
/// new last ID instead.
fn delivered_as(
    key: &[u8],
    r: &GroupRead<'_>,
    group: &crate::stream::Group,
    known: bool,
    items: &[Result<Item, StreamId>],
    now: u64,
) -> Vec<Vec<Vec<u8>>> {
    let text = |s: String| s.into_bytes();
    if r.noack {
        let mut out = Vec::new();
        if !known {
            out.push(vec![
                b"XGROUP".to_vec(),
                b"CREATECONSUMER".to_vec(),
                key.to_vec(),
                r.group.to_vec(),
                r.consumer.to_vec(),
            ]);
        }
        out.push(vec![
            b"XGROUP".to_vec(),
            b"SETID".to_vec(),
            key.to_vec(),
            r.group.to_vec(),
            text(group.last_id.to_string()),
            b"ENTRIESREAD".to_vec(),
            text(group.entries_read.unwrap_or(-1).to_string()),
        ]);
        return out;
    }
    items
        .iter()
        .filter_map(|item| item.as_ref().ok())
        .map(|item| {
            let id = text(item.id.to_string());
            vec![
                b"XCLAIM".to_vec(),
                key.to_vec(),
                r.group.to_vec(),
                r.consumer.to_vec(),
                b"0".to_vec(),
                id.clone(),
                b"TIME".to_vec(),
                text(now.to_string()),
                b"RETRYCOUNT".to_vec(),
                b"1".to_vec(),
                b"FORCE".to_vec(),
                b"JUSTID".to_vec(),
                b"LASTID".to_vec(),
                id,
            ]
        })
        .collect()
}

/// Delivers up to `limit` entries after `last` to the consumer, moving the
/// group's last ID (and its count of entries read) along.
fn deliver(
    s: &mut Stream,
    r: &GroupRead<'_>,
    last: StreamId,
    limit: usize,
    now: u64,
) -> Result<Vec<Result<Item, StreamId>>, String> {
    let from = last.next().unwrap_or(last);
    let items: Vec<Item> = s.range(from, StreamId::MAX, limit).map_err(corrupt)?;
    let mut read_counts = Vec::with_capacity(items.len());
    for item in &items {
        let tombstones = s.range_has_tombstones(Some(item.id), None);
        read_counts.push((tombstones, s.estimate_entries_read(item.id)));
    }
    let added = s.entries_added();
    let group = group_mut(s, r.group)?;
    group.touch_consumer(r.consumer, now);
    for (item, (tombstones, estimate)) in items.iter().zip(read_counts) {
        if item.id > group.last_id {
            match group.entries_read {
                Some(n) if !tombstones => group.entries_read = Some(n + 1),
                _ if added != 0 => group.entries_read = estimate.map(|n| n as i64),
                _ => {}
            }
            group.last_id = item.id;
        }
        if !r.noack {
            group.assign(item.id, r.consumer, now, 1);
        }
    }
    Ok(items.into_iter().map(Ok).collect())
}

/// Group `name` of a stream the caller checked has it.
fn group_mut<'s>(s: &'s mut Stream, name: &[u8]) -> Result<&'s mut crate::stream::Group, String> {
    Ok(s.groups_mut()
        .map_err(corrupt)?
        .get_mut(name)
        .expect("checked"))
}

/// The consumer's pending entries after `after` (each delivered once
/// more), or `Err(id)` for one deleted from the stream since.
fn history(
    s: &mut Stream,
    r: &GroupRead<'_>,
    after: StreamId,
    limit: usize,
    now: u64,
) -> Result<Vec<Result<Item, StreamId>>, String> {
    let from = after.next().unwrap_or(after);
    let pending: Vec<StreamId> = group_mut(s, r.group)?
        .consumers
        .get(r.consumer)
        .map(|c| c.pel.range(from..).take(limit).copied().collect())
        .unwrap_or_default();
    let mut items = Vec::with_capacity(pending.len());
    for id in pending {
        items.push(s.get(id).map_err(corrupt)?.ok_or(id));
    }
    let group = group_mut(s, r.group)?;
    group.touch_consumer(r.consumer, now);
    for item in items.iter().flatten() {
        if let Some(nack) = group.pel.get_mut(&item.id) {
            nack.delivery_time = now;
            nack.delivery_count += 1;
        }
    }
    Ok(items)
}

/// `count` as an iterator bound (0: all).
fn take_limit(count: u64) -> usize {
    if count == 0 {
        usize::MAX
    } else {
        count.min(usize::MAX as u64) as usize
    }
}

/// The reply of a read: per served stream, its key and entries; an array
/// of pairs in RESP2, a map in RESP3.
fn reply_served(out: &mut BytesMut, proto: Proto, keys: &[Bytes], served: Served) {
    if proto == Proto::Resp2 {
        reply::array(out, served.len());
    } else {
        reply::map(out, served.len(), proto);
    }
    for (i, items) in served {
        if proto == Proto::Resp2 {
            reply::array(out, 2);
        }
        reply::bulk(out, &keys[i]);
        reply::array(out, items.len());
        for item in &items {
            match item {
                Ok(item) => reply_item(out, item),
                Err(id) => {
                    reply::array(out, 2);
                    reply_id(out, *id);
                    reply::null_array(out, proto);
                }
            }
        }
    }
}
