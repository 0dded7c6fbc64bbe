//! The read step both protocol connections share: buffer housekeeping,
//! then one read that gives way to shutdown and to the idle timeout.

use crate::shutdown::Shutdown;
use bytes::BytesMut;
use std::io;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};

/// Bytes asked of the socket per read.
pub(crate) const READ_CHUNK: usize = 16 << 10;
/// A drained read buffer larger than this (after a big request) is
/// replaced, so one large value does not pin its memory for the
/// connection's life.
pub(crate) const KEEP_BUFFER: usize = 1 << 20;
/// Most requests run in one batch (one session, one commit, one write).
pub(crate) const MAX_BATCH: usize = 1024;
/// How long a half-received request may wait for its next bytes. A client
/// that starts a request and then goes quiet (slowloris) is closed after
/// this even when the idle timeout is off: it holds a buffer and a client
/// slot, and no correct client pauses mid-request this long.
pub(crate) const PARTIAL_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a connection stops reading.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ReadEnd {
    /// The client closed its side (a partial request left behind is dropped).
    Eof,
    /// Nothing arrived within the idle timeout.
    Idle,
    /// A request was left half-sent for [`PARTIAL_REQUEST_TIMEOUT`].
    Stalled,
    /// The server is stopping.
    Shutdown,
}

/// Appends what the client sends next to `buf`: the number of bytes, or
/// why the connection should close. `idle` of zero waits forever between
/// requests; a partial request in `buf` waits at most `partial` (or `idle`
/// when shorter). The buffer grows by what arrives, never by what a header
/// claims.
pub(crate) async fn read_more<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut BytesMut,
    idle: Duration,
    partial: Duration,
    shutdown: &mut Shutdown,
) -> io::Result<Result<usize, ReadEnd>> {
    if buf.is_empty() && buf.capacity() > KEEP_BUFFER {
        *buf = BytesMut::with_capacity(READ_CHUNK);
    }
    if shutdown.is_shutdown() {
        return Ok(Err(ReadEnd::Shutdown));
    }
    if buf.capacity() - buf.len() < READ_CHUNK / 4 {
        buf.reserve(READ_CHUNK);
    }
    // Which limit applies: between requests only the idle timeout; within
    // one, the shorter of the two.
    let (limit, on_expiry) = match (buf.is_empty(), idle.is_zero()) {
        (true, true) => (None, ReadEnd::Idle),
        (true, false) => (Some(idle), ReadEnd::Idle),
        (false, false) if idle < partial => (Some(idle), ReadEnd::Idle),
        (false, _) => (Some(partial), ReadEnd::Stalled),
    };
    let read = async {
        match limit {
            None => stream.read_buf(buf).await.map(Some),
            Some(limit) => match tokio::time::timeout(limit, stream.read_buf(buf)).await {
                Ok(r) => r.map(Some),
                Err(_) => Ok(None),
            },
        }
    };
    // `biased`, read first: when the request is already waiting (the common
    // case under load) the shutdown branch is never polled; when it is, the
    // poll is a waker registration and a flag load (see `Shutdown`).
    // Shutdown is still seen under a steady stream of requests: it is
    // checked above before every read.
    tokio::select! {
        biased;
        r = read => Ok(match r? {
            Some(0) => Err(ReadEnd::Eof),
            Some(n) => Ok(n),
            None => Err(on_expiry),
        }),
        _ = shutdown.recv() => Ok(Err(ReadEnd::Shutdown)),
    }
}
