//! The JSON bodies of the HTTP API, typed once for the server that writes them and
//! the clients that read them: `POST /requests`, `GET /stats`, `GET /scenarios`,
//! and the error body. Every field is required when read, so a server and a
//! client that disagree fail loudly instead of reading a missing count as 0.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::events::Counts;
use crate::settings::{Settings, SettingsUpdate};

/// `POST /requests`' optional header: the client's key for one request, the
/// same on each of its attempts (its first and its retries), so a timeline can
/// join a retry to the attempt it retried (request-start's third argument). A
/// whole number; 0 or none: no key.
pub const REQUEST_KEY_HEADER: &str = "isim-request-key";

/// `POST /requests`: what a request gets back. Fields a newer server adds are
/// ignored by older clients; a missing one is an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reply {
    pub id: u64,
    /// True when admission could not let the request through at once and it waited.
    pub blocked: bool,
    /// How long it waited (0 when it did not block).
    pub permit_wait_ns: u64,
    /// With `normalise` on: the CRC-32 of the element's record normalised
    /// (`record.rs`), which a client checks against the reference; `null` when
    /// the service does not normalise.
    pub digest: Option<u32>,
}

/// Every error answer: `{"error": "<kind>", "message": "<what to fix>"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: String,
    pub message: String,
}

/// One line of the seed's count.d output: its label, the `/stats` field that
/// equals it, and that field.
#[derive(Debug, Clone, Copy)]
pub struct SeedCount {
    pub label: &'static str,
    pub field: &'static str,
    pub get: fn(&Counts) -> u64,
}

/// A [`SeedCount`] of `label` and the `Counts` field `field`: the field's name and
/// its getter written once, so the two cannot name different counts.
macro_rules! seed_count {
    ($label:literal, $field:ident) => {
        SeedCount {
            label: $label,
            field: stringify!($field),
            get: |c| c.$field,
        }
    };
}

/// The seed's count.d labels in its order; the demo, the shutdown report, the
/// sweep and the script tests all use this list.
pub const SEED_COUNTS: [SeedCount; 6] = [
    seed_count!("requests started", requests_started),
    seed_count!("requests done", requests_done),
    seed_count!("blocked requests", requests_blocked),
    seed_count!("non blocked requests", requests_nonblocked),
    seed_count!("persistent writes started", persists_started),
    seed_count!("persistent writes done", persists_done),
];

/// TCP connections: open now, served since start, refused at `max_connections`;
/// and what the kernel holds for the data port's listening socket (Linux; `null`
/// elsewhere): its accept queue now (`ss -lnt`'s Recv-Q), that queue's limit
/// (Send-Q: `listen_backlog` capped by `net.core.somaxconn`), and the packets it
/// dropped since it opened (`SO_MEMINFO`: SYNs at a full accept queue, and the
/// handshakes' last ACKs and the requests behind them it could not take; the
/// kernel counts a dropped ACK twice there, so this runs above `nstat`'s
/// `TcpExtListenOverflows`, which counts the machine's). And the replies' writes:
/// every write to a data-port connection, and the pairs of writes to one
/// connection within a millisecond (a reply's head, then its body), what
/// delayed-ack.bt counts of the server's `writev` calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionCounts {
    pub open: u64,
    pub accepted: u64,
    pub refused: u64,
    #[serde(default)]
    pub writes: u64,
    #[serde(default)]
    pub write_pairs: u64,
    #[serde(default)]
    pub listen_queue: Option<u32>,
    /// The longest the queue was at an accept over the last 1.0-1.1 s (the
    /// accept loop reads it at each; a reader once a second misses no peak).
    #[serde(default)]
    pub listen_queue_peak: Option<u32>,
    #[serde(default)]
    pub listen_backlog: Option<u32>,
    #[serde(default)]
    pub listen_drops: Option<u64>,
}

/// The server's file descriptors now: every connection it holds, every file it
/// has open, and its runtime's own (an epoll, a few pipes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DescriptorCounts {
    /// Open now (`/proc/self/fd`, macOS's `/dev/fd`). At the limit the count
    /// cannot be read, since reading it takes a descriptor, and `limit` stands
    /// in: EMFILE says that every one below the limit is taken.
    pub open: u64,
    /// The soft limit (`ulimit -n`), as raised toward the hard one at start.
    pub limit: u64,
}

