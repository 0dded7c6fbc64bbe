//! Commands: one file per command (or per small family), each with the
//! same shape — read the arguments from [`Args`], run against the batch's
//! [`Session`], encode the reply into the output buffer in the client's
//! protocol. Adding a command is one new file, one [`COMMANDS`] row and
//! one match arm in [`execute`].
//!
//! Arity, authentication and key-size checks happen here, once, from the
//! table, in Redis's order (unknown command, arity, `NOAUTH`), so command
//! files only deal with their own options.

use crate::pubsub::Space;
use crate::resp::{reply, Proto};
use crate::state::{ClientState, ServerState};
use bytes::{Bytes, BytesMut};
use std::sync::Arc;
use tiercache_engine::{Engine, EngineError, Entry, Session, Update, ValueKind};

mod alone;
mod append;
mod auth;
mod bitcount;
mod bitfield;
mod bitop;
mod bitpos;
mod bits;
pub mod blocking;
mod client;
mod client_kill;
mod cluster;
pub mod collection;
mod command;
mod config;
mod dbsize;
mod debug;
mod del;
mod docs;
#[rustfmt::skip]
mod docs_data;
mod dump;
mod echo;
mod exists;
mod expire;
mod flushall;
pub mod geo;
mod get;
mod getex;
mod getkeys;
pub mod hash;
mod hello;
mod hll;
mod incr;
pub(crate) mod incrbyfloat;
mod info;
mod keys;
pub(crate) mod keytype;
mod latency;
mod lcs;
pub mod list;
mod lolwut;
mod memory;
mod mget;
mod migrate;
mod monitor;
mod mset;
pub mod multi;
mod object;
mod persist;
mod ping;
pub mod propagate;
pub(crate) mod pubsub;
mod quit;
mod randomkey;
mod range;
mod rename;
mod replication;
mod reset;
mod sampling;
pub(crate) mod save;
mod scan;
pub mod script;
mod select;
pub(crate) mod set;
pub mod sets;
mod slowlog;
mod sort;
pub mod stream;
mod subcommand;
mod table;
mod time;
mod ttl;
pub mod zset;

pub use crate::glob::glob_match;
pub use crate::resp::parse_i64;
pub use monitor::stop as monitor_stop;
use table::Cmd;
pub use table::{lookup, lookup_index, CommandSpec, COMMANDS};

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

    /// Arguments `k` (a key) and `v` (its value) as owned bytes, copied
    /// into one allocation ([`tiercache_engine::copy_key_value`]).
    pub fn key_value(&self, k: usize, v: usize) -> (Bytes, Bytes) {
        tiercache_engine::copy_key_value(self.get(k), self.get(v))
    }

    /// Arguments `from..` as owned bytes (keys for multi-key commands).
    pub fn bytes_from(&self, from: usize) -> Vec<Bytes> {
        (from..self.len()).map(|i| self.bytes(i)).collect()
    }

    /// True when argument `i` equals `word`, ignoring ASCII case.
    pub fn is(&self, i: usize, word: &str) -> bool {
        self.get(i).eq_ignore_ascii_case(word.as_bytes())
    }

    /// Argument `i` as (lossy) text, for error messages.
    pub fn text(&self, i: usize) -> String {
        String::from_utf8_lossy(self.get(i)).into_owned()
    }
}

/// A read buffer and argument ranges holding `words`, for unit tests
/// that build an [`Args`].
#[cfg(test)]
pub(crate) fn args_buf<T: AsRef<[u8]>>(words: &[T]) -> (Vec<u8>, Vec<(usize, usize)>) {
    let mut buf = Vec::new();
    let mut ranges = Vec::new();
    for w in words {
        let w = w.as_ref();
        ranges.push((buf.len(), buf.len() + w.len()));
        buf.extend_from_slice(w);
    }
    (buf, ranges)
}

/// What the connection does after a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Go on with the next command.
    Continue,
    /// Send the replies so far, then close (`QUIT`).
    Close,
    /// Send the replies so far, then wait until a key the command waits on
    /// changes or its timeout passes, and run the command again (`BLPOP`;
    /// see [`blocking`]). The command replied nothing.
    Block,
}

/// Everything a command may touch.
pub struct Ctx<'a, 'e> {
    /// The batch's session: every write in it is committed before replying.
    pub session: &'a mut Session<'e>,
    /// The engine, for what is not per session (stats), shared so that
    /// work may outlive the request (`BGSAVE`).
    pub engine: &'e Arc<Engine>,
    /// The connection's output buffer.
    pub out: &'a mut BytesMut,
    /// This connection's state (id, protocol, authentication).
    pub client: &'a mut ClientState,
    /// Server-wide state (config, counters).
    pub server: &'a ServerState,
}

