//! Commands: one file per command, each with the same shape — read the
//! arguments from [`Args`], run against the batch's [`Session`], encode the
//! reply into the output buffer. Adding a command is one new file, one
//! [`COMMANDS`] row and one match arm in [`execute`].
//!
//! Arity and key-size checks happen here, once, from the table, so command
//! files only deal with their own options.

use crate::resp::reply;
use crate::state::{ClientState, ServerState};
use bytes::{Bytes, BytesMut};
use tiercache_engine::{Engine, EngineError, Session};

mod client;
mod command;
mod config;
mod dbsize;
mod del;
mod echo;
mod exists;
mod expire;
mod flushall;
mod get;
mod incr;
mod info;
mod mget;
mod mset;
mod ping;
mod quit;
mod select;
mod set;
mod ttl;

pub use crate::resp::parse_i64;

/// The arguments of one request (the command name is argument 0): byte
/// ranges into the batch's read buffer.
pub struct Args<'a> {
    buf: &'a [u8],
    ranges: &'a [(usize, usize)],
}

impl<'a> Args<'a> {
    /// Arguments `ranges` of `buf`.
    pub fn new(buf: &'a [u8], ranges: &'a [(usize, usize)]) -> Self {
        Args { buf, ranges }
    }

    /// Number of arguments, the command name included.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// True when there are no arguments (never for a dispatched command).
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Argument `i` as a slice of the read buffer.
    pub fn get(&self, i: usize) -> &'a [u8] {
        let (s, e) = self.ranges[i];
        &self.buf[s..e]
    }

    /// Argument `i` as owned bytes for the engine to keep.
    ///
    /// Always a copy: a slice of the read buffer would pin the whole buffer
    /// allocation in the memory tier for as long as the value lives there,
    /// and the tier's byte bound would no longer be true.
    pub fn bytes(&self, i: usize) -> Bytes {
        Bytes::copy_from_slice(self.get(i))
    }

    /// Arguments `from..` as owned bytes (keys for multi-key commands).
    pub fn bytes_from(&self, from: usize) -> Vec<Bytes> {
        (from..self.len()).map(|i| self.bytes(i)).collect()
    }

    /// True when argument `i` equals `word`, ignoring ASCII case.
    pub fn is(&self, i: usize, word: &str) -> bool {
        self.get(i).eq_ignore_ascii_case(word.as_bytes())
    }
}

/// What the connection does after a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Go on with the next command.
    Continue,
    /// Send the replies so far, then close (`QUIT`).
    Close,
}

/// Everything a command may touch.
pub struct Ctx<'a, 'e> {
    /// The batch's session: every write in it is committed before replying.
    pub session: &'a mut Session<'e>,
    /// The engine, for what is not per session (stats).
    pub engine: &'e Engine,
    /// The connection's output buffer.
    pub out: &'a mut BytesMut,
    /// This connection's state (id, name).
    pub client: &'a mut ClientState,
    /// Server-wide state (config, counters).
    pub server: &'a ServerState,
}

impl Ctx<'_, '_> {
    /// Encodes an engine error as Redis would word it.
    pub fn engine_error(&mut self, e: &EngineError) {
        reply::error(self.out, &engine_error_message(e));
    }
}

/// The reply text for an engine error, with its Redis error code.
pub fn engine_error_message(e: &EngineError) -> String {
    match e {
        EngineError::NotAnInteger => NOT_AN_INTEGER.to_string(),
        EngineError::Overflow => "ERR increment or decrement would overflow".to_string(),
        EngineError::Store(s) => format!("ERR store '{}': {}", s.store, s.message),
        EngineError::WriteBackFull(_) => format!("OOM {e}"),
        other => format!("ERR {other}"),
    }
}

/// Redis's reply for a bad integer argument.
pub const NOT_AN_INTEGER: &str = "ERR value is not an integer or out of range";
/// Redis's reply for a malformed option list.
pub const SYNTAX_ERROR: &str = "ERR syntax error";

/// Which file runs a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cmd {
    Ping,
    Echo,
    Get,
    Set,
    Mget,
    Mset,
    Del,
    Exists,
    Expire,
    Pexpire,
    Ttl,
    Pttl,
    Incr,
    Decr,
    Incrby,
    Decrby,
    Dbsize,
    Flushall,
    Info,
    Config,
    Command,
    Client,
    Select,
    Quit,
}

/// A command's name, arity and key positions, as `COMMAND` reports them.
#[derive(Debug)]
pub struct CommandSpec {
    /// Lower-case name.
    pub name: &'static str,
    cmd: Cmd,
    /// Redis arity: `n` exactly n arguments (name included), `-n` at least n.
    pub arity: i32,
    /// Redis command flags.
    pub flags: &'static [&'static str],
    /// Position of the first key (0 = no keys).
    pub first_key: i32,
    /// Position of the last key (-1 = the last argument).
    pub last_key: i32,
    /// Step between keys.
    pub step: i32,
}

