//! The live view's stream (`GET /live/events`, docs/api.md): what the server
//! sends its `/live` page once a second, and what `workshop check` tells the
//! server about the check it is running (`PUT /admin/check`), so the page can show
//! the conditions beside the charts.
//!
//! Every figure is read from what `/stats` and `/metrics` already keep: a
//! second's counts are the difference of two `/stats` snapshots a second apart,
//! the request-lifetime heatmap the difference of the cumulative buckets of
//! `isim_request_lifetime_seconds`. Nothing here is a second bookkeeping.

use serde::{Deserialize, Serialize};

use crate::Counts;

/// The request-lifetime heatmap's buckets: the upper bounds in seconds of
/// `isim_request_lifetime_seconds` (Prometheus `le`), in order; one more bucket
/// (+Inf) follows them in every [`LiveSecond::lifetime`].
pub type BucketBounds = Vec<f64>;

/// One second of the server, as the live view draws it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveSecond {
    /// Seconds since the server started, at the end of this second.
    pub t: u64,
    /// Wall clock at the end of this second, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// What happened during this second: `/stats` counts now minus a second ago
    /// (a reset in between counts from the reset).
    pub counts: Counts,
    /// The parts' state at the end of this second.
    pub now: PartsNow,
    /// The model's capacity in requests a second for the configuration in force
    /// (`/stats.model.capacity_per_s`), so a fix's new capacity shows where it began.
    pub capacity_per_s: Option<f64>,
    /// Requests that ended this second, per lifetime bucket (one more than the
    /// bounds: the last is +Inf).
    pub lifetime: Vec<u64>,
    /// Percentiles of this second's request lifetimes in ms, interpolated within a
    /// bucket as PromQL's `histogram_quantile` does; null when none ended.
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub p999_ms: Option<f64>,
    /// What the kernel's CPU quota did this second: the server's cgroup's
    /// `cpu.stat` now minus a second ago; null without a cgroup to read.
    #[serde(default)]
    pub cpu_quota: Option<QuotaSecond>,
    /// The data port's listening socket this second (Linux; null elsewhere).
    #[serde(default)]
    pub listener: Option<ListenerSecond>,
    /// The server's descriptors at the second's end: open and the soft limit
    /// (`/stats.descriptors`); null where the OS has no such limit.
    #[serde(default)]
    pub descriptors: Option<crate::DescriptorCounts>,
    /// The server's resident memory at the second's end and its growth over
    /// the last 10 s (`/stats.memory`); null where the OS will not say.
    #[serde(default)]
    pub memory: Option<crate::MemoryCounts>,
    /// The ACKs the server's network namespace sent from the delayed-ACK timer
    /// this second (`/stats.tcp.delayed_acks`' change, what `nstat` counts as
    /// `TcpExtDelayedACKs`); null where the kernel does not give it.
    #[serde(default)]
    pub delayed_acks: Option<u64>,
    /// Time the server's threads waited for a CPU while runnable this second,
    /// summed over threads, in ms (`/stats.runqueue_wait_ns`' change); null
    /// where the kernel does not give it. Beside `cpu_quota.throttled_ms` it
    /// tells a CPU taken by someone else from a quota spent.
    #[serde(default)]
    pub runqueue_wait_ms: Option<f64>,
    /// The longest request that ended this second, in ms (exact, not a
    /// bucket's bound); null when none ended. A stall of every request shows
    /// here when the percentiles of a busy second still hide it.
    #[serde(default)]
    pub longest_ms: Option<f64>,
    /// The longest any compaction of the index that ended this second held
    /// its lock, in ms (`index`); null when none ended.
    #[serde(default)]
    pub compaction_hold_ms: Option<f64>,
    /// The slowest request that ended this second, cut into what it waited on;
    /// null when none ended or nobody was watching (the cut reads the probe
    /// tap, which runs only while a page is open).
    #[serde(default)]
    pub slowest: Option<SlowestRequest>,
}

