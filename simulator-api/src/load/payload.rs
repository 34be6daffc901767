//! The size of the elements a load sends (`--payload-size`): fixed, uniform or
//! heavy-tailed.

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::value::parse_size;

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
