//! The Lua VM: one per server, on a thread of its own ("lua"), fed jobs
//! through a channel.
//!
//! Why a thread: `redis.call` is a synchronous Lua callback, commands are
//! async (`Session` calls await). Running Lua on a runtime worker and
//! driving each call with `Handle::block_on` inside `block_in_place`
//! would panic on the current-thread runtime the server uses with one
//! worker (`TOKIO_WORKER_THREADS=1`), and coroutine-based async Lua cannot
//! yield across `pcall` in Lua 5.1. So the script runs here, and each
//! `redis.call` sends its arguments to the `EVAL` handler (which holds
//! the engine's gate alone and awaits the command in the client's
//! session), blocking until the reply bytes come back.
//!
//! Why one VM: compiled scripts stay cached in it (Redis's way), so a
//! script is compiled once, not at every `EVAL`; scripts run one at a time
//! anyway. `SCRIPT FLUSH` drops the VM and the next job makes a new one.
//! Functions get a second VM on this thread (`function_vm.rs`, built with
//! the same `Vm::new`), as Redis gives them a Lua state of their own.
//!
//! The sandbox is Redis's: the base, table, string and math libraries
//! (no `os`, `io`, `require`, `loadfile`, `dofile`, `print`), `debug` only
//! for the error handler, and `cjson`, `bit` and Redis's `math.random`
//! (`libs.rs`), `cmsgpack` (`msgpack.rs`) and `struct` (`lua_struct.rs`).
//! Scripts see their globals through a read-only
//! proxy: reading a missing global or writing any errors in Redis 7.0's
//! words; the library tables are read-only proxies too.

use super::convert::{self, error_text, Reply};
use super::libs;
use crate::resp::reply::{self, Proto};
use bytes::BytesMut;
use mlua::{ChunkMode, Function, Lua, LuaOptions, MultiValue, StdLib, Table, Value, Variadic};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Instant;

/// A message from the VM to the `EVAL` handler.
#[derive(Debug)]
pub enum FromVm {
    /// Run this command for the script (RESP3 replies when `resp3`).
    Call {
        /// The command's arguments, its name first.
        argv: Vec<Vec<u8>>,
        /// The script chose RESP3 (`redis.setresp(3)`).
        resp3: bool,
    },
    /// The script ended: its reply, encoded for the client.
    Done(BytesMut),
}

/// What `redis.call` gets back: the command's reply, or the reason it was
/// refused before running (in Redis's words, without code).
pub type CallResult = Result<BytesMut, String>;

/// A script to run.
pub struct RunJob {
    /// Its SHA1 (lowercase hex).
    pub sha: String,
    /// Its body.
    pub body: Arc<[u8]>,
    /// `KEYS`.
    pub keys: Vec<Vec<u8>>,
    /// `ARGV`.
    pub argv: Vec<Vec<u8>>,
    /// The calling client's protocol, for the script's reply.
    pub client: Proto,
    /// Where calls and the reply go.
    pub to_server: tokio::sync::mpsc::UnboundedSender<FromVm>,
    /// Where call replies come from.
    pub replies: mpsc::Receiver<CallResult>,
    /// `FCALL`: the function to run (`sha` and `body` are unused).
    pub function: Option<String>,
}

/// A job for the VM thread.
pub enum Job {
    /// Compile and cache a script (`SCRIPT LOAD`, `EVAL` of a new one):
    /// answers the compile error, if any.
    Load {
        /// Its SHA1.
        sha: String,
        /// Its body.
        body: Arc<[u8]>,
        /// Where the outcome goes.
        done: tokio::sync::oneshot::Sender<Result<(), String>>,
    },
    /// Run a script.
    Run(Box<RunJob>),
    /// Drop the VM and every compiled script (`SCRIPT FLUSH`).
    Flush,
    /// A `FUNCTION` change (`function_vm.rs`).
    Functions(super::function_vm::FnJob),
}

