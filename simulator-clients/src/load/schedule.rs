//! The open loop's timetable: when each send is due, fixed in advance and never
//! moved by how the server answers.
//!
//! Sends are handed out in order to whichever connection asks first, so a free
//! connection always takes the earliest send not yet taken. When every connection
//! is busy past a send's time, that send leaves late and its latency still counts
//! from the time it was due: a stalled server shows in the percentiles instead of
//! silently lowering the offered load (coordinated omission).
//!
//! A plan of stages (`--stages` in rates) is a rate that changes: send k is
//! due when the rate's integral reaches k (`simulator_api::load::Piece`), a
//! constant rate's k / rate as before, so a ramp is paced as exactly as a
//! constant rate, on the same timer.
//!
//! A shard K of N (`plan/shard.rs`) walks the same global timetable and takes the
//! sends K, K+N, K+2N...: with Poisson arrivals it draws every gap of the whole
//! timetable from the shared seed and skips the other shards' sends, so the
//! shards together send exactly the unsplit schedule.

use std::sync::Mutex;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp1};
use tokio::time::Instant;

use crate::plan::shard::Shard;
use crate::plan::Arrivals;
use simulator_api::load::{Piece, Stages};

#[derive(Debug)]
pub struct Schedule {
    start: Instant,
    end: Instant,
    /// The rate over time: one piece for a constant rate.
    pieces: Vec<Piece>,
    arrivals: Arrivals,
    shard: Shard,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// Sends handed out so far by this shard.
    issued: u64,
    /// Poisson only: the global number of the next send of the whole timetable...
    next_global: u64,
    /// ...and the rate's integral up to it (a constant rate's time × rate).
    next_poisson_sends: f64,
    /// The piece the last send fell in: sends are due in order, so the next
    /// is in it or a later one.
    piece: usize,
    rng: SmallRng,
}

impl Schedule {
    /// Sends from `start` (the first is due at once) until `end`, `rate` per second
    /// in total over all shards; this one hands out `shard`'s. `rate` must be
    /// positive and finite; the plan checks that.
    pub fn new(
        start: Instant,
        end: Instant,
        rate: f64,
        arrivals: Arrivals,
        seed: u64,
        shard: Shard,
    ) -> Self {
        let constant = Piece {
            from_s: 0.0,
            span_s: (end - start).as_secs_f64(),
            from_level: rate,
            slope: 0.0,
            sends_before: 0.0,
        };
        Self::of_pieces(start, end, vec![constant], arrivals, seed, shard)
    }

    /// Sends from `start` at the rates of `plan`, until its end or `end`
    /// (a run cut short: `SIMULATOR_MAX_DURATION`), whichever is first.
    pub fn planned(
        start: Instant,
        end: Instant,
        plan: &Stages,
        arrivals: Arrivals,
        seed: u64,
        shard: Shard,
    ) -> Self {
        let end = end.min(start + plan.total());
        Self::of_pieces(start, end, plan.pieces(), arrivals, seed, shard)
    }

    fn of_pieces(
        start: Instant,
        end: Instant,
        pieces: Vec<Piece>,
        arrivals: Arrivals,
        seed: u64,
        shard: Shard,
    ) -> Self {
        Self {
            start,
            end,
            pieces,
            arrivals,
            shard,
            state: Mutex::new(State {
                issued: 0,
                next_global: 0,
                next_poisson_sends: 0.0,
                piece: 0,
                rng: SmallRng::seed_from_u64(seed),
            }),
        }
    }

    /// When the rate's integral reaches `sends`, in seconds from the start,
    /// looking from the piece the last send fell in.
    fn time_of(&self, state: &mut State, sends: f64) -> Option<f64> {
        while let Some(piece) = self.pieces.get(state.piece) {
            if let Some(t) = piece.time_of(sends) {
                return Some(t);
            }
            state.piece += 1;
        }
        None
    }

    /// [`Schedule::time_of`], and past the end at the last piece's final
    /// rate: a herd's second holds the sends due in the whole second, though
    /// the window ends inside it.
    fn herd_time_of(&self, state: &mut State, sends: f64) -> Option<f64> {
        self.time_of(state, sends).or_else(|| {
            let last = self.pieces.last()?;
            let end_s = last.from_s + last.span_s;
            let rate = last.from_level + last.slope * last.span_s;
            let area = last.from_level * last.span_s + last.slope * last.span_s.powi(2) / 2.0;
            (rate > 0.0).then(|| end_s + (sends - last.sends_before - area) / rate)
        })
    }

    /// The number in the whole timetable of this shard's next send, where every
    /// shard's sends follow a fixed pattern (uniform and bursts).
    fn global(&self, state: &State) -> u64 {
        u64::from(self.shard.index) + state.issued * u64::from(self.shard.count)
    }

