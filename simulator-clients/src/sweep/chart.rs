//! A sweep as an SVG chart: throughput, blocked share and latency against the
//! client count, before and after the fix, with what the server's model predicts
//! dashed on top of the measurement and, for the default scenario at the seed's
//! 1 s think time, the seed's own figures as markers. The client axis is
//! logarithmic (the seed's counts span 1 to 1000), and so are throughput (60 to
//! 59,000 a minute) and latency; every axis says its unit, and counts are
//! labelled as whole numbers.

use plotters::element::DashedPathElement;
use plotters::prelude::*;

use crate::sweep::seed::{SEED_SCENARIO, SEED_TABLE};
use crate::sweep::{Step, SweepReport};

/// Why the chart could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("drawing the chart: {0}")]
pub struct ChartError(String);

impl ChartError {
    pub fn new(e: impl std::fmt::Display) -> Self {
        ChartError(e.to_string())
    }
}

fn fail(e: impl std::fmt::Display) -> ChartError {
    ChartError::new(e)
}

const BEFORE: RGBColor = RGBColor(200, 60, 40);
const BEFORE_LIGHT: RGBColor = RGBColor(235, 160, 150);
const AFTER: RGBColor = RGBColor(40, 90, 200);
const AFTER_LIGHT: RGBColor = RGBColor(150, 175, 235);
const THEORY: RGBColor = RGBColor(60, 60, 60);
const SEED: RGBColor = RGBColor(20, 140, 60);

/// How a line is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Look {
    /// A measurement: a solid line through dots.
    Measured,
    /// A prediction: dashed, drawn over the measurements so it stays visible.
    Predicted,
    /// Another source's figures: markers only.
    Reference(Marker),
}

/// The marker of a reference line.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Marker {
    Cross,
    Triangle,
}

/// One line of a panel: a name, a colour, how it is drawn and its points.
struct Line {
    name: String,
    colour: RGBColor,
    look: Look,
    points: Vec<(f64, f64)>,
}

fn line(
    name: &str,
    colour: RGBColor,
    look: Look,
    steps: &[Step],
    value: impl Fn(&Step) -> f64,
) -> Line {
    Line {
        name: name.to_owned(),
        colour,
        look,
        points: steps.iter().map(|s| (s.clients as f64, value(s))).collect(),
    }
}

/// Whether the sweep is the seed's experiment, so its figures belong beside it.
fn is_seed_experiment(report: &SweepReport) -> bool {
    let scenario = report.scenario.as_deref().unwrap_or(SEED_SCENARIO);
    scenario == SEED_SCENARIO && (report.think_time_s - 1.0).abs() < 1e-9
}

/// The chart as SVG text.
pub fn render(report: &SweepReport) -> Result<String, ChartError> {
    let (throughput, blocked, latency) = chart_lines(report);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 1150)).into_drawing_area();
        root.fill(&WHITE).map_err(fail)?;
        let panels = root.split_evenly((3, 1));
        panel(
            &panels[0],
            "Requests done per minute",
            "requests per minute (log scale)",
            &throughput,
            Scale::Log,
            whole,
        )?;
        panel(
            &panels[1],
            "Blocked share",
            "blocked requests (%)",
            &blocked,
            Scale::Percent,
            whole,
        )?;
        panel(
            &panels[2],
            "Client latency",
            "latency (ms, log scale)",
            &latency,
            Scale::Log,
            millis,
        )?;
        root.present().map_err(fail)?;
    }
    Ok(svg)
}

