//! A sweep as text, for the terminal and as a Markdown report: one row per client
//! count, in the seed's columns (per minute, from the server's counters), the mean
//! of the repeats with their range, then what Little's law predicts.

use std::fmt::Write as _;

use crate::sweep::counts::SWEEP_COUNTS;
use crate::sweep::{Step, SweepReport};

/// How a table is laid out: aligned text for a terminal, or Markdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    Text,
    Markdown,
}

/// One column of the sweep's tables: its headers and how a step fills it, in one
/// place, so a header and its figure cannot drift apart.
struct Column {
    text: &'static str,
    /// Width in the text table (right-aligned).
    width: usize,
    markdown: &'static str,
    cell: Cell,
}

/// How a step fills a column: one of the seed's counts (`SWEEP_COUNTS[index]`),
/// or a figure of its own.
#[derive(Clone, Copy)]
enum Cell {
    Count(usize),
    Figure(fn(&Step, Layout) -> String),
}

impl Column {
    fn cell(&self, step: &Step, layout: Layout) -> String {
        match self.cell {
            Cell::Count(index) => count(step, layout, index),
            Cell::Figure(fill) => fill(step, layout),
        }
    }
}

/// A count per minute: the mean, with ± half the runs' range in Markdown (and in
/// text where its declaration asks).
fn count(step: &Step, layout: Layout, index: usize) -> String {
    let mean = step.mean.per_minute.0[index];
    let half = step.spread.per_minute.0[index] / 2.0;
    if layout == Layout::Markdown || SWEEP_COUNTS[index].spread_in_text {
        format!("{mean:.0} ±{half:.0}")
    } else {
        format!("{mean:.0}")
    }
}

/// The columns before the counts.
const LEADING: [Column; 2] = [
    Column {
        text: "clients",
        width: 7,
        markdown: "clients",
        cell: Cell::Figure(|s, _| s.clients.to_string()),
    },
    Column {
        text: "permits",
        width: 7,
        markdown: "permits",
        cell: Cell::Figure(|s, _| s.permits.to_string()),
    },
];

/// The columns after the counts.
const TRAILING: [Column; 5] = [
    Column {
        text: "blocked%",
        width: 9,
        markdown: "blocked share",
        cell: Cell::Figure(|s, l| match l {
            Layout::Text => format!("{:.1}%", s.mean.blocked_share * 100.0),
            Layout::Markdown => format!("{:.1} %", s.mean.blocked_share * 100.0),
        }),
    },
    Column {
        text: "p50 ms",
        width: 8,
        markdown: "p50 ms",
        cell: Cell::Figure(|s, _| format!("{:.1}", s.mean.latency_p50_ms)),
    },
    Column {
        text: "p99 ms",
        width: 9,
        markdown: "p99 ms",
        cell: Cell::Figure(|s, _| format!("{:.1}", s.mean.latency_p99_ms)),
    },
    Column {
        text: "CPU%",
        width: 6,
        markdown: "server CPU %",
        cell: Cell::Figure(|s, l| {
            let missing = match l {
                Layout::Text => "-",
                Layout::Markdown => "–",
            };
            s.mean
                .server_cpu_percent
                .map_or(missing.into(), |v| format!("{v:.1}"))
        }),
    },
    Column {
        text: "predicted",
        width: 10,
        markdown: "predicted",
        cell: Cell::Figure(|s, _| format!("{:.0}", s.predicted_per_min)),
    },
];

/// The columns of both tables: the step, the seed's counts in its order, the rest.
fn columns() -> Vec<Column> {
    let counts = SWEEP_COUNTS
        .iter()
        .enumerate()
        .map(|(index, count)| Column {
            text: count.text,
            width: count.width,
            markdown: count.markdown,
            cell: Cell::Count(index),
        });
    LEADING.into_iter().chain(counts).chain(TRAILING).collect()
}

/// The whole sweep, the fix after the original when it was run.
pub fn render(report: &SweepReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nsweep against {}: {} s a run, {} run(s) a step, think time {} s; per minute, \
         server-side (as count.d sees them); mean of the runs, ±half their range",
        report.target, report.duration_s, report.repeat, report.think_time_s
    );
    if let Some(shard) = report.shard {
        let _ = writeln!(
            out,
            "shard {}/{}: the clients column counts every shard's clients and the server              figures the whole load; the latency is this shard's clients' only",
            shard.index, shard.count
        );
    }
    for (title, steps) in titles(report) {
        phase(&mut out, &title, steps);
    }
    let _ = writeln!(out, "\n{}", theory(report));
    out
}

