//! A send's lag behind its schedule, in its two parts ([`Lag`]): shared by the
//! recorder (`record.rs`) and the driver's live metrics (`live.rs`),
//! which is why it lives on its own.

use std::time::Duration;

/// How late a send left against its schedule, in its two parts: the time it
/// waited for a free connection (open loop: every connection busy with a reply
/// outstanding, and HTTP/1.1 sends one request at a time on each) and, after that,
/// how late the timer woke. The first says "add connections", the second "the
/// driver itself is late".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Lag {
    pub connection: Duration,
    pub timer: Duration,
}

impl Lag {
    /// A lag that is all the timer's (a closed loop's wake-up, which never waits
    /// for its own connection).
    pub fn timer(lag: Duration) -> Self {
        Self {
            connection: Duration::ZERO,
            timer: lag,
        }
    }

    pub fn total(self) -> Duration {
        self.connection + self.timer
    }
}
