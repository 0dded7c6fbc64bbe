//! `EVAL`, `EVALSHA`, their `_RO` forms, and `SCRIPT`.
//!
//! A script runs alone: the handler leaves the engine's gate, takes it
//! exclusively (unless it already runs under `EXEC`, which holds it), and
//! hands the script to the VM thread; each `redis.call` comes back here,
//! is checked as Redis checks a script's command (known, arity, not
//! `noscript`, no write from a read-only script) and runs through
//! [`execute`](crate::cmd::execute) in the client's session, its reply in
//! the protocol the script chose. Blocking commands are `noscript`; the
//! rest answer as inside `EXEC` (`in_exec`: no blocking, no pushes, no
//! `CLIENT REPLY` skipping).
//!
//! A script still running after `busy-reply-threshold` (`lua-time-limit`)
//! milliseconds makes the connections waiting for the gate answer `BUSY`
//! ([`busy_reply`]), and `SCRIPT KILL` stops it if it has not written.

use super::cache::sha1hex;
use super::lua::{CallResult, FromVm, Job, RunJob};
use crate::cmd::subcommand::subcommand_to_run;
use crate::cmd::{execute, lookup_index, parse_i64, Args, Ctx, Flow, COMMANDS, NOT_AN_INTEGER};
use crate::resp::reply::{self, Proto};
use std::sync::Arc;

const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";

/// `EVAL script numkeys [key ...] [arg ...]` and `EVALSHA sha1 ...`
/// (`by_sha`); `read_only` for `EVAL_RO`/`EVALSHA_RO`.
pub async fn eval(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, by_sha: bool, read_only: bool) -> Flow {
    let Some(numkeys) = parse_i64(args.get(2)) else {
        ctx.error(NOT_AN_INTEGER);
        return Flow::Continue;
    };
    if numkeys > args.len() as i64 - 3 {
        ctx.error("ERR Number of keys can't be greater than number of args");
        return Flow::Continue;
    }
    if numkeys < 0 {
        ctx.error("ERR Number of keys can't be negative");
        return Flow::Continue;
    }
    let scripts = &ctx.server.scripts;
    let (sha, body) = if by_sha {
        let sha = args.get(1);
        let cached = (sha.len() == 40)
            .then(|| String::from_utf8_lossy(sha).to_ascii_lowercase())
            .and_then(|sha| Some((scripts.cache.get(&sha)?, sha)));
        let Some((body, sha)) = cached else {
            ctx.error(NOSCRIPT);
            return Flow::Continue;
        };
        (sha, body)
    } else {
        let sha = sha1hex(args.get(1));
        match scripts.cache.get(&sha) {
            Some(body) => (sha, body),
            None => match load(scripts, sha, Arc::from(args.get(1))).await {
                Ok(loaded) => loaded,
                Err(msg) => {
                    ctx.error(&msg);
                    return Flow::Continue;
                }
            },
        }
    };
    // Cached bodies passed this check when loaded.
    let read_only = match super::cache::shebang(&body) {
        Ok(Some(flags)) if read_only && !flags.no_writes => {
            ctx.error("ERR Can not execute a script with write flag using *_ro command.");
            return Flow::Continue;
        }
        // A script with flags may write unless it says `no-writes`: it is
        // refused up front, as a write, with too few good replicas.
        Ok(Some(flags))
            if !read_only && !flags.no_writes && ctx.server.replicas.refuse_writes() =>
        {
            ctx.error("NOREPLICAS Not enough good replicas to write.");
            return Flow::Continue;
        }
        Ok(Some(flags)) => read_only || flags.no_writes,
        _ => read_only,
    };
    let script = Script::Eval { sha, body };
    run_with_args(ctx, args, numkeys as usize, script, read_only).await;
    Flow::Continue
}

/// What [`run_with_args`] runs.
pub(super) enum Script {
    /// A cached script body.
    Eval { sha: String, body: Arc<[u8]> },
    /// `FCALL`'s function, as `FUNCTION STATS` shows it running.
    Function(super::Running),
}