    /// The time the next send is due, or `None` once the timetable is over.
    pub fn claim(&self) -> Option<Instant> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let state = &mut *state;
        let offset_s = match self.arrivals {
            // k / rate (or the plan's time of send k) rather than a running
            // sum, so rounding never accumulates.
            Arrivals::Uniform => self.time_of(state, self.global(state) as f64)?,
            // Send k belongs to the second it is due in: whole herds of `rate`.
            Arrivals::Bursts => self.herd_time_of(state, self.global(state) as f64)?.floor(),
            Arrivals::Poisson => loop {
                let (global, sends) = (state.next_global, state.next_poisson_sends);
                // Unit gaps in the rate's integral are a Poisson process of
                // that rate in time (for a constant one, Exp(1) / rate).
                let gap: f64 = Exp1.sample(&mut state.rng);
                state.next_poisson_sends += gap;
                state.next_global += 1;
                if self.shard.owns(global) {
                    break self.time_of(state, sends)?;
                }
            },
        };
        let due = self.start + Duration::try_from_secs_f64(offset_s).ok()?;
        if due >= self.end {
            return None;
        }
        state.issued += 1;
        Some(due)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(schedule: &Schedule) -> Vec<Duration> {
        std::iter::from_fn(|| schedule.claim())
            .map(|t| t - schedule.start)
            .collect()
    }

    #[test]
    fn uniform_sends_are_exactly_one_over_rate_apart() {
        let start = Instant::now();
        let s = Schedule::new(
            start,
            start + Duration::from_secs(10),
            300.0,
            Arrivals::Uniform,
            1,
            Shard::WHOLE,
        );
        let due = all(&s);
        assert_eq!(due.len(), 3000);
        assert_eq!(due[0], Duration::ZERO);
        let last = due[2999].as_secs_f64();
        assert!((last - 2999.0 / 300.0).abs() < 1e-6, "{last}");
    }

    #[test]
    fn poisson_sends_average_the_rate_and_vary() {
        let start = Instant::now();
        let s = Schedule::new(
            start,
            start + Duration::from_secs(100),
            1000.0,
            Arrivals::Poisson,
            7,
            Shard::WHOLE,
        );
        let due = all(&s);
        // 100,000 expected; the standard deviation is about 316.
        assert!((98_500..=101_500).contains(&due.len()), "{}", due.len());
        let gaps: Vec<f64> = due
            .windows(2)
            .map(|w| (w[1] - w[0]).as_secs_f64())
            .collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        // An exponential's standard deviation equals its mean.
        assert!(
            (var.sqrt() / mean - 1.0).abs() < 0.05,
            "sd/mean {}",
            var.sqrt() / mean
        );
        assert!(due.windows(2).all(|w| w[0] <= w[1]), "in order");
    }

    #[test]
    fn the_same_seed_gives_the_same_timetable() {
        let start = Instant::now();
        let end = start + Duration::from_secs(1);
        let a = all(&Schedule::new(
            start,
            end,
            500.0,
            Arrivals::Poisson,
            3,
            Shard::WHOLE,
        ));
        let b = all(&Schedule::new(
            start,
            end,
            500.0,
            Arrivals::Poisson,
            3,
            Shard::WHOLE,
        ));
        assert_eq!(a, b);
    }

    #[test]
    fn bursts_send_each_seconds_rate_at_its_start() {
        let start = Instant::now();
        let s = Schedule::new(
            start,
            start + Duration::from_millis(3_500),
            200.0,
            Arrivals::Bursts,
            1,
            Shard::WHOLE,
        );
        let due = all(&s);
        // Four herds of 200, at 0, 1, 2 and 3 s; the window ends before the fifth.
        assert_eq!(due.len(), 800);
        for (k, t) in due.iter().enumerate() {
            assert_eq!(*t, Duration::from_secs(k as u64 / 200), "send {k}");
        }
        // A fractional rate: herds of 2 and 3 sends alternate around 2.5 a second.
        let half = Schedule::new(
            start,
            start + Duration::from_secs(4),
            2.5,
            Arrivals::Bursts,
            1,
            Shard::WHOLE,
        );
        let secs: Vec<u64> = all(&half).iter().map(Duration::as_secs).collect();
        assert_eq!(secs, [0, 0, 0, 1, 1, 2, 2, 2, 3, 3]);
    }

    #[test]
    fn shards_together_send_the_unsplit_timetable_each_send_once() {
        let start = Instant::now();
        let end = start + Duration::from_secs(3);
        for arrivals in [Arrivals::Uniform, Arrivals::Poisson, Arrivals::Bursts] {
            let whole = all(&Schedule::new(
                start,
                end,
                997.0,
                arrivals,
                11,
                Shard::WHOLE,
            ));
            for count in [2, 3, 4, 7] {
                let mut together: Vec<Duration> = (0..count)
                    .flat_map(|index| {
                        let shard = Shard { index, count };
                        all(&Schedule::new(start, end, 997.0, arrivals, 11, shard))
                    })
                    .collect();
                together.sort_unstable();
                assert_eq!(together, whole, "{arrivals:?} over {count} shards");
            }
        }
    }
}
