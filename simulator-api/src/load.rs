//! A load: what the clients do, typed once.
//!
//! A scenario's `load` is written as the sim-clients arguments a user would type
//! (`["--n", "135", "--think-time", "1s", "--duration", "60s"]`), and `GET
//! /scenarios` shows it that way. [`Load::parse`] reads those words once, when
//! the scenario is read, into the figures the server's model, the demo, the check
//! and the tests use (clients, pacing, element sizes, when it stops), and keeps
//! the words as typed to show them back. The driver builds its run from the same
//! type (`simulator_clients::LoadPlan::from_load`), whether the load came from a
//! scenario or from its own flags, so the two cannot mean different things.
//!
//! The words a load takes are the load-shaping flags of sim-clients, each with
//! its value: `--n`, `--think-time`, `--ramp-up`, `--rate`, `--arrivals`,
//! `--payload-size`, `--duration`, `--requests`, `--seed`, and how its clients
//! give up and retry: `--timeout`, `--retries`, `--backoff`, `--retry-budget`
//! (also as `--flag=value`).
//! Where to send, how to report and how to split a run are the driver's own
//! business and not part of a load.

use std::time::Duration;

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::value::{parse_duration, parse_size, text_of};

/// A load as its words say, with the words kept to show them back. In a file
/// (a scenario's `load`) it is the list of words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Vec<String>", into = "Vec<String>")]
pub struct Load {
    words: Vec<String>,
    /// Closed loop: the virtual clients. Open loop: the connections (`--n`, 1 unless given).
    pub clients: usize,
    pub pacing: Pacing,
    pub payload: PayloadSize,
    /// `--duration`, if given.
    pub duration: Option<Duration>,
    /// `--requests`: each closed-loop client stops after this many.
    pub requests_per_client: Option<u64>,
    /// `--seed`: the sizes and Poisson gaps drawn from it.
    pub seed: Option<u64>,
    /// `--timeout`: a client gives up on an attempt after this and closes its
    /// connection ([`DEFAULT_TIMEOUT`] unless given).
    pub timeout: Duration,
    /// `--retries`, `--backoff`, `--retry-budget`.
    pub retry: RetryPolicy,
}

/// How long a client waits for a reply unless told otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

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
    /// The original's client: think 1 s after each reply, all starting together.
    pub const ORIGINAL: Pacing = Pacing::Closed {
        think_time: Duration::from_secs(1),
        ramp_up: Duration::ZERO,
    };

    pub fn mode(&self) -> &'static str {
        match self {
            Pacing::Closed { .. } => "closed",
            Pacing::Open { .. } => "open",
        }
    }
}

/// The spacing of open-loop sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// Evenly spaced, 1/rate apart.
    Uniform,
    /// Exponentially distributed gaps with mean 1/rate, as independent users arrive.
    Poisson,
}

/// The element size a load sends unless told otherwise.
pub const DEFAULT_PAYLOAD: PayloadSize = PayloadSize::Fixed { bytes: 1024 };

/// The most retries a request may have: beyond this a load is a flood, not a client.
pub const MAX_RETRIES: u32 = 100;

/// How long a load runs when it names neither a duration nor a request count.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(60);

/// Why a load's words cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LoadError(String);

