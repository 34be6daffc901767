//! `system-simulator trace NAME`: a bundled script's answer without root and
//! without a tracer. It subscribes to the server's probe tap (`GET /admin/tap`,
//! only the probes the script attaches to), runs the script's aggregation on the
//! events as they arrive (`scripts/`, one module a script), prints a line a second
//! where the script does, and after `--seconds` or at Ctrl-C the script's summary,
//! in bpftrace's layout (`report.rs`).
//!
//! The kernel-side scripts run here too: what they reconstruct from the
//! scheduler's and the network's events the kernel also counts, and the server
//! reports it in `/stats` (its CPU time, its cgroup's `cpu.stat`, its listener's
//! queue and drops, its namespace's `nstat` counters, and its own replies'
//! writes), read each second (listener: ten times) beside the tap.

mod report;
pub mod script;
pub mod scripts;

use std::io::Write as _;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use simulator_api::events::EVENTS;
use simulator_api::max_duration;

use script::{Event, Options, Script};

pub use report::hist_rows;

/// profile.bt's and profile.d's name: its twin is the server's own sampler, whose
/// folded stacks `trace profile` prints, as `scripts/trace profile` prints the
/// tracers' folded.
pub const PROFILE: &str = "profile";
/// offcpu.bt's and offcpu.d's name: its twin is the server's own reading of
/// where its threads are (`GET /admin/threads`), folded the same way.
pub const OFFCPU: &str = "offcpu";

/// Where `trace NAME` takes its report from, in a few words.
pub fn source_of(name: &str) -> &'static str {
    match name {
        "cpu-usage" => "the process's CPU time in /stats",
        "cgroup-cpu" => "the tap and the cgroup's cpu.stat in /stats",
        "listener" => "the listener's queue and drops and nstat's counters in /stats",
        "delayed-ack" => "the server's writes and nstat's counters in /stats",
        "runqlat" => "the threads' schedstat sums in /stats",
        "errors" => "the tap and the descriptors' count in /stats",
        "memory" => "the resident memory in /stats",
        PROFILE => "the server's own CPU sampler (GET /admin/profile)",
        OFFCPU => "the server's own reading of its threads' states (GET /admin/threads)",
        _ => "the tap",
    }
}

/// What `trace` takes.
#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    /// The script: count, request-lifetime, persist-time, permit-wait, in-flight,
    /// queue, runtime, size or retry (the ones built on the isim probes), or
    /// locks, cpu-usage, cpu-quota, accept-queue, delayed-ack or runqlat (the kernel's counts of
    /// the server, from /stats), errors (failed accepts off the tap, beside the
    /// descriptors' count in /stats), profile (the server's CPU profile, as folded
    /// stacks: `system-simulator profile` draws it) or offcpu (where its threads
    /// are by the wall clock, the same way: `profile --threads`).
    pub name: String,
    /// The server: its data port or its operator port (both serve the tap).
    #[arg(long, default_value = "http://127.0.0.1:7878")]
    pub target: String,
    /// How long the script runs, in seconds, as the twins' SECONDS (0: 60).
    /// SIMULATOR_MAX_DURATION cuts it.
    #[arg(long, default_value_t = 60)]
    pub seconds: u64,
    /// retry: the clients' --timeout in milliseconds.
    #[arg(long, default_value_t = 1000)]
    pub client_timeout: u64,
    /// cpu-usage: seconds between lines (0: 12, as the script's default).
    #[arg(long, default_value_t = 12)]
    pub interval: u64,
    /// The server's admin token, when it was started with one.
    #[arg(long, env = "ISIM_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// Replay a recording (`system-simulator record`) into the script instead:
    /// the events and /stats readings as recorded, as fast as they read.
    #[arg(long, value_name = "FILE.isim", conflicts_with = "target")]
    pub from: Option<std::path::PathBuf>,
}