/// A request's lifetime cut into the parts the probes bound
/// (`simulator-service/src/observe/waits.rs`; `trace waits` prints the same).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowestRequest {
    /// Its request id (arg0 of its probes).
    pub id: u64,
    /// request-start to request-done on the tap's clock, in ms.
    pub lifetime_ms: f64,
    /// Each part with time in it, in the request path's order; they sum to
    /// `lifetime_ms`.
    pub parts: Vec<WaitPart>,
    /// The compaction that held the index's lock while it waited for it.
    pub behind_compaction: Option<u64>,
}

/// One part of a lifetime: what it was and how long, in ms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WaitPart {
    pub part: String,
    pub ms: f64,
}

/// One second of the data port's listening socket, as the kernel holds it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ListenerSecond {
    /// Packets it dropped this second (`SO_MEMINFO`, as `/stats.connections.listen_drops`).
    pub drops: u64,
    /// ... and since it opened.
    pub drops_total: u64,
    /// Connections waiting to be accepted at the end of the second.
    pub queue: u32,
    /// The longest the queue was at an accept over the second
    /// (`/stats.connections.listen_queue_peak`): a herd fills it and the accept
    /// loop empties it between two seconds' ends, where `queue` reads 0.
    #[serde(default)]
    pub queue_peak: u32,
    /// The accept queue's limit.
    pub backlog: u32,
}

/// One second of the server's cgroup's `cpu.stat`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct QuotaSecond {
    /// Quota periods that began.
    pub periods: u64,
    /// Of them, periods in which the server ran out of quota.
    pub throttled_periods: u64,
    /// Time the server's threads waited for the next period, summed over CPUs.
    pub throttled_ms: f64,
    /// The quota in cores (null: no limit).
    pub quota_cores: Option<f64>,
}

/// Each part of the request path right now, as the diagram annotates it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PartsNow {
    pub requests_in_flight: u64,
    /// Permits held, of `permits_total`.
    pub permits_in_use: u64,
    pub permits_total: u64,
    /// Requests waiting for a permit at the gate.
    pub permits_waiting: u64,
    pub work_in_flight: u64,
    /// Elements in the persistence queue, not yet started (pool only).
    pub persists_queued: u64,
    pub persists_in_flight: u64,
    /// Elements answered and not yet written, and the most at once over the
    /// last second (`/stats.acked_unwritten`, `acked_unwritten_peak`).
    #[serde(default)]
    pub acked_unwritten: u64,
    #[serde(default)]
    pub acked_unwritten_peak: u64,
    /// Writes holding one of the store's `store_concurrency` slots (null: no limit).
    pub store_slots_busy: Option<u64>,
    pub store_slots_total: u64,
    /// The timer canary's lateness p99 over its last window, microseconds.
    pub canary_late_p99_us: u64,
    /// Share of the async workers' time spent busy over the canary's window.
    pub busy_share: f64,
    /// Connections open on the data port.
    pub connections_open: u64,
    pub incident_active: bool,
}

/// A moment worth a line on every chart: a configuration change, a reset, the
/// server's start, an incident's edges, a check's start and verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveMarker {
    /// Seconds since the server started (fractional).
    pub t: f64,
    pub at_ms: u64,
    /// `start`, `config`, `reset`, `incident` or `check`.
    pub kind: String,
    /// What changed, in the words of the server's log (`permits=1080`).
    pub label: String,
}

/// The scenario in force and what the model makes of the configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveScenario {
    pub name: String,
    /// Settings whose value differs from the scenario's own, as `key=value`: the
    /// fixes applied (and anything else changed).
    pub changed: Vec<String>,
    /// The model's capacity in requests a second (`/stats.model`).
    pub capacity_per_s: f64,
    /// What limits it, or the answers-hidden notice during an exercise.
    pub limited_by: String,
}

