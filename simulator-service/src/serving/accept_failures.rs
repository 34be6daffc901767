//! What a listener's accept loop does when accept(2) fails, most often with
//! EMFILE: the process holds as many descriptors as its limit allows, and
//! nothing the loop does can free one. Three things, each once:
//!
//! - it counts the failure (`/stats.accept_errors`, `isim_accept_errors_total`,
//!   probe `accept-error` with the errno and the listener);
//! - it waits before trying again (the data port: [`ACCEPT_ERROR_PAUSE`]), so
//!   it neither spins a CPU on an error that repeats at once (tokio#3529) nor
//!   stops accepting for good; the operator's listener first lends itself a
//!   descriptor of its reserve (`platform/descriptor_reserve.rs`) and accepts
//!   again at once, so `/healthz`, `/stats` and `/metrics` keep answering;
//! - it logs a spell of failures as a person can read it: a line when it
//!   begins, one with the count every [`LOG_EVERY`] while it lasts, and one
//!   when accepts work again (a warning every 100 ms was ten lines a second
//!   for as long as the limit held). At the limit a descriptor freed for a
//!   moment lets one accept through between failures, so a spell ends only
//!   at an accept [`QUIET`] after its last failure: flapping at the limit is
//!   one spell, not a pair of lines each time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::observe::events::ListenerKind;
use crate::observe::Events;
use crate::platform::descriptor_reserve::DescriptorReserve;
use crate::platform::descriptors;

/// After an accept error that lending cannot cure, wait this long before
/// accepting again: the loop must not spin while nothing can change, and
/// connections that arrive meanwhile wait in the kernel's accept queue.
pub const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);

/// How often a spell of failures is logged while it lasts.
pub const LOG_EVERY: Duration = Duration::from_secs(5);

/// How long after its last failure an accept that works ends a spell.
pub const QUIET: Duration = Duration::from_secs(1);

/// Failed accepts since the process started, on either listener: the probe's
/// first argument.
static FAILURES: AtomicU64 = AtomicU64::new(0);

/// What the loop does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// A descriptor of the reserve was freed: accept again now.
    AcceptAgain,
    /// Wait [`ACCEPT_ERROR_PAUSE`], then accept again.
    Pause,
}

/// One listener's accept failures: its counts, its log and its reserve.
#[derive(Debug)]
pub struct AcceptFailures {
    /// The server's listeners' fire `accept-error`; the room's has no probes.
    events: Option<Events>,
    listener: ListenerKind,
    reserve: Option<Arc<DescriptorReserve>>,
    log: SpellLog,
    /// The next accept runs on a descriptor lent from the reserve: its success
    /// does not end the spell, which still holds for everyone else.
    on_lent: bool,
}

impl AcceptFailures {
    /// The data port's: it pauses after each failure.
    pub fn data_port(events: Events) -> AcceptFailures {
        Self::new(Some(events), ListenerKind::Data, None, "the data port")
    }

    /// The operator's listener's: it lends itself a descriptor of `reserve`.
    pub fn operator(events: Events, reserve: Arc<DescriptorReserve>) -> AcceptFailures {
        Self::new(
            Some(events),
            ListenerKind::Operator,
            Some(reserve),
            "the operator's listener",
        )
    }

    /// Another program's listener (the workshop's room): counted in its log
    /// alone, since its process is not the server whose probes a tracer counts.
    pub fn unprobed(name: &'static str) -> AcceptFailures {
        Self::new(None, ListenerKind::Data, None, name)
    }

    fn new(
        events: Option<Events>,
        listener: ListenerKind,
        reserve: Option<Arc<DescriptorReserve>>,
        name: &'static str,
    ) -> AcceptFailures {
        AcceptFailures {
            events,
            listener,
            reserve,
            log: SpellLog::new(name),
            on_lent: false,
        }
    }

    /// The reserve a connection refills when it closes (the operator's).
    pub fn reserve(&self) -> Option<&Arc<DescriptorReserve>> {
        self.reserve.as_ref()
    }

    /// accept(2) failed with `err`.
    pub fn failed(&mut self, err: &std::io::Error) -> Next {
        let seq = FAILURES.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(events) = &self.events {
            events.accept_error(seq, err.raw_os_error().unwrap_or(0), self.listener);
        }
        // Not `descriptors::now()`: counting them opens a directory, which
        // fails too, and the kernel would count that failure as well.
        let limit = descriptors::soft_limit();
        self.log.failed(Instant::now(), err, limit);
        self.on_lent =
            descriptors::exhausted(err) && self.reserve.as_ref().is_some_and(|r| r.lend());
        if self.on_lent {
            Next::AcceptAgain
        } else {
            Next::Pause
        }
    }

    /// Accepts have failed since the last that worked unlent: the loop then
    /// accepts only when a connection waits.
    pub fn in_spell(&self) -> bool {
        self.log.spell.is_some()
    }

    /// accept(2) returned a connection.
    pub fn accepted(&mut self) {
        if std::mem::take(&mut self.on_lent) {
            return;
        }
        self.log.accepted(Instant::now());
        if let Some(reserve) = &self.reserve {
            reserve.refill();
        }
    }
}

/// A spell of failures, as it is logged: one line as it begins, one every
/// [`LOG_EVERY`] with the failures since the last, one as it ends.
#[derive(Debug)]
struct SpellLog {
    listener: &'static str,
    spell: Option<Spell>,
}

#[derive(Debug)]
struct Spell {
    began: Instant,
    last_failure: Instant,
    failures: u64,
    since_line: u64,
    line_at: Instant,
}

