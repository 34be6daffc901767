//! A run kept: the `.isim` recording. `system-simulator record` writes one
//! (`recording/record.rs`): every event the probe tap gave, with its time and arguments,
//! and the server's `/stats` once a second, which carries its settings, its
//! scenario, its incident and its machine. `trace NAME --from FILE` feeds one to
//! a script's twin (`recording/trace_from.rs`) as if it were live.
//!
//! The file is blocks (`file.rs`): a head (JSON: who recorded what, and the probe
//! table), then blocks of packed events (`events.rs`) and a tick a second (JSON:
//! `/stats`, its `config` only when it changed), then an end. Each block is
//! checked by its CRC-32, so a recording that was cut short (its recorder killed)
//! is read up to its last whole event, and a damaged one up to its damage, and
//! [`Stop`] says which and where.
//!
//! A recording made with `record --profile N` holds the server's CPU profile of
//! N seconds too, as folded stacks in a block of its own; `export` draws it.
//! From format 2 on it holds the server's trail too (`GET /admin/trail`: what
//! its operator looked at and changed), whole, each time it moved: `drill
//! report --from FILE` reads the last, and `replay` marks its steps.
//!
//! Limits: a recording is read whole into memory, about 80 bytes an event once
//! decoded (a minute of the demo's load is a few hundred MB at most); a block is
//! at most 64 MiB. What a read may take is bounded by the file's size
//! ([`MEMORY_PER_FILE_BYTE`] times it, plus [`MEMORY_FLOOR`]): a crafted file
//! of the smallest events, or of ticks that each inherit a large `config`, is
//! read up to that and told as damaged there, not inflated without limit.

pub mod events;
pub mod file;

use std::path::Path;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use simulator_api::events::EVENTS;
use simulator_api::Stats;

use events::Packed;
use file::{Kind, Next, Reader};

/// What reading a recording may take in memory, per byte of the file. A real
/// recording's events pack into 8 bytes or more, 160 bytes each once decoded
/// with room for the list's growth: 20x. Past this, the rest is not read.
pub const MEMORY_PER_FILE_BYTE: usize = 32;
/// What any recording may take whatever its size (a small one's ticks).
pub const MEMORY_FLOOR: usize = 16 << 20;
/// What one item is counted as taking: itself and as much again, for the
/// list's growth.
const ITEM_COST: usize = 2 * std::mem::size_of::<Item>();

/// Events a block holds at most before the recorder writes it (it writes one a
/// second in any case): a reader cut mid-block loses nothing before the cut.
pub const EVENTS_BLOCK: usize = 1 << 20;

/// The head block: what was recorded, by whom, and the probe table the events'
/// codes index (so a build whose probes moved still reads the names).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Head {
    /// `system-simulator 0.1.0`.
    pub recorder: String,
    pub target: String,
    pub began_unix_ms: u64,
    /// The seconds the recording was asked to last; 0 when it lasted as long as
    /// what it was beside (`workshop check --record`, `demo --record`).
    pub seconds: u64,
    /// Code `i` is probe `probes[i]`, with its arguments' names.
    pub probes: Vec<ProbeEntry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProbeEntry {
    pub name: String,
    pub args: Vec<String>,
}

impl Head {
    /// This build's probe table.
    pub fn probe_table() -> Vec<ProbeEntry> {
        EVENTS
            .iter()
            .map(|e| ProbeEntry {
                name: e.probe.to_owned(),
                args: e.args.iter().map(|(name, _)| (*name).to_owned()).collect(),
            })
            .collect()
    }
}

/// A tick block: a second has passed (second 0: the reading before the first).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TickBlock {
    pub second: u64,
    pub unix_ms: u64,
    /// The tap's clock then, as near as the recorder knows it (its last event's).
    pub tap_ns: u64,
    /// `/stats`; its `config` left out when the same as the tick before.
    pub stats: Value,
}

/// The end block: the recording ended in order.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EndBlock {
    /// Whole seconds it ran.
    pub seconds: u64,
    /// `/stats` as read at the end.
    pub stats: Value,
}

/// A profile block: the server's CPU profile (`GET /admin/profile`), taken
/// while it was recorded (`record --profile N`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProfileBlock {
    /// When it was asked for: the recording's start, as the recorder's clock
    /// read it (ms since the Unix epoch). It sampled the `seconds` after.
    pub began_unix_ms: u64,
    pub seconds: u64,
    /// Folded stacks, `thread;outermost;...;innermost COUNT` a line.
    pub folded: String,
}

/// A trail block: the server's trail as the recorder read it at `unix_ms`.
/// Each block holds the whole trail (at most `simulator_api::trail::TRAIL_MAX`
/// steps); the last one is the recording's.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrailBlock {
    pub unix_ms: u64,
    pub trail: simulator_api::trail::Trail,
}