/// `event: hello`, the first event of every stream: the history so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveHello {
    /// When this server started (ms since the epoch): a new value means a restart.
    pub started_ms: u64,
    pub lifetime_bounds_s: BucketBounds,
    /// Up to [`HISTORY_SECONDS`] seconds, oldest first.
    pub history: Vec<LiveSecond>,
    pub tick: LiveTick,
    /// Where a replay of a recording is (`system-simulator replay`); absent
    /// from a live server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayState>,
}

/// A recording served as the live view (`system-simulator replay FILE`): its
/// position and pace. `GET /replay` reads it; `PUT /replay` with a
/// [`ReplayMove`] changes it and restarts every viewer's stream there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayState {
    /// The recording's file, as named on the command line.
    pub file: String,
    /// When the recording began (ms since the epoch).
    pub began_ms: u64,
    /// The second shown last: the history holds the seconds up to it.
    pub at_s: u64,
    /// The recording's last second.
    pub length_s: u64,
    /// Recorded seconds a second of replay (1: as it ran).
    pub speed: f64,
    /// True while the replay holds its position (at its end it holds by itself).
    pub paused: bool,
    /// Where the recording stopped short of its end, in words (cut, damaged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

/// `PUT /replay`: what to change; a field left out stays as it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayMove {
    pub at_s: Option<u64>,
    pub speed: Option<f64>,
    pub paused: Option<bool>,
}

/// The slowest and fastest a replay goes, in recorded seconds a second.
pub const REPLAY_SPEEDS: (f64, f64) = (0.1, 100.0);

/// `event: second`, once a second after the hello.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveTick {
    /// The second just ended (absent in a hello sent before the first).
    pub second: Option<LiveSecond>,
    /// `/stats` counts at the end of it, the figures the page shows as totals.
    pub totals: Counts,
    pub scenario: LiveScenario,
    /// Every marker still in the history, oldest first.
    pub markers: Vec<LiveMarker>,
    /// The check reported last, if one ran in the history.
    pub check: Option<CheckProgress>,
}

/// How many seconds the server keeps for the live view: 10 minutes.
pub const HISTORY_SECONDS: usize = 600;

/// `PUT /admin/check`: a `workshop check` running against this server, as the
/// check reports it once a second and at its verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckProgress {
    pub scenario: String,
    /// The check's window and how far into it the check is.
    pub window_s: f64,
    pub elapsed_s: f64,
    pub conditions: Vec<CheckCondition>,
    /// Null while the check runs; then `solved`, `not yet` or `not checked: why`.
    pub verdict: Option<String>,
    pub passed: Option<bool>,
}

/// `PUT /admin/stage`: a load's stage begins (sim-clients with `--stages`).
/// The server marks it on every chart and notes it in its trail.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadStage {
    /// The stage's name: 1 to 32 letters, digits, `-` or `_`.
    pub name: String,
    /// What it does, at most 200 bytes of printable text:
    /// `peak: spike to 400 clients for 10s`.
    pub label: String,
}

impl LoadStage {
    /// Why the server refuses it, if it does.
    pub fn refusal(&self) -> Option<String> {
        let name_fits = !self.name.is_empty()
            && self.name.len() <= crate::load::MAX_STAGE_NAME
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !name_fits {
            return Some(format!(
                "a stage's name is 1 to {} letters, digits, - or _",
                crate::load::MAX_STAGE_NAME
            ));
        }
        let label_fits = self.label.len() <= crate::trail::TRAIL_TEXT_MAX
            && !self.label.chars().any(char::is_control);
        (!label_fits).then(|| {
            format!(
                "a stage's label is at most {} bytes, without control characters",
                crate::trail::TRAIL_TEXT_MAX
            )
        })
    }
}

/// One condition of a check, with its value so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckCondition {
    pub label: String,
    /// `< 0.05`, `> 120`.
    pub bound: String,
    /// The bound's number (0.05, 120): how far a value is from it, as the room
    /// shows a failed condition (absent from a check older than the room).
    #[serde(default)]
    pub limit: Option<f64>,
    /// The value so far (null: measured only at the end).
    pub value: Option<f64>,
    pub holds: Option<bool>,
}
