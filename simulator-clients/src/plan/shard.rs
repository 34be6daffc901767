//! Which share of a load this process runs, when one machine cannot offer it all.
//!
//! There is no coordinator: the job scheduler that starts the processes already
//! numbers them, and each process works out its own share from that number. A
//! closed loop's shard K of N runs the global clients K, K+N, K+2N...; an open
//! loop's shard takes every N-th send of the one global timetable, starting with
//! send K, so the N shards together send exactly the unsplit schedule, each send
//! once (`schedule.rs`).
//!
//! K and N come from `--shard K/N`, or else from the engine's own variables:
//! Kubernetes' Indexed Job sets `JOB_COMPLETION_INDEX` (N is the Job's
//! `completions`, which the pod cannot see: `--shards N`), Nomad sets
//! `NOMAD_ALLOC_INDEX` (also with `--shards N`), Slurm sets `SLURM_PROCID` and
//! `SLURM_NTASKS`.

use serde::{Deserialize, Serialize};

/// The largest number of shards; far beyond any real run, it keeps ids exact.
pub const MAX_SHARDS: u32 = 65_536;

/// Shard `index` of `count` (0-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

/// Where a process learned its shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShardSource {
    /// `--shard K/N`.
    Flag,
    /// `JOB_COMPLETION_INDEX` and `--shards`.
    Kubernetes,
    /// `NOMAD_ALLOC_INDEX` and `--shards`.
    Nomad,
    /// `SLURM_PROCID` and `SLURM_NTASKS`.
    Slurm,
}

/// A shard and where it came from, as the report records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardInfo {
    pub index: u32,
    pub count: u32,
    pub source: ShardSource,
}

impl ShardInfo {
    pub fn shard(&self) -> Shard {
        Shard {
            index: self.index,
            count: self.count,
        }
    }
}

/// Why a shard could not be worked out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error("`{0}` is not a shard: write K/N with 0 <= K < N <= {MAX_SHARDS}, e.g. 0/4")]
    Malformed(String),
    #[error("{var}={value} is not a shard index below {count}")]
    BadIndex {
        var: &'static str,
        value: String,
        count: u32,
    },
    #[error("{0} is set but the number of shards is not: add --shards N (the Job's completions)")]
    CountMissing(&'static str),
    #[error("{var}={value} is not a number of shards in 1..={MAX_SHARDS}")]
    BadCount { var: &'static str, value: String },
    #[error("--shards {0} needs JOB_COMPLETION_INDEX or NOMAD_ALLOC_INDEX in the environment, or use --shard K/N")]
    IndexMissing(u32),
}

impl std::str::FromStr for Shard {
    type Err = ShardError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || ShardError::Malformed(s.to_owned());
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u32 = k.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || count > MAX_SHARDS || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// The whole load, unsplit.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Of `total` global ids (clients, connections), those this shard runs: K, K+N...
    pub fn ids(&self, total: usize) -> impl Iterator<Item = usize> {
        (self.index as usize..total).step_by(self.count as usize)
    }

    /// How many of `total` global ids this shard runs.
    pub fn share(&self, total: usize) -> usize {
        total
            .saturating_sub(self.index as usize)
            .div_ceil(self.count as usize)
    }

    /// Whether global send number `k` of a timetable is this shard's.
    pub fn owns(&self, k: u64) -> bool {
        k % u64::from(self.count) == u64::from(self.index)
    }
}

/// The shard of this process: `flag` (`--shard`) first, then the engines'
/// variables read through `env`; `None` when nothing says the load is split.
pub fn resolve(
    flag: Option<Shard>,
    shards: Option<u32>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<ShardInfo>, ShardError> {
    let info = |s: Shard, source| ShardInfo {
        index: s.index,
        count: s.count,
        source,
    };
    if let Some(s) = flag {
        return Ok(Some(info(s, ShardSource::Flag)));
    }
    let count_of = |var: &'static str, value: String| {
        value
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_SHARDS).contains(n))
            .ok_or(ShardError::BadCount { var, value })
    };
    let index_of = |var: &'static str, value: String, count: u32| {
        value
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|&k| k < count)
            .ok_or(ShardError::BadIndex { var, value, count })
    };
    for (var, source) in [
        ("JOB_COMPLETION_INDEX", ShardSource::Kubernetes),
        ("NOMAD_ALLOC_INDEX", ShardSource::Nomad),
    ] {
        if let Some(value) = env(var) {
            let count = shards.ok_or(ShardError::CountMissing(var))?;
            let count = count_of("--shards", count.to_string())?;
            let index = index_of(var, value, count)?;
            return Ok(Some(info(Shard { index, count }, source)));
        }
    }
    if let (Some(procid), Some(ntasks)) = (env("SLURM_PROCID"), env("SLURM_NTASKS")) {
        let count = count_of("SLURM_NTASKS", ntasks)?;
        let index = index_of("SLURM_PROCID", procid, count)?;
        return Ok(Some(info(Shard { index, count }, ShardSource::Slurm)));
    }
    match shards {
        Some(n) => Err(ShardError::IndexMissing(n)),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn shards_parse_and_bad_ones_say_how_to_write_them() {
        assert_eq!("1/4".parse(), Ok(Shard { index: 1, count: 4 }));
        for bad in ["4/4", "0/0", "1", "-1/4", "a/b", "1/70000"] {
            let err = bad.parse::<Shard>().unwrap_err();
            assert!(err.to_string().contains("K/N"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_shards_ids_partition_the_whole_load() {
        for total in [0, 1, 7, 135, 1000] {
            for count in 1..=9u32 {
                let mut seen: Vec<usize> = (0..count)
                    .flat_map(|index| {
                        let s = Shard { index, count };
                        let ids: Vec<usize> = s.ids(total).collect();
                        assert_eq!(ids.len(), s.share(total));
                        ids
                    })
                    .collect();
                seen.sort_unstable();
                assert_eq!(seen, (0..total).collect::<Vec<_>>(), "{total} / {count}");
            }
        }
    }

    #[test]
    fn the_engines_variables_name_the_shard_when_the_flag_does_not() {
        let none = resolve(None, None, env(&[])).unwrap();
        assert_eq!(none, None);
        // The flag wins over the environment.
        let flagged = resolve(
            Some(Shard { index: 3, count: 4 }),
            None,
            env(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "2")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(flagged.source, ShardSource::Flag);
        let job = resolve(None, Some(4), env(&[("JOB_COMPLETION_INDEX", "2")]))
            .unwrap()
            .unwrap();
        assert_eq!(
            (job.shard(), job.source),
            (Shard { index: 2, count: 4 }, ShardSource::Kubernetes)
        );
        let slurm = resolve(
            None,
            None,
            env(&[("SLURM_PROCID", "5"), ("SLURM_NTASKS", "8")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (slurm.shard(), slurm.source),
            (Shard { index: 5, count: 8 }, ShardSource::Slurm)
        );
    }

    #[test]
    fn inconsistent_engine_variables_are_refused() {
        assert_eq!(
            resolve(None, None, env(&[("JOB_COMPLETION_INDEX", "1")])),
            Err(ShardError::CountMissing("JOB_COMPLETION_INDEX"))
        );
        assert!(matches!(
            resolve(None, Some(2), env(&[("JOB_COMPLETION_INDEX", "2")])),
            Err(ShardError::BadIndex { .. })
        ));
        assert!(matches!(
            resolve(
                None,
                None,
                env(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "x")])
            ),
            Err(ShardError::BadCount { .. })
        ));
        assert_eq!(
            resolve(None, Some(3), env(&[])),
            Err(ShardError::IndexMissing(3))
        );
    }
}