/// Runs `script` with `numkeys` keys from argument 3 of `args` and the
/// rest as `ARGV` (`EVAL`'s and `FCALL`'s layout).
pub(super) async fn run_with_args(
    ctx: &mut Ctx<'_, '_>,
    args: &Args<'_>,
    numkeys: usize,
    script: Script,
    read_only: bool,
) {
    let keys_end = 3 + numkeys;
    let (to_server, from_vm, reply_tx, replies) = channels();
    let (sha, body, function, running) = match script {
        Script::Eval { sha, body } => (sha, body, None, None),
        Script::Function(running) => (
            String::new(),
            Arc::from(&[][..]),
            Some(running.name.clone()),
            Some(running),
        ),
    };
    let job = RunJob {
        sha,
        body,
        keys: (3..keys_end).map(|i| args.get(i).to_vec()).collect(),
        argv: (keys_end..args.len())
            .map(|i| args.get(i).to_vec())
            .collect(),
        client: ctx.client.proto,
        to_server,
        replies,
        function,
    };
    run(ctx, job, from_vm, reply_tx, read_only, running).await;
}

/// The ends of a script's line to the VM that stay here.
fn channels() -> (
    tokio::sync::mpsc::UnboundedSender<FromVm>,
    tokio::sync::mpsc::UnboundedReceiver<FromVm>,
    std::sync::mpsc::Sender<CallResult>,
    std::sync::mpsc::Receiver<CallResult>,
) {
    let (to_server, from_vm) = tokio::sync::mpsc::unbounded_channel();
    let (reply_tx, replies) = std::sync::mpsc::channel::<CallResult>();
    (to_server, from_vm, reply_tx, replies)
}

/// Runs `job` (a script, or `FCALL`'s function when `function` is set)
/// alone: leaves the gate and takes it exclusively (unless under
/// `EXEC`), answers its `redis.call`s, and writes its reply.
async fn run(
    ctx: &mut Ctx<'_, '_>,
    job: RunJob,
    mut from_vm: tokio::sync::mpsc::UnboundedReceiver<FromVm>,
    reply_tx: std::sync::mpsc::Sender<CallResult>,
    read_only: bool,
    function: Option<super::Running>,
) {
    // Under EXEC the gate is already held alone (and `in_exec` is set).
    let nested = ctx.client.in_exec;
    let alone = match nested {
        true => None,
        false => Some(crate::cmd::alone::Alone::take(ctx).await),
    };
    ctx.client.in_exec = true;
    let was_in_script = std::mem::replace(&mut ctx.client.in_script, true);
    let client_proto = ctx.client.proto;
    ctx.server.scripts.start_run(function);
    // Its writes reach replicas as one block (Redis 7's effects replication).
    let block = crate::cmd::propagate::open_block(ctx);
    if let Err(msg) = ctx.server.scripts.send(Job::Run(Box::new(job))) {
        ctx.error(&msg);
    } else {
        loop {
            match from_vm.recv().await {
                Some(FromVm::Call { argv, resp3 }) => {
                    let answer = call(&argv, resp3, read_only, ctx).await;
                    // The VM is gone only if it died; its end answers below.
                    let _ = reply_tx.send(answer);
                }
                Some(FromVm::Done(bytes)) => {
                    ctx.out.extend_from_slice(&bytes);
                    break;
                }
                None => {
                    ctx.error("ERR the Lua VM stopped while running the script");
                    break;
                }
            }
        }
    }
    crate::cmd::propagate::close_block(ctx, block);
    ctx.server.scripts.end_run();
    ctx.client.proto = client_proto;
    ctx.client.in_exec = nested;
    ctx.client.in_script = was_in_script;
    if let Some(alone) = alone {
        alone.rejoin(ctx).await;
    }
}

