//! A load's plan of stages (`--stages`): the clients (closed loop) or the
//! rate (open loop) over time, each stage named, in one compact string that a
//! scenario's `load` and the driver's command line read alike.
//!
//! ```text
//! warm: ramp 50 30s, base: hold 1m, peak: spike 400 10s, after: hold 30s
//! ramp 10/s 20s, step 100/s 30s, ramp 300/s 1m
//! ```
//!
//! A stage is `[NAME:] SHAPE LEVEL DURATION`. The shapes:
//! - `ramp L D`: from the level before to L, linearly over D (the first from 0);
//! - `hold D`: the level before, for D (`hold L D` is `step L D`);
//! - `step L D`: L at once, for D;
//! - `spike L D`: L at once, for D, then back to the level before it.
//!
//! A level is clients (`50`) or requests a second (`300/s`, an open loop); a
//! plan holds one kind. Names default to `s1`, `s2`, ... The plan is a
//! level over time in straight pieces, one a stage: the closed loop asks it when
//! client `i` is in (`first_above`), the open loop's timetable when its `k`th
//! send is due (`time_of_sends`). Written by hand: the piecewise-linear
//! integral and its inverse are a few lines, and no crate carries them.

use std::fmt;
use std::time::Duration;

use crate::value::{parse_duration, text_of};

/// The most stages a plan may hold: each keeps figures of its own.
pub const MAX_STAGES: usize = 32;
/// The longest stage name.
pub const MAX_STAGE_NAME: usize = 32;
/// The most clients a closed-loop stage may ask for (one process's descriptors
/// stop it long before this).
pub const MAX_STAGE_CLIENTS: f64 = 1_000_000.0;

/// A stage's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    Ramp,
    Hold,
    Step,
    Spike,
}

impl Shape {
    pub fn name(self) -> &'static str {
        match self {
            Shape::Ramp => "ramp",
            Shape::Hold => "hold",
            Shape::Step => "step",
            Shape::Spike => "spike",
        }
    }
}

/// What a plan's levels count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Closed loop: virtual clients.
    Clients,
    /// Open loop: requests a second.
    Rate,
}

/// One stage, its levels resolved: it runs from `from_level` to `to_level`
/// linearly (equal but for a ramp).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Stage {
    pub name: String,
    pub shape: Shape,
    pub from_level: f64,
    pub to_level: f64,
    pub duration: Duration,
}

/// A plan of stages.
#[derive(Debug, Clone, PartialEq)]
pub struct Stages {
    pub unit: Unit,
    pub stages: Vec<Stage>,
}

impl std::str::FromStr for Stages {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut unit = None;
        let mut stages: Vec<Stage> = Vec::new();
        // The level a `spike` returns to, and a `ramp` or `hold` starts from.
        let mut level = 0.0;
        for (index, part) in text.split(',').enumerate() {
            let part = part.trim();
            let (name, body) = match part.split_once(':') {
                Some((name, body)) => (name.trim().to_owned(), body.trim()),
                None => (format!("s{}", index + 1), part),
            };
            check_name(&name, &stages)?;
            let words: Vec<&str> = body.split_whitespace().collect();
            let said = |why: &str| format!("stage `{part}`: {why}");
            let (shape, target, duration) = match words.as_slice() {
                [shape, duration] => (*shape, None, *duration),
                [shape, target, duration] => (*shape, Some(*target), *duration),
                _ => return Err(said(FORM)),
            };
            let shape = match shape {
                "ramp" => Shape::Ramp,
                "hold" => Shape::Hold,
                "step" => Shape::Step,
                "spike" => Shape::Spike,
                other => return Err(said(&format!("`{other}` is no shape; {FORM}"))),
            };
            let target = match target {
                Some(t) => Some(parse_level(t, &mut unit).map_err(|e| said(&e))?),
                None if shape == Shape::Hold => None,
                None => return Err(said(&format!("a {} needs a level", shape.name()))),
            };
            let duration = parse_duration(duration).map_err(|e| said(&e))?;
            if duration.is_zero() {
                return Err(said("a stage lasts longer than 0s"));
            }
            let (from_level, to_level) = match (shape, target) {
                (Shape::Ramp, Some(t)) => (level, t),
                (_, Some(t)) => (t, t),
                (_, None) => (level, level),
            };
            if shape != Shape::Spike {
                level = to_level;
            }
            stages.push(Stage {
                name,
                shape,
                from_level,
                to_level,
                duration,
            });
            if stages.len() > MAX_STAGES {
                return Err(format!("a plan holds at most {MAX_STAGES} stages"));
            }
        }
        let unit = unit.unwrap_or(Unit::Clients);
        let plan = Stages { unit, stages };
        if plan.peak() <= 0.0 {
            return Err(format!(
                "`{text}`: every stage's level is 0: nothing is sent"
            ));
        }
        if plan.total() > crate::settings::MAX_SPAN {
            return Err(format!(
                "`{text}` lasts {}, longer than a run may ({})",
                text_of(plan.total()),
                text_of(crate::settings::MAX_SPAN)
            ));
        }
        Ok(plan)
    }
}

