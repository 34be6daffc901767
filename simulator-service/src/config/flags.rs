//! The `serve` flags: one per setting, made from the declaration in
//! `simulator-api`, so a setting's flag, help text, default and parser cannot
//! drift from its TOML key, its `/stats` entry or its row in `docs/limits.md`.
//!
//! clap's derive cannot loop over a list, so [`SettingFlags`] implements clap's
//! `Args` by hand, with the builder, from the list.

use clap::{Arg, ArgMatches, Args, Command, FromArgMatches};
use simulator_api::settings::{info, SettingsUpdate};
use simulator_api::value::SettingValue;

/// The settings given as flags: an update laid over the scenario and the file.
#[derive(Debug, Clone, Default)]
pub struct SettingFlags(pub SettingsUpdate);

/// The flag of setting `key`, holding a `T`.
fn flag<T: SettingValue>(key: &'static str) -> Arg {
    // Only the macro below calls this, with keys from the same list.
    let Some(setting) = info(key) else {
        unreachable!("setting {key} is not declared")
    };
    let default = (setting.default_text)();
    let mut help = setting.help.trim().to_owned();
    if !default.is_empty() {
        help.push_str(&format!(" [default: {default}]"));
    }
    if !setting.live {
        help.push_str(" (restart to change)");
    }
    let mut arg = Arg::new(key)
        .long(setting.flag())
        .value_name(setting.value_name)
        .help(help)
        .value_parser(|text: &str| T::parse_text(text));
    if T::IS_SWITCH {
        arg = arg.num_args(0..=1).default_missing_value("true");
    }
    if T::FROM_ENV {
        arg = arg.env(setting.env_var()).hide_env_values(true);
    }
    arg
}

macro_rules! setting_flags {
    ($( $(#[doc = $doc:literal])+ $name:ident : $ty:ty = $default:expr ; $bounds:expr ; $live:ident ; $kind:ident ; $section:literal ; )*) => {
        impl FromArgMatches for SettingFlags {
            fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
                Ok(Self(SettingsUpdate {
                    $( $name: matches.get_one::<$ty>(stringify!($name)).cloned(), )*
                }))
            }

            fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
                let given = Self::from_arg_matches(matches)?;
                self.0 = std::mem::take(&mut self.0).and(&given.0);
                Ok(())
            }
        }

        impl Args for SettingFlags {
            fn augment_args(command: Command) -> Command {
                command $( .arg(flag::<$ty>(stringify!($name))) )*
            }

            fn augment_args_for_update(command: Command) -> Command {
                Self::augment_args(command)
            }
        }
    };
}

simulator_api::with_settings!(setting_flags);
