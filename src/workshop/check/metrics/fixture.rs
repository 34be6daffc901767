//! A window for the metrics' unit tests: the figures of a quiet server, a
//! report of a load that sent nothing, a 10 s window; each test changes what
//! its metric reads and measures it.

use simulator_api::{ConnectionCounts, Counts, Machine, RuntimeStats, Settings, Stats};
use simulator_clients::{LoadPlan, Report};
use simulator_service::scenario::Scenario;

use super::super::super::retried_once::Retried;
use super::super::super::unwritten_watch::Watched;
use super::{SoFar, Window};

/// `/stats` of a server that has done nothing.
pub fn stats() -> Stats {
    let config = Settings::default();
    let scenario = Scenario::original();
    Stats {
        pid: 1,
        counts: Counts::default(),
        requests_in_flight: 0,
        persists_in_flight: 0,
        persists_queued: 0,
        permits_available: 0,
        permits_total: 0,
        permits_waiting: 0,
        store_slots_busy: None,
        acked_unwritten: 0,
        acked_unwritten_peak: 0,
        index_entries: 0,
        cache_held: 0,
        journal_entries: 0,
        remembered_replies: 0,
        remembered_bytes: 0,
        retries_answered: 0,
        memory: None,
        connections: ConnectionCounts::default(),
        process_cpu_ns: None,
        descriptors: None,
        runqueue_wait_ns: None,
        neighbour: None,
        requests_done_ns: 0,
        tcp: None,
        runtime: RuntimeStats::default(),
        machine: Machine::default(),
        cpu_cgroup: None,
        scenario: scenario.name.clone(),
        fixes: Vec::new(),
        incidents: Vec::new(),
        incident: None,
        store: "simulated".into(),
        model: simulator_service::server::predict(&config, &scenario),
        config,
    }
}

/// What a test's window is made of; [`Parts::window`] lends it out.
pub struct Parts {
    pub scenario: Scenario,
    pub report: Report,
    pub server: Counts,
    pub before: Stats,
    pub after: Stats,
    pub watched: Watched,
    pub retried: Retried,
    pub incident_end_s: Option<f64>,
    pub open_loop: bool,
    pub seconds: f64,
}

impl Parts {
    /// A 10 s window of the original scenario's load that sent nothing.
    pub fn new() -> Self {
        let scenario = Scenario::original();
        let plan = LoadPlan::running_for(&scenario.load, "http://127.0.0.1:1", None);
        Parts {
            report: Report::of_nothing(&plan),
            scenario,
            server: Counts::default(),
            before: stats(),
            after: stats(),
            watched: Watched::default(),
            retried: Retried::default(),
            incident_end_s: None,
            open_loop: false,
            seconds: 10.0,
        }
    }

    pub fn window(&self) -> Window<'_> {
        Window {
            scenario: &self.scenario,
            report: &self.report,
            server: &self.server,
            seconds: self.seconds,
            before: &self.before,
            after: &self.after,
            between_reads_s: self.seconds,
            watched: &self.watched,
            retried: self.retried,
            incident_end_s: self.incident_end_s,
            open_loop: self.open_loop,
        }
    }

    /// The window so far: `since` the server's counts since it began,
    /// `after` read now, 5 s in.
    pub fn so_far(&self) -> SoFar<'_> {
        SoFar {
            since: self.after.counts.since(&self.before.counts),
            start: &self.before,
            now: &self.after,
            elapsed: 5.0,
            ok_share: None,
            p50_ms: None,
            connect_p99_ms: None,
        }
    }
}
