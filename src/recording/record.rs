//! `system-simulator record`: a run kept in a file (`recording/`). The recorder
//! is a script like the twins, run by the same loop ([`crate::trace::Live`]): it
//! attaches to every probe, reads `/stats` each second, and writes what it is
//! fed as it comes (a block of events and a tick each second), so a recorder
//! killed at any moment leaves a file whole up to its last write.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use serde_json::Value;
use simulator_api::events::{probe, EVENTS};
use simulator_api::{max_duration, Stats};

use crate::recording::format::events::Packer;
use crate::recording::format::file::{Kind, Writer};
use crate::recording::format::{EndBlock, Head, ProfileBlock, TickBlock, TrailBlock, EVENTS_BLOCK};
use crate::trace::script::{Event, Script};

/// What `record` takes.
#[derive(Debug, clap::Args)]
pub struct RecordArgs {
    /// The server: its data port or its operator port (both serve the tap).
    #[arg(long, default_value = "http://127.0.0.1:7878")]
    pub target: String,
    /// How long to record (0: 60). SIMULATOR_MAX_DURATION cuts it; Ctrl-C ends it
    /// early, and the file is whole.
    #[arg(long, default_value_t = 60)]
    pub seconds: u64,
    /// The recording to write (replaced if it exists).
    #[arg(long, value_name = "FILE.isim")]
    pub out: PathBuf,
    /// The server's admin token, when it was started with one.
    #[arg(long, env = "ISIM_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// Also take the server's CPU profile for the first SECONDS (1 to 120) of
    /// the recording (`GET /admin/profile`, 99 Hz); `export` draws its flame
    /// graph.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=120))]
    pub profile: Option<u64>,
}

pub async fn run(args: RecordArgs) -> anyhow::Result<()> {
    let wanted = std::time::Duration::from_secs(if args.seconds == 0 { 60 } else { args.seconds });
    let cap = max_duration::from_env()?;
    let seconds = max_duration::cut_and_say("record", "--seconds", wanted, cap)
        .as_secs()
        .max(1);
    let mut recorder = Recorder::create(
        &args.out,
        &args.target,
        args.admin_token.as_deref(),
        seconds,
    )?;
    if let Some(profile_s) = args.profile {
        recorder.profile = Some(Profiling::Asked {
            target: args.target.clone(),
            admin_token: args.admin_token.clone(),
            seconds: profile_s.min(seconds),
        });
    }
    let live = crate::trace::Live {
        target: &args.target,
        admin_token: args.admin_token.as_deref(),
        stop: None,
        quiet: false,
        gather_ms: Some(GATHER_MS),
    };
    let (target, out) = (&args.target, args.out.display());
    live.run(&mut recorder, seconds, |_| {
        format!("record: every probe of {target} over the tap, and its /stats a second, into {out}")
    })
    .await?;
    match recorder.failed.take() {
        Some(e) => {
            Err(e).with_context(|| format!("cannot write {out}; it holds what was written before"))
        }
        None => Ok(()),
    }
}

/// A recording made beside other work (`workshop check --record`, `demo
/// --record`): begun once subscribed, ended when asked, and quiet meanwhile.
#[derive(Debug)]
pub struct Beside {
    stop: tokio_util::sync::CancellationToken,
    task: tokio::task::JoinHandle<anyhow::Result<Kept>>,
}

/// What a recording kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub path: PathBuf,
    pub bytes: u64,
    pub events: u64,
    pub requests: u64,
    pub lost: u64,
}

impl std::fmt::Display for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} events of {} requests, {} bytes",
            self.path.display(),
            self.events,
            self.requests,
            self.bytes
        )?;
        if self.lost > 0 {
            write!(f, " ({} lost while the recorder was behind)", self.lost)?;
        }
        Ok(())
    }
}