impl Load {
    /// Reads a load from the words a user would give sim-clients.
    pub fn parse(words: &[String]) -> Result<Load, LoadError> {
        let err = |text: String| LoadError(text);
        let mut clients = None;
        let (mut think_time, mut ramp_up, mut rate, mut arrivals) = (None, None, None, None);
        let (mut payload, mut duration, mut requests, mut seed) = (None, None, None, None);
        let (mut timeout, mut retries, mut backoff, mut budget) = (None, None, None, None);
        let mut iter = words.iter();
        while let Some(word) = iter.next() {
            let (flag, inline) = match word.split_once('=') {
                Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_owned())),
                _ => (word.as_str(), None),
            };
            let mut value = || {
                inline
                    .clone()
                    .or_else(|| iter.next().cloned())
                    .ok_or_else(|| err(format!("`{flag}` needs a value")))
            };
            let twice = |given: bool| {
                if given {
                    Err(err(format!("`{flag}` is given twice")))
                } else {
                    Ok(())
                }
            };
            match flag {
                "--n" | "-n" => {
                    twice(clients.is_some())?;
                    let v = value()?;
                    let n: usize = v.parse().map_err(|_| {
                        err(format!("`--n {v}`: the clients must be a whole number"))
                    })?;
                    if n == 0 {
                        return Err(err("`--n 0`: a load needs at least one client".into()));
                    }
                    clients = Some(n);
                }
                "--think-time" => {
                    twice(think_time.is_some())?;
                    think_time = Some(duration_of(flag, &value()?)?);
                }
                "--ramp-up" => {
                    twice(ramp_up.is_some())?;
                    ramp_up = Some(duration_of(flag, &value()?)?);
                }
                "--rate" => {
                    twice(rate.is_some())?;
                    let v = value()?;
                    let r: f64 = v
                        .parse()
                        .ok()
                        .filter(|r: &f64| r.is_finite() && *r > 0.0)
                        .ok_or_else(|| {
                            err(format!("`--rate {v}`: a rate is requests a second above 0"))
                        })?;
                    rate = Some(r);
                }
                "--arrivals" => {
                    twice(arrivals.is_some())?;
                    arrivals = Some(match value()?.as_str() {
                        "uniform" => Arrivals::Uniform,
                        "poisson" => Arrivals::Poisson,
                        other => {
                            return Err(err(format!("`--arrivals {other}`: uniform or poisson")))
                        }
                    });
                }
                "--payload-size" => {
                    twice(payload.is_some())?;
                    payload = Some(value()?.parse::<PayloadSize>().map_err(err)?);
                }
                "--duration" => {
                    twice(duration.is_some())?;
                    duration = Some(duration_of(flag, &value()?)?);
                }
                "--requests" => {
                    twice(requests.is_some())?;
                    let v = value()?;
                    requests = Some(v.parse::<u64>().map_err(|_| {
                        err(format!("`--requests {v}`: a whole number of requests"))
                    })?);
                }
                "--seed" => {
                    twice(seed.is_some())?;
                    let v = value()?;
                    seed = Some(
                        v.parse::<u64>()
                            .map_err(|_| err(format!("`--seed {v}`: a whole number")))?,
                    );
                }
                "--timeout" => {
                    twice(timeout.is_some())?;
                    let t = duration_of(flag, &value()?)?;
                    if t.is_zero() {
                        return Err(err("`--timeout 0`: a client must wait for something".into()));
                    }
                    timeout = Some(t);
                }
                "--retries" => {
                    twice(retries.is_some())?;
                    let v = value()?;
                    retries = Some(
                        v.parse::<u32>()
                            .ok()
                            .filter(|n| *n <= MAX_RETRIES)
                            .ok_or_else(|| {
                                err(format!(
                                    "`--retries {v}`: a whole number from 0 to {MAX_RETRIES}"
                                ))
                            })?,
                    );
                }
                "--backoff" => {
                    twice(backoff.is_some())?;
                    backoff = Some(value()?.parse::<Backoff>().map_err(err)?);
                }
                "--retry-budget" => {
                    twice(budget.is_some())?;
                    let v = value()?;
                    budget = Some(
                        parse_percent(&v).map_err(|e| err(format!("`--retry-budget {v}`: {e}")))?,
                    );
                }
                other => {
                    return Err(err(format!(
                        "`{other}` is not part of a load; a load takes --n, --think-time, \
                         --ramp-up, --rate, --arrivals, --payload-size, --duration, \
                         --requests, --seed, --timeout, --retries, --backoff and \
                         --retry-budget, each with its value"
                    )))
                }
            }
        }
        let pacing = match rate {
            Some(rate) => {
                for (given, name) in [
                    (think_time.is_some(), "--think-time"),
                    (ramp_up.is_some(), "--ramp-up"),
                    (requests.is_some(), "--requests"),
                ] {
                    if given {
                        return Err(err(format!(
                            "`{name}` is for a closed loop; `--rate` makes an open one"
                        )));
                    }
                }
                Pacing::Open {
                    rate,
                    arrivals: arrivals.unwrap_or(Arrivals::Uniform),
                }
            }
            None if arrivals.is_some() => {
                return Err(err("`--arrivals` needs `--rate` (an open loop)".into()))
            }
            None => Pacing::Closed {
                think_time: think_time.unwrap_or(Duration::from_secs(1)),
                ramp_up: ramp_up.unwrap_or(Duration::ZERO),
            },
        };
        if retries.unwrap_or(0) == 0 && (backoff.is_some() || budget.is_some()) {
            return Err(err(
                "`--backoff` and `--retry-budget` shape retries: give `--retries N` too".into(),
            ));
        }
        Ok(Load {
            words: words.to_vec(),
            timeout: timeout.unwrap_or(DEFAULT_TIMEOUT),
            retry: RetryPolicy {
                retries: retries.unwrap_or(0),
                backoff: backoff.unwrap_or(Backoff::None),
                budget_percent: budget,
            },
            clients: clients.unwrap_or(1),
            pacing,
            payload: payload.unwrap_or(DEFAULT_PAYLOAD),
            duration,
            requests_per_client: requests,
            seed,
        })
    }

    /// The words, as typed.
    pub fn words(&self) -> &[String] {
        &self.words
    }

    /// The words without `--duration` and its value: the load as a check or a demo
    /// runs it for a time of its own.
    pub fn words_without_duration(&self) -> Vec<String> {
        flag_values(&self.words)
            .into_iter()
            .filter(|(flag, _)| flag != "--duration")
            .flat_map(|(flag, value)| [flag, value])
            .collect()
    }

    /// This load with some of its clients' ways changed: each flag of `change`
    /// replaces the same flag here, or is added. Only the flags of
    /// [`CLIENT_POLICY_FLAGS`] may change (how clients give up and retry, a
    /// client-side fix): the rest are the ticket's load, which a fix does not
    /// choose.
    pub fn with_changes(&self, change: &[String]) -> Result<Load, LoadError> {
        let changed = flag_values(change);
        if let Some((flag, _)) = changed
            .iter()
            .find(|(flag, _)| !CLIENT_POLICY_FLAGS.contains(&flag.as_str()))
        {
            return Err(LoadError(format!(
                "`{flag}` is the ticket's load, not the clients' way of retrying; a client-side change takes {}",
                CLIENT_POLICY_FLAGS.join(", ")
            )));
        }
        let mut words: Vec<String> = flag_values(&self.words)
            .into_iter()
            .filter(|(flag, _)| !changed.iter().any(|(f, _)| f == flag))
            .flat_map(|(flag, value)| [flag, value])
            .collect();
        words.extend(changed.into_iter().flat_map(|(flag, value)| [flag, value]));
        Load::parse(&words)
    }

    /// The same load running for `duration`: the duration in its words too.
    pub fn with_duration(&self, duration: Duration) -> Load {
        let mut words = self.words_without_duration();
        words.extend(["--duration".to_owned(), text_of(duration)]);
        Load {
            words,
            duration: Some(duration),
            ..self.clone()
        }
    }

    /// The think time of a closed loop (`None` for an open one).
    pub fn think_time(&self) -> Option<Duration> {
        match self.pacing {
            Pacing::Closed { think_time, .. } => Some(think_time),
            Pacing::Open { .. } => None,
        }
    }

    /// When the run stops: its duration, and a count per client. With neither
    /// given, it runs [`DEFAULT_DURATION`].
    pub fn stop(&self) -> (Option<Duration>, Option<u64>) {
        match (self.duration, self.requests_per_client) {
            (None, None) => (Some(DEFAULT_DURATION), None),
            given => given,
        }
    }
}