/// Starts the VM thread.
pub fn spawn(
    kill: Arc<AtomicBool>,
    memory: Arc<AtomicU64>,
    functions: Arc<super::library::Functions>,
) -> std::io::Result<mpsc::Sender<Job>> {
    let (tx, rx) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("lua".into())
        // Lua's own recursion is bounded (LUAI_MAXCCALLS); the reply
        // conversions recurse up to their depth limit.
        .stack_size(32 << 20)
        .spawn(move || {
            let mut vm: Option<Vm> = None;
            // Functions run in a Lua VM of their own, as in Redis.
            let mut fvm: Option<super::function_vm::FnVm> = None;
            for job in rx {
                let job = match job {
                    Job::Functions(f) => {
                        super::function_vm::handle(&mut fvm, f, &kill, &functions);
                        continue;
                    }
                    Job::Run(run) if run.function.is_some() => {
                        super::function_vm::run(&mut fvm, *run, &kill, &functions);
                        continue;
                    }
                    job => job,
                };
                if matches!(job, Job::Flush) {
                    vm = None;
                    memory.store(0, Ordering::Relaxed);
                    continue;
                }
                if vm.is_none() {
                    match Vm::new(&kill) {
                        Ok(v) => vm = Some(v),
                        Err(e) => {
                            tracing::error!("cannot start the Lua VM: {e}");
                            fail(job, &format!("ERR cannot start the Lua VM: {e}"));
                            continue;
                        }
                    }
                }
                let Some(v) = vm.as_mut() else { continue };
                match job {
                    Job::Load { sha, body, done } => {
                        let _ = done.send(v.function(&sha, &body).map(|_| ()));
                    }
                    Job::Run(run) => v.run(*run),
                    Job::Flush | Job::Functions(_) => {}
                }
                memory.store(v.lua.used_memory() as u64, Ordering::Relaxed);
            }
        })?;
    Ok(tx)
}

fn fail(job: Job, msg: &str) {
    match job {
        Job::Load { done, .. } => {
            let _ = done.send(Err(msg.to_string()));
        }
        Job::Run(run) => {
            let mut out = BytesMut::new();
            reply::error(&mut out, msg);
            let _ = run.to_server.send(FromVm::Done(out));
        }
        Job::Flush | Job::Functions(_) => {}
    }
}

/// The running script's line to the server.
struct Link {
    to_server: tokio::sync::mpsc::UnboundedSender<FromVm>,
    replies: mpsc::Receiver<CallResult>,
}

pub(super) struct Vm {
    pub(super) lua: Lua,
    /// `function(f) return xpcall(f, handler) end`.
    runner: Function,
    /// The scripts' globals (a read-only proxy of the real ones).
    env: Table,
    globals: Table,
    scripts: HashMap<String, Function>,
    link: Rc<RefCell<Option<Link>>>,
    resp3: Rc<Cell<bool>>,
    runs: u32,
    /// The error table a Rust helper raised (see `Vm::new`).
    pub(super) pending: Rc<RefCell<Option<Value>>>,
    /// When a library's load must stop (`FUNCTION LOAD`'s timeout).
    pub(super) deadline: Rc<Cell<Option<Instant>>>,
    /// INIT's helpers for the functions engine.
    pub(super) helpers: Table,
}

/// Lua run once at start, with the Rust helpers as arguments: the
/// wrappers that raise Redis's error tables, Redis's `pcall`, the error
/// handler and the global protection. Its functions' source is
/// `=redis_api`, which the error handler skips when it looks for the
/// script's line.
const INIT: &str = r#"
local rcall, rpcall, sha1, errtext, rlog, setresp, aclcheck, take, killed = ...
local dbg = debug
debug = nil
local real = _G
local rawpcall, rawset0, rawget0, setmetatable0, getfenv0 = pcall, rawset, rawget, setmetatable, getfenv
local select, type, error, tostring = select, type, error, tostring

