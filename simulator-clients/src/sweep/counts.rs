//! The seed's six counts as a sweep publishes them: per minute, under the keys of
//! its JSON format (`schema/sweep.schema.json`) and the headers of its tables, one
//! entry per `SEED_COUNTS` entry in its order. The runner, the means, the tables,
//! the chart and the JSON all read the counts from this one declaration, so no
//! list of them is kept by hand anywhere else.
//!
//! The names are the sweep's own, not derived from `SEED_COUNTS`' field names,
//! because they are a published format: two JSON keys (`blocked_per_min`,
//! `nonblocked_per_min`) and the short table headers predate `SEED_COUNTS`, and
//! the reports already written (docs/results/sweep.md and the JSON beside it)
//! carry them. A test holds this list to `SEED_COUNTS`' order and fields.

use std::fmt;

use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use simulator_api::{Counts, SeedCount, SEED_COUNTS};

/// One of the seed's counts in a sweep's report.
#[derive(Debug, Clone, Copy)]
pub struct SweepCount {
    /// The seed's count this is (its label, its `/stats` field, its getter).
    pub seed: SeedCount,
    /// Its key, per minute, in the sweep's JSON.
    pub key: &'static str,
    /// Its header in the terminal's table, and that column's width.
    pub text: &'static str,
    pub width: usize,
    /// Its header in the Markdown report.
    pub markdown: &'static str,
    /// Whether the terminal's table prints its spread too (the Markdown one
    /// always does): only for requests done, the figure runs are compared by.
    pub spread_in_text: bool,
}

/// The sweep's counts, in `SEED_COUNTS`' order.
pub const SWEEP_COUNTS: [SweepCount; 6] = [
    SweepCount {
        seed: SEED_COUNTS[0],
        key: "requests_started_per_min",
        text: "started",
        width: 9,
        markdown: "requests started",
        spread_in_text: false,
    },
    SweepCount {
        seed: SEED_COUNTS[1],
        key: "requests_done_per_min",
        text: "done",
        width: 15,
        markdown: "requests done",
        spread_in_text: true,
    },
    SweepCount {
        seed: SEED_COUNTS[2],
        key: "blocked_per_min",
        text: "blocked",
        width: 9,
        markdown: "blocked",
        spread_in_text: false,
    },
    SweepCount {
        seed: SEED_COUNTS[3],
        key: "nonblocked_per_min",
        text: "nonblock",
        width: 9,
        markdown: "non blocked",
        spread_in_text: false,
    },
    SweepCount {
        seed: SEED_COUNTS[4],
        key: "persists_started_per_min",
        text: "wr start",
        width: 9,
        markdown: "writes started",
        spread_in_text: false,
    },
    SweepCount {
        seed: SEED_COUNTS[5],
        key: "persists_done_per_min",
        text: "wr done",
        width: 9,
        markdown: "writes done",
        spread_in_text: false,
    },
];

/// Where requests done stands in `SWEEP_COUNTS`: the figure the chart draws.
#[cfg_attr(not(feature = "charts"), allow(dead_code))]
pub(crate) const REQUESTS_DONE: usize = 1;

/// The seed's counts per minute, in `SWEEP_COUNTS`' order; in JSON, one key each.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PerMinute(pub [f64; SWEEP_COUNTS.len()]);

impl PerMinute {
    /// The server's counts over a window of `minutes`, per minute.
    pub fn of(counts: &Counts, minutes: f64) -> PerMinute {
        PerMinute(SWEEP_COUNTS.map(|count| (count.seed.get)(counts) as f64 / minutes))
    }

    #[cfg_attr(not(feature = "charts"), allow(dead_code))]
    pub fn requests_done(&self) -> f64 {
        self.0[REQUESTS_DONE]
    }
}

impl Serialize for PerMinute {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(SWEEP_COUNTS.len()))?;
        for (count, value) in SWEEP_COUNTS.iter().zip(self.0) {
            map.serialize_entry(count.key, &value)?;
        }
        map.end()
    }
}

/// Reads every key of `SWEEP_COUNTS`, each required (a report without one is an
/// error, not a 0), and passes over any other key (the `Figures` it is flattened
/// into reads its own).
impl<'de> Deserialize<'de> for PerMinute {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> Visitor<'de> for Keys {
            type Value = PerMinute;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("the seed's counts per minute")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PerMinute, A::Error> {
                let mut values = [None; SWEEP_COUNTS.len()];
                while let Some(key) = map.next_key::<String>()? {
                    match SWEEP_COUNTS.iter().position(|count| count.key == key) {
                        Some(index) => values[index] = Some(map.next_value::<f64>()?),
                        None => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                let mut read = [0.0; SWEEP_COUNTS.len()];
                for ((value, slot), count) in values.into_iter().zip(&mut read).zip(&SWEEP_COUNTS) {
                    *slot = value.ok_or_else(|| de::Error::missing_field(count.key))?;
                }
                Ok(PerMinute(read))
            }
        }
        deserializer.deserialize_map(Keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweeps_counts_are_the_seeds_in_its_order() {
        let sweep: Vec<&str> = SWEEP_COUNTS.iter().map(|c| c.seed.field).collect();
        let seed: Vec<&str> = SEED_COUNTS.iter().map(|c| c.field).collect();
        assert_eq!(sweep, seed);
        assert_eq!(SWEEP_COUNTS[REQUESTS_DONE].seed.field, "requests_done");
    }

    #[test]
    fn each_count_is_read_from_the_server_per_minute() {
        let counts = Counts {
            requests_started: 60,
            requests_done: 120,
            requests_blocked: 30,
            requests_nonblocked: 90,
            persists_started: 6,
            persists_done: 3,
            ..Counts::default()
        };
        let per_minute = PerMinute::of(&counts, 0.5);
        assert_eq!(per_minute.0, [120.0, 240.0, 60.0, 180.0, 12.0, 6.0]);
        assert_eq!(per_minute.requests_done(), 240.0);
    }

    #[test]
    fn the_json_round_trips_and_a_missing_count_is_an_error() {
        let per_minute = PerMinute([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let mut json = serde_json::to_value(per_minute).unwrap();
        assert_eq!(json["blocked_per_min"], 3.0);
        json["some_other_figure"] = 7.into();
        let read: PerMinute = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(read, per_minute);
        json.as_object_mut()
            .unwrap()
            .remove("persists_done_per_min");
        let error = serde_json::from_value::<PerMinute>(json).unwrap_err();
        assert!(
            error.to_string().contains("persists_done_per_min"),
            "{error}"
        );
    }
}
