//! What differs from one operating system to another in the load driver, kept
//! here so the rest of the crate names no OS (the server crate's
//! `tests/suite/guards/platform.rs` holds both crates to that): `--precise-pacing`'s
//! shared timer (`precise_timer.rs`, a Linux timerfd; elsewhere a pacer that
//! cannot start, and the plan refuses the flag up front), the socket option
//! that lets connect choose the port (`socket.rs`), the kernel's view of the
//! clock's synchronisation (`clock.rs`), the descriptor limit every
//! connection counts against (`descriptors.rs`), and the terminal's width for
//! the progress line (`terminal.rs`).

pub mod clock;
pub mod descriptors;
pub mod socket;
pub mod terminal;

#[cfg(target_os = "linux")]
mod precise_timer;
#[cfg(target_os = "linux")]
pub use precise_timer::SharedPacer;

/// Whether this OS has `--precise-pacing`'s timer.
pub const HAS_PRECISE_TIMER: bool = cfg!(target_os = "linux");

#[cfg(not(target_os = "linux"))]
pub use elsewhere::SharedPacer;

/// The pacer where the OS has no timerfd: one can never be made, so none of
/// its waits exists to be awaited.
#[cfg(not(target_os = "linux"))]
mod elsewhere {
    use std::time::Duration;

    use tokio::time::Instant;

    #[derive(Debug)]
    pub enum SharedPacer {}

    impl SharedPacer {
        pub fn start(_slack: Duration) -> std::io::Result<Self> {
            Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "--precise-pacing needs Linux's timerfd: not on this OS",
            ))
        }

        pub fn sleep_until(&self, _due: Instant) -> std::future::Ready<()> {
            match *self {}
        }

        pub fn nudge(&self) {
            match *self {}
        }
    }
}