/// The server's resident memory (RSS): what its pages take of the machine's
/// memory now, and how fast that grew over the last 10 s (the least-squares
/// slope of one reading a second; null until three readings); and its limit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MemoryCounts {
    pub resident_bytes: u64,
    pub resident_growth_bytes_per_s: Option<f64>,
    /// The limit on its data memory now (Linux's `RLIMIT_DATA`: the world's
    /// `memory_limit`, or raised from outside); null without one.
    #[serde(default)]
    pub limit_bytes: Option<u64>,
}

/// `GET /stats`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// The server's process id (what a tracer attaches to).
    #[serde(default)]
    pub pid: u32,
    #[serde(flatten)]
    pub counts: Counts,
    pub requests_in_flight: u64,
    pub persists_in_flight: u64,
    /// Elements waiting in the persistence queue, not yet started (pool only).
    pub persists_queued: u64,
    pub permits_available: usize,
    pub permits_total: usize,
    /// Requests waiting for a permit right now.
    pub permits_waiting: u64,
    /// Writes holding one of the store's `store_concurrency` slots (null: no limit).
    pub store_slots_busy: Option<u64>,
    /// Elements whose request was answered (or is being answered) while their
    /// write is not yet made: handed to persistence without `durable`, until their
    /// persist-done or their drop from the queue. A persist the store ends at
    /// once, before the reply, is never counted.
    #[serde(default)]
    pub acked_unwritten: u64,
    /// The most [`acked_unwritten`](Self::acked_unwritten) at once over the last
    /// second (1.0-1.1 s) and now: read twice a second, its largest is a
    /// window's peak.
    #[serde(default)]
    pub acked_unwritten_peak: u64,
    /// Entries in the shared index (`index`; 0 without one): only compactions
    /// drop them, so it stays bounded only while they run.
    #[serde(default)]
    pub index_entries: u64,
    /// Elements in the cache now (`cache_entries`; 0 without one).
    #[serde(default)]
    pub cache_held: u64,
    /// Persists journalled since start: each an entry begun in the journal,
    /// its intent appended (`journal`; 0 while it is off).
    #[serde(default)]
    pub journal_entries: u64,
    /// Replies remembered for the clients' retries now (`answer_retries_once`),
    /// and the bytes their elements' copies hold.
    #[serde(default)]
    pub remembered_replies: u64,
    #[serde(default)]
    pub remembered_bytes: u64,
    /// Retries answered from a remembered reply since start, not stored again.
    #[serde(default)]
    pub retries_answered: u64,
    /// The server's resident memory (null where the OS will not say).
    #[serde(default)]
    pub memory: Option<MemoryCounts>,
    pub connections: ConnectionCounts,
    /// CPU the server process has used since it started (null where the OS will not say).
    pub process_cpu_ns: Option<u64>,
    /// The server's file descriptors (null where the OS has no such limit).
    #[serde(default)]
    pub descriptors: Option<DescriptorCounts>,
    /// Time the server's threads spent runnable and waiting for a CPU, summed
    /// over threads, since the server began (Linux's `schedstat`; null
    /// elsewhere): a CPU shared with someone else, where the process's own CPU
    /// time looks lower than usual.
    #[serde(default)]
    pub runqueue_wait_ns: Option<u64>,
    /// The process the world runs beside the server (`neighbour_threads_per_cpu`),
    /// null in a world without one.
    #[serde(default)]
    pub neighbour: Option<NeighbourStats>,
    /// The time inside the server of every request done since the process
    /// started, summed (request-start to request-done; `/metrics`'
    /// `isim_request_lifetime_seconds_sum`): its change over the change of
    /// `requests_done` is the mean of an interval.
    #[serde(default)]
    pub requests_done_ns: u64,
    /// The server's network namespace's TCP counters, what `nstat` shows there
    /// (Linux; null elsewhere): the kernel's count of what no probe sees.
    #[serde(default)]
    pub tcp: Option<TcpCounters>,
    /// The async runtime: its workers, how busy they are, and how late its timers fire.
    pub runtime: RuntimeStats,
    /// The machine as the exercises depend on it: cores, quota, timer, the work's calibration.
    pub machine: Machine,
    /// The cgroup the server's CPU is accounted in: its limit and what the kernel
    /// did with it (`cpu.stat`); null where no cgroup cpu controller is mounted.
    #[serde(default)]
    pub cpu_cgroup: Option<CpuCgroup>,
    /// The scenario in force (the one the server started in, or switched to live).
    pub scenario: String,
    /// Its fixes, each the exact `PUT /admin/config` body that applies it.
    pub fixes: Vec<Fix>,
    /// Its incidents (`PUT /admin/incident` begins the first now).
    pub incidents: Vec<crate::Incident>,
    /// The incident in force, if one is.
    pub incident: Option<crate::IncidentStatus>,
    /// The store in force: `simulated`, or `files` with `persist_dir`.
    pub store: String,
    /// What the configuration in force predicts.
    pub model: Model,
    /// The configuration in force, live changes included.
    pub config: Settings,
}

