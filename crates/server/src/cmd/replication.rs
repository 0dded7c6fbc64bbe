//! The primary's replication commands (`crate::replication`): `SYNC` and
//! `PSYNC` (always a full resynchronisation: the RDB snapshot, then the
//! stream), `REPLCONF`, `ROLE`, `WAIT`, and `REPLICAOF`/`SLAVEOF`, of which
//! only `NO ONE` is accepted: this server does not replicate from others.

use super::blocking;
use super::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER, REDIS_VERSION, SYNTAX_ERROR};
use crate::resp::reply;
use bytes::Bytes;
use std::time::Duration;

/// Keys read per page while taking the snapshot.
const SNAPSHOT_PAGE: usize = 1024;

/// `SYNC`, or `PSYNC replid offset` (`psync`): `+FULLRESYNC replid
/// offset` for `PSYNC`, the snapshot as a bulk without its final CRLF,
/// then the stream. The snapshot and the attach happen with the gate held
/// alone, so the stream starts exactly after what the snapshot holds.
pub async fn sync(_args: &Args<'_>, ctx: &mut Ctx<'_, '_>, psync: bool) -> Flow {
    if ctx.client.replica {
        // Redis ignores a second SYNC from a replica.
        return Flow::Continue;
    }
    let alone = super::alone::Alone::take(ctx).await;
    match snapshot(ctx).await {
        Ok(rdb) => {
            let replicas = &ctx.server.replicas;
            if psync {
                let line = format!("FULLRESYNC {} {}", replicas.replid(), replicas.offset());
                reply::simple(ctx.out, &line);
            }
            ctx.out
                .extend_from_slice(format!("${}\r\n", rdb.len()).as_bytes());
            ctx.out.extend_from_slice(&rdb);
            let mailbox = ctx.client.mailbox();
            ctx.client.replica = true;
            let addr = ctx.client.info.addr.clone();
            let (ping, expire) =
                replicas.attach(ctx.client.id, &addr, ctx.client.replica_port, mailbox);
            if ping {
                let period = Duration::from_secs(ctx.server.replica_ping_period().max(1));
                tokio::spawn(replicas.clone().ping_while_attached(period));
            }
            if expire {
                tokio::spawn(replicas.clone().feed_expired(ctx.engine.clone()));
            }
            tracing::info!(client = ctx.client.id, %addr, "replica attached (full sync)");
        }
        Err(msg) => ctx.error(&msg),
    }
    alone.rejoin(ctx).await;
    Flow::Continue
}