impl Ctx<'_, '_> {
    /// Encodes an engine error as Redis would word it.
    pub fn engine_error(&mut self, e: &EngineError) {
        reply::error(self.out, &engine_error_message(e));
    }

    /// The client's reply protocol.
    pub fn proto(&self) -> Proto {
        self.client.proto
    }

    /// Replies with a null in the client's protocol.
    pub fn null(&mut self) {
        reply::null(self.out, self.client.proto);
    }

    /// Replies with a bulk string, or null when absent.
    pub fn bulk_or_null(&mut self, bytes: Option<&[u8]>) {
        reply::bulk_or_null(self.out, bytes, self.client.proto);
    }

    /// Replies with an error.
    pub fn error(&mut self, msg: &str) {
        reply::error(self.out, msg);
    }

    /// Raises keyspace event `event` of `class` (`crate::notify::class`)
    /// on `key`, where Redis raises it; the first event on a key the
    /// command created comes after a `new` event (see
    /// `ClientState::absent_keys`).
    #[inline]
    pub fn notify(&self, class: u32, event: &str, key: &[u8]) {
        // Every change raises an event: replication propagates on it.
        self.client.dirty.set(true);
        if self.server.keyspace_events.flags() == 0 {
            return;
        }
        let mut absent = self.client.absent_keys.borrow_mut();
        if let Some(at) = absent.iter().position(|k| k == key) {
            absent.swap_remove(at);
            self.server.notify(crate::notify::class::NEW, "new", key);
        }
        drop(absent);
        self.server.notify(class, event, key);
    }
}

/// [`Session::get`] for a string command: a key holding another kind (a
/// hash) is [`EngineError::WrongType`].
pub(crate) async fn get_string(
    session: &mut Session<'_>,
    key: &[u8],
) -> tiercache_engine::Result<Option<Entry>> {
    match session.get(key).await? {
        Some(e) if e.kind != ValueKind::String => Err(EngineError::WrongType),
        e => Ok(e),
    }
}

/// [`Session::update`] for a string command: a key holding another kind
/// is left alone and answers [`EngineError::WrongType`] (`f` never sees it).
pub(crate) async fn update_string<T>(
    session: &mut Session<'_>,
    key: &[u8],
    f: impl FnOnce(Option<&Entry>) -> (Update, T),
) -> tiercache_engine::Result<T> {
    session
        .update(key, |old| match old {
            Some(e) if e.kind != ValueKind::String => (Update::Keep, None),
            old => {
                let (update, answer) = f(old);
                (update, Some(answer))
            }
        })
        .await?
        .ok_or(EngineError::WrongType)
}

/// The update that replaces a string changed in place (`APPEND`,
/// `SETRANGE`, `SETBIT`, `BITFIELD`) by `v`: it keeps the old value's
/// expiry and flags; a new key gets none.
pub(crate) fn rewrite_string(old: Option<&Entry>, v: Vec<u8>) -> Update {
    match old {
        Some(e) => Update::SetEntry(Entry::with_flags(v, e.expires_at, e.flags)),
        None => Update::Set(v.into()),
    }
}

/// The reply text for an engine error, with its Redis error code.
pub fn engine_error_message(e: &EngineError) -> String {
    match e {
        EngineError::NotAnInteger => NOT_AN_INTEGER.to_string(),
        EngineError::Overflow => "ERR increment or decrement would overflow".to_string(),
        EngineError::WrongType => WRONGTYPE.to_string(),
        EngineError::Store(s) => format!("ERR store '{}': {}", s.store, s.message),
        EngineError::WriteBackFull(_) => format!("OOM {e}"),
        other => format!("ERR {other}"),
    }
}

/// Redis's reply for a command applied to a key of another type.
pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
/// Redis's reply for a bad integer argument.
pub const NOT_AN_INTEGER: &str = "ERR value is not an integer or out of range";
/// Redis's reply for a malformed option list.
pub const SYNTAX_ERROR: &str = "ERR syntax error";
/// Redis's reply to a command before `AUTH` when a password is required.
pub const NOAUTH: &str = "NOAUTH Authentication required.";
/// Redis's reply for a wrong password (or user).
pub const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";
/// Redis's reply when a value would grow over the bulk length limit.
pub const TOO_BIG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
/// The Redis version this server answers as (`HELLO`, `INFO`).
pub const REDIS_VERSION: &str = "7.0.15";

