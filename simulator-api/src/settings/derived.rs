//! What is made of the list of settings (`defs.rs`): the [`Settings`] struct,
//! [`SettingsUpdate`], their validation, the live-change rule, the
//! [`SETTINGS`] table and `docs/limits.md`'s Markdown.

use serde::{Deserialize, Serialize};

use super::*;
use crate::value::{Bounds, SettingValue};

/// One setting, as the table and the flags describe it.
#[derive(Debug, Clone, Copy)]
pub struct SettingInfo {
    /// The TOML and JSON key; the flag is the same with `-` for `_`.
    pub key: &'static str,
    pub help: &'static str,
    pub value_name: &'static str,
    pub bounds: Bounds,
    /// Changeable through `PUT /admin/config` while the server runs.
    pub live: bool,
    /// Part of the world a ticket takes as given (the store, the network, the
    /// work's cost), not of the service a fix may change.
    pub world: bool,
    pub section: &'static str,
    /// A flag that takes no value.
    pub switch: bool,
    /// The default, as the flag would take it.
    pub default_text: fn() -> String,
    /// The values allowed, in words.
    pub allowed: fn() -> String,
}

impl SettingInfo {
    pub fn flag(&self) -> String {
        self.key.replace('_', "-")
    }

    /// `ISIM_ADMIN_TOKEN` for `admin_token`: where secrets may also come from.
    pub fn env_var(&self) -> String {
        format!("ISIM_{}", self.key.to_ascii_uppercase())
    }
}

/// Why a configuration cannot be used; the message names the key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SettingsError {
    #[error("{key} must be {allowed}, got {value}")]
    OutOfRange {
        key: &'static str,
        allowed: String,
        value: String,
    },
    #[error(
        "{} cannot change while the server runs: restart it with the new value (`serve --{}`)",
        .0.join(", "),
        .0[0].replace('_', "-")
    )]
    NeedsRestart(Vec<&'static str>),
    #[error("durable needs persist_dir: only files can be on disk before the reply")]
    DurableWithoutDir,
    #[error(
        "hedge_after needs the simulated store: two writers of one file could leave a partial one \
         behind"
    )]
    HedgingFiles,
    #[error(
        "part_bytes needs the simulated store: the file store writes each element as one file"
    )]
    PartsFiles,
    #[error("{0}")]
    Other(String),
}

macro_rules! is_world {
    (world) => {
        true
    };
    (service) => {
        false
    };
}

macro_rules! is_live {
    (live) => {
        true
    };
    (restart) => {
        false
    };
}

