//! The functions engine (Redis's `function_lua.c`): a Lua VM of its own on
//! the scripting thread, beside `EVAL`'s (so `SCRIPT FLUSH` leaves the
//! libraries alone), with the same sandbox and `redis.*` library.
//!
//! A library's code runs once, at `FUNCTION LOAD`, in Redis's load
//! environment: its globals hold only `redis`, and that only
//! `register_function`, `log` and its levels and the version (anything
//! else is a nonexistent global, `redis.call` included); the load stops
//! after 500 ms (`FUNCTION LOAD timeout`). The functions it registers keep
//! that globals table, whose lookups turn to the usual sandbox once the
//! load ends. A function runs as an `EVAL` script does, with `KEYS` and
//! `ARGV` as its two arguments instead of globals.
//!
//! Only this thread changes the [`Registry`], together with its compiled
//! functions, and writes the functions file after each change.

use super::convert;
use super::library::{self, FunctionInfo, Functions, Library, Registry, BAD_NAME, FLAGS};
use super::lua::{lua_arg, FromVm, RunJob, Vm};
use bytes::{Bytes, BytesMut};
use mlua::{ChunkMode, Function, MultiValue, Table, Value, Variadic};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// How long a library's load may run (Redis's `LOAD_TIMEOUT_MS`).
pub const LOAD_TIMEOUT: Duration = Duration::from_millis(500);

/// `FUNCTION RESTORE`'s policy toward libraries already there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Drop them all first.
    Flush,
    /// Fail on a library of the same name.
    Append,
    /// Replace a library of the same name.
    Replace,
}

/// A change to the libraries; the answer is the reply's text on error.
pub enum FnJob {
    /// `FUNCTION LOAD [REPLACE]`: the library's name.
    Load {
        code: Bytes,
        replace: bool,
        done: oneshot::Sender<Result<String, String>>,
    },
    /// `FUNCTION RESTORE` (and the functions file at start, no timeout).
    Restore {
        codes: Vec<Bytes>,
        policy: Policy,
        done: oneshot::Sender<Result<(), String>>,
    },
    /// `FUNCTION DELETE`.
    Delete {
        name: String,
        done: oneshot::Sender<Result<(), String>>,
    },
    /// `FUNCTION FLUSH`: a new VM, no library.
    Flush {
        done: oneshot::Sender<Result<(), String>>,
    },
}

/// A function a library registered while loading.
struct Registered {
    name: String,
    func: Function,
    info: FunctionInfo,
}