/// Starts recording `target` into `path`; returns once the tap is subscribed,
/// so nothing that happens after is missed.
pub async fn beside(
    target: &str,
    admin_token: Option<&str>,
    path: &std::path::Path,
) -> anyhow::Result<Beside> {
    // Its head says 0 s: it lasts as long as what it is beside.
    let mut recorder = Recorder::create(path, target, admin_token, 0)?;
    let (began, begun) = tokio::sync::oneshot::channel();
    recorder.began = Some(began);
    let stop = tokio_util::sync::CancellationToken::new();
    let (target, admin_token, stopped) = (
        target.to_owned(),
        admin_token.map(str::to_owned),
        stop.clone(),
    );
    let task = tokio::spawn(async move {
        let live = crate::trace::Live {
            target: &target,
            admin_token: admin_token.as_deref(),
            stop: Some(&stopped),
            quiet: true,
            gather_ms: Some(GATHER_MS),
        };
        live.run(&mut recorder, RECORD_BESIDE_S, |_| String::new())
            .await?;
        recorder.kept()
    });
    if begun.await.is_err() {
        // The task ended before it began: its error says why.
        return Err(task
            .await?
            .err()
            .unwrap_or_else(|| anyhow::anyhow!("the recorder ended at once")));
    }
    Ok(Beside { stop, task })
}

/// The longest a recording beside other work runs: longer than any check or demo.
const RECORD_BESIDE_S: u64 = 3600;

impl Beside {
    /// Ends the recording after every event that fired until now.
    pub async fn end(self) -> anyhow::Result<Kept> {
        self.stop.cancel();
        self.task.await?
    }
}

/// How long the tap gathers a batch for the recorder. A live twin's 1 ms costs
/// the server a write and a wake-up per batch: at the demo's load (about 950
/// events a second, spread out) that was most of the recorder's cost
/// (docs/performance.md, "Recording"). A recorder needs no event soon.
const GATHER_MS: u64 = 100;

/// Every probe's name, for the tap's subscription.
fn every_probe() -> &'static [&'static str] {
    static ALL: OnceLock<Vec<&'static str>> = OnceLock::new();
    ALL.get_or_init(|| EVENTS.iter().map(|e| e.probe).collect())
}

/// The CPU profile beside the recording: asked for, then being taken (begun
/// when the recording begins, so it samples the recording's first seconds).
#[derive(Debug)]
enum Profiling {
    Asked {
        target: String,
        admin_token: Option<String>,
        seconds: u64,
    },
    Taking {
        began_unix_ms: u64,
        seconds: u64,
        answer: tokio::sync::oneshot::Receiver<Result<String, String>>,
    },
}

impl Profiling {
    /// Asks the server for its profile of the next `seconds`.
    fn start(self) -> Self {
        let Profiling::Asked {
            target,
            admin_token,
            seconds,
        } = self
        else {
            return self;
        };
        let (tell, answer) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let path = format!("/admin/profile?seconds={seconds}&format=folded");
            let folded = simulator_api::client::exchange_within(
                &target,
                hyper::Method::GET,
                &path,
                bytes::Bytes::new(),
                admin_token.as_deref(),
                std::time::Duration::from_secs(seconds + 30),
            )
            .await
            .map_err(|e| e.to_string());
            let _ = tell.send(folded);
        });
        Profiling::Taking {
            began_unix_ms: unix_ms(),
            seconds,
            answer,
        }
    }
}

/// The server's trail beside the recording (`GET /admin/trail`), read once a
/// second by a task of its own, its latest text in a watch channel. A server
/// that does not give it (an older build, an admin route refused) leaves the
/// recording without one: the task ends at the first refusal.
#[derive(Debug)]
enum TrailWatch {
    Asked {
        target: String,
        admin_token: Option<String>,
    },
    Reading(tokio::sync::watch::Receiver<Option<String>>),
    Off,
}

impl TrailWatch {
    fn start(self) -> Self {
        let TrailWatch::Asked {
            target,
            admin_token,
        } = self
        else {
            return self;
        };
        let (tell, latest) = tokio::sync::watch::channel(None);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(std::time::Duration::from_secs(1));
            loop {
                every.tick().await;
                let read = simulator_api::client::exchange(
                    &target,
                    hyper::Method::GET,
                    "/admin/trail",
                    bytes::Bytes::new(),
                    admin_token.as_deref(),
                )
                .await;
                let Ok(text) = read else { return };
                // Ends with the recorder, which drops the receiver.
                let changed = tell.send_if_modified(|now| {
                    let moved = now.as_deref() != Some(text.as_str());
                    if moved {
                        *now = Some(text);
                    }
                    moved
                });
                if !changed && tell.is_closed() {
                    return;
                }
            }
        });
        TrailWatch::Reading(latest)
    }
}