/// The three panels' lines (throughput, blocked share, latency): measured and
/// predicted before and after the fix, and the seed's own figures where the sweep
/// is the seed's experiment; measurements first, so the rest is drawn on top.
fn chart_lines(report: &SweepReport) -> (Vec<Line>, Vec<Line>, Vec<Line>) {
    let before = ("before the fix", BEFORE, BEFORE_LIGHT, &report.before[..]);
    let after = report
        .after
        .as_deref()
        .map(|a| ("after the fix", AFTER, AFTER_LIGHT, a));
    let mut throughput = Vec::new();
    let mut blocked = Vec::new();
    let mut latency = Vec::new();
    for (phase, colour, light, steps) in std::iter::once(before).chain(after) {
        throughput.push(line(
            &format!("measured, {phase}"),
            colour,
            Look::Measured,
            steps,
            |s| s.mean.per_minute.requests_done(),
        ));
        throughput.push(line(
            &format!("predicted, {phase}"),
            THEORY,
            Look::Predicted,
            steps,
            |s| s.predicted_per_min,
        ));
        blocked.push(line(phase, colour, Look::Measured, steps, |s| {
            s.mean.blocked_share * 100.0
        }));
        latency.push(line(
            &format!("p50, {phase}"),
            colour,
            Look::Measured,
            steps,
            |s| s.mean.latency_p50_ms,
        ));
        latency.push(line(
            &format!("p99, {phase}"),
            light,
            Look::Measured,
            steps,
            |s| s.mean.latency_p99_ms,
        ));
    }
    if is_seed_experiment(report) {
        seed_lines(report.after.is_some(), &mut throughput, &mut blocked);
    }
    // Measurements first, then predictions and references on top.
    for lines in [&mut throughput, &mut blocked, &mut latency] {
        lines.sort_by_key(|l| match l.look {
            Look::Measured => 0,
            Look::Predicted => 1,
            Look::Reference(_) => 2,
        });
    }
    (throughput, blocked, latency)
}

/// The seed's own figures as reference lines: its throughput before (and,
/// `with_fix`, after) the fix, and its blocked share.
fn seed_lines(with_fix: bool, throughput: &mut Vec<Line>, blocked: &mut Vec<Line>) {
    let seed = |name: &str, marker, value: fn(&crate::sweep::seed::SeedRow) -> f64| Line {
        name: name.to_owned(),
        colour: SEED,
        look: Look::Reference(marker),
        points: SEED_TABLE
            .iter()
            .map(|r| (r.clients as f64, value(r)))
            .collect(),
    };
    throughput.push(seed(
        "the seed's figures, before the fix",
        Marker::Cross,
        |r| r.requests_per_min,
    ));
    if with_fix {
        throughput.push(seed(
            "the seed's figures, after the fix",
            Marker::Triangle,
            |r| r.fixed_requests_per_min,
        ));
    }
    blocked.push(seed(
        "the seed's figures, before the fix",
        Marker::Cross,
        |r| r.blocked_share * 100.0,
    ));
}

/// A value axis.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Scale {
    Log,
    /// 0 to 100 and a little room for the legend.
    Percent,
}