pub async fn run(args: TraceArgs) -> anyhow::Result<()> {
    let wanted = Duration::from_secs(if args.seconds == 0 { 60 } else { args.seconds });
    let cap = max_duration::from_env()?;
    let seconds = max_duration::cut_and_say("trace", "--seconds", wanted, cap)
        .as_secs()
        .max(1);
    if args.name == PROFILE || args.name == OFFCPU {
        return profile_twin(args, seconds).await;
    }
    let options = options_of(&args, seconds);
    let mut script = script_named(&args.name, options)?;
    let live = Live {
        target: &args.target,
        admin_token: args.admin_token.as_deref(),
        stop: None,
        quiet: false,
        gather_ms: None,
    };
    let name = &args.name;
    live.run(script.as_mut(), seconds, |source| {
        format!(
            "trace: {name} {source} of {} (what the server itself reports; no tracer, no root)",
            args.target
        )
    })
    .await
}

/// What a script is told, from `trace`'s flags (the seconds decided apart).
pub(crate) fn options_of(args: &TraceArgs, seconds: u64) -> Options {
    Options {
        seconds,
        client_timeout_ms: if args.client_timeout == 0 {
            1000
        } else {
            args.client_timeout
        },
        interval_s: if args.interval == 0 {
            12
        } else {
            args.interval
        },
    }
}

/// A server whose tap and `/stats` a script runs over, live.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Live<'a> {
    pub target: &'a str,
    pub admin_token: Option<&'a str>,
    /// Ends the run as Ctrl-C does (a recording beside a check).
    pub stop: Option<&'a tokio_util::sync::CancellationToken>,
    /// Prints nothing of the script's, nor the announcement.
    pub quiet: bool,
    /// How long the tap gathers a batch (`gather_ms`); the server's 1 ms when none.
    pub gather_ms: Option<u64>,
}

impl Live<'_> {
    /// Runs `script` over the tap for `seconds` (or until Ctrl-C or the server
    /// stops): its BEGIN, a line a second, its END. `announce` makes the line said
    /// on stderr once subscribed, from where the figures come from.
    pub(crate) async fn run(
        self,
        script: &mut dyn Script,
        seconds: u64,
        announce: impl FnOnce(&str) -> String,
    ) -> anyhow::Result<()> {
        let mut stats = StatsReader::new(self.target, script.reads_stats());
        stats
            .read(script)
            .await
            .context("cannot read the server's /stats")?;
        let mut body = self.subscribe(script.probes()).await?;
        let source = match (body.is_some(), script.reads_stats()) {
            (true, false) => "over the probe tap",
            (true, true) => "over the probe tap and the kernel's counts in /stats",
            _ => "from the server's and the kernel's counts in /stats",
        };
        if !self.quiet {
            eprintln!("{}", announce(source));
        }
        let print = |out: &mut String| {
            if self.quiet {
                out.clear();
            } else {
                emit(out);
            }
        };
        let began = tokio::time::Instant::now();
        let mut out = String::new();
        script.begin(&mut out);
        print(&mut out);
        let mut lines = Lines::default();
        let follow = Follow {
            stop: self.stop,
            print: &print,
            seconds,
        };
        let ended_by_server = follow
            .run(body.as_mut(), script, &mut stats, &mut lines)
            .await;
        if let (false, Some(body)) = (ended_by_server, body.as_mut()) {
            self.finish(body, script, &mut lines).await;
        }
        // Errors here were said once already; the summary covers the readings before.
        let _ = stats.read(script).await;
        script.end(began.elapsed().as_secs(), &mut out);
        print(&mut out);
        if ended_by_server {
            eprintln!(
                "trace: the server ended the tap (it stopped); the summary covers what came before"
            );
        }
        if lines.lost > 0 {
            eprintln!(
                "trace: the server dropped {} events while this reader was behind; the figures above miss them",
                lines.lost
            );
        }
        Ok(())
    }

    /// The tap's stream of the script's probes; none for a script that reads no probe.
    async fn subscribe(&self, probes: &'static [&'static str]) -> anyhow::Result<Option<Incoming>> {
        if probes.is_empty() {
            return Ok(None);
        }
        let body = simulator_api::client::tap_gathered(
            self.target,
            probes,
            self.gather_ms,
            self.admin_token,
        )
        .await
        .context("cannot subscribe to the server's probe tap")?;
        Ok(Some(body))
    }

    /// Asks the server to end the stream after every event that fired until now and
    /// reads it to its end, so nothing still in transit is missed (bounded: 10 s).
    async fn finish(&self, body: &mut Incoming, script: &mut dyn Script, lines: &mut Lines) {
        let Some(id) = lines.subscription else { return };
        if let Err(e) = simulator_api::client::end_tap(self.target, id, self.admin_token).await {
            eprintln!(
                "trace: could not end the tap in order ({e}); the last moment's events may be missing"
            );
            return;
        }
        let drain = async {
            while let Some(Ok(frame)) = body.frame().await {
                if let Ok(data) = frame.into_data() {
                    lines.feed(&data, script);
                }
            }
        };
        if tokio::time::timeout(Duration::from_secs(10), drain)
            .await
            .is_err()
        {
            eprintln!("trace: the tap did not end within 10 s of asking; the last moment's events may be missing");
        }
    }
}

