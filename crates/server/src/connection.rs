//! One client connection: read, parse every complete request, run them all
//! in one engine session, commit, write every reply in one write.
//!
//! Pipelining is what makes a cache server fast, so the loop is built for
//! it: a read that brings 1000 requests costs one parse pass over the bytes,
//! one session commit (one journal sync for all the writes) and one write
//! system call. Replies are encoded straight into the output buffer.
//!
//! Architecture invariant: nothing of a batch is written to the socket
//! before `Session::commit` returned Ok; if it fails, every reply of the
//! batch becomes the error instead, so no write is acknowledged unless it
//! is durable.

use crate::cmd::{self, engine_error_message, Args, Ctx, Flow};
use crate::read::{read_more, ReadEnd, KEEP_BUFFER, MAX_BATCH, READ_CHUNK};
use crate::resp::{reply, ProtocolError, RequestParser};
use crate::shutdown::Shutdown;
use crate::state::{ClientState, ServerState, UNBLOCK_ERROR, UNBLOCK_TIMEOUT};
use bytes::{Buf, BytesMut};
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tiercache_engine::{Engine, EngineError};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Runs `f` when dropped.
fn scopeguard(f: impl FnOnce()) -> impl Drop {
    struct Guard<F: FnOnce()>(Option<F>);
    impl<F: FnOnce()> Drop for Guard<F> {
        fn drop(&mut self) {
            if let Some(f) = self.0.take() {
                f();
            }
        }
    }
    Guard(Some(f))
}