const FORM: &str = "write [NAME:] ramp LEVEL DURATION, hold [LEVEL] DURATION, step LEVEL DURATION or spike LEVEL DURATION, with LEVEL clients (50) or a rate (300/s)";

fn check_name(name: &str, before: &[Stage]) -> Result<(), String> {
    let fits = !name.is_empty()
        && name.len() <= MAX_STAGE_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !fits {
        return Err(format!(
            "stage name `{name}`: 1 to {MAX_STAGE_NAME} letters, digits, - or _"
        ));
    }
    if before.iter().any(|s| s.name == name) {
        return Err(format!("two stages are named `{name}`"));
    }
    Ok(())
}

/// `50` (clients) or `300/s` (a rate), the plan's unit fixed by its first level.
fn parse_level(text: &str, unit: &mut Option<Unit>) -> Result<f64, String> {
    let (number, this) = match text.strip_suffix("/s") {
        Some(rate) => (rate, Unit::Rate),
        None => (text, Unit::Clients),
    };
    if unit.is_some_and(|u| u != this) {
        return Err("a plan's levels are all clients (50) or all rates (300/s)".into());
    }
    *unit = Some(this);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is no level: write clients (50) or a rate (300/s)"))?;
    let most = match this {
        Unit::Clients => MAX_STAGE_CLIENTS,
        Unit::Rate => super::MAX_RATE,
    };
    if !(0.0..=most).contains(&value) || (this == Unit::Clients && value.fract() != 0.0) {
        return Err(match this {
            Unit::Clients => format!("`{text}`: clients are a whole number, 0 to {most}"),
            Unit::Rate => format!("`{text}`: a rate is 0 to {most} a second"),
        });
    }
    Ok(value)
}

impl Stages {
    /// The plan's length.
    pub fn total(&self) -> Duration {
        self.stages.iter().map(|s| s.duration).sum()
    }

    /// The highest level any stage reaches.
    pub fn peak(&self) -> f64 {
        self.stages
            .iter()
            .map(|s| s.from_level.max(s.to_level))
            .fold(0.0, f64::max)
    }

    /// Each stage's start and end, in seconds from the run's start.
    pub fn bounds_s(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.stages.iter().scan(0.0, |t, s| {
            let from = *t;
            *t += s.duration.as_secs_f64();
            Some((from, *t))
        })
    }

    /// The stage in force `t_s` seconds into the run: the last one after the
    /// plan's end, the first before its start.
    pub fn stage_at(&self, t_s: f64) -> usize {
        self.bounds_s()
            .position(|(_, to)| t_s < to)
            .unwrap_or(self.stages.len().saturating_sub(1))
    }

    /// The level `t_s` seconds into the run; 0 after the plan's end.
    pub fn level_at(&self, t_s: f64) -> f64 {
        self.bounds_s()
            .zip(&self.stages)
            .find(|((from, to), _)| t_s >= *from && t_s < *to)
            .map_or(0.0, |((from, to), s)| {
                s.from_level + (s.to_level - s.from_level) * (t_s - from) / (to - from)
            })
    }

    /// The mean level over the plan: an open loop's mean rate.
    pub fn mean(&self) -> f64 {
        self.sends_by(f64::INFINITY) / self.total().as_secs_f64()
    }

    /// The level's integral from the start to `t_s`: an open loop's sends due
    /// by then.
    pub fn sends_by(&self, t_s: f64) -> f64 {
        self.bounds_s()
            .zip(&self.stages)
            .take_while(|((from, _), _)| t_s > *from)
            .map(|((from, to), s)| {
                let span = t_s.min(to) - from;
                let slope = (s.to_level - s.from_level) / (to - from);
                s.from_level * span + slope * span * span / 2.0
            })
            .sum()
    }

