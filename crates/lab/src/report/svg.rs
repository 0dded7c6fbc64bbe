//! One [`Chart`] as an SVG string (plotters' SVG backend): horizontal bars
//! for setups side by side, lines over a numeric axis (log or linear) for
//! grids and sweeps.

use crate::{Chart, ChartKind};
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

const WIDTH: u32 = 760;

/// The chart as a standalone `<svg>` element.
pub fn render(chart: &Chart) -> String {
    let mut svg = String::new();
    let drawn = match &chart.kind {
        ChartKind::Bars { bars } => bars_svg(&mut svg, chart, bars),
        ChartKind::Lines {
            x_label,
            x_log,
            y_log,
            series,
        } => lines_svg(&mut svg, chart, x_label, *x_log, *y_log, series),
    };
    match drawn {
        Ok(()) => svg,
        Err(e) => format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"40\"><text x=\"10\" y=\"25\">chart failed: {}</text></svg>",
            super::html::escape(&e)
        ),
    }
}

fn better(chart: &Chart) -> &'static str {
    if chart.lower_is_better {
        "lower is better"
    } else {
        "higher is better"
    }
}

fn bars_svg(svg: &mut String, chart: &Chart, bars: &[(String, f64)]) -> Result<(), String> {
    let n = bars.len().max(1);
    let height = 70 + 26 * n as u32;
    let root = SVGBackend::with_string(svg, (WIDTH, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let max = bars
        .iter()
        .map(|b| b.1)
        .fold(0.0f64, f64::max)
        .max(f64::MIN_POSITIVE)
        * 1.18;
    let label_width = bars.iter().map(|b| b.0.len()).max().unwrap_or(4) as u32 * 7 + 12;
    let mut c = ChartBuilder::on(&root)
        .caption(&chart.title, ("sans-serif", 16))
        .margin(8)
        .x_label_area_size(30)
        .y_label_area_size(label_width)
        .build_cartesian_2d(0f64..max, (0..n).into_segmented())
        .map_err(|e| e.to_string())?;
    c.configure_mesh()
        .disable_y_mesh()
        .x_desc(format!("{} ({})", chart.value_label, better(chart)))
        .y_labels(n)
        .y_label_formatter(&|y| match y {
            SegmentValue::CenterOf(i) => bars.get(*i).map(|b| b.0.clone()).unwrap_or_default(),
            _ => String::new(),
        })
        .draw()
        .map_err(|e| e.to_string())?;
    c.draw_series(bars.iter().enumerate().map(|(i, (_, v))| {
        let mut bar = Rectangle::new(
            [
                (0.0, SegmentValue::Exact(i)),
                (*v, SegmentValue::Exact(i + 1)),
            ],
            Palette99::pick(i).mix(0.75).filled(),
        );
        bar.set_margin(4, 4, 0, 0);
        bar
    }))
    .map_err(|e| e.to_string())?;
    c.draw_series(bars.iter().enumerate().map(|(i, (_, v))| {
        Text::new(
            format!(" {}", super::table::format_value(*v)),
            (*v, SegmentValue::CenterOf(i)),
            ("sans-serif", 11),
        )
    }))
    .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}

fn lines_svg(
    svg: &mut String,
    chart: &Chart,
    x_label: &str,
    x_log: bool,
    y_log: bool,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<(), String> {
    let points = series.iter().flat_map(|(_, p)| p.iter().copied());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (x, y) in points {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
    }
    // Log axes need positive bounds; linear ones start at zero.
    let x = if x_log {
        (x0.max(1e-9), x1.max(x0 * 1.01))
    } else {
        (x0.min(0.0), x1.max(x0 + 1.0))
    };
    let y = if y_log {
        (y0.max(1e-9) / 1.5, y1.max(1e-9) * 1.5)
    } else {
        (0.0, y1.max(1e-9) * 1.12)
    };
    let height = 380;
    let root = SVGBackend::with_string(svg, (WIDTH, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    match (x_log, y_log) {
        (false, false) => draw_lines(&root, chart, x_label, series, x.0..x.1, y.0..y.1),
        (true, false) => draw_lines(
            &root,
            chart,
            x_label,
            series,
            (x.0..x.1).log_scale(),
            y.0..y.1,
        ),
        (false, true) => draw_lines(
            &root,
            chart,
            x_label,
            series,
            x.0..x.1,
            (y.0..y.1).log_scale(),
        ),
        (true, true) => draw_lines(
            &root,
            chart,
            x_label,
            series,
            (x.0..x.1).log_scale(),
            (y.0..y.1).log_scale(),
        ),
    }?;
    root.present().map_err(|e| e.to_string())
}

fn draw_lines<X, Y>(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    chart: &Chart,
    x_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
    x: X,
    y: Y,
) -> Result<(), String>
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut c = ChartBuilder::on(root)
        .caption(&chart.title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(x, y)
        .map_err(|e| e.to_string())?;
    c.configure_mesh()
        .x_desc(x_label)
        .y_desc(format!("{} ({})", chart.value_label, better(chart)))
        .draw()
        .map_err(|e| e.to_string())?;
    for (i, (label, points)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        c.draw_series(LineSeries::new(
            points.iter().copied(),
            color.stroke_width(2),
        ))
        .map_err(|e| e.to_string())?
        .label(label.clone())
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2)));
        c.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(|e| e.to_string())?;
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_and_lines_render_as_svg_with_their_labels() {
        let bars = Chart {
            title: "stations".into(),
            value_label: "ms".into(),
            lower_is_better: true,
            kind: ChartKind::Bars {
                bars: vec![("csv-scan".into(), 12.5), ("tiercache".into(), 0.02)],
            },
        };
        let svg = render(&bars);
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(
            svg.contains("csv-scan") && svg.contains("tiercache"),
            "{svg}"
        );
        assert!(svg.contains("lower is better"), "{svg}");
        let lines = Chart {
            title: "batch".into(),
            value_label: "ms per key set".into(),
            lower_is_better: true,
            kind: ChartKind::Lines {
                x_label: "keys".into(),
                x_log: true,
                y_log: true,
                series: vec![("IN".into(), vec![(1.0, 0.1), (10000.0, 20.0)])],
            },
        };
        let svg = render(&lines);
        assert!(svg.contains("<polyline") || svg.contains("<path"), "{svg}");
        assert!(svg.contains("IN"), "{svg}");
    }
}
