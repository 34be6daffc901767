//! Pass bars for a run (`--threshold`), in a grammar a k6 user reads at sight:
//!
//! ```text
//! p(99)<200ms                    the run's p99, from each send's due time
//! peak: p(99.9)<1s               the stage named `peak` only
//! window(10s): rate(errors)<0.01 every 10 s window of the run, sliding by 1 s
//! achieved/offered>0.98 abort after 5s
//! ```
//!
//! `[SCOPE:] METRIC OP VALUE [abort [after GRACE]]`. The metrics are
//! [`METRICS`]; `OP` is `<`, `<=`, `>` or `>=`. A latency takes a unit (`ms`,
//! `s`, `us`, `ns`; bare is ms, as in k6); a rate a number or a percentage
//! (`1%`). `abort` ends the run as soon as the bar fails, judged once a second
//! over the run (or the stage) so far after its grace (k6's `abortOnFail` and
//! `delayAbortEval`); a window is judged at the end only. A bar that does not
//! parse or names an unknown metric is refused before any load (k6 ignores a
//! misspelt one: k6#1526). A window judges latency, errors, blocked and
//! achieved only: a second counts attempts as they end. Judging is `judge.rs`; ending a run early, `abort.rs`.

pub mod abort;
pub mod judge;

use std::fmt;
use std::time::Duration;

/// The exit status of a run whose bar failed: k6's, so a CI job that reads
/// k6's reads this one (1 stays "the run could not be made").
pub const EXIT_THRESHOLD_FAILED: u8 = 99;

/// A run with a bar that failed: its status is [`EXIT_THRESHOLD_FAILED`].
#[derive(Debug, thiserror::Error)]
#[error("{failed} of {of} thresholds failed (exit status {EXIT_THRESHOLD_FAILED})")]
pub struct Failed {
    pub failed: usize,
    pub of: usize,
}

/// A bar refused before any load: status 2, as a flag that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// The most bars a run takes.
pub const MAX_THRESHOLDS: usize = 32;
/// The longest window a bar may slide.
pub const MAX_WINDOW: Duration = Duration::from_secs(3600);

/// What a bar is judged over.
#[derive(Debug, Clone, PartialEq)]
pub enum Scope {
    /// The whole run (its planned window).
    Run,
    /// One stage of the plan, by name.
    Stage(String),
    /// Every window of this length, sliding by a second: the worst counts.
    Window(Duration),
}

/// A figure a bar judges.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    /// Latency percentile `q` (0 < q <= 100) from each send's due time.
    Latency(f64),
    /// The same from when each send left (open loop: not corrected).
    LatencyFromSend(f64),
    /// Errors over attempts sent.
    ErrorRate,
    /// Blocked replies over replies.
    BlockedRate,
    /// Sends late (or missed) over first attempts.
    LateRate,
    /// Requests given up over first attempts.
    GivenUpRate,
    /// Replies answered 2xx while the span lasted, a second.
    Achieved,
    /// First attempts due in the span, a second.
    Offered,
    /// Achieved over offered: under 1 when the server falls behind.
    AchievedShare,
}

/// Every metric a bar may name, as written, with what it is.
pub const METRICS: &[(&str, &str)] = &[
    (
        "p(Q)",
        "latency percentile Q from each send's due time (corrected)",
    ),
    (
        "p_sent(Q)",
        "latency percentile Q from when each send left (not corrected)",
    ),
    ("rate(errors)", "errors over attempts sent"),
    ("rate(blocked)", "blocked replies over replies"),
    ("rate(late)", "sends late or missed over first attempts"),
    ("rate(given_up)", "requests given up over first attempts"),
    (
        "achieved",
        "replies answered 2xx while the span lasted, a second",
    ),
    ("offered", "first attempts due in the span, a second"),
    ("achieved/offered", "achieved over offered"),
];

/// The bound a figure must keep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    Below(f64),
    AtMost(f64),
    Above(f64),
    AtLeast(f64),
}

impl Bound {
    pub fn holds(self, value: f64) -> bool {
        match self {
            Bound::Below(b) => value < b,
            Bound::AtMost(b) => value <= b,
            Bound::Above(b) => value > b,
            Bound::AtLeast(b) => value >= b,
        }
    }

    /// Whether a larger figure is worse (a latency's bar, an error rate's).
    pub fn higher_is_worse(self) -> bool {
        matches!(self, Bound::Below(_) | Bound::AtMost(_))
    }
}

