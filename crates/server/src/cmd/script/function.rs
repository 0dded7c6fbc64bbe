//! `FUNCTION LOAD|DELETE|LIST|FLUSH|STATS|DUMP|RESTORE|KILL|HELP` and
//! `FCALL`/`FCALL_RO`, in Redis 7.0's words (`functions.c`).
//!
//! Changes go to the VM thread (`function_vm.rs`), which compiles the
//! library and updates the registry and the functions file; reads
//! (`LIST`, `STATS`, `DUMP`, `FCALL`'s lookup) use the registry here.
//! `FCALL` runs the function as `EVAL` runs a script (`eval::run_with_args`).

use super::eval::{run_with_args, Script};
use super::function_vm::{FnJob, Policy};
use super::library::{FLAGS, NO_WRITES};
use super::lua::Job;
use super::Running;
use crate::cmd::subcommand::{subcommand_syntax, subcommand_to_run};
use crate::cmd::{parse_i64, Args, Ctx, Flow};
use crate::resp::reply;
use bytes::Bytes;
use tokio::sync::oneshot;

const SUBCOMMANDS: &[(&str, i32)] = &[
    ("help", 2),
    ("load", -3),
    ("delete", 3),
    ("list", -2),
    ("stats", 2),
    ("kill", 2),
    ("flush", -2),
    ("dump", 2),
    ("restore", -3),
];

const HELP: &[&str] = &[
    "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
    "HELP",
    "    Prints this help.",
];

/// Sends a change to the VM thread and waits for its outcome.
async fn change<T>(
    scripts: &super::Scripts,
    job: impl FnOnce(oneshot::Sender<Result<T, String>>) -> FnJob,
) -> Result<T, String> {
    let (done, outcome) = oneshot::channel();
    scripts.send(Job::Functions(job(done)))?;
    outcome
        .await
        .map_err(|_| "ERR the Lua VM stopped".to_string())?
}

