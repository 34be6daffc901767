//! The scenario's incidents, run by the server: one begins (`PUT /admin/incident`,
//! or the loop of `serve --incidents loop`), its settings are applied live, and
//! when it has lasted its time the server puts back what it changed. Each edge
//! fires its probe (incident-start, incident-end) and logs a line, incident-in-force
//! fires every [`IN_FORCE_EVERY`] between them (a tracer that attaches during an
//! incident sees no start, and must know it at once), and `/stats.incident`
//! shows the one in force.
//!
//! At the end only the settings that still hold the incident's values are put
//! back: a change made meanwhile (an attendee's fix, or the scenario switched
//! live) is kept. One incident at a time: a second asked while one is in force
//! is refused, so two cannot restore each other's values out of order.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use simulator_api::{Incident, IncidentStatus, SettingsUpdate};
use tokio::time::Instant;

use crate::request_path::DataProcessor;

/// How often incident-in-force fires while an incident is in force: ten times in
/// any second a script prints, so a script's first line after it attaches knows.
pub const IN_FORCE_EVERY: Duration = Duration::from_millis(100);

/// When the scenario's incident begins without being asked (`serve --incidents`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum IncidentMode {
    /// Only when asked: `PUT /admin/incident`, or `workshop check` inside its window.
    #[default]
    OnDemand,
    /// Its `at` after the server starts, then every `every`, for as long as the
    /// server runs (a room watching the failure come back).
    Loop,
}

/// Why an incident could not begin.
#[derive(Debug, thiserror::Error)]
pub enum IncidentError {
    #[error("incident {seq} is in force for {remaining_ms} ms more; one at a time")]
    InForce { seq: u64, remaining_ms: u64 },
    #[error("its settings were refused: {0}")]
    Refused(String),
}

/// The incidents of one server. Cloning shares them.
#[derive(Debug, Clone)]
pub struct Incidents {
    processor: DataProcessor,
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    /// Incidents begun since the server started.
    begun: u64,
    active: Option<Active>,
}