/// Lua run once on a new engine, after the sandbox: the load
/// environment and the globals of libraries, with the switch between the
/// two.
const FN_INIT: &str = r#"
local h, register = ...
local error, tostring, setmetatable = error, tostring, h.setmetatable
local function nonexistent(_, k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
end
local api_redis = {
  register_function = register, log = h.log,
  LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
  REDIS_VERSION = '7.0.15', REDIS_VERSION_NUM = 458767,
}
setmetatable(api_redis, {__index = nonexistent, __newindex = h.readonly, __metatable = h.fakemeta})
h.protect(api_redis)
local api = setmetatable({redis = api_redis}, {__index = nonexistent, __newindex = h.readonly, __metatable = h.fakemeta})
h.protect(api)
local meta = {__index = h.env, __newindex = h.readonly, __metatable = h.fakemeta}
local fenv = h.protect(setmetatable({}, meta))
return fenv, function(on) if on then meta.__index = api else meta.__index = h.env end end
"#;

/// The functions engine.
pub struct FnVm {
    vm: Vm,
    /// The globals of libraries.
    fenv: Table,
    /// Switches `fenv` to the load environment (`true`) and back.
    loading: Function,
    /// The functions of the library being loaded.
    load: Rc<RefCell<Option<Vec<Registered>>>>,
    /// Compiled functions by name in lower case.
    functions: HashMap<String, Function>,
}

impl FnVm {
    fn new(kill: &Arc<AtomicBool>) -> mlua::Result<FnVm> {
        let vm = Vm::new(kill)?;
        let load: Rc<RefCell<Option<Vec<Registered>>>> = Rc::new(RefCell::new(None));
        let (ctx, pending) = (load.clone(), vm.pending.clone());
        let register = vm.lua.create_function(move |lua, args: Variadic<Value>| {
            let raise = |msg: &str| -> mlua::Error {
                match convert::error_table(lua, msg.as_bytes()) {
                    Ok(t) => {
                        *pending.borrow_mut() = Some(Value::Table(t));
                        mlua::Error::runtime("redis script error")
                    }
                    Err(e) => e,
                }
            };
            let mut guard = ctx.borrow_mut();
            let Some(list) = guard.as_mut() else {
                return Err(raise(
                    "redis.register_function can only be called on FUNCTION LOAD command",
                ));
            };
            let r = register_args(&args).map_err(raise)?;
            if !library::valid_name(r.name.as_bytes()) {
                return Err(raise(BAD_NAME));
            }
            if list.iter().any(|x| x.name == r.name) {
                return Err(raise("Function already exists in the library"));
            }
            list.push(r);
            Ok(())
        })?;
        let (fenv, loading): (Table, Function) = vm
            .lua
            .load(FN_INIT)
            .set_name("=redis_api")
            .set_mode(ChunkMode::Text)
            .call((vm.helpers.clone(), register))?;
        Ok(FnVm {
            vm,
            fenv,
            loading,
            load,
            functions: HashMap::new(),
        })
    }

    /// Compiles and runs a library's code (after its `#!` line, which
    /// starts at `body`): the functions it registered, or the error reply.
    fn run_library(
        &mut self,
        code: &[u8],
        body: usize,
        timeout: Option<Duration>,
    ) -> Result<Vec<Registered>, String> {
        let compiled = self
            .vm
            .lua
            .load(&code[body..])
            .set_name("@user_function")
            .set_mode(ChunkMode::Text)
            .set_environment(self.fenv.clone())
            .into_function();
        let f = compiled.map_err(|e| {
            let msg = match &e {
                mlua::Error::SyntaxError { message, .. } => message.clone(),
                other => other.to_string(),
            };
            format!("ERR Error compiling function: {msg}")
        })?;
        *self.load.borrow_mut() = Some(Vec::new());
        let loader: Function = self.vm.helpers.raw_get("load").map_err(lua_err)?;
        self.loading.call::<()>(true).map_err(lua_err)?;
        self.vm.deadline.set(timeout.map(|t| Instant::now() + t));
        let outcome = loader.call::<Option<String>>(f);
        self.vm.deadline.set(None);
        self.loading.call::<()>(false).map_err(lua_err)?;
        let registered = self.load.borrow_mut().take().unwrap_or_default();
        match outcome.map_err(lua_err)? {
            Some(msg) => Err(format!("ERR Error registering functions: {msg}")),
            None if registered.is_empty() => Err("ERR No functions registered".into()),
            None => Ok(registered),
        }
    }

    /// Adds a loaded library to the registry and its functions to the VM.
    fn install(&mut self, reg: &mut Registry, name: String, code: Bytes, fns: Vec<Registered>) {
        let mut lib = Library {
            code,
            functions: Default::default(),
        };
        for r in fns {
            self.functions.insert(r.name.to_ascii_lowercase(), r.func);
            lib.functions.insert(r.name, r.info);
        }
        reg.link(name, lib);
    }

    /// Drops the library `name` from the registry and the VM.
    fn remove(&mut self, reg: &mut Registry, name: &str) -> Option<Library> {
        let lib = reg.unlink(name)?;
        for f in lib.functions.keys() {
            self.functions.remove(&f.to_ascii_lowercase());
        }
        Some(lib)
    }

    fn load(
        &mut self,
        code: Bytes,
        replace: bool,
        functions: &Functions,
    ) -> Result<String, String> {
        let meta = library::metadata(&code).map_err(|e| format!("ERR {e}"))?;
        let exists = functions.registry().libraries.contains_key(&meta.name);
        if exists && !replace {
            return Err(format!("ERR Library '{}' already exists", meta.name));
        }
        let registered = self.run_library(&code, meta.body, Some(LOAD_TIMEOUT))?;
        let mut reg = functions.registry();
        for r in &registered {
            if reg.library_of(&r.name).is_some_and(|l| *l != meta.name) {
                return Err(format!("ERR Function {} already exists", r.name));
            }
        }
        self.remove(&mut reg, &meta.name);
        self.install(&mut reg, meta.name.clone(), code, registered);
        functions.save(&reg).map_err(|e| format!("ERR {e}"))?;
        Ok(meta.name)
    }

    fn restore(
        &mut self,
        codes: Vec<Bytes>,
        policy: Policy,
        functions: &Functions,
    ) -> Result<(), String> {
        // Loaded apart first (`functionsLibCtxCreate`), then joined.
        let mut staged: Vec<(String, Bytes, Vec<Registered>)> = Vec::new();
        let mut staged_fns: HashMap<String, String> = HashMap::new();
        for code in codes {
            let meta = library::metadata(&code).map_err(|e| format!("ERR {e}"))?;
            if staged.iter().any(|(n, ..)| *n == meta.name) {
                return Err(format!("ERR Library '{}' already exists", meta.name));
            }
            let registered = self.run_library(&code, meta.body, None)?;
            for r in &registered {
                if staged_fns
                    .insert(r.name.to_ascii_lowercase(), r.name.clone())
                    .is_some()
                {
                    return Err(format!("ERR Function {} already exists", r.name));
                }
            }
            staged.push((meta.name, code, registered));
        }
        let mut reg = functions.registry();
        let replaced: Vec<String> = if policy == Policy::Flush {
            reg.libraries.keys().cloned().collect()
        } else {
            let there: Vec<String> = staged
                .iter()
                .filter(|(n, ..)| reg.libraries.contains_key(n))
                .map(|(n, ..)| n.clone())
                .collect();
            if let (Some(name), Policy::Append) = (there.first(), policy) {
                return Err(format!("ERR Library {name} already exists"));
            }
            for f in staged_fns.values() {
                if reg
                    .library_of(f)
                    .is_some_and(|l| !there.iter().any(|t| t == l))
                {
                    return Err(format!("ERR Function {f} already exists"));
                }
            }
            there
        };
        for name in replaced {
            self.remove(&mut reg, &name);
        }
        for (name, code, registered) in staged {
            self.install(&mut reg, name, code, registered);
        }
        functions.save(&reg).map_err(|e| format!("ERR {e}"))
    }
}

fn lua_err(e: mlua::Error) -> String {
    format!("ERR {e}")
}

/// Reads `redis.register_function`'s arguments: `(name, callback)` or
/// one table of named arguments; the error in Redis's words.
fn register_args(args: &[Value]) -> Result<Registered, &'static str> {
    let text = |v: &Value| lua_arg(v).map(|b| String::from_utf8_lossy(&b).into_owned());
    match args {
        [name, callback] => {
            let name = text(name).ok_or("first argument to redis.register_function must be a string")?;
            let Value::Function(func) = callback else {
                return Err("second argument to redis.register_function must be a function");
            };
            Ok(Registered {
                name,
                func: func.clone(),
                info: FunctionInfo::default(),
            })
        }
        [Value::Table(t)] => {
            let (mut name, mut func, mut info) = (None, None, FunctionInfo::default());
            for pair in t.clone().pairs::<Value, Value>() {
                let (k, v) = pair.map_err(|_| "unknown argument given to redis.register_function")?;
                let key = text(&k)
                    .ok_or("named argument key given to redis.register_function is not a string")?;
                match key.to_ascii_lowercase().as_str() {
                    "function_name" => {
                        name = Some(text(&v).ok_or(
                            "function_name argument given to redis.register_function must be a string",
                        )?);
                    }
                    "description" => {
                        let d = lua_arg(&v).ok_or(
                            "description argument given to redis.register_function must be a string",
                        )?;
                        info.description = Some(Bytes::from(d));
                    }
                    "callback" => match v {
                        Value::Function(f) => func = Some(f),
                        _ => {
                            return Err(
                                "callback argument given to redis.register_function must be a function",
                            )
                        }
                    },
                    "flags" => {
                        let Value::Table(flags) = v else {
                            return Err("flags argument to redis.register_function must be a table representing function flags");
                        };
                        info.flags = read_flags(&flags).ok_or("unknown flag given")?;
                    }
                    _ => return Err("unknown argument given to redis.register_function"),
                }
            }
            let name = name.ok_or("redis.register_function must get a function name argument")?;
            let func = func.ok_or("redis.register_function must get a callback argument")?;
            Ok(Registered { name, func, info })
        }
        [_] => Err("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."),
        _ => Err("wrong number of arguments to redis.register_function"),
    }
}