/// Redis's reply for a wrong argument count of `cmd` (`client|setname`
/// for a subcommand).
pub fn arity_error(cmd: &str) -> String {
    format!("ERR wrong number of arguments for '{cmd}' command")
}

/// Redis's reply to a write with too few good replicas.
const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";

/// Redis's reply for an out-of-range expire time of `cmd`.
pub fn invalid_expire(cmd: &str) -> String {
    format!("ERR invalid expire time in '{cmd}' command")
}

/// Runs one request and appends its reply to `ctx.out` (unless the
/// client turned replies off: `CLIENT REPLY`).
pub async fn execute(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    use crate::state::ReplyMode;
    if let Some(mailbox) = ctx.client.mailbox.as_ref().filter(|_| !ctx.client.in_exec) {
        // Messages published before this command go out before its reply
        // (not inside EXEC's array: after it).
        if mailbox.drain_into(ctx.out, ctx.client.proto).is_err() {
            crate::pubsub::log_overflow(ctx.client.id);
            return Flow::Close;
        }
    }
    let reply_at = ctx.out.len();
    let flow = run_command(args, ctx).await;
    // Inside EXEC the replies are the array's items: the mode applies to
    // the EXEC as a whole. Pushes (subscribe confirmations) always go.
    let pushed = std::mem::take(&mut ctx.client.pushed);
    if ctx.client.replies != ReplyMode::On && !ctx.client.in_exec {
        if !pushed {
            ctx.out.truncate(reply_at);
        }
        ctx.client.replies = match ctx.client.replies {
            ReplyMode::SkipThis => ReplyMode::Skip,
            ReplyMode::Skip => ReplyMode::On,
            mode => mode,
        };
    }
    flow
}

