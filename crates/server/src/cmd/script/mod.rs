//! Lua scripting: `EVAL`, `EVALSHA`, `EVAL_RO`, `EVALSHA_RO` and `SCRIPT`,
//! and Redis 7 functions (`FUNCTION`, `FCALL`, `FCALL_RO`), as Redis 7.0
//! runs them.
//!
//! - `cache.rs`: the server-wide script cache, by SHA1 of the body.
//! - `lua.rs`: the Lua 5.1 VM (one per server, on its own thread) with
//!   Redis's sandbox and `redis.*` library.
//! - `libs.rs`: `cjson`, `bit` and Redis's `math.random`.
//! - `msgpack.rs` and `lua_struct.rs`: `cmsgpack` and `struct`, ported
//!   from Redis's C as C functions, with `capi.rs`'s glue.
//! - `convert.rs`: RESP replies to Lua values and back, with a small reply
//!   parser for what `redis.call` gets back.
//! - `eval.rs`: the commands. A script runs alone, as `EXEC` does: its
//!   handler holds the engine's gate exclusively and runs every
//!   `redis.call` through the usual dispatch in the client's session, so
//!   the script's writes are committed with its batch.
//! - `library.rs`: function libraries as the server knows them (names,
//!   flags, code), the `#!lua name=` line, and the functions file.
//! - `function_vm.rs`: the functions engine, a second Lua VM on the same
//!   thread: loading libraries, running functions.
//! - `function.rs`: `FUNCTION` and `FCALL`/`FCALL_RO`, which run a function
//!   with `eval.rs`'s machinery.

mod cache;
mod capi;
pub mod convert;
mod eval;
mod function;
mod function_vm;
mod library;
mod libs;
mod lua;
mod lua_struct;
mod msgpack;

pub use cache::{sha1hex, shebang, ScriptCache, Shebang};
pub use eval::busy_reply;
pub(super) use eval::{eval, script};
pub(super) use function::{fcall, function};
pub use library::Functions;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Instant;

/// Server-wide scripting state: the script cache, the line to the Lua
/// VM's thread (started at the first script) and the script running now.
#[derive(Default)]
pub struct Scripts {
    /// Bodies by SHA1.
    pub cache: ScriptCache,
    vm: Mutex<Option<mpsc::Sender<lua::Job>>>,
    /// Function libraries.
    pub functions: Arc<Functions>,
    /// When the running script started.
    since: Mutex<Option<Instant>>,
    /// What runs: the function's name and the command (`None` for
    /// `EVAL`'s scripts).
    running: Mutex<Option<Running>>,
    /// `SCRIPT KILL` asked the running script to stop (the VM's hook reads it).
    kill: Arc<AtomicBool>,
    /// The running script wrote (it can no longer be killed).
    wrote: AtomicBool,
    /// Bytes the Lua VM holds, as of its last script (`used_memory_lua`).
    lua_memory: Arc<AtomicU64>,
    /// `DEBUG SET-DISABLE-DENY-SCRIPTS 1`: scripts may call `noscript`
    /// commands (Redis's hook for its own tests), but those that would
    /// change the connection (`eval::never_from_scripts`).
    pub deny_disabled: AtomicBool,
}

/// The function `FCALL` runs now, for `FUNCTION STATS`.
#[derive(Clone, Debug)]
pub struct Running {
    /// The function's name.
    pub name: String,
    /// The `FCALL` command, as sent.
    pub argv: Vec<Vec<u8>>,
}

/// Redis's reply to `SCRIPT KILL` once the script wrote.
const UNKILLABLE: &str = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.";
/// Redis's `BUSY` reply while an `EVAL` script runs (and to `FUNCTION
/// KILL` or `FUNCTION STATS` then).
pub const BUSY_EVAL: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
/// Redis's `BUSY` reply while a function runs (and to `SCRIPT KILL` then).
pub const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";

impl std::fmt::Debug for Scripts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scripts")
            .field("cache", &self.cache)
            .finish_non_exhaustive()
    }
}

impl Scripts {
    /// `INFO memory`'s scripting lines: the VM's bytes, the scripts
    /// cached and their bytes.
    pub fn memory(&self) -> (u64, usize, usize) {
        let (n, bytes) = self.cache.stats();
        (self.lua_memory.load(Ordering::Relaxed), n, bytes)
    }

    /// When the script running now started, if one is.
    pub fn running_since(&self) -> Option<Instant> {
        *self.since.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The function running now, if one is.
    pub fn running(&self) -> Option<Running> {
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn start_run(&self, function: Option<Running>) {
        self.kill.store(false, Ordering::SeqCst);
        self.wrote.store(false, Ordering::SeqCst);
        *self.running.lock().unwrap_or_else(|e| e.into_inner()) = function;
        *self.since.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    }

    fn end_run(&self) {
        *self.since.lock().unwrap_or_else(|e| e.into_inner()) = None;
        *self.running.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.kill.store(false, Ordering::SeqCst);
    }

    /// `SCRIPT KILL` (`eval`) or `FUNCTION KILL`: stops the running script
    /// unless it wrote or is of the other kind; the error reply otherwise,
    /// in Redis's words and order (`scriptKill`).
    pub fn kill(&self, eval: bool) -> Result<(), &'static str> {
        if self.running_since().is_none() {
            return Err("NOTBUSY No scripts in execution right now.");
        }
        if self.wrote.load(Ordering::SeqCst) {
            return Err(UNKILLABLE);
        }
        match (eval, self.running().is_some()) {
            (true, true) => return Err(BUSY_FUNCTION),
            (false, false) => return Err(BUSY_EVAL),
            _ => {}
        }
        self.kill.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Loads the libraries kept in the functions file `path` and keeps
    /// them there from now on; the error names the file and what is wrong
    /// with it.
    pub async fn open_functions(&self, path: std::path::PathBuf) -> Result<(), String> {
        let codes = library::read_file(&path)?;
        if !codes.is_empty() {
            let (done, outcome) = tokio::sync::oneshot::channel();
            self.send(lua::Job::Functions(function_vm::FnJob::Restore {
                codes,
                policy: function_vm::Policy::Flush,
                done,
            }))?;
            outcome
                .await
                .map_err(|_| "the Lua VM stopped".to_string())?
                .map_err(|e| {
                    format!(
                        "cannot load the libraries of the functions file {}: {e}",
                        path.display()
                    )
                })?;
        }
        self.functions.set_file(path);
        Ok(())
    }

    /// Sends `job` to the VM thread, starting it (again, if it died).
    fn send(&self, job: lua::Job) -> Result<(), String> {
        let mut vm = self.vm.lock().unwrap_or_else(|e| e.into_inner());
        let mut job = job;
        for _ in 0..2 {
            if vm.is_none() {
                *vm = Some(
                    lua::spawn(
                        self.kill.clone(),
                        self.lua_memory.clone(),
                        self.functions.clone(),
                    )
                    .map_err(|e| format!("ERR cannot start the Lua VM: {e}"))?,
                );
            }
            match vm.as_ref().map(|tx| tx.send(job)) {
                Some(Ok(())) => return Ok(()),
                Some(Err(mpsc::SendError(back))) => {
                    job = back;
                    *vm = None;
                }
                None => unreachable!("started above"),
            }
        }
        Err("ERR the Lua VM is not running".to_string())
    }
}