/// The flags a client-side change may set ([`Load::with_changes`]).
pub const CLIENT_POLICY_FLAGS: [&str; 3] = ["--retries", "--backoff", "--retry-budget"];

/// Words as (flag, value) pairs, `--flag=value` split; a flag without its value
/// (which [`Load::parse`] refuses) keeps an empty one.
fn flag_values(words: &[String]) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let mut iter = words.iter();
    while let Some(word) = iter.next() {
        match word.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                pairs.push((flag.to_owned(), value.to_owned()))
            }
            _ => pairs.push((word.clone(), iter.next().cloned().unwrap_or_default())),
        }
    }
    pairs
}

impl TryFrom<Vec<String>> for Load {
    type Error = LoadError;

    fn try_from(words: Vec<String>) -> Result<Self, Self::Error> {
        Load::parse(&words)
    }
}

impl From<Load> for Vec<String> {
    fn from(load: Load) -> Self {
        load.words
    }
}

/// `10` or `10%`: a percentage from 0 to 100.
pub fn parse_percent(text: &str) -> Result<f64, String> {
    text.trim_end_matches('%')
        .parse::<f64>()
        .ok()
        .filter(|p| (0.0..=100.0).contains(p))
        .ok_or_else(|| format!("`{text}` is not a percentage from 0 to 100"))
}

