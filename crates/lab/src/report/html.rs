//! `report.html`: one self-contained page (inline CSS, inline SVG, no
//! scripts, nothing fetched) with, per scenario, its parameters, the same
//! tables as the terminal and its charts.

use super::table::{format_value, metrics, setups};
use crate::{LabResults, ScenarioReport};
use std::fmt::Write;

/// Escapes text for HTML.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The whole report.
pub fn render(results: &LabResults) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>tiercache bench</title><style>{}</style></head><body>\n",
        STYLE
    );
    let _ = writeln!(out, "<h1>tiercache bench</h1>");
    let m = &results.machine;
    let _ = writeln!(
        out,
        "<p class=\"machine\">{} · {} × {} · {} MiB · load {} · {:.1} s{}</p>",
        escape(&m.os),
        m.cpus,
        escape(&m.cpu),
        m.memory_mib,
        m.load_average.map_or("?".into(), |l| format!("{l:.2}")),
        results.elapsed_s,
        if results.parameters.get("quick").and_then(|v| v.as_bool()) == Some(true) {
            " · --quick"
        } else {
            ""
        }
    );
    let _ = writeln!(out, "<details><summary>versions</summary><ul>");
    for (name, version) in &results.versions {
        let _ = writeln!(out, "<li><b>{}</b>: {}</li>", escape(name), escape(version));
    }
    let _ = writeln!(out, "</ul></details>");
    for s in &results.scenarios {
        scenario(&mut out, s);
    }
    out.push_str("</body></html>\n");
    out
}

fn scenario(out: &mut String, s: &ScenarioReport) {
    let _ = writeln!(
        out,
        "<section><h2 id=\"{0}\">{0}</h2><p>{1} · {2:.1} s</p>",
        escape(&s.name),
        escape(&s.reproduces),
        s.elapsed_s
    );
    if !s.parameters.is_empty() {
        let params: Vec<String> = s
            .parameters
            .iter()
            .map(|(k, v)| format!("{}={}", escape(k), escape(&v.to_string())))
            .collect();
        let _ = writeln!(out, "<p class=\"params\">{}</p>", params.join(" · "));
    }
    table(out, s);
    for chart in &s.charts {
        let _ = writeln!(out, "<figure>{}</figure>", super::svg::render(chart));
    }
    for note in &s.notes {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(note));
    }
    out.push_str("</section>\n");
}

fn table(out: &mut String, s: &ScenarioReport) {
    let metrics = metrics(s);
    let base = s.baseline.as_deref();
    out.push_str("<table><tr><th>setup</th>");
    for (m, u) in &metrics {
        let _ = write!(out, "<th>{} ({})</th>", escape(m), escape(u));
        if base.is_some() {
            let _ = write!(out, "<th>%</th>");
        }
    }
    out.push_str("</tr>\n");
    for setup in setups(s) {
        let _ = write!(out, "<tr><td>{}</td>", escape(&setup));
        for (m, _) in &metrics {
            let v = s.value(&setup, m);
            let _ = write!(out, "<td>{}</td>", v.map_or("-".into(), format_value));
            if let Some(b) = base {
                let pct = match (v, s.value(b, m)) {
                    (Some(v), Some(b)) if b != 0.0 => format!("{:.0}%", v / b * 100.0),
                    _ => "-".into(),
                };
                let _ = write!(out, "<td>{pct}</td>");
            }
        }
        out.push_str("</tr>\n");
    }
    let span = 1 + metrics.len() * if base.is_some() { 2 } else { 1 };
    for k in &s.skipped {
        let _ = writeln!(
            out,
            "<tr class=\"skipped\"><td>{}</td><td colspan=\"{}\">{}</td></tr>",
            escape(&k.setup),
            span - 1,
            escape(&k.reason)
        );
    }
    out.push_str("</table>\n");
}

const STYLE: &str = "body{font-family:sans-serif;max-width:860px;margin:2em auto;color:#222}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}\
td:first-child,th:first-child{text-align:left}tr.skipped td{color:#888;text-align:left}\
.machine,.params{color:#555;font-size:90%}.note{font-style:italic}figure{margin:1em 0}";
