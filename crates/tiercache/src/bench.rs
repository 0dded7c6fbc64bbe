//! `tiercache bench`: measurements run from the command line, a subcommand
//! group (issue 7 adds `bench stores` and others later).
//!
//! `tiercache bench trace --trace FILE --format cache2k|arc --capacity N[,N...] [--json]`
//! replays a trace file through tiercache's in-process cache
//! (`tiercache-cache`), once per capacity, each time on a fresh cache: `get`,
//! and on a miss `insert` with weight 1. The cache has one shard, so the
//! eviction policy sees the whole capacity (the replay is single-threaded).
//! The trace machinery is `tiercache-lab`.

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use tiercache_lab::{load_trace, replay, ReplayResult, TierCache, TraceFormat};

#[derive(Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    command: BenchCommand,
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Replay a trace file through the in-process cache at each capacity: hit ratio and ops/s.
    Trace(TraceArgs),
}

#[derive(Args)]
struct TraceArgs {
    /// The trace file (decompressed on the fly if its name ends in .xz).
    #[arg(long, value_name = "FILE")]
    trace: PathBuf,
    /// cache2k: big-endian u32 keys; arc: text lines "start count ...".
    #[arg(
        long,
        value_name = "FORMAT",
        value_parser = PossibleValuesParser::new(["cache2k", "arc"])
            .map(|s| s.parse::<TraceFormat>().expect("listed format"))
    )]
    format: TraceFormat,
    /// Cache capacities in entries, comma-separated; one replay each.
    #[arg(
        long,
        value_name = "N[,N...]",
        required = true,
        value_delimiter = ',',
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    capacity: Vec<u64>,
    /// Print only a JSON array of {capacity, hit_ratio, ops_per_sec} on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(args: BenchArgs) -> ExitCode {
    match args.command {
        BenchCommand::Trace(args) => trace(&args),
    }
}

fn trace(args: &TraceArgs) -> ExitCode {
    let trace = match load_trace(&args.trace, args.format) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("tiercache: {e}");
            return ExitCode::from(2);
        }
    };
    let results: Vec<ReplayResult> = args
        .capacity
        .iter()
        .map(|&capacity| {
            replay(
                &mut TierCache::with_shards(capacity, 1),
                &trace.keys,
                capacity,
            )
        })
        .collect();
    if args.json {
        let rows: Vec<serde_json::Value> = results
            .iter()
            .map(|r| {
                serde_json::json!({
                    "capacity": r.capacity,
                    "hit_ratio": r.hit_ratio(),
                    "ops_per_sec": r.ops_per_sec(),
                })
            })
            .collect();
        println!("{}", serde_json::Value::Array(rows));
    } else {
        println!(
            "trace {} ({}): {} requests, {} distinct keys",
            trace.name,
            args.format,
            trace.keys.len(),
            trace.distinct_keys()
        );
        println!("{:>10}  {:>9}  {:>14}", "capacity", "hit ratio", "ops/s");
        for r in &results {
            println!(
                "{:>10}  {:>8.2}%  {:>14.0}",
                r.capacity,
                r.hit_ratio() * 100.0,
                r.ops_per_sec()
            );
        }
    }
    ExitCode::SUCCESS
}