async fn run_command(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let reply_at = ctx.out.len();
    let Some(index) = lookup_index(args.get(0)) else {
        reject(ctx, None, &unknown_command(args));
        return Flow::Continue;
    };
    let spec = &COMMANDS[index];
    ctx.client.info.set_last_command(index);
    let n = args.len() as i32;
    if (spec.arity > 0 && n != spec.arity) || n < -spec.arity {
        reject(ctx, Some(index), &arity_error(spec.name));
        return Flow::Continue;
    }
    if !ctx.client.authenticated && !spec.no_auth() {
        reject(ctx, Some(index), NOAUTH);
        return Flow::Continue;
    }
    if let Some(len) = oversized_key(spec, args, ctx.server.config.limits.max_key_len) {
        let max = ctx.server.config.limits.max_key_len;
        let msg = format!("ERR key too long ({len} bytes, the limit is {max})");
        reject(ctx, Some(index), &msg);
        return Flow::Continue;
    }
    if ctx.client.in_subscriber_context()
        && !matches!(
            spec.cmd,
            Cmd::Ping
                | Cmd::Subscribe
                | Cmd::Unsubscribe
                | Cmd::PSubscribe
                | Cmd::PUnsubscribe
                | Cmd::SSubscribe
                | Cmd::SUnsubscribe
                | Cmd::Quit
                | Cmd::Reset
        )
    {
        reject(
            ctx,
            Some(index),
            &pubsub::not_in_subscriber_context(spec.name),
        );
        return Flow::Continue;
    }
    if ctx.client.tx.is_some() && spec.flags.contains(&"no_multi") {
        reject(
            ctx,
            Some(index),
            "ERR Command not allowed inside a transaction",
        );
        return Flow::Continue;
    }
    if ctx.server.replicas.refuse_writes() && propagate::needs_good_replicas(spec, args, ctx) {
        reject(ctx, Some(index), NOREPLICAS);
        return Flow::Continue;
    }
    if ctx.client.tx.is_some() && !multi::runs_in_multi(spec.cmd) {
        return multi::queue(args, ctx);
    }
    // Slow commands are timed here (see `crate::slowlog` for which).
    let (fast, skip_slowlog) = table::SLOWLOG_FLAGS[index];
    // A script's commands are not logged, the script is (as in Redis).
    let skip_slowlog = skip_slowlog || ctx.client.in_script;
    let timed_from =
        (!skip_slowlog && ctx.server.slowlog.times(fast)).then(std::time::Instant::now);
    // `new` events need to know which keys a write creates.
    let track_new = ctx.server.keyspace_events.wants(crate::notify::class::NEW)
        && spec.flags.contains(&"write");
    if track_new {
        note_absent_keys(spec, args, ctx).await;
    }
    // Replicas attached: a write holds the stream's order while it runs
    // and is fed (inside EXEC or a script the gate is held alone).
    let server = ctx.server;
    let feeding = server.replicas.any() && propagate::may_propagate(spec);
    let _order = if feeding {
        propagate::before(ctx);
        match ctx.client.in_exec {
            false => Some(server.replicas.order().await),
            true => None,
        }
    } else {
        None
    };
    let flow = match spec.cmd {
        Cmd::Ping => ping::run(args, ctx).await,
        Cmd::Echo => echo::run(args, ctx).await,
        Cmd::Publish => pubsub::publish(args, ctx, false).await,
        Cmd::SPublish => pubsub::publish(args, ctx, true).await,
        Cmd::Subscribe => pubsub::subscribe(args, ctx, Space::Channel).await,
        Cmd::PSubscribe => pubsub::subscribe(args, ctx, Space::Pattern).await,
        Cmd::SSubscribe => pubsub::subscribe(args, ctx, Space::Shard).await,
        Cmd::Unsubscribe => pubsub::unsubscribe(args, ctx, Space::Channel).await,
        Cmd::PUnsubscribe => pubsub::unsubscribe(args, ctx, Space::Pattern).await,
        Cmd::SUnsubscribe => pubsub::unsubscribe(args, ctx, Space::Shard).await,
        Cmd::PubSub => pubsub::pubsub(args, ctx).await,
        Cmd::Monitor => monitor::run(args, ctx).await,
        Cmd::Get => get::run(args, ctx).await,
        Cmd::Set => set::run(args, ctx).await,
        Cmd::SetNx => set::setnx(args, ctx).await,
        Cmd::SetEx => set::setex(args, ctx, set::Unit::Seconds).await,
        Cmd::PSetEx => set::setex(args, ctx, set::Unit::Millis).await,
        Cmd::GetSet => getex::getset(args, ctx).await,
        Cmd::GetDel => getex::getdel(args, ctx).await,
        Cmd::GetEx => getex::getex(args, ctx).await,
        Cmd::Mget => mget::run(args, ctx).await,
        Cmd::Mset => mset::run(args, ctx, false).await,
        Cmd::MsetNx => mset::run(args, ctx, true).await,
        Cmd::Del => del::run(args, ctx).await,
        Cmd::Exists => exists::run(args, ctx).await,
        Cmd::Type => keytype::run(args, ctx).await,
        Cmd::Expire => expire::run(args, ctx, expire::Unit::Seconds, false).await,
        Cmd::Pexpire => expire::run(args, ctx, expire::Unit::Millis, false).await,
        Cmd::ExpireAt => expire::run(args, ctx, expire::Unit::Seconds, true).await,
        Cmd::PexpireAt => expire::run(args, ctx, expire::Unit::Millis, true).await,
        Cmd::Ttl => ttl::run(args, ctx, ttl::Unit::Seconds, false).await,
        Cmd::Pttl => ttl::run(args, ctx, ttl::Unit::Millis, false).await,
        // Redis rounds EXPIRETIME to the nearest second, as TTL.
        Cmd::ExpireTime => ttl::run(args, ctx, ttl::Unit::Seconds, true).await,
        Cmd::PexpireTime => ttl::run(args, ctx, ttl::Unit::Millis, true).await,
        Cmd::Persist => persist::run(args, ctx).await,
        Cmd::Incr => incr::run(args, ctx, incr::Delta::One(1)).await,
        Cmd::Decr => incr::run(args, ctx, incr::Delta::One(-1)).await,
        Cmd::Incrby => incr::run(args, ctx, incr::Delta::Arg { negate: false }).await,
        Cmd::Decrby => incr::run(args, ctx, incr::Delta::Arg { negate: true }).await,
        Cmd::IncrbyFloat => incrbyfloat::run(args, ctx).await,
        Cmd::Append => append::append(args, ctx).await,
        Cmd::Strlen => append::strlen(args, ctx).await,
        Cmd::GetRange => range::getrange(args, ctx).await,
        Cmd::SetRange => range::setrange(args, ctx).await,
        Cmd::SetBit => bits::setbit(args, ctx).await,
        Cmd::GetBit => bits::getbit(args, ctx).await,
        Cmd::BitCount => bitcount::run(args, ctx).await,
        Cmd::BitPos => bitpos::run(args, ctx).await,
        Cmd::BitOp => bitop::run(args, ctx).await,
        Cmd::BitField => bitfield::run(args, ctx, false).await,
        Cmd::BitFieldRo => bitfield::run(args, ctx, true).await,
        Cmd::Lcs => lcs::run(args, ctx).await,
        Cmd::Rename => rename::rename(args, ctx, false).await,
        Cmd::RenameNx => rename::rename(args, ctx, true).await,
        Cmd::Copy => rename::copy(args, ctx).await,
        Cmd::Move => rename::move_key(args, ctx).await,
        Cmd::Dump => dump::dump(args, ctx).await,
        Cmd::Restore => dump::restore(args, ctx).await,
        Cmd::Migrate => migrate::run(args, ctx).await,
        Cmd::Sort => sort::run(args, ctx, false).await,
        Cmd::Save => save::save(args, ctx).await,
        Cmd::BgSave => save::bgsave(args, ctx).await,
        Cmd::LastSave => save::lastsave(args, ctx).await,
        Cmd::Shutdown => save::shutdown(args, ctx).await,
        Cmd::SortRo => sort::run(args, ctx, true).await,
        Cmd::RandomKey => randomkey::run(args, ctx).await,
        Cmd::Time => time::run(args, ctx).await,
        Cmd::SlowLog => slowlog::run(args, ctx).await,
        Cmd::Latency => latency::run(args, ctx).await,
        Cmd::Cluster => cluster::run(args, ctx).await,
        Cmd::Role => replication::role(args, ctx).await,
        Cmd::Wait => replication::wait(args, ctx).await,
        Cmd::Sync => replication::sync(args, ctx, false).await,
        Cmd::PSync => replication::sync(args, ctx, true).await,
        Cmd::ReplConf => replication::replconf(args, ctx).await,
        Cmd::ReplicaOf => replication::replicaof(args, ctx).await,
        Cmd::Lolwut => lolwut::run(args, ctx).await,
        Cmd::BgRewriteAof => save::bgrewriteaof(args, ctx).await,
        Cmd::SwapDb => select::swapdb(args, ctx).await,
        Cmd::Debug => debug::run(args, ctx).await,
        Cmd::Keys => keys::run(args, ctx).await,
        Cmd::Scan => scan::run(args, ctx).await,
        Cmd::Dbsize => dbsize::run(args, ctx).await,
        Cmd::Flushall => flushall::run(args, ctx).await,
        Cmd::Select => select::run(args, ctx).await,
        Cmd::Auth => auth::run(args, ctx).await,
        Cmd::Hello => hello::run(args, ctx).await,
        Cmd::Info => info::run(args, ctx).await,
        Cmd::Config => config::run(args, ctx).await,
        Cmd::Command => command::run(args, ctx).await,
        Cmd::Client => client::run(args, ctx).await,
        Cmd::Object => object::run(args, ctx).await,
        Cmd::Memory => memory::run(args, ctx).await,
        Cmd::Function => script::function(args, ctx).await,
        Cmd::Fcall => script::fcall(args, ctx, false).await,
        Cmd::FcallRo => script::fcall(args, ctx, true).await,
        Cmd::Eval => script::eval(args, ctx, false, false).await,
        Cmd::EvalSha => script::eval(args, ctx, true, false).await,
        Cmd::EvalRo => script::eval(args, ctx, false, true).await,
        Cmd::EvalShaRo => script::eval(args, ctx, true, true).await,
        Cmd::Script => script::script(args, ctx).await,
        Cmd::Quit => quit::run(args, ctx).await,
        Cmd::Reset => reset::run(args, ctx).await,
        Cmd::HSet => hash::write::hset(args, ctx, hash::write::SetReply::Added).await,
        Cmd::HMSet => hash::write::hset(args, ctx, hash::write::SetReply::Ok).await,
        Cmd::HSetNx => hash::write::hsetnx(args, ctx).await,
        Cmd::HDel => hash::write::hdel(args, ctx).await,
        Cmd::HIncrBy => hash::write::hincrby(args, ctx).await,
        Cmd::HIncrByFloat => hash::write::hincrbyfloat(args, ctx).await,
        Cmd::HGet => hash::read::hget(args, ctx).await,
        Cmd::HMGet => hash::read::hmget(args, ctx).await,
        Cmd::HGetAll => hash::read::hgetall(args, ctx).await,
        Cmd::HExists => hash::read::hexists(args, ctx).await,
        Cmd::HLen => hash::read::hlen(args, ctx).await,
        Cmd::HKeys => hash::read::hkeys(args, ctx, hash::read::Half::Fields).await,
        Cmd::HVals => hash::read::hkeys(args, ctx, hash::read::Half::Values).await,
        Cmd::HStrLen => hash::read::hstrlen(args, ctx).await,
        Cmd::HRandField => hash::sample::hrandfield(args, ctx).await,
        Cmd::HScan => hash::sample::hscan(args, ctx).await,
        Cmd::LPush => list::write::push(args, ctx, list::End::Left, false).await,
        Cmd::RPush => list::write::push(args, ctx, list::End::Right, false).await,
        Cmd::LPushX => list::write::push(args, ctx, list::End::Left, true).await,
        Cmd::RPushX => list::write::push(args, ctx, list::End::Right, true).await,
        Cmd::LInsert => list::write::linsert(args, ctx).await,
        Cmd::LSet => list::write::lset(args, ctx).await,
        Cmd::LRem => list::write::lrem(args, ctx).await,
        Cmd::LTrim => list::write::ltrim(args, ctx).await,
        Cmd::LPop => list::pop::pop(args, ctx, list::End::Left).await,
        Cmd::RPop => list::pop::pop(args, ctx, list::End::Right).await,
        Cmd::LMPop => list::pop::lmpop(args, ctx).await,
        Cmd::LMove => list::pop::lmove(args, ctx, None).await,
        Cmd::RPopLPush => {
            let ends = Some((list::End::Right, list::End::Left));
            list::pop::lmove(args, ctx, ends).await
        }
        Cmd::LLen => list::read::llen(args, ctx).await,
        Cmd::LIndex => list::read::lindex(args, ctx).await,
        Cmd::LRange => list::read::lrange(args, ctx).await,
        Cmd::LPos => list::read::lpos(args, ctx).await,
        Cmd::SAdd => sets::write::sadd(args, ctx).await,
        Cmd::SRem => sets::write::srem(args, ctx).await,
        Cmd::SMove => sets::write::smove(args, ctx).await,
        Cmd::SPop => sets::write::spop(args, ctx).await,
        Cmd::SMembers => sets::read::smembers(args, ctx).await,
        Cmd::SIsMember => sets::read::sismember(args, ctx).await,
        Cmd::SMIsMember => sets::read::smismember(args, ctx).await,
        Cmd::SCard => sets::read::scard(args, ctx).await,
        Cmd::SRandMember => sets::read::srandmember(args, ctx).await,
        Cmd::SScan => sets::read::sscan(args, ctx).await,
        Cmd::SInter => sets::algebra::combine(args, ctx, sets::algebra::Op::Inter).await,
        Cmd::SUnion => sets::algebra::combine(args, ctx, sets::algebra::Op::Union).await,
        Cmd::SDiff => sets::algebra::combine(args, ctx, sets::algebra::Op::Diff).await,
        Cmd::SInterStore => sets::algebra::combine_store(args, ctx, sets::algebra::Op::Inter).await,
        Cmd::SUnionStore => sets::algebra::combine_store(args, ctx, sets::algebra::Op::Union).await,
        Cmd::SDiffStore => sets::algebra::combine_store(args, ctx, sets::algebra::Op::Diff).await,
        Cmd::SInterCard => sets::algebra::sintercard(args, ctx).await,
        Cmd::BLPop => blocking::bpop(args, ctx, list::End::Left).await,
        Cmd::BRPop => blocking::bpop(args, ctx, list::End::Right).await,
        Cmd::BLMove => blocking::blmove(args, ctx, None).await,
        Cmd::BRPopLPush => {
            let ends = Some((list::End::Right, list::End::Left));
            blocking::blmove(args, ctx, ends).await
        }
        Cmd::BLMPop => blocking::blmpop(args, ctx).await,
        Cmd::BZPopMin => blocking::bzpop(args, ctx, false).await,
        Cmd::BZPopMax => blocking::bzpop(args, ctx, true).await,
        Cmd::ZRangeStore => {
            zset::range::zrange(args, ctx, zset::range::RangeBy::Auto, None, true).await
        }
        Cmd::ZUnion => zset::algebra::zcombine(args, ctx, zset::algebra::Op::Union, "zunion").await,
        Cmd::ZInter => zset::algebra::zcombine(args, ctx, zset::algebra::Op::Inter, "zinter").await,
        Cmd::ZDiff => zset::algebra::zcombine(args, ctx, zset::algebra::Op::Diff, "zdiff").await,
        Cmd::ZUnionStore => {
            let op = zset::algebra::Op::Union;
            zset::algebra::zcombine_store(args, ctx, op, "zunionstore").await
        }
        Cmd::ZInterStore => {
            let op = zset::algebra::Op::Inter;
            zset::algebra::zcombine_store(args, ctx, op, "zinterstore").await
        }
        Cmd::ZDiffStore => {
            let op = zset::algebra::Op::Diff;
            zset::algebra::zcombine_store(args, ctx, op, "zdiffstore").await
        }
        Cmd::ZInterCard => zset::algebra::zintercard(args, ctx).await,
        Cmd::ZMPop => zset::write::zmpop(args, ctx).await,
        Cmd::BZMPop => blocking::bzmpop(args, ctx).await,
        Cmd::ZAdd => zset::write::zadd(args, ctx, false).await,
        Cmd::ZIncrBy => zset::write::zadd(args, ctx, true).await,
        Cmd::ZRem => zset::write::zrem(args, ctx).await,
        Cmd::ZPopMin => zset::write::zpop(args, ctx, false).await,
        Cmd::ZPopMax => zset::write::zpop(args, ctx, true).await,
        Cmd::ZRemRangeByRank => zset::write::zremrange(args, ctx, zset::write::By::Rank).await,
        Cmd::ZRemRangeByScore => zset::write::zremrange(args, ctx, zset::write::By::Score).await,
        Cmd::ZRemRangeByLex => zset::write::zremrange(args, ctx, zset::write::By::Lex).await,
        Cmd::ZCard => zset::read::zcard(args, ctx).await,
        Cmd::ZScore => zset::read::zscore(args, ctx).await,
        Cmd::ZMScore => zset::read::zmscore(args, ctx).await,
        Cmd::ZRank => zset::read::zrank(args, ctx, false).await,
        Cmd::ZRevRank => zset::read::zrank(args, ctx, true).await,
        Cmd::ZCount => zset::read::zcount(args, ctx, false).await,
        Cmd::ZLexCount => zset::read::zcount(args, ctx, true).await,
        Cmd::ZRandMember => zset::read::zrandmember(args, ctx).await,
        Cmd::ZScan => zset::read::zscan(args, ctx).await,
        Cmd::ZRange => {
            zset::range::zrange(args, ctx, zset::range::RangeBy::Auto, None, false).await
        }
        Cmd::ZRevRange => {
            zset::range::zrange(args, ctx, zset::range::RangeBy::Rank, Some(true), false).await
        }
        Cmd::ZRangeByScore => {
            zset::range::zrange(args, ctx, zset::range::RangeBy::Score, Some(false), false).await
        }
        Cmd::ZRevRangeByScore => {
            zset::range::zrange(args, ctx, zset::range::RangeBy::Score, Some(true), false).await
        }
        Cmd::ZRangeByLex => {
            zset::range::zrange(args, ctx, zset::range::RangeBy::Lex, Some(false), false).await
        }
        Cmd::ZRevRangeByLex => {
            zset::range::zrange(args, ctx, zset::range::RangeBy::Lex, Some(true), false).await
        }
        Cmd::Multi => multi::multi(args, ctx).await,
        Cmd::Exec => multi::exec(args, ctx).await,
        Cmd::Discard => multi::discard(args, ctx).await,
        Cmd::Watch => multi::watch(args, ctx).await,
        Cmd::Unwatch => multi::unwatch(args, ctx).await,
        Cmd::XAdd => stream::write::xadd(args, ctx).await,
        Cmd::XTrim => stream::write::xtrim(args, ctx).await,
        Cmd::XDel => stream::write::xdel(args, ctx).await,
        Cmd::XLen => stream::write::xlen(args, ctx).await,
        Cmd::XSetId => stream::write::xsetid(args, ctx).await,
        Cmd::XRange => stream::read::xrange(args, ctx, false).await,
        Cmd::XRevRange => stream::read::xrange(args, ctx, true).await,
        Cmd::XRead => stream::read::xread(args, ctx, false).await,
        Cmd::XReadGroup => stream::read::xread(args, ctx, true).await,
        Cmd::XGroup => stream::group::xgroup(args, ctx).await,
        Cmd::XAck => stream::group::xack(args, ctx).await,
        Cmd::XPending => stream::claim::xpending(args, ctx).await,
        Cmd::XClaim => stream::claim::xclaim(args, ctx).await,
        Cmd::XAutoClaim => stream::claim::xautoclaim(args, ctx).await,
        Cmd::XInfo => stream::info::xinfo(args, ctx).await,
        Cmd::GeoAdd => geo::add::geoadd(args, ctx).await,
        Cmd::GeoDist => geo::query::geodist(args, ctx).await,
        Cmd::GeoHash => geo::query::geohash(args, ctx).await,
        Cmd::GeoPos => geo::query::geopos(args, ctx).await,
        Cmd::GeoSearch => geo::search::georadius(args, ctx, geo::search::Variant::Search).await,
        Cmd::GeoSearchStore => {
            geo::search::georadius(args, ctx, geo::search::Variant::SearchStore).await
        }
        Cmd::GeoRadius => geo::search::georadius(args, ctx, geo::search::Variant::Radius).await,
        Cmd::GeoRadiusByMember => {
            geo::search::georadius(args, ctx, geo::search::Variant::ByMember).await
        }
        Cmd::GeoRadiusRo => geo::search::georadius(args, ctx, geo::search::Variant::RadiusRo).await,
        Cmd::GeoRadiusByMemberRo => {
            geo::search::georadius(args, ctx, geo::search::Variant::ByMemberRo).await
        }
        Cmd::PfAdd => hll::add::pfadd(args, ctx).await,
        Cmd::PfCount => hll::count::pfcount(args, ctx).await,
        Cmd::PfMerge => hll::merge::pfmerge(args, ctx).await,
        Cmd::PfDebug => hll::debug::pfdebug(args, ctx).await,
        Cmd::PfSelfTest => hll::debug::pfselftest(args, ctx).await,
    };
    if track_new {
        ctx.client.absent_keys.get_mut().clear();
    }
    if feeding {
        propagate::after(args, ctx, flow);
    }
    match timed_from {
        Some(from) if flow != Flow::Block => {
            log_if_slow(ctx.server, ctx.client, spec.name, args, from.elapsed())
        }
        Some(_) => {}
        None => ctx.client.untimed = !skip_slowlog,
    }
    // One byte compare per request: did it answer an error?
    let failed = ctx.out.get(reply_at) == Some(&b'-');
    if failed {
        ctx.server.count_error(&ctx.out[reply_at..]);
    }
    // A blocked command counts once, when it answers.
    if flow != Flow::Block {
        ctx.client.tally.call(index, failed);
        if ctx.server.monitors.any() {
            ctx.server
                .monitors
                .feed(&ctx.client.info.addr, spec.name, args);
        }
    }
    flow
}

