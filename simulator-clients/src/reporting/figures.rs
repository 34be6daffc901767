//! Every whole-run histogram of a report, declared once.
//!
//! [`histogram_figures!`]'s one list gives each histogram its JSON key (its
//! percentiles at the report's top level, its whole HDR histogram under
//! `histograms`), the loops a report keeps it in, its row in the text report and
//! when that row is shown, and its live Prometheus histogram (`--metrics-listen`)
//! with name and help. The tally (`record.rs`), the report (`report.rs`), the text
//! (`render.rs`), `merge` (`scale_out/merge.rs`) and the live metrics
//! (`reporting/live.rs`) iterate over the list, so a new figure is one entry here
//! and the line of `record.rs` that records it (docs/architecture.md, "Add a report
//! figure"), and a merge cannot leave one out.
//!
//! Why a macro: each figure is a field (a report reads `report.summary.latency.p99_ns`
//! and its JSON keeps its keys) and a row of a table, and macro_rules is the one way
//! to make both of one list; the server's settings and events are declared so too
//! (simulator-api's `with_settings!` and `with_events!`).

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// In which runs a report keeps a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    Always,
    /// Open loop only: in a closed loop the figure would repeat another one.
    OpenLoop,
}

/// When the text report shows a figure's row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    Always,
    /// Only when some attempt was retried: without retries it repeats `latency`.
    WithRetries,
    /// Only when it measured something (connections opened during the run).
    WhenMeasured,
}

/// A figure's live histogram on the driver's `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveHistogram {
    pub name: &'static str,
    pub help: &'static str,
}

/// One declared figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Figure {
    /// Its JSON key, at the report's top level and under `histograms`.
    pub key: &'static str,
    pub kept: Kept,
    /// Its row in the text report, in a closed loop and in an open one.
    pub closed_label: &'static str,
    pub open_label: &'static str,
    pub shown: Shown,
    /// `None`: not recorded live.
    pub live: Option<LiveHistogram>,
}

impl Figure {
    /// Whether a report of this loop carries the figure.
    pub fn kept_in(&self, open_loop: bool) -> bool {
        self.kept == Kept::Always || open_loop
    }

    /// The figure's row in the text report of this loop.
    pub fn label(&self, open_loop: bool) -> &'static str {
        if open_loop {
            self.open_label
        } else {
            self.closed_label
        }
    }
}

/// A histogram's percentiles, in nanoseconds; all 0 when nothing was measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    pub min_ns: u64,
    pub mean_ns: u64,
}

impl Latency {
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        Self {
            p50_ns: h.value_at_quantile(0.5),
            p90_ns: h.value_at_quantile(0.9),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
            min_ns: h.min(),
            mean_ns: h.mean() as u64,
        }
    }
}