/// The neighbour a world runs beside the server: a process of its own with
/// CPU-bound threads (`system-simulator neighbour`), which the server started
/// and reads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NeighbourStats {
    /// Its process id (`renice`, `chrt`, `taskset` take it).
    pub pid: u32,
    /// Its CPU-bound threads.
    pub threads: u32,
    /// Units of work it has done since it started (a unit is a fixed amount of
    /// integer arithmetic, so its rate is the CPU it gets), as of its last
    /// report (every 25 ms).
    pub work: u64,
    /// Whether it still runs (false once it ended or was killed).
    pub running: bool,
    /// Its units of work a second alone: measured by the server as the world
    /// started, over its first second, before the server listened (so no load
    /// and no fix can touch it). `workshop check` holds its rate under the
    /// load to a share of this. Servers of earlier versions have none.
    #[serde(default)]
    pub alone_per_s: Option<u64>,
    /// How the kernel schedules its threads: `nice 0`, `nice 19`, `idle`
    /// (`SCHED_IDLE`), `mixed` where they differ; null where it cannot be read.
    #[serde(default)]
    pub scheduling: Option<String>,
}

/// The `TcpExt` counters of the server's network namespace (`/proc/self/net/netstat`,
/// which any user may read; `nstat -az` shows the same), since the namespace
/// began: the machine's, unless the server runs in a namespace of its own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpCounters {
    /// `TcpExtListenOverflows`: SYNs and handshakes' last ACKs a listener
    /// dropped because its accept queue was full.
    pub listen_overflows: u64,
    /// `TcpExtListenDrops`: the same and every other drop at a listener.
    pub listen_drops: u64,
    /// `TcpExtDelayedACKs`: acknowledgements sent when the delayed-ACK timer fired.
    pub delayed_acks: u64,
}

/// The server's CPU cgroup and its `cpu.stat` since the group was made. Rates per
/// second are the differences of two readings (`/live/events` carries each
/// second's; Prometheus takes `rate()` of the `/metrics` counters).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuCgroup {
    /// The group's directory, e.g. `/sys/fs/cgroup/cpu/isim-serve-4242`.
    pub path: String,
    /// Whether the server made it for a world with `cpu_quota` (else it is the one
    /// the server was started in).
    pub made_by_server: bool,
    /// The group's own quota per period, microseconds (null: no limit).
    pub quota_us: Option<u64>,
    pub period_us: u64,
    /// The tightest quota over the group and its parents, in cores (null: none).
    pub quota_cores: Option<f64>,
    /// Periods in which the group had threads that wanted to run.
    pub periods: u64,
    /// Periods in which it ran out of quota and its threads waited for the next.
    pub throttled_periods: u64,
    /// Time its threads waited so, summed over the CPUs they waited on.
    pub throttled_us: u64,
}

/// The machine the server measured: what a scenario's CPU costs are scaled to and
/// what its timers can do. A figure that differs from a page's is read against it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Cores this process may run on (CPU affinity and cgroup quota, rounded up).
    pub cores: usize,
    /// CPUs its affinity lets it run on, whatever its quota (`taskset`).
    #[serde(default)]
    pub affinity_cpus: usize,
    /// The CPU a cgroup quota allows, in cores, where one is set.
    pub cpu_quota_cores: Option<f64>,
    /// The async runtime's timer tick (tokio's: 1,000 us).
    pub timer_tick_us: u64,
    /// How much later than asked the runtime's sleeps wake now, on average.
    pub timer_overshoot_us: u64,
    /// zstd on the work's text, bytes per CPU second, measured here once a scenario
    /// asks for CPU work by time (`work_cpu`); null before.
    pub zstd_bytes_per_cpu_s: Option<f64>,
    /// Bytes one work compresses under the settings in force; null with `work = none`.
    pub work_bytes: Option<u64>,
    /// The server's OS, as Rust names it (`linux`, `macos`, `windows`...).
    #[serde(default)]
    pub os: String,
    /// What of the kernel's figures that OS does not give the server (empty on
    /// Linux): an exercise whose world or check needs one cannot run there.
    #[serde(default)]
    pub os_lacks: Vec<OsFeature>,
}