#[derive(Debug)]
struct Active {
    seq: u64,
    incident: Incident,
    started: Instant,
    /// What the incident's keys held before it, to put back.
    before: SettingsUpdate,
    /// The incident's keys as they read once it was applied, to tell a key
    /// changed meanwhile (kept) from one still as the incident left it (put back).
    applied: Vec<(&'static str, String)>,
}

impl Active {
    fn status(&self) -> IncidentStatus {
        IncidentStatus {
            seq: self.seq,
            summary: self.incident.summary.clone(),
            config: self.incident.config.clone(),
            lasts_ms: millis(self.incident.lasts),
            elapsed_ms: millis(self.started.elapsed()),
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Incidents {
    pub fn new(processor: DataProcessor) -> Self {
        Self {
            processor,
            state: Arc::default(),
        }
    }

    /// The incident in force, if one is.
    pub fn status(&self) -> Option<IncidentStatus> {
        self.lock().active.as_ref().map(Active::status)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Begins `incident` now; the server ends it after `incident.lasts`. Call
    /// within a Tokio runtime (the end is a task).
    pub fn begin(&self, incident: &Incident) -> Result<IncidentStatus, IncidentError> {
        let mut state = self.lock();
        if let Some(active) = &state.active {
            let status = active.status();
            return Err(IncidentError::InForce {
                seq: status.seq,
                remaining_ms: status.lasts_ms.saturating_sub(status.elapsed_ms),
            });
        }
        let keys = incident.config.keys();
        let before = SettingsUpdate::live_part_of(&self.processor.settings()).only(&keys);
        let now = self
            .processor
            .update(&incident.config)
            .map_err(|e| IncidentError::Refused(e.to_string()))?;
        state.begun += 1;
        let seq = state.begun;
        let active = Active {
            seq,
            incident: incident.clone(),
            started: Instant::now(),
            before,
            applied: texts_of(&now, &keys),
        };
        let status = active.status();
        state.active = Some(active);
        drop(state);
        self.processor.events().incident_start(seq, incident.lasts);
        tracing::warn!(
            seq,
            lasts = %humantime::format_duration(incident.lasts),
            changed = %describe(&texts_of(&now, &keys)),
            "incident begins: {}",
            incident.summary
        );
        let this = self.clone();
        let lasts = incident.lasts;
        tokio::spawn(async move {
            let started = Instant::now();
            let ends = started + lasts;
            let mut in_force = tokio::time::interval_at(started + IN_FORCE_EVERY, IN_FORCE_EVERY);
            let end = tokio::time::sleep_until(ends);
            tokio::pin!(end);
            loop {
                tokio::select! {
                    biased;
                    () = &mut end => break,
                    _ = in_force.tick() => {
                        this.processor.events().incident_in_force(seq, started.elapsed());
                    }
                }
            }
            this.end(seq);
        });
        Ok(status)
    }

    /// With [`IncidentMode::Loop`]: begins the first incident of the scenario in
    /// force (`scenario()` is asked each time: it may be switched live) at its
    /// `at`, then every `every`, until `stop`.
    pub async fn run_loop(
        &self,
        scenario: impl Fn() -> Option<Incident>,
        stop: tokio_util::sync::CancellationToken,
    ) {
        let Some(first) = scenario() else {
            tracing::warn!("--incidents loop: the scenario declares no incident");
            return;
        };
        let mut next = Instant::now() + first.at;
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(next) => {}
                () = stop.cancelled() => return,
            }
            let Some(incident) = scenario() else {
                next += Duration::from_secs(1);
                continue;
            };
            if let Err(e) = self.begin(&incident) {
                tracing::warn!(error = %e, "the loop's incident did not begin");
            }
            next += incident.every;
        }
    }

    /// Ends incident `seq` if it is still in force: puts back each of its keys
    /// that still holds the incident's value.
    fn end(&self, seq: u64) {
        let mut state = self.lock();
        if state.active.as_ref().is_none_or(|a| a.seq != seq) {
            return;
        }
        let Some(active) = state.active.take() else {
            return;
        };
        let settings = self.processor.settings();
        let untouched: Vec<&str> = active
            .applied
            .iter()
            .filter(|(key, value)| {
                texts_of(&settings, &[key]).first().map(|(_, v)| v) == Some(value)
            })
            .map(|(key, _)| *key)
            .collect();
        let back = active.before.only(&untouched);
        let kept: Vec<&str> = active
            .applied
            .iter()
            .map(|(key, _)| *key)
            .filter(|key| !untouched.contains(key))
            .collect();
        // The values put back were in force a moment ago: only a setting that
        // changed kind meanwhile (a scenario switch) could refuse them, and then
        // the setting in force is the one to keep.
        let outcome = self.processor.update(&back);
        drop(state);
        let lasted = active.started.elapsed();
        self.processor.events().incident_end(seq, lasted);
        match outcome {
            Ok(now) => tracing::warn!(
                seq,
                lasted = %humantime::format_duration(Duration::from_millis(millis(lasted))),
                restored = %describe(&texts_of(&now, &untouched)),
                kept = %kept.join(" "),
                "incident ends"
            ),
            Err(e) => {
                tracing::error!(seq, error = %e, "incident ends; its settings could not be put back")
            }
        }
    }
}

/// `keys`' values in `settings`, as the flags take them.
fn texts_of(settings: &simulator_api::Settings, keys: &[&str]) -> Vec<(&'static str, String)> {
    settings
        .texts()
        .into_iter()
        .filter(|(key, _)| keys.contains(key))
        .collect()
}

fn describe(texts: &[(&'static str, String)]) -> String {
    texts
        .iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use simulator_api::{Delay, Settings};

    fn slow_store() -> Incident {
        Incident {
            summary: "the store slows down".into(),
            at: Duration::ZERO,
            lasts: Duration::from_secs(10),
            every: Duration::from_secs(60),
            config: SettingsUpdate {
                persist_latency: Some(Delay::fixed(Duration::from_millis(200))),
                ..Default::default()
            },
        }
    }

    fn latency(p: &DataProcessor) -> String {
        texts_of(&p.settings(), &["persist_latency"])[0].1.clone()
    }

    #[tokio::test(start_paused = true)]
    async fn an_incident_applies_its_settings_and_puts_them_back_when_it_ends() {
        let processor = DataProcessor::new(&Settings::default()).unwrap();
        let incidents = Incidents::new(processor.clone());
        let before = latency(&processor);
        let status = incidents.begin(&slow_store()).unwrap();
        assert_eq!(status.seq, 1);
        assert_eq!(latency(&processor), "200ms");
        assert!(matches!(
            incidents.begin(&slow_store()),
            Err(IncidentError::InForce { .. })
        ));
        assert_eq!(processor.counts().incident_active(), 1);
        tokio::time::sleep(Duration::from_millis(9_900)).await;
        assert_eq!(latency(&processor), "200ms", "still in force");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(latency(&processor), before, "put back after 10 s");
        assert_eq!(incidents.status(), None);
        assert_eq!(processor.counts().incidents_ended, 1);
        assert_eq!(incidents.begin(&slow_store()).unwrap().seq, 2);
    }

    #[tokio::test(start_paused = true)]
    async fn the_loop_begins_it_at_its_at_then_every_every() {
        let processor = DataProcessor::new(&Settings::default()).unwrap();
        let incidents = Incidents::new(processor.clone());
        let incident = Incident {
            at: Duration::from_secs(1),
            lasts: Duration::from_secs(2),
            every: Duration::from_secs(5),
            ..slow_store()
        };
        let stop = tokio_util::sync::CancellationToken::new();
        let looping = tokio::spawn({
            let (incidents, stop) = (incidents.clone(), stop.clone());
            async move { incidents.run_loop(|| Some(incident.clone()), stop).await }
        });
        // Begun at 1, 6 and 11 s; the third still in force at 12 s.
        tokio::time::sleep(Duration::from_secs(12)).await;
        let counts = processor.counts();
        assert_eq!(counts.incidents_started, 3);
        assert_eq!(counts.incidents_ended, 2);
        stop.cancel();
        looping.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_setting_changed_during_the_incident_is_kept_at_its_end() {
        let processor = DataProcessor::new(&Settings::default()).unwrap();
        let incidents = Incidents::new(processor.clone());
        incidents.begin(&slow_store()).unwrap();
        let mine = SettingsUpdate {
            persist_latency: Some(Delay::fixed(Duration::from_millis(5))),
            ..Default::default()
        };
        processor.update(&mine).unwrap();
        tokio::time::sleep(Duration::from_secs(11)).await;
        assert_eq!(latency(&processor), "5ms", "the later change stays");
        assert_eq!(processor.counts().incidents_ended, 1);
    }
}