/// Makes, of the list below: [`PerFigure`] (a value per figure: the tally's
/// histograms, their text in a report, the live handles), [`FIGURES`] (the table)
/// and [`Summaries`] (the percentiles at a report's top level, `Option` where a
/// figure is kept in one loop only).
macro_rules! histogram_figures {
    (@open_label $closed:literal) => { $closed };
    (@open_label $closed:literal $open:literal) => { $open };
    (@live) => { None };
    (@live $name:literal $help:literal) => { Some(LiveHistogram { name: $name, help: $help }) };
    (@summary_type Always) => { Latency };
    (@summary_type OpenLoop) => { Option<Latency> };
    (@summary_of Always $h:expr, $open:expr) => { Latency::of($h) };
    (@summary_of OpenLoop $h:expr, $open:expr) => { $open.then(|| Latency::of($h)) };
    (@summary_get Always $v:expr) => { Some($v) };
    (@summary_get OpenLoop $v:expr) => { $v };
    ($(
        $(#[doc = $doc:literal])+
        $key:ident: kept $kept:ident, row $closed:literal $(or in an open loop $open:literal)?,
            shown $shown:ident, live $(none)? $($live_name:literal $live_help:literal)?;
    )+) => {
        /// A value per declared figure, in the declared order; serialized as an
        /// object keyed by the figures' keys.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        pub struct PerFigure<T> {
            $( $(#[doc = $doc])+ pub $key: T, )+
        }

        /// The declared figures, in the text report's order.
        pub const FIGURES: &[Figure] = &[$(
            Figure {
                key: stringify!($key),
                kept: Kept::$kept,
                closed_label: $closed,
                open_label: histogram_figures!(@open_label $closed $($open)?),
                shown: Shown::$shown,
                live: histogram_figures!(@live $($live_name $live_help)?),
            },
        )+];

        impl<T> PerFigure<T> {
            /// Each figure's value made by `value`.
            pub fn from_fn(mut value: impl FnMut(&'static Figure) -> T) -> Self {
                let mut figures = FIGURES.iter();
                Self {
                    $( $key: value(figures.next().expect("a figure per field")), )+
                }
            }

            pub fn iter(&self) -> impl Iterator<Item = (&'static Figure, &T)> + '_ {
                FIGURES.iter().zip([$( &self.$key, )+])
            }

            pub fn iter_mut(&mut self) -> impl Iterator<Item = (&'static Figure, &mut T)> + '_ {
                FIGURES.iter().zip([$( &mut self.$key, )+])
            }

            /// Each figure's value made of this one's.
            pub fn map<U>(&self, mut f: impl FnMut(&'static Figure, &T) -> U) -> PerFigure<U> {
                let mut values = self.iter().map(|(figure, value)| f(figure, value));
                PerFigure {
                    $( $key: values.next().expect("a value per field"), )+
                }
            }
        }

        /// Each figure's percentiles, at the report's top level (`latency`,
        /// `schedule_lag`, ...); `null` where the run's loop does not keep it.
        #[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
        pub struct Summaries {
            $( $(#[doc = $doc])+ pub $key: histogram_figures!(@summary_type $kept), )+
        }

        impl Summaries {
            /// The percentiles of `histograms`, those a run of this loop keeps.
            pub fn of(histograms: &PerFigure<Histogram<u64>>, open_loop: bool) -> Self {
                Self {
                    $( $key: histogram_figures!(@summary_of $kept &histograms.$key, open_loop), )+
                }
            }

            /// Every figure with its percentiles, `None` where not kept.
            pub fn iter(&self) -> impl Iterator<Item = (&'static Figure, Option<Latency>)> {
                FIGURES.iter().zip([$( histogram_figures!(@summary_get $kept self.$key), )+])
            }
        }
    };
}

histogram_figures! {
    /// Successful requests, from the time each was due: in an open loop that
    /// includes any wait for a free connection (corrected for coordinated
    /// omission); in a closed loop it is from the send.
    latency: kept Always, row "latency" or in an open loop "latency from scheduled send",
        shown Always,
        live "sim_clients_latency_seconds" "reply time minus the time the send was due";
    /// Open loop only: successful requests from the time each actually left, as
    /// most load generators report it (uncorrected).
    latency_from_send: kept OpenLoop, row "latency from actual send",
        shown Always, live none;
    /// Successful requests, from the time the first attempt was due to the reply
    /// of the attempt that succeeded: `latency` across retries (the same as
    /// `latency` without retries).
    request_latency: kept Always, row "latency across attempts",
        shown WithRetries, live none;
    /// How late sends left against their schedule: a closed loop's wake-ups
    /// after think time (not its first sends: `start_spread_ns`), an open loop's
    /// every send.
    schedule_lag: kept Always, row "lag of sends behind schedule",
        shown Always,
        live "sim_clients_schedule_lag_seconds" "how late sends left against their schedule";
    /// Of each send's lag, the time it waited for a free connection (open loop:
    /// every connection busy; 0 in a closed loop, whose connection is its own).
    schedule_lag_connection: kept Always, row "  waiting for a free connection",
        shown Always,
        live "sim_clients_schedule_lag_connection_seconds"
            "of each send's lag, the time it waited for a free connection";
    /// Of each send's lag, how late the timer woke after that: the driver's own
    /// lateness, to compare with the machine's (cyclictest).
    schedule_lag_timer: kept Always, row "  the timer waking late",
        shown Always,
        live "sim_clients_schedule_lag_timer_seconds"
            "of each send's lag, how late the timer woke after that";
    /// Each connection opened during the run, from connect() to established:
    /// every attempt's with `--connections per-request`, a keep-alive client's
    /// reconnects (not the connections opened before the run). A full accept
    /// queue drops SYNs, and the clients' retransmits put modes at 1 s and 3 s.
    connect: kept Always, row "connect (TCP handshake)",
        shown WhenMeasured,
        live "sim_clients_connect_seconds" "time to open each new connection, connect() to established";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_and_the_fields_agree() {
        let keys = PerFigure::from_fn(|figure| figure.key);
        for (figure, key) in keys.iter() {
            assert_eq!(figure.key, *key);
        }
        let json = serde_json::to_value(&keys).unwrap();
        let fields: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut declared: Vec<&str> = FIGURES.iter().map(|f| f.key).collect();
        declared.sort_unstable();
        assert_eq!(fields, declared);
    }

    #[test]
    fn a_figure_of_one_loop_is_null_in_the_other() {
        let histograms = PerFigure::from_fn(|_| crate::reporting::hdr::new_histogram());
        for open_loop in [false, true] {
            let summaries = Summaries::of(&histograms, open_loop);
            for (figure, summary) in summaries.iter() {
                assert_eq!(
                    summary.is_some(),
                    figure.kept_in(open_loop),
                    "{}",
                    figure.key
                );
            }
        }
    }
}
