//! A recording made into the live view's seconds, all at once: each second is
//! what the live server's sampler would have sent then, made by the same code
//! (`serving::live::sampler::second_between`) from the same two readings of
//! `/stats`. Only the request-lifetime heatmap comes another way: live, it is the
//! process's histogram; here, each request-done's own `lifetime_ns`, put in the
//! same buckets.
//!
//! A second holds the events between its tick and the tick before, in the order
//! the recorder wrote them: the tap batches its events (100 ms for the
//! recorder), so a second's heatmap may count a request or a batch more or less
//! than its `/stats` counts, never one twice.
//!
//! Each second's slowest request is cut into its waits by the cutter `trace
//! waits` and the live view use (`observe/waits.rs`), over the recorded events.
//!
//! The markers are what the live view would have marked and a recording can
//! tell: its start, each change of settings (from `/stats.config` a second, so
//! at the second it was seen), a reset of the counters, an incident's edges and
//! the neighbour's changes (the sampler's own rule), and from the trail each
//! look, diagnosis, note and load stage. A check's progress is not in a
//! recording.

use std::time::Duration;

use simulator_api::events::probe;
use simulator_api::live::{LiveMarker, LiveSecond, LiveTick};
use simulator_api::{Settings, Stats};
use simulator_service::parts::live::sampler::{self, Ended};
use simulator_service::parts::waits::{keep_slowest, Cut, Cutter};
use simulator_service::parts::LifetimeHistogram as Histogram;

use crate::recording::format::{Item, Recording};

/// One second of a replay: what the page draws and the tick it is sent in
/// (its markers filled in as it is sent).
#[derive(Debug, Clone)]
pub struct Frame {
    pub second: LiveSecond,
    pub tick: LiveTick,
}

/// The whole recording as the live view's seconds.
#[derive(Debug, Clone)]
pub struct Film {
    /// The reading before the first second, as a tick without a second.
    pub opening: LiveTick,
    /// Second `i + 1` at index `i`.
    pub frames: Vec<Frame>,
    /// Every marker, in time order.
    pub markers: Vec<LiveMarker>,
    pub began_ms: u64,
}

impl Film {
    /// The last second: how far a position may go.
    pub fn length_s(&self) -> u64 {
        self.frames.len() as u64
    }

    /// The tick of second `at` (0: the opening), with the markers up to it
    /// within the history's span.
    pub fn tick_at(&self, at: u64) -> LiveTick {
        let mut tick = match at {
            0 => self.opening.clone(),
            at => self.frames[(at - 1) as usize].tick.clone(),
        };
        let oldest = self.history_from(at) as f64 - 1.0;
        tick.markers = self
            .markers
            .iter()
            .filter(|m| m.t <= at as f64 && m.t >= oldest)
            .cloned()
            .collect();
        tick
    }

    /// The seconds the page holds when it joins at second `at`: the live view's
    /// history, up to its own length.
    pub fn history_at(&self, at: u64) -> Vec<LiveSecond> {
        let from = self.history_from(at).saturating_sub(1) as usize;
        self.frames[from..at as usize]
            .iter()
            .map(|f| f.second.clone())
            .collect()
    }

    fn history_from(&self, at: u64) -> u64 {
        (at + 1).saturating_sub(simulator_api::live::HISTORY_SECONDS as u64)
    }
}

/// A reading of `/stats` in the recording, and the events since the one before.
struct Reading<'a> {
    second: u64,
    unix_ms: u64,
    stats: &'a Stats,
}

