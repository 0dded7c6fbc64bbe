//! `tiercache serve`: open the engine, listen (RESP, memcached, admin, and
//! the HTTP cache when `[http_cache]` names an upstream), stop cleanly on
//! SIGTERM/SIGINT.
//!
//! Shutdown order matters for durability: stop accepting and let in-flight
//! batches finish (no client can write any more), then flush write-back data
//! to the stores, then exit 0.

use clap::Args;
use std::net::ToSocketAddrs;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use tiercache::config::{Config, ListenAddr};
use tiercache::server::{self, ServerConfig};

#[derive(Args)]
pub struct ServeArgs {
    /// Configuration file (TOML); without it, SPEC defaults apply.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Directory for the SQLite file and write-back journals.
    #[arg(long, default_value = "./tiercache-data")]
    data_dir: PathBuf,
    /// Redis-protocol listener: host:port, unix:/path or off.
    #[arg(long)]
    resp: Option<String>,
    /// memcached-protocol listener: host:port, unix:/path or off.
    #[arg(long)]
    memcache: Option<String>,
    /// Admin HTTP listener (/metrics, /healthz): host:port or off.
    #[arg(long)]
    admin: Option<String>,
    /// Allow a non-loopback listener without a password.
    #[arg(long)]
    unsafe_no_auth: bool,
    /// Who may run Redis's DEBUG command: no (default), local or yes
    /// (overrides `[server] enable_debug_command`).
    #[arg(long)]
    enable_debug_command: Option<tiercache::config::DebugCommand>,
}

pub(crate) fn init_logging() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
}

