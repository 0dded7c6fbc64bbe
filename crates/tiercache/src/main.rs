//! The `tiercache` command line: `serve`, `proxy` and `check-config` (SPEC "Command line"),
//! and `bench` (the benchmark lab and `bench trace`).

mod allocator;
mod bench;
mod proxy;
mod serve;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// mimalloc instead of glibc malloc: a pipelined batch allocates and frees
/// many small buffers, and glibc's `malloc_consolidate` (run on the first
/// larger allocation after small frees) took 4% of a SET-bound server
/// (`perf`, redis-benchmark -P 16). Redis ships with jemalloc for the same
/// reason. Measured: +10% SET -P 16 against the glibc build on a busy
/// machine, within noise on an idle one. The memory tier's bound counts its
/// own bytes, not the allocator's, so this changes no accounting. See
/// [`allocator`] for why not `mimalloc::MiMalloc` itself.
#[global_allocator]
static GLOBAL: allocator::MiMalloc = allocator::MiMalloc;

#[derive(Parser)]
#[command(
    name = "tiercache",
    version,
    about = "A tiered cache: memory tier over pluggable stores, spoken to over the Redis and memcached protocols, or put in front of an HTTP origin."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server (RESP on 127.0.0.1:6380, SQLite at DATA_DIR/tiercache.db, write-back).
    Serve(serve::ServeArgs),
    /// Run the HTTP micro-cache (RFC 9111 reverse proxy) in front of --upstream, on 127.0.0.1:8380.
    Proxy(proxy::ProxyArgs),
    /// Validate a configuration file: exit 0, or exit 2 naming the file, line and field.
    CheckConfig {
        /// The TOML file to check.
        file: PathBuf,
    },
    /// The benchmark lab (`bench [SCENARIO...] [--quick] [--out DIR]`); `bench trace` replays a cache trace.
    Bench(bench::BenchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => serve::run(args),
        Command::Proxy(args) => proxy::run(args),
        Command::CheckConfig { file } => check_config(&file),
        Command::Bench(args) => bench::run(args),
    }
}

fn check_config(file: &std::path::Path) -> ExitCode {
    let config = match tiercache::config::load(file) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = tiercache::check_supported(&config) {
        eprintln!("{}: {e}", file.display());
        return ExitCode::from(2);
    }
    println!(
        "{}: OK ({} namespaces, {} stores)",
        file.display(),
        config.namespaces().len(),
        config.stores.len()
    );
    ExitCode::SUCCESS
}
