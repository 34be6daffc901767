//! Every figure `workshop check` can judge, declared once: [`METRICS`]. A
//! scenario's `[[check]]` names a metric (`metric = "p99_ms"`) and its bound;
//! a [`Bar`] is the two resolved, and reads as a person writes one:
//! `p99_ms < 50`. The judge, the progress line, the window's reads, the fit to
//! a machine and the preflight all loop over the bars, so none of them names a
//! metric.
//!
//! A new metric is a type in the file of its family (what the clients count,
//! what the server counts, its runtime, the kernel's figures, the check's
//! reads of `/stats` through the window) implementing [`Metric`]: its name,
//! its label, what it reads, how it is computed, with a unit test beside it
//! whose name starts with the metric's. Then one line in [`METRICS`]. The
//! test at the end of this file holds the list to both.
//!
//! The pattern is tokio-console's lints (`trait Warn`, one small type each,
//! one list) and ripgrep's flags (`FLAGS: &[&dyn Flag]`).

mod client;
mod kernel;
mod pile;
mod runtime;
mod server;

use std::fmt;
use std::time::Duration;

use simulator_api::{Counts, OsFeature, Stats};
use simulator_clients::Report;
use simulator_service::scenario::{Condition, Scenario};

use super::super::retried_once::Retried;
use super::super::unwritten_watch::Watched;

pub use client::RECOVERED_SHARE;
pub use pile::{LATE_HIT_RATIO_S, RESIDENT_FROM_S, RESIDENT_WINDOW};

/// Every metric a scenario's `[[check]]` may name, in no particular order.
pub const METRICS: &[&dyn Metric] = &[
    &client::OkShare,
    &client::P99Ms,
    &client::P50Ms,
    &client::ConnectP99Ms,
    &client::RightDigestShare,
    &client::RecoveryS,
    &client::RetriesAnsweredOnce,
    &server::BlockedShare,
    &server::PersistsPerS,
    &server::CompactionsPerS,
    &server::IndexEntries,
    &server::JournalledShare,
    &server::NeighbourShare,
    &runtime::CanaryP99Ms,
    &runtime::BusyShare,
    &kernel::ThrottledMsPerS,
    &kernel::ListenDrops,
    &kernel::RunqueueWaitPerCpu,
    &pile::AckedUnwrittenPerSlot,
    &pile::UnwrittenGrowthPerS,
    &pile::LateHitRatio,
    &pile::DescriptorGrowthPerS,
    &pile::ResidentGrowthMibPerS,
];

/// One figure of a window of the scenario's load.
pub trait Metric: Sync {
    /// As a scenario's `[[check]]` names it and a bar reads: `p99_ms`.
    fn name(&self) -> &'static str;
    /// As the verdict and the live view show it: `request latency p99 (ms)`.
    fn label(&self) -> &'static str;
    /// What the check gathers for it beside its load.
    fn reads(&self) -> Reads {
        Reads::AroundTheWindow
    }
    /// A figure of the kernel's it cannot be measured without.
    fn needs(&self) -> Option<OsFeature> {
        None
    }
    /// The shortest window it can be judged on.
    fn shortest_window(&self) -> Duration {
        Duration::ZERO
    }
    /// Its figure over the whole window. NaN where it cannot be measured:
    /// NaN fails every bound.
    fn measure(&self, window: &Window) -> f64;
    /// Its figure so far, once a second while the window runs, where the
    /// server or the clients can say one; `None`: "at the end".
    fn so_far(&self, _so_far: &SoFar) -> Option<f64> {
        None
    }
}

/// What the check gathers for a metric beside its load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// `/stats` as the window begins and just after it, and the clients'
    /// report: what every check reads.
    AroundTheWindow,
    /// `/stats` twice a second through the window (`unwritten_watch.rs`).
    /// Only where a metric asks: each read costs the server a little CPU,
    /// which an exercise measuring its own runtime's lateness at half a core
    /// would count against its fix (blocking-runtime's canary p99 after a fix
    /// went from 13 to 21-30 ms with reads twice a second).
    TwiceASecond,
    /// The check's own retries beside the load (`retried_once.rs`).
    OwnRetries,
}