/// A RESP client connection over any byte stream (TCP, unix socket, test pipe).
pub struct RespConnection<S> {
    stream: S,
    read_buf: BytesMut,
    out: BytesMut,
    parser: RequestParser,
    /// Argument ranges of every request of the current batch, flattened.
    ranges: Vec<(usize, usize)>,
    /// Per request of the current batch: its slice of `ranges`.
    requests: Vec<(usize, usize)>,
    /// A batch stopped at a blocking request: the bytes it spans, the
    /// protocol error that ended its parse, and the request to resume at.
    blocked_batch: Option<(usize, Option<ProtocolError>, usize)>,
    /// The request the last `execute_batch` blocked at.
    blocked_at: usize,
    engine: Arc<Engine>,
    server: Arc<ServerState>,
    client: ClientState,
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> RespConnection<S> {
    /// A connection serving `stream` from `engine`.
    pub fn new(stream: S, engine: Arc<Engine>, server: Arc<ServerState>) -> Self {
        Self::with_addrs(stream, engine, server, String::new(), String::new())
    }

    /// A connection whose peer and local addresses `CLIENT LIST` shows.
    pub fn with_addrs(
        stream: S,
        engine: Arc<Engine>,
        server: Arc<ServerState>,
        addr: String,
        laddr: String,
    ) -> Self {
        let client = ClientState::new(&server, addr, laddr);
        server.register(client.info.clone());
        RespConnection {
            stream,
            read_buf: BytesMut::with_capacity(READ_CHUNK),
            out: BytesMut::with_capacity(READ_CHUNK),
            parser: RequestParser::new(server.config.limits.clone()),
            ranges: Vec::new(),
            requests: Vec::new(),
            blocked_batch: None,
            blocked_at: 0,
            engine,
            server,
            client,
        }
    }

    /// Serves the client until it leaves, sends `QUIT`, breaks the
    /// protocol, idles out, or the server shuts down.
    pub async fn run(&mut self, shutdown: &mut Shutdown) -> io::Result<()> {
        let _ = self.client.info.killer.set(shutdown.killer());
        loop {
            // Everything already buffered first: a batch may stop at
            // MAX_BATCH with more complete requests behind it.
            loop {
                // A batch that blocked resumes at its blocked request, as
                // parsed then (its bytes were not released).
                let (consumed, error, from) = if self.blocked_batch.is_none() {
                    let (consumed, error) = self.parse_batch();
                    (consumed, error, 0)
                } else {
                    self.blocked_batch.take().expect("checked")
                };
                let flow = if self.requests.is_empty() {
                    // Only empty requests (blank inline lines, `*0`).
                    self.read_buf.advance(consumed);
                    Flow::Continue
                } else {
                    self.execute_batch(consumed, from).await
                };
                if flow == Flow::Block {
                    // The replies so far go now; a protocol error after the
                    // blocked request waits for it.
                    self.flush().await?;
                    let at = self.blocked_at;
                    self.blocked_batch = Some((consumed, error, at));
                    if !self.wait_while_blocked(shutdown).await? {
                        return Ok(());
                    }
                    continue;
                }
                if let Some(e) = &error {
                    self.reply_protocol_error(e);
                }
                self.flush().await?;
                if error.is_some() || flow == Flow::Close {
                    return Ok(());
                }
                // Nothing left to parse (the usual end of a batch): read
                // next without parsing an empty buffer first.
                if self.requests.is_empty() || self.read_buf.is_empty() {
                    break;
                }
            }
            let read = match self.client.mailbox.clone() {
                None => {
                    let idle = self.server.idle_timeout();
                    let partial = self.server.partial_request_timeout();
                    read_more(
                        &mut self.stream,
                        &mut self.read_buf,
                        idle,
                        partial,
                        shutdown,
                    )
                    .await?
                }
                Some(mailbox) => match self.read_or_deliver(&mailbox, shutdown).await? {
                    Some(read) => read,
                    None => continue,
                },
            };
            match read {
                Ok(_) => self.server.note_activity(),
                Err(ReadEnd::Idle) => {
                    tracing::debug!(client = self.client.id, "closing idle connection");
                    return Ok(());
                }
                Err(ReadEnd::Stalled) => {
                    tracing::info!(
                        client = self.client.id,
                        "closing connection: request left incomplete"
                    );
                    return Ok(());
                }
                Err(ReadEnd::Eof | ReadEnd::Shutdown) => return Ok(()),
            }
        }
    }

    /// A subscriber's wait for requests: reads as [`read_more`] does (but
    /// never idles out, as Redis exempts subscribers from `timeout`), and
    /// writes the messages posted to `mailbox` meanwhile. `None` when it
    /// wrote messages and read nothing.
    #[cold]
    async fn read_or_deliver(
        &mut self,
        mailbox: &crate::pubsub::Mailbox,
        shutdown: &mut Shutdown,
    ) -> io::Result<Option<Result<usize, ReadEnd>>> {
        let partial = self.server.partial_request_timeout();
        let read = read_more(
            &mut self.stream,
            &mut self.read_buf,
            std::time::Duration::ZERO,
            partial,
            shutdown,
        );
        // `read_more` is cancel safe: a read that loses the race has
        // taken nothing from the socket.
        tokio::select! {
            r = read => return r.map(Some),
            _ = mailbox.posted() => {}
        }
        let overflowed = mailbox
            .drain_into(&mut self.out, self.client.proto)
            .is_err()
            || {
                // A client that stops reading blocks this write while its
                // mailbox fills: the overflow ends the write.
                tokio::select! {
                    r = self.flush() => { r?; false }
                    _ = mailbox.overflowed() => true,
                }
            };
        if overflowed {
            crate::pubsub::log_overflow(self.client.id);
            return Ok(Some(Err(ReadEnd::Eof)));
        }
        Ok(None)
    }

    /// Parses up to `MAX_BATCH` complete requests from the read buffer.
    /// Returns the bytes they span and the protocol error that stopped
    /// parsing, if any.
    fn parse_batch(&mut self) -> (usize, Option<ProtocolError>) {
        self.ranges.clear();
        self.requests.clear();
        let mut offset = 0;
        // An empty rest parses to nothing in every parser state: skip it.
        while self.requests.len() < MAX_BATCH && offset < self.read_buf.len() {
            match self.parser.parse(&mut self.read_buf[offset..]) {
                Ok(None) => break,
                Ok(Some(n)) => {
                    let args = self.parser.args();
                    if !args.is_empty() {
                        let first = self.ranges.len();
                        self.ranges
                            .extend(args.iter().map(|&(s, e)| (s + offset, e + offset)));
                        self.requests.push((first, self.ranges.len()));
                    }
                    offset += n;
                }
                Err(e) => return (offset, Some(e)),
            }
        }
        (offset, None)
    }

    /// Runs the parsed requests from request `from` in one session and
    /// commits it; the replies are in `out` afterwards (errors only, if the
    /// commit failed). A request that blocks ends it early
    /// ([`Flow::Block`], at `blocked_at`): the batch's bytes stay in the
    /// read buffer, unreleased, until it resumes and completes.
    async fn execute_batch(&mut self, consumed: usize, from: usize) -> Flow {
        let batch = &self.read_buf[..consumed];
        let out_start = self.out.len();
        let started = Instant::now();
        // `CLIENT LIST`'s `qbuf=`: the unprocessed bytes, this batch
        // included, as Redis's query buffer while a command runs.
        self.client
            .info
            .qbuf
            .store(self.read_buf.len() as u64, Ordering::Relaxed);
        self.client.info.last_active_ms.store(
            started.duration_since(self.client.info.created).as_millis() as u64,
            Ordering::Relaxed,
        );
        let mut session = self.engine.session();
        session.freeze_clock(); // one clock read per batch

        // Into the engine's gate for the commands (left before the commit:
        // a transaction of another client waits for this batch's commands,
        // not for its journal sync).
        // Not entered while a script runs past the busy threshold: the
        // batch is answered BUSY (or SCRIPT KILL) without the gate.
        let busy = !self.engine.gate().try_enter(&mut self.client.seat)
            && enter_or_busy(&self.server, &self.engine, &mut self.client.seat).await;
        let mut flow = Flow::Continue;
        let mut executed = 0;
        // Allocated only for a run of two or more (never unpipelined).
        let mut plain_sets: Vec<Args<'_>> = Vec::new();
        // Start the memory tier's loads for the whole batch's keys first
        // (the first argument of most commands): the misses overlap each
        // other and the requests' own work instead of stalling each lookup.
        let memory = self.engine.memory();
        for &(first, end) in &self.requests[from..] {
            let args = Args::new(batch, &self.ranges[first..end]);
            if args.len() >= 2 {
                memory.prefetch(args.get(1));
            }
        }
        let mut i = from;
        while i < self.requests.len() {
            let mut ctx = Ctx {
                session: &mut session,
                engine: &self.engine,
                out: &mut self.out,
                client: &mut self.client,
                server: &self.server,
            };
            let request = |i: usize| {
                let (first, end) = self.requests[i];
                Args::new(batch, &self.ranges[first..end])
            };
            if busy {
                cmd::script::busy_reply(&request(i), &mut ctx).await;
                executed += 1;
                i += 1;
                continue;
            }
            // A run of plain SETs is written as one engine batch.
            let run = (i..self.requests.len())
                .take_while(|&j| cmd::set::is_plain(&request(j), &ctx))
                .count();
            if run > 1 {
                plain_sets.clear();
                plain_sets.extend((i..i + run).map(request));
                cmd::set::run_plain_batch(&plain_sets, &mut ctx).await;
                executed += run;
                i += run;
                continue;
            }
            executed += 1;
            i += 1;
            match cmd::execute(&request(i - 1), &mut ctx).await {
                Flow::Continue => {}
                Flow::Close => {
                    flow = Flow::Close;
                    break;
                }
                Flow::Block => {
                    // Unanswered: first to run when the connection wakes.
                    flow = Flow::Block;
                    executed -= 1;
                    self.blocked_at = i - 1;
                    break;
                }
            }
        }
        self.engine.gate().leave(&mut self.client.seat);
        let took = started.elapsed();
        self.server.command_stats.add(&mut self.client.tally, took);
        if executed == 1 && flow == Flow::Continue && self.requests.len() == from + 1 {
            let (first, end) = self.requests[from];
            let args = Args::new(batch, &self.ranges[first..end]);
            cmd::log_batch_of_one(&self.server, &mut self.client, &args, took);
        }
        self.client.untimed = false;
        if flow != Flow::Block {
            self.read_buf.advance(consumed);
            self.client
                .info
                .qbuf
                .store(self.read_buf.len() as u64, Ordering::Relaxed);
        }
        self.server
            .commands
            .fetch_add(executed as u64, Ordering::Relaxed);
        if let Err(e) = session.commit().await {
            self.replace_replies_with(&e, out_start, executed);
        }
        flow
    }

    /// Waits in a blocking command (see `cmd::blocking`): until a key it
    /// waits on is written or its deadline passes (true: run it again), or
    /// the client goes or the server stops (false: close). Requests the
    /// client sends meanwhile are buffered, up to the request size limit.
    #[cold]
    async fn wait_while_blocked(&mut self, shutdown: &mut Shutdown) -> io::Result<bool> {
        let Some(blocked) = &self.client.blocked else {
            return Ok(true);
        };
        let (wake, deadline) = (blocked.wake.clone(), blocked.deadline);
        let server = self.server.clone();
        let info = self.client.info.clone();
        server.blocked_clients.fetch_add(1, Ordering::Relaxed);
        *info.blocked_wake.lock().unwrap_or_else(|e| e.into_inner()) = Some(wake.clone());
        let _unblocked = scopeguard(move || {
            server.blocked_clients.fetch_sub(1, Ordering::Relaxed);
            *info.blocked_wake.lock().unwrap_or_else(|e| e.into_inner()) = None;
        });
        let limit = self.server.config.limits.max_request_len;
        loop {
            if shutdown.is_shutdown() {
                return Ok(false);
            }
            let room = self.read_buf.len() < limit;
            if room && self.read_buf.capacity() - self.read_buf.len() < READ_CHUNK / 4 {
                self.read_buf.reserve(READ_CHUNK);
            }
            let until = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = wake.notified() => {
                    // `CLIENT UNBLOCK` from another connection, or a write.
                    let why = self.client.info.unblock.swap(0, Ordering::AcqRel);
                    if let Some(b) = &mut self.client.blocked {
                        b.timed_out |= why == UNBLOCK_TIMEOUT;
                        b.unblocked |= why == UNBLOCK_ERROR;
                    }
                    return Ok(true);
                }
                _ = until => {
                    if let Some(b) = &mut self.client.blocked {
                        b.timed_out = true;
                    }
                    return Ok(true);
                }
                _ = shutdown.recv() => return Ok(false),
                r = self.stream.read_buf(&mut self.read_buf), if room => {
                    if r? == 0 {
                        return Ok(false);
                    }
                }
            }
        }
    }

