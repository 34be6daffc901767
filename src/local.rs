//! What several commands say of where they run: this machine as a server
//! started here would see it (`doctor`, `workshop list` and `start`), words
//! as this machine's shell reads them back (the load lines that `workshop
//! start`, the demo and a page's figures print), and where this laptop keeps
//! what outlives a command (a seat's token, a check's before).

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

/// `$XDG_STATE_HOME/system-simulator` (or `~/.local/state/system-simulator`):
/// what this laptop keeps between commands. `None` with neither set.
pub fn state_dir() -> Option<std::path::PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| std::path::PathBuf::from(home).join(".local/state"))
        })?;
    Some(state.join("system-simulator"))
}