const fn spec(
    name: &'static str,
    cmd: Cmd,
    arity: i32,
    flags: &'static [&'static str],
    keys: (i32, i32, i32),
) -> CommandSpec {
    CommandSpec {
        name,
        cmd,
        arity,
        flags,
        first_key: keys.0,
        last_key: keys.1,
        step: keys.2,
    }
}

const R: &[&str] = &["readonly", "fast"];
const W: &[&str] = &["write", "denyoom"];
const WF: &[&str] = &["write", "denyoom", "fast"];
const A: &[&str] = &["fast", "stale"];
const NOKEYS: (i32, i32, i32) = (0, 0, 0);

/// Every command this server knows.
pub static COMMANDS: &[CommandSpec] = &[
    spec("ping", Cmd::Ping, -1, A, NOKEYS),
    spec("echo", Cmd::Echo, 2, A, NOKEYS),
    spec("get", Cmd::Get, 2, R, (1, 1, 1)),
    spec("set", Cmd::Set, -3, W, (1, 1, 1)),
    spec("mget", Cmd::Mget, -2, R, (1, -1, 1)),
    spec("mset", Cmd::Mset, -3, W, (1, -1, 2)),
    spec("del", Cmd::Del, -2, &["write"], (1, -1, 1)),
    spec("exists", Cmd::Exists, -2, R, (1, -1, 1)),
    spec("expire", Cmd::Expire, -3, &["write", "fast"], (1, 1, 1)),
    spec("pexpire", Cmd::Pexpire, -3, &["write", "fast"], (1, 1, 1)),
    spec("ttl", Cmd::Ttl, 2, R, (1, 1, 1)),
    spec("pttl", Cmd::Pttl, 2, R, (1, 1, 1)),
    spec("incr", Cmd::Incr, 2, WF, (1, 1, 1)),
    spec("decr", Cmd::Decr, 2, WF, (1, 1, 1)),
    spec("incrby", Cmd::Incrby, 3, WF, (1, 1, 1)),
    spec("decrby", Cmd::Decrby, 3, WF, (1, 1, 1)),
    spec("dbsize", Cmd::Dbsize, 1, R, NOKEYS),
    spec("flushall", Cmd::Flushall, -1, &["write"], NOKEYS),
    spec("info", Cmd::Info, -1, &["stale"], NOKEYS),
    spec("config", Cmd::Config, -2, &["admin", "stale"], NOKEYS),
    spec("command", Cmd::Command, -1, &["stale"], NOKEYS),
    spec("client", Cmd::Client, -2, &["stale"], NOKEYS),
    spec("select", Cmd::Select, 2, A, NOKEYS),
    spec("quit", Cmd::Quit, -1, A, NOKEYS),
];

/// The spec of a command name, ignoring case.
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    COMMANDS
        .iter()
        .find(|c| c.name.len() == name.len() && c.name.as_bytes().eq_ignore_ascii_case(name))
}

/// Runs one request and appends its reply to `ctx.out`.
pub async fn execute(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let Some(spec) = lookup(args.get(0)) else {
        reply::error(ctx.out, &unknown_command(args));
        return Flow::Continue;
    };
    let n = args.len() as i32;
    if (spec.arity > 0 && n != spec.arity) || n < -spec.arity {
        reply::error(
            ctx.out,
            &format!("ERR wrong number of arguments for '{}' command", spec.name),
        );
        return Flow::Continue;
    }
    if let Some(len) = oversized_key(spec, args, ctx.server.config.limits.max_key_len) {
        let max = ctx.server.config.limits.max_key_len;
        reply::error(
            ctx.out,
            &format!("ERR key too long ({len} bytes, the limit is {max})"),
        );
        return Flow::Continue;
    }
    match spec.cmd {
        Cmd::Ping => ping::run(args, ctx).await,
        Cmd::Echo => echo::run(args, ctx).await,
        Cmd::Get => get::run(args, ctx).await,
        Cmd::Set => set::run(args, ctx).await,
        Cmd::Mget => mget::run(args, ctx).await,
        Cmd::Mset => mset::run(args, ctx).await,
        Cmd::Del => del::run(args, ctx).await,
        Cmd::Exists => exists::run(args, ctx).await,
        Cmd::Expire => expire::run(args, ctx, expire::Unit::Seconds).await,
        Cmd::Pexpire => expire::run(args, ctx, expire::Unit::Millis).await,
        Cmd::Ttl => ttl::run(args, ctx, ttl::Unit::Seconds).await,
        Cmd::Pttl => ttl::run(args, ctx, ttl::Unit::Millis).await,
        Cmd::Incr => incr::run(args, ctx, incr::Delta::One(1)).await,
        Cmd::Decr => incr::run(args, ctx, incr::Delta::One(-1)).await,
        Cmd::Incrby => incr::run(args, ctx, incr::Delta::Arg { negate: false }).await,
        Cmd::Decrby => incr::run(args, ctx, incr::Delta::Arg { negate: true }).await,
        Cmd::Dbsize => dbsize::run(args, ctx).await,
        Cmd::Flushall => flushall::run(args, ctx).await,
        Cmd::Info => info::run(args, ctx).await,
        Cmd::Config => config::run(args, ctx).await,
        Cmd::Command => command::run(args, ctx).await,
        Cmd::Client => client::run(args, ctx).await,
        Cmd::Select => select::run(args, ctx).await,
        Cmd::Quit => quit::run(args, ctx).await,
    }
}