macro_rules! define_settings {
    ($( $(#[doc = $doc:literal])+ $name:ident : $ty:ty = $default:expr ; $bounds:expr ; $live:ident ; $kind:ident ; $section:literal ; )*) => {
        /// The whole configuration in force. Every field is always present: a file,
        /// a scenario or the flags are [`SettingsUpdate`]s laid over the defaults.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct Settings {
            $( $(#[doc = $doc])+ #[serde(with = "crate::value::field")] pub $name: $ty, )*
        }

        impl Default for Settings {
            /// The original simulator.
            fn default() -> Self {
                Self { $( $name: $default, )* }
            }
        }

        /// Some settings: a TOML file, a scenario's `config`, the flags given, or a
        /// `PUT /admin/config` body. Unknown keys are refused; absent keys keep
        /// their value.
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(default, deny_unknown_fields)]
        pub struct SettingsUpdate {
            $(
                #[serde(with = "crate::value::optional_field", skip_serializing_if = "Option::is_none")]
                pub $name: Option<$ty>,
            )*
        }

        /// Every setting, in declaration order.
        pub static SETTINGS: &[SettingInfo] = &[
            $(
                SettingInfo {
                    key: stringify!($name),
                    help: concat!($($doc),+),
                    value_name: <$ty as SettingValue>::VALUE_NAME,
                    bounds: $bounds,
                    live: is_live!($live),
                    world: is_world!($kind),
                    section: $section,
                    switch: <$ty as SettingValue>::IS_SWITCH,
                    allowed: {
                        fn allowed() -> String {
                            <$ty as SettingValue>::allowed(&$bounds)
                        }
                        allowed
                    },
                    default_text: {
                        fn default_text() -> String {
                            SettingValue::to_text(&Settings::default().$name)
                        }
                        default_text
                    },
                },
            )*
        ];

        impl Settings {
            /// Checks every value against its bounds, then the rules between settings.
            pub fn validate(&self) -> Result<(), SettingsError> {
                $(
                    SettingValue::check(&self.$name, &$bounds).map_err(|allowed| {
                        SettingsError::OutOfRange {
                            key: stringify!($name),
                            allowed,
                            value: SettingValue::to_text(&self.$name),
                        }
                    })?;
                )*
                self.validate_together()
            }

            /// These settings with `update` laid over them (nothing checked here).
            pub fn with(mut self, update: &SettingsUpdate) -> Self {
                $( if let Some(v) = &update.$name { self.$name = v.clone(); } )*
                self
            }

            /// The world settings (see [`with_settings!`]) whose value here differs from
            /// `scenario`'s: (key, scenario's value, this value), as the flag would take them.
            pub fn world_changes(&self, scenario: &Settings) -> Vec<(&'static str, String, String)> {
                let mut moved = Vec::new();
                $(
                    if is_world!($kind) && self.$name != scenario.$name {
                        moved.push((
                            stringify!($name),
                            SettingValue::to_text(&scenario.$name),
                            SettingValue::to_text(&self.$name),
                        ));
                    }
                )*
                moved
            }

            /// Each setting's value as the flag would take it, in declaration order.
            pub fn texts(&self) -> Vec<(&'static str, String)> {
                vec![ $( (stringify!($name), SettingValue::to_text(&self.$name)), )* ]
            }
        }

        impl SettingsUpdate {
            /// The keys this update names.
            pub fn keys(&self) -> Vec<&'static str> {
                let mut keys = Vec::new();
                $( if self.$name.is_some() { keys.push(stringify!($name)); } )*
                keys
            }

            /// The keys that would change a setting that cannot change while running.
            fn restart_keys(&self, current: &Settings) -> Vec<&'static str> {
                let mut keys = Vec::new();
                $(
                    if !is_live!($live) && self.$name.as_ref().is_some_and(|v| *v != current.$name) {
                        keys.push(stringify!($name));
                    }
                )*
                keys
            }

            /// An update setting every live setting to its value in `settings`, so
            /// laying it over any configuration gives `settings`' live part.
            pub fn live_part_of(settings: &Settings) -> Self {
                let mut update = SettingsUpdate::default();
                $( if is_live!($live) { update.$name = Some(settings.$name.clone()); } )*
                update
            }

            /// This update with only the settings `keys` names.
            pub fn only(&self, keys: &[&str]) -> Self {
                let mut update = SettingsUpdate::default();
                $( if keys.contains(&stringify!($name)) { update.$name = self.$name.clone(); } )*
                update
            }

            /// `other`'s keys laid over this update's.
            pub fn and(mut self, other: &SettingsUpdate) -> Self {
                $( if other.$name.is_some() { self.$name = other.$name.clone(); } )*
                self
            }
        }
    };
}

crate::with_settings!(define_settings);

impl Settings {
    fn validate_together(&self) -> Result<(), SettingsError> {
        if self.durable && self.persist_dir.is_none() {
            return Err(SettingsError::DurableWithoutDir);
        }
        if !self.hedge_after.is_zero() && self.persist_dir.is_some() {
            return Err(SettingsError::HedgingFiles);
        }
        if self.part_bytes > 0 && self.persist_dir.is_some() {
            return Err(SettingsError::PartsFiles);
        }
        if self.cpu_period < MIN_CPU_PERIOD {
            return Err(SettingsError::Other(format!(
                "cpu_period {} is under the kernel's least, 1ms",
                crate::value::text_of(self.cpu_period)
            )));
        }
        if !self.cpu_quota.is_zero() && self.cpu_quota < MIN_CPU_PERIOD {
            return Err(SettingsError::Other(format!(
                "cpu_quota {} is under the kernel's least, 1ms (0 = no limit)",
                crate::value::text_of(self.cpu_quota)
            )));
        }
        Ok(())
    }