/// The script `trace NAME` runs, or why there is none.
/// profile.bt's twin: the server's own sampler, its stacks folded on stdout;
/// offcpu.bt's: the server's own reading of where its threads are
/// (`profile::threads`), which names the kernel function a thread sleeps in
/// and whether an async worker was inside a task, not the user stack.
async fn profile_twin(args: TraceArgs, seconds: u64) -> anyhow::Result<()> {
    let threads = args.name == OFFCPU;
    match threads {
        false => eprintln!(
            "trace: profile from the server's own sampler at {} (no tracer, no root)",
            args.target
        ),
        true => eprintln!(
            "trace: offcpu without a tracer: where {}'s threads are by the wall clock, from the kernel's state of each (no root; it names where a thread sleeps, not the code that asked: `trace locks` counts the index's waits)",
            args.target
        ),
    }
    crate::profile::run(crate::profile::ProfileArgs {
        target: args.target,
        seconds: seconds.min(simulator_service::profile::MAX_SECONDS),
        out: "-".into(),
        format: "folded".into(),
        admin_token: args.admin_token,
        stacks: None,
        pid: None,
        off_cpu: false,
        threads,
        heap: false,
        diff_base: None,
        grey_under: 5.0,
    })
    .await
}

pub(crate) fn script_named(name: &str, options: Options) -> anyhow::Result<Box<dyn Script>> {
    scripts::by_name(name, options).with_context(|| {
        format!(
            "no script {name:?} runs without a tracer; these do: {}",
            scripts::names().collect::<Vec<_>>().join(", ")
        )
    })
}

/// `/stats` for a script that reads it, each second; a reading that fails after
/// the first is said once on stderr and the script keeps its last.
struct StatsReader<'a> {
    target: &'a str,
    wanted: bool,
    warned: bool,
}

impl<'a> StatsReader<'a> {
    fn new(target: &'a str, wanted: bool) -> Self {
        StatsReader {
            target,
            wanted,
            warned: false,
        }
    }

    async fn read(&mut self, script: &mut dyn Script) -> anyhow::Result<()> {
        if !self.wanted {
            return Ok(());
        }
        match simulator_api::client::stats(self.target).await {
            Ok(now) => {
                script.stats(&now);
                Ok(())
            }
            Err(e) => {
                if !self.warned {
                    eprintln!(
                        "trace: cannot read {}/stats ({e}); its columns keep their last reading",
                        self.target
                    );
                    self.warned = true;
                }
                Err(e.into())
            }
        }
    }
}

/// How a live run is fed: until `seconds` have passed, Ctrl-C or `stop`.
struct Follow<'a> {
    stop: Option<&'a tokio_util::sync::CancellationToken>,
    print: &'a (dyn Fn(&mut String) + Sync),
    seconds: u64,
}

impl Follow<'_> {
    /// Feeds the script until the end; true when the server ended the stream
    /// first. With no stream (a script that reads only `/stats`), the seconds alone.
    async fn run(
        &self,
        mut body: Option<&mut Incoming>,
        script: &mut dyn Script,
        stats: &mut StatsReader<'_>,
        lines: &mut Lines,
    ) -> bool {
        let mut out = String::new();
        // A reading of /stats at every tick, a line at every `per_second`th.
        let per_second = script.readings_per_second().max(1);
        let period = Duration::from_secs(1) / per_second;
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        let ctrl_c = tokio::signal::ctrl_c();
        tokio::pin!(ctrl_c);
        let stopped = async {
            match self.stop {
                Some(stop) => stop.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(stopped);
        let (mut ticks, mut elapsed) = (0, 0);
        loop {
            tokio::select! {
                _ = &mut ctrl_c => return false,
                () = &mut stopped => return false,
                _ = tick.tick() => {
                    let _ = stats.read(script).await;
                    ticks += 1;
                    if ticks % per_second != 0 {
                        continue;
                    }
                    script.second(&clock(), &mut out);
                    (self.print)(&mut out);
                    elapsed += 1;
                    if elapsed >= self.seconds {
                        return false;
                    }
                }
                frame = async { body.as_mut()?.frame().await }, if body.is_some() => match frame {
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            lines.feed(&data, script);
                        }
                    }
                    Some(Err(_)) | None => return true,
                },
            }
        }
    }
}