/// One bar, as written and as read.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    pub text: String,
    pub scope: Scope,
    pub metric: Metric,
    pub bound: Bound,
    /// `abort`: end the run when it fails, judged after this grace.
    pub abort_after: Option<Duration>,
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for Threshold {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let said = |why: String| format!("threshold `{text}`: {why}");
        let (bar, abort_after) = split_abort(text).map_err(said)?;
        let (scope, bar) = split_scope(bar).map_err(said)?;
        let at = bar
            .find(['<', '>'])
            .ok_or_else(|| said("no bound: write e.g. p(99)<200ms".into()))?;
        let (name, rest) = bar.split_at(at);
        let (bound_of, value): (fn(f64) -> Bound, &str) = match rest {
            r if r.starts_with("<=") => (Bound::AtMost, &r[2..]),
            r if r.starts_with(">=") => (Bound::AtLeast, &r[2..]),
            r if r.starts_with('<') => (Bound::Below, &r[1..]),
            r => (Bound::Above, &r[1..]),
        };
        let metric = metric(name.trim()).map_err(said)?;
        if matches!(scope, Scope::Window(_)) {
            window_metric(metric).map_err(said)?;
        }
        if matches!(scope, Scope::Window(_)) && abort_after.is_some() {
            return Err(said(
                "a window is judged at the end: abort a run or a stage's bar".into(),
            ));
        }
        let value = value_of(metric, value.trim()).map_err(said)?;
        Ok(Threshold {
            text: text.to_owned(),
            scope,
            metric,
            bound: bound_of(value),
            abort_after,
        })
    }
}

/// Whether a window can judge `metric`: a second of the series counts each
/// attempt as it ends, not when it was due, and keeps one histogram.
fn window_metric(metric: Metric) -> Result<(), String> {
    match metric {
        Metric::LatencyFromSend(_) => Err("p_sent is judged over a stage or the run: a second keeps no histogram of it".into()),
        Metric::Offered | Metric::AchievedShare | Metric::LateRate | Metric::GivenUpRate => Err(
            "a second counts attempts as they end, not when they were due: judge this over a stage or the run".into(),
        ),
        _ => Ok(()),
    }
}

/// `... abort [after D]` split off.
fn split_abort(text: &str) -> Result<(&str, Option<Duration>), String> {
    let Some(at) = text.find(" abort") else {
        return Ok((text, None));
    };
    let (bar, tail) = text.split_at(at);
    let tail = tail.trim_start().trim_start_matches("abort").trim();
    let grace = match tail {
        "" => Duration::ZERO,
        t => match t.strip_prefix("after ") {
            Some(d) => simulator_api::value::parse_duration(d)?,
            None => {
                return Err(format!(
                    "`{t}` after abort: write `abort` or `abort after 10s`"
                ))
            }
        },
    };
    Ok((bar.trim(), Some(grace)))
}

/// `SCOPE: ...` split off; the run when none is named.
fn split_scope(text: &str) -> Result<(Scope, &str), String> {
    let Some((scope, bar)) = text.split_once(':') else {
        return Ok((Scope::Run, text));
    };
    let scope = scope.trim();
    if let Some(length) = scope
        .strip_prefix("window(")
        .and_then(|s| s.strip_suffix(')'))
    {
        let length = simulator_api::value::parse_duration(length)?;
        if length < Duration::from_secs(1) || length > MAX_WINDOW || length.subsec_nanos() != 0 {
            return Err("a window is whole seconds, 1s to 1h".into());
        }
        return Ok((Scope::Window(length), bar.trim()));
    }
    match scope {
        "run" => Ok((Scope::Run, bar.trim())),
        name => Ok((Scope::Stage(name.to_owned()), bar.trim())),
    }
}

fn metric(name: &str) -> Result<Metric, String> {
    let quantile = |inner: &str| -> Result<f64, String> {
        let q: f64 = inner
            .parse()
            .map_err(|_| format!("`{inner}` is no percentile: write p(99) or p(99.9)"))?;
        if q > 0.0 && q <= 100.0 {
            Ok(q)
        } else {
            Err(format!("percentile {q} is outside (0, 100]"))
        }
    };
    let inside = |prefix: &str| name.strip_prefix(prefix).and_then(|r| r.strip_suffix(')'));
    if let Some(q) = inside("p(") {
        return Ok(Metric::Latency(quantile(q)?));
    }
    if let Some(q) = inside("p_sent(") {
        return Ok(Metric::LatencyFromSend(quantile(q)?));
    }
    Ok(match name {
        "rate(errors)" => Metric::ErrorRate,
        "rate(blocked)" => Metric::BlockedRate,
        "rate(late)" => Metric::LateRate,
        "rate(given_up)" => Metric::GivenUpRate,
        "achieved" => Metric::Achieved,
        "offered" => Metric::Offered,
        "achieved/offered" => Metric::AchievedShare,
        other => {
            let names: Vec<&str> = METRICS.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "`{other}` is no metric; the metrics: {}",
                names.join(", ")
            ));
        }
    })
}