/// What a window gave, for each metric to read its figure from.
#[derive(Debug)]
pub struct Window<'a> {
    pub scenario: &'a Scenario,
    /// The check's clients' report.
    pub report: &'a Report,
    /// The server's counts over the window (the report's).
    pub server: &'a Counts,
    /// The window's length.
    pub seconds: f64,
    /// `/stats` as the window began and just after it, and the time between
    /// the two reads.
    pub before: &'a Stats,
    pub after: &'a Stats,
    pub between_reads_s: f64,
    /// The reads of `/stats` through the window ([`Reads::TwiceASecond`]).
    pub watched: &'a Watched,
    /// The check's own retries ([`Reads::OwnRetries`]).
    pub retried: Retried,
    /// When the incident the check began ended, in the run's seconds.
    pub incident_end_s: Option<f64>,
    /// Whether the load is an open loop (only one has a rate to recover to).
    pub open_loop: bool,
}

impl Window<'_> {
    /// `n` a second over the window.
    fn per_s(&self, n: u64) -> f64 {
        n as f64 / self.seconds.max(1e-9)
    }
}

/// What can be said of a window while it runs, once a second.
#[derive(Debug)]
pub struct SoFar<'a> {
    /// The server's counts since the window began.
    pub since: Counts,
    /// `/stats` as the window began, and now.
    pub start: &'a Stats,
    pub now: &'a Stats,
    /// Seconds since the window began.
    pub elapsed: f64,
    /// The clients' answered share so far.
    pub ok_share: Option<f64>,
    /// The last second's median request latency.
    pub p50_ms: Option<f64>,
    /// The worst second's 99th percentile handshake so far: the window's own
    /// p99 comes with the verdict.
    pub connect_p99_ms: Option<f64>,
}

impl SoFar<'_> {
    /// `n` a second so far.
    fn per_s(&self, n: f64) -> f64 {
        n / self.elapsed.max(1e-9)
    }
}

/// The metric called `name`.
pub fn named(name: &str) -> Option<&'static dyn Metric> {
    METRICS.iter().copied().find(|m| m.name() == name)
}

/// The bound a figure must keep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    Below(f64),
    Above(f64),
}

/// A metric and the bound it must keep: one condition of a win condition.
#[derive(Clone, Copy)]
pub struct Bar {
    pub metric: &'static dyn Metric,
    pub bound: Bound,
}

impl Bar {
    /// The scenario file's condition, its metric looked up.
    pub fn of(condition: &Condition) -> Result<Bar, String> {
        let metric = named(&condition.metric).ok_or_else(|| {
            let names: Vec<&str> = METRICS.iter().map(|m| m.name()).collect();
            format!(
                "its check names `{}`, which is no metric; the metrics: {}",
                condition.metric,
                names.join(", ")
            )
        })?;
        let bound = match (condition.below, condition.above) {
            (Some(below), None) => Bound::Below(below),
            (None, Some(above)) => Bound::Above(above),
            _ => {
                return Err(format!(
                    "its check on `{}` must give exactly one of below and above",
                    condition.metric
                ))
            }
        };
        Ok(Bar { metric, bound })
    }

    /// Whether `value` keeps the bound (NaN keeps none).
    pub fn holds(&self, value: f64) -> bool {
        match self.bound {
            Bound::Below(below) => value < below,
            Bound::Above(above) => value > above,
        }
    }

    /// `< 50` or `> 0.95`.
    pub fn bound_text(&self) -> String {
        match self.bound {
            Bound::Below(below) => format!("< {below}"),
            Bound::Above(above) => format!("> {above}"),
        }
    }

    /// The bound's number.
    pub fn limit(&self) -> f64 {
        match self.bound {
            Bound::Below(limit) | Bound::Above(limit) => limit,
        }
    }

    /// Whether it bars `name`.
    pub fn is(&self, name: &str) -> bool {
        self.metric.name() == name
    }
}

/// A bar as a person writes one, `p99_ms < 50` or `ok_share > 0.99`: the
/// metric's name, `<` or `>`, a number. The words of a scenario's `[[check]]`
/// in one line, and what a load's pass bar will be written in.
impl std::str::FromStr for Bar {
    type Err = String;

    fn from_str(text: &str) -> Result<Bar, String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let [name, relation, number] = words[..] else {
            return Err(format!(
                "`{text}` is no bar: write a metric, < or >, and a number (`p99_ms < 50`)"
            ));
        };
        let limit: f64 = number
            .parse()
            .ok()
            .filter(|n: &f64| n.is_finite())
            .ok_or_else(|| format!("`{text}`: `{number}` is no number"))?;
        let (below, above) = match relation {
            "<" => (Some(limit), None),
            ">" => (None, Some(limit)),
            other => return Err(format!("`{text}`: `{other}` is neither < nor >")),
        };
        Bar::of(&Condition {
            metric: name.to_owned(),
            below,
            above,
        })
    }
}