/// The RDB file of every live key, read a page at a time.
async fn snapshot(ctx: &mut Ctx<'_, '_>) -> Result<Vec<u8>, String> {
    let mut entries = Vec::new();
    let mut after: Option<Bytes> = None;
    loop {
        let page = ctx
            .session
            .scan_keys(after.as_deref(), b"", SNAPSHOT_PAGE)
            .await
            .map_err(|e| super::engine_error_message(&e))?;
        let found = ctx
            .session
            .get_many(&page.keys)
            .await
            .map_err(|e| super::engine_error_message(&e))?;
        entries.extend(
            page.keys
                .into_iter()
                .zip(found)
                .filter_map(|(k, e)| Some((k, e?))),
        );
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    crate::rdb::file(&entries, REDIS_VERSION)
}

/// `REPLCONF option value ...`: what a replica says of itself
/// (`listening-port`, `ip-address`, `capa`, `rdb-only`...: `+OK`) and its
/// acknowledgements (`ACK offset`: no reply, as in Redis).
pub async fn replconf(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if args.len() % 2 == 0 {
        ctx.error(SYNTAX_ERROR);
        return Flow::Continue;
    }
    let mut i = 1;
    while i < args.len() {
        let value = args.get(i + 1);
        if args.is(i, "listening-port") {
            match parse_i64(value).and_then(|p| u16::try_from(p).ok()) {
                Some(port) => ctx.client.replica_port = port,
                None => {
                    ctx.error(NOT_AN_INTEGER);
                    return Flow::Continue;
                }
            }
        } else if args.is(i, "ack") {
            if let Some(offset) = parse_i64(value).and_then(|o| u64::try_from(o).ok()) {
                ctx.server.replicas.set_ack(ctx.client.id, offset);
            }
            return Flow::Continue;
        } else if args.is(i, "getack") {
            // Only a replica answers it; a primary has nothing to say.
            return Flow::Continue;
        } else if !["ip-address", "capa", "rdb-only", "rdb-filter-only"]
            .iter()
            .any(|o| args.is(i, o))
        {
            let msg = format!("ERR Unrecognized REPLCONF option: {}", args.text(i));
            ctx.error(&msg);
            return Flow::Continue;
        }
        i += 2;
    }
    reply::ok(ctx.out);
    Flow::Continue
}

/// `REPLICAOF NO ONE` (and `SLAVEOF`): already a primary. Replicating
/// from another server is refused.
pub async fn replicaof(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if args.is(1, "no") && args.is(2, "one") {
        reply::ok(ctx.out);
    } else {
        ctx.error(
            "ERR this server does not replicate from others: only REPLICAOF NO ONE is accepted",
        );
    }
    Flow::Continue
}

/// `ROLE`: `master`, the stream offset, and each replica's address, port
/// and acknowledged offset.
pub async fn role(_args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let replicas = ctx.server.replicas.list();
    reply::array(ctx.out, 3);
    reply::bulk(ctx.out, b"master");
    reply::integer(ctx.out, ctx.server.replicas.offset() as i64);
    reply::array(ctx.out, replicas.len());
    for r in replicas {
        reply::array(ctx.out, 3);
        reply::bulk(ctx.out, r.ip.as_bytes());
        reply::bulk(ctx.out, r.port.to_string().as_bytes());
        reply::bulk(ctx.out, r.acked.to_string().as_bytes());
    }
    Flow::Continue
}

/// `WAIT numreplicas timeout` (milliseconds): how many replicas
/// acknowledged every write made before it. With replicas attached it
/// asks them (`REPLCONF GETACK *`) and waits for their answers out of
/// the gate; with none, it returns 0 at once when none is wanted, and
/// otherwise waits out its timeout (0: forever) as Redis does, without
/// holding anything but its connection (the wait of `cmd/blocking.rs`, on
/// no key).
pub async fn wait(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let Some(wanted) = parse_i64(args.get(1)) else {
        ctx.error(NOT_AN_INTEGER);
        return Flow::Continue;
    };
    let timeout = match parse_i64(args.get(2)) {
        None => {
            ctx.error("ERR timeout is not an integer or out of range");
            return Flow::Continue;
        }
        Some(ms) if ms < 0 => {
            ctx.error("ERR timeout is negative");
            return Flow::Continue;
        }
        Some(ms) => (ms > 0).then(|| Duration::from_millis(ms as u64)),
    };
    let replicas = ctx.server.replicas.clone();
    if replicas.any() {
        let target = replicas.offset();
        let acked = replicas.acked_at_least(target) as i64;
        if acked >= wanted || ctx.client.in_exec {
            reply::integer(ctx.out, acked);
            return Flow::Continue;
        }
        replicas.feed_control(&[b"REPLCONF", b"GETACK", b"*"]);
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let gate = ctx.engine.gate();
        let was_inside = ctx.client.seat.is_inside();
        gate.leave(&mut ctx.client.seat);
        let acked = replicas.wait_for_acks(target, wanted, deadline).await;
        if was_inside {
            gate.enter(&mut ctx.client.seat).await;
        }
        reply::integer(ctx.out, acked);
        return Flow::Continue;
    }
    // No replica ever acknowledges: done now if none is wanted (or inside
    // MULTI, as Redis answers there), else once the timeout passes.
    if wanted <= 0 || ctx.client.in_exec {
        reply::integer(ctx.out, 0);
        return Flow::Continue;
    }
    match blocking::wait_on_nothing(ctx, timeout) {
        Some(flow) => flow,
        None => {
            reply::integer(ctx.out, 0);
            Flow::Continue
        }
    }
}