    /// When the level's integral reaches `sends`: the time the open loop's
    /// send number `sends` is due (the first, 0, at once). `None` past the
    /// plan's end. A timetable that asks in order walks [`Stages::pieces`]
    /// instead, from where it was.
    pub fn time_of_sends(&self, sends: f64) -> Option<f64> {
        self.pieces().iter().find_map(|p| p.time_of(sends))
    }

    /// The plan as straight pieces with the sends due before each.
    pub fn pieces(&self) -> Vec<Piece> {
        let mut before = 0.0;
        self.bounds_s()
            .zip(&self.stages)
            .map(|((from, to), s)| {
                let span_s = to - from;
                let piece = Piece {
                    from_s: from,
                    span_s,
                    from_level: s.from_level,
                    slope: (s.to_level - s.from_level) / span_s,
                    sends_before: before,
                };
                before += (s.from_level + s.to_level) / 2.0 * span_s;
                piece
            })
            .collect()
    }

    /// The first time at or after `t_s` at which client `index` is in: the
    /// level is above `index` (client 0 joins as the level leaves 0). `None`
    /// when it never is again.
    pub fn first_above(&self, index: usize, t_s: f64) -> Option<f64> {
        let i = index as f64;
        for ((from, to), s) in self.bounds_s().zip(&self.stages) {
            if to <= t_s {
                continue;
            }
            let start = t_s.max(from);
            let slope = (s.to_level - s.from_level) / (to - from);
            if s.from_level + slope * (start - from) > i {
                return Some(start);
            }
            // A rising ramp lets client i in as it passes i.
            if slope > 0.0 && s.to_level > i {
                return Some((from + (i - s.from_level) / slope).max(start));
            }
        }
        None
    }

    /// The stage `index` and its levels, as the report and the live view show
    /// it: `peak: spike to 400 clients for 10s`.
    pub fn describe(&self, index: usize) -> String {
        let s = &self.stages[index];
        let level = |l: f64| match self.unit {
            Unit::Clients => format!("{l} clients"),
            Unit::Rate => format!("{l}/s"),
        };
        let what = match s.shape {
            Shape::Ramp => format!("ramp {} to {}", level(s.from_level), level(s.to_level)),
            Shape::Hold => format!("hold {}", level(s.to_level)),
            Shape::Step | Shape::Spike => format!("{} to {}", s.shape.name(), level(s.to_level)),
        };
        format!("{}: {what} for {}", s.name, text_of(s.duration))
    }
}

/// One stage's straight piece of the level, for a timetable.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Piece {
    pub from_s: f64,
    pub span_s: f64,
    pub from_level: f64,
    /// Level a second.
    pub slope: f64,
    /// The level's integral before the piece: the sends due before it.
    pub sends_before: f64,
}

impl Piece {
    /// When, in this piece, the level's integral reaches `sends`; `None` when
    /// it does not (before it or after).
    pub fn time_of(&self, sends: f64) -> Option<f64> {
        let need = sends - self.sends_before;
        let (a, slope) = (self.from_level, self.slope);
        let area = a * self.span_s + slope * self.span_s * self.span_s / 2.0;
        if need < 0.0 || need > area || area <= 0.0 {
            return None;
        }
        // a·x + slope·x²/2 = need, solved for x in [0, span]. The form without
        // a difference of near-equal terms keeps it exact when the slope is
        // tiny or 0: k / rate for a constant one.
        let x = if need == 0.0 {
            0.0
        } else if slope == 0.0 {
            need / a
        } else {
            2.0 * need / (a + (a * a + 2.0 * slope * need).max(0.0).sqrt())
        };
        Some(self.from_s + x.clamp(0.0, self.span_s))
    }
}

