//! A recording as a timeline: Chrome's JSON trace events, which Perfetto's UI
//! (ui.perfetto.dev) and `chrome://tracing` open. Chrome JSON rather than
//! Perfetto's protobuf: serde writes it, a test reads it back with serde, and
//! the UI opens it as it is.
//!
//! What goes in:
//!
//! - each request, an async slice `request` from its request-start to its
//!   request-done, with its own id (`r` and the request id), so requests that
//!   overlap each get a row; inside it, the phases that lie inside it: the wait
//!   for a permit, for the index's lock, for a work slot, the work;
//! - the phases a request's reply does not wait for (its place in the
//!   persistence queue, its persist), on a track of their own under id `p` and
//!   the request id: a persist outlives its reply, and async slices must nest;
//! - each compaction, a slice of its own (id `c` and its number);
//! - counters at each change, at most one value a millisecond each: requests,
//!   persists and lock waiters in flight, the persistence queue's depth, the
//!   permits free (as request-nonblock and persist-start say, and each second's
//!   `/stats`), and from `/stats` the store's slots busy;
//! - instants: each change of settings (a fix, a switch) and each incident's
//!   start and end;
//! - flows from each attempt of a client request to its retry (request-start's
//!   client key, which clients that retry send): Perfetto draws an arrow;
//! - each CPU profile the recording holds (`record --profile`), a slice over
//!   the seconds it sampled; `export` writes its flame graph beside, as SVG.
//!
//! Times are the tap's (ns since it began), written in µs as the format asks.
//!
//! Several recordings (`export before.isim after.isim`) share one timeline,
//! each a process of its own named for its file, each from its own first
//! moment, so a before and an after lie one above the other on the same
//! seconds. Their ids take the process's number, so no slice or flow of one
//! joins the other's, and their instants mark their own process only.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::{json, Value};
use simulator_api::events::probe;

use crate::recording::format::{Item, Recording};

/// One trace event, as the format names its fields.
#[derive(Debug, Serialize)]
pub struct TraceEvent {
    pub name: String,
    pub cat: &'static str,
    pub ph: &'static str,
    /// µs.
    pub ts: f64,
    pub pid: u32,
    pub tid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// An instant's scope: `g`, the whole trace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub s: Option<&'static str>,
    #[serde(skip_serializing_if = "Value::is_null")]
    pub args: Value,
    /// A request's attempt joined to the attempts of the same client request
    /// (its retries): Perfetto's flows of the JSON format's second version.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub flow: Option<Flow>,
}

/// The flow fields of a slice's begin: one `bind_id` a chain of attempts, out
/// of every attempt but the last, into every attempt but the first.
#[derive(Debug, Clone, Serialize)]
pub struct Flow {
    pub bind_id: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub flow_in: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub flow_out: bool,
}

/// Counters are grouped per millisecond: one value a millisecond at most.
const COUNTER_NS: u64 = 1_000_000;

/// A phase of a request: its name and span.
#[derive(Debug, Clone)]
struct Span {
    name: &'static str,
    begin: u64,
    end: u64,
}

/// What is known of a request until its request-done.
#[derive(Debug, Default)]
struct Open {
    /// When it started, its bytes and its client's key (0: none).
    start: Option<(u64, u64, u64)>,
    spans: Vec<Span>,
    /// Phases begun and not yet ended, by name.
    begun: HashMap<&'static str, u64>,
}

/// The whole export: `{"traceEvents": [...], ...}`.
pub fn export(recording: &Recording) -> Value {
    let mut out = Timeline {
        pid: 1,
        name: format!("isim server {}", recording.head.target),
        ..Timeline::default()
    };
    out.run(recording);
    json!({
        "traceEvents": out.events,
        "displayTimeUnit": "ms",
        "otherData": {
            "recorder": recording.head.recorder,
            "target": recording.head.target,
            "began_unix_ms": recording.head.began_unix_ms,
        },
    })
}

