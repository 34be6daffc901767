//! Latency distributions for the simulated network and the simulated store.
//!
//! A [`Delay`] is written the way people say it: `60ms`, `exp(60ms)`,
//! `50ms + normal(10ms, 5ms)`, `uniform(50ms, 70ms)`, `lognormal(30ms, 1.0)` (the
//! median and the sigma of the log: a long tail, as object stores have). The same text is accepted on the
//! command line, in the TOML config and by `PUT /admin/config`, and [`Delay`]'s
//! `Display` prints it back in a form that parses to the same value, so what `/stats`
//! reports can be pasted straight into a flag.
//!
//! Sampling clamps the *total* at zero: `50ms + normal(10ms, 5ms)` keeps the original
//! simulator's mean of 60 ms exactly, and a pathological `normal(1ms, 10ms)` yields
//! zero rather than a negative sleep.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use rand::Rng;
use rand_distr::{Distribution, Exp, LogNormal, Normal};
use serde::{Deserialize, Serialize};

/// The longest any single term of a delay may be, and the fixed terms together
/// (`30m + 40m` is refused as `70m` would be). Anything longer is almost
/// certainly a typo (`60s` for `60ms`) and would make a workshop server look hung.
pub const MAX_TERM: Duration = Duration::from_secs(3600);

/// A latency: a fixed base plus at most one random shape.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Delay {
    base: Duration,
    shape: Shape,
}

/// The random part of a [`Delay`].
#[derive(Debug, Clone, Copy, PartialEq)]
enum Shape {
    None,
    Normal {
        mean: Duration,
        sd: Duration,
    },
    Exponential {
        mean: Duration,
    },
    Uniform {
        low: Duration,
        high: Duration,
    },
    /// `median` = e^mu; `sigma` the standard deviation of the log.
    LogNormal {
        median: Duration,
        sigma: f64,
    },
}

/// Why a delay did not parse. The message names the offending term.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DelayError {
    #[error("empty delay: write e.g. `60ms` or `50ms + normal(10ms, 5ms)`")]
    Empty,
    #[error("`{0}` is neither a duration (like `5ms`) nor normal(MEAN, SD), exp(MEAN) or uniform(LOW, HIGH)")]
    UnknownTerm(String),
    #[error("`{term}`: {reason}")]
    BadDuration { term: String, reason: String },
    #[error("`{0}`: expects {1} argument(s)")]
    Arity(String, usize),
    #[error("only one random shape per delay (got `{0}` after another)")]
    TwoShapes(String),
    #[error("`{0}`: the lower bound is above the upper bound")]
    Inverted(String),
    #[error("`{0}` is longer than the limit of {limit:?}", limit = MAX_TERM)]
    TooLong(String),
    #[error("`{0}`: the sigma of lognormal(MEDIAN, SIGMA) is a number from 0 to 4, e.g. lognormal(30ms, 1.0)")]
    Sigma(String),
}

impl Delay {
    /// A delay that is always exactly `d`.
    pub const fn fixed(d: Duration) -> Self {
        Self {
            base: d,
            shape: Shape::None,
        }
    }

    /// `base + normal(mean, sd)`, the original simulator's form.
    pub fn base_plus_normal(base: Duration, mean: Duration, sd: Duration) -> Self {
        Self {
            base,
            shape: Shape::Normal { mean, sd },
        }
    }

    /// Whether every draw is zero: no wait at all (`0`, `0ms + normal(0ms, 0ms)`).
    pub fn is_zero(&self) -> bool {
        let shape_zero = match self.shape {
            Shape::None => true,
            Shape::Normal { mean, sd } => mean.is_zero() && sd.is_zero(),
            Shape::Exponential { mean } => mean.is_zero(),
            Shape::Uniform { high, .. } => high.is_zero(),
            Shape::LogNormal { median, .. } => median.is_zero(),
        };
        self.base.is_zero() && shape_zero
    }

    /// The expected value, ignoring the (rare) clamping at zero. This is what
    /// Little's law needs: capacity = permits / mean persist time.
    pub fn mean(&self) -> Duration {
        let shape = match self.shape {
            Shape::None => Duration::ZERO,
            Shape::Normal { mean, .. } | Shape::Exponential { mean } => mean,
            Shape::Uniform { low, high } => (low + high) / 2,
            Shape::LogNormal { median, sigma } => median.mul_f64((sigma * sigma / 2.0).exp()),
        };
        self.base + shape
    }

    /// Draws one latency from this thread's generator, which a fixed delay never
    /// touches: the request path draws three a request, most of them fixed.
    pub fn draw(&self) -> Duration {
        self.fixed_draw()
            .unwrap_or_else(|| self.sample(&mut rand::rng()))
    }

    /// What every draw of a fixed delay is, exactly (no round trip through f64
    /// seconds); `None` for a shaped one.
    fn fixed_draw(&self) -> Option<Duration> {
        matches!(self.shape, Shape::None).then(|| self.base.min(MAX_TERM * 4))
    }