    /// As Redis: an error reply, then the connection closes (the stream
    /// cannot be resynchronised). Out of line: the request path never
    /// runs it.
    #[cold]
    #[inline(never)]
    fn reply_protocol_error(&mut self, e: &ProtocolError) {
        reply::error(&mut self.out, &format!("ERR {e}"));
        tracing::debug!(client = self.client.id, error = %e, "closing connection after protocol error");
    }

    /// The commit failed: every reply of the batch becomes the error.
    #[cold]
    #[inline(never)]
    fn replace_replies_with(&mut self, e: &EngineError, out_start: usize, executed: usize) {
        tracing::warn!(client = self.client.id, error = %e, "commit failed; replying with errors");
        self.out.truncate(out_start);
        let msg = engine_error_message(e);
        for _ in 0..executed {
            reply::error(&mut self.out, &msg);
        }
    }

    /// Writes the output buffer in one go.
    async fn flush(&mut self) -> io::Result<()> {
        if self.out.is_empty() {
            return Ok(());
        }
        self.stream.write_all(&self.out).await?;
        self.stream.flush().await?;
        self.out.clear();
        if self.out.capacity() > KEEP_BUFFER {
            self.out = BytesMut::with_capacity(READ_CHUNK);
        }
        Ok(())
    }
}