local function fix(ok, ...)
  if ok then return true, ... end
  local k = killed()
  if k then take() error(k) end
  local e = ...
  if type(e) ~= 'table' then e = take() or e end
  if type(e) == 'table' then
    local m = rawget0(e, 'err')
    if type(m) == 'string' or type(m) == 'number' then e = m end
  end
  return false, e
end
pcall = function(...) return fix(rawpcall(...)) end

local redis = {}
redis.call = rcall
redis.pcall = rpcall
redis.sha1hex = sha1
redis.error_reply = function(...)
  local e = ...
  if select('#', ...) ~= 1 or type(e) ~= 'string' then
    return {err = 'ERR wrong number or type of arguments'}
  end
  if e:sub(1, 1) ~= '-' then e = '-' .. e end
  return {err = errtext(e)}
end
redis.status_reply = function(...)
  local s = ...
  if select('#', ...) ~= 1 or type(s) ~= 'string' then
    return {err = 'ERR wrong number or type of arguments'}
  end
  return {ok = s}
end
redis.log = rlog
redis.setresp = setresp
redis.set_repl = function(...)
  if select('#', ...) ~= 1 then error({err = 'ERR redis.set_repl() requires two arguments.'}) end
  local f = tonumber((...)) or 0
  if f < 0 or f > 3 or f % 1 ~= 0 then
    error({err = 'ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.'})
  end
end
redis.acl_check_cmd = aclcheck
redis.replicate_commands = function() return true end
redis.breakpoint = function() return false end
redis.debug = function() end
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL = 0, 1, 2, 2, 3
redis.REDIS_VERSION = '7.0.15'
redis.REDIS_VERSION_NUM = 458767
rawset0(real, 'redis', redis)

local function handler(err)
  local level = 2
  local i = dbg.getinfo(level, 'nSl')
  while i and (i.what == 'C' or i.source == '=redis_api') do
    level = level + 1
    i = dbg.getinfo(level, 'nSl')
  end
  if type(err) ~= 'table' then err = take() or err end
  if type(err) ~= 'table' then err = {err = 'ERR ' .. tostring(err)} end
  if i then
    err['source'] = i.source
    err['line'] = i.currentline
  end
  return err
end

local protected = setmetatable0({}, {__mode = 'k'})
local function readonly() error('Attempt to modify a readonly table', 2) end
local function missing(_, k)
  local v = rawget0(real, k)
  if v == nil then
    error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
  end
  return v
end
-- What getmetatable answers for the protected tables: read-only too.
local fakemeta = setmetatable0({}, {__newindex = readonly, __metatable = false})
protected[fakemeta] = true
for _, name in ipairs({'string', 'table', 'math', 'redis', 'coroutine', 'cjson', 'bit', 'cmsgpack', 'struct'}) do
  local t = rawget0(real, name)
  local p = setmetatable0({}, {__index = t, __newindex = readonly, __metatable = fakemeta})
  protected[p] = true
  rawset0(real, name, p)
end
local env = setmetatable0({}, {__index = missing, __newindex = readonly, __metatable = fakemeta})
protected[env] = true
protected[real] = true
rawset0(real, '_G', env)
rawset0(real, 'rawset', function(t, k, v)
  if protected[t] then error('Attempt to modify a readonly table', 0) end
  return rawset0(t, k, v)
end)
rawset0(real, 'setmetatable', function(t, m)
  if protected[t] then error('Attempt to modify a readonly table', 0) end
  return setmetatable0(t, m)
end)
rawset0(real, 'getfenv', function(...)
  local e = getfenv0(...)
  if e == real then return env end
  return e
end)
for _, name in ipairs({'dofile', 'loadfile', 'print', 'require', 'module', 'package', 'os', 'io'}) do
  rawset0(real, name, nil)
