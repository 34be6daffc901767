//! The server's configuration: defaults (the original simulator), the TOML file,
//! and the part that can change while it runs.
//!
//! Precedence is defaults < `--config FILE` < flags. Everything is validated in
//! [`ServerConfig::validate`] before the server binds, and every live change goes
//! through [`ConfigUpdate::apply_to`], which checks the whole update before changing
//! anything, so a bad `PUT /admin/config` leaves the server exactly as it was.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::delay::{Delay, MAX_TERM};
use crate::gate::MAX_PERMITS;

/// The original simulator's `PERSIST_N`.
pub const DEFAULT_PERMITS: usize = 8;
/// Where the server listens unless told otherwise: loopback only.
pub const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 7878);
/// Raw request bodies larger than this are refused with 413.
pub const DEFAULT_MAX_BODY_BYTES: u64 = 16 << 20;
/// Synthetic elements (`{"size": N}`) larger than this are refused with 413.
pub const DEFAULT_MAX_ELEMENT_BYTES: u64 = 1 << 30;
/// How long shutdown waits for requests and persists in flight.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection must deliver a whole request head within this, from the moment it
/// opens or goes idle; a client that sends half a head and stalls is closed.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// A request body must arrive in full within this, from the end of its head.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections open at once; the next one is answered 503 and closed.
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;
/// The most connections the server can be configured to hold.
pub const MAX_CONNECTIONS_LIMIT: usize = 1 << 20;
/// A persist still running after this counts as failed and gives its permit back.
pub const DEFAULT_PERSIST_TIMEOUT: Duration = Duration::from_secs(30);

/// The original's persistence latency: 50 ms + Normal(10 ms, 5 ms).
pub fn default_persist_latency() -> Delay {
    Delay::base_plus_normal(
        Duration::from_millis(50),
        Duration::from_millis(10),
        Duration::from_millis(5),
    )
}

/// The original's network traverse, each way: 500 us + Normal(1 ms, 100 us).
pub fn default_network_delay() -> Delay {
    Delay::base_plus_normal(
        Duration::from_micros(500),
        Duration::from_millis(1),
        Duration::from_micros(100),
    )
}

/// Everything `serve` needs. Field names are the TOML keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub permits: usize,
    pub persist_latency: Delay,
    #[serde(with = "humantime_serde")]
    pub persist_cost_per_mib: Duration,
    pub network_delay: Delay,
    pub persist_error_rate: f64,
    pub persist_stall_rate: f64,
    #[serde(with = "humantime_serde")]
    pub persist_timeout: Duration,
    /// Write elements to files here instead of simulating the store.
    pub persist_dir: Option<PathBuf>,
    /// With `persist_dir`: fsync each file before the persist counts as done.
    pub persist_fsync: bool,
    /// Reply only once the element is on disk (implies `persist_fsync`; needs
    /// `persist_dir`), so an acknowledged element survives a crash.
    pub durable: bool,
    #[serde(with = "humantime_serde")]
    pub header_read_timeout: Duration,
    #[serde(with = "humantime_serde")]
    pub body_read_timeout: Duration,
    pub max_connections: usize,
    pub max_body_bytes: u64,
    pub max_element_bytes: u64,
    #[serde(with = "humantime_serde")]
    pub drain_timeout: Duration,
    /// When set, admin routes require `Authorization: Bearer <token>` from any
    /// address; when unset they answer loopback clients only.
    #[serde(skip_serializing)]
    pub admin_token: Option<String>,
}

/// What `PUT /admin/config` can change while requests flow (permits live in the gate).
/// The file config holds the same keys at its top level.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Tunables {
    pub persist_latency: Delay,
    /// Extra simulated store time per MiB of element, for size-dependent latency.
    #[serde(with = "humantime_serde")]
    pub persist_cost_per_mib: Duration,
    pub network_delay: Delay,
    /// Share of persists that fail (after taking their latency), 0 to 1.
    pub persist_error_rate: f64,
    /// Share of persists that never finish on their own (a hung store), 0 to 1;
    /// `persist_timeout` ends them.
    pub persist_stall_rate: f64,
    /// A persist still running after this fails, and its permit comes back.
    #[serde(with = "humantime_serde")]
    pub persist_timeout: Duration,
}

