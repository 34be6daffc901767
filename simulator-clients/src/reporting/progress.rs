//! Live progress on a terminal: elapsed, completed, rate, blocked share, errors,
//! late sends.
//! Drawn on stderr and only when stdout is a terminal, so a piped report stays clean.

use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use tokio::task::JoinHandle;

use crate::reporting::record::{RunCounts, Running};

#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
    ticker: JoinHandle<()>,
}

impl Progress {
    pub fn start(shared: Arc<dyn Running>) -> Self {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        let ticker = tokio::spawn({
            let bar = bar.clone();
            async move {
                let mut every = tokio::time::interval(Duration::from_millis(250));
                loop {
                    every.tick().await;
                    let RunCounts {
                        sent,
                        completed,
                        blocked,
                        errors,
                        late,
                    } = shared.recorder().counts();
                    let secs = shared.started().elapsed().as_secs_f64().max(1e-9);
                    let share = if completed == 0 {
                        0.0
                    } else {
                        blocked as f64 * 100.0 / completed as f64
                    };
                    let mut message = format!(
                        "sent {sent}  completed {completed} ({:.1}/s)  blocked {share:.1} %  errors {errors}  late {late}",
                        completed as f64 / secs
                    );
                    if let Some((drained, limit)) = shared.draining() {
                        message = format!(
                            "draining: {} replies still queued at the server, {:.0} s of at most {} (--max-drain); {message}",
                            shared.in_flight(),
                            drained.as_secs_f64(),
                            humantime::format_duration(limit)
                        );
                    }
                    bar.set_message(message);
                    bar.tick();
                }
            }
        });
        Self { bar, ticker }
    }

    pub fn finish(self) {
        self.ticker.abort();
        self.bar.finish_and_clear();
    }
}