end
-- Binary chunks are refused (Redis 7.0.15's loadstring): nil.
local loadstring0 = loadstring
rawset0(real, 'loadstring', function(s, ...)
  if type(s) == 'string' and s:sub(1, 1) == '\27' then
    return nil, 'binary chunks are not allowed'
  end
  return loadstring0(s, ...)
end)
setmetatable0(real, {__index = missing, __newindex = readonly, __metatable = fakemeta})
-- For the functions engine (function_vm.rs): a function gets KEYS and
-- ARGV as arguments; a library's load runs without a handler and answers
-- its error's message (nil when it ran).
local helpers = {
  call = function(f, k, a) return xpcall(function() return f(k, a) end, handler) end,
  load = function(f)
    local ok, e = rawpcall(f)
    if ok then return nil end
    if type(e) ~= 'table' then e = take() or e end
    if type(e) == 'table' then return tostring(rawget0(e, 'err')) end
    return 'ERR ' .. tostring(e)
  end,
  protect = function(t) protected[t] = true return t end,
  readonly = readonly, fakemeta = fakemeta, env = env, setmetatable = setmetatable0,
  log = rlog,
}
return function(f) return xpcall(f, handler) end, env, helpers
"#;

impl Vm {
    pub(super) fn new(kill: &Arc<AtomicBool>) -> mlua::Result<Vm> {
        // SAFETY: `debug` is loaded only for the error handler, which
        // keeps it in a local; the global is removed before any script.
        let lua = unsafe {
            Lua::unsafe_new_with(
                StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG,
                LuaOptions::default(),
            )
        };
        let link: Rc<RefCell<Option<Link>>> = Rc::new(RefCell::new(None));
        let resp3 = Rc::new(Cell::new(false));
        // The error table a helper raised: a Rust callback raises an
        // opaque error, which the handler and `pcall` swap for this table
        // (Redis's C helpers raise the table itself).
        let pending: Rc<RefCell<Option<Value>>> = Rc::new(RefCell::new(None));
        let deadline: Rc<Cell<Option<Instant>>> = Rc::new(Cell::new(None));
        let raiser = |pending: &Rc<RefCell<Option<Value>>>| {
            let pending = pending.clone();
            move |t: Table| -> mlua::Error {
                *pending.borrow_mut() = Some(Value::Table(t));
                mlua::Error::runtime("redis script error")
            }
        };
        let raise_value: libs::Raise = {
            let pending = pending.clone();
            Rc::new(move |v: Value| -> mlua::Error {
                *pending.borrow_mut() = Some(v);
                mlua::Error::runtime("redis script error")
            })
        };
        let globals = lua.globals();
        globals.raw_set("cjson", libs::cjson(&lua, &raise_value)?)?;
        globals.raw_set("bit", libs::bit(&lua, &raise_value)?)?;
        globals.raw_set("cmsgpack", super::msgpack::cmsgpack(&lua)?)?;
        globals.raw_set("struct", super::lua_struct::library(&lua)?)?;
        libs::random(&lua, &globals.raw_get::<Table>("math")?, &raise_value)?;
        let (call_link, call_resp3, raise) = (link.clone(), resp3.clone(), raiser(&pending));
        let rcall = lua.create_function(move |lua, args: Variadic<Value>| {
            match call(lua, &call_link, call_resp3.get(), &args)? {
                (Value::Table(t), true) => Err(raise(t)),
                (v, _) => Ok(v),
            }
        })?;
        let (pcall_link, pcall_resp3) = (link.clone(), resp3.clone());
        let rpcall = lua.create_function(move |lua, args: Variadic<Value>| {
            Ok(call(lua, &pcall_link, pcall_resp3.get(), &args)?.0)
        })?;
        let raise = raiser(&pending);
        let sha1 = lua.create_function(move |lua, args: Variadic<Value>| {
            if args.len() != 1 {
                let t = convert::error_table(lua, b"wrong number of arguments")?;
                return Err(raise(t));
            }
            let bytes = lua_arg(&args[0]).unwrap_or_default();
            lua.create_string(super::cache::sha1hex(&bytes))
        })?;
        let errtext = lua
            .create_function(|lua, s: mlua::String| lua.create_string(error_text(&s.as_bytes())))?;
        let raise = raiser(&pending);
        let rlog = lua.create_function(move |lua, args: Variadic<Value>| match log(&args) {
            Some(e) => Err(raise(convert::error_table(lua, e.as_bytes())?)),
            None => Ok(()),
        })?;
        let (set_resp3, raise) = (resp3.clone(), raiser(&pending));
        let setresp = lua.create_function(move |lua, args: Variadic<Value>| {
            let e = if args.len() != 1 {
                "redis.setresp() requires one argument."
            } else {
                match convert::lua_number(&args[0]).map(|n| n as i64) {
                    Some(v @ (2 | 3)) => {
                        set_resp3.set(v == 3);
                        return Ok(());
                    }
                    _ => "RESP version must be 2 or 3.",
                }
            };
            Err(raise(convert::error_table(lua, e.as_bytes())?))
        })?;
        let raise = raiser(&pending);
        let aclcheck = lua.create_function(move |lua, args: Variadic<Value>| {
            let e = match args.first().and_then(lua_arg) {
                None if args.is_empty() => {
                    "Please specify at least one argument for this redis lib call"
                }
                None => "Lua redis lib command arguments must be strings or integers",
                Some(name) if super::super::lookup_index(&name).is_some() => return Ok(true),
                Some(_) => "Invalid command passed to redis.acl_check_cmd()",
            };
            Err(raise(convert::error_table(lua, e.as_bytes())?))
        })?;
        // SCRIPT KILL: checked every 100,000 instructions, as Redis does;
        // Redis's `pcall` re-raises it, so a script cannot swallow it.
        const KILLED: &[u8] = b"Script killed by user with SCRIPT KILL...";
        let (hook_kill, raise) = (kill.clone(), raiser(&pending));
        let hook_deadline = deadline.clone();
        lua.set_hook(
            mlua::HookTriggers::new().every_nth_instruction(100_000),
            move |lua, _| {
                // A library's load past its time (Redis's load hook).
                if hook_deadline.get().is_some_and(|d| Instant::now() > d) {
                    return Err(raise(convert::error_table(lua, b"FUNCTION LOAD timeout")?));
                }
                if hook_kill.load(Ordering::Relaxed) {
                    tracing::warn!("Lua script killed by user with SCRIPT KILL.");
                    return Err(raise(convert::error_table(lua, KILLED)?));
                }
                Ok(mlua::VmState::Continue)
            },
        );
        let pcall_kill = kill.clone();
        let killed = lua.create_function(move |lua, ()| {
            if pcall_kill.load(Ordering::Relaxed) {
                return Ok(Some(convert::error_table(lua, KILLED)?));
            }
            Ok(None)
        })?;
        let take_pending = pending.clone();
        let take = lua.create_function(move |_, ()| Ok(take_pending.borrow_mut().take()))?;
        let (runner, env, helpers): (Function, Table, Table) = lua
            .load(INIT)
            .set_name("=redis_api")
            .set_mode(ChunkMode::Text)
            .call((
                rcall, rpcall, sha1, errtext, rlog, setresp, aclcheck, take, killed,
            ))?;
        Ok(Vm {
            lua,
            runner,
            env,
            globals,
            scripts: HashMap::new(),
            link,
            resp3,
            runs: 0,
            pending,
            deadline,
            helpers,
        })
    }

    /// The compiled script `sha`, compiling `body` if new; the error is
    /// Redis's reply to a script that does not compile.
    fn function(&mut self, sha: &str, body: &[u8]) -> Result<Function, String> {
        if let Some(f) = self.scripts.get(sha) {
            return Ok(f.clone());
        }
        // A `#!lua` line is skipped, its line feed kept (Redis's way).
        let skip = match super::cache::shebang(body)? {
            Some(s) => s.len,
            None => 0,
        };
        let compiled = self
            .lua
            .load(&body[skip..])
            .set_name("@user_script")
            .set_mode(ChunkMode::Text)
            .set_environment(self.env.clone())
            .into_function();
        match compiled {
            Ok(f) => {
                self.scripts.insert(sha.to_string(), f.clone());
                Ok(f)
            }
            Err(e) => {
                let msg = match &e {
                    mlua::Error::SyntaxError { message, .. } => message.clone(),
                    other => other.to_string(),
                };
                Err(format!("ERR Error compiling script (new function): {msg}"))
            }
        }
    }

    fn run(&mut self, job: RunJob) {
        let f = match self.function(&job.sha, &job.body) {
            Ok(f) => f,
            Err(msg) => {
                let mut out = BytesMut::new();
                reply::error(&mut out, &msg);
                let _ = job.to_server.send(FromVm::Done(out));
                return;
            }
        };
        if let Err(e) = self.set_arrays(&job) {
            let mut out = BytesMut::new();
            reply::error(&mut out, &format!("ERR {e}"));
            let _ = job.to_server.send(FromVm::Done(out));
            return;
        }
        let runner = self.runner.clone();
        let (label, name) = (job.sha.clone(), format!("f_{}", job.sha));
        self.call(job, &label, &name, |_| runner.call::<MultiValue>(f));
        let _ = self.globals.raw_set("KEYS", Value::Nil);
        let _ = self.globals.raw_set("ARGV", Value::Nil);
    }

    /// Runs a script or function through `run` (an `xpcall` with the error
    /// handler), its `redis.call`s going to the job's server, and sends the
    /// reply. `label` names it in error replies (`script: <label>`),
    /// `name` when it failed outside the handler.
    pub(super) fn call(
        &mut self,
        job: RunJob,
        label: &str,
        name: &str,
        run: impl FnOnce(&Lua) -> mlua::Result<MultiValue>,
    ) {
        let mut out = BytesMut::new();
        self.resp3.set(false);
        *self.link.borrow_mut() = Some(Link {
            to_server: job.to_server.clone(),
            replies: job.replies,
        });
        let result = run(&self.lua);
        *self.link.borrow_mut() = None;
        match result {
            Ok(values) => {
                let mut values = values.into_iter();
                let ok = matches!(values.next(), Some(Value::Boolean(true)));
                let v = values.next().unwrap_or(Value::Nil);
                if ok {
                    convert::lua_to_resp(&mut out, &v, job.client, self.resp3.get());
                } else {
                    error_reply(&mut out, &v, label);
                }
            }
            Err(e) => {
                let msg = e.to_string();
                let msg: String = msg.chars().take(100).collect();
                reply::error(&mut out, &format!("ERR Error running script {name}, {msg}"));
            }
        }
        // A collection step now and then, as Redis does every 50 scripts.
        self.runs += 1;
        if self.runs % 50 == 0 {
            let _ = self.lua.gc_step_kbytes(50);
        }
        let _ = job.to_server.send(FromVm::Done(out));
    }

    fn set_arrays(&self, job: &RunJob) -> mlua::Result<()> {
        for (name, items) in [("KEYS", &job.keys), ("ARGV", &job.argv)] {
            let t = self.lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                t.raw_set(i + 1, self.lua.create_string(item)?)?;
            }
            self.globals.raw_set(name, t)?;
        }
        Ok(())
    }
}

