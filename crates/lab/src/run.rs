//! [`run_lab`]: runs the chosen scenarios in order, then writes
//! `DIR/results.json` and `DIR/report.html` and prints the tables.

use crate::report;
use crate::{scenarios, Ctx, LabOptions, Scenario, ScenarioReport};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Why a lab run failed.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// A scenario is not built yet.
    #[error("scenario `{0}` is not built yet")]
    NotBuilt(&'static str),
    /// A scenario could not complete.
    #[error("{scenario}: {message}")]
    Scenario {
        /// The scenario.
        scenario: &'static str,
        /// What went wrong.
        message: String,
    },
    /// `--require` was given and some setups could not run.
    #[error("--require: {0}")]
    Required(String),
    /// Writing the output failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

impl LabError {
    /// A scenario-level failure with a message.
    pub fn scenario(scenario: Scenario, message: impl std::fmt::Display) -> LabError {
        LabError::Scenario {
            scenario: scenario.name(),
            message: message.to_string(),
        }
    }
}

/// Everything one run measured: what `results.json` holds.
#[derive(Debug, Serialize)]
pub struct LabResults {
    /// The machine it ran on.
    pub machine: report::Machine,
    /// Versions of tiercache and of every peer server found.
    pub versions: Vec<(String, String)>,
    /// Run-wide parameters (`quick`, the command line).
    pub parameters: serde_json::Map<String, serde_json::Value>,
    /// Wall time of the whole run, in seconds.
    pub elapsed_s: f64,
    /// One report per scenario, in run order.
    pub scenarios: Vec<ScenarioReport>,
}

/// Runs `which` (all six when empty) and writes the results into `out`.
/// Tables go to stdout as each scenario finishes.
pub fn run_lab(
    options: LabOptions,
    which: &[Scenario],
    out: &Path,
) -> Result<LabResults, LabError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| LabError::Io { path, source }
    };
    std::fs::create_dir_all(out).map_err(io(out))?;
    let which: Vec<Scenario> = if which.is_empty() {
        Scenario::ALL.to_vec()
    } else {
        which.to_vec()
    };
    let started = Instant::now();
    let require = options.require;
    let quick = options.quick;
    let mut ctx = Ctx::new(options).map_err(io(out))?;
    let mut reports = Vec::new();
    for scenario in which {
        let t = Instant::now();
        let mut report = scenarios::run(scenario, &mut ctx)?;
        report.elapsed_s = t.elapsed().as_secs_f64();
        println!("{}", report::table::render(&report));
        reports.push(report);
    }
    ctx.stop_servers();
    let mut parameters = serde_json::Map::new();
    parameters.insert("quick".into(), quick.into());
    parameters.insert("require".into(), require.into());
    parameters.insert(
        "command".into(),
        std::env::args().collect::<Vec<_>>().join(" ").into(),
    );
    let results = LabResults {
        machine: report::Machine::detect(),
        versions: report::versions(),
        parameters,
        elapsed_s: started.elapsed().as_secs_f64(),
        scenarios: reports,
    };
    let json = out.join("results.json");
    let text = serde_json::to_string_pretty(&results).expect("results serialise");
    std::fs::write(&json, text).map_err(io(&json))?;
    let html = out.join("report.html");
    std::fs::write(&html, report::html::render(&results)).map_err(io(&html))?;
    if require {
        let missing: Vec<String> = results
            .scenarios
            .iter()
            .flat_map(|s| {
                s.skipped
                    .iter()
                    .map(move |k| format!("{}/{}: {}", s.name, k.setup, k.reason))
            })
            .collect();
        if !missing.is_empty() {
            return Err(LabError::Required(missing.join("; ")));
        }
    }
    Ok(results)
}