pub fn run(args: ServeArgs) -> ExitCode {
    init_logging();
    let config = match load_config(&args) {
        Ok(c) => c,
        Err(msg) => {
            eprintln!("tiercache: {msg}");
            return ExitCode::from(2);
        }
    };
    let workers = worker_threads();
    let runtime = match build_runtime(workers) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tiercache: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(config, args.data_dir, workers)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("tiercache: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// How many worker threads the runtime gets: `TOKIO_WORKER_THREADS`, else
/// one per CPU this process may run on.
fn worker_threads() -> usize {
    std::env::var("TOKIO_WORKER_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The tokio runtime for the server. With one worker thread (confined to one
/// CPU by `taskset -c 0` or a one-core container, or `TOKIO_WORKER_THREADS=1`)
/// the single-threaded scheduler does the same work without the multi-thread
/// scheduler's cross-thread queues and wake-ups (an A/B on a shared
/// machine, memcached protocol, pipelined SETs: 1.08 against 1.20 µs of CPU
/// per request).
fn build_runtime(workers: usize) -> std::io::Result<tokio::runtime::Runtime> {
    if workers == 1 {
        tracing::info!("one worker thread: single-threaded scheduler");
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
    }
}

fn load_config(args: &ServeArgs) -> Result<Config, String> {
    let mut config = match &args.config {
        Some(path) => tiercache::config::load(path).map_err(|e| e.to_string())?,
        None => Config::default(),
    };
    let flag = |name: &str, v: &Option<String>, slot: &mut ListenAddr| -> Result<(), String> {
        if let Some(v) = v {
            *slot = v.parse().map_err(|e| format!("--{name} {v}: {e}"))?;
        }
        Ok(())
    };
    flag("resp", &args.resp, &mut config.server.resp)?;
    flag("memcache", &args.memcache, &mut config.server.memcache)?;
    flag("admin", &args.admin, &mut config.server.admin)?;
    if let Some(debug) = args.enable_debug_command {
        config.server.enable_debug_command = debug;
    }
    tiercache::check_supported(&config).map_err(|e| e.to_string())?;
    // The memcached protocol has no AUTH (tiercache does not speak SASL):
    // `requirepass` cannot protect it, so a public memcache listener needs
    // the explicit flag even when a password is set.
    if !config.server.memcache.is_local() && !args.unsafe_no_auth {
        return Err(format!(
            "refusing to listen on non-loopback address {} (memcache): the memcached protocol has no authentication here (no SASL), so requirepass cannot protect it; pass --unsafe-no-auth to allow it",
            config.server.memcache
        ));
    }
    for (name, addr) in [
        ("resp", &config.server.resp),
        ("memcache", &config.server.memcache),
        ("admin", &config.server.admin),
    ] {
        if !addr.is_local() && !args.unsafe_no_auth && config.server.requirepass.is_none() {
            return Err(format!(
                "refusing to listen on non-loopback address {addr} ({name}) without a password; pass --unsafe-no-auth to allow it"
            ));
        }
    }
    Ok(config)
}

/// Resolves a TCP listen address.
pub(crate) fn resolve_tcp(addr: &ListenAddr) -> Result<std::net::SocketAddr, String> {
    match resolve(addr)? {
        Some(server::ListenAddr::Tcp(sa)) => Ok(sa),
        _ => Err(format!("{addr}: expected host:port")),
    }
}

fn resolve(addr: &ListenAddr) -> Result<Option<server::ListenAddr>, String> {
    match addr {
        ListenAddr::Off => Ok(None),
        ListenAddr::Unix(p) => Ok(Some(server::ListenAddr::Unix(p.clone()))),
        ListenAddr::Tcp(hp) => {
            let sa = hp
                .to_socket_addrs()
                .map_err(|e| format!("cannot resolve {hp}: {e}"))?
                .next()
                .ok_or_else(|| format!("{hp} resolves to no address"))?;
            Ok(Some(server::ListenAddr::Tcp(sa)))
        }
    }
}

async fn serve(config: Config, data_dir: PathBuf, workers: usize) -> Result<(), String> {
    // Installed first, so a SIGTERM during journal replay still means a
    // clean stop rather than the default action.
    let stop_signal =
        StopSignal::install().map_err(|e| format!("cannot install signal handlers: {e}"))?;
    std::fs::create_dir_all(&data_dir)
        .map_err(|e| format!("cannot create data dir {}: {e}", data_dir.display()))?;
    let engine = Arc::new(
        tiercache::open_engine(&config, &data_dir)
            .await
            .map_err(|e| e.to_string())?,
    );
    let resp = resolve(&config.server.resp)?;
    let memcache = resolve(&config.server.memcache)?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let shutdown_request = Arc::new(tokio::sync::Notify::new());
    let mut servers = tokio::task::JoinSet::new();
    let server_config = ServerConfig {
        limits: server::Limits {
            max_bulk_len: config.server.max_value_bytes as usize,
            max_key_len: config.server.max_key_bytes as usize,
            max_request_len: config.server.max_request_bytes as usize,
            ..Default::default()
        },
        max_clients: config.server.max_clients as usize,
        idle_timeout: config.server.idle_timeout,
        requirepass: config.server.requirepass.clone(),
        debug_command: match config.server.enable_debug_command {
            tiercache::config::DebugCommand::No => server::DebugCommand::No,
            tiercache::config::DebugCommand::Local => server::DebugCommand::Local,
            tiercache::config::DebugCommand::Yes => server::DebugCommand::Yes,
        },
        // One client cap for both protocols.
        shared_client_slots: Some(Arc::new(tokio::sync::Semaphore::new(
            (config.server.max_clients as usize).min(tokio::sync::Semaphore::MAX_PERMITS),
        ))),
        // Replicas attached over RESP get the memcached writes too.
        replicas: Some(Default::default()),
        // One poller for both protocols: they share the thread.
        busy_poll: config.server.busy_poll.window(workers).map(|window| {
            tracing::info!(?window, "busy polling after requests");
            server::BusyPoll::start(window)
        }),
        // A client's `SHUTDOWN` stops the process as SIGTERM does.
        shutdown_request: Some(shutdown_request.clone()),
        // FUNCTION libraries survive restarts, as in Redis's RDB.
        functions_file: Some(data_dir.join("functions.rdb")),
        ..Default::default()
    };
    let busy_poll = server_config.busy_poll.clone(); // for /metrics
                                                     // The memcached listener: same engine (same data), same limits, client
                                                     // cap and shutdown path as RESP.
    if let Some(addr) = &memcache {
        let listener = server::Listener::bind(addr)
            .await
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let (mut stop, engine, server_config) =
            (stop_rx.clone(), engine.clone(), server_config.clone());
        servers.spawn(async move {
            let shutdown = async move {
                let _ = stop.wait_for(|s| *s).await;
            };
            server::serve_memcache(listener, engine, server_config, shutdown).await
        });
    }
    if let Some(addr) = resp {
        let listener = server::Listener::bind(&addr)
            .await
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let mut stop = stop_rx.clone();
        let engine = engine.clone();
        servers.spawn(async move {
            let shutdown = async move {
                let _ = stop.wait_for(|s| *s).await;
            };
            server::serve(listener, engine, server_config, shutdown).await
        });
    }
    // The HTTP cache, when `[http_cache]` names an upstream.
    let mut http_cache = None;
    if config.http_cache.upstream.is_some() && config.http_cache.listen != ListenAddr::Off {
        let proxy_config = tiercache::proxy_config(&config.http_cache, None)?;
        let addr = resolve_tcp(&config.http_cache.listen)?;
        let cache = tiercache::http_cache::HttpCache::new(engine.clone(), proxy_config)
            .map_err(|e| e.to_string())?;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        http_cache = Some(cache.clone());
        let mut stop = stop_rx.clone();
        servers.spawn(async move {
            let shutdown = async move {
                let _ = stop.wait_for(|s| *s).await;
            };
            tiercache::http_cache::serve(listener, cache, shutdown).await
        });
    }
    if let Some(addr) = resolve(&config.server.admin)? {
        let listener = server::Listener::bind(&addr)
            .await
            .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
        let metrics_engine = engine.clone();
        let busy_poll = busy_poll.clone();
        let metrics: server::admin::MetricsSource = Arc::new(move |out: &mut String| {
            {
                let mut e = server::admin::Exposition::new(out);
                server::admin::engine_metrics(&mut e, &metrics_engine.stats());
                if let Some(poll) = &busy_poll {
                    e.single(
                        "tiercache_busy_poll_spins_total",
                        "counter",
                        "Non-blocking polls of the sockets by busy polling ([server] busy_poll).",
                        poll.spins() as f64,
                    );
                    e.single(
                        "tiercache_busy_poll_idle_seconds_total",
                        "counter",
                        "Time busy polling found nothing to do (at most the time spent serving).",
                        poll.idle_polling().as_secs_f64(),
                    );
                }
            }
            if let Some(cache) = &http_cache {
                cache.metrics().render(out);
            }
        });
        let mut stop = stop_rx.clone();
        servers.spawn(async move {
            let shutdown = async move {
                let _ = stop.wait_for(|s| *s).await;
            };
            server::admin::serve_admin(listener, metrics, shutdown).await
        });
    }
    if servers.is_empty() {
        tracing::warn!("every listener is off; serving nothing until stopped");
    }
    tracing::info!(data_dir = %data_dir.display(), "tiercache ready");
    // A listener that ends by itself failed (e.g. a damaged functions
    // file at start): the process stops with its error.
    let failed = tokio::select! {
        _ = stop_signal.wait() => None,
        _ = shutdown_request.notified() => None,
        Some(r) = servers.join_next(), if !servers.is_empty() => Some(match r {
            Ok(Ok(())) => "a listener stopped".to_string(),
            Ok(Err(e)) => e.to_string(),
            Err(e) => e.to_string(),
        }),
    };
    if let Some(e) = &failed {
        tracing::error!(error = %e, "listener failed");
    }
    tracing::info!("shutting down: no new connections, finishing in-flight requests");
    let _ = stop_tx.send(true);
    while let Some(r) = servers.join_next().await {
        match r {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!(error = %e, "listener failed"),
            Err(e) => tracing::error!(error = %e, "listener task failed"),
        }
    }
    tracing::info!("flushing write-back data");
    engine.shutdown().await.map_err(|e| e.to_string())?;
    if let Some(e) = failed {
        return Err(format!("a listener failed: {e}"));
    }
    tracing::info!("stopped cleanly");
    Ok(())
}

/// SIGTERM or SIGINT.
pub(crate) struct StopSignal {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl StopSignal {
    pub(crate) fn install() -> std::io::Result<StopSignal> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(StopSignal {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    pub(crate) async fn wait(mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.int.recv() => {}
        }
    }
}
