//! What a bundled script's twin is to `trace`: it is told its [`Options`] at
//! its start, fed each [`Event`] off the tap it asked for (and `/stats` when it
//! reads the kernel's figures), and prints what its `.bt` prints at BEGIN, each
//! second and END. The twins in `scripts/` implement [`Script`]; `mod.rs` runs
//! them and knows none of them by type.

/// One event off the tap.
#[derive(Debug, Clone, Copy)]
pub struct Event<'a> {
    /// ns since the tap began, on the server's steady clock (the tap's: `observe/tap.rs`).
    pub at_ns: u64,
    pub probe: &'a str,
    /// The probe's arguments, arg0 first; unused ones are zero.
    pub args: [u64; 6],
}

/// What a script is told at its start.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// How long it runs (the twins' SECONDS, default 60).
    pub seconds: u64,
    /// retry's TIMEOUT_MS: the clients' --timeout, in ms.
    pub client_timeout_ms: u64,
    /// cpu-usage's INTERVAL: seconds between lines.
    pub interval_s: u64,
}

/// A bundled script, run over the tap.
pub trait Script: Send {
    /// The probes its twin attaches to (none: it reads no tap).
    fn probes(&self) -> &'static [&'static str] {
        &[]
    }
    /// Whether it reads the server's `/stats`: then [`stats`](Self::stats) has a
    /// fresh reading before `begin`, each `second` and `end`. By default, when it
    /// attaches to no probe: a script that did neither would have nothing to read.
    fn reads_stats(&self) -> bool {
        self.probes().is_empty()
    }
    fn stats(&mut self, _now: &simulator_api::Stats) {}
    /// How many times a second it reads `/stats` (a line a second whatever this).
    fn readings_per_second(&self) -> u32 {
        1
    }
    /// What its BEGIN prints.
    fn begin(&mut self, out: &mut String);
    fn on(&mut self, event: &Event<'_>);
    /// The tap dropped `count` events here (its reader fell a ring behind).
    fn lost(&mut self, _count: u64) {}
    /// `interval:s:1`: a second has passed; `clock` is the wall time HH:MM:SS.
    fn second(&mut self, _clock: &str, _out: &mut String) {}
    /// What its END prints; `ran_s`: whole seconds since BEGIN.
    fn end(&mut self, ran_s: u64, out: &mut String);
}