/// The reply to a script that raised `err` (a table from the error
/// handler): its message, then where, as `luaCallFunction` words it.
fn error_reply(out: &mut BytesMut, err: &Value, sha: &str) {
    let Value::Table(t) = err else {
        let text = match err {
            Value::String(s) => s.to_string_lossy(),
            _ => "execution failure".to_string(),
        };
        let text: String = text.chars().take(100).collect();
        reply::error(out, &format!("ERR Error running script {sha}, {text}"));
        return;
    };
    let text = |name: &str| -> Option<String> {
        match t.raw_get::<Value>(name).ok()? {
            Value::String(s) => Some(s.to_string_lossy()),
            v @ (Value::Integer(_) | Value::Number(_)) => {
                lua_arg(&v).map(|b| String::from_utf8_lossy(&b).into_owned())
            }
            _ => None,
        }
    };
    let mut msg = text("err").unwrap_or_default();
    if let (Some(source), Some(line)) = (text("source"), text("line")) {
        msg.push_str(&format!(" script: {sha}, on {source}:{line}."));
    }
    // The message carries its own code (`reply::error` adds only `-`).
    reply::error(out, &msg);
}

/// A `redis.call` argument as Redis takes it: a string as is, a number
/// as `%.17g` prints it; `None` for any other type.
pub(super) fn lua_arg(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Integer(i) => Some(i.to_string().into_bytes()),
        Value::Number(n) => Some(reply::format_g17(*n).into_bytes()),
        _ => None,
    }
}

