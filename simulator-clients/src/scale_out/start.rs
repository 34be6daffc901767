//! `--start-at`: every shard of a run starts its first sends at one wall-clock
//! time, the only synchronisation scale-out needs (k6-operator's starter pod does
//! the same job with a coordinator; here the clock is the coordinator).
//!
//! A shard connects first, then sleeps until the time; the report records how
//! late it really started. A shard that comes up after the time starts at once,
//! its schedule still counted from the common time, so its lateness shows as
//! schedule lag instead of shifting its share of the load. Wall-clock agreement is
//! only as good as the machines' clocks: where the OS gives it (Linux,
//! `platform/clock.rs`), the kernel's own view of its
//! synchronisation (adjtimex: the unsynchronised flag and the maximum error) is
//! read and a warning printed when it is poor.

use std::time::{Duration, SystemTime};

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use crate::platform::clock::{status as clock_status, ClockStatus};

/// A clock error bound above this gets a warning: shards would start that far apart.
pub const CLOCK_ERROR_WARNING: Duration = Duration::from_millis(10);

/// A `--start-at` as given: a time, and whether it was relative to now (then
/// each process's own now, so it names no run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartAt {
    pub at: SystemTime,
    pub relative: bool,
}

/// Parses `+10s` (from now) or an RFC 3339 time: `2026-11-22T20:00:00Z`,
/// `2026-11-22T21:00:00.5+01:00`.
pub fn parse(text: &str) -> Result<StartAt, String> {
    let text = text.trim();
    if let Some(offset) = text.strip_prefix('+') {
        let after = humantime::parse_duration(offset)
            .map_err(|e| format!("`{text}`: {e} (write +10s, +2m)"))?;
        return Ok(StartAt {
            at: SystemTime::now() + after,
            relative: true,
        });
    }
    parse_time(text).map(|at| StartAt {
        at,
        relative: false,
    })
}

fn parse_time(text: &str) -> Result<SystemTime, String> {
    let bad = |e: &dyn std::fmt::Display| {
        format!("`{text}` is not an RFC 3339 time such as 2026-11-22T20:00:00Z, nor +DURATION: {e}")
    };
    // humantime reads UTC times; a numeric offset is taken off by hand.
    let (utc, shift) = match split_offset(text) {
        Some((local, sign, offset)) => (format!("{local}Z"), Some((sign, offset))),
        None => (text.to_owned(), None),
    };
    let at = humantime::parse_rfc3339(&utc).map_err(|e| bad(&e))?;
    Ok(match shift {
        // 21:00+01:00 is 20:00Z: a positive offset is ahead of UTC.
        Some((1, offset)) => at - offset,
        Some((_, offset)) => at + offset,
        None => at,
    })
}

/// `...+HH:MM` or `...-HH:MM` at the end: the time before it, the sign and the offset.
fn split_offset(text: &str) -> Option<(&str, i8, Duration)> {
    let cut = text.len().checked_sub(6)?;
    let (local, offset) = (text.get(..cut)?, text.get(cut..)?);
    let sign = match offset.as_bytes() {
        [b'+', _, _, b':', _, _] => 1,
        [b'-', _, _, b':', _, _] => -1,
        _ => return None,
    };
    let hours: u64 = offset.get(1..3)?.parse().ok()?;
    let minutes: u64 = offset.get(4..6)?.parse().ok()?;
    (hours < 24 && minutes < 60).then(|| {
        (
            local,
            sign,
            Duration::from_secs(hours * 3600 + minutes * 60),
        )
    })
}

/// A start time as a run's name: RFC 3339, to the second when it is a whole
/// second (as people write it), else to the nanosecond.
pub fn name(at: SystemTime) -> String {
    let whole = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .is_ok_and(|d| d.subsec_nanos() == 0);
    if whole {
        humantime::format_rfc3339(at).to_string()
    } else {
        humantime::format_rfc3339_nanos(at).to_string()
    }
}