impl Default for Tunables {
    fn default() -> Self {
        ServerConfig::default().tunables()
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: DEFAULT_LISTEN,
            permits: DEFAULT_PERMITS,
            persist_latency: default_persist_latency(),
            persist_cost_per_mib: Duration::ZERO,
            network_delay: default_network_delay(),
            persist_error_rate: 0.0,
            persist_stall_rate: 0.0,
            persist_timeout: DEFAULT_PERSIST_TIMEOUT,
            persist_dir: None,
            persist_fsync: false,
            durable: false,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_element_bytes: DEFAULT_MAX_ELEMENT_BYTES,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
            admin_token: None,
        }
    }
}

/// A configuration value that cannot be used, named by its key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    #[error("permits must be between 1 and {MAX_PERMITS}, got {0}")]
    Permits(usize),
    #[error("{key} must be between 0 and 1, got {value}")]
    Rate { key: &'static str, value: f64 },
    #[error("max_connections must be between 1 and {MAX_CONNECTIONS_LIMIT}, got {0}")]
    Connections(usize),
    #[error("persist_dir {path}: {reason}")]
    PersistDir { path: PathBuf, reason: String },
    #[error("durable needs persist_dir: only files can be on disk before the reply")]
    DurableWithoutDir,
    #[error("{key} must be at most {limit:?}, got {value:?}", limit = MAX_TERM)]
    TooLong { key: &'static str, value: Duration },
    #[error("{0} must be more than 0")]
    Zero(&'static str),
    #[error("admin_token must not be empty")]
    EmptyToken,
    #[error("cannot read config file {path}: {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("config file {path}: {reason}")]
    Parse { path: PathBuf, reason: String },
}

impl ServerConfig {
    /// The part of this configuration that can change while the server runs.
    pub fn tunables(&self) -> Tunables {
        Tunables {
            persist_latency: self.persist_latency,
            persist_cost_per_mib: self.persist_cost_per_mib,
            network_delay: self.network_delay,
            persist_error_rate: self.persist_error_rate,
            persist_stall_rate: self.persist_stall_rate,
            persist_timeout: self.persist_timeout,
        }
    }

    /// Reads a TOML file; keys it leaves out keep their defaults.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        let config: Self = toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        config.validate()?;
        Ok(config)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        check_permits(self.permits)?;
        self.tunables().validate()?;
        for (key, value) in [
            ("max_body_bytes", self.max_body_bytes),
            ("max_element_bytes", self.max_element_bytes),
        ] {
            if value == 0 {
                return Err(ConfigError::Zero(key));
            }
        }
        for (key, value) in [
            ("drain_timeout", self.drain_timeout),
            ("header_read_timeout", self.header_read_timeout),
            ("body_read_timeout", self.body_read_timeout),
        ] {
            check_duration(key, value)?;
        }
        for (key, value) in [
            ("header_read_timeout", self.header_read_timeout),
            ("body_read_timeout", self.body_read_timeout),
        ] {
            if value.is_zero() {
                return Err(ConfigError::Zero(key));
            }
        }
        if self.max_connections == 0 || self.max_connections > MAX_CONNECTIONS_LIMIT {
            return Err(ConfigError::Connections(self.max_connections));
        }
        if self.durable && self.persist_dir.is_none() {
            return Err(ConfigError::DurableWithoutDir);
        }
        if self.admin_token.as_deref().is_some_and(str::is_empty) {
            return Err(ConfigError::EmptyToken);
        }
        Ok(())
    }
}

impl Tunables {
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (key, value) in [
            ("persist_error_rate", self.persist_error_rate),
            ("persist_stall_rate", self.persist_stall_rate),
        ] {
            if !(0.0..=1.0).contains(&value) {
                return Err(ConfigError::Rate { key, value });
            }
        }
        check_duration("persist_cost_per_mib", self.persist_cost_per_mib)?;
        check_duration("persist_timeout", self.persist_timeout)?;
        if self.persist_timeout.is_zero() {
            return Err(ConfigError::Zero("persist_timeout"));
        }
        Ok(())
    }
}

