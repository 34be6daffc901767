//! Where the server's settings come from, in order of precedence: the defaults
//! (the original simulator), the scenario (`--scenario`), the `--config` TOML file,
//! then the flags. Each layer is a [`SettingsUpdate`] laid over the one below, and
//! the result is validated before the server binds. The settings themselves, their
//! bounds and help, are declared once in `simulator-api` (`settings.rs`); the flags
//! are made from that declaration in `flags.rs`.

mod flags;

use std::path::{Path, PathBuf};

use simulator_api::{Settings, SettingsError, SettingsUpdate};

use crate::scenario::{Scenario, ScenarioError};

pub use flags::SettingFlags;

/// Why the settings could not be put together.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error("cannot read config file {path}: {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("config file {path}: {reason}")]
    Parse { path: PathBuf, reason: String },
}

/// Reads a `--config` TOML file: any settings, by key; unknown keys are refused.
pub fn read_file(path: &Path) -> Result<SettingsUpdate, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    toml::from_str(&text).map_err(|e| ConfigError::Parse {
        path: path.to_owned(),
        reason: e.to_string(),
    })
}

/// Defaults < scenario < file < flags, validated.
pub fn resolve(
    scenario: &Scenario,
    file: Option<&Path>,
    flags: &SettingsUpdate,
) -> Result<Settings, ConfigError> {
    let mut settings = scenario.settings();
    if let Some(path) = file {
        settings = settings.with(&read_file(path)?);
    }
    let settings = settings.with(flags);
    settings.validate()?;
    Ok(settings)
}