/// What a recording holds, in order.
#[derive(Debug, Clone)]
pub enum Item {
    Event {
        at_ns: u64,
        probe: &'static str,
        args: [u64; 6],
    },
    /// The tap dropped this many events here.
    Lost(u64),
    Tick {
        second: u64,
        unix_ms: u64,
        tap_ns: u64,
        stats: Box<Stats>,
    },
    End {
        seconds: u64,
        stats: Box<Stats>,
    },
}

/// How the reading of a recording ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// Read to its end block.
    Whole,
    /// Its blocks are whole but there is no end block: the recorder stopped
    /// between two writes.
    NoEnd { at_byte: usize },
    /// The file ends inside a block: the recorder stopped mid-write.
    Cut { at_byte: usize },
    /// A block is damaged: what came before it was read.
    Damaged { at_byte: usize, why: String },
}

impl Stop {
    /// Where it stopped, in a sentence, or none for a whole recording.
    pub fn told(&self, last_second: u64) -> Option<String> {
        let at = |b: &usize| format!("byte {b}");
        match self {
            Stop::Whole => None,
            Stop::NoEnd { at_byte } => Some(format!(
                "the recording has no end (its recorder stopped at {}): replayed to its last whole event, {last_second} s in",
                at(at_byte)
            )),
            Stop::Cut { at_byte } => Some(format!(
                "the recording is cut short at {} (its recorder stopped mid-write): replayed to its last whole event, {last_second} s in",
                at(at_byte)
            )),
            Stop::Damaged { at_byte, why } => Some(format!(
                "the recording is damaged at {} ({why}): replayed what came before, {last_second} s in",
                at(at_byte)
            )),
        }
    }
}

/// A recording read.
#[derive(Debug)]
pub struct Recording {
    pub head: Head,
    pub items: Vec<Item>,
    pub stop: Stop,
    /// Events of probes this build does not know, left out.
    pub unknown_events: u64,
    /// The CPU profiles taken while it was recorded.
    pub profiles: Vec<ProfileBlock>,
    /// The server's trail as last recorded (none before format 2, or when
    /// the recorder could not read it).
    pub trail: Option<simulator_api::trail::Trail>,
}

impl Recording {
    /// The last tick's second: how far the recording got.
    pub fn last_second(&self) -> u64 {
        self.items
            .iter()
            .rev()
            .find_map(|item| match item {
                Item::End { seconds, .. } => Some(*seconds),
                Item::Tick { second, .. } => Some(*second),
                _ => None,
            })
            .unwrap_or(0)
    }
}

/// Reads the recording at `path`.
pub fn open(path: &Path) -> anyhow::Result<Recording> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse(&bytes).with_context(|| {
        format!(
            "{} is not a recording this build can replay",
            path.display()
        )
    })
}

/// Reads a recording's bytes: an error only when nothing can be read (not a
/// recording, a newer format, no head); otherwise what could be, and its [`Stop`].
pub fn parse(bytes: &[u8]) -> anyhow::Result<Recording> {
    let mut reader = Reader::new(bytes)?;
    let head: Head = match reader.next_block() {
        Next::Block {
            kind: Kind::Head,
            payload,
        } => serde_json::from_slice(payload).context("its head block does not parse")?,
        other => anyhow::bail!("it does not begin with a head block ({})", describe(&other)),
    };
    let budget = MEMORY_FLOOR.saturating_add(bytes.len().saturating_mul(MEMORY_PER_FILE_BYTE));
    let mut decoder = Decoder::new(&head, budget);
    let stop = loop {
        let at_byte = reader.at();
        match reader.next_block() {
            Next::End => break Stop::NoEnd { at_byte },
            Next::Cut { kind, part } => {
                if kind == Some(Kind::Events) {
                    if let Err(why) = decoder.events(part) {
                        break Stop::Damaged { at_byte, why };
                    }
                }
                break Stop::Cut { at_byte };
            }
            Next::Damaged { why } => break Stop::Damaged { at_byte, why },
            Next::Block { kind, payload } => match decoder.block(kind, payload) {
                Ok(true) => break Stop::Whole,
                Ok(false) => {}
                Err(why) => break Stop::Damaged { at_byte, why },
            },
        }
    };
    Ok(Recording {
        head,
        items: decoder.items,
        stop,
        unknown_events: decoder.unknown,
        profiles: decoder.profiles,
        trail: decoder.trail,
    })
}

fn describe(next: &Next<'_>) -> String {
    match next {
        Next::Block { kind, .. } => format!("a {kind:?} block first"),
        Next::Cut { .. } => "the file is cut inside its first block".into(),
        Next::Damaged { why } => why.clone(),
        Next::End => "the file holds no block".into(),
    }
}

