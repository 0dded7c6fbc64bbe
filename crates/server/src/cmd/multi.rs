//! `MULTI`, `EXEC`, `DISCARD`, `WATCH`, `UNWATCH`: Redis transactions.
//!
//! Between `MULTI` and `EXEC` a command is checked as at dispatch (known,
//! arity, authentication, key size), copied into the [`Transaction`] and
//! answered `+QUEUED`. One that fails a check is answered its error and
//! makes `EXEC` refuse the whole transaction (`EXECABORT`). `EXEC` holds
//! the engine's gate exclusively ([`tiercache_engine::gate`]) while it runs the queued
//! commands, so no other client's request, RESP or memcached, runs in
//! between. It answers an array of their replies; a command's own error
//! (`WRONGTYPE`...) is an element of it and the others still run, as in
//! Redis (no rollback).
//!
//! `WATCH` is optimistic locking through the engine's
//! [`Watch`](tiercache_engine::Watch): when a watched key was written,
//! deleted, flushed or expired since, `EXEC` runs nothing and answers a
//! null array. `EXEC`, `DISCARD` and `RESET` unwatch every key.
//!
//! Durability is that of any batch: the transaction's writes are
//! committed with the batch that holds `EXEC`, before its reply is sent.

use super::{engine_error_message, Args, Cmd, Ctx, Flow};
use crate::resp::reply;
use std::sync::atomic::Ordering;

/// Bytes a queued argument is charged beyond its own: its range.
const ARG_OVERHEAD: usize = std::mem::size_of::<(usize, usize)>();

/// The commands queued since `MULTI`, copied out of the read buffer.
#[derive(Debug, Default)]
pub struct Transaction {
    /// Every argument's bytes, back to back.
    buf: Vec<u8>,
    /// Each argument's range of `buf`.
    ranges: Vec<(usize, usize)>,
    /// Each command's range of `ranges`.
    commands: Vec<(usize, usize)>,
    /// A command failed to queue: `EXEC` answers `EXECABORT`.
    aborted: bool,
}

impl Transaction {
    /// Whether a write command is queued.
    pub fn has_write(&self) -> bool {
        self.commands.iter().any(|&(first, end)| {
            let arg = |i: usize| &self.buf[self.ranges[i].0..self.ranges[i].1];
            let sub = (end > first + 1).then(|| arg(first + 1));
            super::lookup_index(arg(first))
                .is_some_and(|i| super::propagate::writes(&super::COMMANDS[i], sub))
        })
    }

    /// Marks the transaction as failed to queue.
    pub fn abort(&mut self) {
        self.aborted = true;
    }

    /// Bytes held: what the transaction limit counts.
    fn size(&self) -> usize {
        self.buf.len() + self.ranges.len() * ARG_OVERHEAD
    }

    fn push(&mut self, args: &Args<'_>) {
        let first = self.ranges.len();
        for i in 0..args.len() {
            let start = self.buf.len();
            self.buf.extend_from_slice(args.get(i));
            self.ranges.push((start, self.buf.len()));
        }
        self.commands.push((first, self.ranges.len()));
    }
}

/// True for the commands that run at once inside `MULTI` instead of
/// being queued, as in Redis.
pub(super) fn runs_in_multi(cmd: Cmd) -> bool {
    matches!(
        cmd,
        Cmd::Exec | Cmd::Discard | Cmd::Multi | Cmd::Watch | Cmd::Quit | Cmd::Reset
    )
}

/// Queues a command that passed the dispatch checks.
pub(super) fn queue(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let max = ctx.server.config.limits.max_request_len;
    let Some(tx) = ctx.client.tx.as_mut() else {
        unreachable!("queue is only called inside MULTI");
    };
    let size: usize = (0..args.len())
        .map(|i| args.get(i).len() + ARG_OVERHEAD)
        .sum();
    if tx.size() + size > max {
        tx.abort();
        reply::error(
            ctx.out,
            &format!("ERR transaction too large: its queued commands would exceed {max} bytes"),
        );
        return Flow::Continue;
    }
    tx.push(args);
    ctx.client
        .info
        .multi
        .store(tx.commands.len() as i64, Ordering::Relaxed);
    reply::simple(ctx.out, "QUEUED");
    Flow::Continue
}

/// `MULTI`.
pub async fn multi(_args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if ctx.client.tx.is_some() {
        reply::error(ctx.out, "ERR MULTI calls can not be nested");
    } else {
        ctx.client.tx = Some(Box::default());
        ctx.client.info.multi.store(0, Ordering::Relaxed);
        reply::ok(ctx.out);
    }
    Flow::Continue
}

/// `DISCARD`.
pub async fn discard(_args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if ctx.client.tx.is_none() {
        reply::error(ctx.out, "ERR DISCARD without MULTI");
    } else {
        ctx.client.end_transaction();
        reply::ok(ctx.out);
    }
    Flow::Continue
}

/// `EXEC`.
pub async fn exec(_args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let Some(tx) = ctx.client.tx.take() else {
        reply::error(ctx.out, "ERR EXEC without MULTI");
        return Flow::Continue;
    };
    ctx.client.info.multi.store(-1, Ordering::Relaxed);
    if tx.aborted {
        ctx.client.end_transaction();
        reply::error(
            ctx.out,
            "EXECABORT Transaction discarded because of previous errors.",
        );
        return Flow::Continue;
    }
    let alone = super::alone::Alone::take(ctx).await;
    let touched = ctx.client.watch.as_ref().is_some_and(|w| w.is_touched());
    // Unwatched before running: the transaction's own writes do not count.
    ctx.client.end_transaction();
    if touched {
        reply::null_array(ctx.out, ctx.client.proto);
    } else {
        reply::array(ctx.out, tx.commands.len());
        // Blocking commands answer at once inside EXEC, as in Redis.
        ctx.client.in_exec = true;
        let block = super::propagate::open_block(ctx);
        for &(first, end) in &tx.commands {
            let args = Args::new(&tx.buf, &tx.ranges[first..end]);
            // Boxed: `execute` runs `exec`. Never `QUIT` (not queued) and
            // never a block (`in_exec`), so the flow is always to continue.
            Box::pin(super::execute(&args, ctx)).await;
        }
        super::propagate::close_block(ctx, block);
        ctx.client.in_exec = false;
    }
    alone.rejoin(ctx).await;
    Flow::Continue
}

/// `WATCH key [key ...]`.
pub async fn watch(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if ctx.client.tx.is_some() {
        reply::error(ctx.out, "ERR WATCH inside MULTI is not allowed");
        return Flow::Continue;
    }
    let watch = ctx.client.watch.get_or_insert_with(|| ctx.engine.watch());
    for i in 1..args.len() {
        if let Err(e) = ctx.session.watch_key(watch, args.get(i)).await {
            reply::error(ctx.out, &engine_error_message(&e));
            return Flow::Continue;
        }
    }
    reply::ok(ctx.out);
    Flow::Continue
}

/// `UNWATCH`.
pub async fn unwatch(_args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if let Some(w) = &mut ctx.client.watch {
        w.clear();
    }
    reply::ok(ctx.out);
    Flow::Continue
}