impl fmt::Display for Stages {
    /// The plan in its own grammar, names given: it reads back the same.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = |l: f64| match self.unit {
            Unit::Clients => format!("{l}"),
            Unit::Rate => format!("{l}/s"),
        };
        for (k, s) in self.stages.iter().enumerate() {
            let sep = if k == 0 { "" } else { ", " };
            let target = match s.shape {
                Shape::Hold => String::new(),
                _ => format!(" {}", level(s.to_level)),
            };
            let duration = text_of(s.duration).replace(' ', "");
            write!(f, "{sep}{}: {}{target} {duration}", s.name, s.shape.name())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str) -> Stages {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn a_plan_reads_its_shapes_and_names() {
        let p = plan("warm: ramp 50 30s, base: hold 1m, peak: spike 400 10s, hold 30s");
        assert_eq!(p.unit, Unit::Clients);
        let names: Vec<&str> = p.stages.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["warm", "base", "peak", "s4"]);
        let levels: Vec<(f64, f64)> = p
            .stages
            .iter()
            .map(|s| (s.from_level, s.to_level))
            .collect();
        assert_eq!(
            levels,
            [(0.0, 50.0), (50.0, 50.0), (400.0, 400.0), (50.0, 50.0)]
        );
        assert_eq!(p.total(), Duration::from_secs(130));
        assert_eq!(p.peak(), 400.0);
        assert_eq!(p.stage_at(95.0), 2);
        assert_eq!(p.stage_at(1e9), 3);
        assert_eq!(p.describe(2), "peak: spike to 400 clients for 10s");
        assert_eq!(plan(&p.to_string()), p, "{p}");
        let open = plan("ramp 10/s 20s, step 100/s 30s");
        assert_eq!(open.unit, Unit::Rate);
        assert_eq!(plan(&open.to_string()), open);
    }

    #[test]
    fn bad_plans_say_what_is_wrong() {
        for (bad, needle) in [
            ("ramp 50", "a ramp needs a level"),
            ("ramp", "write [NAME:]"),
            ("climb 50 10s", "`climb` is no shape"),
            (
                "ramp 50 10s, ramp 10/s 10s",
                "all clients (50) or all rates",
            ),
            ("ramp 5.5 10s", "whole number"),
            ("ramp 50 0s", "longer than 0s"),
            ("hold 10s", "every stage's level is 0"),
            ("a: ramp 5 1s, a: hold 1s", "two stages are named `a`"),
            ("a b: ramp 5 1s", "stage name `a b`"),
            ("ramp 5 soon", "`soon` is not a duration"),
            ("step 5 2h", "longer than a run may"),
            ("spike 50 10s", ""),
        ] {
            match bad.parse::<Stages>() {
                Ok(_) => assert!(needle.is_empty(), "{bad} parsed"),
                Err(e) => assert!(!needle.is_empty() && e.contains(needle), "{bad}: {e}"),
            }
        }
        let many = vec!["step 1 1s"; MAX_STAGES + 1].join(", ");
        assert!(many.parse::<Stages>().unwrap_err().contains("at most 32"));
    }

    #[test]
    fn the_sends_due_follow_the_level_and_invert_exactly() {
        let p = plan("ramp 100/s 10s, hold 10s, spike 400/s 5s, hold 5s");
        // 500 in the ramp, 1,000 held, 2,000 in the spike, 500 after.
        assert!((p.sends_by(10.0) - 500.0).abs() < 1e-9);
        assert!((p.sends_by(30.0) - 4_000.0).abs() < 1e-9);
        assert!((p.mean() - 4_000.0 / 30.0).abs() < 1e-9);
        for k in [0.0, 1.0, 7.5, 499.0, 500.0, 1234.0, 3499.0, 3999.0] {
            let t = p.time_of_sends(k).unwrap();
            assert!((p.sends_by(t) - k).abs() < 1e-6, "send {k} at {t}");
        }
        assert_eq!(p.time_of_sends(4_000.5), None);
        // A constant rate is k / rate, as the unplanned timetable.
        let flat = plan("step 300/s 10s");
        assert_eq!(flat.time_of_sends(2999.0), Some(2999.0 / 300.0));
    }

    #[test]
    fn clients_join_as_the_level_passes_them_and_leave_as_it_falls() {
        let p = plan("ramp 10 10s, step 2 5s, hold 0 5s, step 4 5s");
        assert_eq!(p.first_above(0, 0.0), Some(0.0));
        let five = p.first_above(5, 0.0).unwrap();
        assert!((five - 5.0).abs() < 1e-9, "{five}");
        // Client 5 is out from 10 s (level 2) and never back (4 at most).
        assert_eq!(p.first_above(5, 10.0), None);
        // Client 1 is in at 12 s, out at 15 s (level 0), back at 20 s.
        assert_eq!(p.first_above(1, 12.0), Some(12.0));
        assert_eq!(p.first_above(1, 15.0), Some(20.0));
        assert_eq!(p.first_above(3, 25.0), None, "after the plan");
    }
}
