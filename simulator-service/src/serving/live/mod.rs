//! The live view (`GET /live`): a page a room can watch, fed once a second by a
//! server-sent-events stream (`GET /live/events`). This module owns the history
//! the page draws: a fixed ring of the last [`HISTORY_SECONDS`] seconds, the
//! markers (configuration changes, resets, incidents, checks) and the check last
//! reported. `sampler.rs` fills it each second from `/stats` and the
//! request-lifetime histogram of `/metrics` (and, while a page is open, the
//! slowest request's waits off the probe tap: `slowest.rs`); `stream.rs` serves
//! the stream and `page.rs` the page.
//!
//! Bounded by construction: the ring never grows past its seconds, markers are
//! dropped with the seconds they fall in (and at most [`MAX_MARKERS`]), and each
//! viewer reads from a broadcast channel of [`VIEWER_BACKLOG`] seconds: a viewer
//! that falls further behind is disconnected (its page reconnects and starts from
//! the history), never buffered without limit. With no viewer, a second costs one
//! `/stats` snapshot and one rendering of `/metrics`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use simulator_api::live::{CheckProgress, LiveMarker, LiveTick, HISTORY_SECONDS};
use tokio::sync::{broadcast, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub mod page;
pub mod sampler;
pub mod slowest;
pub mod stream;

/// The most markers kept (a script changing the configuration in a loop must not
/// grow the history).
pub const MAX_MARKERS: usize = 200;

/// How many seconds a viewer may fall behind before it is disconnected.
pub const VIEWER_BACKLOG: usize = 4;

/// Live view streams open at once, on both listeners together. The operator's
/// listener serves 64 connections (`OPERATOR_MAX_CONNECTIONS`), so 16 stay for
/// the operator's own requests (`/admin/*`, `/stats`, `/metrics`) whatever the
/// viewers do, a page that never reads its stream included. The next viewer
/// gets a JSON 503 saying so.
pub const MAX_VIEWERS: usize = 48;

/// The live view's history and its viewers.
#[derive(Debug)]
pub struct Live {
    started: Instant,
    started_ms: u64,
    history: Mutex<History>,
    /// Each second's tick, as the JSON the stream sends.
    ticks: broadcast::Sender<Arc<str>>,
    /// Cancelled when the server stops accepting: every stream ends.
    closed: CancellationToken,
    /// The viewers asking for each second's slowest request cut (`slowest.rs`).
    pub waits: slowest::Askers,
    /// A permit a stream ([`MAX_VIEWERS`]).
    viewers: Arc<Semaphore>,
}

#[derive(Debug, Default)]
struct History {
    /// Each second's `t` and its JSON, serialised once as it is pushed.
    seconds: VecDeque<(u64, Bytes)>,
    /// The seconds as one JSON array, made at the first join after a push
    /// and shared by every join until the next: a join costs a reference,
    /// not the ten minutes serialised again.
    joined: Option<Bytes>,
    markers: VecDeque<LiveMarker>,
    check: Option<CheckProgress>,
}

impl History {
    fn joined(&mut self) -> Bytes {
        self.joined
            .get_or_insert_with(|| {
                let size = self.seconds.iter().map(|(_, s)| s.len() + 1).sum::<usize>();
                let mut array = Vec::with_capacity(size + 2);
                array.push(b'[');
                for (i, (_, second)) in self.seconds.iter().enumerate() {
                    if i > 0 {
                        array.push(b',');
                    }
                    array.extend_from_slice(second);
                }
                array.push(b']');
                Bytes::from(array)
            })
            .clone()
    }
}

impl Default for Live {
    fn default() -> Self {
        let (ticks, _) = broadcast::channel(VIEWER_BACKLOG);
        let live = Self {
            started: Instant::now(),
            started_ms: now_ms(),
            history: Mutex::default(),
            ticks,
            closed: CancellationToken::new(),
            waits: slowest::Askers::default(),
            viewers: Arc::new(Semaphore::new(MAX_VIEWERS)),
        };
        live.mark("start", "server started");
        live
    }
}

impl Live {
    /// A stream's place among the [`MAX_VIEWERS`], held as long as the stream;
    /// none when every place is taken.
    pub fn admit_viewer(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.viewers).try_acquire_owned().ok()
    }

    /// Seconds since this server started.
    pub fn elapsed_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    pub fn started_ms(&self) -> u64 {
        self.started_ms
    }

    /// Puts a marker on every chart now.
    pub fn mark(&self, kind: &str, label: impl Into<String>) {
        let marker = LiveMarker {
            t: self.elapsed_s(),
            at_ms: now_ms(),
            kind: kind.to_owned(),
            label: label.into(),
        };
        let mut history = self.lock();
        history.markers.push_back(marker);
        while history.markers.len() > MAX_MARKERS {
            history.markers.pop_front();
        }
    }

    /// What `workshop check` reported last: a marker when a check begins and when
    /// it gives its verdict. True when this report begins a check.
    pub fn report_check(&self, progress: CheckProgress) -> bool {
        let begins = {
            let history = self.lock();
            match &history.check {
                Some(last) => last.verdict.is_some() || last.elapsed_s > progress.elapsed_s,
                None => true,
            }
        };
        let progress_began = progress.verdict.is_none();
        if begins && progress_began {
            self.mark("check", format!("check {} begins", progress.scenario));
        }
        if let Some(verdict) = &progress.verdict {
            self.mark("check", format!("check: {verdict}"));
        }
        self.lock().check = Some(progress);
        begins && progress_began
    }

    /// Adds a second, drops what fell out of the history, and sends the tick to
    /// every viewer.
    pub(crate) fn push(&self, mut tick: LiveTick) {
        let text = {
            let mut history = self.lock();
            if let Some(second) = &tick.second {
                let text = serde_json::to_vec(second).unwrap_or_default();
                history.seconds.push_back((second.t, Bytes::from(text)));
                history.joined = None;
            }
            while history.seconds.len() > HISTORY_SECONDS {
                history.seconds.pop_front();
            }
            let oldest = history
                .seconds
                .front()
                .map_or(0.0, |(t, _)| *t as f64 - 1.0);
            while history.markers.front().is_some_and(|m| m.t < oldest) {
                history.markers.pop_front();
            }
            tick.markers = history.markers.iter().cloned().collect();
            tick.check = history.check.clone();
            serde_json::to_string(&tick).unwrap_or_default()
        };
        // No viewer is no error.
        let _ = self.ticks.send(text.into());
    }

    /// A new viewer: the history so far as a JSON array of seconds (its
    /// markers and check put into `tick`), and the ticks from here on.
    /// Subscribed under the lock, so no second falls between the two.
    pub(crate) fn join(&self, tick: &mut LiveTick) -> (Bytes, broadcast::Receiver<Arc<str>>) {
        let mut history = self.lock();
        let receiver = self.ticks.subscribe();
        tick.markers = history.markers.iter().cloned().collect();
        tick.check = history.check.clone();
        (history.joined(), receiver)
    }

    /// Ends every viewer's stream (the server stops accepting).
    pub fn close(&self) {
        self.closed.cancel();
    }

    pub(crate) fn closed(&self) -> CancellationToken {
        self.closed.clone()
    }

    /// Viewers connected now.
    pub fn viewers(&self) -> usize {
        self.ticks.receiver_count()
    }

    fn lock(&self) -> MutexGuard<'_, History> {
        // Nothing under this lock panics; a poisoned one still holds a valid history.
        self.history.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use simulator_api::live::{LiveScenario, LiveSecond, PartsNow};
    use simulator_api::Counts;

    use super::*;

    fn tick(t: u64) -> LiveTick {
        LiveTick {
            second: Some(LiveSecond {
                t,
                at_ms: 0,
                counts: Counts::default(),
                now: PartsNow::default(),
                capacity_per_s: None,
                lifetime: Vec::new(),
                p50_ms: None,
                p99_ms: None,
                p999_ms: None,
                cpu_quota: None,
                listener: None,
                delayed_acks: None,
                descriptors: None,
                memory: None,
                runqueue_wait_ms: None,
                longest_ms: None,
                compaction_hold_ms: None,
                slowest: None,
            }),
            totals: Counts::default(),
            scenario: LiveScenario {
                name: "s".into(),
                changed: Vec::new(),
                capacity_per_s: 0.0,
                limited_by: String::new(),
            },
            markers: Vec::new(),
            check: None,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_history_holds_ten_minutes_and_the_markers_within_them() {
        let live = Live::default();
        for t in 1..=HISTORY_SECONDS as u64 + 100 {
            live.push(tick(t));
        }
        let mut hello = tick(0);
        let (history, _) = live.join(&mut hello);
        let history: Vec<LiveSecond> = serde_json::from_slice(&history).unwrap();
        assert_eq!(history.len(), HISTORY_SECONDS);
        assert_eq!(history[0].t, 101, "the oldest seconds went first");
        // The start marker (second 0) fell out with its seconds.
        assert!(hello.markers.is_empty(), "{:?}", hello.markers);
        tokio::time::advance(std::time::Duration::from_secs(700)).await;
        for i in 0..MAX_MARKERS + 10 {
            live.mark("config", format!("permits={i}"));
        }
        live.push(tick(701));
        let (_, _) = live.join(&mut hello);
        assert_eq!(hello.markers.len(), MAX_MARKERS);
        assert_eq!(
            hello.markers.last().unwrap().label,
            format!("permits={}", MAX_MARKERS + 9)
        );
    }

    #[test]
    fn a_check_is_marked_when_it_begins_and_at_its_verdict() {
        let live = Live::default();
        let progress = |elapsed_s: f64, verdict: Option<&str>| CheckProgress {
            scenario: "semaphore-starvation".into(),
            window_s: 10.0,
            elapsed_s,
            conditions: Vec::new(),
            verdict: verdict.map(str::to_owned),
            passed: verdict.map(|v| v == "solved"),
        };
        live.report_check(progress(1.0, None));
        live.report_check(progress(2.0, None));
        live.report_check(progress(10.0, Some("solved")));
        live.report_check(progress(1.0, None));
        let mut hello = tick(0);
        live.join(&mut hello);
        let labels: Vec<&str> = hello.markers.iter().map(|m| m.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "server started",
                "check semaphore-starvation begins",
                "check: solved",
                "check semaphore-starvation begins"
            ]
        );
        assert_eq!(hello.check.unwrap().elapsed_s, 1.0);
    }
}
