//! What a load run is: how many clients, how they pace themselves, when they stop.
//!
//! The default is the original simulator's client: a closed loop in which every
//! client sends one element, waits for the reply, thinks for 1 s and repeats, all
//! clients starting at the same instant (the burst is part of the seed's story).
//! The open loop instead sends on a fixed schedule of arrivals, whatever the
//! server does, over a pool of `clients` connections.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, SystemTime};

use hyper::header::HeaderValue;
use rand::Rng;
use serde::{Deserialize, Serialize};
use simulator_api::value::parse_size;

use crate::shard::{Shard, ShardInfo};

/// One load run.
#[derive(Debug, Clone)]
pub struct LoadPlan {
    /// Base URL of the server, e.g. `http://127.0.0.1:7878`.
    pub target: String,
    /// Closed loop: the number of virtual clients. Open loop: the connection pool.
    pub clients: usize,
    pub pacing: Pacing,
    pub stop: Stop,
    pub payload: PayloadSize,
    pub timeout: Duration,
    /// A send that leaves more than this after its scheduled time counts as late.
    pub late_after: Duration,
    /// Seeds the Poisson arrivals and payload sizes; `None` draws a fresh seed.
    pub seed: Option<u64>,
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
    /// Wait for sends and think times with a timer per client of nanosecond
    /// resolution (`precise.rs`, Linux) instead of tokio's millisecond wheel.
    pub precise_pacing: bool,
}

/// How long a run waits for replies in flight after its planned duration, unless
/// told otherwise (`--max-drain`).
pub const DEFAULT_MAX_DRAIN: Duration = Duration::from_secs(30);

/// How sends are paced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pacing {
    /// Each client: send, wait for the reply, think, repeat. A slow server slows
    /// the clients down, which is the original's behaviour and the seed's story.
    Closed {
        think_time: Duration,
        /// Client starts spread evenly over this long; zero starts them all at once.
        ramp_up: Duration,
    },
    /// Sends leave on a schedule of `rate` per second in total, whatever the
    /// server does; latency counts from the scheduled time (no coordinated omission).
    Open { rate: f64, arrivals: Arrivals },
}

impl Pacing {
    pub fn mode(&self) -> &'static str {
        match self {
            Pacing::Closed { .. } => "closed",
            Pacing::Open { .. } => "open",
        }
    }
}

/// The spacing of open-loop sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// Evenly spaced, 1/rate apart.
    Uniform,
    /// Exponentially distributed gaps with mean 1/rate, as independent users arrive.
    Poisson,
}

/// The highest open-loop rate, well above what one process can send; it keeps the
/// schedule's arithmetic exact.
pub const MAX_RATE: f64 = 10_000_000.0;

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
}

