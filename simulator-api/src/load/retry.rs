//! How a load's clients give up and retry: the backoff between attempts and the
//! policy that bounds them (`--retries`, `--backoff`, `--retry-budget`).

use std::time::Duration;

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::value::{parse_duration, text_of};

/// `10` or `10%`: a percentage from 0 to 100.
pub fn parse_percent(text: &str) -> Result<f64, String> {
    text.trim_end_matches('%')
        .parse::<f64>()
        .ok()
        .filter(|p| (0.0..=100.0).contains(p))
        .ok_or_else(|| format!("`{text}` is not a percentage from 0 to 100"))
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

#[cfg(test)]
mod tests {
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    use super::*;

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
}