/// Makes the film of `recording`; an error when it has no reading at all.
pub fn make(recording: &Recording) -> anyhow::Result<Film> {
    let began_ms = recording.head.began_unix_ms;
    let (readings, ended) = readings(recording);
    let first = readings.first().ok_or_else(|| {
        anyhow::anyhow!("the recording holds no reading of /stats, so no second to show")
    })?;
    let own = own_settings(first.stats);
    let mut markers = vec![LiveMarker {
        t: 0.0,
        at_ms: began_ms,
        kind: "start".into(),
        label: format!("recording began ({})", recording.head.target),
    }];
    let mut frames = Vec::new();
    for (t, (pair, ended)) in readings
        .windows(2)
        .zip(ended.into_iter().skip(1))
        .enumerate()
    {
        let (was, now) = (&pair[0], &pair[1]);
        let t = t as u64 + 1;
        let second = sampler::second_between(was.stats, now.stats, ended, t, now.unix_ms);
        let mark = |kind: &str, label: String| LiveMarker {
            t: t as f64,
            at_ms: now.unix_ms,
            kind: kind.to_owned(),
            label,
        };
        markers.extend(changes(was.stats, now.stats).map(|(k, l)| mark(k, l)));
        markers.extend(
            sampler::marks_between(was.stats, now.stats, &second)
                .into_iter()
                .map(|(k, l)| mark(k, l)),
        );
        let tick = tick_of(&own, now.stats, Some(second.clone()));
        frames.push(Frame { second, tick });
    }
    markers.extend(trail_marks(recording));
    markers.sort_by(|a, b| a.t.total_cmp(&b.t));
    Ok(Film {
        opening: tick_of(&own, first.stats, None),
        frames,
        markers,
        began_ms,
    })
}

/// The server's trail in the recording as markers: each look, diagnosis and
/// note since the recording began (a change of settings is marked from the
/// readings already, a check from its own marks).
fn trail_marks(recording: &Recording) -> Vec<LiveMarker> {
    use simulator_api::trail::TrailKind;
    let began_ms = recording.head.began_unix_ms;
    let Some(trail) = &recording.trail else {
        return Vec::new();
    };
    trail
        .entries
        .iter()
        .filter(|e| e.at_ms >= began_ms)
        .filter(|e| {
            matches!(
                e.kind,
                TrailKind::Look | TrailKind::Diagnosis | TrailKind::Note | TrailKind::Stage
            )
        })
        .map(|e| LiveMarker {
            t: (e.at_ms - began_ms) as f64 / 1e3,
            at_ms: e.at_ms,
            // A load's stage is marked as the live view marks it.
            kind: match e.kind {
                TrailKind::Stage => "stage",
                _ => "trail",
            }
            .to_owned(),
            label: match e.kind {
                TrailKind::Stage => e.what.clone(),
                TrailKind::Diagnosis => format!("diagnosis: {} ({})", e.what, e.by),
                TrailKind::Note => format!("note: {} ({})", e.what, e.by),
                _ => format!("look: {} ({})", e.what, e.by),
            },
        })
        .collect()
}

/// The recording's readings of `/stats`, each with what ended since the one
/// before (the first's: what came before it, unused).
fn readings(recording: &Recording) -> (Vec<Reading<'_>>, Vec<Ended>) {
    let began_ms = recording.head.began_unix_ms;
    let mut readings = Vec::new();
    let mut ended = Vec::new();
    let mut pending = Pending::default();
    let mut cutter = Cutter::default();
    for item in &recording.items {
        let reading = match item {
            Item::Event { probe, args, at_ns } => {
                pending.take(probe, args);
                if let Some(cut) = cutter.on(probe, *at_ns, args) {
                    pending.cut(cut);
                }
                continue;
            }
            // As live: what was in flight lost some of its events.
            Item::Lost(_) => {
                cutter = Cutter::default();
                continue;
            }
            Item::Tick {
                second,
                unix_ms,
                stats,
                ..
            } => Reading {
                second: *second,
                unix_ms: *unix_ms,
                stats,
            },
            // The end's reading is a last second unless a tick already had it.
            Item::End { seconds, stats } => Reading {
                second: *seconds,
                unix_ms: began_ms.saturating_add(seconds.saturating_mul(1000)),
                stats,
            },
        };
        if readings
            .last()
            .is_some_and(|last: &Reading| last.second >= reading.second)
        {
            continue;
        }
        ended.push(std::mem::take(&mut pending).ended());
        readings.push(reading);
    }
    (readings, ended)
}

/// The settings a change is told against: the scenario's own when it is a
/// bundled one, else what the recording began with.
fn own_settings(first: &Stats) -> Settings {
    match simulator_service::scenario::bundled_named(&first.scenario) {
        Ok(Some(scenario)) => scenario.settings(),
        _ => first.config.clone(),
    }
}