    /// Draws one latency.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Duration {
        if let Some(fixed) = self.fixed_draw() {
            return fixed;
        }
        let base = self.base.as_secs_f64();
        let extra = match self.shape {
            Shape::None => 0.0,
            Shape::Normal { mean, sd } => Normal::new(mean.as_secs_f64(), sd.as_secs_f64())
                .map(|n| n.sample(rng))
                .unwrap_or(mean.as_secs_f64()),
            Shape::Exponential { mean } if mean.is_zero() => 0.0,
            Shape::Exponential { mean } => Exp::new(1.0 / mean.as_secs_f64())
                .map(|e| e.sample(rng))
                .unwrap_or(0.0),
            Shape::Uniform { low, high } if low == high => low.as_secs_f64(),
            Shape::Uniform { low, high } => rng.random_range(low.as_secs_f64()..high.as_secs_f64()),
            Shape::LogNormal { median, .. } if median.is_zero() => 0.0,
            Shape::LogNormal { median, sigma } => LogNormal::new(median.as_secs_f64().ln(), sigma)
                .map(|l| l.sample(rng))
                .unwrap_or(median.as_secs_f64()),
        };
        // The total is clamped, not each term, so a base plus a centred normal keeps its mean.
        Duration::from_secs_f64((base + extra).clamp(0.0, MAX_TERM.as_secs_f64() * 4.0))
    }
}

impl FromStr for Delay {
    type Err = DelayError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut delay = Delay::fixed(Duration::ZERO);
        let mut saw_term = false;
        for term in text.split('+').map(str::trim) {
            if term.is_empty() {
                return Err(DelayError::Empty);
            }
            saw_term = true;
            match term.split_once('(') {
                None => {
                    delay.base += parse_duration(term)?;
                    // The fixed terms add up to one: within the limit together, as
                    // the delay prints them back as one.
                    if delay.base > MAX_TERM {
                        return Err(DelayError::TooLong(text.trim().to_owned()));
                    }
                }
                Some((name, rest)) => {
                    if delay.shape != Shape::None {
                        return Err(DelayError::TwoShapes(term.to_owned()));
                    }
                    let args = rest
                        .strip_suffix(')')
                        .ok_or_else(|| DelayError::UnknownTerm(term.to_owned()))?;
                    delay.shape = parse_shape(term, name.trim(), args)?;
                }
            }
        }
        if !saw_term {
            return Err(DelayError::Empty);
        }
        Ok(delay)
    }
}

fn parse_shape(term: &str, name: &str, args: &str) -> Result<Shape, DelayError> {
    if name == "lognormal" {
        let parts: Vec<&str> = args.split(',').map(str::trim).collect();
        let [median, sigma] = parts[..] else {
            return Err(DelayError::Arity(term.to_owned(), 2));
        };
        let median = parse_duration(median)?;
        let sigma: f64 = sigma
            .parse()
            .ok()
            .filter(|s: &f64| (0.0..=4.0).contains(s))
            .ok_or_else(|| DelayError::Sigma(term.to_owned()))?;
        return Ok(Shape::LogNormal { median, sigma });
    }
    let args = args
        .split(',')
        .map(|a| parse_duration(a.trim()))
        .collect::<Result<Vec<_>, _>>()?;
    let want = |n: usize| {
        if args.len() == n {
            Ok(())
        } else {
            Err(DelayError::Arity(term.to_owned(), n))
        }
    };
    match name {
        "normal" => {
            want(2)?;
            Ok(Shape::Normal {
                mean: args[0],
                sd: args[1],
            })
        }
        "exp" | "exponential" => {
            want(1)?;
            Ok(Shape::Exponential { mean: args[0] })
        }
        "uniform" => {
            want(2)?;
            if args[0] > args[1] {
                return Err(DelayError::Inverted(term.to_owned()));
            }
            Ok(Shape::Uniform {
                low: args[0],
                high: args[1],
            })
        }
        _ => Err(DelayError::UnknownTerm(term.to_owned())),
    }
}

fn parse_duration(term: &str) -> Result<Duration, DelayError> {
    if term.is_empty() {
        return Err(DelayError::Empty);
    }
    // A bare 0 is unambiguous; any other number needs a unit.
    let d = if term == "0" {
        Duration::ZERO
    } else {
        humantime::parse_duration(term).map_err(|e| DelayError::BadDuration {
            term: term.to_owned(),
            reason: e.to_string(),
        })?
    };
    if d > MAX_TERM {
        return Err(DelayError::TooLong(term.to_owned()));
    }
    Ok(d)
}

impl fmt::Display for Delay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = |d: Duration| humantime::format_duration(d).to_string();
        let shape = match self.shape {
            Shape::None => None,
            Shape::Normal { mean, sd } => Some(format!("normal({}, {})", d(mean), d(sd))),
            Shape::Exponential { mean } => Some(format!("exp({})", d(mean))),
            Shape::Uniform { low, high } => Some(format!("uniform({}, {})", d(low), d(high))),
            Shape::LogNormal { median, sigma } => {
                Some(format!("lognormal({}, {sigma:?})", d(median)))
            }
        };
        match (self.base.is_zero(), shape) {
            (_, None) => write!(f, "{}", d(self.base)),
            (true, Some(s)) => write!(f, "{s}"),
            (false, Some(s)) => write!(f, "{} + {s}", d(self.base)),
        }
    }
}