/// Several recordings on one timeline, each named by its `&str` (its file),
/// each a process, each from its own first moment.
pub fn export_together(recordings: &[(&str, &Recording)]) -> Value {
    let mut events = Vec::new();
    let mut each = Vec::new();
    for (i, (name, recording)) in recordings.iter().enumerate() {
        let pid = i as u32 + 1;
        let mut out = Timeline {
            pid,
            name: format!("{name}: isim server {}", recording.head.target),
            origin_ns: first_ns(recording),
            ids: format!("{pid}/"),
            ..Timeline::default()
        };
        out.run(recording);
        events.append(&mut out.events);
        each.push(json!({
            "name": name,
            "pid": pid,
            "recorder": recording.head.recorder,
            "target": recording.head.target,
            "began_unix_ms": recording.head.began_unix_ms,
        }));
    }
    json!({
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": { "recordings": each },
    })
}

/// The tap's time of a recording's first event or reading.
fn first_ns(recording: &Recording) -> u64 {
    recording
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Event { at_ns, .. } => Some(*at_ns),
            Item::Tick { tap_ns, .. } if *tap_ns > 0 => Some(*tap_ns),
            _ => None,
        })
        .min()
        .unwrap_or(0)
}

/// The tap's clock at wall-clock `unix_ms`, from the tick nearest it (a tick
/// carries both clocks: its wall clock and its last event's tap time).
fn tap_ns_at(recording: &Recording, unix_ms: u64) -> u64 {
    let nearest = recording
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Tick {
                unix_ms: at,
                tap_ns,
                ..
            } if *tap_ns > 0 => Some((*at, *tap_ns)),
            _ => None,
        })
        .min_by_key(|(at, _)| at.abs_diff(unix_ms));
    nearest.map_or(0, |(at, tap_ns)| {
        // Any u64 a file holds: wide enough not to overflow, then clamped.
        let shift = (i128::from(unix_ms) - i128::from(at)) * 1_000_000;
        let shift = i64::try_from(shift).unwrap_or(if shift < 0 { i64::MIN } else { i64::MAX });
        tap_ns.saturating_add_signed(shift)
    })
}

#[derive(Debug, Default)]
struct Timeline {
    /// The process the recording draws as, and its name.
    pid: u32,
    name: String,
    /// The tap's time drawn at 0: the first moment of a recording among
    /// several, 0 alone.
    origin_ns: u64,
    /// What begins every id and flow of this recording: empty alone.
    ids: String,
    events: Vec<TraceEvent>,
    requests: HashMap<u64, Open>,
    /// Phases off the reply's path, begun, by request id and name.
    aside: HashMap<(u64, &'static str), u64>,
    compactions: HashMap<u64, u64>,
    /// A client request's attempts (key, then its retries): when each began,
    /// and where its slice's begin is in `events`.
    attempts: HashMap<u64, Vec<(u64, usize)>>,
    counters: BTreeMap<&'static str, Counter>,
    last_ns: u64,
    config: Option<Value>,
}

/// A counter: its value since `since`, and the last value written.
#[derive(Debug, Default)]
struct Counter {
    value: i64,
    since: u64,
    written: Option<i64>,
}

impl Timeline {
    fn run(&mut self, recording: &Recording) {
        self.metadata();
        for item in &recording.items {
            match item {
                Item::Event { at_ns, probe, args } => {
                    self.last_ns = self.last_ns.max(*at_ns);
                    self.event(*at_ns, probe, args);
                }
                Item::Tick { tap_ns, stats, .. } => self.stats(*tap_ns, stats),
                Item::End { stats, .. } => self.stats(self.last_ns, stats),
                Item::Lost(_) => {}
            }
        }
        self.unfinished();
        self.flows();
        for (i, profile) in recording.profiles.iter().enumerate() {
            let begin = tap_ns_at(recording, profile.began_unix_ms);
            let end = begin.saturating_add(profile.seconds.saturating_mul(1_000_000_000));
            let name = format!(
                "CPU profile, {} s (its flame graph: export's .svg)",
                profile.seconds
            );
            self.slice(
                "profile",
                &name,
                format!("profile {i}"),
                begin,
                end,
                Value::Null,
            );
        }
        let names: Vec<_> = self.counters.keys().copied().collect();
        for name in names {
            self.flush_counter(name);
        }
    }