/// The script that keeps what it is fed.
#[derive(Debug)]
pub struct Recorder {
    path: PathBuf,
    file: Writer<BufWriter<File>>,
    /// A probe's code (its place in the head's table) and its arity.
    codes: HashMap<&'static str, (u8, usize)>,
    packer: Packer,
    /// The time of the last event, which a tick takes as the tap's clock.
    last_ns: u64,
    /// The last `/stats` read, for the next tick.
    stats: Option<Value>,
    /// The settings the last tick carried.
    config: Option<Value>,
    second: u64,
    events: u64,
    lost: u64,
    requests: u64,
    /// The first write that failed; nothing is written after it.
    failed: Option<std::io::Error>,
    /// Told when the recording begins (subscribed).
    began: Option<tokio::sync::oneshot::Sender<()>>,
    /// The CPU profile asked for, until it is written.
    profile: Option<Profiling>,
    /// The server's trail, read once a second beside the recording.
    trail: TrailWatch,
    /// The trail's text as last written, so an unchanged one is not again.
    trail_written: Option<String>,
}

impl Recorder {
    /// Creates the file and writes its head.
    pub fn create(
        path: &std::path::Path,
        target: &str,
        admin_token: Option<&str>,
        seconds: u64,
    ) -> anyhow::Result<Self> {
        let opened =
            File::create(path).with_context(|| format!("cannot write {}", path.display()))?;
        let mut file = Writer::new(BufWriter::new(opened))?;
        let head = Head {
            recorder: format!("system-simulator {}", env!("CARGO_PKG_VERSION")),
            target: target.to_owned(),
            began_unix_ms: unix_ms(),
            seconds,
            probes: Head::probe_table(),
        };
        file.block(Kind::Head, &serde_json::to_vec(&head)?)?;
        let codes = EVENTS
            .iter()
            .enumerate()
            .map(|(i, e)| (e.probe, (i as u8, e.args.len())))
            .collect();
        Ok(Recorder {
            path: path.to_owned(),
            file,
            codes,
            packer: Packer::default(),
            last_ns: 0,
            stats: None,
            config: None,
            second: 0,
            events: 0,
            lost: 0,
            requests: 0,
            failed: None,
            began: None,
            profile: None,
            trail: TrailWatch::Asked {
                target: target.to_owned(),
                admin_token: admin_token.map(str::to_owned),
            },
            trail_written: None,
        })
    }

    /// What was kept, or the write that failed.
    fn kept(&mut self) -> anyhow::Result<Kept> {
        if let Some(e) = self.failed.take() {
            return Err(e).with_context(|| {
                format!(
                    "cannot write {}; it holds what was written before",
                    self.path.display()
                )
            });
        }
        Ok(Kept {
            path: self.path.clone(),
            bytes: self.file.written(),
            events: self.events,
            requests: self.requests,
            lost: self.lost,
        })
    }

    fn write(&mut self, kind: Kind, payload: &[u8]) {
        if self.failed.is_none() {
            if let Err(e) = self.file.block(kind, payload) {
                self.failed = Some(e);
            }
        }
    }

    fn write_events(&mut self) {
        if !self.packer.is_empty() {
            let payload = self.packer.take();
            self.write(Kind::Events, &payload);
        }
    }

    /// The last `/stats`, its settings left out when the tick before had the same.
    fn stats_to_keep(&mut self) -> Value {
        let mut stats = self.stats.clone().unwrap_or(Value::Null);
        if let Some(object) = stats.as_object_mut() {
            let config = object.get("config").cloned();
            if config.is_some() && config == self.config {
                object.remove("config");
            } else {
                self.config = config;
            }
        }
        stats
    }

    /// Writes the profile once it came back; a line saying so, or why not.
    fn write_profile(&mut self, out: &mut String) {
        let Some(Profiling::Taking {
            began_unix_ms,
            seconds,
            answer,
        }) = self.profile.as_mut()
        else {
            return;
        };
        let (began_unix_ms, seconds) = (*began_unix_ms, *seconds);
        let answer = match answer.try_recv() {
            Ok(answer) => answer,
            Err(tokio::sync::oneshot::error::TryRecvError::Empty) => return,
            Err(tokio::sync::oneshot::error::TryRecvError::Closed) => {
                Err("the request for it ended without an answer".to_owned())
            }
        };
        self.profile = None;
        match answer {
            Ok(folded) => {
                let block = ProfileBlock {
                    began_unix_ms,
                    seconds,
                    folded,
                };
                let payload = serde_json::to_vec(&block).unwrap_or_default();
                self.write(Kind::Profile, &payload);
                out.push_str(&format!(
                    "The server's CPU profile of {seconds} s is in the recording.\n"
                ));
            }
            Err(why) => out.push_str(&format!("No CPU profile in the recording: {why}\n")),
        }
    }

