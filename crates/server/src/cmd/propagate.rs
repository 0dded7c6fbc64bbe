//! Feeding replicas (`crate::replication`) from the command path: which
//! commands propagate, in what form, and the `MULTI`/`EXEC` around a
//! transaction's or a script's writes.
//!
//! A command propagates when it changed something: every write raises
//! its keyspace event exactly then (`Ctx::notify` marks the client
//! `dirty`, whether or not notifications are on), and the few writes
//! without an event (`FLUSHALL`, `PUBLISH`) mark it themselves. It
//! propagates as sent unless it rewrote itself (`Ctx::propagate_as`, Redis's
//! `rewriteClientCommandVector`). As in Redis's `propagatePendingCommands`,
//! more than one command out of one call goes out between `MULTI` and
//! `EXEC`.

use super::{Args, Ctx, Flow};
use crate::replication::{append_command, encode_command};
use bytes::{Bytes, BytesMut};

/// What one write command propagates, gathered while it runs.
#[derive(Debug, Default)]
pub struct Pending {
    /// The commands that replace it, encoded (`None`: itself).
    pub rewrite: Option<Vec<Bytes>>,
    /// The writes of the transaction or script running now, encoded, and
    /// how many (`None` outside one).
    pub block: Option<(BytesMut, usize)>,
}

impl Ctx<'_, '_> {
    /// Propagates `argv` instead of the command as sent, if it changed
    /// something; several calls propagate several commands.
    pub fn propagate_as(&mut self, argv: &[&[u8]]) {
        if self.server.replicas.any() {
            self.client
                .propagation
                .rewrite
                .get_or_insert_with(Vec::new)
                .push(encode_command(argv));
        }
    }

    /// Propagates nothing for the command, changed or not (Redis's
    /// `preventCommandPropagation`); `propagate_as` may still add some.
    pub fn propagate_nothing(&mut self) {
        if self.server.replicas.any() {
            self.client.propagation.rewrite.get_or_insert_with(Vec::new);
        }
    }

    /// Marks the command as a change to propagate (one without an event).
    pub fn mark_dirty(&self) {
        self.client.dirty.set(true);
    }
}

/// A pop from the first non-empty of several keys, or a blocking pop,
/// propagates as the plain pop it came to (Redis's `blpopCommand`,
/// `lmpopCommand`, `bzpopminCommand`...): `name key`, with the count of
/// elements popped when `count` is given.
pub fn propagate_pop(ctx: &mut Ctx<'_, '_>, name: &[u8], key: &[u8], count: Option<usize>) {
    match count {
        Some(n) => ctx.propagate_as(&[name, key, n.to_string().as_bytes()]),
        None => ctx.propagate_as(&[name, key]),
    }
}

/// Whether the command at `index` may propagate (Redis's `write` and
/// `may_replicate` commands other than the ones that run others).
pub(super) fn may_propagate(spec: &super::CommandSpec) -> bool {
    spec.flags.contains(&"write")
        || matches!(
            spec.cmd,
            super::Cmd::Publish
                | super::Cmd::SPublish
                | super::Cmd::XGroup
                | super::Cmd::PfCount
                | super::Cmd::Function
        )
}

/// Whether `spec` is refused while too few replicas are good: a write, or
/// an `EXEC` with a write queued (Redis's `processCommand`).
#[cold]
pub(super) fn needs_good_replicas(
    spec: &super::CommandSpec,
    args: &Args<'_>,
    ctx: &Ctx<'_, '_>,
) -> bool {
    match spec.cmd {
        super::Cmd::Exec => ctx.client.tx.as_ref().is_some_and(|tx| tx.has_write()),
        _ => writes(spec, (args.len() > 1).then(|| args.get(1))),
    }
}

/// Whether a command is a write: Redis's `write` flag, which for the
/// container commands `XGROUP` and `FUNCTION` is their subcommand's.
pub(super) fn writes(spec: &super::CommandSpec, subcommand: Option<&[u8]>) -> bool {
    let sub_in = |names: &[&str]| {
        subcommand.is_some_and(|s| names.iter().any(|n| s.eq_ignore_ascii_case(n.as_bytes())))
    };
    match spec.cmd {
        super::Cmd::XGroup => sub_in(&[
            "create",
            "setid",
            "destroy",
            "createconsumer",
            "delconsumer",
        ]),
        super::Cmd::Function => sub_in(&["load", "delete", "flush", "restore"]),
        _ => spec.flags.contains(&"write"),
    }
}

/// Before a command that may propagate: nothing pending yet.
pub(super) fn before(ctx: &mut Ctx<'_, '_>) {
    ctx.client.dirty.set(false);
    ctx.client.propagation.rewrite = None;
}

/// After it: its propagated form, into the open block or to the replicas.
pub(super) fn after(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, flow: Flow) {
    let rewrite = ctx.client.propagation.rewrite.take();
    if flow == Flow::Block || !ctx.client.dirty.get() {
        return;
    }
    let commands = rewrite.unwrap_or_else(|| {
        let argv: Vec<&[u8]> = (0..args.len()).map(|i| args.get(i)).collect();
        vec![encode_command(&argv)]
    });
    if let Some((buf, n)) = &mut ctx.client.propagation.block {
        for c in &commands {
            buf.extend_from_slice(c);
        }
        *n += commands.len();
    } else if let [one] = &commands[..] {
        ctx.server.replicas.feed(one.clone());
    } else if !commands.is_empty() {
        let mut buf = BytesMut::new();
        for c in &commands {
            buf.extend_from_slice(c);
        }
        feed_wrapped(ctx, buf);
    }
}

/// Opens a block for a transaction or script about to run (if replicas
/// are attached and none is open: a script inside `EXEC` joins it).
/// Returns whether this call opened it.
pub fn open_block(ctx: &mut Ctx<'_, '_>) -> bool {
    if !ctx.server.replicas.any() || ctx.client.propagation.block.is_some() {
        return false;
    }
    ctx.client.propagation.block = Some((BytesMut::new(), 0));
    true
}

/// Closes the block `open_block` opened, feeding what it gathered. Call
/// while the gate is still held alone, so nothing else is fed in between.
pub fn close_block(ctx: &mut Ctx<'_, '_>, opened: bool) {
    if !opened {
        return;
    }
    if let Some((buf, n)) = ctx.client.propagation.block.take() {
        match n {
            0 => {}
            1 => ctx.server.replicas.feed(buf.freeze()),
            _ => feed_wrapped(ctx, buf),
        }
    }
}

/// Feeds `body` (several commands) between `MULTI` and `EXEC`.
fn feed_wrapped(ctx: &Ctx<'_, '_>, body: BytesMut) {
    let mut out = BytesMut::with_capacity(body.len() + 40);
    append_command(&mut out, &[b"MULTI"]);
    out.extend_from_slice(&body);
    append_command(&mut out, &[b"EXEC"]);
    ctx.server.replicas.feed(out.freeze());
}
