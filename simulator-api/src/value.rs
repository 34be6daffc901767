//! The kinds of value a setting can hold, and what each one means as text, as JSON
//! or TOML, and within which bounds.
//!
//! Every setting's type implements [`SettingValue`], so one declaration per setting
//! (`settings/defs.rs`) is enough to parse its flag, read its TOML key, check it, print
//! its default and write it into `/stats`: a duration is always `10s` in every one
//! of those places, a size `16MiB`, a delay `50ms + normal(10ms, 5ms)`.
//! Written by hand rather than with a config crate because the same definition
//! must also drive clap's flags, the live `PUT /admin/config` check and the
//! generated docs table, which no crate does in one piece.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::de::{self, Deserialize, Deserializer};
use serde::{Serialize, Serializer};

use crate::delay::Delay;

/// What a setting's value may be, beyond its type. Checked on every start and every
/// live change, and printed in the settings table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bounds {
    /// Anything the type can parse.
    Any,
    /// A whole number in `min..=max`.
    Count { min: u64, max: u64 },
    /// A share, `0..=1`.
    Share,
    /// A duration at most `max`, and more than zero unless `zero` allows it.
    Span { zero: bool, max: Duration },
}

impl Bounds {
    /// The allowed values, in words, e.g. `1 to 1048576`, `0 to 1`, `more than 0, at most 1h`.
    pub fn describe(&self) -> String {
        match self {
            Bounds::Any => String::new(),
            Bounds::Count { min, max: u64::MAX } => format!("at least {min}"),
            Bounds::Count { min, max } => format!("{min} to {max}"),
            Bounds::Share => "0 to 1".into(),
            Bounds::Span { zero: true, max } => format!("at most {}", text_of(*max)),
            Bounds::Span { zero: false, max } => {
                format!("more than 0, at most {}", text_of(*max))
            }
        }
    }
}

/// A setting's type: how it reads and prints as text (flags, docs), how it is
/// written in JSON and TOML, and how it is checked against its [`Bounds`].
pub trait SettingValue: Clone + PartialEq + std::fmt::Debug + Send + Sync + 'static {
    /// The placeholder in `--help`, e.g. `DURATION`.
    const VALUE_NAME: &'static str;
    /// A flag that needs no value (`--durable` means `--durable true`).
    const IS_SWITCH: bool = false;
    /// Read from an environment variable as well as from the flag (secrets only).
    const FROM_ENV: bool = false;

    fn parse_text(text: &str) -> Result<Self, String>;
    fn to_text(&self) -> String;
    /// `Err(allowed values in words)` when the value is outside `bounds`.
    fn check(&self, bounds: &Bounds) -> Result<(), String> {
        let _ = bounds;
        Ok(())
    }
    /// The values allowed, in words, for the settings table.
    fn allowed(bounds: &Bounds) -> String {
        bounds.describe()
    }
    fn write<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error>;
    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error>;
}

/// A duration as every setting prints it: `10s`, `1m 30s`, `500us`.
pub fn text_of(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// Parses `10s`, `500us`, `1m 30s`, and a bare `0`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    humantime::parse_duration(text)
        .map_err(|e| format!("`{text}` is not a duration ({e}): write e.g. 500us, 60ms or 10s"))
}

/// Parses `4096`, `64k`, `64KiB`, `16M`, `16MiB`, `1G`, `1GiB` (powers of 1024).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let number: u64 = digits
        .parse()
        .map_err(|_| format!("`{text}` is not a size: write e.g. 4096, 64k or 16MiB"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        other => {
            return Err(format!(
                "unknown size unit `{other}`: use k, M or G (powers of 1024)"
            ))
        }
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("`{text}` is too large"))
}

/// A size in its largest exact binary unit: `16MiB`, `1GiB`, `1000`.
pub fn size_text(bytes: u64) -> String {
    for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes != 0 && bytes.is_multiple_of(1 << shift) {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    bytes.to_string()
}

fn check_count(value: u64, bounds: &Bounds) -> Result<(), String> {
    match bounds {
        Bounds::Count { min, max } if value < *min || value > *max => {
            Err(format!("between {min} and {max}"))
        }
        _ => Ok(()),
    }
}

/// Reads a value written either natively (a TOML or JSON number) or as text.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum NumberOrText {
    Number(u64),
    Text(String),
}

/// Counts: connections, permits, workers. Plain whole numbers.
impl SettingValue for usize {
    const VALUE_NAME: &'static str = "N";
    fn parse_text(text: &str) -> Result<Self, String> {
        text.trim()
            .parse()
            .map_err(|_| format!("`{text}` is not a whole number"))
    }
    fn to_text(&self) -> String {
        self.to_string()
    }
    fn check(&self, bounds: &Bounds) -> Result<(), String> {
        check_count(*self as u64, bounds)
    }
    fn write<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.serialize(s)
    }
    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        usize::deserialize(d)
    }
}