    /// The settings a live change would install: all of `update` or, on any
    /// invalid value or any setting that needs a restart, an error and nothing.
    pub fn changed_live(&self, update: &SettingsUpdate) -> Result<Settings, SettingsError> {
        let restart = update.restart_keys(self);
        if !restart.is_empty() {
            return Err(SettingsError::NeedsRestart(restart));
        }
        let next = self.clone().with(update);
        next.validate()?;
        Ok(next)
    }

    /// The admin token, when one is set.
    pub fn admin_token(&self) -> Option<&str> {
        self.admin_token.expose()
    }

    /// The largest synthetic element (`{"size": N}`) accepted. Simulated, it
    /// costs no more than its number: `max_element_bytes` (1 GiB). Written as a
    /// file of N bytes under `persist_dir`, a few bytes sent would write that
    /// many to disk, so there it is held to what a raw body may be as well
    /// (`max_body_bytes`, 16 MiB): what is stored is never more than could be
    /// sent. The setting that bounds it comes second, for the refusal.
    pub fn element_limit(&self) -> (u64, &'static str) {
        match self.persist_dir {
            Some(_) if self.max_body_bytes < self.max_element_bytes => (
                self.max_body_bytes,
                "max_body_bytes, as persist_dir writes each element whole",
            ),
            _ => (self.max_element_bytes, "max_element_bytes"),
        }
    }

    /// The store the settings select: `files` with `persist_dir`, else `simulated`.
    pub fn store_name(&self) -> &'static str {
        if self.persist_dir.is_some() {
            "files"
        } else {
            "simulated"
        }
    }
}

impl SettingsUpdate {
    pub fn is_empty(&self) -> bool {
        self.keys().is_empty()
    }
}

/// Looks a setting up by key.
pub fn info(key: &str) -> Option<&'static SettingInfo> {
    SETTINGS.iter().find(|s| s.key == key)
}