    /// The process's name, and its place: the recordings in the order given.
    fn metadata(&mut self) {
        for (name, args) in [
            ("process_name", json!({ "name": self.name })),
            ("process_sort_index", json!({ "sort_index": self.pid })),
        ] {
            self.events.push(TraceEvent {
                name: name.into(),
                cat: "__metadata",
                ph: "M",
                ts: 0.0,
                pid: self.pid,
                tid: 0,
                id: None,
                s: None,
                args,
                flow: None,
            });
        }
    }

    fn event(&mut self, at: u64, name: &'static str, a: &[u64; 6]) {
        let id = a[0];
        match name {
            probe::request__start => {
                self.requests.entry(id).or_default().start = Some((at, a[1], a[2]));
                self.count("requests in flight", at, 1);
            }
            probe::request__nonblock => self.set("permits free", at, a[1] as i64),
            probe::request__block => {
                self.begin(id, "waiting for a permit", at);
                self.set("permits free", at, 0);
            }
            probe::request__unblock | probe::request__shed => {
                self.end(id, "waiting for a permit", at)
            }
            probe::lock__wait__start => {
                self.begin(id, "waiting for the index's lock", at);
                self.count("lock waiters", at, 1);
            }
            probe::lock__wait__done => {
                self.end(id, "waiting for the index's lock", at);
                self.count("lock waiters", at, -1);
            }
            probe::work__done => self.work_done(id, at, a[1]),
            probe::work__start => self.begin(id, "work", at),
            probe::request__done => self.done(id, at, a),
            probe::queue__enqueue => {
                self.begin_either(id, "queued for a worker", at);
                self.set("persistence queue", at, a[1] as i64);
            }
            probe::queue__dequeue | probe::queue__drop => {
                self.end_either(id, "queued for a worker", at);
                if name == probe::queue__dequeue {
                    self.set("persistence queue", at, a[2] as i64);
                }
            }
            probe::persist__start => {
                self.begin_either(id, "persist", at);
                self.set("permits free", at, a[3] as i64);
                self.count("persists in flight", at, 1);
            }
            probe::persist__done => {
                self.end_either(id, "persist", at);
                self.count("persists in flight", at, -1);
            }
            probe::compaction__start => {
                self.compactions.insert(id, at);
            }
            probe::compaction__done => {
                if let Some(begin) = self.compactions.remove(&id) {
                    let args = json!({ "entries": a[1], "dropped": a[2], "held_lock_ns": a[3] });
                    self.slice(
                        "compaction",
                        "compaction",
                        format!("c{id}"),
                        begin,
                        at,
                        args,
                    );
                }
            }
            probe::incident__start => self.instant(format!("incident {id} begins"), at),
            probe::incident__end => self.instant(format!("incident {id} ends"), at),
            _ => {}
        }
    }

    /// work-done says how long the work ran; before that it waited for a slot.
    fn work_done(&mut self, id: u64, at: u64, run_ns: u64) {
        let ran = at.saturating_sub(run_ns);
        let open = self.requests.entry(id).or_default();
        if let Some(asked) = open.begun.remove("work") {
            if ran > asked {
                open.spans.push(Span {
                    name: "waiting for a work slot",
                    begin: asked,
                    end: ran,
                });
            }
        }
        open.spans.push(Span {
            name: "work",
            begin: ran,
            end: at,
        });
    }

    fn begin(&mut self, id: u64, phase: &'static str, at: u64) {
        self.requests.entry(id).or_default().begun.insert(phase, at);
    }

    fn end(&mut self, id: u64, phase: &'static str, at: u64) {
        let open = self.requests.entry(id).or_default();
        if let Some(begin) = open.begun.remove(phase) {
            open.spans.push(Span {
                name: phase,
                begin,
                end: at,
            });
        }
    }