impl<S> Drop for RespConnection<S> {
    fn drop(&mut self) {
        // Dropped half-way through a batch (its task aborted): out of the
        // gate, or no transaction could ever run again.
        self.engine.gate().leave(&mut self.client.seat);
        crate::cmd::pubsub::leave(&mut self.client, &self.server.pubsub);
        crate::cmd::monitor_stop(&mut self.client, &self.server);
        if self.client.replica {
            self.server.replicas.detach(self.client.id);
        }
        self.server.unregister(self.client.id);
    }
}

/// Waits to enter the engine's gate (held exclusively: `EXEC` or a
/// script); `true`, without entering, once a script has run longer
/// than `busy-reply-threshold` (Redis's busy state).
#[cold]
#[inline(never)]
async fn enter_or_busy(
    server: &ServerState,
    engine: &Engine,
    seat: &mut tiercache_engine::GateSeat,
) -> bool {
    loop {
        let wait = match server.scripts.running_since() {
            Some(since) => {
                let ms = server.tunable("busy-reply-threshold", 5000);
                let threshold = Duration::from_millis(ms.max(0) as u64);
                if ms > 0 && since.elapsed() >= threshold {
                    return true;
                }
                threshold.saturating_sub(since.elapsed())
            }
            // An EXEC, or a script not started yet: look again soon.
            None => Duration::from_millis(100),
        };
        let gate = engine.gate();
        tokio::select! {
            _ = gate.enter_after_exclusive(seat) => return false,
            _ = tokio::time::sleep(wait.max(Duration::from_millis(1))) => {}
        }
    }
}
