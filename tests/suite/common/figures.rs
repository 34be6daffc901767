//! The figures blocks `workshop figures` prints and writes into the exercise
//! pages, read back: one table per fix, a row per condition with its bound and
//! the value (and pass or FAIL) before and after the fix.

use std::path::Path;

use simulator_service::scenario::Scenario;
use system_simulator::workshop::figures;

/// One figure of a fix's table: its label, bound, and (value, holds) before and after.
#[derive(Debug)]
pub struct Row {
    pub label: String,
    pub bound: f64,
    pub before: (f64, bool),
    pub after: (f64, bool),
}

/// One figure of the check's own clients before and after a fix, as the
/// comparison under the fix's table judged it: `better`, `worse` or `~`.
#[derive(Debug)]
pub struct Compared {
    pub figure: String,
    /// The change: after / before, or for a share (`points`) after - before
    /// in points.
    pub change: f64,
    pub points: bool,
    pub verdict: String,
}

impl Compared {
    /// A change the page calls large: by half again (or a third less), or by
    /// 20 points of a share. A shortened window on another build must not
    /// find it gone the other way.
    pub fn large(&self) -> bool {
        match self.points {
            true => self.change.abs() >= 20.0,
            false => !(1.0 / 1.5..=1.5).contains(&self.change),
        }
    }
}

/// A comparison's change as the table prints it: `+10.3 % [...]` (a ratio's
/// change in percent) or `-99.54 pt [...]`; NaN where it says nothing.
fn change(text: &str) -> (f64, bool) {
    let mut words = text.split_whitespace();
    let value: f64 = words
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN);
    match words.next() {
        Some("pt") => (value, true),
        _ => (1.0 + value / 100.0, false),
    }
}

#[derive(Debug)]
pub struct FixTable {
    pub name: String,
    pub trade_off: bool,
    pub rows: Vec<Row>,
    /// The comparison's rows under the fix's table.
    pub compared: Vec<Compared>,
}

impl FixTable {
    /// The win condition before the fix: some condition fails.
    pub fn failed_before(&self) -> bool {
        self.rows.iter().any(|r| !r.before.1)
    }

    /// The win condition after the fix: every condition holds.
    pub fn passed_after(&self) -> bool {
        self.rows.iter().all(|r| r.after.1)
    }
}

fn cell(text: &str) -> (f64, bool) {
    let mut words = text.split_whitespace();
    let value = words
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN);
    (value, words.next() == Some("pass"))
}

/// Which of a fix's two tables a line is in.
#[derive(PartialEq)]
enum In {
    Neither,
    Bounds,
    Comparison,
}

/// The tables of a figures block, as `workshop figures` writes them: under
/// each fix, its bounds' table, then the comparison's.
pub fn tables(block: &str) -> Vec<FixTable> {
    let mut found: Vec<FixTable> = Vec::new();
    let mut within = In::Neither;
    for line in block.lines() {
        if let Some(rest) = line.strip_prefix("Fix `") {
            found.push(FixTable {
                name: rest.split('`').next().unwrap_or_default().to_owned(),
                trade_off: line.contains("a trade-off"),
                rows: Vec::new(),
                compared: Vec::new(),
            });
            within = In::Neither;
            continue;
        }
        let Some(table) = found.last_mut() else {
            continue;
        };
        if line.starts_with("| figure") {
            within = In::Bounds;
        } else if line == figures::TOLD_APART_HEADER {
            within = In::Comparison;
        } else if !line.starts_with("| ") {
            within = In::Neither;
        } else if !line.starts_with("| ---") {
            let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
            match within {
                In::Bounds => table.rows.push(Row {
                    label: cells[0].to_owned(),
                    bound: cells[1]
                        .trim_start_matches(['<', '>', ' '])
                        .parse()
                        .unwrap_or(f64::NAN),
                    before: cell(cells[2]),
                    after: cell(cells[3]),
                }),
                In::Comparison => {
                    let (change, points) = change(cells[3]);
                    table.compared.push(Compared {
                        figure: cells[0].to_owned(),
                        change,
                        points,
                        verdict: cells[4].trim_matches('`').to_owned(),
                    })
                }
                In::Neither => {}
            }
        }
    }
    found
}

/// The figures block of a page.
pub fn block_of(page: &str) -> &str {
    let start = page.find(figures::BEGIN).expect("a figures:begin marker");
    let end = page.find(figures::END).expect("a figures:end marker");
    &page[start..end]
}

/// The text of an exercise's page.
pub fn page_text(scenario: &Scenario) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = figures::page_of(root, scenario).unwrap();
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Each fix's verdict, as `workshop check` would give it before and after: the
/// check fails before every fix and passes after it, unless the fix is a
/// trade-off the check does not pass. The errors, one a fix, where not.
pub fn verdict_errors(scenario: &str, fresh: &[FixTable]) -> Vec<String> {
    let mut errors = Vec::new();
    for t in fresh {
        if !t.failed_before() {
            errors.push(format!(
                "{scenario}: the check passed before {}: {t:?}",
                t.name
            ));
        }
        if t.passed_after() == t.trade_off {
            errors.push(format!(
                "{scenario}: after {} the check {} (trade-off: {}): {t:?}",
                t.name,
                if t.passed_after() { "passed" } else { "failed" },
                t.trade_off
            ));
        }
    }
    errors
}

/// Keeps what `workshop figures` printed under the target directory
/// (`target/tmp/figures-WHERE-TIME.txt`), so every run of the measuring tests adds
/// to the spread that `tools/margins.py --from target/tmp/figures-*.txt` sets
/// beside the bounds. Best effort: a test never fails for want of a copy.
pub fn keep(confinement: &str, printed: &str) {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let path =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("figures-{confinement}-{stamp}.txt"));
    let _ = std::fs::write(path, printed);
}

/// Judges a measurement of one exercise's figures, `first`, with `judge`; when
/// the judgement finds something wrong, the exercise is measured once more
/// (`measure_again`) and the second measurement decides. The first one's errors
/// are printed.
///
/// A verdict is a 6 s window of a shared, noisy machine against a bound, and a
/// window can land in a stall no bound's margin covers: CI once saw
/// cpu-quota's throttling before a fix at 9.9 ms a second, where 62-326 are
/// measured (its bound is 20), and once a p99 of 50.3 ms against 50 with a
/// 4.4x margin. A regression (a fix that does not cure, a symptom gone) fails
/// both windows; a stall fails one.
pub fn judged_twice_if_wrong(
    name: &str,
    confinement: &str,
    first: String,
    measure_again: impl FnOnce() -> String,
    judge: impl Fn(&str) -> Vec<String>,
) -> Vec<String> {
    let errors = judge(&first);
    if errors.is_empty() {
        return errors;
    }
    eprintln!(
        "{confinement}: {name}: measured again, after a first window that said:\n{}",
        errors.join("\n")
    );
    judge(&measure_again())
}
