//! What is made of the list of events (`defs.rs`): the [`Counts`] of
//! `GET /stats`, the event histograms, the probe names ([`probe`]), the
//! [`EVENTS`] table and `docs/tracing.md`'s probe table.

use serde::{Deserialize, Serialize};

/// One event as declared: its probe and what it moves.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Event {
    /// The probe's name as tracers see it (`request-start`).
    pub probe: &'static str,
    /// When it fires, in words.
    pub fires_when: &'static str,
    /// Each argument's name and meaning, arg0 first.
    pub args: &'static [(&'static str, &'static str)],
    pub counters: &'static [Counter],
    pub histograms: &'static [Metric],
}

/// A `/stats` counter and the Prometheus counter that moves with it.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Counter {
    /// The field of [`Counts`].
    pub field: &'static str,
    pub metric: Metric,
    /// The in-flight pair this counter opens, if any.
    pub opens: Option<Pair>,
    /// Reads this counter from a [`Counts`].
    #[serde(skip)]
    pub get: fn(&Counts) -> u64,
}

/// A Prometheus metric's name and help.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Metric {
    pub name: &'static str,
    pub help: &'static str,
}

/// An in-flight figure: the opener's counter minus the closer's. A reset carries
/// it into the new window (as the opener's count), and `/metrics` shows it as a gauge.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Pair {
    /// The [`Counts`] method that reads it (`requests_in_flight`).
    pub name: &'static str,
    pub opener: &'static str,
    pub closer: &'static str,
    pub gauge: Metric,
    #[serde(skip)]
    pub get: fn(&Counts) -> u64,
}

macro_rules! define_counts {
    ($(
        $probe:ident $name:literal $when:literal
        ( $( $arg:ident : $meaning:literal ),* $(,)? )
        counters [ $(
            $counter:ident $cmetric:literal $chelp:literal
            $( (pair $pair:ident until $closer:ident $gauge:literal $ghelp:literal) )?
        ),* ]
        histograms [ $( $hist:ident $hmetric:literal $hhelp:literal ),* ];
    )*) => {
        /// Cumulative counts since start or the last reset; each moves exactly when
        /// its probe fires ([`with_events!`] says which).
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
        pub struct Counts {
            $( $(
                #[doc = $chelp]
                pub $counter: u64,
            )* )*
        }

        impl Counts {
            /// What happened between `earlier` and these counts.
            pub fn since(&self, earlier: &Counts) -> Counts {
                Counts {
                    $( $( $counter: self.$counter.saturating_sub(earlier.$counter), )* )*
                }
            }

            /// These counts and `other`'s together, counter by counter (the server
            /// keeps its counts in per-thread parts and adds them up when read).
            pub fn plus(&self, other: &Counts) -> Counts {
                Counts {
                    $( $( $counter: self.$counter.wrapping_add(other.$counter), )* )*
                }
            }

            /// What a reset starts the new window with: every pair's figure as its
            /// opener's count, so what is in flight still balances when it ends;
            /// every other counter at zero.
            pub fn carried_over(&self) -> Counts {
                Counts {
                    $( $( $( $counter: self.$pair(), )? )* )*
                    ..Counts::default()
                }
            }

            $( $( $(
                #[doc = $ghelp]
                pub fn $pair(&self) -> u64 {
                    self.$counter.saturating_sub(self.$closer)
                }
            )? )* )*
        }

        /// Every event histogram, a field each of `H` (the server's buckets),
        /// named as in [`with_events!`].
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct EventHistograms<H> {
            $( $( pub $hist: H, )* )*
        }

        impl<H> EventHistograms<H> {
            /// Field by field, `join(mine, theirs)`.
            pub fn zip_with(&self, other: &Self, join: impl Fn(&H, &H) -> H) -> Self {
                EventHistograms {
                    $( $( $hist: join(&self.$hist, &other.$hist), )* )*
                }
            }

            /// Every histogram with its metric, in the order of [`with_events!`].
            pub fn each(&self) -> impl Iterator<Item = (Metric, &H)> {
                [ $( $( (Metric { name: $hmetric, help: $hhelp }, &self.$hist), )* )* ]
                    .into_iter()
            }
        }

        /// Every probe's name under its Rust name (`__` for `-`, as usdt
        /// names the probe after its function): code that names a probe
        /// through here (`probe::request__start`) fails to compile when the
        /// probe is renamed or removed, where a string would match nothing.
        #[allow(non_upper_case_globals)]
        pub mod probe {
            $( #[doc = $when] pub const $probe: &str = $name; )*
        }

        /// Every event, in the order of [`with_events!`].
        pub const EVENTS: &[Event] = &[ $(
            Event {
                probe: $name,
                fires_when: $when,
                args: &[ $( (stringify!($arg), $meaning) ),* ],
                counters: &[ $( Counter {
                    field: stringify!($counter),
                    metric: Metric { name: $cmetric, help: $chelp },
                    opens: define_counts!(@pair $( $pair $counter $closer $gauge $ghelp )?),
                    get: |counts| counts.$counter,
                } ),* ],
                histograms: &[ $( Metric { name: $hmetric, help: $hhelp } ),* ],
            }
        ),* ];
    };
    (@pair) => { None };
    (@pair $pair:ident $counter:ident $closer:ident $gauge:literal $ghelp:literal) => {
        Some(Pair {
            name: stringify!($pair),
            opener: stringify!($counter),
            closer: stringify!($closer),
            gauge: Metric { name: $gauge, help: $ghelp },
            get: Counts::$pair,
        })
    };
}

crate::with_events!(define_counts);

impl Counts {
    /// Share of admitted requests that had to wait, 0 to 1.
    pub fn blocked_share(&self) -> f64 {
        let admitted = self.requests_blocked + self.requests_nonblocked;
        if admitted == 0 {
            0.0
        } else {
            self.requests_blocked as f64 / admitted as f64
        }
    }
}

/// Every probe name, as tracers see it, in the order declared.
pub fn probe_names() -> impl Iterator<Item = &'static str> {
    EVENTS.iter().map(|e| e.probe)
}

