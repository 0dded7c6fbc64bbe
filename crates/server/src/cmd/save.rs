//! `SAVE`, `BGSAVE [SCHEDULE]`, `LASTSAVE` and `SHUTDOWN`.
//!
//! tiercache has no snapshot file: every acknowledged write is already in
//! a journal or a store. What a save means here is the write-back flush:
//! `SAVE` returns once every write-back namespace's stores hold everything
//! written before it ([`Engine::flush`](tiercache_engine::Engine::flush)),
//! `BGSAVE` starts that flush and replies at once. `SHUTDOWN` asks the
//! embedding process to stop as on SIGTERM, which flushes too; `NOSAVE`
//! cannot skip that, since the journal keeps what is not flushed anyway.

use super::{engine_error_message, Args, Ctx, Flow, SYNTAX_ERROR};
use crate::resp::reply;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tiercache_engine::now_ms;

/// Seconds since the Unix epoch.
fn unix_secs() -> u64 {
    now_ms() / 1000
}

/// Save bookkeeping (`LASTSAVE`, `INFO persistence`).
#[derive(Debug)]
pub struct Saves {
    /// Unix time (seconds) of the last successful save, or of the start.
    last_save: AtomicU64,
    /// The engine's write count when the last successful save started
    /// (`rdb_changes_since_last_save` is the writes since).
    saved_writes: AtomicU64,
    in_progress: AtomicBool,
    last_failed: AtomicBool,
}

impl Default for Saves {
    fn default() -> Self {
        Saves {
            last_save: AtomicU64::new(unix_secs()),
            saved_writes: AtomicU64::new(0),
            in_progress: AtomicBool::new(false),
            last_failed: AtomicBool::new(false),
        }
    }
}

impl Saves {
    /// Unix time of the last successful save (or of the start).
    pub fn last_save(&self) -> u64 {
        self.last_save.load(Ordering::Relaxed)
    }

    /// Keys written since the last successful save started, of the
    /// `writes` the engine counts now (`EngineStats::writes`).
    pub fn changes_since(&self, writes: u64) -> u64 {
        writes.saturating_sub(self.saved_writes.load(Ordering::Relaxed))
    }

    /// True while a `BGSAVE` runs.
    pub fn in_progress(&self) -> bool {
        self.in_progress.load(Ordering::Relaxed)
    }

    /// True when the last save failed.
    pub fn last_failed(&self) -> bool {
        self.last_failed.load(Ordering::Relaxed)
    }

    /// A save that started when the engine had counted `writes` ended.
    fn finished(&self, ok: bool, writes: u64) {
        if ok {
            self.last_save.store(unix_secs(), Ordering::Relaxed);
            self.saved_writes.fetch_max(writes, Ordering::Relaxed);
        }
        self.last_failed.store(!ok, Ordering::Relaxed);
    }
}

const IN_PROGRESS: &str = "ERR Background save already in progress";

/// `SAVE`.
pub async fn save(_args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let saves = &ctx.server.saves;
    if saves.in_progress() {
        ctx.error(IN_PROGRESS);
        return Flow::Continue;
    }
    let writes = ctx.engine.stats().writes;
    match ctx.engine.flush().await {
        Ok(()) => {
            saves.finished(true, writes);
            reply::ok(ctx.out);
        }
        Err(e) => {
            saves.finished(false, writes);
            ctx.error(&engine_error_message(&e));
        }
    }
    Flow::Continue
}

/// `BGSAVE [SCHEDULE]`.
/// `BGREWRITEAOF`: there is no append-only file, but the write-back
/// journal is one, and a flush is what compacts it (a flushed segment is
/// deleted). So it starts the flush, in the background, and says what
/// Redis says.
pub async fn bgrewriteaof(_args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let engine = ctx.engine.clone();
    tokio::spawn(async move {
        if let Err(e) = engine.flush().await {
            tracing::error!(error = %e, "BGREWRITEAOF: the write-back flush failed");
        }
    });
    reply::simple(ctx.out, "Background append only file rewriting started");
    Flow::Continue
}

pub async fn bgsave(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if args.len() > 2 || (args.len() == 2 && !args.is(1, "schedule")) {
        ctx.error(SYNTAX_ERROR);
        return Flow::Continue;
    }
    let saves = ctx.server.saves.clone();
    if saves.in_progress.swap(true, Ordering::AcqRel) {
        ctx.error(IN_PROGRESS);
        return Flow::Continue;
    }
    let engine = ctx.engine.clone();
    let writes = engine.stats().writes;
    tokio::spawn(async move {
        let result = engine.flush().await;
        if let Err(e) = &result {
            tracing::error!(error = %e, "BGSAVE: the write-back flush failed");
        }
        saves.finished(result.is_ok(), writes);
        saves.in_progress.store(false, Ordering::Release);
    });
    // Inside EXEC Redis defers the save and says so; the flush here runs
    // beside the transaction either way.
    let said = if ctx.client.in_exec {
        "Background saving scheduled"
    } else {
        "Background saving started"
    };
    reply::simple(ctx.out, said);
    Flow::Continue
}

/// `LASTSAVE`.
pub async fn lastsave(_args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    reply::integer(ctx.out, ctx.server.saves.last_save() as i64);
    Flow::Continue
}

/// `SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]`: on success the
/// connection closes without a reply, as Redis's does.
pub async fn shutdown(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let (mut nosave, mut save, mut abort, mut other) = (false, false, false, false);
    for i in 1..args.len() {
        if args.is(i, "nosave") {
            nosave = true;
        } else if args.is(i, "save") {
            save = true;
        } else if args.is(i, "now") || args.is(i, "force") {
            other = true;
        } else if args.is(i, "abort") {
            abort = true;
        } else {
            ctx.error(SYNTAX_ERROR);
            return Flow::Continue;
        }
    }
    if (abort && (nosave || save || other)) || (nosave && save) {
        ctx.error(SYNTAX_ERROR);
        return Flow::Continue;
    }
    if abort {
        // A shutdown here never waits (for replicas): none to abort.
        ctx.error("ERR No shutdown in progress.");
        return Flow::Continue;
    }
    let Some(request) = &ctx.server.config.shutdown_request else {
        ctx.error("ERR SHUTDOWN is not enabled on this listener");
        return Flow::Continue;
    };
    tracing::info!(client = ctx.client.id, "SHUTDOWN requested by a client");
    request.notify_one();
    Flow::Close
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_save_keeps_the_last_good_time() {
        let saves = Saves::default();
        saves.last_save.store(5, Ordering::Relaxed);
        saves.finished(false, 10);
        assert_eq!(saves.last_save(), 5);
        assert!(saves.last_failed());
        assert_eq!(saves.changes_since(12), 12, "a failed save saved nothing");
        saves.finished(true, 10);
        assert!(saves.last_save() > 5);
        assert!(!saves.last_failed());
        assert_eq!(saves.changes_since(12), 2, "the writes after it started");
        // A BGSAVE that started earlier but ended later does not go back.
        saves.finished(true, 7);
        assert_eq!(saves.changes_since(12), 2);
    }
}
