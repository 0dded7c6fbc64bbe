//! What a scenario of `tiercache bench` produces: [`ScenarioReport`] (rows,
//! percentiles, setups that could not run, charts), and the [`Scenario`]
//! names themselves.
//!
//! Every number a scenario measures ends up as a [`Row`]
//! `{setup, metric, unit, value}`; the terminal tables, `results.json` and the
//! HTML report are all rendered from these values, never from separate copies.

use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// The six scenarios of the lab, each reproducing one seed document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scenario {
    /// Seed 001: a read-modify-write analysis pass over key/value stores, with
    /// and without a write-back RAM tier in front.
    Stores,
    /// Seed 000 (iRail): station lookups by id and by name.
    Stations,
    /// Seed 004 (CMS): Zipf-popular pages over HTTP.
    Pages,
    /// Seed 002: micro-caching a slow origin.
    Microcache,
    /// Seed 003 (Sphinx): a bucket store, buckets × clients.
    Sharding,
    /// Seed 003 (MySQL multi-select): batched SQL lookups.
    Batch,
}

impl Scenario {
    /// All scenarios, in the order `tiercache bench` runs them.
    pub const ALL: [Scenario; 6] = [
        Scenario::Stores,
        Scenario::Stations,
        Scenario::Pages,
        Scenario::Microcache,
        Scenario::Sharding,
        Scenario::Batch,
    ];

    /// The name on the command line and in `results.json`.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Stores => "stores",
            Scenario::Stations => "stations",
            Scenario::Pages => "pages",
            Scenario::Microcache => "microcache",
            Scenario::Sharding => "sharding",
            Scenario::Batch => "batch",
        }
    }

    /// One line: which seed it reproduces.
    pub fn reproduces(self) -> &'static str {
        match self {
            Scenario::Stores => "seed 001: RAM cache over key/value stores",
            Scenario::Stations => "seed 000: iRail station lookups",
            Scenario::Pages => "seed 004: CMS pages, DB vs Redis vs in-process cache",
            Scenario::Microcache => "seed 002: nginx micro-caching of a slow API",
            Scenario::Sharding => "seed 003: Sphinx distributed index, parts × clients",
            Scenario::Batch => "seed 003: MySQL multi-select (single, OR, IN, temp table)",
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Scenario {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Scenario::ALL
            .into_iter()
            .find(|sc| sc.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Scenario::ALL.iter().map(|s| s.name()).collect();
                format!(
                    "unknown scenario `{s}` (expected one of: {})",
                    names.join(", ")
                )
            })
    }
}

/// One measured value.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Row {
    /// The setup measured, e.g. `redis-tcp+ram` or `sqlite`.
    pub setup: String,
    /// What was measured, e.g. `seconds`, `liveboard_p50`, `req_per_sec`.
    pub metric: String,
    /// Its unit, e.g. `s`, `ms`, `req/s`.
    pub unit: String,
    /// The value.
    pub value: f64,
}

impl Row {
    /// A row.
    pub fn new(
        setup: impl Into<String>,
        metric: impl Into<String>,
        unit: impl Into<String>,
        value: f64,
    ) -> Row {
        Row {
            setup: setup.into(),
            metric: metric.into(),
            unit: unit.into(),
            value,
        }
    }
}

/// A latency distribution of one setup (from an `hdrhistogram`), the raw
/// percentiles `results.json` carries beside the rows.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Percentiles {
    /// The setup measured.
    pub setup: String,
    /// What the samples are, e.g. `request_latency`.
    pub metric: String,
    /// Unit of the values below (`ms`).
    pub unit: String,
    /// Number of samples.
    pub samples: u64,
    /// `(percentile, value)` pairs, e.g. `(50.0, 0.21)`, `(99.0, 1.3)`,
    /// `(100.0, max)`; the shape `ab` prints.
    pub values: Vec<(f64, f64)>,
}

impl Percentiles {
    /// The percentiles `ab` prints (50, 66, 75, 80, 90, 95, 98, 99, 100)
    /// plus 99.9, of a histogram recorded in microseconds, reported in ms.
    pub fn from_histogram_us(
        setup: impl Into<String>,
        metric: impl Into<String>,
        hist: &hdrhistogram::Histogram<u64>,
    ) -> Percentiles {
        let values = [50.0, 66.0, 75.0, 80.0, 90.0, 95.0, 98.0, 99.0, 99.9, 100.0]
            .into_iter()
            .map(|q| (q, hist.value_at_quantile(q / 100.0) as f64 / 1000.0))
            .collect();
        Percentiles {
            setup: setup.into(),
            metric: metric.into(),
            unit: "ms".into(),
            samples: hist.len(),
            values,
        }
    }

