//! `MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH
//! password | AUTH2 username password] [KEYS key ...]`: copies keys to
//! another server (Redis or tiercache) as `RESTORE` commands carrying their
//! `DUMP` payloads ([`crate::rdb`]), then deletes them here unless `COPY`,
//! as Redis's `migrateCommand` does, with its replies (`NOKEY`, `IOERR
//! ...`, `Target instance replied with error: ...`).
//!
//! Differences from Redis: no connection cache (each `MIGRATE` connects,
//! so `INFO`'s `migrate_cached_sockets` stays 0, and `SELECT` is always
//! sent, as Redis sends it on a new connection); the server is not
//! stopped meanwhile (the connection leaves the engine's gate while it
//! waits on the target, so another client's `EXEC` does not wait for it),
//! so a key is deleted only if it still holds the value that was sent (its
//! cas unique unchanged), never a value written since.

use super::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::notify::class;
use crate::rdb;
use crate::replication::append_command as command;
use crate::resp::reply;
use bytes::{Bytes, BytesMut};
use std::time::Duration;
use tiercache_engine::{now_ms, Change};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::time::timeout;

/// A reply line longer than this is not a reply to `RESTORE`.
const MAX_LINE: usize = 1024;

struct Options<'a> {
    copy: bool,
    replace: bool,
    auth: Option<(Option<&'a [u8]>, &'a [u8])>,
    keys: Vec<&'a [u8]>,
    db: i64,
    timeout: Duration,
}

fn options<'a>(args: &Args<'a>) -> Result<Options<'a>, &'static str> {
    let mut o = Options {
        copy: false,
        replace: false,
        auth: None,
        keys: vec![args.get(3)],
        db: 0,
        timeout: Duration::ZERO,
    };
    let mut j = 6;
    while j < args.len() {
        let more = args.len() - 1 - j;
        if args.is(j, "copy") {
            o.copy = true;
        } else if args.is(j, "replace") {
            o.replace = true;
        } else if args.is(j, "auth") {
            if more < 1 {
                return Err(SYNTAX_ERROR);
            }
            o.auth = Some((None, args.get(j + 1)));
            j += 1;
        } else if args.is(j, "auth2") {
            if more < 2 {
                return Err(SYNTAX_ERROR);
            }
            o.auth = Some((Some(args.get(j + 1)), args.get(j + 2)));
            j += 2;
        } else if args.is(j, "keys") {
            if !args.get(3).is_empty() {
                return Err("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string");
            }
            o.keys = (j + 1..args.len()).map(|i| args.get(i)).collect();
            break;
        } else {
            return Err(SYNTAX_ERROR);
        }
        j += 1;
    }
    let ms = parse_i64(args.get(5)).ok_or(NOT_AN_INTEGER)?;
    o.db = parse_i64(args.get(4)).ok_or(NOT_AN_INTEGER)?;
    o.timeout = Duration::from_millis(if ms <= 0 { 1000 } else { ms as u64 });
    Ok(o)
}

/// Why the exchange with the target stopped short, in Redis's words.
const CONNECT_FAILED: &str = "IOERR error or timeout connecting to the client";
const WRITE_FAILED: &str = "IOERR error or timeout writing to target instance";
const READ_FAILED: &str = "IOERR error or timeout reading to target instance";

/// Sends `request` to `addr` and reads up to `expected` reply lines, each
/// step under `limit`: the lines read (fewer on a read error or timeout),
/// or the error when nothing could be sent.
async fn exchange(
    addr: &str,
    request: &[u8],
    expected: usize,
    limit: Duration,
) -> Result<Vec<Vec<u8>>, &'static str> {
    let Ok(Ok(stream)) = timeout(limit, TcpStream::connect(addr)).await else {
        return Err(CONNECT_FAILED);
    };
    let mut stream = BufReader::new(stream);
    if !matches!(
        timeout(limit, stream.get_mut().write_all(request)).await,
        Ok(Ok(()))
    ) {
        return Err(WRITE_FAILED);
    }
    let mut lines = Vec::new();
    while lines.len() < expected {
        match timeout(limit, read_line(&mut stream)).await {
            Ok(Ok(line)) => lines.push(line),
            _ => break,
        }
    }
    Ok(lines)
}