impl SpellLog {
    fn new(listener: &'static str) -> SpellLog {
        SpellLog {
            listener,
            spell: None,
        }
    }

    /// Logs the failure if it begins a spell or [`LOG_EVERY`] has passed
    /// since the last line; returns the line, for the tests.
    fn failed(&mut self, now: Instant, err: &std::io::Error, limit: Option<u64>) -> Option<String> {
        let listener = self.listener;
        let Some(spell) = &mut self.spell else {
            self.spell = Some(Spell {
                began: now,
                last_failure: now,
                failures: 1,
                since_line: 0,
                line_at: now,
            });
            let why = match limit {
                Some(limit) if descriptors::exhausted(err) => format!(
                    "; the process holds all the {limit} descriptors its limit allows (`ulimit -n`)"
                ),
                _ => String::new(),
            };
            let line = format!(
                "accept failed on {listener}: {err}{why}; trying again every {} ms, with a line every {} s while it fails",
                ACCEPT_ERROR_PAUSE.as_millis(),
                LOG_EVERY.as_secs()
            );
            tracing::warn!("{line}");
            return Some(line);
        };
        spell.failures += 1;
        spell.since_line += 1;
        spell.last_failure = now;
        let since = now.duration_since(spell.line_at);
        if since < LOG_EVERY {
            return None;
        }
        let line = format!(
            "accept still failing on {listener}: {} failures in the last {:.1} s, {} since it began {:.1} s ago: {err}",
            spell.since_line,
            since.as_secs_f64(),
            spell.failures,
            now.duration_since(spell.began).as_secs_f64()
        );
        spell.since_line = 0;
        spell.line_at = now;
        tracing::warn!("{line}");
        Some(line)
    }

    /// Ends a spell, if one is on and [`QUIET`] has passed since its last
    /// failure, with its line.
    fn accepted(&mut self, now: Instant) -> Option<String> {
        let spell = self.spell.as_ref()?;
        if now.duration_since(spell.last_failure) < QUIET {
            return None;
        }
        let line = format!(
            "accept works again on {}, after {} failures in {:.1} s",
            self.listener,
            spell.failures,
            spell.last_failure.duration_since(spell.began).as_secs_f64()
        );
        self.spell = None;
        tracing::info!("{line}");
        Some(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn emfile() -> std::io::Error {
        descriptors::out_of_descriptors_error()
    }

    #[tokio::test(start_paused = true)]
    async fn a_spell_of_ten_failures_a_second_flapping_at_the_limit_is_three_lines_in_seven_seconds(
    ) {
        let mut log = SpellLog::new("the data port");
        let mut lines = Vec::new();
        for i in 0..60 {
            lines.extend(log.failed(Instant::now(), &emfile(), Some(64)));
            tokio::time::advance(ACCEPT_ERROR_PAUSE).await;
            if i % 20 == 0 {
                // A descriptor freed for a moment lets one through.
                lines.extend(log.accepted(Instant::now()));
            }
        }
        tokio::time::advance(QUIET).await;
        lines.extend(log.accepted(Instant::now()));
        assert_eq!(lines.len(), 3, "{lines:#?}");
        assert!(
            lines[0].starts_with("accept failed on the data port: "),
            "{}",
            lines[0]
        );
        assert!(
            !descriptors::exhausted(&emfile())
                || lines[0].contains("all the 64 descriptors its limit allows"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].starts_with(
                "accept still failing on the data port: 50 failures in the last 5.0 s, 51 since it began 5.0 s ago"
            ),
            "{}",
            lines[1]
        );
        assert_eq!(
            lines[2],
            "accept works again on the data port, after 60 failures in 5.9 s"
        );
        assert_eq!(log.accepted(Instant::now()), None, "the spell has ended");
    }

    #[tokio::test(start_paused = true)]
    async fn the_operator_lends_itself_its_reserve_and_only_an_unlent_accept_ends_the_spell() {
        let reserve = Arc::new(DescriptorReserve::new(2));
        // Two on Unix; elsewhere the reserve holds none and lends nothing.
        let spare = reserve.held();
        let mut failures = AcceptFailures::operator(Events::default(), Arc::clone(&reserve));
        for lent in 1..=spare {
            assert_eq!(failures.failed(&emfile()), Next::AcceptAgain);
            assert_eq!(reserve.held(), spare - lent);
            failures.accepted();
            assert!(failures.in_spell(), "still out of descriptors");
        }
        assert_eq!(
            failures.failed(&emfile()),
            Next::Pause,
            "the reserve is spent"
        );
        failures.accepted();
        assert!(failures.in_spell(), "a moment after a failure");
        tokio::time::advance(QUIET).await;
        failures.accepted();
        assert!(!failures.in_spell());
        assert_eq!(
            reserve.held(),
            spare,
            "refilled once an accept worked unlent"
        );
        let counts = failures.events.as_ref().unwrap().counts().snapshot();
        assert_eq!(counts.accept_errors, spare as u64 + 1);
    }

    #[tokio::test(start_paused = true)]
    async fn the_data_port_pauses_after_every_failure() {
        let mut failures = AcceptFailures::data_port(Events::default());
        for _ in 0..3 {
            assert_eq!(failures.failed(&emfile()), Next::Pause);
        }
        let aborted = std::io::Error::from(std::io::ErrorKind::ConnectionAborted);
        assert_eq!(failures.failed(&aborted), Next::Pause);
        assert_eq!(
            failures
                .events
                .as_ref()
                .unwrap()
                .counts()
                .snapshot()
                .accept_errors,
            4
        );
    }
}
