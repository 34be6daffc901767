//! What several commands say of where they run: this machine as a server
//! started here would see it (`doctor`, `workshop list` and `start`), and words
//! as this machine's shell reads them back (the load lines that `workshop
//! start`, the demo and a page's figures print).

/// This machine as a server started here would see it (no calibration: a
/// scenario's CPU work is stated in time).
pub fn machine() -> simulator_api::Machine {
    simulator_service::server::machine::snapshot(
        std::time::Duration::ZERO,
        simulator_service::server::work_figures(&simulator_api::Settings::default()),
    )
}

/// Words as a shell reads them back: `lognormal(256k, 1M)` quoted, plain words not.
pub fn shell_line(words: &[String]) -> String {
    shlex::try_join(words.iter().map(String::as_str)).unwrap_or_else(|_| words.join(" "))
    // only a NUL byte fails, which no shell takes
}