/// A figure or control of the kernel's that some OSes do not give a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OsFeature {
    /// CPU cgroups: a quota of the server's own and its `cpu.stat` (Linux).
    Cgroups,
    /// The packets the kernel dropped for one listening socket (`SO_MEMINFO`, Linux).
    ListenerDrops,
    /// The network namespace's TCP counters (`/proc/net/netstat`, Linux).
    TcpCounters,
    /// The threads' time runnable and waiting for a CPU (`/proc/PID/task/*/schedstat`, Linux).
    RunQueueWait,
}

impl OsFeature {
    /// What it is, in a sentence's words.
    pub fn describe(self) -> &'static str {
        match self {
            OsFeature::Cgroups => {
                "CPU cgroups (a CPU quota of the server's own and its throttling counts)"
            }
            OsFeature::ListenerDrops => {
                "the kernel's count of packets dropped for one listening socket (`SO_MEMINFO`)"
            }
            OsFeature::TcpCounters => {
                "the kernel's TCP counters (`/proc/net/netstat`: listen overflows, delayed ACKs)"
            }
            OsFeature::RunQueueWait => {
                "the kernel's count of the time the server's threads waited for a CPU (`schedstat`)"
            }
        }
    }
}

/// The tokio runtime the server runs on, from its stable metrics, and the
/// timer-lateness canary: a task that sleeps `canary_interval_ms` over and over and
/// records how much later than asked it woke. Work that blocks an async worker
/// shows here first: the canary's p99 jumps while its p50 barely moves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RuntimeStats {
    /// Async worker threads.
    pub workers: usize,
    /// Tasks alive now (requests, persists, connections, the canary...).
    pub alive_tasks: usize,
    /// Tasks waiting in the runtime's global queue for a worker.
    pub global_queue_depth: usize,
    /// Time the workers have spent busy since start, summed over workers.
    pub busy_ns: u64,
    /// Busy time over the last `window_ms` as a share of the workers' time, 0 to 1.
    pub busy_share: f64,
    /// Works begun and not finished (waiting for a slot or running).
    pub work_in_flight: u64,
    /// The canary's period (0 when the canary is not running, as in unit tests).
    pub canary_interval_ms: u64,
    /// Canary wake-ups since start (probe canary-tick).
    pub canary_ticks: u64,
    /// The window the figures below cover: the last few seconds, so a live fix
    /// shows within that time.
    pub window_ms: u64,
    /// Canary wake-ups in the window, and how late they were.
    pub window_ticks: u64,
    pub late_p50_us: u64,
    pub late_p99_us: u64,
    pub late_max_us: u64,
}

/// What queueing theory predicts from the configuration in force.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// The most requests a second the request path can pass (Little's law), or
    /// null when nothing in it bounds concurrency.
    pub capacity_per_s: Option<f64>,
    /// Which part sets that capacity, in words.
    pub limited_by: String,
    /// The mean simulated persist time.
    pub persist_mean_ns: u64,
    /// The mean request lifetime when nothing waits: both network traverses.
    pub lifetime_unblocked_ns: u64,
    /// The think time of the scenario's load, which `saturation_clients` assumes.
    pub think_time_ns: u64,
    /// The closed-loop client count whose offered load equals the capacity: beyond
    /// it nearly every request waits (null when the capacity is unbounded).
    pub saturation_clients: Option<f64>,
    /// The scenario's first fix, as the `PUT /admin/config` body that applies it.
    pub fix: Option<Fix>,
    /// What the scenario's retrying clients make of its load (null when its
    /// clients do not retry).
    pub retried: Option<RetriedLoad>,
}

/// The load of clients that time out and retry, in the two states it can settle
/// in: every attempt answered (the offered rate) or every attempt timing out
/// (the offered rate times the attempts each request then makes). When the
/// second exceeds the capacity, the server has two stable states, and a trigger
/// that pushes it into the second leaves it there after the trigger has gone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetriedLoad {
    /// Requests a second the load offers: first attempts.
    pub offered_per_s: f64,
    /// The clients' timeout.
    pub timeout_ns: u64,
    /// Attempts a request makes when every one times out: 1 + its retries, or 1 +
    /// the retry budget's share when that is smaller.
    pub attempts_when_failing: f64,
    /// `offered_per_s` x `attempts_when_failing`.
    pub retried_per_s: f64,
    /// Whether `retried_per_s` exceeds the capacity (null when unbounded).
    pub exceeds_capacity: Option<bool>,
}

impl Model {
    /// Closed-loop clients thinking `think_s` seconds offer this many requests a second.
    pub fn offered_per_s(&self, clients: usize, think_s: f64) -> f64 {
        clients as f64 / (think_s + self.lifetime_unblocked_ns as f64 / 1e9)
    }