/// Blocks into items: the probe table mapped onto this build's, and each tick's
/// `config` filled in from the last that carried one.
struct Decoder {
    /// Code to this build's probe name and the arity it was recorded with.
    table: Vec<(Option<&'static str>, usize)>,
    config: Option<Value>,
    /// The last `config`'s JSON length: what each tick that inherits it costs.
    config_bytes: usize,
    items: Vec<Item>,
    unknown: u64,
    profiles: Vec<ProfileBlock>,
    trail: Option<simulator_api::trail::Trail>,
    /// Bytes of memory the items may still take ([`MEMORY_PER_FILE_BYTE`]).
    left: usize,
    budget: usize,
}

impl Decoder {
    fn new(head: &Head, budget: usize) -> Self {
        let table = head
            .probes
            .iter()
            .map(|p| {
                let ours = EVENTS.iter().find(|e| e.probe == p.name).map(|e| e.probe);
                (ours, p.args.len())
            })
            .collect();
        Decoder {
            table,
            config: None,
            config_bytes: 0,
            items: Vec::new(),
            unknown: 0,
            profiles: Vec::new(),
            trail: None,
            left: budget,
            budget,
        }
    }

    /// Counts `bytes` against the budget; past it, why the rest is not read.
    fn spend(&mut self, bytes: usize) -> Result<(), String> {
        self.left = self
            .left
            .checked_sub(bytes)
            .ok_or_else(|| self.over_budget())?;
        Ok(())
    }

    fn over_budget(&self) -> String {
        format!(
            "reading further would take more than {} MiB, {MEMORY_PER_FILE_BYTE}x the file's size \
             and {} MiB more: a recording's events and ticks never decode that large",
            self.budget >> 20,
            MEMORY_FLOOR >> 20
        )
    }

    /// What a reading of `/stats` from a block of `payload` bytes costs.
    fn reading_cost(&self, payload: usize) -> usize {
        ITEM_COST + std::mem::size_of::<Stats>() + payload + self.config_bytes
    }

    /// True at the end block.
    fn block(&mut self, kind: Kind, payload: &[u8]) -> Result<bool, String> {
        match kind {
            Kind::Head => Err("a second head block".into()),
            Kind::Events => match self.events(payload)? {
                true => Ok(false),
                false => Err("an events block that does not decode".into()),
            },
            Kind::Tick => {
                self.spend(self.reading_cost(payload.len()))?;
                let tick: TickBlock = serde_json::from_slice(payload)
                    .map_err(|e| format!("a tick block that does not parse: {e}"))?;
                let stats = self.stats(tick.stats)?;
                self.items.push(Item::Tick {
                    second: tick.second,
                    unix_ms: tick.unix_ms,
                    tap_ns: tick.tap_ns,
                    stats,
                });
                Ok(false)
            }
            Kind::End => {
                self.spend(self.reading_cost(payload.len()))?;
                let end: EndBlock = serde_json::from_slice(payload)
                    .map_err(|e| format!("the end block does not parse: {e}"))?;
                let stats = self.stats(end.stats)?;
                self.items.push(Item::End {
                    seconds: end.seconds,
                    stats,
                });
                Ok(true)
            }
            Kind::Profile => {
                self.spend(payload.len())?;
                let profile = serde_json::from_slice(payload)
                    .map_err(|e| format!("a profile block that does not parse: {e}"))?;
                self.profiles.push(profile);
                Ok(false)
            }
            Kind::Trail => {
                // Each block replaces the last: only one is held at a time.
                self.spend(payload.len())?;
                let block: TrailBlock = serde_json::from_slice(payload)
                    .map_err(|e| format!("a trail block that does not parse: {e}"))?;
                self.trail = Some(block.trail);
                Ok(false)
            }
        }
    }

    /// False when the payload stopped inside an event; an error past the budget.
    fn events(&mut self, payload: &[u8]) -> Result<bool, String> {
        let table = &self.table;
        let most = self.left / ITEM_COST;
        let (packed, whole) = events::unpack(
            payload,
            |code| table.get(code as usize).map(|(_, n)| *n),
            most,
        );
        // Stopped at `most` with more to read: the budget, not damage.
        let full = !whole && packed.len() == most;
        self.spend(packed.len() * ITEM_COST)?;
        for p in packed {
            match p {
                Packed::Lost(n) => self.items.push(Item::Lost(n)),
                Packed::Event { at_ns, code, args } => match self.table[code as usize].0 {
                    Some(probe) => self.items.push(Item::Event { at_ns, probe, args }),
                    None => self.unknown += 1,
                },
            }
        }
        match full {
            true => Err(self.over_budget()),
            false => Ok(whole),
        }
    }

    fn stats(&mut self, mut stats: Value) -> Result<Box<Stats>, String> {
        match stats.get("config") {
            Some(config) => {
                self.config_bytes = config.to_string().len();
                self.config = Some(config.clone());
            }
            None => {
                let config = self
                    .config
                    .clone()
                    .ok_or("a tick without settings before any")?;
                stats["config"] = config;
            }
        }
        serde_json::from_value(stats)
            .map_err(|e| format!("a /stats reading that does not parse: {e}"))
    }
}