/// One reply line, without its CRLF.
async fn read_line(r: &mut BufReader<TcpStream>) -> std::io::Result<Vec<u8>> {
    let mut line = Vec::new();
    loop {
        let buf = r.fill_buf().await?;
        if buf.is_empty() {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let (taken, done) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        line.extend_from_slice(&buf[..taken]);
        r.consume(taken);
        if line.len() > MAX_LINE {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
        if done {
            line.truncate(line.len().saturating_sub(2));
            return Ok(line);
        }
    }
}

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let o = match options(args) {
        Ok(o) => o,
        Err(msg) => {
            reply::error(ctx.out, msg);
            return Flow::Continue;
        }
    };
    // The keys here, with the cas unique of the value sent.
    let mut found = Vec::new();
    for key in &o.keys {
        match ctx.session.get(key).await {
            Ok(Some(e)) => found.push((Bytes::copy_from_slice(key), e)),
            Ok(None) => {}
            Err(e) => {
                ctx.engine_error(&e);
                return Flow::Continue;
            }
        }
    }
    if found.is_empty() {
        reply::simple(ctx.out, "NOKEY");
        return Flow::Continue;
    }

    let mut request = BytesMut::new();
    if let Some((user, pass)) = o.auth {
        match user {
            Some(user) => command(&mut request, &[b"AUTH", user, pass]),
            None => command(&mut request, &[b"AUTH", pass]),
        }
    }
    command(&mut request, &[b"SELECT", o.db.to_string().as_bytes()]);
    let now = now_ms();
    let mut sent = Vec::new();
    for (key, e) in &found {
        let ttl = match e.expires_at {
            Some(at) if at < now => continue, // expired since it was read
            Some(at) => (at - now).max(1),
            None => 0,
        };
        let payload = match rdb::dump(e.kind, &e.value) {
            Ok(p) => p,
            Err(msg) => {
                ctx.error(&msg);
                return Flow::Continue;
            }
        };
        let ttl = ttl.to_string();
        let mut restore: Vec<&[u8]> = vec![b"RESTORE", key, ttl.as_bytes(), &payload];
        if o.replace {
            restore.push(b"REPLACE");
        }
        command(&mut request, &restore);
        sent.push((key.clone(), e.cas));
    }

    let addr = format!(
        "{}:{}",
        String::from_utf8_lossy(args.get(1)),
        String::from_utf8_lossy(args.get(2))
    );
    let expected = usize::from(o.auth.is_some()) + 1 + sent.len();
    // Out of the engine's gate while waiting on the network: a slow target
    // must not hold up another client's `EXEC` (Redis's whole server waits).
    let gate = ctx.engine.gate();
    let was_inside = ctx.client.seat.is_inside();
    gate.leave(&mut ctx.client.seat);
    let exchanged = exchange(&addr, &request, expected, o.timeout).await;
    if was_inside {
        gate.enter(&mut ctx.client.seat).await;
    }
    let lines = match exchanged {
        Ok(lines) => lines,
        Err(msg) => {
            ctx.error(msg);
            return Flow::Continue;
        }
    };
    let first_error = lines
        .iter()
        .find(|l| l.first() == Some(&b'-'))
        .map(|l| String::from_utf8_lossy(&l[1..]).into_owned());
    // The keys the target took, unless an AUTH or SELECT before them failed.
    let setup = expected - sent.len();
    let setup_failed = lines.iter().take(setup).any(|l| l.first() == Some(&b'-'));
    if !o.copy && !setup_failed {
        for ((key, cas), line) in sent.iter().zip(lines.iter().skip(setup)) {
            if line.first() == Some(&b'-') {
                continue;
            }
            let cas = *cas;
            let deleted = ctx
                .session
                .modify(key.clone(), |old| match old {
                    Some(e) if e.cas == cas => (Change::Delete, true),
                    _ => (Change::Keep, false),
                })
                .await;
            match deleted {
                Ok(m) if m.result => {
                    ctx.notify(class::GENERIC, "del", key);
                    // Replicas delete what moved; they do not migrate it again.
                    ctx.propagate_as(&[b"DEL", key]);
                }
                Ok(_) => {}
                Err(e) => {
                    ctx.engine_error(&e);
                    return Flow::Continue;
                }
            }
        }
    }
    match first_error {
        Some(e) => ctx.error(&format!("ERR Target instance replied with error: {e}")),
        None if lines.len() < expected => ctx.error(READ_FAILED),
        None => reply::ok(ctx.out),
    }
    Flow::Continue
}
