//! The clients' goodput after an incident's end, second by second: how long
//! until it came back and stayed ([`recovery_s`], `Metric::RecoveryS`).

/// Seconds from `ended_s` (the incident's end, in the run's seconds) until the
/// goodput stayed at least `share` of `offered` to the end of the window, judged
/// two seconds at a time (each whole second with the next; the last with the one
/// before); all that is left of the window after `ended_s` when it never got
/// there, and infinity when the window has no whole second after `ended_s` at all.
/// `seconds` are (end of the second in the run, attempts answered within their
/// timeout in it); a last second shorter than the others is left out.
///
/// Why two seconds: a reply held across a second's boundary by a stall of tens
/// of milliseconds (the server's, or the driver's, which runs six such loads at
/// once in `workshop figures`, beside six servers on one core in the tests)
/// moves goodput from one second to the next. Judged a second at a time, one
/// such second 22 s after the incident reset a recovery that took 0.1-0.3 s in
/// the other runs (issue 41's runs). A storm, at a twentieth of the offered
/// rate, fails either way; a second that loses more than a tenth of the offered
/// rate still resets it.
pub fn recovery_s(seconds: &[(f64, u64)], ended_s: f64, offered: f64, share: f64) -> f64 {
    let whole: Vec<(f64, u64)> = seconds
        .iter()
        .enumerate()
        .filter(|(i, (t, _))| {
            let start = if *i == 0 { 0.0 } else { seconds[i - 1].0 };
            t - start > 0.99
        })
        .map(|(_, s)| *s)
        .collect();
    let Some(window_end) = whole.last().map(|(t, _)| *t).filter(|t| *t > ended_s) else {
        return f64::INFINITY;
    };
    let after: Vec<(f64, u64)> = whole.into_iter().filter(|(t, _)| *t > ended_s).collect();
    let mut recovered_from = None;
    for (i, (t, good)) in after.iter().enumerate() {
        let partner = after
            .get(i + 1)
            .or_else(|| i.checked_sub(1).and_then(|before| after.get(before)));
        let goodput = partner.map_or(*good as f64, |(_, other)| (good + other) as f64 / 2.0);
        match (goodput >= share * offered, recovered_from) {
            (true, None) => recovered_from = Some((t - 1.0).max(ended_s)),
            (false, _) => recovered_from = None,
            (true, Some(_)) => {}
        }
    }
    recovered_from.unwrap_or(window_end) - ended_s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(i: usize, good: u64) -> (f64, u64) {
        ((i + 1) as f64, good)
    }

    #[test]
    fn recovery_counts_from_the_incident_end_to_the_first_second_that_stays_recovered() {
        // 100 offered a second; the incident ends 15 s in.
        let mut seconds: Vec<(f64, u64)> = (0..40)
            .map(|i| second(i, if (5..21).contains(&i) { 0 } else { 100 }))
            .collect();
        // A good second inside the storm does not count: it did not stay.
        seconds[17].1 = 99;
        assert_eq!(recovery_s(&seconds, 15.0, 100.0, 0.95), 6.0);
        // Recovered at once.
        let healthy: Vec<(f64, u64)> = (0..40).map(|i| second(i, 97)).collect();
        assert_eq!(recovery_s(&healthy, 15.0, 100.0, 0.95), 0.0);
        // Never: all the window left after the end.
        let storm: Vec<(f64, u64)> = (0..40)
            .map(|i| second(i, if i < 5 { 100 } else { 0 }))
            .collect();
        assert_eq!(recovery_s(&storm, 15.0, 100.0, 0.95), 25.0);
        // A second that lost a few replies to the next (a stall across its
        // boundary) does not reset it; one that lost a tenth of the rate does.
        let mut stalled = seconds.clone();
        stalled[30].1 = 91;
        stalled[31].1 = 109;
        assert_eq!(recovery_s(&stalled, 15.0, 100.0, 0.95), 6.0);
        stalled[31].1 = 100;
        stalled[30].1 = 85;
        assert_eq!(recovery_s(&stalled, 15.0, 100.0, 0.95), 16.0);
        // A last short second is left out, whatever it holds.
        let mut short = storm.clone();
        short.push((40.3, 100));
        assert_eq!(recovery_s(&short, 15.0, 100.0, 0.95), 25.0);
        // A window that ends before the incident does cannot pass.
        assert_eq!(recovery_s(&seconds[..10], 15.0, 100.0, 0.95), f64::INFINITY);
    }
}
