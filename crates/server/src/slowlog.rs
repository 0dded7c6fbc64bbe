//! `SLOWLOG`: the commands that ran longer than
//! `slowlog-log-slower-than` microseconds (default 10,000; negative turns
//! it off, 0 logs everything), newest first, at most `slowlog-max-len`
//! (default 128), each as Redis 7.0 keeps it: id, Unix time, duration,
//! arguments (at most 32, each cut at 128 bytes, passwords
//! `(redacted)`), client address and name.
//!
//! What is timed: `cmd::run_command` times each command Redis does not
//! flag `fast`, and every command once the threshold is under
//! [`FINE_US`]; a batch of one command is timed as a whole by the
//! connection. So at the default threshold a `fast` command (`GET`,
//! `INCR`...) inside a pipelined batch is not timed: it would cost two
//! clock reads per request on the hottest path, for commands that take
//! microseconds. `EXEC` is not logged, the commands it ran are.

use crate::cmd::Args;
use bytes::Bytes;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Redis's `SLOWLOG_ENTRY_MAX_ARGC`.
const MAX_ARGS: usize = 32;
/// Redis's `SLOWLOG_ENTRY_MAX_STRING`.
const MAX_ARG_BYTES: usize = 128;
/// Below this threshold (µs) every command is timed, `fast` ones too.
pub const FINE_US: i64 = 1_000;

/// One logged command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlowEntry {
    /// Increasing from 0 (not reset by `SLOWLOG RESET`).
    pub id: u64,
    /// When it was logged, Unix seconds.
    pub time: u64,
    /// How long it ran, µs.
    pub duration_us: u64,
    /// Its arguments, trimmed and redacted.
    pub args: Vec<Bytes>,
    /// The client's address (`ip:port`, or the socket path).
    pub addr: String,
    /// The client's name (empty without one).
    pub name: Bytes,
}

/// The slow log of one server.
#[derive(Debug)]
pub struct SlowLog {
    threshold_us: AtomicI64,
    max_len: AtomicU64,
    next_id: AtomicU64,
    entries: Mutex<VecDeque<SlowEntry>>,
}

impl Default for SlowLog {
    fn default() -> Self {
        SlowLog {
            threshold_us: AtomicI64::new(10_000),
            max_len: AtomicU64::new(128),
            next_id: AtomicU64::new(0),
            entries: Mutex::new(VecDeque::new()),
        }
    }
}

impl SlowLog {
    /// `slowlog-log-slower-than`.
    #[inline]
    pub fn threshold_us(&self) -> i64 {
        self.threshold_us.load(Ordering::Relaxed)
    }

    /// Sets `slowlog-log-slower-than`.
    pub fn set_threshold_us(&self, us: i64) {
        self.threshold_us.store(us, Ordering::Relaxed);
    }

    /// `slowlog-max-len`.
    pub fn max_len(&self) -> u64 {
        self.max_len.load(Ordering::Relaxed)
    }

    /// Sets `slowlog-max-len`, dropping the oldest entries over it.
    pub fn set_max_len(&self, len: u64) {
        self.max_len.store(len, Ordering::Relaxed);
        let mut entries = self.lock();
        entries.truncate(len.min(usize::MAX as u64) as usize);
    }

    /// Whether `run_command` times a command (`fast`: Redis flags it so).
    #[inline]
    pub fn times(&self, fast: bool) -> bool {
        let t = self.threshold_us();
        t >= 0 && (!fast || t < FINE_US)
    }

    /// Whether `took` is slow enough to be logged.
    #[inline]
    pub fn is_slow(&self, took: Duration) -> bool {
        let t = self.threshold_us();
        t >= 0 && took.as_micros() >= t as u128
    }

