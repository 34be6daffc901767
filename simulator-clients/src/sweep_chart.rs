//! A sweep as an SVG chart: throughput, blocked share and latency against the
//! client count (log scale, as the seed's counts span 1 to 1000), before and after
//! the fix, with Little's law drawn beside the throughput. Throughput and latency
//! use a log scale too: the seed's figures run from 60 to 59,000 a minute.

use plotters::prelude::*;

use crate::sweep::{Step, SweepReport};

/// Why the chart could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("drawing the chart: {0}")]
pub struct ChartError(String);

fn fail(e: impl std::fmt::Display) -> ChartError {
    ChartError(e.to_string())
}

const BEFORE: RGBColor = RGBColor(200, 60, 40);
const BEFORE_LIGHT: RGBColor = RGBColor(235, 160, 150);
const AFTER: RGBColor = RGBColor(40, 90, 200);
const AFTER_LIGHT: RGBColor = RGBColor(150, 175, 235);
const THEORY: RGBColor = RGBColor(120, 120, 120);

/// One line of a panel: a name, a colour and its points.
struct Line {
    name: String,
    colour: RGBColor,
    points: Vec<(f64, f64)>,
}

fn line(name: &str, colour: RGBColor, steps: &[Step], value: impl Fn(&Step) -> f64) -> Line {
    Line {
        name: name.to_owned(),
        colour,
        points: steps.iter().map(|s| (s.clients as f64, value(s))).collect(),
    }
}

/// The chart as SVG text.
pub fn render(report: &SweepReport) -> Result<String, ChartError> {
    let before = ("before", BEFORE, BEFORE_LIGHT, &report.before[..]);
    let after = report
        .after
        .as_deref()
        .map(|a| ("after the fix", AFTER, AFTER_LIGHT, a));
    // Predictions first, so the measured lines are drawn over them.
    let mut throughput = Vec::new();
    let mut predicted = Vec::new();
    let mut blocked = Vec::new();
    let mut latency = Vec::new();
    for (phase, colour, light, steps) in std::iter::once(before).chain(after) {
        throughput.push(line(phase, colour, steps, |s| s.mean.requests_done_per_min));
        predicted.push(line(&format!("predicted, {phase}"), THEORY, steps, |s| {
            s.predicted_per_min
        }));
        blocked.push(line(phase, colour, steps, |s| s.mean.blocked_share * 100.0));
        latency.push(line(&format!("p50, {phase}"), colour, steps, |s| {
            s.mean.latency_p50_ms
        }));
        latency.push(line(&format!("p99, {phase}"), light, steps, |s| {
            s.mean.latency_p99_ms
        }));
    }

    predicted.append(&mut throughput);
    let throughput = predicted;

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 1100)).into_drawing_area();
        root.fill(&WHITE).map_err(fail)?;
        let panels = root.split_evenly((3, 1));
        panel(
            &panels[0],
            "requests done per minute (log scale)",
            "requests/min",
            &throughput,
            true,
        )?;
        panel(
            &panels[1],
            "blocked share (%)",
            "% blocked",
            &blocked,
            false,
        )?;
        panel(
            &panels[2],
            "client latency (ms, log scale)",
            "ms",
            &latency,
            true,
        )?;
        root.present().map_err(fail)?;
    }
    Ok(svg)
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    y_label: &str,
    lines: &[Line],
    log_y: bool,
) -> Result<(), ChartError>
where
    DB::ErrorType: 'static,
{
    let all = lines.iter().flat_map(|l| l.points.iter());
    let x_max = all.clone().map(|p| p.0).fold(1.0, f64::max) * 1.5;
    let y_max = all.clone().map(|p| p.1).fold(1.0, f64::max) * 1.1;
    let y_min = all.map(|p| p.1).filter(|&y| y > 0.0).fold(y_max, f64::min) / 1.5;
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(70);
    if log_y {
        let mut chart = builder
            .build_cartesian_2d((0.8f64..x_max).log_scale(), (y_min..y_max).log_scale())
            .map_err(fail)?;
        chart
            .configure_mesh()
            .x_desc("clients")
            .y_desc(y_label)
            .draw()
            .map_err(fail)?;
        draw_lines(&mut chart, lines)
    } else {
        let mut chart = builder
            .build_cartesian_2d((0.8f64..x_max).log_scale(), 0f64..y_max)
            .map_err(fail)?;
        chart
            .configure_mesh()
            .x_desc("clients")
            .y_desc(y_label)
            .draw()
            .map_err(fail)?;
        draw_lines(&mut chart, lines)
    }
}

fn draw_lines<'a, DB: DrawingBackend + 'a, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    lines: &[Line],
) -> Result<(), ChartError>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
    DB::ErrorType: 'static,
{
    for l in lines {
        let colour = l.colour;
        chart
            .draw_series(LineSeries::new(
                l.points.iter().copied(),
                colour.stroke_width(2),
            ))
            .map_err(fail)?
            .label(l.name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
        chart
            .draw_series(l.points.iter().map(|&p| Circle::new(p, 3, colour.filled())))
            .map_err(fail)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(fail)
}
