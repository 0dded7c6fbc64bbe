//! The command table: every command's name, arity, flags and key
//! positions (what `COMMAND` reports and dispatch checks), and which file
//! runs it ([`Cmd`]). Adding a command is one [`Cmd`] variant, one
//! [`COMMANDS`] row, and one arm in [`execute`](super::execute).

/// Which file runs a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cmd {
    Ping,
    Echo,
    Get,
    Set,
    SetNx,
    SetEx,
    PSetEx,
    GetSet,
    GetDel,
    GetEx,
    Mget,
    Mset,
    MsetNx,
    Del,
    Exists,
    Type,
    Expire,
    Pexpire,
    ExpireAt,
    PexpireAt,
    Ttl,
    Pttl,
    ExpireTime,
    PexpireTime,
    Persist,
    Incr,
    Decr,
    Incrby,
    Decrby,
    IncrbyFloat,
    Append,
    Strlen,
    GetRange,
    SetRange,
    SetBit,
    GetBit,
    Lcs,
    Rename,
    RenameNx,
    Copy,
    Move,
    RandomKey,
    Time,
    Keys,
    Scan,
    Dbsize,
    Flushall,
    Select,
    Auth,
    Hello,
    Info,
    Config,
    Command,
    Client,
    Object,
    Memory,
    Function,
    Quit,
    Reset,
    HSet,
    HMSet,
    HSetNx,
    HGet,
    HMGet,
    HGetAll,
    HDel,
    HLen,
    HExists,
    HKeys,
    HVals,
    HStrLen,
    HIncrBy,
    HIncrByFloat,
    HRandField,
    HScan,
    LPush,
    RPush,
    LPushX,
    RPushX,
    LInsert,
    LSet,
    LRem,
    LTrim,
    LPop,
    RPop,
    LMPop,
    LMove,
    RPopLPush,
    LLen,
    LIndex,
    LRange,
    LPos,
    SAdd,
    SRem,
    SMove,
    SPop,
    SMembers,
    SIsMember,
    SMIsMember,
    SCard,
    SRandMember,
    SScan,
    SInter,
    SUnion,
    SDiff,
    SInterStore,
    SUnionStore,
    SDiffStore,
    SInterCard,
    Multi,
    Exec,
    Discard,
    Watch,
    Unwatch,
}

