//! A knee search as an SVG chart: latency (p50, p99, p99.9) against the level
//! of each step, on log scales, the bar's latency dashed across, the knee a
//! vertical line, and, for rates, the server model's capacity beside it: where
//! the latency bends, and whether it bends where the model says.

use plotters::coord::combinators::LogCoord;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use super::KneeReport;
use crate::sweep::chart::ChartError;
use crate::thresholds::{Bound, Metric, Threshold};
use simulator_api::load::Unit;

fn fail(e: impl std::fmt::Display) -> ChartError {
    ChartError::new(e)
}

const P50: RGBColor = RGBColor(40, 90, 200);
const P99: RGBColor = RGBColor(200, 60, 40);
const P999: RGBColor = RGBColor(150, 40, 140);
const GUIDE: RGBColor = RGBColor(60, 60, 60);
const KNEE: RGBColor = RGBColor(20, 140, 60);

/// One percentile's points, (level, ms).
struct Series {
    name: &'static str,
    colour: RGBColor,
    points: Vec<(f64, f64)>,
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<LogCoord<f64>, LogCoord<f64>>>;

fn series(report: &KneeReport) -> Vec<Series> {
    let mut steps = report.steps.clone();
    steps.sort_by(|a, b| a.level.total_cmp(&b.level));
    let ms = |ns: u64| (ns as f64 / 1e6).max(0.01);
    let of = |name, colour, pick: fn(&super::KneeStep) -> u64| Series {
        name,
        colour,
        points: steps.iter().map(|s| (s.level, ms(pick(s)))).collect(),
    };
    vec![
        of("p50", P50, |s| s.p50_ns),
        of("p99", P99, |s| s.p99_ns),
        of("p99.9", P999, |s| s.p999_ns),
    ]
}

/// The chart as SVG text; `bars` are the search's, for the latency drawn across.
pub fn render(report: &KneeReport, bars: &[Threshold]) -> Result<String, ChartError> {
    let lines = series(report);
    let all = lines.iter().flat_map(|l| l.points.iter());
    let x = (
        all.clone().map(|p| p.0).fold(f64::MAX, f64::min) / 1.3,
        all.clone().map(|p| p.0).fold(1.0, f64::max) * 1.3,
    );
    let y = (
        all.clone().map(|p| p.1).fold(f64::MAX, f64::min) / 2.0,
        all.map(|p| p.1).fold(1.0, f64::max) * 2.0,
    );
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(fail)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "Latency against load: the knee of {}",
                    report.bars.join(" and ")
                ),
                ("sans-serif", 20),
            )
            .margin(14)
            .x_label_area_size(44)
            .y_label_area_size(80)
            // Base 2 on the level: the climb's steps (by 2) each get a label.
            .build_cartesian_2d((x.0..x.1).log_scale().base(2.0), (y.0..y.1).log_scale())
            .map_err(fail)?;
        chart
            .configure_mesh()
            .x_desc(match report.unit {
                Unit::Rate => "offered rate (requests a second, log scale)",
                Unit::Clients => "clients (log scale)",
            })
            .y_desc("latency from each send's due time (ms, log scale)")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y}"))
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 15))
            .light_line_style(RGBColor(238, 238, 238))
            .draw()
            .map_err(fail)?;
        draw_series(&mut chart, &lines)?;
        draw_guides(&mut chart, report, bars, x, y)?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(RGBColor(200, 200, 200))
            .label_font(("sans-serif", 13))
            .draw()
            .map_err(fail)?;
        root.present().map_err(fail)?;
    }
    Ok(svg)
}

fn draw_series(chart: &mut Chart, lines: &[Series]) -> Result<(), ChartError> {
    for l in lines {
        let colour = l.colour;
        chart
            .draw_series(LineSeries::new(
                l.points.iter().copied(),
                colour.stroke_width(2),
            ))
            .map_err(fail)?
            .label(l.name)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], colour.stroke_width(2)));
        chart
            .draw_series(l.points.iter().map(|p| Circle::new(*p, 3, colour.filled())))
            .map_err(fail)?;
    }
    Ok(())
}

/// The bars' latencies across, the knee and the model's capacity up.
fn draw_guides(
    chart: &mut Chart,
    report: &KneeReport,
    bars: &[Threshold],
    x: (f64, f64),
    y: (f64, f64),
) -> Result<(), ChartError> {
    let mut dashed = |from: (f64, f64), to: (f64, f64), colour: RGBColor, label: String| {
        chart
            .draw_series(std::iter::once(DashedPathElement::new(
                [from, to],
                6,
                4,
                colour.stroke_width(2),
            )))
            .map_err(fail)?
            .label(label)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], colour.stroke_width(2)));
        Ok::<(), ChartError>(())
    };
    for bar in bars
        .iter()
        .filter(|b| matches!(b.metric, Metric::Latency(_)))
    {
        if let Bound::Below(v) | Bound::AtMost(v) = bar.bound {
            dashed(
                (x.0, v / 1e6),
                (x.1, v / 1e6),
                GUIDE,
                format!("the bar: {}", bar.text),
            )?;
        }
    }
    if let Some(knee) = report.knee {
        let unit = if report.unit == Unit::Rate {
            "/s"
        } else {
            " clients"
        };
        dashed(
            (knee, y.0),
            (knee, y.1),
            KNEE,
            format!("the knee: {knee}{unit}"),
        )?;
    }
    let capacity = report
        .steps
        .iter()
        .rev()
        .find_map(|s| s.server.as_ref()?.model_capacity_per_s);
    if let (Unit::Rate, Some(c)) = (report.unit, capacity) {
        dashed(
            (c, y.0),
            (c, y.1),
            GUIDE,
            format!("the model's capacity: {c:.0}/s"),
        )?;
    }
    Ok(())
}