/// Sizes in bytes: a number, or text with a binary unit (`16MiB`).
impl SettingValue for u64 {
    const VALUE_NAME: &'static str = "SIZE";
    fn parse_text(text: &str) -> Result<Self, String> {
        parse_size(text)
    }
    fn to_text(&self) -> String {
        size_text(*self)
    }
    fn check(&self, bounds: &Bounds) -> Result<(), String> {
        check_count(*self, bounds)
    }
    fn write<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.serialize(s)
    }
    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match NumberOrText::deserialize(d)? {
            NumberOrText::Number(n) => Ok(n),
            NumberOrText::Text(t) => parse_size(&t).map_err(de::Error::custom),
        }
    }
}

/// Shares and rates, `0.05`.
impl SettingValue for f64 {
    const VALUE_NAME: &'static str = "P";
    fn parse_text(text: &str) -> Result<Self, String> {
        text.trim()
            .parse()
            .map_err(|_| format!("`{text}` is not a number"))
    }
    fn to_text(&self) -> String {
        self.to_string()
    }
    fn check(&self, bounds: &Bounds) -> Result<(), String> {
        match bounds {
            // NaN fails `contains` too.
            Bounds::Share if !(0.0..=1.0).contains(self) => Err("between 0 and 1".into()),
            _ => Ok(()),
        }
    }
    fn write<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.serialize(s)
    }
    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        f64::deserialize(d)
    }
}

impl SettingValue for bool {
    const VALUE_NAME: &'static str = "BOOL";
    const IS_SWITCH: bool = true;
    fn parse_text(text: &str) -> Result<Self, String> {
        match text.trim() {
            "true" | "yes" | "on" | "1" => Ok(true),
            "false" | "no" | "off" | "0" => Ok(false),
            other => Err(format!("`{other}` is neither true nor false")),
        }
    }
    fn to_text(&self) -> String {
        self.to_string()
    }
    fn allowed(_: &Bounds) -> String {
        "true, false".into()
    }
    fn write<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.serialize(s)
    }
    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        bool::deserialize(d)
    }
}

/// Durations, as text everywhere: `"10s"` in TOML and JSON too.
impl SettingValue for Duration {
    const VALUE_NAME: &'static str = "DURATION";
    fn parse_text(text: &str) -> Result<Self, String> {
        parse_duration(text)
    }
    fn to_text(&self) -> String {
        text_of(*self)
    }
    fn check(&self, bounds: &Bounds) -> Result<(), String> {
        match bounds {
            Bounds::Span { zero, max } if (!zero && self.is_zero()) || self > max => {
                Err(bounds.describe())
            }
            _ => Ok(()),
        }
    }
    fn write<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_text())
    }
    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        parse_duration(&String::deserialize(d)?).map_err(de::Error::custom)
    }
}

/// Latency distributions: `50ms + normal(10ms, 5ms)`; each term at most 1 h.
impl SettingValue for Delay {
    const VALUE_NAME: &'static str = "DELAY";
    fn parse_text(text: &str) -> Result<Self, String> {
        text.parse()
            .map_err(|e: crate::delay::DelayError| e.to_string())
    }
    fn to_text(&self) -> String {
        self.to_string()
    }
    fn allowed(_: &Bounds) -> String {
        "a base plus at most one of normal(MEAN, SD), exp(MEAN), uniform(LOW, HIGH); each term, and the fixed ones together, at most 1h".into()
    }
    fn write<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_text())
    }
    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::parse_text(&String::deserialize(d)?).map_err(de::Error::custom)
    }
}

impl SettingValue for SocketAddr {
    const VALUE_NAME: &'static str = "ADDR";
    fn parse_text(text: &str) -> Result<Self, String> {
        text.trim()
            .parse()
            .map_err(|_| format!("`{text}` is not an address: write e.g. 127.0.0.1:7878"))
    }
    fn to_text(&self) -> String {
        self.to_string()
    }
    fn allowed(_: &Bounds) -> String {
        "IP:PORT".into()
    }
    fn write<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.serialize(s)
    }
    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::parse_text(&String::deserialize(d)?).map_err(de::Error::custom)
    }
}

/// An optional directory: unset by default.
impl SettingValue for Option<PathBuf> {
    const VALUE_NAME: &'static str = "DIR";
    fn parse_text(text: &str) -> Result<Self, String> {
        if text.is_empty() {
            return Err("an empty path: leave the setting out instead".into());
        }
        Ok(Some(PathBuf::from(text)))
    }
    fn to_text(&self) -> String {
        self.as_ref()
            .map_or_else(String::new, |p| p.display().to_string())
    }
    fn allowed(_: &Bounds) -> String {
        "a directory (created if missing)".into()
    }
    fn write<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.serialize(s)
    }
    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Option::<PathBuf>::deserialize(d)
    }
}

