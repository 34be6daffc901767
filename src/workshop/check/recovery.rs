//! The clients' goodput after an incident's end, second by second: how long
//! until it came back and stayed ([`recovery_s`], the metric `recovery_s`).
//!
//! Goodput is held to what the load offered in the same seconds: the requests
//! the driver itself sent (first attempts; retries are not more demand). The
//! nominal rate is the timetable's, and a driver starved of CPU (a busy
//! laptop, six loads beside six servers on one core) sends less than it: held
//! to the nominal rate, a cured server failed for the driver's lateness.

/// One second of the run as recovery reads it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GoodputSecond {
    /// The end of the second, in the run's seconds.
    pub end_s: f64,
    /// Attempts answered within their timeout in it.
    pub answered: u64,
    /// Requests the driver sent in it for the first time.
    pub offered: u64,
}

impl GoodputSecond {
    /// The report's second: its goodput and its first attempts.
    pub fn of(line: &simulator_clients::SeriesLine) -> Self {
        Self {
            end_s: line.t_s,
            answered: line.completed,
            offered: line.sent.saturating_sub(line.retries),
        }
    }
}

/// Seconds from `ended_s` (the incident's end, in the run's seconds) until the
/// goodput stayed at least `share` of what the load offered to the end of the
/// window, judged two seconds at a time (each whole second with the next; the
/// last with the one before); all that is left of the window after `ended_s`
/// when it never got there, and infinity when the window has no whole second
/// after `ended_s` at all. A last second shorter than the others is left out,
/// and two seconds in which the driver offered nothing prove nothing: they do
/// not count as recovered.
///
/// Why two seconds: a reply held across a second's boundary by a stall of tens
/// of milliseconds (the server's, or the driver's, which runs six such loads at
/// once in `workshop figures`, beside six servers on one core in the tests)
/// moves goodput from one second to the next. Judged a second at a time, one
/// such second 22 s after the incident reset a recovery that took 0.1-0.3 s in
/// the other runs (issue 41's runs). A storm, at a twentieth of the offered
/// rate, fails either way; a second that loses more than a tenth of the offered
/// rate still resets it.
pub fn recovery_s(seconds: &[GoodputSecond], ended_s: f64, share: f64) -> f64 {
    let whole: Vec<GoodputSecond> = seconds
        .iter()
        .enumerate()
        .filter(|(i, s)| {
            let start = if *i == 0 { 0.0 } else { seconds[i - 1].end_s };
            s.end_s - start > 0.99
        })
        .map(|(_, s)| *s)
        .collect();
    let Some(window_end) = whole.last().map(|s| s.end_s).filter(|t| *t > ended_s) else {
        return f64::INFINITY;
    };
    let after: Vec<GoodputSecond> = whole.into_iter().filter(|s| s.end_s > ended_s).collect();
    let mut recovered_from = None;
    for (i, second) in after.iter().enumerate() {
        let partner = after
            .get(i + 1)
            .or_else(|| i.checked_sub(1).and_then(|before| after.get(before)));
        let (answered, offered) = partner.map_or((second.answered, second.offered), |other| {
            (
                second.answered + other.answered,
                second.offered + other.offered,
            )
        });
        let back = offered > 0 && answered as f64 >= share * offered as f64;
        match (back, recovered_from) {
            (true, None) => recovered_from = Some((second.end_s - 1.0).max(ended_s)),
            (false, _) => recovered_from = None,
            (true, Some(_)) => {}
        }
    }
    recovered_from.unwrap_or(window_end) - ended_s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Second `i` of a load that offered `offered` and had `good` answered in time.
    fn second(i: usize, good: u64, offered: u64) -> GoodputSecond {
        GoodputSecond {
            end_s: (i + 1) as f64,
            answered: good,
            offered,
        }
    }

    #[test]
    fn recovery_counts_from_the_incident_end_to_the_first_second_that_stays_recovered() {
        // 100 offered a second; the incident ends 15 s in.
        let mut seconds: Vec<GoodputSecond> = (0..40)
            .map(|i| second(i, if (5..21).contains(&i) { 0 } else { 100 }, 100))
            .collect();
        // A good second inside the storm does not count: it did not stay.
        seconds[17].answered = 99;
        assert_eq!(recovery_s(&seconds, 15.0, 0.95), 6.0);
        // Recovered at once.
        let healthy: Vec<GoodputSecond> = (0..40).map(|i| second(i, 97, 100)).collect();
        assert_eq!(recovery_s(&healthy, 15.0, 0.95), 0.0);
        // Never: all the window left after the end.
        let storm: Vec<GoodputSecond> = (0..40)
            .map(|i| second(i, if i < 5 { 100 } else { 0 }, 100))
            .collect();
        assert_eq!(recovery_s(&storm, 15.0, 0.95), 25.0);
        // A second that lost a few replies to the next (a stall across its
        // boundary) does not reset it; one that lost a tenth of the rate does.
        let mut stalled = seconds.clone();
        stalled[30].answered = 91;
        stalled[31].answered = 109;
        assert_eq!(recovery_s(&stalled, 15.0, 0.95), 6.0);
        stalled[31].answered = 100;
        stalled[30].answered = 85;
        assert_eq!(recovery_s(&stalled, 15.0, 0.95), 16.0);
        // A last short second is left out, whatever it holds.
        let mut short = storm.clone();
        short.push(GoodputSecond {
            end_s: 40.3,
            answered: 100,
            offered: 100,
        });
        assert_eq!(recovery_s(&short, 15.0, 0.95), 25.0);
        // A window that ends before the incident does cannot pass.
        assert_eq!(recovery_s(&seconds[..10], 15.0, 0.95), f64::INFINITY);
    }

    #[test]
    fn goodput_is_held_to_what_the_driver_sent_not_to_the_nominal_rate() {
        // A driver starved of CPU sends 60 of a nominal 100 a second after the
        // incident, and a cured server answers all 60 in time: recovered.
        let starved: Vec<GoodputSecond> = (0..40)
            .map(|i| match i {
                0..=4 => second(i, 100, 100),
                5..=14 => second(i, 0, 100),
                _ => second(i, 60, 60),
            })
            .collect();
        assert_eq!(recovery_s(&starved, 15.0, 0.95), 0.0);
        // The same driver beside a server still in its storm: never.
        let storm: Vec<GoodputSecond> = (0..40)
            .map(|i| match i {
                0..=4 => second(i, 100, 100),
                _ => second(i, 3, 60),
            })
            .collect();
        assert_eq!(recovery_s(&storm, 15.0, 0.95), 25.0);
        // Seconds in which the driver sent nothing prove nothing.
        let silent: Vec<GoodputSecond> = (0..40)
            .map(|i| {
                if i < 5 {
                    second(i, 100, 100)
                } else {
                    second(i, 0, 0)
                }
            })
            .collect();
        assert_eq!(recovery_s(&silent, 15.0, 0.95), 25.0);
        // A retry is not more demand: the line's first attempts are its sends
        // less its retries.
        let line = simulator_clients::SeriesLine {
            t_s: 3.0,
            sent: 130,
            completed: 90,
            blocked: 0,
            errors: 0,
            late: 0,
            retries: 30,
            given_up: 0,
            p50_ns: 0,
            p99_ns: 0,
            connect_p99_ns: 0,
            stage: None,
        };
        assert_eq!(GoodputSecond::of(&line), second(2, 90, 100));
    }
}