    /// Writes the trail when it moved since the last written.
    fn write_trail(&mut self) {
        let TrailWatch::Reading(latest) = &mut self.trail else {
            return;
        };
        let text = latest.borrow_and_update().clone();
        let Some(text) = text.filter(|t| self.trail_written.as_ref() != Some(t)) else {
            return;
        };
        let Ok(trail) = serde_json::from_str(&text) else {
            return;
        };
        let block = TrailBlock {
            unix_ms: unix_ms(),
            trail,
        };
        let payload = serde_json::to_vec(&block).unwrap_or_default();
        self.write(Kind::Trail, &payload);
        self.trail_written = Some(text);
    }

    fn tick(&mut self) {
        self.write_events();
        self.write_trail();
        let tick = TickBlock {
            second: self.second,
            unix_ms: unix_ms(),
            tap_ns: self.last_ns,
            stats: self.stats_to_keep(),
        };
        let payload = serde_json::to_vec(&tick).unwrap_or_default();
        self.write(Kind::Tick, &payload);
        self.flush();
    }

    fn flush(&mut self) {
        if self.failed.is_none() {
            if let Err(e) = self.file.flush() {
                self.failed = Some(e);
            }
        }
    }
}

impl Script for Recorder {
    fn probes(&self) -> &'static [&'static str] {
        every_probe()
    }

    fn reads_stats(&self) -> bool {
        true
    }

    fn stats(&mut self, now: &Stats) {
        self.stats = serde_json::to_value(now).ok();
    }

    fn begin(&mut self, out: &mut String) {
        self.tick();
        self.profile = self.profile.take().map(Profiling::start);
        self.trail = std::mem::replace(&mut self.trail, TrailWatch::Off).start();
        if let Some(began) = self.began.take() {
            let _ = began.send(());
        }
        out.push_str(&format!(
            "Recording every isim probe and /stats a second into {} (Ctrl-C ends it; the file is whole up to its last second).\n",
            self.path.display()
        ));
    }

    fn on(&mut self, event: &Event<'_>) {
        let Some(&(code, arity)) = self.codes.get(event.probe) else {
            return;
        };
        self.packer.event(event.at_ns, code, arity, &event.args);
        self.last_ns = self.last_ns.max(event.at_ns);
        self.events += 1;
        if event.probe == probe::request__done {
            self.requests += 1;
        }
        if self.packer.len() >= EVENTS_BLOCK {
            self.write_events();
        }
    }

    fn lost(&mut self, count: u64) {
        self.packer.lost(count);
        self.lost += count;
    }

    fn second(&mut self, clock: &str, out: &mut String) {
        self.second += 1;
        self.write_profile(out);
        self.tick();
        out.push_str(&format!(
            "{clock} {:>4} s {:>10} events {:>12} bytes\n",
            self.second,
            self.events,
            self.file.written()
        ));
    }

    fn end(&mut self, ran_s: u64, out: &mut String) {
        self.write_profile(out);
        if self.profile.take().is_some() {
            out.push_str("No CPU profile in the recording: it ended before the profile did.\n");
        }
        self.write_events();
        self.write_trail();
        let end = EndBlock {
            seconds: ran_s.max(self.second),
            stats: self.stats_to_keep(),
        };
        let payload = serde_json::to_vec(&end).unwrap_or_default();
        self.write(Kind::End, &payload);
        self.flush();
        let bytes = self.file.written();
        let per = |n: u64| if n == 0 { 0.0 } else { bytes as f64 / n as f64 };
        out.push_str(&format!(
            "\nRecorded {} events ({} requests done) over {} s into {}: {bytes} bytes, {:.1} an event, {:.0} a request.\n",
            self.events,
            self.requests,
            ran_s,
            self.path.display(),
            per(self.events),
            per(self.requests),
        ));
        if self.lost > 0 {
            out.push_str(&format!(
                "The tap dropped {} events while the recorder was behind; the file marks where.\n",
                self.lost
            ));
        }
    }
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
