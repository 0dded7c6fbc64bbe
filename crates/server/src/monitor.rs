//! `MONITOR`: every command the server runs, as one status line per
//! command to each monitoring connection, in Redis's format:
//!
//! ```text
//! +1700000000.123456 [0 127.0.0.1:50544] "set" "foo" "bar"
//! ```
//!
//! A command is fed after it ran, so `EXEC` follows the commands it ran,
//! and commands refused at dispatch or queued by `MULTI` are not fed.
//! Administrative commands (`CONFIG`, `SHUTDOWN`, `SAVE`...) are never
//! shown, and passwords are `"(redacted)"` (`AUTH`, `HELLO ... AUTH`,
//! `MIGRATE ... AUTH|AUTH2`), as in Redis 7.0. The lines go through each
//! monitor's [`Mailbox`], so a monitor that stops reading is cut off at
//! the same limit as a subscriber.
//!
//! With no monitor the cost on the request path is one atomic load.

use crate::cmd::Args;
use crate::pubsub::Mailbox;
use bytes::{BufMut, Bytes, BytesMut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// The connections in `MONITOR` mode.
#[derive(Debug, Default)]
pub struct Monitors {
    count: AtomicUsize,
    list: Mutex<Vec<(u64, Arc<Mailbox>)>>,
}

impl Monitors {
    /// True when some connection monitors.
    #[inline]
    pub fn any(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    /// Starts feeding `client` through `mailbox` (again: no change).
    pub fn add(&self, client: u64, mailbox: Arc<Mailbox>) {
        let mut list = self.list.lock().unwrap_or_else(|e| e.into_inner());
        if !list.iter().any(|(id, _)| *id == client) {
            list.push((client, mailbox));
            self.count.store(list.len(), Ordering::Relaxed);
        }
    }

    /// Stops feeding `client`.
    pub fn remove(&self, client: u64) {
        let mut list = self.list.lock().unwrap_or_else(|e| e.into_inner());
        list.retain(|(id, _)| *id != client);
        self.count.store(list.len(), Ordering::Relaxed);
    }

    /// Feeds one command that ran, from the client at `addr`.
    #[cold]
    pub fn feed(&self, addr: &str, name: &str, args: &Args<'_>) {
        if hidden(name, args) {
            return;
        }
        let line = line(SystemTime::now(), addr, args, &redacted(name, args));
        for (_, mailbox) in self.list.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            mailbox.post_encoded(line.clone());
        }
    }
}

/// Commands Redis flags `admin` (or whose subcommand it flags): never
/// shown to monitors.
fn hidden(name: &str, args: &Args<'_>) -> bool {
    match name {
        "config" | "monitor" | "shutdown" | "save" | "bgsave" | "lastsave" | "debug"
        | "replicaof" | "slaveof" | "bgrewriteaof" | "pfdebug" | "pfselftest" => true,
        "slowlog" | "latency" => !args.is(1, "help"),
        "client" => ["kill", "list", "no-evict", "pause", "unpause", "unblock"]
            .iter()
            .any(|sub| args.is(1, sub)),
        _ => false,
    }
}

/// The arguments shown as `"(redacted)"`, by position (`MONITOR` and
/// `SLOWLOG` both hide them): passwords, and the values of `CONFIG SET`'s
/// sensitive parameters.
pub(crate) fn redacted(name: &str, args: &Args<'_>) -> Vec<usize> {
    match name {
        "config" if args.is(1, "set") => (2..args.len())
            .step_by(2)
            .filter(|&i| {
                i + 1 < args.len()
                    && ["requirepass", "masterauth", "masteruser"]
                        .iter()
                        .any(|p| args.is(i, p))
            })
            .map(|i| i + 1)
            .collect(),
        "auth" => (1..args.len()).collect(),
        "hello" => (2..args.len())
            .find(|&i| args.is(i, "auth") && i + 2 < args.len())
            .map_or_else(Vec::new, |i| vec![i + 1, i + 2]),
        "migrate" => {
            let mut hide = Vec::new();
            let mut i = 6;
            while i < args.len() {
                if args.is(i, "auth") && i + 1 < args.len() {
                    hide.push(i + 1);
                    i += 1;
                } else if args.is(i, "auth2") && i + 2 < args.len() {
                    hide.extend([i + 1, i + 2]);
                    i += 2;
                } else if args.is(i, "keys") {
                    break;
                }
                i += 1;
            }
            hide
        }
        _ => Vec::new(),
    }
}

/// One monitor line: the time in seconds and microseconds, the database
/// and client address, and every argument quoted as Redis's `sdscatrepr`.
fn line(now: SystemTime, addr: &str, args: &Args<'_>, hide: &[usize]) -> Bytes {
    let t = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let mut out = BytesMut::with_capacity(64);
    let client = if addr.starts_with('/') {
        format!("unix:{addr}")
    } else {
        addr.to_string()
    };
    out.put_slice(format!("+{}.{:06} [0 {client}]", t.as_secs(), t.subsec_micros()).as_bytes());
    for i in 0..args.len() {
        out.put_u8(b' ');
        if hide.contains(&i) {
            out.put_slice(b"\"(redacted)\"");
        } else {
            quote(&mut out, args.get(i));
        }
    }
    out.put_slice(b"\r\n");
    out.freeze()
}

/// Redis's `sdscatrepr`: a quoted string with escapes, safe on one line.
fn quote(out: &mut BytesMut, arg: &[u8]) {
    out.put_u8(b'"');
    for &b in arg {
        match b {
            b'\\' | b'"' => out.put_slice(&[b'\\', b]),
            b'\n' => out.put_slice(b"\\n"),
            b'\r' => out.put_slice(b"\\r"),
            b'\t' => out.put_slice(b"\\t"),
            7 => out.put_slice(b"\\a"),
            8 => out.put_slice(b"\\b"),
            0x20..=0x7e => out.put_u8(b),
            _ => out.put_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
    out.put_u8(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn args_of(words: &[&[u8]]) -> (Vec<u8>, Vec<(usize, usize)>) {
        crate::cmd::args_buf(words)
    }

    #[test]
    fn lines_quote_as_redis_and_redact_passwords() {
        let at = UNIX_EPOCH + Duration::from_micros(1_700_000_000_000_042);
        let (buf, ranges) = args_of(&[b"set", b"k\"\\", b"a\r\n\x01 b"]);
        let args = Args::new(&buf, &ranges);
        assert_eq!(
            &line(at, "127.0.0.1:5000", &args, &[])[..],
            b"+1700000000.000042 [0 127.0.0.1:5000] \"set\" \"k\\\"\\\\\" \"a\\r\\n\\x01 b\"\r\n"
        );
        let (buf, ranges) = args_of(&[b"hello", b"3", b"AUTH", b"u", b"p", b"SETNAME", b"n"]);
        let args = Args::new(&buf, &ranges);
        assert_eq!(redacted("hello", &args), vec![3, 4]);
        let l = line(at, "/tmp/s.sock", &args, &redacted("hello", &args));
        assert!(l.ends_with(b"[0 unix:/tmp/s.sock] \"hello\" \"3\" \"AUTH\" \"(redacted)\" \"(redacted)\" \"SETNAME\" \"n\"\r\n"));
        let (buf, ranges) = args_of(&[
            b"migrate", b"h", b"1", b"", b"0", b"5", b"AUTH2", b"u", b"p", b"KEYS", b"a",
        ]);
        assert_eq!(redacted("migrate", &Args::new(&buf, &ranges)), vec![7, 8]);
        let (buf, ranges) = args_of(&[b"auth", b"u", b"p"]);
        assert_eq!(redacted("auth", &Args::new(&buf, &ranges)), vec![1, 2]);
    }

    #[test]
    fn admin_commands_are_hidden() {
        let (buf, ranges) = args_of(&[b"client", b"KILL", b"id", b"3"]);
        assert!(hidden("client", &Args::new(&buf, &ranges)));
        let (buf, ranges) = args_of(&[b"client", b"setname", b"x"]);
        assert!(!hidden("client", &Args::new(&buf, &ranges)));
        let (buf, ranges) = args_of(&[b"config", b"get", b"x"]);
        assert!(hidden("config", &Args::new(&buf, &ranges)));
    }
}