fn tick_of(own: &Settings, stats: &Stats, second: Option<LiveSecond>) -> LiveTick {
    LiveTick {
        second,
        totals: stats.counts,
        scenario: sampler::scenario_against(
            own,
            stats.scenario.clone(),
            stats,
            stats.model.limited_by.clone(),
        ),
        markers: Vec::new(),
        check: None,
    }
}

/// The markers the server's routes would have put down between two readings:
/// a switch of scenario, a change of settings (in the server's log's words),
/// a reset of the counters.
fn changes(was: &Stats, now: &Stats) -> impl Iterator<Item = (&'static str, String)> {
    let mut marks = Vec::new();
    let changed: Vec<String> = now
        .config
        .texts()
        .into_iter()
        .zip(was.config.texts())
        .filter(|((_, now), (_, was))| now != was)
        .map(|((key, now), _)| format!("{key}={now}"))
        .collect();
    let switched = (now.scenario != was.scenario).then(|| format!("scenario {} ", now.scenario));
    if switched.is_some() || !changed.is_empty() {
        marks.push((
            "config",
            format!("{}{}", switched.unwrap_or_default(), changed.join(" ")),
        ));
    }
    if now.counts.requests_started < was.counts.requests_started {
        marks.push(("reset", "counters reset".to_owned()));
    }
    marks.into_iter()
}

/// What ended since the last reading.
#[derive(Debug, Default)]
struct Pending {
    lifetime: Histogram,
    longest: Option<Duration>,
    hold: Option<Duration>,
    slowest: Option<Cut>,
}

impl Pending {
    fn cut(&mut self, cut: Cut) {
        keep_slowest(&mut self.slowest, cut);
    }

    fn take(&mut self, name: &str, args: &[u64; 6]) {
        match name {
            probe::request__done => {
                let lifetime = Duration::from_nanos(args[1]);
                self.lifetime.record(lifetime);
                self.longest = self.longest.max(Some(lifetime));
            }
            probe::compaction__done => {
                self.hold = self.hold.max(Some(Duration::from_nanos(args[3])));
            }
            _ => {}
        }
    }

    fn ended(self) -> Ended {
        Ended {
            lifetime: self.lifetime.per_bucket_since(&Histogram::default()),
            longest: self.longest,
            hold: self.hold,
            slowest: self.slowest.map(|c| c.slowest_request()),
        }
    }
}

/// A recording made in memory, for the film's and the player's tests.
#[cfg(test)]
pub(crate) mod fixture {
    use simulator_api::events::probe;
    use simulator_api::Settings;
    use simulator_service::parts::AppState;
    use simulator_service::parts::DataProcessor;
    use simulator_service::scenario::Scenario;

    use crate::recording::format::{Head, Item, Recording, Stop};

    pub const BEGAN_MS: u64 = 1_800_000_000_000;

