//! Rendering a run: terminal tables ([`table`]), the self-contained HTML
//! report with one SVG chart per scenario chart ([`html`], [`svg`]), and the
//! facts about the machine and the peers' versions that `results.json`
//! carries ([`Machine`], [`versions`]).

pub mod html;
pub mod svg;
pub mod table;

use serde::Serialize;
use std::process::Command;

/// The machine a run measured.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// `uname -srm`-like description of the OS.
    pub os: String,
    /// CPU model name, from `/proc/cpuinfo`.
    pub cpu: String,
    /// Logical CPUs available to the process.
    pub cpus: usize,
    /// Total memory in MiB, from `/proc/meminfo`.
    pub memory_mib: u64,
    /// 1-minute load average when the run ended (a busy machine skews numbers).
    pub load_average: Option<f64>,
}

impl Machine {
    /// Reads the facts from `/proc` (Linux); unknown elsewhere.
    pub fn detect() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split(':').nth(1))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let memory_mib = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                m.lines()
                    .find(|l| l.starts_with("MemTotal:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|kb| kb.parse::<u64>().ok())
            })
            .map(|kb| kb / 1024)
            .unwrap_or(0);
        let load_average = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|l| l.split_whitespace().next().and_then(|v| v.parse().ok()));
        let os =
            command_output("uname", &["-srm"]).unwrap_or_else(|| std::env::consts::OS.to_string());
        Machine {
            os,
            cpu,
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_mib,
            load_average,
        }
    }
}

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    let text = if out.stdout.is_empty() {
        out.stderr
    } else {
        out.stdout
    };
    let line = String::from_utf8_lossy(&text)
        .lines()
        .next()?
        .trim()
        .to_string();
    (!line.is_empty()).then_some(line)
}

/// `(program, version line)` for tiercache and every peer found on this
/// machine; a missing peer is listed as `not installed`.
pub fn versions() -> Vec<(String, String)> {
    let sbin = ["/usr/sbin", "/sbin", "/usr/local/sbin"];
    let find = |name: &str| tiercache_testkit::find_tool(name, &sbin);
    let mut out = vec![(
        "tiercache".to_string(),
        env!("CARGO_PKG_VERSION").to_string(),
    )];
    let peers: [(&str, &[&str]); 6] = [
        ("redis-server", &["--version"]),
        ("memcached", &["-V"]),
        ("mariadbd", &["--version"]),
        ("nginx", &["-v"]),
        ("sqlite3", &["--version"]),
        ("psql", &["--version"]),
    ];
    for (name, args) in peers {
        let version = find(name)
            .and_then(|path| command_output(path.to_str()?, args))
            .unwrap_or_else(|| "not installed".to_string());
        out.push((name.to_string(), version));
    }
    out.push((
        "sqlite (embedded)".to_string(),
        rusqlite::version().to_string(),
    ));
    out
}