impl LoadPlan {
    pub fn validate(&self) -> Result<(), PlanError> {
        if self.clients == 0 {
            return Err(PlanError::NoClients);
        }
        if self.stop.duration.is_none() && self.stop.requests_per_client.is_none() {
            return Err(PlanError::NoStop);
        }
        if let Pacing::Open { rate, .. } = self.pacing {
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
        if shard.share(self.clients) == 0 {
            return Err(PlanError::EmptyShard {
                shard,
                clients: self.clients,
            });
        }
        let poisson = matches!(
            self.pacing,
            Pacing::Open {
                arrivals: Arrivals::Poisson,
                ..
            }
        );
        if poisson && shard.count > 1 && self.shared_seed().is_none() {
            return Err(PlanError::ShardSeed);
        }
        if self.precise_pacing && !cfg!(target_os = "linux") {
            return Err(PlanError::PreciseElsewhere);
        }
        Ok(())
    }

    /// This process's shard; the whole load when unsplit.
    pub fn shard(&self) -> Shard {
        self.shard.map_or(Shard::WHOLE, |s| s.shard())
    }

    /// The clients (closed loop) or connections (open loop) this process runs.
    pub fn local_clients(&self) -> usize {
        self.shard().share(self.clients)
    }

    /// The seed every shard of the run agrees on: `--seed`, or one drawn from the
    /// run's id (FNV-1a, stable across machines and builds); `None` when neither
    /// is given and each process may draw its own.
    pub fn shared_seed(&self) -> Option<u64> {
        self.seed.or_else(|| self.run_id.as_deref().map(fnv1a))
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

/// The size of each element, sent as a synthetic `{"size": N}` so large elements
/// cost the client nothing to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PayloadSize {
    Fixed {
        bytes: u64,
    },
    Uniform {
        low: u64,
        high: u64,
    },
    /// Heavy-tailed sizes: a lognormal distribution with this mean and standard
    /// deviation in bytes (not of the logarithm), each draw rounded and kept
    /// within 1 byte to [`MAX_DRAWN_BYTES`].
    Lognormal {
        mean: u64,
        sd: u64,
    },
}

/// The largest size a distribution draws: the server's default
/// `max_element_bytes`, so a far tail never turns into a 413.
pub const MAX_DRAWN_BYTES: u64 = 1 << 30;

impl PayloadSize {
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        match *self {
            PayloadSize::Fixed { bytes } => bytes,
            PayloadSize::Uniform { low, high } => rng.random_range(low..=high),
            PayloadSize::Lognormal { mean, sd } => {
                let (mu, sigma) = lognormal_parameters(mean, sd);
                // The parameters are finite and sigma >= 0 (checked at parse), so
                // the distribution always builds; a zero spread is a fixed size.
                let drawn = rand_distr::LogNormal::new(mu, sigma)
                    .map_or(mean as f64, |d| rand_distr::Distribution::sample(&d, rng));
                (drawn.round() as u64).clamp(1, MAX_DRAWN_BYTES)
            }
        }
    }
}

/// The underlying normal's mu and sigma for a lognormal of this mean and sd:
/// sigma^2 = ln(1 + sd^2 / mean^2), mu = ln(mean) - sigma^2 / 2.
fn lognormal_parameters(mean: u64, sd: u64) -> (f64, f64) {
    let (mean, sd) = (mean as f64, sd as f64);
    let sigma2 = (1.0 + (sd * sd) / (mean * mean)).ln();
    (mean.ln() - sigma2 / 2.0, sigma2.sqrt())
}

impl std::str::FromStr for PayloadSize {
    type Err = String;

    /// `4096`, `64k`, `uniform(1024, 65536)` or `lognormal(256k, 1M)` (sizes take
    /// binary units).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let parse = |t: &str| parse_size(t.trim()).map_err(|e| format!("`{s}`: {e}"));
        let two = |args: &str, form: &str| {
            let (a, b) = args
                .split_once(',')
                .ok_or_else(|| format!("`{s}`: write {form}"))?;
            Ok::<_, String>((parse(a)?, parse(b)?))
        };
        if let Some(args) = s.strip_prefix("uniform(").and_then(|r| r.strip_suffix(')')) {
            let (low, high) = two(args, "uniform(LOW, HIGH)")?;
            if low > high {
                return Err(format!("`{s}`: LOW is above HIGH"));
            }
            return Ok(PayloadSize::Uniform { low, high });
        }
        if let Some(args) = s
            .strip_prefix("lognormal(")
            .and_then(|r| r.strip_suffix(')'))
        {
            let (mean, sd) = two(args, "lognormal(MEAN, SD)")?;
            if mean == 0 || mean > MAX_DRAWN_BYTES {
                return Err(format!("`{s}`: MEAN must be 1 byte to 1 GiB"));
            }
            return Ok(PayloadSize::Lognormal { mean, sd });
        }
        parse(s)
            .map(|bytes| PayloadSize::Fixed { bytes })
            .map_err(|_| {
                format!("`{s}` is not a size (`64k`), uniform(LOW, HIGH) or lognormal(MEAN, SD)")
            })
    }
}

#[cfg(test)]
mod payload_tests {
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn lognormal_sizes_have_the_mean_asked_for_and_a_heavy_tail() {
        let size: PayloadSize = "lognormal(256k, 1M)".parse().unwrap();
        assert_eq!(
            size,
            PayloadSize::Lognormal {
                mean: 256 << 10,
                sd: 1 << 20
            }
        );
        let mut rng = SmallRng::seed_from_u64(7);
        let mut draws: Vec<u64> = (0..200_000).map(|_| size.sample(&mut rng)).collect();
        draws.sort_unstable();
        let mean = draws.iter().sum::<u64>() as f64 / draws.len() as f64;
        assert!((mean / (256 << 10) as f64 - 1.0).abs() < 0.1, "mean {mean}");
        let (p50, p99) = (draws[100_000], draws[198_000]);
        assert!(p99 > 20 * p50, "heavy tail: p50 {p50}, p99 {p99}");
        assert!(draws.iter().all(|&d| (1..=MAX_DRAWN_BYTES).contains(&d)));
    }