/// A command's name, arity and key positions, as `COMMAND` reports them.
#[derive(Debug)]
pub struct CommandSpec {
    /// Lower-case name.
    pub name: &'static str,
    pub(super) cmd: Cmd,
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

impl CommandSpec {
    /// True when the command runs before `AUTH` (`no_auth` flag).
    pub fn no_auth(&self) -> bool {
        self.flags.contains(&"no_auth")
    }
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
const RS: &[&str] = &["readonly"];
const W: &[&str] = &["write", "denyoom"];
const WF: &[&str] = &["write", "denyoom", "fast"];
const WX: &[&str] = &["write", "fast"];
const A: &[&str] = &["fast", "stale"];
const NOAUTH_FLAGS: &[&str] = &[
    "noscript",
    "loading",
    "stale",
    "fast",
    "no_auth",
    "allow_busy",
];
const TX_FAST: &[&str] = &["noscript", "loading", "stale", "fast", "allow_busy"];
const TX_EXEC: &[&str] = &["noscript", "loading", "stale", "skip_slowlog"];
const NOKEYS: (i32, i32, i32) = (0, 0, 0);
const KEY1: (i32, i32, i32) = (1, 1, 1);
const ALLKEYS: (i32, i32, i32) = (1, -1, 1);

/// Every command this server knows, the most frequent first (lookup is a
/// linear scan).
pub static COMMANDS: &[CommandSpec] = &[
    spec("get", Cmd::Get, 2, R, KEY1),
    spec("set", Cmd::Set, -3, W, KEY1),
    spec("mget", Cmd::Mget, -2, R, ALLKEYS),
    spec("mset", Cmd::Mset, -3, W, (1, -1, 2)),
    spec("del", Cmd::Del, -2, &["write"], ALLKEYS),
    spec("incr", Cmd::Incr, 2, WF, KEY1),
    spec("exists", Cmd::Exists, -2, R, ALLKEYS),
    spec("expire", Cmd::Expire, -3, WX, KEY1),
    spec("ttl", Cmd::Ttl, 2, R, KEY1),
    spec("ping", Cmd::Ping, -1, A, NOKEYS),
    spec("echo", Cmd::Echo, 2, A, NOKEYS),
    spec("setnx", Cmd::SetNx, 3, WF, KEY1),
    spec("setex", Cmd::SetEx, 4, W, KEY1),
    spec("psetex", Cmd::PSetEx, 4, W, KEY1),
    spec("getset", Cmd::GetSet, 3, WF, KEY1),
    spec("getdel", Cmd::GetDel, 2, WX, KEY1),
    spec("getex", Cmd::GetEx, -2, WX, KEY1),
    spec("msetnx", Cmd::MsetNx, -3, W, (1, -1, 2)),
    spec("unlink", Cmd::Del, -2, WX, ALLKEYS),
    spec("type", Cmd::Type, 2, R, KEY1),
    spec("pexpire", Cmd::Pexpire, -3, WX, KEY1),
    spec("expireat", Cmd::ExpireAt, -3, WX, KEY1),
    spec("pexpireat", Cmd::PexpireAt, -3, WX, KEY1),
    spec("pttl", Cmd::Pttl, 2, R, KEY1),
    spec("expiretime", Cmd::ExpireTime, 2, R, KEY1),
    spec("pexpiretime", Cmd::PexpireTime, 2, R, KEY1),
    spec("persist", Cmd::Persist, 2, WX, KEY1),
    spec("decr", Cmd::Decr, 2, WF, KEY1),
    spec("incrby", Cmd::Incrby, 3, WF, KEY1),
    spec("decrby", Cmd::Decrby, 3, WF, KEY1),
    spec("incrbyfloat", Cmd::IncrbyFloat, 3, WF, KEY1),
    spec("append", Cmd::Append, 3, WF, KEY1),
    spec("strlen", Cmd::Strlen, 2, R, KEY1),
    spec("getrange", Cmd::GetRange, 4, RS, KEY1),
    spec("setrange", Cmd::SetRange, 4, W, KEY1),
    spec("substr", Cmd::GetRange, 4, RS, KEY1),
    spec("setbit", Cmd::SetBit, 4, W, KEY1),
    spec("getbit", Cmd::GetBit, 3, R, KEY1),
    spec("lcs", Cmd::Lcs, -3, RS, (1, 2, 1)),
    spec("rename", Cmd::Rename, 3, &["write"], (1, 2, 1)),
    spec("renamenx", Cmd::RenameNx, 3, WX, (1, 2, 1)),
    spec("copy", Cmd::Copy, -3, W, (1, 2, 1)),
    spec("move", Cmd::Move, 3, WX, KEY1),
    spec("randomkey", Cmd::RandomKey, 1, RS, NOKEYS),
    spec("time", Cmd::Time, 1, &["loading", "stale", "fast"], NOKEYS),
    spec("keys", Cmd::Keys, 2, RS, NOKEYS),
    spec("scan", Cmd::Scan, -2, RS, NOKEYS),
    spec("dbsize", Cmd::Dbsize, 1, R, NOKEYS),
    spec("flushdb", Cmd::Flushall, -1, &["write"], NOKEYS),
    spec("flushall", Cmd::Flushall, -1, &["write"], NOKEYS),
    spec(
        "select",
        Cmd::Select,
        2,
        &["loading", "stale", "fast"],
        NOKEYS,
    ),
    spec("auth", Cmd::Auth, -2, NOAUTH_FLAGS, NOKEYS),
    spec("hello", Cmd::Hello, -1, NOAUTH_FLAGS, NOKEYS),
    spec("info", Cmd::Info, -1, &["loading", "stale"], NOKEYS),
    spec("config", Cmd::Config, -2, &[], NOKEYS),
    spec("command", Cmd::Command, -1, &["loading", "stale"], NOKEYS),
    spec("client", Cmd::Client, -2, &[], NOKEYS),
    spec("object", Cmd::Object, -2, &[], NOKEYS),
    spec("memory", Cmd::Memory, -2, &[], NOKEYS),
    spec("function", Cmd::Function, -2, &["noscript"], NOKEYS),
    spec("quit", Cmd::Quit, -1, NOAUTH_FLAGS, NOKEYS),
    spec("reset", Cmd::Reset, 1, NOAUTH_FLAGS, NOKEYS),
    spec("hset", Cmd::HSet, -4, WF, KEY1),
    spec("hget", Cmd::HGet, 3, R, KEY1),
    spec("hmset", Cmd::HMSet, -4, WF, KEY1),
    spec("hmget", Cmd::HMGet, -3, R, KEY1),
    spec("hsetnx", Cmd::HSetNx, 4, WF, KEY1),
    spec("hdel", Cmd::HDel, -3, WX, KEY1),
    spec("hgetall", Cmd::HGetAll, 2, RS, KEY1),
    spec("hexists", Cmd::HExists, 3, R, KEY1),
    spec("hlen", Cmd::HLen, 2, R, KEY1),
    spec("hkeys", Cmd::HKeys, 2, RS, KEY1),
    spec("hvals", Cmd::HVals, 2, RS, KEY1),
    spec("hstrlen", Cmd::HStrLen, 3, R, KEY1),
    spec("hincrby", Cmd::HIncrBy, 4, WF, KEY1),
    spec("hincrbyfloat", Cmd::HIncrByFloat, 4, WF, KEY1),
    spec("hrandfield", Cmd::HRandField, -2, RS, KEY1),
    spec("hscan", Cmd::HScan, -3, RS, KEY1),
    spec("lpush", Cmd::LPush, -3, WF, KEY1),
    spec("rpush", Cmd::RPush, -3, WF, KEY1),
    spec("lpop", Cmd::LPop, -2, WX, KEY1),
    spec("rpop", Cmd::RPop, -2, WX, KEY1),
    spec("llen", Cmd::LLen, 2, R, KEY1),
    spec("lrange", Cmd::LRange, 4, RS, KEY1),
    spec("lindex", Cmd::LIndex, 3, RS, KEY1),
    spec("lpushx", Cmd::LPushX, -3, WF, KEY1),
    spec("rpushx", Cmd::RPushX, -3, WF, KEY1),
    spec("linsert", Cmd::LInsert, 5, W, KEY1),
    spec("lset", Cmd::LSet, 4, W, KEY1),
    spec("lrem", Cmd::LRem, 4, &["write"], KEY1),
    spec("ltrim", Cmd::LTrim, 4, &["write"], KEY1),
    spec("lpos", Cmd::LPos, -3, RS, KEY1),
    spec("lmove", Cmd::LMove, 5, W, (1, 2, 1)),
    spec("rpoplpush", Cmd::RPopLPush, 3, W, (1, 2, 1)),
    spec("lmpop", Cmd::LMPop, -4, &["write", "movablekeys"], NOKEYS),
    spec("sadd", Cmd::SAdd, -3, WF, KEY1),
    spec("srem", Cmd::SRem, -3, WX, KEY1),
    spec("smembers", Cmd::SMembers, 2, RS, KEY1),
    spec("sismember", Cmd::SIsMember, 3, R, KEY1),
    spec("smismember", Cmd::SMIsMember, -3, R, KEY1),
    spec("scard", Cmd::SCard, 2, R, KEY1),
    spec("spop", Cmd::SPop, -2, WX, KEY1),
    spec("srandmember", Cmd::SRandMember, -2, RS, KEY1),
    spec("smove", Cmd::SMove, 4, WX, (1, 2, 1)),
    spec("sscan", Cmd::SScan, -3, RS, KEY1),
    spec("sinter", Cmd::SInter, -2, RS, ALLKEYS),
    spec("sunion", Cmd::SUnion, -2, RS, ALLKEYS),
    spec("sdiff", Cmd::SDiff, -2, RS, ALLKEYS),
    spec("sinterstore", Cmd::SInterStore, -3, W, ALLKEYS),
    spec("sunionstore", Cmd::SUnionStore, -3, W, ALLKEYS),
    spec("sdiffstore", Cmd::SDiffStore, -3, W, ALLKEYS),
    spec(
        "sintercard",
        Cmd::SInterCard,
        -3,
        &["readonly", "movablekeys"],
        NOKEYS,
    ),
    spec("multi", Cmd::Multi, 1, TX_FAST, NOKEYS),
    spec("exec", Cmd::Exec, 1, TX_EXEC, NOKEYS),
    spec("discard", Cmd::Discard, 1, TX_FAST, NOKEYS),
    spec("watch", Cmd::Watch, -2, TX_FAST, ALLKEYS),
    spec("unwatch", Cmd::Unwatch, 1, TX_FAST, NOKEYS),
];

/// The spec of a command name, ignoring case.
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    lookup_index(name).map(|i| &COMMANDS[i])
}

/// The position of `name` (any case) in [`COMMANDS`].
pub fn lookup_index(name: &[u8]) -> Option<usize> {
    COMMANDS
        .iter()
        .position(|c| c.name.len() == name.len() && c.name.as_bytes().eq_ignore_ascii_case(name))
}