/// Answers a request refused at dispatch. Inside `MULTI` the refusal
/// makes `EXEC` fail; a refused `EXEC` itself discards the transaction,
/// in Redis's words.
#[cold]
#[inline(never)]
fn reject(ctx: &mut Ctx<'_, '_>, index: Option<usize>, msg: &str) {
    let reply_at = ctx.out.len();
    if let Some(index) = index {
        ctx.client.tally.reject(index);
    }
    if index.is_some_and(|i| COMMANDS[i].cmd == Cmd::Exec) {
        ctx.client.end_transaction();
        let why = msg.strip_prefix("ERR ").unwrap_or(msg);
        reply::error(
            ctx.out,
            &format!("EXECABORT Transaction discarded because of: {why}"),
        );
    } else {
        reply::error(ctx.out, msg);
        ctx.client.flag_transaction();
    }
    ctx.server.count_error(&ctx.out[reply_at..]);
}

/// The length of the first key argument over `max`, if any.
/// Adds command `name` (`args`), run by `client`, to the slow log if it
/// took long enough.
pub(crate) fn log_if_slow(
    server: &ServerState,
    client: &ClientState,
    name: &str,
    args: &Args<'_>,
    took: std::time::Duration,
) {
    let slowlog = &server.slowlog;
    if slowlog.is_slow(took) {
        let hide = crate::monitor::redacted(name, args);
        let info = &client.info;
        let client_name = info.names().name.unwrap_or_default();
        slowlog.observe(args, &hide, took, &info.addr, &client_name);
    }
}