/// Sleeps until `at` (or `cancel`) and returns the run's start as an instant of
/// tokio's clock, which is `at` itself, and how late the wake-up was against the
/// wall clock. When `at` is already past, the start lies that far back.
pub async fn wait_for(at: SystemTime, cancel: &CancellationToken) -> (Instant, Duration) {
    let now = Instant::now();
    match at.duration_since(SystemTime::now()) {
        Ok(ahead) => {
            let start = now + ahead;
            tokio::select! {
                () = tokio::time::sleep_until(start) => {}
                () = cancel.cancelled() => {}
            }
            let late = SystemTime::now().duration_since(at).unwrap_or_default();
            (start, late)
        }
        Err(past) => {
            let behind = past.duration();
            (now.checked_sub(behind).unwrap_or(now), behind)
        }
    }
}

/// Warns of an unsynchronised clock, when the run starts at a time
/// (`--start-at`) and the clock would make it start apart from its shards.
pub fn warn_of_the_clock(starts_at_a_time: bool) {
    if starts_at_a_time {
        if let Some(warning) = clock_status().and_then(warning) {
            eprintln!("sim-clients: warning: {warning}");
        }
    }
}

/// A warning for `status`, when shards relying on the clock may start apart.
pub fn warning(status: ClockStatus) -> Option<String> {
    if status.unsynchronised {
        return Some(format!(
            "the system clock is not synchronised (kernel STA_UNSYNC; maximum error {}): shards on other machines may start that far apart; run a time daemon (chrony, systemd-timesyncd)",
            crate::reporting::units::duration(u64::try_from(status.max_error.as_nanos()).unwrap_or(u64::MAX))
        ));
    }
    (status.max_error > CLOCK_ERROR_WARNING).then(|| {
        format!(
            "the system clock's error bound is {} (kernel maxerror): shards on other machines may start that far apart",
            crate::reporting::units::duration(u64::try_from(status.max_error.as_nanos()).unwrap_or(u64::MAX))
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(text: &str) -> SystemTime {
        humantime::parse_rfc3339(text).unwrap()
    }

    #[test]
    fn times_parse_with_offsets_and_relative_forms() {
        let eight = utc("2026-11-22T20:00:00Z");
        let at = |text| parse(text).map(|s| s.at);
        assert_eq!(at("2026-11-22T20:00:00Z"), Ok(eight));
        assert_eq!(at("2026-11-22T21:00:00+01:00"), Ok(eight));
        assert_eq!(at("2026-11-22T15:30:00-04:30"), Ok(eight));
        assert_eq!(
            at("2026-11-22T20:00:00.25Z"),
            Ok(eight + Duration::from_millis(250))
        );
        assert!(!parse("2026-11-22T20:00:00Z").unwrap().relative);
        assert_eq!(name(eight), "2026-11-22T20:00:00Z");
        assert_eq!(
            name(eight + Duration::from_millis(250)),
            "2026-11-22T20:00:00.250000000Z"
        );
        let soon = parse("+10s").unwrap();
        assert!(soon.relative);
        let soon = soon.at;
        let ahead = soon.duration_since(SystemTime::now()).unwrap();
        assert!(ahead > Duration::from_secs(9) && ahead <= Duration::from_secs(10));
        for bad in [
            "tomorrow",
            "+ten",
            "2026-13-01T00:00:00Z",
            "2026-11-22T20:00:00+25:00",
        ] {
            let err = parse(bad).unwrap_err();
            assert!(err.contains(bad), "{err}");
        }
    }

    #[test]
    fn a_poor_clock_gets_a_warning_and_a_good_one_none() {
        let good = ClockStatus {
            unsynchronised: false,
            max_error: Duration::from_millis(2),
        };
        assert_eq!(warning(good), None);
        let loose = ClockStatus {
            max_error: Duration::from_millis(400),
            ..good
        };
        assert!(warning(loose).unwrap().contains("400"));
        let unsync = ClockStatus {
            unsynchronised: true,
            ..good
        };
        assert!(warning(unsync).unwrap().contains("not synchronised"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_start_in_the_past_lies_that_far_back() {
        let now = Instant::now();
        let (start, late) = wait_for(
            SystemTime::now() - Duration::from_secs(3),
            &CancellationToken::new(),
        )
        .await;
        assert!(late >= Duration::from_secs(3) && late < Duration::from_secs(4));
        assert!(now - start >= Duration::from_secs(3));
    }
}