    /// What `clients` closed-loop clients should get: min(offered, capacity).
    pub fn predicted_per_s(&self, clients: usize, think_s: f64) -> f64 {
        let offered = self.offered_per_s(clients, think_s);
        self.capacity_per_s.map_or(offered, |c| offered.min(c))
    }

    /// The client count at which the offered load reaches the capacity.
    pub fn saturation_at(&self, think_s: f64) -> Option<f64> {
        self.capacity_per_s
            .map(|c| c * (think_s + self.lifetime_unblocked_ns as f64 / 1e9))
    }
}

/// A fix a scenario offers: a live configuration change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fix {
    pub name: String,
    pub summary: String,
    /// The exact `PUT /admin/config` body, for the scenario's own load.
    pub config: SettingsUpdate,
    /// Settings that scale with the clients: the fix at N clients sets each key to
    /// its value here times N (the seed's permits = 8 x clients).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub per_client: BTreeMap<String, u64>,
    /// Set when the fix trades the symptom for something else the scenario's
    /// win condition counts (shedding most requests, say): what it gives up.
    /// `workshop check` does not pass it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trade_off: Option<String>,
    /// A client-side fix: the clients' flags it changes (how they give up and
    /// retry: `--retries`, `--backoff`, `--retry-budget`), laid over the
    /// scenario's load by `workshop check --client-change`, the demo and the
    /// sweep. Empty for a fix to the server alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub load: Vec<String>,
    /// A fix outside the service and its clients: a command the machine's
    /// operator runs in a shell (`renice`, `chrt`, `taskset` on a noisy
    /// neighbour, `prlimit` on the server), with the server's pid in
    /// `$SERVER` and the world's neighbour's in `$NEIGHBOUR`. `config` is then
    /// empty: the service is not what changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outside: Option<String>,
}

impl Fix {
    /// The `PUT /admin/config` body for `clients` clients: `config` with every
    /// `per_client` key scaled.
    pub fn config_for(&self, clients: usize) -> Result<SettingsUpdate, String> {
        let mut body = serde_json::to_value(&self.config).map_err(|e| e.to_string())?;
        let object = body
            .as_object_mut()
            .ok_or("a fix's config is a JSON object")?;
        for (key, per) in &self.per_client {
            let value = per
                .checked_mul(clients as u64)
                .ok_or_else(|| format!("{key} = {per} x {clients} clients overflows"))?;
            object.insert(key.clone(), value.into());
        }
        serde_json::from_value(body).map_err(|e| format!("fix {}: {e}", self.name))
    }
}

/// One entry of `GET /scenarios`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioInfo {
    pub name: String,
    /// The seed document it comes from, e.g. `003`.
    pub seed: String,
    pub summary: String,
    /// What to measure and the signature to expect.
    pub symptom: String,
    /// The sim-clients arguments that show the symptom.
    pub load: Vec<String>,
    pub fixes: Vec<Fix>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fix_scales_with_the_clients() {
        let fix = Fix {
            name: "permits-per-client".into(),
            summary: String::new(),
            config: SettingsUpdate {
                permits: Some(1080),
                ..SettingsUpdate::default()
            },
            per_client: BTreeMap::from([("permits".into(), 8)]),
            trade_off: None,
            load: Vec::new(),
            outside: None,
        };
        assert_eq!(fix.config_for(1000).unwrap().permits, Some(8000));
        assert!(fix.config_for(usize::MAX).is_err());
        let unknown = Fix {
            per_client: BTreeMap::from([("permitz".into(), 8)]),
            ..fix
        };
        assert!(unknown.config_for(1).is_err());
    }

    #[test]
    fn the_model_predicts_the_seed_plateau_and_its_tipping_point() {
        let model = Model {
            capacity_per_s: Some(8.0 / 0.060),
            limited_by: String::new(),
            persist_mean_ns: 60_000_000,
            lifetime_unblocked_ns: 3_000_000,
            think_time_ns: 1_000_000_000,
            saturation_clients: None,
            fix: None,
            retried: None,
        };
        let capacity = model.capacity_per_s.unwrap();
        assert!((capacity - 133.3).abs() < 0.1);
        assert!(
            model.offered_per_s(135, 1.0) > capacity && model.offered_per_s(125, 1.0) < capacity
        );
        assert_eq!(model.predicted_per_s(1000, 1.0), capacity);
        assert!((model.saturation_at(1.0).unwrap() - 133.7).abs() < 0.1);
    }
}