/// Tick labels for counts: whole numbers with thousands separated (`59,000`).
fn whole(v: &f64) -> String {
    let n = v.round() as u64;
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Tick labels for milliseconds: no more decimals than the value needs.
fn millis(v: &f64) -> String {
    match *v {
        v if v >= 10.0 => whole(&v),
        v if v >= 1.0 => format!("{v:.1}"),
        v => format!("{v:.2}"),
    }
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    y_label: &str,
    lines: &[Line],
    scale: Scale,
    y_ticks: fn(&f64) -> String,
) -> Result<(), ChartError>
where
    DB::ErrorType: 'static,
{
    let all = lines.iter().flat_map(|l| l.points.iter());
    let x_max = all.clone().map(|p| p.0).fold(1.0, f64::max) * 1.5;
    let y_max = all.clone().map(|p| p.1).fold(1.0, f64::max) * 2.0;
    let y_min = all.map(|p| p.1).filter(|&y| y > 0.0).fold(y_max, f64::min) / 1.5;
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(80);
    let x = (0.8f64..x_max).log_scale();
    // A macro, not a function: plotters' mesh takes the concrete axis types,
    // which differ between the log and the linear panel.
    macro_rules! mesh {
        ($chart:expr) => {
            $chart
                .configure_mesh()
                .x_desc("clients (log scale)")
                .y_desc(y_label)
                .x_label_formatter(&whole)
                .y_label_formatter(&y_ticks)
                .label_style(("sans-serif", 13))
                .axis_desc_style(("sans-serif", 15))
                .light_line_style(RGBColor(238, 238, 238))
                .draw()
                .map_err(fail)?
        };
    }
    match scale {
        Scale::Log => {
            let mut chart = builder
                .build_cartesian_2d(x, (y_min..y_max).log_scale())
                .map_err(fail)?;
            mesh!(chart);
            draw_lines(&mut chart, lines)
        }
        Scale::Percent => {
            let mut chart = builder.build_cartesian_2d(x, 0f64..140.0).map_err(fail)?;
            mesh!(chart);
            draw_lines(&mut chart, lines)
        }
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
        let points = l.points.iter().copied();
        match l.look {
            Look::Measured => {
                chart
                    .draw_series(LineSeries::new(points, colour.stroke_width(2)))
                    .map_err(fail)?
                    .label(l.name.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 24, y)], colour.stroke_width(2))
                    });
                chart
                    .draw_series(l.points.iter().map(|&p| Circle::new(p, 3, colour.filled())))
                    .map_err(fail)?;
            }
            Look::Predicted => {
                chart
                    .draw_series(DashedLineSeries::new(points, 8, 5, colour.stroke_width(2)))
                    .map_err(fail)?
                    .label(l.name.clone())
                    .legend(move |(x, y)| {
                        DashedPathElement::new(
                            vec![(x, y), (x + 24, y)],
                            6,
                            3,
                            colour.stroke_width(2),
                        )
                    });
            }
            Look::Reference(Marker::Cross) => {
                chart
                    .draw_series(
                        l.points
                            .iter()
                            .map(|&p| Cross::new(p, 6, colour.stroke_width(3))),
                    )
                    .map_err(fail)?
                    .label(l.name.clone())
                    .legend(move |(x, y)| Cross::new((x + 12, y), 6, colour.stroke_width(3)));
            }
            Look::Reference(Marker::Triangle) => {
                chart
                    .draw_series(
                        l.points
                            .iter()
                            .map(|&p| TriangleMarker::new(p, 8, colour.stroke_width(2))),
                    )
                    .map_err(fail)?
                    .label(l.name.clone())
                    .legend(move |(x, y)| {
                        TriangleMarker::new((x + 12, y), 8, colour.stroke_width(2))
                    });
            }
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(fail)
}

/// Sans-serif families tried in order for the PNG; the SVG leaves the choice to the
/// browser. fontdb's own default, Arial, is missing on most Linux machines.
const SANS_SERIF: [&str; 5] = [
    "DejaVu Sans",
    "Liberation Sans",
    "Helvetica",
    "Arial",
    "Noto Sans",
];

/// The chart's SVG drawn as a PNG, for the places that do not show SVG. Text is
/// set in the first of [`SANS_SERIF`] the system has; with none, the PNG is drawn
/// without text rather than not at all.
pub fn png(svg: &str) -> Result<Vec<u8>, ChartError> {
    use resvg::{tiny_skia, usvg};
    let mut options = usvg::Options::default();
    let fonts = options.fontdb_mut();
    fonts.load_system_fonts();
    let installed = |name: &str| {
        fonts
            .faces()
            .any(|f| f.families.iter().any(|(n, _)| n == name))
    };
    if let Some(family) = SANS_SERIF.into_iter().find(|f| installed(f)) {
        fonts.set_sans_serif_family(family);
    }
    let tree = usvg::Tree::from_str(svg, &options).map_err(fail)?;
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| ChartError(format!("cannot make a {size:?} image")))?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.encode_png().map_err(fail)
}
