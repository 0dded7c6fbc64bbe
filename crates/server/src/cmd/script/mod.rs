//! Lua scripting: `EVAL`, `EVALSHA`, `EVAL_RO`, `EVALSHA_RO` and `SCRIPT`,
//! as Redis 7.0 runs them.
//!
//! - `cache.rs`: the server-wide script cache, by SHA1 of the body.
//! - `lua.rs`: the Lua 5.1 VM (one per server, on its own thread) with
//!   Redis's sandbox and `redis.*` library.
//! - `libs.rs`: `cjson`, `bit` and Redis's `math.random`.
//! - `convert.rs`: RESP replies to Lua values and back, with a small reply
//!   parser for what `redis.call` gets back.
//! - `eval.rs`: the commands. A script runs alone, as `EXEC` does: its
//!   handler holds the engine's gate exclusively and runs every
//!   `redis.call` through the usual dispatch in the client's session, so
//!   the script's writes are committed with its batch.

mod cache;
pub mod convert;
mod eval;
mod libs;
mod lua;

pub use cache::{sha1hex, shebang, ScriptCache, Shebang};
pub use eval::busy_reply;
pub(super) use eval::{eval, script};

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
    /// When the running script started.
    since: Mutex<Option<Instant>>,
    /// `SCRIPT KILL` asked the running script to stop (the VM's hook reads it).
    kill: Arc<AtomicBool>,
    /// The running script wrote (it can no longer be killed).
    wrote: AtomicBool,
    /// Bytes the Lua VM holds, as of its last script (`used_memory_lua`).
    lua_memory: Arc<AtomicU64>,
}

/// Redis's reply to `SCRIPT KILL` once the script wrote.
const UNKILLABLE: &str = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSCRIPT command.";

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

    fn start_run(&self) {
        self.kill.store(false, Ordering::SeqCst);
        self.wrote.store(false, Ordering::SeqCst);
        *self.since.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    }

    fn end_run(&self) {
        *self.since.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.kill.store(false, Ordering::SeqCst);
    }

    /// `SCRIPT KILL`: stops the running script unless it wrote; the error
    /// reply otherwise, in Redis's words.
    pub fn kill(&self) -> Result<(), &'static str> {
        if self.running_since().is_none() {
            return Err("NOTBUSY No scripts in execution right now.");
        }
        if self.wrote.load(Ordering::SeqCst) {
            return Err(UNKILLABLE);
        }
        self.kill.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Sends `job` to the VM thread, starting it (again, if it died).
    fn send(&self, job: lua::Job) -> Result<(), String> {
        let mut vm = self.vm.lock().unwrap_or_else(|e| e.into_inner());
        let mut job = job;
        for _ in 0..2 {
            if vm.is_none() {
                *vm = Some(
                    lua::spawn(self.kill.clone(), self.lua_memory.clone())
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