/// Every in-flight pair.
pub fn pairs() -> impl Iterator<Item = &'static Pair> {
    EVENTS
        .iter()
        .flat_map(|e| e.counters)
        .filter_map(|c| c.opens.as_ref())
}

/// The probe table of `docs/tracing.md`: a row per probe, with what it moves.
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| probe | fires when | arg0 | then | moves: `/stats` field (`/metrics` name) |\n| --- | --- | --- | --- | --- |\n",
    );
    for event in EVENTS {
        let (arg0, rest) = event.args.split_first().expect("every probe has arg0");
        let then: Vec<&str> = rest.iter().map(|(_, meaning)| *meaning).collect();
        let mut moves: Vec<String> = event
            .counters
            .iter()
            .map(|c| match &c.opens {
                None => format!("`{}` (`{}`)", c.field, c.metric.name),
                Some(pair) => format!(
                    "`{}` (`{}`), opening `{}` (gauge `{}`) until `{}`",
                    c.field, c.metric.name, pair.name, pair.gauge.name, pair.closer
                ),
            })
            .collect();
        moves.extend(event.histograms.iter().map(|h| format!("`{}`", h.name)));
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            event.probe,
            event.fires_when,
            arg0.1,
            then.join(", "),
            if moves.is_empty() {
                "nothing".to_owned()
            } else {
                moves.join(", ")
            }
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pair_balances_after_a_reset_and_its_closers() {
        let mut counts = Counts::default();
        for (i, pair) in pairs().enumerate() {
            // Opener 10 + i, closer 3: 7 + i in flight.
            set(&mut counts, pair.opener, 10 + i as u64);
            set(&mut counts, pair.closer, 3);
        }
        counts.requests_blocked = 4;
        let carried = counts.carried_over();
        assert_eq!(carried.requests_blocked, 0, "a plain counter starts again");
        for (i, pair) in pairs().enumerate() {
            assert_eq!((pair.get)(&carried), 7 + i as u64, "{}", pair.name);
            assert_eq!((pair.get)(&carried), (pair.get)(&counts), "{}", pair.name);
        }
    }

    #[test]
    fn names_are_unique_and_probe_names_are_the_rust_names() {
        let mut seen = std::collections::BTreeSet::new();
        for event in EVENTS {
            assert!(seen.insert(event.probe), "{} twice", event.probe);
            for c in event.counters {
                assert!(seen.insert(c.field), "{} twice", c.field);
                assert!(seen.insert(c.metric.name), "{} twice", c.metric.name);
                assert!(c.metric.name.starts_with("isim_") && c.metric.name.ends_with("_total"));
            }
            for h in event.histograms {
                assert!(seen.insert(h.name), "{} twice", h.name);
                assert!(h.name.starts_with("isim_") && h.name.ends_with("_seconds"));
            }
            assert!(
                !event.args.is_empty() && event.args.len() <= 6,
                "{}",
                event.probe
            );
        }
    }

    /// Sets a counter by its field name, through the JSON form (the test's only
    /// way to name a field by string).
    fn set(counts: &mut Counts, field: &str, value: u64) {
        let mut json = serde_json::to_value(*counts).unwrap();
        json[field] = value.into();
        *counts = serde_json::from_value(json).unwrap();
    }
}