impl TryFrom<String> for Delay {
    type Error = DelayError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<Delay> for String {
    fn from(d: Delay) -> Self {
        d.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn fixed_terms_are_held_to_the_limit_together() {
        assert_eq!(
            "30m + 30m".parse::<Delay>().map(|d| d.to_string()),
            Ok("1h".to_owned())
        );
        assert_eq!(
            "3511s + 1.5m".parse::<Delay>(),
            Err(DelayError::TooLong("3511s + 1.5m".to_owned()))
        );
    }

    #[test]
    fn a_fixed_delay_draws_itself_exactly_and_a_shaped_one_draws_its_shape() {
        // 1.000000001 s does not survive a round trip through f64 seconds.
        let odd = Duration::new(1, 1);
        assert_eq!(Delay::fixed(odd).draw(), odd);
        assert_eq!(Delay::fixed(odd).sample(&mut StdRng::seed_from_u64(1)), odd);
        let shaped: Delay = "uniform(1ms, 2ms)".parse().unwrap();
        let drawn: Vec<Duration> = (0..100).map(|_| shaped.draw()).collect();
        assert!(
            drawn.iter().all(|d| (ms(1)..ms(2)).contains(d)),
            "{drawn:?}"
        );
        assert!(
            drawn.iter().any(|d| *d != drawn[0]),
            "a shape varies: {drawn:?}"
        );
    }

    #[test]
    fn a_delay_is_zero_only_when_every_draw_is() {
        for zero in ["0", "0ms", "0ms + normal(0ms, 0ms)", "exp(0ms)"] {
            assert!(zero.parse::<Delay>().unwrap().is_zero(), "{zero}");
        }
        for some in [
            "1us",
            "normal(0ms, 1ms)",
            "uniform(0ms, 1ms)",
            "50ms + normal(10ms, 5ms)",
        ] {
            assert!(!some.parse::<Delay>().unwrap().is_zero(), "{some}");
        }
    }

    #[test]
    fn parses_the_original_persist_latency() {
        let d: Delay = "50ms + normal(10ms, 5ms)".parse().unwrap();
        assert_eq!(d, Delay::base_plus_normal(ms(50), ms(10), ms(5)));
        assert_eq!(d.mean(), ms(60));
    }

    #[test]
    fn display_round_trips() {
        for text in [
            "60ms",
            "0",
            "exp(60ms)",
            "uniform(50ms, 70ms)",
            "500us + normal(1ms, 100us)",
            "1ms 500us + exp(2ms)",
            "lognormal(30ms, 1.0)",
            "5ms + lognormal(20ms, 0.5)",
        ] {
            let d: Delay = text.parse().unwrap();
            let again: Delay = d.to_string().parse().unwrap();
            assert_eq!(d, again, "{text} printed as {d}");
        }
    }

    #[test]
    fn rejects_nonsense_with_a_reason() {
        for (text, needle) in [
            ("", "empty"),
            ("60", "60"),
            ("fast", "fast"),
            ("normal(1ms)", "2 argument"),
            ("normal(1ms,2ms) + exp(1ms)", "one random shape"),
            ("uniform(5ms, 1ms)", "lower bound"),
            ("2h", "limit"),
            ("-5ms", "-5ms"),
            ("1ms +", "empty"),
            ("lognormal(30ms)", "2 argument"),
            ("lognormal(30ms, -1)", "sigma"),
            ("lognormal(30ms, lots)", "sigma"),
        ] {
            let err = text.parse::<Delay>().unwrap_err().to_string();
            assert!(err.contains(needle), "{text:?} gave {err:?}");
        }
    }

    #[test]
    fn samples_are_never_negative_and_centre_on_the_mean() {
        let mut rng = StdRng::seed_from_u64(7);
        let wild: Delay = "normal(1ms, 10ms)".parse().unwrap();
        assert!((0..10_000).all(|_| wild.sample(&mut rng) >= Duration::ZERO));

        let original = Delay::base_plus_normal(ms(50), ms(10), ms(5));
        let n = 20_000;
        let total: Duration = (0..n).map(|_| original.sample(&mut rng)).sum();
        let mean_ms = total.as_secs_f64() * 1000.0 / n as f64;
        assert!((mean_ms - 60.0).abs() < 0.2, "mean {mean_ms} ms");

        // A long tail: median 30 ms, mean 30 ms x e^(1/2) = 49.5 ms.
        let tail: Delay = "lognormal(30ms, 1.0)".parse().unwrap();
        assert_eq!(tail.mean().as_micros(), 49_461);
        let mut samples: Vec<Duration> = (0..n).map(|_| tail.sample(&mut rng)).collect();
        samples.sort();
        let median_ms = samples[n / 2].as_secs_f64() * 1e3;
        assert!((median_ms - 30.0).abs() < 1.5, "median {median_ms} ms");
        let mean_ms = samples.iter().sum::<Duration>().as_secs_f64() * 1e3 / n as f64;
        assert!((mean_ms - 49.5).abs() < 2.5, "mean {mean_ms} ms");
    }
}
