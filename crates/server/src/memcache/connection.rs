//! One memcached client connection: read, parse every complete request,
//! run them all in one engine session, commit, write every reply in one
//! write — the same cycle as [`RespConnection`](crate::RespConnection).
//!
//! Architecture invariant: nothing of a batch is written to the socket
//! before `Session::commit` returned Ok; if it fails, every reply of the
//! batch is replaced by `SERVER_ERROR ...` (for the requests that expect a
//! reply), so no write is acknowledged unless it is durable.

use super::parse::{Fatal, McParser, Parsed};
use super::{engine_error_message, execute, storage, Ctx, Flow, Req};
use crate::read::{read_more, KEEP_BUFFER, MAX_BATCH, READ_CHUNK};
use crate::shutdown::Shutdown;
use crate::state::ServerState;
use bytes::{Buf, BytesMut};
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tiercache_engine::{Engine, EngineError, GateSeat};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};

/// One request of the batch: its slice of the flattened token ranges.
#[derive(Clone, Copy)]
struct Slot {
    tokens: (usize, usize),
    parsed: Parsed,
}

impl Slot {
    /// Whether a reply is expected at all (`noreply` requests get none,
    /// even for a failed commit).
    fn silent(&self) -> bool {
        matches!(
            self.parsed,
            Parsed::Store { noreply: true, .. } | Parsed::Reply { noreply: true, .. }
        )
    }
}

/// A memcached client connection over any byte stream.
pub struct McConnection<S> {
    stream: S,
    read_buf: BytesMut,
    out: BytesMut,
    parser: McParser,
    /// Token ranges of every request of the batch, flattened, relative to
    /// the start of the read buffer.
    tokens: Vec<(usize, usize)>,
    requests: Vec<Slot>,
    engine: Arc<Engine>,
    server: Arc<ServerState>,
    /// This connection's place at the engine's gate (see
    /// `tiercache_engine::gate`): a RESP transaction runs with no memcached
    /// request in between either.
    seat: GateSeat,
}

impl<S: AsyncRead + AsyncWrite + Unpin + Send> McConnection<S> {
    /// A connection serving `stream` from `engine`.
    pub fn new(stream: S, engine: Arc<Engine>, server: Arc<ServerState>) -> Self {
        McConnection {
            stream,
            read_buf: BytesMut::with_capacity(READ_CHUNK),
            out: BytesMut::with_capacity(READ_CHUNK),
            parser: McParser::new(&server.config.limits),
            tokens: Vec::new(),
            requests: Vec::new(),
            engine,
            // Any number that differs between connections spreads them
            // over the gate's slots.
            seat: GateSeat::new(server.connections_received.load(Ordering::Relaxed)),
            server,
        }
    }

    /// Serves the client until it leaves, sends `quit`, breaks the
    /// protocol, idles out, or the server shuts down.
    pub async fn run(&mut self, shutdown: &mut Shutdown) -> io::Result<()> {
        loop {
            loop {
                let (consumed, fatal) = self.parse_batch();
                let flow = if self.requests.is_empty() {
                    self.read_buf.advance(consumed);
                    Flow::Continue
                } else {
                    self.execute_batch(consumed).await
                };
                self.flush().await?;
                if let Some(Fatal(why)) = fatal {
                    // As memcached: no reply, the connection is closed.
                    log_protocol_error(why);
                    return Ok(());
                }
                if flow == Flow::Close {
                    return Ok(());
                }
                // Nothing left to parse (the usual end of a batch): read
                // next without parsing an empty buffer first.
                if self.read_buf.is_empty() || (self.requests.is_empty() && consumed == 0) {
                    break;
                }
            }
            // The idle timeout is the server's current one (`CONFIG SET timeout`).
            let idle = self.server.idle_timeout();
            let partial = self.server.partial_request_timeout();
            match read_more(
                &mut self.stream,
                &mut self.read_buf,
                idle,
                partial,
                shutdown,
            )
            .await?
            {
                Ok(n) => {
                    self.server.note_activity();
                    self.server.memcache.bytes_read.add(n as u64)
                }
                Err(_) => return Ok(()),
            }
        }
    }

    /// Parses up to `MAX_BATCH` requests; returns the bytes they span and
    /// the error that ends the connection, if any.
    fn parse_batch(&mut self) -> (usize, Option<Fatal>) {
        self.tokens.clear();
        self.requests.clear();
        let mut offset = 0;
        // An empty rest parses to nothing in every parser state: skip it.
        while self.requests.len() < MAX_BATCH && offset < self.read_buf.len() {
            match self.parser.parse(&mut self.read_buf[offset..]) {
                Ok(None) => break,
                Ok(Some((n, parsed))) => {
                    if parsed != Parsed::Swallowed {
                        let first = self.tokens.len();
                        self.tokens.extend(
                            self.parser
                                .tokens()
                                .iter()
                                .map(|&(s, e)| (s + offset, e + offset)),
                        );
                        self.requests.push(Slot {
                            tokens: (first, self.tokens.len()),
                            parsed: shift(parsed, offset),
                        });
                    }
                    offset += n;
                }
                Err(e) => return (offset, Some(e)),
            }
        }
        (offset, None)
    }