fn duration_of(flag: &str, text: &str) -> Result<Duration, LoadError> {
    parse_duration(text).map_err(|e| LoadError(format!("`{flag}`: {e}")))
}

/// How long a client waits before retry number `k` (1 for the first retry). In
/// JSON, its text form (`"exp-jitter(10ms, 1s)"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Backoff {
    /// Retry at once.
    None,
    /// `min(cap, base x 2^(k-1))`.
    Exp { base: Duration, cap: Duration },
    /// Full jitter: uniform in `[0, min(cap, base x 2^(k-1))]`, so clients that
    /// failed together do not retry together (the AWS Builders' Library's
    /// "Timeouts, retries and backoff with jitter").
    ExpJitter { base: Duration, cap: Duration },
}

impl Backoff {
    /// The wait before retry number `retry` (1 for the first).
    pub fn delay<R: Rng + ?Sized>(&self, retry: u32, rng: &mut R) -> Duration {
        let grown = |base: Duration, cap: Duration| {
            let factor = 1u32
                .checked_shl(retry.saturating_sub(1))
                .unwrap_or(u32::MAX);
            base.saturating_mul(factor).min(cap)
        };
        match *self {
            Backoff::None => Duration::ZERO,
            Backoff::Exp { base, cap } => grown(base, cap),
            Backoff::ExpJitter { base, cap } => {
                let most = grown(base, cap);
                Duration::from_nanos(
                    rng.random_range(0..=u64::try_from(most.as_nanos()).unwrap_or(u64::MAX)),
                )
            }
        }
    }
}

impl std::str::FromStr for Backoff {
    type Err = String;

    /// `none`, `exp(10ms, 1s)` or `exp-jitter(10ms, 1s)`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s == "none" {
            return Ok(Backoff::None);
        }
        let form = "none, exp(BASE, CAP) or exp-jitter(BASE, CAP)";
        let (kind, args) = s
            .split_once('(')
            .and_then(|(kind, rest)| Some((kind.trim(), rest.strip_suffix(')')?)))
            .ok_or_else(|| format!("`{s}` is not a backoff: write {form}"))?;
        let (base, cap) = args
            .split_once(',')
            .ok_or_else(|| format!("`{s}`: write {form}"))?;
        let (base, cap) = (parse_duration(base)?, parse_duration(cap)?);
        if base.is_zero() || cap < base {
            return Err(format!("`{s}`: BASE must be above 0 and CAP at least BASE"));
        }
        match kind {
            "exp" => Ok(Backoff::Exp { base, cap }),
            "exp-jitter" => Ok(Backoff::ExpJitter { base, cap }),
            _ => Err(format!("`{s}` is not a backoff: write {form}")),
        }
    }
}

impl From<Backoff> for String {
    fn from(backoff: Backoff) -> Self {
        backoff.to_string()
    }
}

