//! What a load run is: how many clients, how they pace themselves, when they
//! stop, and which share of it this process runs (`shard.rs`). The bottom of the
//! crate: every other folder reads a plan, and a plan reads none of them.
//!
//! The default is the original simulator's client: a closed loop in which every
//! client sends one element, waits for the reply, thinks for 1 s and repeats, all
//! clients starting at the same instant (the burst is part of the seed's story).
//! The open loop instead sends on a fixed schedule of arrivals, whatever the
//! server does, over a pool of `clients` connections.

use std::net::IpAddr;
use std::time::{Duration, SystemTime};

pub use simulator_api::load::{Arrivals, Connections, Pacing, PayloadSize, RetryPolicy};
use simulator_api::Load;

pub mod shard;

use shard::{Shard, ShardInfo};

/// One load run: a load (what the clients do, its flags read once:
/// `simulator_api::Load`) against a target, and the driver's own options.
#[derive(Debug, Clone)]
pub struct LoadPlan {
    /// Base URL of the server, e.g. `http://127.0.0.1:7878`.
    pub target: String,
    /// What the clients do. Closed loop: `clients` virtual clients. Open
    /// loop: a pool of `clients` connections.
    pub load: Load,
    /// When the run ends: the load's own stop, unless the run was given
    /// another ([`LoadPlan::running_for`]).
    pub stop: Stop,
    /// A send that leaves more than this after its scheduled time counts as late.
    pub late_after: Duration,
    /// After the planned duration, how long to wait for replies still in flight
    /// (queued at a saturated server) before giving up on them.
    pub max_drain: Duration,
    /// This process's share of a load split over several (`shard.rs`); `None`
    /// runs it all.
    pub shard: Option<ShardInfo>,
    /// Start the first sends at this wall-clock time (`start.rs`) instead of at once.
    pub start_at: Option<SystemTime>,
    /// Names the run, so `merge` can tell its shards from another run's; also
    /// seeds the run when `seed` is not given, so every shard draws the same
    /// timetable and sizes.
    pub run_id: Option<String>,
    /// Local addresses the connections leave from, taken in turn; empty lets the
    /// kernel choose. Several give more ephemeral ports than one address has.
    pub bind: Vec<IpAddr>,
    /// Wait for sends and think times on a timer of nanosecond resolution
    /// (`platform/precise_timer.rs`, Linux) instead of tokio's millisecond wheel, each wait
    /// ending at most this slack late; `None`: tokio's timer.
    pub precise_pacing: Option<Duration>,
}

/// How long a run waits for replies in flight after its planned duration, unless
/// told otherwise (`--max-drain`).
pub const DEFAULT_MAX_DRAIN: Duration = Duration::from_secs(30);

pub use simulator_api::load::MAX_RATE;

/// The longest slack `--precise-pacing` takes.
pub const MAX_PACING_SLACK: Duration = Duration::from_millis(1);

/// Why a plan cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("the plan needs at least one client")]
    NoClients,
    #[error("the plan needs a stop condition: a duration or a number of requests per client")]
    NoStop,
    #[error("an open loop stops by duration only: --requests counts per client, which an open loop does not have")]
    OpenLoopRequests,
    #[error("rate {0} is not a number of requests per second in (0, {MAX_RATE}]")]
    Rate(f64),
    #[error("shard {shard} of {clients} clients (or connections) has none: run at most as many shards as --n")]
    EmptyShard { shard: Shard, clients: usize },
    #[error("a sharded Poisson open loop needs every shard to draw the same timetable: give --seed, --run-id or --start-at")]
    ShardSeed,
    #[error("--precise-pacing needs Linux (timerfd)")]
    PreciseElsewhere,
    #[error("--precise-pacing's slack is at most 1ms: later than that, tokio's timer (the default) is as late and cheaper")]
    PacingSlack,
}

/// What one request sends: a synthetic element of `size` bytes to store, or,
/// with a key, a read of that key's element (`--keys`); and, when it may be
/// retried, the key every attempt of it carries
/// (`simulator_api::bodies::REQUEST_KEY_HEADER`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Body {
    pub size: u64,
    pub key: Option<u64>,
    pub request_key: Option<u64>,
}

impl Body {
    pub fn store(size: u64) -> Self {
        Self {
            size,
            key: None,
            request_key: None,
        }
    }
}

impl LoadPlan {
    /// The next request's body, drawn from `rng` (a client's payload
    /// generator): its size, then its key with `--keys`.
    pub fn body<R: rand::Rng + ?Sized>(&self, rng: &mut R) -> Body {
        let size = self.load.payload.sample(rng);
        let key = self.load.keys.map(|keys| keys.sample(rng));
        Body {
            size,
            key,
            request_key: None,
        }
    }

    /// The run of `load` against `target`, with the driver's own options at their
    /// defaults: what a scenario's load means, and what sim-clients' flags mean
    /// (`Args::plan` starts here).
    pub fn new(load: Load, target: &str) -> LoadPlan {
        let (duration, requests_per_client) = load.stop();
        LoadPlan {
            target: target.to_owned(),
            load,
            stop: Stop {
                duration,
                requests_per_client,
            },
            late_after: DEFAULT_LATE_AFTER,
            max_drain: DEFAULT_MAX_DRAIN,
            shard: None,
            start_at: None,
            run_id: None,
            bind: Vec::new(),
            precise_pacing: None,
        }
    }