/// Compiles `body` in the VM and caches it: its SHA1 and body, or the
/// compile error.
async fn load(
    scripts: &super::Scripts,
    sha: String,
    body: Arc<[u8]>,
) -> Result<(String, Arc<[u8]>), String> {
    let (done, outcome) = tokio::sync::oneshot::channel();
    scripts.send(Job::Load {
        sha: sha.clone(),
        body: body.clone(),
        done,
    })?;
    outcome
        .await
        .map_err(|_| "ERR the Lua VM stopped".to_string())??;
    scripts.cache.insert(sha.clone(), body.clone());
    Ok((sha, body))
}

/// Commands a script never runs, even with `DEBUG
/// SET-DISABLE-DENY-SCRIPTS 1`: they would block, end or change the
/// connection, or run another script.
fn never_from_scripts(spec: &crate::cmd::CommandSpec) -> bool {
    spec.flags.contains(&"blocking")
        || spec.flags.contains(&"pubsub")
        || spec.flags.contains(&"no_multi")
        || matches!(
            spec.name,
            "quit"
                | "reset"
                | "multi"
                | "exec"
                | "discard"
                | "watch"
                | "unwatch"
                | "eval"
                | "evalsha"
                | "eval_ro"
                | "evalsha_ro"
                | "fcall"
                | "fcall_ro"
                | "script"
                | "function"
                | "shutdown"
                | "monitor"
                | "hello"
                | "auth"
        )
}

/// One `redis.call` of a script: Redis's checks, then the command.
async fn call(argv: &[Vec<u8>], resp3: bool, read_only: bool, ctx: &mut Ctx<'_, '_>) -> CallResult {
    let Some(index) = lookup_index(&argv[0]) else {
        return Err("Unknown Redis command called from script".into());
    };
    let spec = &COMMANDS[index];
    let n = argv.len() as i32;
    if (spec.arity > 0 && n != spec.arity) || n < -spec.arity {
        return Err("Wrong number of args calling Redis command from script".into());
    }
    // SCRIPT's subcommands but HELP are `noscript` in Redis.
    let script_sub = spec.name == "script" && !argv[1].eq_ignore_ascii_case(b"help");
    let denied = spec.flags.contains(&"noscript") || script_sub;
    let deny_disabled = ctx
        .server
        .scripts
        .deny_disabled
        .load(std::sync::atomic::Ordering::Relaxed);
    if denied && (!deny_disabled || never_from_scripts(spec)) {
        return Err("This Redis command is not allowed from script".into());
    }
    if read_only && (spec.flags.contains(&"write") || spec.flags.contains(&"may_replicate")) {
        return Err("Write commands are not allowed from read-only scripts.".into());
    }
    // XREAD's BLOCK (an option before STREAMS), refused as Redis's XREAD does.
    if matches!(spec.name, "xread" | "xreadgroup")
        && argv[1..]
            .iter()
            .take_while(|a| !a.eq_ignore_ascii_case(b"streams"))
            .any(|a| a.eq_ignore_ascii_case(b"block"))
    {
        let mut out = bytes::BytesMut::new();
        let name = String::from_utf8_lossy(&argv[0]);
        reply::error(
            &mut out,
            &format!("ERR {name} command is not allowed with BLOCK option from scripts"),
        );
        return Ok(out);
    }
    if spec.flags.contains(&"write") {
        ctx.server
            .scripts
            .wrote
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }
    let mut buf = Vec::with_capacity(argv.iter().map(Vec::len).sum());
    let mut ranges = Vec::with_capacity(argv.len());
    for a in argv {
        let start = buf.len();
        buf.extend_from_slice(a);
        ranges.push((start, buf.len()));
    }
    let args = Args::new(&buf, &ranges);
    let proto = ctx.client.proto;
    ctx.client.proto = if resp3 { Proto::Resp3 } else { Proto::Resp2 };
    let at = ctx.out.len();
    // Boxed: `execute` runs `eval`. Never a block (`in_exec`; blocking
    // commands are `noscript`), never `QUIT` (`noscript`).
    Box::pin(execute(&args, ctx)).await;
    ctx.client.proto = proto;
    Ok(ctx.out.split_off(at))
}