fn theory(report: &SweepReport) -> String {
    let limit = report.limited_by.clone().unwrap_or_else(|| {
        format!(
            "{} permits each held for a whole persist ({:.1} ms on average)",
            report.permits, report.persist_mean_ms
        )
    });
    match (report.capacity_per_s, report.saturation_clients) {
        (Some(capacity), Some(saturation)) => format!(
            "Little's law: the path is limited by {limit}, so it passes at most {capacity:.1} \
             requests/s ({:.0}/min). A client offers 1 / ({} s think + {:.1} ms unblocked \
             lifetime) requests/s, so from about {saturation:.0} clients on the limit is reached \
             and nearly every request waits; below that, blocking comes from clients arriving \
             together.",
            capacity * 60.0,
            report.think_time_s,
            report.lifetime_unblocked_ms,
        ),
        _ => format!(
            "Little's law: {limit}; a client offers 1 / ({} s think + {:.1} ms unblocked \
             lifetime) requests/s and throughput follows the clients.",
            report.think_time_s, report.lifetime_unblocked_ms,
        ),
    }
}

fn titles(report: &SweepReport) -> Vec<(String, &[Step])> {
    let mut phases = vec![(
        format!("{} permits (the original)", report.permits),
        &report.before[..],
    )];
    if let Some(after) = &report.after {
        let name = report
            .fix
            .as_ref()
            .map_or("the seed's fix".to_owned(), |f| format!("fix {}", f.name));
        let title = match report.fix_per_client {
            Some(k) => format!("permits = {k} x clients ({name})"),
            None => format!("after the {name}"),
        };
        phases.push((title, &after[..]));
    }
    phases
}