    #[test]
    fn sizes_parse_with_units_and_bad_ones_say_why() {
        assert_eq!("64k".parse(), Ok(PayloadSize::Fixed { bytes: 64 << 10 }));
        assert_eq!(
            "uniform(1k, 2k)".parse(),
            Ok(PayloadSize::Uniform {
                low: 1024,
                high: 2048
            })
        );
        for bad in ["lognormal(0, 5)", "lognormal(5)", "uniform(9, 1)", "lots"] {
            assert!(bad.parse::<PayloadSize>().is_err(), "{bad}");
        }
        let fixed = PayloadSize::Lognormal { mean: 4096, sd: 0 };
        assert_eq!(fixed.sample(&mut SmallRng::seed_from_u64(1)), 4096);
    }
}

impl Default for LoadPlan {
    fn default() -> Self {
        Self {
            target: "http://127.0.0.1:7878".into(),
            clients: 1,
            pacing: Pacing::Closed {
                think_time: Duration::from_secs(1),
                ramp_up: Duration::ZERO,
            },
            stop: Stop {
                duration: Some(Duration::from_secs(60)),
                requests_per_client: None,
            },
            payload: PayloadSize::Fixed { bytes: 1024 },
            timeout: Duration::from_secs(30),
            late_after: DEFAULT_LATE_AFTER,
            seed: None,
            max_drain: DEFAULT_MAX_DRAIN,
            shard: None,
            start_at: None,
            run_id: None,
            bind: Vec::new(),
            precise_pacing: false,
        }
    }
}

/// Tokio's timers tick in whole milliseconds, so a wake up to 1 ms after its time
/// is on time; 5 ms late is a client that could not keep its schedule.
pub const DEFAULT_LATE_AFTER: Duration = Duration::from_millis(5);

/// Why a target cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("target `{0}` must look like http://HOST:PORT (https is not supported)")]
    Malformed(String),
    #[error("cannot resolve {0}: {1}")]
    Resolve(String, std::io::Error),
}

/// Resolves `http://host:port` once, so clients connect without DNS on every
/// retry; returns the address and the `Host` header to send.
pub async fn resolve(target: &str) -> Result<(SocketAddr, HeaderValue), TargetError> {
    let authority = target
        .strip_prefix("http://")
        .map(|rest| rest.trim_end_matches('/'))
        .filter(|a| !a.is_empty() && !a.contains('/'))
        .ok_or_else(|| TargetError::Malformed(target.to_owned()))?;
    let host =
        HeaderValue::from_str(authority).map_err(|_| TargetError::Malformed(target.to_owned()))?;
    let with_port = if authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    let addr = tokio::net::lookup_host(&with_port)
        .await
        .map_err(|e| TargetError::Resolve(with_port.clone(), e))?
        .next()
        .ok_or_else(|| TargetError::Malformed(target.to_owned()))?;
    Ok((addr, host))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_sizes_parse() {
        assert_eq!("4096".parse(), Ok(PayloadSize::Fixed { bytes: 4096 }));
        assert_eq!(
            "uniform(1, 9)".parse(),
            Ok(PayloadSize::Uniform { low: 1, high: 9 })
        );
        assert!("uniform(9, 1)".parse::<PayloadSize>().is_err());
        assert!("big".parse::<PayloadSize>().is_err());
    }

    #[test]
    fn open_loops_need_a_rate_and_a_duration() {
        let open = |rate| LoadPlan {
            pacing: Pacing::Open {
                rate,
                arrivals: Arrivals::Uniform,
            },
            ..LoadPlan::default()
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

    #[tokio::test]
    async fn targets_must_be_plain_http() {
        assert!(resolve("https://127.0.0.1:1").await.is_err());
        assert!(resolve("127.0.0.1:1").await.is_err());
        assert!(resolve("http://127.0.0.1:1/x").await.is_err());
        let (addr, host) = resolve("http://127.0.0.1:7878/").await.unwrap();
        assert_eq!(
            (addr.port(), host.to_str().unwrap()),
            (7878, "127.0.0.1:7878")
        );
    }
}
