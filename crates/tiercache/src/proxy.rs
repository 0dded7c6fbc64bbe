//! `tiercache proxy`: the HTTP micro-cache alone (no RESP or memcached
//! listener), responses stored in the tiers the configuration gives
//! (`[http_cache] tiers`, else the default namespace: memory + SQLite at
//! `DATA_DIR/tiercache.db`). Stops cleanly on SIGTERM/SIGINT: stops
//! accepting, lets in-flight requests finish, flushes the engine.

use crate::serve::{resolve_tcp, StopSignal};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use tiercache::config::{Config, ListenAddr};

#[derive(Args)]
pub struct ProxyArgs {
    /// The origin, http://host:port (overrides [http_cache] upstream).
    #[arg(long)]
    upstream: Option<String>,
    /// Listen address, host:port (default 127.0.0.1:8380 or [http_cache] listen).
    #[arg(long)]
    listen: Option<String>,
    /// Configuration file (TOML); without it, SPEC defaults apply.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Directory for the SQLite file and write-back journals.
    #[arg(long, default_value = "./tiercache-data")]
    data_dir: PathBuf,
}

pub fn run(args: ProxyArgs) -> ExitCode {
    crate::serve::init_logging();
    let (config, proxy_config) = match load(&args) {
        Ok(c) => c,
        Err(msg) => {
            eprintln!("tiercache: {msg}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("tiercache: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(proxy(config, proxy_config, args.data_dir)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("tiercache: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn load(args: &ProxyArgs) -> Result<(Config, tiercache::http_cache::ProxyConfig), String> {
    let mut config = match &args.config {
        Some(path) => tiercache::config::load(path).map_err(|e| e.to_string())?,
        None => Config::default(),
    };
    if let Some(l) = &args.listen {
        config.http_cache.listen = l.parse().map_err(|e| format!("--listen {l}: {e}"))?;
    }
    if let Some(u) = &args.upstream {
        if !u.starts_with("http://") {
            return Err(format!("--upstream {u}: expected an http://host:port URL"));
        }
    }
    tiercache::check_supported(&config).map_err(|e| e.to_string())?;
    let proxy_config = tiercache::proxy_config(&config.http_cache, args.upstream.as_deref())?;
    Ok((config, proxy_config))
}

async fn proxy(
    config: Config,
    proxy_config: tiercache::http_cache::ProxyConfig,
    data_dir: PathBuf,
) -> Result<(), String> {
    let stop_signal =
        StopSignal::install().map_err(|e| format!("cannot install signal handlers: {e}"))?;
    let addr = match &config.http_cache.listen {
        ListenAddr::Off => return Err("the HTTP cache listener is off; nothing to do".into()),
        ListenAddr::Unix(p) => {
            return Err(format!(
                "unix:{}: the HTTP cache listens on TCP only",
                p.display()
            ))
        }
        tcp => resolve_tcp(tcp)?,
    };
    std::fs::create_dir_all(&data_dir)
        .map_err(|e| format!("cannot create data dir {}: {e}", data_dir.display()))?;
    let engine = Arc::new(
        tiercache::open_engine(&config, &data_dir)
            .await
            .map_err(|e| e.to_string())?,
    );
    let cache = tiercache::http_cache::HttpCache::new(engine.clone(), proxy_config)
        .map_err(|e| e.to_string())?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    tracing::info!(data_dir = %data_dir.display(), "tiercache proxy ready");
    let result = tiercache::http_cache::serve(listener, cache, stop_signal.wait()).await;
    tracing::info!("flushing the cache's write-back data");
    let flushed = engine.shutdown().await;
    result.map_err(|e| format!("HTTP cache failed: {e}"))?;
    flushed.map_err(|e| e.to_string())?;
    tracing::info!("stopped cleanly");
    Ok(())
}