/// The sweep as a Markdown report: how it was run, one table per phase, the theory.
pub fn markdown(report: &SweepReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Sweep against {}\n", report.target);
    if let Some(command) = &report.command {
        let _ = writeln!(out, "    {command}\n");
    }
    let _ = writeln!(
        out,
        "{} s a run, {} run(s) a client count, {} s think time, all clients starting together. \
         Figures per minute from the server's own counters over each run (what the seed's \
         count.d saw), the mean of the runs with ± half their range; latency from the \
         clients; server CPU from `GET /stats`; predicted = min(offered load, capacity).",
        report.duration_s, report.repeat, report.think_time_s
    );
    for (title, steps) in titles(report) {
        let _ = writeln!(out, "\n## {title}\n");
        let columns = columns();
        let headers: Vec<&str> = columns.iter().map(|c| c.markdown).collect();
        let _ = writeln!(out, "| {} |", headers.join(" | "));
        let _ = writeln!(out, "|{}", " ---: |".repeat(columns.len()));
        for step in steps {
            let cells: Vec<String> = columns
                .iter()
                .map(|c| c.cell(step, Layout::Markdown))
                .collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
    }
    let _ = writeln!(
        out,
        "\n## What queueing theory predicts\n\n{}",
        theory(report)
    );
    out
}

fn phase(out: &mut String, title: &str, steps: &[Step]) {
    let _ = writeln!(out, "\n{title}:");
    let columns = columns();
    let row = |cell: &dyn Fn(&Column) -> String| {
        let cells: Vec<String> = columns
            .iter()
            .map(|c| format!("{:>w$}", cell(c), w = c.width))
            .collect();
        format!("  {}", cells.join(" "))
    };
    let _ = writeln!(out, "{}", row(&|c| c.text.to_owned()));
    for step in steps {
        let _ = writeln!(out, "{}", row(&|c| c.cell(step, Layout::Text)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::Figures;

    /// A sweep shaped like the seed's, without running one.
    fn seed_like() -> SweepReport {
        let step = |clients: usize, permits: usize, done: f64, share: f64| {
            let mut per_minute = crate::sweep::counts::PerMinute([done / 2.0; SWEEP_COUNTS.len()]);
            per_minute.0[crate::sweep::counts::REQUESTS_DONE] = done;
            let figures = Figures {
                per_minute,
                blocked_share: share,
                latency_p50_ms: 5.0 + share * 1000.0,
                latency_p99_ms: 5.0 + share * 1000.0,
                server_cpu_percent: Some(done / 2.0),
                client_errors: done / 2.0,
            };
            Step {
                clients,
                permits,
                predicted_per_min: done,
                runs: vec![figures],
                spread: Figures::default(),
                mean: figures,
            }
        };
        SweepReport {
            command: Some("sim-clients sweep --n 1,15,1000 --fix".into()),
            target: "http://127.0.0.1:7878".into(),
            duration_s: 60.0,
            repeat: 3,
            think_time_s: 1.0,
            permits: 8,
            fix_per_client: Some(8),
            fix: None,
            scenario: None,
            persist_mean_ms: 60.0,
            lifetime_unblocked_ms: 3.0,
            capacity_per_s: Some(133.3),
            limited_by: None,
            saturation_clients: Some(133.7),
            before: vec![
                step(1, 8, 60.0, 0.0),
                step(15, 8, 895.0, 0.31),
                step(1000, 8, 7686.0, 1.0),
            ],
            after: Some(vec![
                step(1, 8, 60.0, 0.0),
                step(15, 120, 885.0, 0.0),
                step(1000, 8000, 59002.0, 0.0),
            ]),
            shard: None,
        }
    }

    #[test]
    fn the_markdown_report_renders_a_table_per_phase() {
        use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
        let text = markdown(&seed_like());
        let mut tables = 0;
        let mut rows = 0;
        let mut cells_in_head = 0;
        let mut in_head = false;
        for event in Parser::new_ext(&text, Options::ENABLE_TABLES) {
            match event {
                Event::Start(Tag::Table(_)) => tables += 1,
                Event::Start(Tag::TableHead) => in_head = true,
                Event::End(TagEnd::TableHead) => in_head = false,
                Event::Start(Tag::TableCell) if in_head => cells_in_head += 1,
                Event::Start(Tag::TableRow) => rows += 1,
                _ => {}
            }
        }
        assert_eq!(tables, 2, "before and after:\n{text}");
        assert_eq!(rows, 6, "three client counts each");
        assert_eq!(cells_in_head, 26, "13 columns each");
        assert!(text.contains("sim-clients sweep --n 1,15,1000 --fix"));
        assert!(text.contains("59002 ±0"));
    }

    #[test]
    fn the_json_follows_its_schema() {
        use crate::reporting::report::tests::schema_errors;
        let mut value = serde_json::to_value(seed_like()).unwrap();
        assert_eq!(
            schema_errors("sweep.schema.json", &value),
            Vec::<String>::new()
        );
        value["before"][0]["mean"]["surprise"] = 1.into();
        value["after"][0]["mean"]["blocked_share"] = 2.0.into();
        assert_eq!(
            schema_errors("sweep.schema.json", &value).len(),
            2,
            "an extra figure, a share over 1"
        );
    }

    #[cfg(feature = "charts")]
    #[test]
    fn the_chart_is_an_svg_with_three_panels_and_every_line() {
        let svg = crate::sweep::chart::render(&seed_like()).unwrap();
        let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        let texts: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text())
            .map(str::trim)
            .collect();
        for caption in [
            "Requests done per minute",
            "Blocked share",
            "Client latency",
            // Every axis says its unit.
            "clients (log scale)",
            "requests per minute (log scale)",
            "blocked requests (%)",
            "latency (ms, log scale)",
        ] {
            assert!(
                texts.iter().any(|t| t.starts_with(caption)),
                "{caption}: {texts:?}"
            );
        }
        for legend in [
            "before the fix",
            "after the fix",
            "p99, before the fix",
            "measured, after the fix",
            "predicted, after the fix",
            "the seed's figures, before the fix",
            "the seed's figures, after the fix",
        ] {
            assert!(texts.contains(&legend), "legend {legend}: {texts:?}");
        }
        // Counts are labelled as whole numbers: 1, 10, 100, 1,000; never 1.0.
        for tick in ["1", "10", "100", "1,000", "10,000"] {
            assert!(texts.contains(&tick), "tick {tick}: {texts:?}");
        }
        assert!(
            !texts.iter().any(|t| t.ends_with(".0")),
            "a count labelled as a fraction: {texts:?}"
        );
        let lines = doc
            .descendants()
            .filter(|n| n.has_tag_name("polyline"))
            .count();
        assert!(lines >= 10, "10 data lines, got {lines}");
        // The predictions are dashed and drawn after (over) the measurements.
        let order: Vec<&str> = doc
            .descendants()
            .filter_map(|n| {
                n.attribute("stroke")
                    .filter(|_| n.has_tag_name("polyline") || n.has_tag_name("line"))
            })
            .collect();
        let first = |colour: &str| order.iter().position(|&c| c == colour).unwrap();
        // In the throughput panel, the first one drawn: both measured lines, then
        // the dashed predictions over them.
        assert!(
            first("#3C3C3C") > first("#C83C28").max(first("#285AC8")),
            "predicted lines must come after the measured ones: {order:?}"
        );
    }

    #[cfg(feature = "charts")]
    #[test]
    fn the_seeds_figures_are_drawn_only_beside_the_seeds_experiment() {
        let legend = |report: &SweepReport| {
            crate::sweep::chart::render(report)
                .unwrap()
                .contains("the seed&apos;s figures")
                || crate::sweep::chart::render(report)
                    .unwrap()
                    .contains("the seed's figures")
        };
        assert!(legend(&seed_like()));
        let other = SweepReport {
            scenario: Some("sequential-persist".into()),
            ..seed_like()
        };
        assert!(!legend(&other));
        let faster = SweepReport {
            think_time_s: 0.1,
            ..seed_like()
        };
        assert!(!legend(&faster));
    }

    #[cfg(feature = "charts")]
    #[test]
    fn the_png_is_the_chart_as_an_image() {
        let png =
            crate::sweep::chart::png(&crate::sweep::chart::render(&seed_like()).unwrap()).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        // IHDR: width and height, big-endian, right after the signature and chunk head.
        let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
        let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
        assert_eq!((width, height), (900, 1150));
    }
}
