//! `tiercache bench`: the benchmark lab and trace replays.
//!
//! `tiercache bench [SCENARIO ...] [--quick] [--out DIR] [--require]` runs
//! the lab's scenarios (`tiercache-lab`: stores, stations, pages,
//! microcache, sharding, batch; all six when none is named), prints their
//! tables and writes `DIR/results.json` and `DIR/report.html`.
//!
//! `tiercache bench trace --trace FILE --format cache2k|arc --capacity N[,N...] [--json]`
//! replays a trace file through tiercache's in-process cache
//! (`tiercache-cache`), once per capacity, each time on a fresh cache: `get`,
//! and on a miss `insert` with weight 1. The cache has one shard, so the
//! eviction policy sees the whole capacity (the replay is single-threaded).
//! The trace machinery is `tiercache-lab`.

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Subcommand};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use tiercache_lab::{
    load_trace, replay, run_lab, LabOptions, ReplayResult, Scenario, TierCache, TraceFormat,
};

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BenchArgs {
    #[command(subcommand)]
    command: Option<BenchCommand>,
    #[command(flatten)]
    lab: LabArgs,
}

/// The lab's arguments (no subcommand).
#[derive(Args)]
struct LabArgs {
    /// Scenarios to run: stores, stations, pages, microcache, sharding, batch (default: all six).
    #[arg(value_name = "SCENARIO", value_parser = clap::value_parser!(String))]
    scenarios: Vec<String>,
    /// Smaller data and shorter runs: all six scenarios in under 3 minutes.
    #[arg(long)]
    quick: bool,
    /// Where to write results.json and report.html.
    #[arg(long, value_name = "DIR", default_value = "bench-results")]
    out: PathBuf,
    /// Fail when a setup cannot run (its server is not installed) instead of showing `not installed`.
    #[arg(long)]
    require: bool,
    /// Directory holding stations.csv (default: ../shared/data, else ./data).
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
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
        Some(BenchCommand::Trace(args)) => trace(&args),
        None => lab(args.lab),
    }
}

fn lab(args: LabArgs) -> ExitCode {
    let mut scenarios = Vec::new();
    for name in &args.scenarios {
        match name.parse::<Scenario>() {
            Ok(s) if !scenarios.contains(&s) => scenarios.push(s),
            Ok(_) => {}
            Err(e) => {
                eprintln!("tiercache bench: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let data_dir = args.data.unwrap_or_else(|| {
        ["../shared/data", "data"]
            .iter()
            .map(PathBuf::from)
            .find(|d| d.join("stations.csv").is_file())
            .unwrap_or_else(|| PathBuf::from("../shared/data"))
    });
    let options = LabOptions {
        quick: args.quick,
        require: args.require,
        data_dir,
        progress: std::io::stderr().is_terminal(),
    };
    match run_lab(options, &scenarios, &args.out) {
        Ok(results) => {
            println!(
                "\n{} scenarios in {:.1} s; wrote {} and {}",
                results.scenarios.len(),
                results.elapsed_s,
                args.out.join("results.json").display(),
                args.out.join("report.html").display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("tiercache bench: {e}");
            ExitCode::FAILURE
        }
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