/// The length of the first key argument over `max`, if any.
fn oversized_key(spec: &CommandSpec, args: &Args<'_>, max: usize) -> Option<usize> {
    if spec.first_key == 0 {
        return None;
    }
    let last = if spec.last_key < 0 {
        args.len() as i32 + spec.last_key
    } else {
        spec.last_key
    };
    (spec.first_key..=last.min(args.len() as i32 - 1))
        .step_by(spec.step.max(1) as usize)
        .map(|i| args.get(i as usize).len())
        .find(|&len| len > max)
}

/// Redis 7's wording: the name, then the first arguments quoted, each
/// followed by a space, up to about 128 bytes.
fn unknown_command(args: &Args<'_>) -> String {
    let name = truncate(args.get(0), 128);
    let mut rest = String::new();
    for i in 1..args.len() {
        if rest.len() >= 128 {
            break;
        }
        rest.push('\'');
        rest.push_str(&truncate(args.get(i), 128 - rest.len()));
        rest.push_str("' ");
    }
    format!("ERR unknown command '{name}', with args beginning with: {rest}")
}

/// Redis's reply for an unknown subcommand of `cmd`.
pub fn unknown_subcommand(sub: &[u8], cmd: &str) -> String {
    format!(
        "ERR unknown subcommand '{}'. Try {} HELP.",
        truncate(sub, 128),
        cmd.to_ascii_uppercase()
    )
}

fn truncate(b: &[u8], max: usize) -> String {
    String::from_utf8_lossy(&b[..b.len().min(max)]).into_owned()
}

/// Redis's glob matching (`*`, `?`, `[...]`, `\`), for `CONFIG GET`.
pub fn glob_match(pattern: &[u8], s: &[u8], nocase: bool) -> bool {
    let eq = |a: u8, b: u8| {
        if nocase {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    let (mut p, mut i) = (0, 0);
    // Backtracking point for the last `*`: (pattern after it, string position).
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        let step = if p < pattern.len() {
            match pattern[p] {
                b'*' => {
                    star = Some((p + 1, i));
                    p += 1;
                    continue;
                }
                b'?' => Some(p + 1),
                b'[' => match_class(pattern, p, s[i], nocase),
                b'\\' if p + 1 < pattern.len() => eq(pattern[p + 1], s[i]).then_some(p + 2),
                c => eq(c, s[i]).then_some(p + 1),
            }
        } else {
            None
        };
        match (step, star) {
            (Some(np), _) => {
                p = np;
                i += 1;
            }
            (None, Some((sp, si))) => {
                p = sp;
                i = si + 1;
                star = Some((sp, si + 1));
            }
            (None, None) => return false,
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Matches `c` against the class starting at `pattern[p] == '['`; returns
/// the pattern position after the class when it matches.
fn match_class(pattern: &[u8], p: usize, c: u8, nocase: bool) -> Option<usize> {
    let fold = |b: u8| if nocase { b.to_ascii_lowercase() } else { b };
    let c = fold(c);
    let mut j = p + 1;
    let negate = pattern.get(j) == Some(&b'^');
    if negate {
        j += 1;
    }
    let mut matched = false;
    while j < pattern.len() && pattern[j] != b']' {
        if pattern[j] == b'\\' && j + 1 < pattern.len() {
            matched |= fold(pattern[j + 1]) == c;
            j += 2;
        } else if j + 2 < pattern.len() && pattern[j + 1] == b'-' && pattern[j + 2] != b']' {
            let (a, b) = (fold(pattern[j]), fold(pattern[j + 2]));
            matched |= a.min(b) <= c && c <= a.max(b);
            j += 3;
        } else {
            matched |= fold(pattern[j]) == c;
            j += 1;
        }
    }
    (matched != negate).then_some((j + 1).min(pattern.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match(b"*", b"maxmemory", true));
        assert!(glob_match(b"max*", b"maxmemory", true));
        assert!(glob_match(b"MAXMEM?RY", b"maxmemory", true));
        assert!(glob_match(b"*mem*", b"maxmemory", true));
        assert!(!glob_match(b"save", b"maxmemory", true));
        assert!(glob_match(b"[ps]ort", b"port", true));
        assert!(!glob_match(b"[^ps]ort", b"port", true));
        assert!(glob_match(b"a*b*c", b"aXXbYYc", false));
        assert!(!glob_match(b"a*b*c", b"aXXbYY", false));
    }

    #[test]
    fn strict_integers() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-12"), Some(-12));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        for bad in [&b""[..], b"-", b"+1", b"01", b"-0", b" 1", b"1 ", b"1a"] {
            assert_eq!(parse_i64(bad), None, "{:?}", bad);
        }
    }
}