impl TryFrom<String> for Backoff {
    type Error = String;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

impl std::fmt::Display for Backoff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Backoff::None => write!(f, "none"),
            Backoff::Exp { base, cap } => write!(f, "exp({}, {})", text_of(*base), text_of(*cap)),
            Backoff::ExpJitter { base, cap } => {
                write!(f, "exp-jitter({}, {})", text_of(*base), text_of(*cap))
            }
        }
    }
}

/// What a client does when an attempt fails (a timeout, a lost connection, a 5xx).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// Attempts after the first, at most.
    pub retries: u32,
    pub backoff: Backoff,
    /// Retries may be at most this share of first attempts (in percent) over the
    /// last [`RETRY_BUDGET_WINDOW`], as gRPC's retry throttling and Finagle's
    /// RetryBudget bound them; `None`: no budget.
    pub budget_percent: Option<f64>,
}

/// The window a retry budget counts over.
pub const RETRY_BUDGET_WINDOW: Duration = Duration::from_secs(10);

impl RetryPolicy {
    /// No retries: a failed attempt is a failed request (sim-clients' default).
    pub const NONE: RetryPolicy = RetryPolicy {
        retries: 0,
        backoff: Backoff::None,
        budget_percent: None,
    };
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
mod tests {
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn a_client_side_change_replaces_or_adds_retry_flags_only() {
        let ticket = Load::parse(&words("--rate 224 --n 1000 --timeout 1s --retries 3")).unwrap();
        let budget = ticket.with_changes(&words("--retry-budget 10%")).unwrap();
        assert_eq!(budget.retry.budget_percent, Some(10.0));
        assert_eq!(budget.retry.retries, 3, "the rest kept");
        assert_eq!(
            budget.words().join(" "),
            "--rate 224 --n 1000 --timeout 1s --retries 3 --retry-budget 10%"
        );
        let fewer = ticket.with_changes(&words("--retries=1")).unwrap();
        assert_eq!(fewer.retry.retries, 1);
        assert_eq!(
            fewer.words().join(" "),
            "--rate 224 --n 1000 --timeout 1s --retries 1"
        );
        for cheat in ["--rate 100", "--timeout 10s", "--n 5"] {
            let err = ticket.with_changes(&words(cheat)).unwrap_err().to_string();
            assert!(err.contains("the ticket's load"), "{cheat}: {err}");
        }
        let bad = ticket
            .with_changes(&words("--backoff sometimes"))
            .unwrap_err();
        assert!(bad.to_string().contains("sometimes"), "{bad}");
    }

    #[test]
    fn a_load_reads_its_words_and_shows_them_back() {
        let load = Load::parse(&words("--n 135 --think-time 1s --duration 60s")).unwrap();
        assert_eq!(load.clients, 135);
        assert_eq!(load.pacing, Pacing::ORIGINAL);
        assert_eq!(load.think_time(), Some(Duration::from_secs(1)));
        assert_eq!(load.duration, Some(Duration::from_secs(60)));
        assert_eq!(load.payload, DEFAULT_PAYLOAD);
        assert_eq!(
            load.words().join(" "),
            "--n 135 --think-time 1s --duration 60s"
        );
        let short = load.with_duration(Duration::from_secs(10));
        assert_eq!(
            short.words().join(" "),
            "--n 135 --think-time 1s --duration 10s"
        );
        assert_eq!(short.duration, Some(Duration::from_secs(10)));

        let open = Load::parse(&words("--n=200 --rate 400 --arrivals poisson --seed 7")).unwrap();
        assert_eq!(
            open.pacing,
            Pacing::Open {
                rate: 400.0,
                arrivals: Arrivals::Poisson
            }
        );
        assert_eq!(open.think_time(), None);
        assert_eq!(open.stop(), (Some(DEFAULT_DURATION), None));
        assert_eq!(open.seed, Some(7));
        let empty = Load::parse(&[]).unwrap();
        assert_eq!((empty.clients, empty.pacing), (1, Pacing::ORIGINAL));
    }

