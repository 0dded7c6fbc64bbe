//! Terminal tables shaped like the seeds': one row per setup, one column per
//! metric; when the scenario has a baseline, a second table gives every
//! value as a percentage of the baseline's (iRail's "% of normal").

use crate::ScenarioReport;
use std::fmt::Write;

/// Setups in the order their first row was recorded, then skipped ones.
pub(crate) fn setups(report: &ScenarioReport) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in &report.rows {
        if !out.contains(&r.setup) {
            out.push(r.setup.clone());
        }
    }
    out
}

/// `(metric, unit)` in the order first recorded.
pub(crate) fn metrics(report: &ScenarioReport) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for r in &report.rows {
        if !out.iter().any(|(m, _)| *m == r.metric) {
            out.push((r.metric.clone(), r.unit.clone()));
        }
    }
    out
}

/// A number with about four significant digits.
pub(crate) fn format_value(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else if a >= 0.01 {
        format!("{v:.3}")
    } else {
        format!("{v:.5}")
    }
}

/// The scenario's tables as text.
pub fn render(report: &ScenarioReport) -> String {
    let setups = setups(report);
    let metrics = metrics(report);
    let mut headers = vec!["setup".to_string()];
    headers.extend(metrics.iter().map(|(m, u)| format!("{m} ({u})")));
    let cell = |setup: &str, metric: &str, pct: bool| -> String {
        let Some(v) = report.value(setup, metric) else {
            return "-".into();
        };
        if !pct {
            return format_value(v);
        }
        match report
            .baseline
            .as_deref()
            .and_then(|b| report.value(b, metric))
        {
            Some(base) if base != 0.0 => format!("{:.0}%", v / base * 100.0),
            _ => "-".into(),
        }
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n== {} — {} ({:.1} s)",
        report.name, report.reproduces, report.elapsed_s
    );
    let mut tables = vec![false];
    if report.baseline.is_some() {
        tables.push(true);
    }
    for pct in tables {
        let mut lines: Vec<Vec<String>> = vec![headers.clone()];
        for s in &setups {
            let mut line = vec![s.clone()];
            line.extend(metrics.iter().map(|(m, _)| cell(s, m, pct)));
            lines.push(line);
        }
        for k in &report.skipped {
            let mut line = vec![k.setup.clone(), k.reason.clone()];
            line.resize((metrics.len() + 1).max(2), String::new());
            lines.push(line);
        }
        if pct {
            let _ = writeln!(out, "\n% of {}:", report.baseline.as_deref().unwrap_or(""));
        }
        write_aligned(
            &mut out,
            &lines,
            &report
                .skipped
                .iter()
                .map(|k| k.setup.as_str())
                .collect::<Vec<_>>(),
        );
    }
    for note in &report.notes {
        let _ = writeln!(out, "note: {note}");
    }
    out
}

fn write_aligned(out: &mut String, lines: &[Vec<String>], free_text: &[&str]) {
    let columns = lines.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0usize; columns];
    for line in lines {
        // A skipped setup's reason spans the row; it does not widen a column.
        if free_text.contains(&line[0].as_str()) {
            widths[0] = widths[0].max(line[0].chars().count());
            continue;
        }
        for (i, c) in line.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    for (n, line) in lines.iter().enumerate() {
        let mut text = String::new();
        for (i, c) in line.iter().enumerate() {
            if i == 0 {
                let _ = write!(text, "{c:<w$}", w = widths[0]);
            } else {
                let _ = write!(text, "  {c:>w$}", w = widths[i]);
            }
        }
        let _ = writeln!(out, "{}", text.trim_end());
        if n == 0 {
            let total: usize = widths.iter().sum::<usize>() + 2 * columns.saturating_sub(1);
            let _ = writeln!(out, "{}", "-".repeat(total));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Scenario, Skipped};

    #[test]
    fn table_has_absolute_and_percent_of_baseline_and_not_installed_rows() {
        let mut r = ScenarioReport::new(Scenario::Stations);
        r.baseline = Some("csv-scan".into());
        r.row("csv-scan", "single_ms", "ms", 10.0);
        r.row("tiercache", "single_ms", "ms", 0.5);
        r.skipped.push(Skipped {
            setup: "mysql".into(),
            reason: "not installed (mariadb-server)".into(),
        });
        let text = render(&r);
        assert!(text.contains("single_ms (ms)"), "{text}");
        assert!(text.contains("% of csv-scan"), "{text}");
        assert!(text.contains("100%"), "{text}");
        assert!(text.contains("5%"), "{text}");
        assert!(text.contains("not installed (mariadb-server)"), "{text}");
    }
}