    /// Logs the command `args` (arguments at `hide` redacted), run by the
    /// client at `addr` named `name`, if `took` is slow enough.
    pub fn observe(
        &self,
        args: &Args<'_>,
        hide: &[usize],
        took: Duration,
        addr: &str,
        name: &[u8],
    ) {
        if !self.is_slow(took) {
            return;
        }
        let entry = SlowEntry {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            time: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            duration_us: took.as_micros().min(u64::MAX as u128) as u64,
            args: trimmed(args, hide),
            addr: addr.to_string(),
            name: Bytes::copy_from_slice(name),
        };
        let max = self.max_len().min(usize::MAX as u64) as usize;
        let mut entries = self.lock();
        entries.push_front(entry);
        entries.truncate(max);
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when nothing is logged.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The newest `count` entries (all with `None`).
    pub fn newest(&self, count: Option<usize>) -> Vec<SlowEntry> {
        let entries = self.lock();
        let n = count.unwrap_or(entries.len()).min(entries.len());
        entries.iter().take(n).cloned().collect()
    }

    /// Forgets every entry (ids go on increasing).
    pub fn reset(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<SlowEntry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Redis's `slowlogCreateEntry`: at most 32 arguments, the last of them
/// saying how many more there were; each cut at 128 bytes, saying how many
/// more bytes it had; the ones at `hide` as `(redacted)`.
fn trimmed(args: &Args<'_>, hide: &[usize]) -> Vec<Bytes> {
    let n = args.len().min(MAX_ARGS);
    (0..n)
        .map(|i| {
            if n != args.len() && i == n - 1 {
                return Bytes::from(format!("... ({} more arguments)", args.len() - n + 1));
            }
            if hide.contains(&i) {
                return Bytes::from_static(b"(redacted)");
            }
            let a = args.get(i);
            if a.len() > MAX_ARG_BYTES {
                let mut s = a[..MAX_ARG_BYTES].to_vec();
                s.extend_from_slice(
                    format!("... ({} more bytes)", a.len() - MAX_ARG_BYTES).as_bytes(),
                );
                Bytes::from(s)
            } else {
                Bytes::copy_from_slice(a)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::cmd::args_buf as args_of;

    #[test]
    fn entries_are_trimmed_redacted_bounded_and_newest_first() {
        let log = SlowLog::default();
        log.set_threshold_us(0);
        let mut words: Vec<Vec<u8>> = vec![b"sadd".to_vec(), b"set".to_vec()];
        words.extend((3..=33).map(|i: i32| i.to_string().into_bytes()));
        let (buf, ranges) = args_of(&words);
        log.observe(
            &Args::new(&buf, &ranges),
            &[],
            Duration::from_micros(7),
            "a:1",
            b"",
        );
        let e = &log.newest(None)[0];
        assert_eq!(e.args.len(), 32);
        assert_eq!(e.args[31], "... (2 more arguments)");
        assert_eq!(e.args[30], "31");
        assert_eq!(e.duration_us, 7);

        let (buf, ranges) = args_of(&[b"auth".to_vec(), b"p".to_vec(), vec![b'A'; 129]]);
        log.observe(&Args::new(&buf, &ranges), &[1], Duration::ZERO, "a:1", b"n");
        let e = &log.newest(Some(1))[0];
        assert_eq!(e.args[1], "(redacted)");
        assert_eq!(
            &e.args[2][..],
            [&[b'A'; 128][..], b"... (1 more bytes)"].concat()
        );
        assert_eq!((e.id, &e.name[..]), (1, &b"n"[..]));

        log.set_max_len(1);
        assert_eq!(log.len(), 1);
        assert_eq!(log.newest(None)[0].id, 1, "the newest is kept");
        log.reset();
        assert!(log.is_empty());
    }

    #[test]
    fn the_threshold_decides_what_is_timed_and_kept() {
        let log = SlowLog::default();
        assert!(log.times(false) && !log.times(true), "default: 10 ms");
        assert!(!log.is_slow(Duration::from_micros(9_999)));
        assert!(log.is_slow(Duration::from_micros(10_000)));
        log.set_threshold_us(10);
        assert!(log.times(true), "a fine threshold times fast commands too");
        log.set_threshold_us(-1);
        assert!(!log.times(false) && !log.is_slow(Duration::from_secs(5)));
    }
}
