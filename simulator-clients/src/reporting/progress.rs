//! Live progress on a terminal: elapsed, completed, rate, blocked share, errors,
//! late sends.
//! Drawn on stderr and only when stdout is a terminal, so a piped report stays clean.
//!
//! Drawn by hand rather than with indicatif: one status line needs only a
//! carriage return, an erase and the terminal's width (`platform/terminal.rs`),
//! and the server's binary runs this driver too (the demo, `system-simulator
//! clients`), whose dependency tree is kept free of terminal crates (issue 79).

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::platform::terminal;
use crate::reporting::record::{RunCounts, Running};

/// How often the line is drawn again.
const EVERY: Duration = Duration::from_millis(250);

/// The spinner's frames, one a redraw: enough to show the run is alive.
const FRAMES: [char; 4] = ['|', '/', '-', '\\'];

/// Moves to the row's start and erases it.
const ERASE: &str = "\r\x1b[2K";

#[derive(Debug)]
pub struct Progress {
    ticker: JoinHandle<()>,
}

impl Progress {
    pub fn start(shared: Arc<dyn Running>) -> Self {
        let ticker = tokio::spawn(async move {
            let mut every = tokio::time::interval(EVERY);
            for frame in FRAMES.iter().cycle() {
                every.tick().await;
                let elapsed = shared.started().elapsed();
                let line = status_line(*frame, elapsed, &message(shared.as_ref(), elapsed));
                let fitted = fit(&line, terminal::columns());
                // A terminal that cannot be written to loses only the line.
                let _ = write!(std::io::stderr(), "{ERASE}{fitted}");
            }
        });
        Self { ticker }
    }

    pub fn finish(self) {
        self.ticker.abort();
        let _ = write!(std::io::stderr(), "{ERASE}");
    }
}

/// What the run has done so far, and while draining, what it still waits for.
fn message(shared: &dyn Running, elapsed: Duration) -> String {
    let RunCounts {
        sent,
        completed,
        blocked,
        errors,
        late,
    } = shared.recorder().counts();
    let secs = elapsed.as_secs_f64().max(1e-9);
    let share = if completed == 0 {
        0.0
    } else {
        blocked as f64 * 100.0 / completed as f64
    };
    let counts = format!(
        "sent {sent}  completed {completed} ({:.1}/s)  blocked {share:.1} %  errors {errors}  late {late}",
        completed as f64 / secs
    );
    match shared.draining() {
        Some((drained, limit)) => format!(
            "draining: {} replies still queued at the server, {:.0} s of at most {} (--max-drain); {counts}",
            shared.in_flight(),
            drained.as_secs_f64(),
            humantime::format_duration(limit)
        ),
        None => counts,
    }
}

/// The spinner, the whole seconds elapsed right-aligned in four columns, and
/// the message.
fn status_line(frame: char, elapsed: Duration, message: &str) -> String {
    format!("{frame} {:>4} {message}", format!("{}s", elapsed.as_secs()))
}

/// The line cut to one column less than the terminal's width, so the cursor
/// never moves to a new row and the next erase clears all of it.
fn fit(line: &str, columns: usize) -> &str {
    let keep = columns.saturating_sub(1);
    match line.char_indices().nth(keep) {
        Some((at, _)) => &line[..at],
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_the_spinner_the_seconds_and_the_message() {
        assert_eq!(
            status_line('/', Duration::from_millis(12_900), "sent 3"),
            "/  12s sent 3"
        );
        assert_eq!(
            status_line('|', Duration::from_secs(3_600), "x"),
            "| 3600s x"
        );
    }

    #[test]
    fn a_line_wider_than_the_terminal_is_cut_to_a_column_less() {
        assert_eq!(fit("abcdef", 4), "abc");
        assert_eq!(fit("abc", 4), "abc");
        assert_eq!(fit("abcd", 4), "abc");
        // Cut between characters, not inside one.
        assert_eq!(fit("ééé", 3), "éé");
        assert_eq!(fit("abc", 0), "");
    }
}