/// The slow log's look at a batch of one request that `run_command` did
/// not time (a `fast` command at a coarse threshold): the batch's time is
/// the command's.
pub fn log_batch_of_one(
    server: &ServerState,
    client: &mut ClientState,
    args: &Args<'_>,
    took: std::time::Duration,
) {
    if !std::mem::take(&mut client.untimed) || !server.slowlog.is_slow(took) {
        return;
    }
    if let Some(index) = lookup_index(args.get(0)) {
        log_if_slow(server, client, COMMANDS[index].name, args, took);
    }
}

/// Records in `ctx.client.absent_keys` which of the keys of the write
/// about to run do not exist (only while `new` events are on: a lookup
/// per key).
async fn note_absent_keys(spec: &CommandSpec, args: &Args<'_>, ctx: &mut Ctx<'_, '_>) {
    let argv: Vec<&[u8]> = (0..args.len()).map(|i| args.get(i)).collect();
    let keys: Vec<Bytes> = match getkeys::key_positions(spec, &argv) {
        Ok(at) => at.into_iter().map(|i| args.bytes(i)).collect(),
        Err(_) => return,
    };
    let found = ctx.session.get_many(&keys).await;
    let mut absent = ctx.client.absent_keys.borrow_mut();
    absent.clear();
    if let Ok(found) = found {
        absent.extend(
            keys.into_iter()
                .zip(found)
                .filter(|(_, e)| e.is_none())
                .map(|(k, _)| k),
        );
    }
}

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