    /// The value at percentile `q` (one of those recorded), if present.
    pub fn at(&self, q: f64) -> Option<f64> {
        self.values
            .iter()
            .find(|(p, _)| (*p - q).abs() < 1e-9)
            .map(|&(_, v)| v)
    }
}

/// A setup that did not run, and why (`not installed: redis-server`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Skipped {
    /// The setup.
    pub setup: String,
    /// Why, e.g. `not installed (redis-server)`.
    pub reason: String,
}

/// A chart of the HTML report, drawn as SVG.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Chart {
    /// Title above the chart.
    pub title: String,
    /// Unit or label of the value axis.
    pub value_label: String,
    /// Whether smaller values are better (time) or larger (throughput):
    /// the report says which way is better.
    pub lower_is_better: bool,
    /// What to draw.
    pub kind: ChartKind,
}

/// The two chart shapes the lab draws.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ChartKind {
    /// One bar per `(label, value)`, in order.
    Bars {
        /// The bars.
        bars: Vec<(String, f64)>,
    },
    /// Lines over a numeric x axis (e.g. keys per query, buckets).
    Lines {
        /// Label of the x axis.
        x_label: String,
        /// Logarithmic x axis.
        x_log: bool,
        /// Logarithmic y axis.
        y_log: bool,
        /// Each line: a label and its `(x, y)` points.
        series: Vec<(String, Vec<(f64, f64)>)>,
    },
}

/// Everything one scenario measured.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ScenarioReport {
    /// The scenario's name (`stores`, ...).
    pub name: String,
    /// Which seed it reproduces.
    pub reproduces: String,
    /// Parameters the run used (sizes, durations, concurrency), for
    /// `results.json`; `--quick` changes some of them.
    pub parameters: serde_json::Map<String, serde_json::Value>,
    /// The setup the tables express percentages against (the seed's
    /// baseline: `null`, `csv-scan`, `direct`, ...), if any.
    pub baseline: Option<String>,
    /// The measurements.
    pub rows: Vec<Row>,
    /// Raw latency percentiles, per setup, where measured.
    pub percentiles: Vec<Percentiles>,
    /// Setups that did not run.
    pub skipped: Vec<Skipped>,
    /// Charts for the HTML report (at least one).
    pub charts: Vec<Chart>,
    /// Remarks worth printing under the table (e.g. a bar met or missed).
    pub notes: Vec<String>,
    /// Wall time the scenario took, in seconds.
    pub elapsed_s: f64,
}

impl ScenarioReport {
    /// An empty report for `scenario`.
    pub fn new(scenario: Scenario) -> ScenarioReport {
        ScenarioReport {
            name: scenario.name().to_string(),
            reproduces: scenario.reproduces().to_string(),
            parameters: serde_json::Map::new(),
            baseline: None,
            rows: Vec::new(),
            percentiles: Vec::new(),
            skipped: Vec::new(),
            charts: Vec::new(),
            notes: Vec::new(),
            elapsed_s: 0.0,
        }
    }

    /// Records a parameter.
    pub fn param(&mut self, name: &str, value: impl Into<serde_json::Value>) {
        self.parameters.insert(name.to_string(), value.into());
    }

    /// Records a row.
    pub fn row(&mut self, setup: &str, metric: &str, unit: &str, value: f64) {
        self.rows.push(Row::new(setup, metric, unit, value));
    }

    /// The value of `metric` for `setup`, if measured.
    pub fn value(&self, setup: &str, metric: &str) -> Option<f64> {
        self.rows
            .iter()
            .find(|r| r.setup == setup && r.metric == metric)
            .map(|r| r.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_names_round_trip_and_unknown_names_are_listed() {
        for s in Scenario::ALL {
            assert_eq!(s.name().parse::<Scenario>(), Ok(s));
        }
        let err = "disk".parse::<Scenario>().unwrap_err();
        assert!(err.contains("unknown scenario `disk`"), "{err}");
        assert!(err.contains("microcache"), "{err}");
    }

    #[test]
    fn percentiles_come_from_the_histogram_in_milliseconds() {
        let mut h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
        for us in 1..=1000u64 {
            h.record(us).unwrap();
        }
        let p = Percentiles::from_histogram_us("s", "latency", &h);
        assert_eq!(p.samples, 1000);
        let p50 = p.at(50.0).unwrap();
        assert!((p50 - 0.5).abs() < 0.01, "{p50}");
        let max = p.at(100.0).unwrap();
        assert!((max - 1.0).abs() < 0.01, "{max}");
    }
}