/// A flags table `{'no-writes', ...}` (case-insensitive, up to the first
/// nil): its bits, `None` for an unknown flag or one not a string.
fn read_flags(t: &Table) -> Option<u8> {
    let mut bits = 0;
    for i in 1.. {
        let v: Value = t.raw_get(i).ok()?;
        if v.is_nil() {
            break;
        }
        let flag = lua_arg(&v)?;
        let (_, bit) = FLAGS
            .iter()
            .find(|(name, _)| name.as_bytes().eq_ignore_ascii_case(&flag))?;
        bits |= bit;
    }
    Some(bits)
}

/// The engine, made (with every library in the registry compiled again)
/// if there is none: after `FUNCTION FLUSH`, or if the thread restarted.
fn ensure<'a>(
    fvm: &'a mut Option<FnVm>,
    kill: &Arc<AtomicBool>,
    functions: &Functions,
) -> Result<&'a mut FnVm, String> {
    if fvm.is_none() {
        let mut v = FnVm::new(kill).map_err(|e| format!("ERR cannot start the Lua VM: {e}"))?;
        let libs: Vec<Bytes> = functions
            .registry()
            .libraries
            .values()
            .map(|l| l.code.clone())
            .collect();
        for code in libs {
            let compiled = library::metadata(&code)
                .map_err(|e| format!("ERR {e}"))
                .and_then(|m| v.run_library(&code, m.body, None));
            match compiled {
                Ok(fns) => {
                    for r in fns {
                        v.functions.insert(r.name.to_ascii_lowercase(), r.func);
                    }
                }
                Err(e) => tracing::error!("cannot compile a library again: {e}"),
            }
        }
        *fvm = Some(v);
    }
    Ok(fvm.as_mut().expect("made above"))
}

