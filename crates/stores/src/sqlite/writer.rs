//! The thread that runs an SQLite store's writes, at a lower CPU priority
//! than the threads serving requests.
//!
//! Why: SQLite takes one writer at a time anyway, and a write-back flush is
//! CPU work the request path should not wait behind. On a saturated core
//! the flush then runs in the time the request path leaves, and writes
//! meanwhile coalesce in the write-back queue (a key written ten times
//! before its flush is one row), so the flush shrinks as load grows.
//! Nothing acknowledged is at risk: write-back SETs are acknowledged after
//! the journal append, and the write-back queue's high-water mark makes
//! writers wait when the flush falls too far behind.
//!
//! Measured (server pinned to one core, `mc-load --connections 50` on
//! 100,000 keys, default config): `write_nice = 0` ran pipelined SETs
//! (`--pipeline 16`) at 243,000/s and 10 steps at 461,000/s. Raising the
//! default from 10 to 19 (one process, the writer thread re-prioritised
//! between rounds, two rounds each): unpipelined SETs 92,000–96,000/s with
//! a p99 of 4.6 ms at 10, 113,000–118,000/s with a p99 of 0.7 ms at 19;
//! pipelined 495,000–536,000/s at 10, 607,000–638,000/s at 19. Our reading
//! of the p99 (inferred, not traced): at 10 the writer still gets the core
//! often enough that one request in a hundred waits out one of its time
//! slices (1.4 ms on this kernel); at 19 it seldom does. Starvation
//! check: with reads saturating the server and 50,000 SETs/s of distinct
//! keys (nothing coalesces), the flush kept up at 19 as at 10 (49,500 and
//! 52,100 SETs/s served, no back-pressure errors). `SCHED_IDLE` measured
//! like 19 but gives the flush no floor share at all, so it is not used.
//! The numbers are in BENCHMARKS.md ("session 18").

use std::panic::AssertUnwindSafe;
use std::sync::mpsc;

type Job = Box<dyn FnOnce() + Send>;

/// One thread running jobs in order (the store's write transactions).
pub(super) struct WriterThread {
    jobs: mpsc::Sender<Job>,
}

impl WriterThread {
    /// Starts the thread `nice` steps below the server's priority (0 = the
    /// same; capped at 19; on Linux only, where niceness is per thread). The thread ends when
    /// the `WriterThread` is dropped and its queued jobs have run.
    pub(super) fn spawn(nice: u8) -> std::io::Result<WriterThread> {
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || {
                lower_priority(nice);
                while let Ok(job) = queue.recv() {
                    job();
                }
            })?;
        Ok(WriterThread { jobs })
    }

    /// Runs `f` on the thread and returns its result; `None` if `f`
    /// panicked or the thread is gone.
    pub(super) async fn run<T, F>(&self, f: F) -> Option<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            // A panicking job drops `reply`: its caller gets an error and
            // the thread goes on with the next job.
            if let Ok(value) = std::panic::catch_unwind(AssertUnwindSafe(f)) {
                let _ = reply.send(value);
            }
        });
        self.jobs.send(job).ok()?;
        answer.await.ok()
    }
}

#[cfg(target_os = "linux")]
fn lower_priority(nice: u8) {
    if nice == 0 {
        return;
    }
    // A new thread starts at its creator's niceness; go `nice` below it.
    let target = (current_nice() + libc::c_int::from(nice)).min(19);
    // SAFETY: a plain system call on the calling thread's own id. On Linux,
    // PRIO_PROCESS with a thread id changes that thread only.
    let rc = unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, target)
    };
    if rc != 0 {
        tracing::warn!(
            nice,
            error = %std::io::Error::last_os_error(),
            "could not lower the sqlite writer thread's priority; it runs at the server's"
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_priority(_nice: u8) {}

/// The calling thread's niceness.
#[cfg(target_os = "linux")]
fn current_nice() -> libc::c_int {
    // SAFETY: as in `lower_priority`.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::getpriority(libc::PRIO_PROCESS, tid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_jobs_in_order_and_survives_a_panic() {
        let writer = WriterThread::spawn(0).unwrap();
        let log = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
        for i in 0..3 {
            let log = log.clone();
            assert_eq!(writer.run(move || log.lock().push(i)).await, Some(()));
        }
        let failed: Option<()> = writer.run(|| panic!("a job fails")).await;
        assert_eq!(failed, None);
        assert_eq!(
            writer.run(|| 7).await,
            Some(7),
            "the thread outlives a panic"
        );
        assert_eq!(*log.lock(), vec![0, 1, 2]);
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn the_thread_runs_at_the_niceness_asked() {
        let base = current_nice();
        let writer = WriterThread::spawn(10).unwrap();
        let nice = writer.run(current_nice).await.unwrap();
        assert_eq!(nice, (base + 10).min(19), "relative to the server's own");
        assert_eq!(current_nice(), base, "the caller's thread is unchanged");
    }
}
