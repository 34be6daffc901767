//! Listings written to stdout whole (`settings`, `scenarios`, `probes`,
//! `workshop list`), for a reader that may stop early: `| head` closes the
//! pipe, and the next write fails with a broken pipe (EPIPE on Unix, where
//! Rust ignores SIGPIPE). `println!` panics on that; a listing whose reader
//! has gone has simply ended.

use std::io::Write;

/// Prints `text` to stdout; a reader that left first is no error.
pub fn print_listing(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}
