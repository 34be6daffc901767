//! Which element each request reads (`--keys`): none (each request stores an
//! element, the data processor's own path), or a key drawn from a Zipf
//! distribution, so a request reads that key's element through the server's
//! cache (`cache_entries`).

use rand::Rng;
use serde::{Deserialize, Serialize};

/// The most keys a load may draw from: the server's largest cache is 1 Mi
/// entries, and a key space far past it only makes every read a miss.
pub const MAX_KEYS: u64 = 1 << 30;

/// `zipf(COUNT, SKEW)`: keys 0 to COUNT-1, key k drawn with a weight of
/// 1/(k+1)^SKEW, so key 0 is the hottest (a cache that holds keys 0 to N-1 holds
/// the N hottest). rand_distr's `Zipf` draws them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Keys {
    pub count: u64,
    pub skew: f64,
}

impl Keys {
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        // Parameters are checked at parse (count >= 1, skew finite and >= 0), so
        // the distribution always builds; the fallback is key 0.
        rand_distr::Zipf::new(self.count as f64, self.skew).map_or(0, |zipf| {
            let drawn: f64 = rand_distr::Distribution::sample(&zipf, rng);
            (drawn as u64).saturating_sub(1).min(self.count - 1)
        })
    }

    /// The share of draws that fall on keys 0 to `held`-1: the hit ratio of a
    /// cache that holds the `held` hottest keys.
    pub fn share_of_hottest(&self, held: u64) -> f64 {
        let weight = |k: u64| 1.0 / ((k + 1) as f64).powf(self.skew);
        let total: f64 = (0..self.count).map(weight).sum();
        (0..held.min(self.count)).map(weight).sum::<f64>() / total
    }
}

impl std::str::FromStr for Keys {
    type Err = String;

    /// `zipf(10000, 1.1)`: COUNT keys (binary units allowed: `64k`), SKEW >= 0.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let form = || format!("`{s}`: write zipf(COUNT, SKEW), e.g. zipf(10000, 1.1)");
        let args = s
            .strip_prefix("zipf(")
            .and_then(|r| r.strip_suffix(')'))
            .ok_or_else(form)?;
        let (count, skew) = args.split_once(',').ok_or_else(form)?;
        let count = crate::value::parse_size(count.trim()).map_err(|e| format!("`{s}`: {e}"))?;
        if count == 0 || count > MAX_KEYS {
            return Err(format!("`{s}`: COUNT must be 1 to {MAX_KEYS}"));
        }
        let skew: f64 = skew
            .trim()
            .parse()
            .map_err(|_| format!("`{s}`: SKEW must be a number"))?;
        if !skew.is_finite() || !(0.0..=10.0).contains(&skew) {
            return Err(format!("`{s}`: SKEW must be 0 to 10"));
        }
        Ok(Keys { count, skew })
    }
}

impl std::fmt::Display for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "zipf({}, {})", self.count, self.skew)
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn zipf_keys_parse_draw_hot_keys_most_and_refuse_nonsense() {
        let keys: Keys = "zipf(1000, 1.0)".parse().unwrap();
        assert_eq!(
            keys,
            Keys {
                count: 1000,
                skew: 1.0
            }
        );
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let draws: Vec<u64> = (0..20_000).map(|_| keys.sample(&mut rng)).collect();
        assert!(draws.iter().all(|k| *k < 1000));
        let hottest = draws.iter().filter(|k| **k < 100).count() as f64 / 20_000.0;
        let expected = keys.share_of_hottest(100);
        assert!(
            (hottest - expected).abs() < 0.02,
            "drawn {hottest:.3}, the weights say {expected:.3}"
        );
        for bad in [
            "zipf(0, 1)",
            "zipf(10, -1)",
            "zipf(10, nan)",
            "zipf(10)",
            "uniform(1, 2)",
        ] {
            assert!(bad.parse::<Keys>().is_err(), "{bad} accepted");
        }
    }
}