/// `FUNCTION <subcommand> ...`.
pub async fn function(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let Some(sub) = subcommand_to_run(args, ctx, "function", SUBCOMMANDS, HELP) else {
        return Flow::Continue;
    };
    let outcome: Result<(), String> = match sub {
        "load" => load(args, ctx).await,
        "delete" => {
            let name = args.text(2);
            change(&ctx.server.scripts, |done| FnJob::Delete { name, done })
                .await
                .map(|()| reply::ok(ctx.out))
        }
        "list" => list(args, ctx),
        "stats" => {
            stats(ctx);
            Ok(())
        }
        "kill" => ctx
            .server
            .scripts
            .kill(false)
            .map(|()| reply::ok(ctx.out))
            .map_err(str::to_string),
        "flush" => {
            if args.len() > 3 {
                Err(subcommand_syntax(args.get(1), "FUNCTION"))
            } else if args.len() == 3 && !args.is(2, "async") && !args.is(2, "sync") {
                Err("ERR FUNCTION FLUSH only supports SYNC|ASYNC option".into())
            } else {
                change(&ctx.server.scripts, |done| FnJob::Flush { done })
                    .await
                    .map(|()| reply::ok(ctx.out))
            }
        }
        "dump" => {
            let payload = ctx.server.scripts.functions.registry().dump();
            reply::bulk(ctx.out, &payload);
            Ok(())
        }
        _ => restore(args, ctx).await,
    };
    match outcome {
        // Replicas get the libraries too (Redis's `write` subcommands).
        Ok(()) if matches!(sub, "load" | "delete" | "flush" | "restore") => ctx.mark_dirty(),
        Ok(()) => {}
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

/// `FUNCTION LOAD [REPLACE] code`.
async fn load(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Result<(), String> {
    let mut replace = false;
    for i in 2..args.len() - 1 {
        if !args.is(i, "replace") {
            return Err(format!("ERR Unknown option given: {}", args.text(i)));
        }
        replace = true;
    }
    let code = Bytes::copy_from_slice(args.get(args.len() - 1));
    let name = change(&ctx.server.scripts, |done| FnJob::Load {
        code,
        replace,
        done,
    })
    .await?;
    reply::bulk(ctx.out, name.as_bytes());
    Ok(())
}

/// `FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE]`.
async fn restore(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Result<(), String> {
    if args.len() > 4 {
        return Err(subcommand_syntax(args.get(1), "FUNCTION"));
    }
    let policy = if args.len() < 4 || args.is(3, "append") {
        Policy::Append
    } else if args.is(3, "replace") {
        Policy::Replace
    } else if args.is(3, "flush") {
        Policy::Flush
    } else {
        return Err(
            "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE."
                .into(),
        );
    };
    let codes = crate::rdb::restore_functions(args.get(2)).map_err(|e| format!("ERR {e}"))?;
    change(&ctx.server.scripts, |done| FnJob::Restore {
        codes,
        policy,
        done,
    })
    .await?;
    reply::ok(ctx.out);
    Ok(())
}

/// `FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE]`.
fn list(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Result<(), String> {
    let (mut with_code, mut pattern): (bool, Option<&[u8]>) = (false, None);
    let mut i = 2;
    while i < args.len() {
        if !with_code && args.is(i, "withcode") {
            with_code = true;
        } else if pattern.is_none() && args.is(i, "libraryname") {
            if i >= args.len() - 1 {
                return Err("ERR library name argument was not given".into());
            }
            i += 1;
            pattern = Some(args.get(i));
        } else {
            return Err(format!("ERR Unknown argument {}", args.text(i)));
        }
        i += 1;
    }
    let proto = ctx.client.proto;
    let registry = ctx.server.scripts.functions.registry();
    let libs: Vec<_> = registry
        .libraries
        .iter()
        .filter(|(name, _)| {
            pattern.map_or(true, |p| crate::glob::glob_match(p, name.as_bytes(), true))
        })
        .collect();
    reply::array(ctx.out, libs.len());
    for (name, lib) in libs {
        reply::map(ctx.out, if with_code { 4 } else { 3 }, proto);
        reply::bulk(ctx.out, b"library_name");
        reply::bulk(ctx.out, name.as_bytes());
        reply::bulk(ctx.out, b"engine");
        reply::bulk(ctx.out, b"LUA");
        reply::bulk(ctx.out, b"functions");
        reply::array(ctx.out, lib.functions.len());
        for (fname, info) in &lib.functions {
            reply::map(ctx.out, 3, proto);
            reply::bulk(ctx.out, b"name");
            reply::bulk(ctx.out, fname.as_bytes());
            reply::bulk(ctx.out, b"description");
            reply::bulk_or_null(ctx.out, info.description.as_deref(), proto);
            reply::bulk(ctx.out, b"flags");
            let flags: Vec<&str> = FLAGS
                .iter()
                .filter(|(_, bit)| info.flags & bit != 0)
                .map(|(f, _)| *f)
                .collect();
            reply::set(ctx.out, flags.len(), proto);
            for f in flags {
                reply::simple(ctx.out, f);
            }
        }
        if with_code {
            reply::bulk(ctx.out, b"library_code");
            reply::bulk(ctx.out, &lib.code);
        }
    }
    Ok(())
}

/// `FUNCTION STATS`: the function running (or null) and the engines'
/// counts; `BUSY` while an `EVAL` script runs, as in Redis.
pub(super) fn stats(ctx: &mut Ctx<'_, '_>) {
    let scripts = &ctx.server.scripts;
    let since = scripts.running_since();
    let running = scripts.running();
    if since.is_some() && running.is_none() {
        ctx.error(super::BUSY_EVAL);
        return;
    }
    let proto = ctx.client.proto;
    let (libraries, functions) = scripts.functions.registry().counts();
    reply::map(ctx.out, 2, proto);
    reply::bulk(ctx.out, b"running_script");
    match (running, since) {
        (Some(run), Some(since)) => {
            reply::map(ctx.out, 3, proto);
            reply::bulk(ctx.out, b"name");
            reply::bulk(ctx.out, run.name.as_bytes());
            reply::bulk(ctx.out, b"command");
            reply::array(ctx.out, run.argv.len());
            for a in &run.argv {
                reply::bulk(ctx.out, a);
            }
            reply::bulk(ctx.out, b"duration_ms");
            reply::integer(ctx.out, since.elapsed().as_millis() as i64);
        }
        _ => reply::null(ctx.out, proto),
    }
    reply::bulk(ctx.out, b"engines");
    reply::map(ctx.out, 1, proto);
    reply::bulk(ctx.out, b"LUA");
    reply::map(ctx.out, 2, proto);
    reply::bulk(ctx.out, b"libraries_count");
    reply::integer(ctx.out, libraries as i64);
    reply::bulk(ctx.out, b"functions_count");
    reply::integer(ctx.out, functions as i64);
}

/// `FCALL name numkeys [key ...] [arg ...]`, `FCALL_RO` (`read_only`).
pub async fn fcall(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, read_only: bool) -> Flow {
    // Found in any case; named as registered (errors, `FUNCTION STATS`).
    let found = ctx
        .server
        .scripts
        .functions
        .registry()
        .function(&args.text(1))
        .map(|(name, info)| (name.to_string(), info.flags));
    let checked = (|| {
        let (name, flags) = found.ok_or("ERR Function not found")?;
        let numkeys = parse_i64(args.get(2)).ok_or("ERR Bad number of keys provided")?;
        if numkeys > args.len() as i64 - 3 {
            return Err("ERR Number of keys can't be greater than number of args");
        }
        if numkeys < 0 {
            return Err("ERR Number of keys can't be negative");
        }
        if read_only && flags & NO_WRITES == 0 {
            return Err("ERR Can not execute a script with write flag using *_ro command.");
        }
        Ok((numkeys as usize, name, flags))
    })();
    let (numkeys, name, flags) = match checked {
        Ok(c) => c,
        Err(msg) => {
            ctx.error(msg);
            return Flow::Continue;
        }
    };
    // A function that may write is refused up front, as a write, with too
    // few good replicas.
    if !read_only && flags & NO_WRITES == 0 && ctx.server.replicas.refuse_writes() {
        ctx.error("NOREPLICAS Not enough good replicas to write.");
        return Flow::Continue;
    }
    let running = Running {
        name,
        argv: (0..args.len()).map(|i| args.get(i).to_vec()).collect(),
    };
    let read_only = read_only || flags & NO_WRITES != 0;
    run_with_args(ctx, args, numkeys, Script::Function(running), read_only).await;
    Flow::Continue
}
