//! [`Ctx`]: what a scenario of `tiercache bench` gets to work with: the
//! options (`--quick`, `--require`), a tokio runtime, progress bars and the
//! backend servers, each started the first time a scenario asks for it (on a
//! free port, in a temporary directory) and stopped when the run ends.
//!
//! A server that is not installed, or fails to start, is an
//! [`Unavailable`]: the scenario records the setup as skipped with that
//! reason, and the run fails at the end when `--require` was given.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::time::Duration;
use tiercache_testkit::{find_tool, Mariadb, Memcached, Postgres, RedisServer};

/// Options of one `tiercache bench` run.
#[derive(Clone, Debug)]
pub struct LabOptions {
    /// Smaller data and shorter timings: all six scenarios in under 3 minutes.
    pub quick: bool,
    /// A setup that cannot run (server not installed) fails the run.
    pub require: bool,
    /// Directory holding `stations.csv` (the shared data set).
    pub data_dir: PathBuf,
    /// Draw progress bars on stderr (off in tests and when not a terminal).
    pub progress: bool,
}

/// Why a setup could not run, e.g. `not installed (redis-server)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unavailable(pub String);

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A server slot: not asked for yet, running, or known to be unavailable.
enum Slot<T> {
    Unstarted,
    Running(T),
    Unavailable(Unavailable),
}

impl<T> Slot<T> {
    fn get(
        &mut self,
        what: &str,
        installed: impl FnOnce() -> bool,
        start: impl FnOnce() -> Option<T>,
    ) -> Result<&T, Unavailable> {
        if let Slot::Unstarted = self {
            *self = if !installed() {
                Slot::Unavailable(Unavailable(format!("not installed ({what})")))
            } else {
                // testkit panics with the reason when a server fails to start.
                match catch_unwind(AssertUnwindSafe(start)) {
                    Ok(Some(server)) => Slot::Running(server),
                    Ok(None) => Slot::Unavailable(Unavailable(format!("not installed ({what})"))),
                    Err(panic) => Slot::Unavailable(Unavailable(format!(
                        "{what} failed to start: {}",
                        panic_message(&panic)
                    ))),
                }
            };
        }
        match self {
            Slot::Running(server) => Ok(server),
            Slot::Unavailable(why) => Err(why.clone()),
            Slot::Unstarted => unreachable!("slot was just filled"),
        }
    }
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panicked".to_string())
}

/// The scenario's view of the run. See the module docs.
pub struct Ctx {
    options: LabOptions,
    runtime: tokio::runtime::Runtime,
    bars: MultiProgress,
    redis: Slot<RedisServer>,
    memcached: Slot<Memcached>,
    postgres: Slot<Postgres>,
    mariadb: Slot<Mariadb>,
}

impl Ctx {
    /// A context for one run; no server is started until asked for.
    pub fn new(options: LabOptions) -> std::io::Result<Ctx> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("tiercache-lab")
            .build()?;
        let bars = MultiProgress::with_draw_target(if options.progress {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        });
        Ok(Ctx {
            options,
            runtime,
            bars,
            redis: Slot::Unstarted,
            memcached: Slot::Unstarted,
            postgres: Slot::Unstarted,
            mariadb: Slot::Unstarted,
        })
    }

    /// `--quick` was given.
    pub fn quick(&self) -> bool {
        self.options.quick
    }

    /// The run's options.
    pub fn options(&self) -> &LabOptions {
        &self.options
    }

    /// A multi-threaded tokio runtime shared by the scenarios.
    pub fn runtime(&self) -> &tokio::runtime::Runtime {
        &self.runtime
    }

    /// The shared data set's `stations.csv`.
    pub fn stations_csv(&self) -> PathBuf {
        self.options.data_dir.join("stations.csv")
    }

    /// A progress bar of `total` steps labelled `label` (hidden when
    /// progress is off); finish it with `finish_and_clear`.
    pub fn progress(&self, label: &str, total: u64) -> ProgressBar {
        let bar = self.bars.add(ProgressBar::new(total));
        bar.set_style(
            ProgressStyle::with_template("{prefix:>24} [{bar:30}] {pos}/{len} {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(label.to_string());
        bar.enable_steady_tick(Duration::from_millis(200));
        bar
    }

    /// A `redis-server` (TCP on 127.0.0.1 and a unix socket), started on
    /// first use and shared by the scenarios.
    pub fn redis(&mut self) -> Result<&RedisServer, Unavailable> {
        self.redis.get("redis-server", RedisServer::installed, || {
            RedisServer::start(&[])
        })
    }

    /// A `memcached` with 256 MB of memory (room for every scenario's
    /// values without evictions), started on first use.
    pub fn memcached(&mut self) -> Result<&Memcached, Unavailable> {
        self.memcached.get("memcached", Memcached::installed, || {
            Memcached::start_with_memory(256)
        })
    }

    /// A temporary PostgreSQL cluster, started on first use.
    pub fn postgres(&mut self) -> Result<&Postgres, Unavailable> {
        self.postgres
            .get("postgresql", Postgres::installed, Postgres::start)
    }

    /// A temporary MariaDB server, started on first use.
    pub fn mariadb(&mut self) -> Result<&Mariadb, Unavailable> {
        self.mariadb
            .get("mariadb-server", Mariadb::installed, Mariadb::start)
    }

    /// The path of a tool the scenario runs itself (e.g. `nginx`), searched
    /// on `PATH` and in the sbin directories.
    pub fn tool(&self, name: &str) -> Result<PathBuf, Unavailable> {
        find_tool(name, &["/usr/sbin", "/sbin", "/usr/local/sbin"])
            .ok_or_else(|| Unavailable(format!("not installed ({name})")))
    }

    /// Stops every server this run started.
    pub fn stop_servers(&mut self) {
        self.redis = Slot::Unstarted;
        self.memcached = Slot::Unstarted;
        self.postgres = Slot::Unstarted;
        self.mariadb = Slot::Unstarted;
    }
}