/// A secret (the admin token): read from the flag, the file or `ISIM_<KEY>`, never
/// printed: `/stats` and `Debug` show only whether it is set.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(Option<String>);

impl Secret {
    pub fn new(value: Option<String>) -> Self {
        Self(value)
    }

    pub fn expose(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Secret(set)"
        } else {
            "Secret(unset)"
        })
    }
}

/// What `/stats` shows for a secret that is set.
pub const SECRET_SET: &str = "(set)";

impl SettingValue for Secret {
    const VALUE_NAME: &'static str = "TOKEN";
    const FROM_ENV: bool = true;
    fn parse_text(text: &str) -> Result<Self, String> {
        if text.is_empty() {
            return Err("must not be empty".into());
        }
        Ok(Secret(Some(text.to_owned())))
    }
    fn to_text(&self) -> String {
        self.0
            .as_ref()
            .map_or_else(String::new, |_| SECRET_SET.into())
    }
    fn allowed(_: &Bounds) -> String {
        "any text but empty".into()
    }
    fn check(&self, _: &Bounds) -> Result<(), String> {
        match self.0.as_deref() {
            Some("") => Err("not empty".into()),
            _ => Ok(()),
        }
    }
    fn write<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.as_ref().map(|_| SECRET_SET).serialize(s)
    }
    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Option::<String>::deserialize(d).map(Secret)
    }
}

/// `#[serde(with = "...")]` for a setting's field: its [`SettingValue`] decides.
pub mod field {
    use super::SettingValue;
    use serde::{Deserializer, Serializer};

    pub fn serialize<T: SettingValue, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
        value.write(s)
    }

    pub fn deserialize<'de, T: SettingValue, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
        T::read(d)
    }
}

/// The same for an optional field of an update: absent is `None`.
pub mod optional_field {
    use super::SettingValue;
    use serde::{Deserializer, Serializer};

    pub fn serialize<T: SettingValue, S: Serializer>(
        value: &Option<T>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(v) => v.write(s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, T: SettingValue, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        T::read(d).map(Some)
    }
}

/// Declares a setting whose value is one of a few names (`admission = "semaphore"`):
/// the enum, its text, and its JSON/TOML form, from one list of variants.
#[macro_export]
macro_rules! choice {
    ($(#[$meta:meta])* $name:ident { $( $(#[doc = $doc:literal])* $variant:ident = $text:literal ),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name { $( $(#[doc = $doc])* $variant ),+ }

        impl $name {
            /// Every variant's name, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($text),+];

            pub fn name(self) -> &'static str {
                match self { $( $name::$variant => $text ),+ }
            }
        }

        impl $crate::value::SettingValue for $name {
            const VALUE_NAME: &'static str = "NAME";
            fn parse_text(text: &str) -> Result<Self, String> {
                match text.trim() {
                    $( $text => Ok($name::$variant), )+
                    other => Err(format!("`{other}` is not one of {}", Self::NAMES.join(", "))),
                }
            }
            fn to_text(&self) -> String {
                self.name().to_owned()
            }
            fn allowed(_: &$crate::value::Bounds) -> String {
                Self::NAMES.join(", ")
            }
            fn write<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
            fn read<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = <String as serde::Deserialize>::deserialize(d)?;
                Self::parse_text(&text).map_err(serde::de::Error::custom)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units_and_print_back() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("16MiB"), Ok(16 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("5 parsecs").is_err());
        assert!(parse_size("99999999999999999999G").is_err());
        for n in [0, 1000, 4096, 16 << 20, 1 << 30, (1 << 20) + 1] {
            assert_eq!(parse_size(&size_text(n)), Ok(n), "{n}");
        }
    }

    #[test]
    fn bounds_refuse_what_is_outside_and_say_what_is_inside() {
        let count = Bounds::Count { min: 1, max: 10 };
        assert!(0usize.check(&count).is_err());
        assert!(10usize.check(&count).is_ok());
        assert!(f64::NAN.check(&Bounds::Share).is_err());
        let span = Bounds::Span {
            zero: false,
            max: Duration::from_secs(3600),
        };
        assert_eq!(
            Duration::ZERO.check(&span),
            Err("more than 0, at most 1h".into())
        );
        assert!(Duration::from_secs(3601).check(&span).is_err());
        assert_eq!(crate::delay::MAX_TERM, Duration::from_secs(3600));
    }

    #[test]
    fn secrets_never_print() {
        let s = Secret::parse_text("hunter2").unwrap();
        assert_eq!(s.to_text(), SECRET_SET);
        assert!(!format!("{s:?}").contains("hunter2"));
        assert_eq!(
            serde_json::to_string(&SerdeProbe(s)).unwrap(),
            format!("\"{SECRET_SET}\"")
        );
    }

    struct SerdeProbe(Secret);
    impl Serialize for SerdeProbe {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            self.0.write(s)
        }
    }
}
