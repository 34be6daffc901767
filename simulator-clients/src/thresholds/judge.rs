//! Judging the bars: each over its span of the run (the run, a stage, every
//! window), from the same histograms and counts the report prints, so a bar's
//! value is the report's figure. A span with nothing to measure (no reply for
//! a latency) gives NaN, which fails every bound: a bar is never passed by a
//! run that measured nothing.

use std::time::Duration;

use hdrhistogram::Histogram;

use super::{Bound, Metric, Scope, Threshold};
use crate::reporting::hdr;
pub use crate::reporting::judged::Judged;
use crate::reporting::record::{Interval, Tally};
use crate::reporting::report::Report;
use crate::reporting::stages::StageFigures;
use crate::reporting::units;

/// The counts and histograms of one span of the run.
#[derive(Debug, Clone)]
pub struct Span {
    pub first_attempts: u64,
    pub sent: u64,
    pub completed: u64,
    /// Answered 2xx while the span lasted (a window's and the run's rate).
    pub achieved: u64,
    pub errors: u64,
    pub blocked: u64,
    /// Late and missed sends.
    pub late: u64,
    pub given_up: u64,
    pub secs: f64,
    pub latency: Histogram<u64>,
    pub latency_from_send: Option<Histogram<u64>>,
}

impl Span {
    /// The span's figure for `metric`: ns for a latency, a fraction or a rate
    /// a second otherwise.
    pub fn value(&self, metric: Metric) -> f64 {
        let share = |n: u64, of: u64| match of {
            0 => f64::NAN,
            _ => n as f64 / of as f64,
        };
        let quantile = |h: Option<&Histogram<u64>>, q: f64| match h {
            Some(h) if !h.is_empty() => h.value_at_quantile(q / 100.0) as f64,
            _ => f64::NAN,
        };
        let secs = self.secs.max(f64::MIN_POSITIVE);
        match metric {
            Metric::Latency(q) => quantile(Some(&self.latency), q),
            Metric::LatencyFromSend(q) => quantile(self.latency_from_send.as_ref(), q),
            Metric::ErrorRate => share(self.errors, self.sent),
            Metric::BlockedRate => share(self.blocked, self.completed),
            Metric::LateRate => share(self.late, self.first_attempts),
            Metric::GivenUpRate => share(self.given_up, self.first_attempts),
            Metric::Achieved => self.achieved as f64 / secs,
            Metric::Offered => self.first_attempts as f64 / secs,
            Metric::AchievedShare => share(self.achieved, self.first_attempts),
        }
    }

    /// The run so far, of its tally (an abort's judge).
    pub fn of_tally(t: &Tally, secs: f64, open_loop: bool) -> Span {
        Span {
            first_attempts: t.sent - t.retries + t.missed,
            sent: t.sent,
            completed: t.completed,
            achieved: t.completed - t.completed_after_window,
            errors: t.errors.total(),
            blocked: t.blocked,
            late: t.late + t.missed,
            given_up: t.given_up,
            secs,
            latency: t.histograms.latency.clone(),
            latency_from_send: open_loop.then(|| t.histograms.latency_from_send.clone()),
        }
    }

    /// A stage so far, of its tally.
    pub fn of_interval(i: &Interval, secs: f64, open_loop: bool) -> Span {
        Span {
            first_attempts: i.sent - i.retries + i.missed,
            sent: i.sent,
            completed: i.completed,
            achieved: i.answered_in_span,
            errors: i.errors.total(),
            blocked: i.blocked,
            late: i.late + i.missed,
            given_up: i.given_up,
            secs,
            latency: i.latency.clone(),
            latency_from_send: open_loop.then(|| i.latency_from_send.clone()),
        }
    }
}

fn decoded(text: Option<&str>) -> Result<Option<Histogram<u64>>, String> {
    text.map(|t| hdr::decode(t).map_err(|e| format!("a histogram of the report: {e}")))
        .transpose()
}

fn run_span(r: &Report) -> Result<Span, String> {
    let latency = decoded(r.histograms.latency.as_deref())?.unwrap_or_else(hdr::new_histogram);
    Ok(Span {
        first_attempts: r.first_attempts + r.sends_missed,
        sent: r.requests_sent,
        completed: r.requests_completed,
        achieved: r.requests_completed - r.completed_after_window,
        errors: r.errors,
        blocked: r.requests_blocked,
        late: r.sends_late + r.sends_missed,
        given_up: r.requests_given_up,
        secs: r.window_ns as f64 / 1e9,
        latency,
        latency_from_send: decoded(r.histograms.latency_from_send.as_deref())?,
    })
}