fn check_duration(key: &'static str, value: Duration) -> Result<(), ConfigError> {
    if value > MAX_TERM {
        return Err(ConfigError::TooLong { key, value });
    }
    Ok(())
}

fn check_permits(permits: usize) -> Result<(), ConfigError> {
    if permits == 0 || permits > MAX_PERMITS {
        return Err(ConfigError::Permits(permits));
    }
    Ok(())
}

/// The body of `PUT /admin/config`: every field optional, unknown fields refused.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigUpdate {
    pub permits: Option<usize>,
    pub persist_latency: Option<Delay>,
    #[serde(default, with = "humantime_serde")]
    pub persist_cost_per_mib: Option<Duration>,
    pub network_delay: Option<Delay>,
    pub persist_error_rate: Option<f64>,
    pub persist_stall_rate: Option<f64>,
    #[serde(default, with = "humantime_serde")]
    pub persist_timeout: Option<Duration>,
}

impl ConfigUpdate {
    /// Checks the whole update against `current` and returns the tunables to install;
    /// nothing is changed here, so a failure changes nothing anywhere.
    pub fn apply_to(&self, current: Tunables) -> Result<Tunables, ConfigError> {
        if let Some(permits) = self.permits {
            check_permits(permits)?;
        }
        let next = Tunables {
            persist_latency: self.persist_latency.unwrap_or(current.persist_latency),
            persist_cost_per_mib: self
                .persist_cost_per_mib
                .unwrap_or(current.persist_cost_per_mib),
            network_delay: self.network_delay.unwrap_or(current.network_delay),
            persist_error_rate: self
                .persist_error_rate
                .unwrap_or(current.persist_error_rate),
            persist_stall_rate: self
                .persist_stall_rate
                .unwrap_or(current.persist_stall_rate),
            persist_timeout: self.persist_timeout.unwrap_or(current.persist_timeout),
        };
        next.validate()?;
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_original_simulator() {
        let c = ServerConfig::default();
        c.validate().unwrap();
        assert_eq!(c.permits, 8);
        assert_eq!(
            c.tunables().persist_latency.to_string(),
            "50ms + normal(10ms, 5ms)"
        );
        assert_eq!(
            c.tunables().network_delay.to_string(),
            "500us + normal(1ms, 100us)"
        );
        assert!(c.listen.ip().is_loopback());
    }

    #[test]
    fn toml_overrides_only_what_it_names() {
        let c: ServerConfig =
            toml::from_str("permits = 64\nnetwork_delay = \"0\"\ndrain_timeout = \"3s\"").unwrap();
        assert_eq!(c.permits, 64);
        assert_eq!(c.tunables().network_delay, Delay::fixed(Duration::ZERO));
        assert_eq!(c.drain_timeout, Duration::from_secs(3));
        assert_eq!(c.tunables().persist_latency, default_persist_latency());
    }

    #[test]
    fn toml_rejects_unknown_keys_and_bad_values() {
        assert!(toml::from_str::<ServerConfig>("permitz = 3").is_err());
        assert!(toml::from_str::<ServerConfig>("persist_latency = \"soon\"").is_err());
        let c: ServerConfig = toml::from_str("persist_error_rate = 1.5").unwrap();
        assert_eq!(
            c.validate(),
            Err(ConfigError::Rate {
                key: "persist_error_rate",
                value: 1.5
            })
        );
    }

    #[test]
    fn a_bad_update_changes_nothing() {
        let current = Tunables::default();
        let update = ConfigUpdate {
            network_delay: Some(Delay::fixed(Duration::ZERO)),
            persist_error_rate: Some(f64::NAN),
            ..ConfigUpdate::default()
        };
        assert!(update.apply_to(current).is_err());
        let update = ConfigUpdate {
            permits: Some(0),
            ..ConfigUpdate::default()
        };
        assert_eq!(update.apply_to(current), Err(ConfigError::Permits(0)));
    }
}