    /// A phase that may outlive its request's reply: in the request while it is
    /// open, aside after.
    fn begin_either(&mut self, id: u64, phase: &'static str, at: u64) {
        match self.requests.get_mut(&id) {
            Some(open) if open.start.is_some() => {
                open.begun.insert(phase, at);
            }
            _ => {
                self.aside.insert((id, phase), at);
            }
        }
    }

    fn end_either(&mut self, id: u64, phase: &'static str, at: u64) {
        let in_request = self
            .requests
            .get(&id)
            .is_some_and(|open| open.begun.contains_key(phase));
        if in_request {
            self.end(id, phase, at);
        } else {
            self.end_aside(id, phase, at);
        }
    }

    fn end_aside(&mut self, id: u64, phase: &'static str, at: u64) {
        if let Some(begin) = self.aside.remove(&(id, phase)) {
            self.slice(
                "persistence",
                phase,
                format!("p{id}"),
                begin,
                at,
                json!({ "request": id }),
            );
        }
    }

    /// The request's slice and the phases inside it; a phase that is not inside
    /// (it cannot be, unless the tap's times are off) goes with the ones aside.
    fn done(&mut self, id: u64, at: u64, a: &[u64; 6]) {
        let Some(open) = self.requests.remove(&id) else {
            return;
        };
        let Some((begin, bytes, key)) = open.start else {
            return;
        };
        self.count("requests in flight", at, -1);
        // What the reply did not wait for goes on, aside.
        for (phase, begun) in &open.begun {
            if matches!(*phase, "persist" | "queued for a worker") {
                self.aside.insert((id, phase), *begun);
            }
        }
        let args = json!({
            "request": id, "bytes": bytes, "lifetime_ns": a[1], "blocked": a[2] == 1, "cancelled": a[3] == 1,
        });
        self.attempt(key, begin);
        self.request_slice("request", id, begin, at, args, open.spans);
    }

    fn request_slice(
        &mut self,
        name: &str,
        id: u64,
        begin: u64,
        end: u64,
        args: Value,
        mut spans: Vec<Span>,
    ) {
        let track = format!("r{id}");
        spans.sort_by_key(|s| (s.begin, std::cmp::Reverse(s.end)));
        self.async_event("request", "b", name, &track, begin, args);
        for span in spans {
            if span.begin >= begin && span.end <= end {
                self.async_event("request", "b", span.name, &track, span.begin, Value::Null);
                self.async_event("request", "e", span.name, &track, span.end, Value::Null);
            } else {
                let args = json!({ "request": id });
                self.slice(
                    "persistence",
                    span.name,
                    format!("p{id}"),
                    span.begin,
                    span.end,
                    args,
                );
            }
        }
        self.async_event("request", "e", name, &track, end, Value::Null);
    }

    /// Requests still in flight when the recording stopped: a slice to its end, so named.
    /// The request slice about to begin is an attempt of client request `key`.
    fn attempt(&mut self, key: u64, begin: u64) {
        if key != 0 {
            let at = self.events.len();
            self.attempts.entry(key).or_default().push((begin, at));
        }
    }

    /// Each client request's attempts, in the order they began, joined by a flow.
    fn flows(&mut self) {
        for (key, mut attempts) in std::mem::take(&mut self.attempts) {
            if attempts.len() < 2 {
                continue;
            }
            attempts.sort_unstable();
            let last = attempts.len() - 1;
            for (n, (_, at)) in attempts.into_iter().enumerate() {
                let begin = &mut self.events[at];
                begin.flow = Some(Flow {
                    bind_id: format!("{}{key:x}", self.ids),
                    flow_in: n > 0,
                    flow_out: n < last,
                });
                if let Some(args) = begin.args.as_object_mut() {
                    args.insert("attempt".into(), json!(n + 1));
                }
            }
        }
    }

