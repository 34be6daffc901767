//! What every handler shares, and the `/stats` snapshot made from it (which
//! `/metrics` also sets its gauges from, so the two never disagree).

use std::sync::{Arc, RwLock};

use simulator_api::Stats;

use super::answers::Answers;
use super::connections::ConnectionStats;
use super::incidents::Incidents;
use super::live::Live;
use super::trail::Trails;
use crate::model;
use crate::observe::runtime::RuntimeWatch;
use crate::observe::{machine, process};
use crate::request_path::DataProcessor;
use crate::scenario::Scenario;

/// Everything the handlers share, behind one `Arc`: axum clones the state for
/// every request, and a clone of the fields one by one was an atomic increment and
/// decrement per field per request (`drop_in_place<AppState>` alone was 1.7 % of
/// the serving path's CPU in a profile at 110k requests/s).
#[derive(Debug, Clone)]
pub struct AppState(Arc<Shared>);

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// What [`AppState`] shares. The settings in force live in the processor, so
/// every view shows live changes.
#[derive(Debug, Clone)]
pub struct Shared {
    pub processor: DataProcessor,
    /// The scenario in force: the one the server started in, or one switched to
    /// live (`PUT /admin/config {"scenario": NAME}`).
    scenario: Arc<RwLock<Arc<Scenario>>>,
    pub connections: Arc<ConnectionStats>,
    /// The runtime's metrics and canary (the canary runs once `serving::run` starts it).
    pub runtime: Arc<RuntimeWatch>,
    /// Whether `/stats` and `/scenarios` tell the cause and the fix.
    pub answers: Answers,
    /// The scenario's incidents, begun and ended by the server.
    pub incidents: Incidents,
    /// The live view's history (`GET /live`).
    pub live: Arc<Live>,
    /// What the operator looked at and changed, with times (`GET /admin/trail`).
    pub trails: Arc<Trails>,
}

impl AppState {
    pub fn new(processor: DataProcessor, scenario: Scenario) -> Self {
        Self(Arc::new(Shared {
            incidents: Incidents::new(processor.clone()),
            processor,
            scenario: Arc::new(RwLock::new(Arc::new(scenario))),
            connections: Arc::default(),
            runtime: Arc::default(),
            answers: Answers::Shown,
            live: Arc::default(),
            trails: Arc::default(),
        }))
    }

    /// The same state, telling or keeping back the answers (`--answers`).
    pub fn with_answers(self, answers: Answers) -> Self {
        let shared = Arc::unwrap_or_clone(self.0);
        Self(Arc::new(Shared { answers, ..shared }))
    }

    pub fn scenario(&self) -> Arc<Scenario> {
        Arc::clone(&self.scenario.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// The name of the scenario in force as this server tells it: the
    /// exercise's where it hides its answers, so no route names the cause.
    pub fn scenario_name(&self) -> String {
        let scenario = self.scenario();
        match self.answers {
            Answers::Shown => scenario.name.clone(),
            Answers::Hidden => scenario.visible_name().to_owned(),
        }
    }

    /// Records that `scenario` is now in force (its settings already are).
    pub fn set_scenario(&self, scenario: Scenario) {
        *self.scenario.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(scenario);
    }

    /// `GET /stats`: one consistent snapshot of the counters, plus the parts' state,
    /// the model and the settings in force.
    pub fn stats(&self) -> Stats {
        let p = &self.processor;
        let figures = p.figures();
        let counts = figures.counts;
        let settings = p.settings();
        let scenario = self.scenario();
        Stats {
            pid: std::process::id(),
            counts,
            requests_in_flight: counts.requests_in_flight(),
            persists_in_flight: counts.persists_in_flight(),
            persists_queued: figures.queued,
            permits_available: figures.permits_available,
            permits_total: figures.permits_total,
            permits_waiting: figures.permits_waiting,
            store_slots_busy: figures.store_slots.map(|(busy, _)| busy as u64),
            acked_unwritten: figures.acked_unwritten,
            acked_unwritten_peak: figures.acked_unwritten_peak,
            index_entries: figures.index_entries,
            cache_held: figures.cache_held,
            journal_entries: figures.journal_entries,
            remembered_replies: figures.remembered.0,
            remembered_bytes: figures.remembered.1,
            retries_answered: figures.retries_answered,
            memory: crate::observe::resident::now(),
            connections: self.connections.snapshot(),
            process_cpu_ns: process::cpu_ns(),
            descriptors: crate::platform::descriptors::now(),
            runqueue_wait_ns: crate::platform::schedstat::runqueue_wait_ns(),
            neighbour: crate::neighbour::beside::stats(),
            requests_done_ns: crate::observe::lifetime::requests_done_ns(),
            tcp: crate::platform::netstat::tcp_counters(),
            runtime: self.runtime.snapshot(counts.work_in_flight()),
            machine: machine::snapshot(
                crate::request_path::delay::overshoot(),
                crate::request_path::work::figures(&settings),
            ),
            cpu_cgroup: machine::cpu_cgroup(),
            scenario: scenario.name.clone(),
            fixes: scenario.fixes.clone(),
            incidents: scenario.incident.clone(),
            incident: self.incidents.status(),
            store: settings.store_name().to_owned(),
            model: model::predict(&settings, &scenario),
            config: (*settings).clone(),
        }
    }
}