    /// The plan with its load changed by `change`: a load's words are read
    /// once, so a plan made in code (a test's, the demo's) sets its fields.
    #[must_use]
    pub fn with_load(mut self, change: impl FnOnce(&mut Load)) -> LoadPlan {
        change(&mut self.load);
        self
    }

    /// `load` against `target` for `duration` instead of its own stop (`None`:
    /// until stopped, at most the longest span a setting takes): a scenario's
    /// load as the demo and the check run it, for a window of their own.
    pub fn running_for(load: &Load, target: &str, duration: Option<Duration>) -> LoadPlan {
        let mut plan = LoadPlan::new(load.clone(), target);
        plan.stop.duration = duration.or(Some(simulator_api::settings::MAX_SPAN));
        plan
    }

    pub fn validate(&self) -> Result<(), PlanError> {
        if self.load.clients == 0 {
            return Err(PlanError::NoClients);
        }
        if self.stop.duration.is_none() && self.stop.requests_per_client.is_none() {
            return Err(PlanError::NoStop);
        }
        if let Pacing::Open { rate, .. } = self.load.pacing {
            if !(rate > 0.0 && rate <= MAX_RATE) {
                return Err(PlanError::Rate(rate));
            }
            if self.stop.requests_per_client.is_some() {
                return Err(PlanError::OpenLoopRequests);
            }
            if self.stop.duration.is_none() {
                return Err(PlanError::NoStop);
            }
        }
        let shard = self.shard();
        if shard.share(self.load.clients) == 0 {
            return Err(PlanError::EmptyShard {
                shard,
                clients: self.load.clients,
            });
        }
        let poisson = matches!(
            self.load.pacing,
            Pacing::Open {
                arrivals: Arrivals::Poisson,
                ..
            }
        );
        if poisson && shard.count > 1 && self.shared_seed().is_none() {
            return Err(PlanError::ShardSeed);
        }
        if self.precise_pacing.is_some() && !crate::platform::HAS_PRECISE_TIMER {
            return Err(PlanError::PreciseElsewhere);
        }
        if self
            .precise_pacing
            .is_some_and(|slack| slack > MAX_PACING_SLACK)
        {
            return Err(PlanError::PacingSlack);
        }
        Ok(())
    }

    /// This process's shard; the whole load when unsplit.
    pub fn shard(&self) -> Shard {
        self.shard.map_or(Shard::WHOLE, |s| s.shard())
    }

    /// The clients (closed loop) or connections (open loop) this process runs.
    pub fn local_clients(&self) -> usize {
        self.shard().share(self.load.clients)
    }

    /// The seed every shard of the run agrees on: `--seed`, or one drawn from the
    /// run's id (FNV-1a, stable across machines and builds); `None` when neither
    /// is given and each process may draw its own.
    pub fn shared_seed(&self) -> Option<u64> {
        self.load.seed.or_else(|| self.run_id.as_deref().map(fnv1a))
    }
}

/// FNV-1a, 64 bits: a fixed hash that every machine and build computes alike
/// (std's hashers promise no such thing), enough to turn a run's name into a seed.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// When the run ends. With both set, whichever comes first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stop {
    pub duration: Option<Duration>,
    pub requests_per_client: Option<u64>,
}

impl Default for LoadPlan {
    /// A load of no flags against the server's default address.
    fn default() -> Self {
        LoadPlan::new(Load::default(), "http://127.0.0.1:7878")
    }
}

/// Tokio's timers tick in whole milliseconds, so a wake up to 1 ms after its time
/// is on time; 5 ms late is a client that could not keep its schedule.
pub const DEFAULT_LATE_AFTER: Duration = Duration::from_millis(5);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_loops_need_a_rate_and_a_duration() {
        let open = |rate| {
            LoadPlan {
                ..LoadPlan::default()
            }
            .with_load(|load| {
                load.pacing = Pacing::Open {
                    rate,
                    arrivals: Arrivals::Uniform,
                };
            })
        };
        assert_eq!(open(100.0).validate(), Ok(()));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, MAX_RATE * 2.0] {
            assert!(open(bad).validate().is_err(), "{bad}");
        }
        let per_client = LoadPlan {
            stop: Stop {
                duration: Some(Duration::from_secs(1)),
                requests_per_client: Some(3),
            },
            ..open(100.0)
        };
        assert_eq!(per_client.validate(), Err(PlanError::OpenLoopRequests));
        let no_stop = LoadPlan {
            stop: Stop::default(),
            ..LoadPlan::default()
        };
        assert_eq!(no_stop.validate(), Err(PlanError::NoStop));
    }

    #[test]
    fn a_pacing_slack_is_at_most_a_millisecond() {
        if !crate::platform::HAS_PRECISE_TIMER {
            return; // refused whatever its slack: PreciseElsewhere
        }
        let with = |slack| LoadPlan {
            precise_pacing: Some(slack),
            ..LoadPlan::default()
        };
        assert_eq!(with(Duration::ZERO).validate(), Ok(()));
        assert_eq!(with(MAX_PACING_SLACK).validate(), Ok(()));
        assert_eq!(
            with(MAX_PACING_SLACK + Duration::from_nanos(1)).validate(),
            Err(PlanError::PacingSlack)
        );
    }
}