    fn unfinished(&mut self) {
        let mut open: Vec<_> = self.requests.drain().collect();
        open.sort_by_key(|(id, _)| *id);
        let end = self.last_ns;
        for (id, request) in open {
            if let Some((begin, bytes, key)) = request.start {
                let args = json!({ "request": id, "bytes": bytes });
                self.attempt(key, begin);
                let spans = request.spans.into_iter().filter(|s| s.end <= end).collect();
                self.request_slice(
                    "request (in flight when the recording stopped)",
                    id,
                    begin,
                    end,
                    args,
                    spans,
                );
            }
        }
    }

    fn slice(
        &mut self,
        cat: &'static str,
        name: &str,
        track: String,
        begin: u64,
        end: u64,
        args: Value,
    ) {
        self.async_event(cat, "b", name, &track, begin, args);
        self.async_event(cat, "e", name, &track, end, Value::Null);
    }

    fn async_event(
        &mut self,
        cat: &'static str,
        ph: &'static str,
        name: &str,
        id: &str,
        at: u64,
        args: Value,
    ) {
        self.events.push(TraceEvent {
            name: name.to_owned(),
            cat,
            ph,
            ts: self.micros(at),
            pid: self.pid,
            tid: 0,
            id: Some(format!("{}{id}", self.ids)),
            s: None,
            args,
            flow: None,
        });
    }

    fn instant(&mut self, name: String, at: u64) {
        self.events.push(TraceEvent {
            name,
            cat: "change",
            ph: "i",
            ts: self.micros(at),
            pid: self.pid,
            tid: 0,
            id: None,
            // The whole trace's when alone; its own process's among several.
            s: Some(if self.ids.is_empty() { "g" } else { "p" }),
            args: Value::Null,
            flow: None,
        });
    }

    /// Each second's reading: the counters only `/stats` has, and an instant when
    /// the settings changed.
    fn stats(&mut self, at: u64, stats: &simulator_api::Stats) {
        self.set("permits free", at, stats.permits_available as i64);
        if let Some(busy) = stats.store_slots_busy {
            self.set("store slots busy", at, busy as i64);
        }
        let config = serde_json::to_value(&stats.config).unwrap_or(Value::Null);
        if let (Some(before), Some(now)) = (&self.config, config.as_object()) {
            let changed: Vec<String> = now
                .iter()
                .filter(|(key, value)| before.get(key.as_str()) != Some(value))
                .map(|(key, value)| format!("{key} = {value}"))
                .collect();
            if !changed.is_empty() {
                self.instant(format!("settings: {}", changed.join(", ")), at);
            }
        }
        self.config = Some(config);
    }

    fn count(&mut self, name: &'static str, at: u64, by: i64) {
        let value = self.counters.entry(name).or_default().value + by;
        self.set(name, at, value);
    }

    fn set(&mut self, name: &'static str, at: u64, value: i64) {
        if self
            .counters
            .get(name)
            .is_some_and(|c| c.since / COUNTER_NS != at / COUNTER_NS)
        {
            self.flush_counter(name);
        }
        let counter = self.counters.entry(name).or_default();
        counter.value = value;
        counter.since = at;
    }

    /// Writes the counter's last value of its millisecond, at the time it took it,
    /// unless it is what was written last.
    fn flush_counter(&mut self, name: &'static str) {
        let Some(counter) = self.counters.get_mut(name) else {
            return;
        };
        if counter.written == Some(counter.value) {
            return;
        }
        counter.written = Some(counter.value);
        let (value, at) = (counter.value, counter.since);
        self.events.push(TraceEvent {
            name: name.to_owned(),
            cat: "counter",
            ph: "C",
            ts: self.micros(at),
            pid: self.pid,
            tid: 0,
            id: None,
            s: None,
            args: json!({ "value": value }),
            flow: None,
        });
    }
}

impl Timeline {
    /// The tap's `ns` as the timeline's µs.
    fn micros(&self, ns: u64) -> f64 {
        ns.saturating_sub(self.origin_ns) as f64 / 1000.0
    }
}