    /// Runs the parsed requests in one session and commits it.
    async fn execute_batch(&mut self, consumed: usize) -> Flow {
        let batch = &self.read_buf[..consumed];
        let out_start = self.out.len();
        let mut session = self.engine.session();
        session.freeze_clock(); // one clock read per batch
        if !self.engine.gate().try_enter(&mut self.seat) {
            self.engine
                .gate()
                .enter_after_exclusive(&mut self.seat)
                .await;
        }
        let mut flow = Flow::Continue;
        let mut executed = 0;
        let request = |slot: &Slot| {
            Req::new(
                batch,
                &self.tokens[slot.tokens.0..slot.tokens.1],
                slot.parsed,
            )
        };
        // Start the memory tier's loads for the whole batch's keys before
        // running any request: the misses overlap each other and the work
        // of the requests before them instead of stalling each lookup.
        let memory = self.engine.memory();
        for slot in &self.requests {
            if let Some(key) = request(slot).key() {
                memory.prefetch(key);
            }
        }
        while executed < self.requests.len() {
            let mut ctx = Ctx {
                session: &mut session,
                engine: &self.engine,
                out: &mut self.out,
                server: &self.server,
            };
            // A run of plain `set`s is written as one engine batch (counted
            // first, so a lone request collects nothing).
            // With replicas attached each write is fed on its own.
            let run = match self.server.replicas.any() {
                true => 0,
                false => self.requests[executed..]
                    .iter()
                    .take_while(|slot| storage::is_plain_set(&request(slot)))
                    .count(),
            };
            if run > 1 {
                let sets: Vec<Req<'_>> = self.requests[executed..executed + run]
                    .iter()
                    .map(request)
                    .collect();
                storage::run_set_batch(&sets, &mut ctx).await;
                executed += run;
                continue;
            }
            let req = request(&self.requests[executed]);
            executed += 1;
            if execute(&req, &mut ctx).await == Flow::Close {
                flow = Flow::Close;
                break;
            }
        }
        self.engine.gate().leave(&mut self.seat);
        self.read_buf.advance(consumed);
        self.server
            .commands
            .fetch_add(executed as u64, Ordering::Relaxed);
        if let Err(e) = session.commit().await {
            self.replace_replies_with(&e, out_start, executed);
        }
        flow
    }

    /// A failed commit: every reply of the batch's first `executed`
    /// requests becomes the error. Out of line and cold, so that the
    /// request path stays compact in the instruction cache.
    #[cold]
    #[inline(never)]
    fn replace_replies_with(&mut self, e: &EngineError, out_start: usize, executed: usize) {
        tracing::warn!(error = %e, "commit failed; replying with errors");
        self.out.truncate(out_start);
        let msg = engine_error_message(e);
        for _ in self.requests[..executed].iter().filter(|s| !s.silent()) {
            self.out.extend_from_slice(msg.as_bytes());
            self.out.extend_from_slice(b"\r\n");
        }
    }

    async fn flush(&mut self) -> io::Result<()> {
        if self.out.is_empty() {
            return Ok(());
        }
        self.stream.write_all(&self.out).await?;
        self.stream.flush().await?;
        self.server
            .memcache
            .bytes_written
            .add(self.out.len() as u64);
        self.out.clear();
        if self.out.capacity() > KEEP_BUFFER {
            self.out = BytesMut::with_capacity(READ_CHUNK);
        }
        Ok(())
    }
}

#[cold]
#[inline(never)]
fn log_protocol_error(why: &str) {
    tracing::debug!(why, "closing memcache connection after protocol error");
}

/// Makes a parse result's data range relative to the batch buffer.
fn shift(parsed: Parsed, offset: usize) -> Parsed {
    let shift = |(s, e): (usize, usize)| (s + offset, e + offset);
    match parsed {
        Parsed::Store {
            cmd,
            flags,
            exptime,
            cas,
            noreply,
            data,
        } => Parsed::Store {
            cmd,
            flags,
            exptime,
            cas,
            noreply,
            data: shift(data),
        },
        Parsed::MetaSet { flags, data } => Parsed::MetaSet {
            flags,
            data: shift(data),
        },
        other => other,
    }
}

impl<S> Drop for McConnection<S> {
    fn drop(&mut self) {
        // Dropped half-way through a batch (its task aborted): out of the
        // gate, or no transaction could ever run again.
        self.engine.gate().leave(&mut self.seat);
    }
}