const SUBCOMMANDS: &[(&str, i32)] = &[
    ("help", 2),
    ("flush", -2),
    ("exists", -3),
    ("load", 3),
    ("kill", 2),
    ("debug", 3),
];

const HELP: &[&str] = &[
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DEBUG (YES|SYNC|NO)",
    "    Set the debug mode for subsequent scripts executed.",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
    "HELP",
    "    Prints this help.",
];

/// `SCRIPT LOAD|EXISTS|FLUSH|KILL|DEBUG|HELP`.
pub async fn script(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let Some(sub) = subcommand_to_run(args, ctx, "script", SUBCOMMANDS, HELP) else {
        return Flow::Continue;
    };
    let scripts = &ctx.server.scripts;
    match sub {
        "flush" => {
            if args.len() > 3 || (args.len() == 3 && !args.is(2, "sync") && !args.is(2, "async")) {
                ctx.error("ERR SCRIPT FLUSH only support SYNC|ASYNC option");
            } else {
                scripts.cache.clear();
                match scripts.send(Job::Flush) {
                    Ok(()) => reply::ok(ctx.out),
                    Err(msg) => ctx.error(&msg),
                }
            }
        }
        "exists" => {
            reply::array(ctx.out, args.len() - 2);
            for i in 2..args.len() {
                let found = scripts.cache.contains(args.get(i));
                reply::integer(ctx.out, found as i64);
            }
        }
        "load" => {
            let sha = sha1hex(args.get(2));
            let loaded = if scripts.cache.get(&sha).is_some() {
                Ok((sha, Arc::from(&[][..])))
            } else {
                load(scripts, sha, Arc::from(args.get(2))).await
            };
            match loaded {
                Ok((sha, _)) => reply::bulk(ctx.out, sha.as_bytes()),
                Err(msg) => ctx.error(&msg),
            }
        }
        "kill" => match scripts.kill(true) {
            Ok(()) => reply::ok(ctx.out),
            Err(msg) => ctx.error(msg),
        },
        _ => {
            // DEBUG: no Lua debugger here; turning it off is accepted.
            if args.is(2, "no") {
                reply::ok(ctx.out);
            } else if args.is(2, "yes") || args.is(2, "sync") {
                ctx.error("ERR SCRIPT DEBUG is not supported by this server");
            } else {
                ctx.error("ERR Use SCRIPT DEBUG YES/SYNC/NO");
            }
        }
    }
    Flow::Continue
}

/// Answers a request that arrived while a script runs past the busy
/// threshold (it holds the gate), as Redis answers then: `SCRIPT KILL`
/// stops an `EVAL` script, `FUNCTION KILL` a function, `FUNCTION STATS`
/// answers; `MULTI`, `DISCARD` and `UNWATCH` run (they touch no data);
/// anything else is refused with `BUSY`, which inside `MULTI` makes `EXEC`
/// fail (`EXECABORT`) and for `EXEC` discards the transaction.
pub async fn busy_reply(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) {
    let scripts = &ctx.server.scripts;
    if args.len() == 2 && (args.is(0, "script") || args.is(0, "function")) && args.is(1, "kill") {
        match scripts.kill(args.is(0, "script")) {
            Ok(()) => reply::ok(ctx.out),
            Err(msg) => ctx.error(msg),
        }
        return;
    }
    let function_runs = scripts.running().is_some();
    if args.len() == 2 && args.is(0, "function") && args.is(1, "stats") {
        super::function::stats(ctx);
        return;
    }
    let index = lookup_index(args.get(0));
    match index.map(|i| COMMANDS[i].name) {
        Some("multi" | "discard" | "unwatch") => {
            Box::pin(execute(args, ctx)).await;
        }
        _ if function_runs => crate::cmd::reject(ctx, index, super::BUSY_FUNCTION),
        _ => crate::cmd::reject(ctx, index, super::BUSY_EVAL),
    }
}