    #[test]
    fn bad_loads_say_which_word_is_wrong() {
        for (bad, needle) in [
            ("--n lots", "--n lots"),
            ("--n 0", "at least one client"),
            ("--n", "needs a value"),
            ("--n 1 --n 2", "twice"),
            ("--think-time soon", "--think-time"),
            ("--rate -3", "above 0"),
            ("--rate 10 --think-time 1s", "closed loop"),
            ("--arrivals poisson", "needs `--rate`"),
            ("--arrivals bursty --rate 1", "uniform or poisson"),
            ("--payload-size huge", "huge"),
            ("--target http://x", "not part of a load"),
        ] {
            let e = Load::parse(&words(bad)).unwrap_err().to_string();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }

    #[test]
    fn clients_that_give_up_and_retry_read_their_words() {
        let load = Load::parse(&words(
            "--n 50 --rate 100 --timeout 200ms --retries 3 --backoff exp-jitter(10ms,1s) --retry-budget 10%",
        ))
        .unwrap();
        assert_eq!(load.timeout, Duration::from_millis(200));
        assert_eq!(
            load.retry,
            RetryPolicy {
                retries: 3,
                backoff: Backoff::ExpJitter {
                    base: Duration::from_millis(10),
                    cap: Duration::from_secs(1)
                },
                budget_percent: Some(10.0),
            }
        );
        let plain = Load::parse(&[]).unwrap();
        assert_eq!(
            (plain.timeout, plain.retry),
            (DEFAULT_TIMEOUT, RetryPolicy::NONE)
        );
        for (bad, needle) in [
            ("--backoff exp(1ms,1s)", "give `--retries N`"),
            ("--retries 2 --backoff exp(1s,1ms)", "CAP at least BASE"),
            ("--retries 2 --backoff linear(1ms,1s)", "not a backoff"),
            ("--retries 500", "0 to 100"),
            ("--retries 1 --retry-budget 150", "0 to 100"),
            ("--timeout 0", "wait for something"),
        ] {
            let e = Load::parse(&words(bad)).unwrap_err().to_string();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }

    #[test]
    fn backoffs_grow_to_their_cap_and_jitter_stays_under_it() {
        let exp: Backoff = "exp(10ms, 100ms)".parse().unwrap();
        let mut rng = SmallRng::seed_from_u64(3);
        let waits: Vec<u128> = (1..=6)
            .map(|k| exp.delay(k, &mut rng).as_millis())
            .collect();
        assert_eq!(waits, [10, 20, 40, 80, 100, 100]);
        assert_eq!(
            exp.delay(1000, &mut rng),
            Duration::from_millis(100),
            "no overflow"
        );
        assert_eq!(Backoff::None.delay(3, &mut rng), Duration::ZERO);
        let jitter: Backoff = "exp-jitter(10ms, 100ms)".parse().unwrap();
        let draws: Vec<Duration> = (0..1000).map(|_| jitter.delay(4, &mut rng)).collect();
        assert!(draws.iter().all(|d| *d <= Duration::from_millis(80)));
        let mean = draws.iter().sum::<Duration>() / 1000;
        assert!(
            mean > Duration::from_millis(30) && mean < Duration::from_millis(50),
            "{mean:?}"
        );
        for text in ["none", "exp(10ms, 1s)", "exp-jitter(5ms, 2s)"] {
            assert_eq!(text.parse::<Backoff>().unwrap().to_string(), text);
        }
    }

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
        assert_eq!("4096".parse(), Ok(PayloadSize::Fixed { bytes: 4096 }));
        assert_eq!("64k".parse(), Ok(PayloadSize::Fixed { bytes: 64 << 10 }));
        assert_eq!(
            "uniform(1k, 2k)".parse(),
            Ok(PayloadSize::Uniform {
                low: 1024,
                high: 2048
            })
        );
        for bad in [
            "lognormal(0, 5)",
            "lognormal(5)",
            "uniform(9, 1)",
            "lots",
            "big",
        ] {
            assert!(bad.parse::<PayloadSize>().is_err(), "{bad}");
        }
        let fixed = PayloadSize::Lognormal { mean: 4096, sd: 0 };
        assert_eq!(fixed.sample(&mut SmallRng::seed_from_u64(1)), 4096);
    }
}