fn stage_span(s: &StageFigures) -> Result<Span, String> {
    Ok(Span {
        first_attempts: s.sent - s.retries + s.missed,
        sent: s.sent,
        completed: s.completed,
        achieved: s.answered_in_stage,
        errors: s.errors.total(),
        blocked: s.blocked,
        late: s.late + s.missed,
        given_up: s.given_up,
        secs: s.to_s - s.from_s,
        latency: decoded(Some(&s.latency_hdr))?.unwrap_or_else(hdr::new_histogram),
        latency_from_send: decoded(s.latency_from_send_hdr.as_deref())?,
    })
}

/// Every window of `length` over the report's seconds, sliding by one, with
/// where each ends; one window of them all when the run was shorter.
fn window_spans(r: &Report, length: Duration) -> Result<Vec<(f64, Span)>, String> {
    let n = (length.as_secs() as usize).clamp(1, r.seconds.len().max(1));
    let mut spans = Vec::new();
    for first in 0..=r.seconds.len().saturating_sub(n) {
        let Some(window) = r.seconds.get(first..first + n) else {
            break;
        };
        let start = first.checked_sub(1).map_or(0.0, |p| r.seconds[p].line.t_s);
        let end = window.last().map_or(0.0, |s| s.line.t_s);
        let mut span = Span {
            first_attempts: 0,
            sent: 0,
            completed: 0,
            achieved: 0,
            errors: 0,
            blocked: 0,
            late: 0,
            given_up: 0,
            secs: end - start,
            latency: hdr::new_histogram(),
            latency_from_send: None,
        };
        for second in window {
            let l = &second.line;
            span.sent += l.sent;
            span.first_attempts += l.sent - l.retries;
            span.completed += l.completed;
            span.achieved += l.completed;
            span.errors += l.errors;
            span.blocked += l.blocked;
            span.late += l.late;
            span.given_up += l.given_up;
            if let Some(h) = decoded(Some(&second.latency_hdr))? {
                span.latency
                    .add(&h)
                    .map_err(|e| format!("adding a second's histogram: {e:?}"))?;
            }
        }
        spans.push((end, span));
    }
    Ok(spans)
}

/// A figure in its metric's words.
pub fn show(metric: Metric, value: f64) -> String {
    if value.is_nan() {
        return "nothing measured".to_owned();
    }
    match metric {
        Metric::Latency(_) | Metric::LatencyFromSend(_) => units::duration(value as u64),
        Metric::Achieved | Metric::Offered => format!("{value:.1}/s"),
        _ => format!("{:.2} %", value * 100.0),
    }
}

fn verdict(bar: &Threshold, value: f64, over: String) -> Judged {
    Judged {
        threshold: bar.text.clone(),
        value: value.is_finite().then_some(value),
        shown: show(bar.metric, value),
        over,
        passed: bar.bound.holds(value),
    }
}

/// Judges every bar over the report.
pub fn judge(bars: &[Threshold], report: &Report) -> Result<Vec<Judged>, String> {
    let run = run_span(report)?;
    bars.iter()
        .map(|bar| match &bar.scope {
            Scope::Run => Ok(verdict(bar, run.value(bar.metric), "the run".into())),
            Scope::Stage(name) => {
                let stage = report
                    .stages
                    .iter()
                    .find(|s| &s.name == name)
                    .ok_or_else(|| format!("the report has no stage `{name}`"))?;
                let value = stage_span(stage)?.value(bar.metric);
                Ok(verdict(bar, value, format!("stage {name}")))
            }
            Scope::Window(length) => {
                let spans = window_spans(report, *length)?;
                let worst = spans
                    .iter()
                    .map(|(end, span)| (*end, span.value(bar.metric)))
                    .max_by(|a, b| worse(bar.bound, a.1, b.1));
                Ok(match worst {
                    Some((end, value)) => {
                        let from = (end - length.as_secs_f64()).max(0.0);
                        verdict(bar, value, format!("worst window {from:.0}-{end:.0} s"))
                    }
                    None => verdict(bar, f64::NAN, "no second".into()),
                })
            }
        })
        .collect()
}

/// Orders figures so the worse is greater; NaN the worst of all.
fn worse(bound: Bound, a: f64, b: f64) -> std::cmp::Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Greater,
        (false, true) => std::cmp::Ordering::Less,
        _ if bound.higher_is_worse() => a.total_cmp(&b),
        _ => b.total_cmp(&a),
    }
}