/// `p99_ms < 50`.
impl fmt::Display for Bar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.metric.name(), self.bound_text())
    }
}

impl fmt::Debug for Bar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bar({self})")
    }
}

impl PartialEq for Bar {
    fn eq(&self, other: &Self) -> bool {
        self.metric.name() == other.metric.name() && self.bound == other.bound
    }
}

/// The scenario's win condition, each condition's metric looked up; why not
/// where the file names one that is no metric.
pub fn bars(scenario: &Scenario) -> Result<Vec<Bar>, String> {
    scenario
        .check
        .iter()
        .map(Bar::of)
        .collect::<Result<_, _>>()
        .map_err(|why| format!("scenario {}: {why}", scenario.name))
}

/// The metrics of the scenario's win condition that it names rightly (the
/// check refuses a file that names another: [`bars`]).
pub fn named_in(scenario: &Scenario) -> impl Iterator<Item = &'static dyn Metric> + '_ {
    scenario.check.iter().filter_map(|c| named(&c.metric))
}

#[cfg(test)]
pub(crate) mod fixture;

#[cfg(test)]
mod tests {
    use super::*;
    use simulator_service::scenario;

    fn source_of_the_folder() -> String {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/workshop/check/metrics");
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "rs"))
            .collect();
        files.sort();
        files
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect()
    }

    /// Adds nothing: holds the list to the scenarios and to its tests.
    #[test]
    fn every_metric_a_scenario_names_is_listed_and_every_listed_one_has_its_test() {
        for s in scenario::bundled().unwrap() {
            if let Err(why) = bars(&s) {
                panic!("{why}");
            }
        }
        let mut names: Vec<&str> = METRICS.iter().map(|m| m.name()).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(names.len(), before, "a name listed twice");
        let source = source_of_the_folder();
        for metric in METRICS {
            let test = format!("#[test]\n    fn {}_", metric.name());
            let async_test = format!("#[tokio::test]\n    async fn {}_", metric.name());
            assert!(
                source.contains(&test) || source.contains(&async_test),
                "{}: no unit test beside it (a #[test] fn {}_...)",
                metric.name(),
                metric.name()
            );
        }
    }

    #[test]
    fn every_exercise_holds_its_clients_answered() {
        for s in scenario::bundled().unwrap() {
            assert!(
                bars(&s)
                    .unwrap()
                    .iter()
                    .any(|b| b.is("ok_share") && b.limit() >= 0.5),
                "{}: a win condition without an answered share passes a service that refuses its clients",
                s.name
            );
        }
    }

    #[test]
    fn a_bar_reads_as_a_person_writes_it_and_a_wrong_name_or_bound_says_why() {
        let condition = |metric: &str, below, above| Condition {
            metric: metric.to_owned(),
            below,
            above,
        };
        let p99 = Bar::of(&condition("p99_ms", Some(50.0), None)).unwrap();
        assert_eq!(p99.to_string(), "p99_ms < 50");
        assert!(p99.holds(49.9) && !p99.holds(50.0) && !p99.holds(f64::NAN));
        let ok = Bar::of(&condition("ok_share", None, Some(0.99))).unwrap();
        assert_eq!(ok.to_string(), "ok_share > 0.99");
        assert!(ok.holds(1.0) && !ok.holds(0.99));
        let wrong = Bar::of(&condition("p99", Some(50.0), None)).unwrap_err();
        assert!(wrong.contains("`p99`, which is no metric") && wrong.contains("p99_ms"));
        let both = Bar::of(&condition("p99_ms", Some(50.0), Some(1.0))).unwrap_err();
        assert!(both.contains("exactly one of below and above"), "{both}");
    }

    #[test]
    fn a_bar_written_in_one_line_parses_back_to_itself_and_nonsense_says_why() {
        for text in ["p99_ms < 50", "ok_share > 0.99", "listen_drops < 1"] {
            let bar: Bar = text.parse().unwrap();
            assert_eq!(bar.to_string(), text);
        }
        let wrong = |text: &str| text.parse::<Bar>().unwrap_err();
        assert!(wrong("p99_ms<50").contains("no bar"));
        assert!(wrong("p99_ms <= 50").contains("neither < nor >"));
        assert!(wrong("p99_ms < fast").contains("no number"));
        assert!(wrong("p99_ms < NaN").contains("no number"));
        assert!(wrong("p99 < 50").contains("which is no metric"));
    }
}