/// `redis.call`/`redis.pcall`: the command's reply as a Lua value, and
/// whether it is an error (which `redis.call` raises).
fn call(
    lua: &Lua,
    link: &RefCell<Option<Link>>,
    resp3: bool,
    args: &[Value],
) -> mlua::Result<(Value, bool)> {
    let refuse = |msg: &str| -> mlua::Result<(Value, bool)> {
        Ok((
            Value::Table(convert::error_table(lua, msg.as_bytes())?),
            true,
        ))
    };
    if args.is_empty() {
        return refuse("Please specify at least one argument for this redis lib call");
    }
    let Some(argv) = args.iter().map(lua_arg).collect::<Option<Vec<_>>>() else {
        return refuse("Lua redis lib command arguments must be strings or integers");
    };
    let guard = link.borrow();
    let Some(link) = guard.as_ref() else {
        return refuse("redis.call/pcall can only be called inside a script invocation");
    };
    if link.to_server.send(FromVm::Call { argv, resp3 }).is_err() {
        return refuse("ERR the script's client is gone");
    }
    let answer = link.replies.recv();
    drop(guard);
    match answer {
        Ok(Ok(bytes)) => match convert::parse_reply(&bytes) {
            Some((r, _)) => {
                let failed = matches!(r, Reply::Error(_));
                Ok((convert::reply_to_lua(lua, &r)?, failed))
            }
            None => refuse("ERR unreadable reply from the command"),
        },
        Ok(Err(msg)) => {
            let t = convert::error_table(lua, msg.as_bytes())?;
            t.raw_set("ignore_error_stats_update", true)?;
            Ok((Value::Table(t), true))
        }
        Err(_) => refuse("ERR the script's client is gone"),
    }
}

/// `redis.log(level, message...)`: logs through `tracing`; the error text
/// for bad arguments, as Redis words it.
fn log(args: &[Value]) -> Option<&'static str> {
    if args.len() < 2 {
        return Some("redis.log() requires two arguments or more.");
    }
    let level = match &args[0] {
        Value::String(s) => s.to_str().ok().and_then(|s| s.trim().parse::<f64>().ok()),
        v => convert::lua_number(v),
    };
    let Some(level) = level else {
        return Some("First argument must be a number (log level).");
    };
    let level = level as i64;
    if !(0..=3).contains(&level) {
        return Some("Invalid debug level.");
    }
    let text: Vec<String> = args[1..]
        .iter()
        .filter_map(lua_arg)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .collect();
    let text = text.join(" ");
    match level {
        0 => tracing::debug!(target: "lua", "{text}"),
        1 => tracing::debug!(target: "lua", "{text}"),
        2 => tracing::info!(target: "lua", "{text}"),
        _ => tracing::warn!(target: "lua", "{text}"),
    }
    None
}