/// Prints and empties `out`, at once (a reader of a pipe sees each line as it comes).
pub(crate) fn emit(out: &mut String) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(out.as_bytes());
    let _ = stdout.flush();
    out.clear();
}

/// The wall time as HH:MM:SS, UTC, for the lines a second.
pub(crate) fn clock() -> String {
    clock_at(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    )
}

/// Unix seconds `s` as HH:MM:SS, UTC.
pub(crate) fn clock_at(s: u64) -> String {
    format!("{:02}:{:02}:{:02}", s / 3600 % 24, s / 60 % 60, s % 60)
}

/// The tap's body cut into lines, each handed to the script as an [`Event`].
#[derive(Debug, Default)]
struct Lines {
    partial: Vec<u8>,
    lost: u64,
    /// The subscription's id, from the stream's `# isim tap ID:` head.
    subscription: Option<u64>,
}

impl Lines {
    fn feed(&mut self, data: &[u8], script: &mut dyn Script) {
        self.partial.extend_from_slice(data);
        let Some(end) = self.partial.iter().rposition(|&b| b == b'\n') else {
            return;
        };
        let complete: Vec<u8> = self.partial.drain(..=end).collect();
        for line in String::from_utf8_lossy(&complete).lines() {
            if let Some(lost) = line.strip_prefix("lost ") {
                let lost = lost.trim().parse::<u64>().unwrap_or(0);
                self.lost += lost;
                script.lost(lost);
            } else if let Some(head) = line.strip_prefix("# isim tap ") {
                self.subscription = head.split(':').next().and_then(|id| id.parse().ok());
            } else if let Some(event) = parse(line) {
                script.on(&event);
            }
        }
    }
}

/// `NS PROBE ARGS...`; none for the `#` head or a line it cannot read.
fn parse(line: &str) -> Option<Event<'static>> {
    let mut words = line.split_ascii_whitespace();
    let at_ns = words.next()?.parse().ok()?;
    let name = words.next()?;
    let probe = EVENTS.iter().find(|e| e.probe == name)?.probe;
    let mut args = [0; 6];
    for (slot, word) in args.iter_mut().zip(words) {
        *slot = word.parse().ok()?;
    }
    Some(Event { at_ns, probe, args })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_an_event_and_the_head_is_not() {
        let event = parse("123 persist-done 7 1 5000 2 0").unwrap();
        assert_eq!(event.at_ns, 123);
        assert_eq!(event.probe, simulator_api::events::probe::persist__done);
        assert_eq!(event.args, [7, 1, 5000, 2, 0, 0]);
        assert!(parse("# isim tap: persist-done").is_none());
        assert!(parse("5 no-such-probe 1").is_none());
    }

    #[test]
    fn lines_split_across_chunks_are_joined_and_losses_added() {
        let mut script = scripts::by_name(
            "count",
            Options {
                seconds: 1,
                client_timeout_ms: 1000,
                interval_s: 12,
            },
        )
        .unwrap();
        let mut lines = Lines::default();
        lines.feed(
            b"# isim tap 12: request-start\n1 request-st",
            script.as_mut(),
        );
        lines.feed(
            b"art 1 1024\nlost 4\n2 request-start 2 1024\n",
            script.as_mut(),
        );
        assert_eq!(lines.lost, 4);
        assert_eq!(lines.subscription, Some(12));
        let mut out = String::new();
        script.end(1, &mut out);
        assert!(out.contains("@counts[requests started]: 2"), "{out}");
    }
}