/// The settings tables of `docs/limits.md`: one per part of the server, a row per
/// setting. `system-simulator settings --markdown` prints them.
pub fn markdown_table() -> String {
    let mut sections: Vec<&str> = Vec::new();
    for s in SETTINGS {
        if !sections.contains(&s.section) {
            sections.push(s.section);
        }
    }
    let mut out = String::new();
    for section in sections {
        out.push_str(&format!(
            "\n### {section}\n\n\
             | setting (TOML / JSON key) | flag | default | allowed | live | world or service | what it does |\n\
             | --- | --- | --- | --- | --- | --- | --- |\n"
        ));
        for s in SETTINGS.iter().filter(|s| s.section == section) {
            let default = (s.default_text)();
            let default = if default.is_empty() {
                "unset".to_owned()
            } else {
                format!("`{default}`")
            };
            let flag = if s.switch {
                format!("`--{}`", s.flag())
            } else {
                format!("`--{} {}`", s.flag(), s.value_name)
            };
            out.push_str(&format!(
                "| `{}` | {flag} | {default} | {} | {} | {} | {} |\n",
                s.key,
                (s.allowed)(),
                if s.live { "yes" } else { "restart" },
                if s.world { "world" } else { "service" },
                s.help.trim().replace('|', "\\|"),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::time::Duration;

    use super::*;
    use crate::delay::Delay;

    #[test]
    fn defaults_are_the_original_simulator_and_valid() {
        let s = Settings::default();
        s.validate().unwrap();
        assert_eq!(s.permits, 8);
        assert_eq!(s.persist_latency.to_string(), "50ms + normal(10ms, 5ms)");
        assert_eq!(s.network_delay.to_string(), "500us + normal(1ms, 100us)");
        assert!(s.listen.ip().is_loopback());
    }

    #[test]
    fn the_admin_listener_follows_the_data_port_on_loopback() {
        let at = |s: &str| s.parse::<SocketAddr>().unwrap();
        let auto = AdminListen::Auto;
        assert_eq!(auto.address(at("0.0.0.0:7878")), Some(at("127.0.0.1:7879")));
        assert_eq!(auto.address(at("127.0.0.1:0")), Some(at("127.0.0.1:0")));
        assert_eq!(auto.address(at("127.0.0.1:65535")), Some(at("127.0.0.1:0")));
        assert_eq!(AdminListen::Off.address(at("127.0.0.1:1")), None);
        for text in ["auto", "off", "127.0.0.2:9000"] {
            assert_eq!(AdminListen::parse_text(text).unwrap().to_text(), text);
        }
        assert!(AdminListen::parse_text("sometimes").is_err());
    }

    #[test]
    fn every_setting_is_in_the_table_once() {
        let table = markdown_table();
        for s in SETTINGS {
            assert_eq!(
                table.matches(&format!("| `{}` |", s.key)).count(),
                1,
                "{}",
                s.key
            );
        }
        assert_eq!(SETTINGS.len(), Settings::default().texts().len());
    }

    #[test]
    fn toml_overrides_only_what_it_names_and_refuses_unknown_keys() {
        let update: SettingsUpdate = toml::from_str(
            "permits = 64\nnetwork_delay = \"0\"\ndrain_timeout = \"3s\"\nmax_body_bytes = \"64k\"",
        )
        .unwrap();
        let s = Settings::default().with(&update);
        assert_eq!(s.permits, 64);
        assert_eq!(s.network_delay, Delay::fixed(Duration::ZERO));
        assert_eq!(s.drain_timeout, Duration::from_secs(3));
        assert_eq!(s.max_body_bytes, 64 << 10);
        assert_eq!(s.persist_latency, default_persist_latency());
        assert!(toml::from_str::<SettingsUpdate>("permitz = 3").is_err());
        assert!(toml::from_str::<SettingsUpdate>("persist_latency = \"soon\"").is_err());
        assert!(toml::from_str::<SettingsUpdate>("persistence = \"magic\"").is_err());
    }

    #[test]
    fn a_bad_or_restart_only_live_change_changes_nothing() {
        let current = Settings::default();
        let bad = SettingsUpdate {
            network_delay: Some(Delay::fixed(Duration::ZERO)),
            persist_error_rate: Some(f64::NAN),
            ..SettingsUpdate::default()
        };
        let err = current.changed_live(&bad).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("persist_error_rate must be between 0 and 1"),
            "{err}"
        );
        let zero = SettingsUpdate {
            permits: Some(0),
            ..SettingsUpdate::default()
        };
        assert!(current
            .changed_live(&zero)
            .unwrap_err()
            .to_string()
            .contains("permits must be between 1"));
        let listen = SettingsUpdate {
            listen: Some("127.0.0.1:1".parse().unwrap()),
            permits: Some(9),
            ..SettingsUpdate::default()
        };
        assert_eq!(
            current.changed_live(&listen),
            Err(SettingsError::NeedsRestart(vec!["listen"]))
        );
        let same_listen = SettingsUpdate {
            listen: Some(current.listen),
            permits: Some(9),
            ..SettingsUpdate::default()
        };
        assert_eq!(current.changed_live(&same_listen).unwrap().permits, 9);
    }

    #[test]
    fn settings_round_trip_through_json_but_the_token_never_shows() {
        let s = Settings {
            admin_token: crate::value::Secret::new(Some("hunter2".into())),
            ..Settings::default()
        };
        let json = serde_json::to_string(&s).unwrap();
        assert!(!json.contains("hunter2"), "{json}");
        let back: Settings = serde_json::from_str(&json).unwrap();
        assert_eq!(back.permits, s.permits);
        // A field missing from /stats is an error, not a silent default.
        let mut value: serde_json::Value = serde_json::to_value(&s).unwrap();
        value.as_object_mut().unwrap().remove("permits");
        assert!(serde_json::from_value::<Settings>(value).is_err());
    }
}

#[cfg(test)]
mod element_limit_tests {
    use super::*;

    #[test]
    fn an_element_written_to_disk_is_no_larger_than_a_body_could_be() {
        let simulated = Settings::default();
        assert_eq!(simulated.element_limit().0, 1 << 30);
        let on_disk = Settings {
            persist_dir: Some("/tmp/elements".into()),
            ..Settings::default()
        };
        let (limit, by) = on_disk.element_limit();
        assert_eq!(limit, 16 << 20);
        assert!(by.starts_with("max_body_bytes"), "{by}");
    }
}