/// Runs a `FUNCTION` change.
pub fn handle(fvm: &mut Option<FnVm>, job: FnJob, kill: &Arc<AtomicBool>, functions: &Functions) {
    if let FnJob::Flush { done } = job {
        *fvm = None;
        let mut reg = functions.registry();
        *reg = Registry::default();
        let _ = done.send(functions.save(&reg).map_err(|e| format!("ERR {e}")));
        return;
    }
    let v = ensure(fvm, kill, functions);
    match job {
        FnJob::Load {
            code,
            replace,
            done,
        } => {
            let _ = done.send(v.and_then(|v| v.load(code, replace, functions)));
        }
        FnJob::Restore {
            codes,
            policy,
            done,
        } => {
            let _ = done.send(v.and_then(|v| v.restore(codes, policy, functions)));
        }
        FnJob::Delete { name, done } => {
            let outcome = v.and_then(|v| {
                let mut reg = functions.registry();
                v.remove(&mut reg, &name)
                    .ok_or_else(|| "ERR Library not found".to_string())?;
                functions.save(&reg).map_err(|e| format!("ERR {e}"))
            });
            let _ = done.send(outcome);
        }
        FnJob::Flush { .. } => unreachable!("handled above"),
    }
}

/// Runs `FCALL`'s function.
pub fn run(fvm: &mut Option<FnVm>, job: RunJob, kill: &Arc<AtomicBool>, functions: &Functions) {
    let name = job.function.clone().unwrap_or_default();
    let fail = |job: RunJob, msg: &str| {
        let mut out = BytesMut::new();
        crate::resp::reply::error(&mut out, msg);
        let _ = job.to_server.send(FromVm::Done(out));
    };
    let v = match ensure(fvm, kill, functions) {
        Ok(v) => v,
        Err(msg) => return fail(job, &msg),
    };
    let Some(f) = v.functions.get(&name.to_ascii_lowercase()).cloned() else {
        return fail(job, "ERR Function not found");
    };
    let tables = (|| -> mlua::Result<(Function, Table, Table)> {
        let lua = &v.vm.lua;
        let call: Function = v.vm.helpers.raw_get("call")?;
        let keys = lua.create_sequence_from(
            job.keys
                .iter()
                .map(|k| lua.create_string(k))
                .collect::<mlua::Result<Vec<_>>>()?,
        )?;
        let argv = lua.create_sequence_from(
            job.argv
                .iter()
                .map(|a| lua.create_string(a))
                .collect::<mlua::Result<Vec<_>>>()?,
        )?;
        Ok((call, keys, argv))
    })();
    let (call, keys, argv) = match tables {
        Ok(t) => t,
        Err(e) => return fail(job, &format!("ERR {e}")),
    };
    v.vm.call(job, &name, &name, |_| {
        call.call::<MultiValue>((f, keys, argv))
    });
}
