//! Every setting of the server, declared once.
//!
//! [`with_settings!`] holds the one list: name, type, default, bounds, whether it can
//! change while the server runs, which part of the server it belongs to, and its
//! help text. Everything else is derived from that list by a macro that receives it:
//! here, the [`Settings`] struct (the configuration in force, as `/stats.config`
//! shows it), [`SettingsUpdate`] (a TOML file, a scenario, the flags or a
//! `PUT /admin/config` body: every key optional, unknown keys refused), the
//! validation, the live-change rule and the [`SETTINGS`] table that `--help` and
//! `docs/limits.md` are made from; in the server crate, the `serve` flags. Adding a
//! setting is one entry in the list.
//!
//! The list is `defs.rs`, alone in its file. Beside it: the defaults and limits it
//! names (`limits.rs`), the kinds of value only settings take (`choices.rs`), and
//! what is made of the list (`derived.rs`).

mod choices;
mod defs;
mod derived;
mod limits;

pub use choices::*;
pub use derived::*;
pub use limits::*;