/// A bound's number: a latency in ns (bare: ms), a rate as a fraction.
fn value_of(metric: Metric, text: &str) -> Result<f64, String> {
    let number = |t: &str| -> Result<f64, String> {
        t.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("`{text}` is not a number"))
    };
    match metric {
        Metric::Latency(_) | Metric::LatencyFromSend(_) => {
            let split = text
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .unwrap_or(text.len());
            let (digits, unit) = text.split_at(split);
            let scale = match unit {
                "" | "ms" => 1e6,
                "s" => 1e9,
                "us" | "µs" => 1e3,
                "ns" => 1.0,
                other => {
                    return Err(format!(
                        "`{text}`: `{other}` is no unit of time; write ms, s, us or ns"
                    ))
                }
            };
            Ok(number(digits)? * scale)
        }
        Metric::Achieved | Metric::Offered => number(text),
        _ => match text.strip_suffix('%') {
            Some(pct) => Ok(number(pct)? / 100.0),
            None => number(text),
        },
    }
}

/// Reads every bar, or says which is wrong and why; a bar scoped to a stage
/// the plan does not have is wrong too.
pub fn parse_all(
    texts: &[String],
    stages: Option<&simulator_api::load::Stages>,
) -> Result<Vec<Threshold>, String> {
    if texts.len() > MAX_THRESHOLDS {
        return Err(format!("at most {MAX_THRESHOLDS} thresholds"));
    }
    let bars: Vec<Threshold> = texts.iter().map(|t| t.parse()).collect::<Result<_, _>>()?;
    for bar in &bars {
        if let Scope::Stage(name) = &bar.scope {
            let names: Vec<&str> = stages
                .map(|p| p.stages.iter().map(|s| s.name.as_str()).collect())
                .unwrap_or_default();
            if !names.contains(&name.as_str()) {
                return Err(match names.is_empty() {
                    true => format!(
                        "threshold `{bar}`: `{name}` is no stage: the run has no plan (--stages)"
                    ),
                    false => format!(
                        "threshold `{bar}`: `{name}` is no stage; the plan's: {}",
                        names.join(", ")
                    ),
                });
            }
        }
    }
    Ok(bars)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(text: &str) -> Threshold {
        text.parse().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn bars_read_as_a_k6_user_writes_them() {
        let p99 = bar("p(99)<200ms");
        assert_eq!(
            (p99.scope.clone(), p99.metric, p99.bound),
            (Scope::Run, Metric::Latency(99.0), Bound::Below(200e6))
        );
        assert_eq!(
            bar("p(95)<500").bound,
            Bound::Below(500e6),
            "bare is ms, as k6"
        );
        assert_eq!(bar("p(99.9) <= 2s").bound, Bound::AtMost(2e9));
        let peak = bar("peak: p_sent(50)<10ms");
        assert_eq!(
            (peak.scope, peak.metric),
            (Scope::Stage("peak".into()), Metric::LatencyFromSend(50.0))
        );
        let errors = bar("window(10s): rate(errors)<1%");
        assert_eq!(errors.scope, Scope::Window(Duration::from_secs(10)));
        assert_eq!(errors.bound, Bound::Below(0.01));
        let kept = bar("achieved/offered>0.98 abort after 5s");
        assert_eq!(
            (kept.metric, kept.bound),
            (Metric::AchievedShare, Bound::Above(0.98))
        );
        assert_eq!(kept.abort_after, Some(Duration::from_secs(5)));
        assert_eq!(
            bar("run: achieved>=100 abort").abort_after,
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn a_bar_that_does_not_parse_says_why() {
        for (bad, needle) in [
            ("p(99)<2O0ms", "`2O0ms`: `O0ms` is no unit of time"),
            (
                "latency_p99<1s",
                "`latency_p99` is no metric; the metrics: p(Q), p_sent(Q)",
            ),
            ("p(0)<1s", "outside (0, 100]"),
            ("p(ninety)<1s", "no percentile"),
            ("p(99)", "no bound"),
            ("rate(errors)<-1", "not a number"),
            ("window(1.5s): p(99)<1s", "whole seconds"),
            ("window(10s): p_sent(99)<1s", "a second keeps no histogram"),
            (
                "window(10s): achieved/offered>0.9",
                "not when they were due",
            ),
            ("window(10s): p(99)<1s abort", "judged at the end"),
            ("p(99)<1s abort soon", "write `abort` or `abort after 10s`"),
        ] {
            let e = bad.parse::<Threshold>().unwrap_err();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }

    #[test]
    fn a_bar_on_a_stage_the_plan_lacks_is_refused() {
        let plan: simulator_api::load::Stages = "warm: ramp 5 1s, peak: step 9 1s".parse().unwrap();
        let texts = |t: &str| vec![t.to_owned()];
        assert!(parse_all(&texts("peak: p(99)<1s"), Some(&plan)).is_ok());
        let e = parse_all(&texts("spike: p(99)<1s"), Some(&plan)).unwrap_err();
        assert!(e.contains("the plan's: warm, peak"), "{e}");
        let e = parse_all(&texts("peak: p(99)<1s"), None).unwrap_err();
        assert!(e.contains("the run has no plan"), "{e}");
    }
}