    /// `seconds` seconds of exercise 1's server; second `s` ends `done[s - 1]`
    /// requests, each with a lifetime of `s` ms.
    pub fn recording(done: &[u64]) -> Recording {
        let processor = DataProcessor::new(&Settings::default()).unwrap();
        let state = AppState::new(processor, Scenario::load("semaphore-starvation").unwrap());
        let mut stats = state.stats();
        let tick = |second: u64, stats: &simulator_api::Stats| Item::Tick {
            second,
            unix_ms: BEGAN_MS + second * 1000,
            tap_ns: second * 1_000_000_000,
            stats: Box::new(stats.clone()),
        };
        let mut items = vec![tick(0, &stats)];
        for (i, &n) in done.iter().enumerate() {
            let second = i as u64 + 1;
            for id in 0..n {
                items.push(Item::Event {
                    at_ns: second * 1_000_000_000 - 1,
                    probe: probe::request__done,
                    args: [id, second * 1_000_000, 0, 0, 0, 0],
                });
            }
            stats.counts.requests_started += n;
            stats.counts.requests_done += n;
            items.push(tick(second, &stats));
        }
        items.push(Item::End {
            seconds: done.len() as u64,
            stats: Box::new(stats),
        });
        Recording {
            head: Head {
                recorder: "test".into(),
                target: "http://127.0.0.1:1".into(),
                began_unix_ms: BEGAN_MS,
                seconds: done.len() as u64,
                probes: Head::probe_table(),
            },
            items,
            stop: Stop::Whole,
            unknown_events: 0,
            profiles: Vec::new(),
            trail: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trails_looks_diagnoses_and_stages_since_it_began_are_marked_in_time_order() {
        use simulator_api::trail::{Trail, TrailEntry, TrailKind};
        let step = |after_ms: i64, kind, what: &str| TrailEntry {
            t: 0.0,
            at_ms: (fixture::BEGAN_MS as i64 + after_ms) as u64,
            kind,
            tool: String::new(),
            what: what.into(),
            by: "curl".into(),
            times: 1,
            last_t: 0.0,
            passed: None,
        };
        let mut recording = fixture::recording(&[1, 1, 1]);
        recording.trail = Some(Trail {
            started_ms: 0,
            now: 0.0,
            entries: vec![
                step(-5_000, TrailKind::Look, "before the recording"),
                step(2_500, TrailKind::Diagnosis, "cpu-quota"),
                step(1_200, TrailKind::Look, "/stats"),
                step(1_500, TrailKind::Change, "permits=64"),
                step(1_800, TrailKind::Stage, "peak: spike to 300/s for 2s"),
            ],
            dropped: 0,
        });
        let film = make(&recording).unwrap();
        let trail: Vec<(f64, &str)> = film
            .markers
            .iter()
            .filter(|m| m.kind == "trail")
            .map(|m| (m.t, m.label.as_str()))
            .collect();
        assert_eq!(
            trail,
            [
                (1.2, "look: /stats (curl)"),
                (2.5, "diagnosis: cpu-quota (curl)")
            ]
        );
        let stages: Vec<(f64, &str)> = film
            .markers
            .iter()
            .filter(|m| m.kind == "stage")
            .map(|m| (m.t, m.label.as_str()))
            .collect();
        assert_eq!(
            stages,
            [(1.8, "peak: spike to 300/s for 2s")],
            "as live marks it"
        );
        assert!(film.markers.windows(2).all(|w| w[0].t <= w[1].t));
    }

    #[test]
    fn each_second_counts_and_buckets_the_requests_that_ended_in_it() {
        let film = make(&fixture::recording(&[3, 0, 5])).unwrap();
        assert_eq!(film.length_s(), 3);
        let counts: Vec<u64> = film
            .frames
            .iter()
            .map(|f| f.second.counts.requests_done)
            .collect();
        assert_eq!(counts, [3, 0, 5]);
        let heat: Vec<u64> = film
            .frames
            .iter()
            .map(|f| f.second.lifetime.iter().sum())
            .collect();
        assert_eq!(
            heat, counts,
            "each request that ended is in its second's heatmap"
        );
        assert_eq!(film.frames[2].tick.totals.requests_done, 8);
        assert_eq!(film.opening.totals.requests_done, 0);
    }

    #[test]
    fn the_history_at_a_second_ends_with_it_and_its_tick_names_it() {
        let film = make(&fixture::recording(&[1, 2, 3, 4])).unwrap();
        assert!(film.history_at(0).is_empty());
        let at_3: Vec<u64> = film.history_at(3).iter().map(|s| s.t).collect();
        assert_eq!(at_3, [1, 2, 3]);
        assert_eq!(film.tick_at(3).second.map(|s| s.t), Some(3));
        assert_eq!(film.tick_at(3).totals.requests_done, 6);
        // The start marker is in every tick whose history reaches back to it.
        assert_eq!(film.tick_at(4).markers[0].kind, "start");
    }

    #[test]
    fn a_recording_without_a_reading_is_an_error_not_a_film() {
        let mut recording = fixture::recording(&[]);
        recording.items.clear();
        let error = make(&recording).unwrap_err().to_string();
        assert!(error.contains("no reading of /stats"), "{error}");
    }
}
