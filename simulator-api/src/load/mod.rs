//! A load: what the clients do, declared once.
//!
//! [`LoadArgs`] declares the load-shaping flags, their help, defaults and
//! checks: sim-clients flattens them into its command line, and a scenario's
//! `load`, written as the words a user would type (`["--n", "135",
//! "--think-time", "1s", "--duration", "60s"]`), is read with the same
//! declaration by [`Load::parse`], so a word cannot mean one thing to the driver
//! and another to a scenario. [`Load`] is what the words mean (clients, pacing,
//! element sizes, when it stops, how clients retry), which the server's model,
//! the demo, the check and the driver's plan (`simulator_clients::LoadPlan`,
//! which holds it) use, with the words kept as typed to show them back (`GET
//! /scenarios`).
//!
//! A load's flags: `--n`, `--think-time`, `--ramp-up`, `--rate`, `--arrivals`,
//! `--payload-size`, `--keys`, `--duration`, `--requests`, `--seed`, and how its clients
//! hold connections and give up and retry: `--connections`, `--timeout`,
//! `--retries`, `--backoff`, `--retry-budget`
//! (also as `--flag=value`). Where to send, how to report and how to split a run
//! are the driver's own business and not part of a load.

mod keys;
mod payload;
mod retry;
mod stages;

use std::time::Duration;

use clap::Parser;

pub use keys::{Keys, MAX_KEYS};
pub use payload::{PayloadSize, MAX_DRAWN_BYTES};
pub use retry::{parse_percent, Backoff, RetryPolicy, RETRY_BUDGET_WINDOW};
pub use stages::{Piece, Shape, Stage, Stages, Unit, MAX_STAGES, MAX_STAGE_NAME};

use crate::value::{parse_duration, text_of};

/// The load's flags: each declared here once, with its help, its default and
/// the checks of its own value. sim-clients flattens them into its command line;
/// [`Load::parse`] reads a scenario's words with them.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct LoadArgs {
    /// Number of clients, each with its own connection (with --rate: the pool of
    /// connections that carries the sends).
    #[arg(long = "n", short = 'n', default_value_t = 1, value_parser = at_least_one_client)]
    pub clients: usize,

    /// How long to run, e.g. `60s`, `2m`. Default 60s unless --requests is given.
    #[arg(long, value_parser = parse_duration, conflicts_with = "stages")]
    pub duration: Option<Duration>,

    /// A plan of stages instead of one level: `warm: ramp 50 30s, hold 1m,
    /// peak: spike 400 10s` (clients) or `ramp 300/s 1m, hold 2m` (an open
    /// loop's rate). Shapes: ramp, hold, step, spike (docs/load.md).
    #[arg(long, value_name = "PLAN", conflicts_with_all = ["requests", "rate", "ramp_up"])]
    pub stages: Option<Stages>,

    /// Stop each client after this many requests (closed loop only).
    #[arg(long, value_name = "K", conflicts_with = "rate")]
    pub requests: Option<u64>,

    /// Pause between a reply and the next request.
    #[arg(long, default_value = "1s", value_parser = parse_duration, conflicts_with = "rate")]
    pub think_time: Duration,

    /// Spread client starts over this long (default: all at once, as the original).
    #[arg(long, default_value = "0s", value_parser = parse_duration, conflicts_with = "rate")]
    pub ramp_up: Duration,

    /// Open loop: send R requests per second in total on a fixed schedule, whatever
    /// the server does; latency counts from each send's scheduled time.
    #[arg(long, value_name = "R", value_parser = positive_rate, allow_negative_numbers = true)]
    pub rate: Option<f64>,

    /// Open loop: spacing of the sends.
    #[arg(long, value_enum, default_value_t = Arrivals::Uniform)]
    pub arrivals: Arrivals,

    /// Element size: `1024`, `64k`, `uniform(LOW, HIGH)` or `lognormal(MEAN, SD)` (heavy-tailed; MEAN and SD in bytes, draws kept within 1 byte to 1 GiB).
    #[arg(long, default_value = "1024")]
    pub payload_size: PayloadSize,

    /// Each request reads an element instead of storing one: its key drawn from
    /// `zipf(COUNT, SKEW)` (key 0 the hottest), sent as `{"size": N, "key": K}`;
    /// the server answers it from its cache or fills the cache from the store.
    #[arg(long, value_name = "KEYS")]
    pub keys: Option<Keys>,

    /// How clients hold connections. `keep-alive` opens each client's before the
    /// run and reuses it (reopened after an error), as a browser or a pooled
    /// client does. `per-request` opens a new one for every attempt and sends
    /// `Connection: close`, as curl in a loop, a CGI script or a client without a
    /// pool does. Then each attempt's TCP handshake is measured (`connect` in the
    /// report).
    #[arg(long, value_enum, default_value_t = Connections::KeepAlive)]
    pub connections: Connections,

    /// What a request carries: `size`, the element's size as JSON (`{"size": N}`),
    /// or `bytes`, the element's bytes (`application/octet-stream`), which the
    /// server then reads and may keep. Not `bytes` with `--keys`.
    #[arg(long, value_enum, default_value_t = Sending::Size)]
    pub send: Sending,

    /// Seed for Poisson arrivals and payload sizes (the report prints the one used).
    #[arg(long)]
    pub seed: Option<u64>,

    /// Give up on an attempt after this long and close its connection (counted as
    /// a timeout error; the server sees the client leave: request-abandoned).
    #[arg(long, default_value = "30s", value_parser = positive_timeout)]
    pub timeout: Duration,

    /// Retry a failed attempt (a timeout, a lost connection, a 5xx) up to N times.
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=i64::from(MAX_RETRIES)))]
    pub retries: u32,

    /// The wait before each retry: none, exp(BASE, CAP) or exp-jitter(BASE, CAP)
    /// (full jitter: uniform up to the exponential wait).
    #[arg(long, value_name = "BACKOFF", default_value = "none")]
    pub backoff: Backoff,

    /// Retry at most P % of first attempts over the last 10 s (a retry budget, as
    /// gRPC's retry throttling and Finagle's RetryBudget); none by default.
    #[arg(long, value_name = "P", value_parser = parse_percent)]
    pub retry_budget: Option<f64>,
}

/// The load's flags alone, as a command line of their own: how [`Load::parse`]
/// reads a scenario's words.
#[derive(Debug, Parser)]
#[command(name = "load", no_binary_name = true, disable_help_flag = true)]
#[command(disable_version_flag = true)]
struct LoadWords {
    #[command(flatten)]
    load: LoadArgs,
}

fn at_least_one_client(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("a load needs at least one client".into()),
        Ok(n) => Ok(n),
        Err(_) => Err("the clients must be a whole number".into()),
    }
}

fn positive_rate(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|r| *r > 0.0 && *r <= MAX_RATE)
        .ok_or_else(|| format!("a rate is requests a second above 0, at most {MAX_RATE}"))
}

fn positive_timeout(text: &str) -> Result<Duration, String> {
    match parse_duration(text)? {
        t if t.is_zero() => Err("a client must wait for something".into()),
        t => Ok(t),
    }
}

/// A load as its words say, with the words kept to show them back. In a file
/// (a scenario's `load`) it is the list of words.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "Vec<String>", into = "Vec<String>")]
pub struct Load {
    words: Vec<String>,
    /// Closed loop: the virtual clients. Open loop: the connections (`--n`, 1 unless given).
    pub clients: usize,
    pub pacing: Pacing,
    pub payload: PayloadSize,
    /// `--keys`: reads of keys drawn from a Zipf distribution.
    pub keys: Option<Keys>,
    /// `--stages`: the clients or the rate over time. Then `clients` is the
    /// plan's peak (closed loop) and an open loop's `rate` its mean.
    pub stages: Option<Stages>,
    /// `--duration`, if given.
    pub duration: Option<Duration>,
    /// `--requests`: each closed-loop client stops after this many.
    pub requests_per_client: Option<u64>,
    /// `--seed`: the sizes and Poisson gaps drawn from it.
    pub seed: Option<u64>,
    /// `--timeout`: a client gives up on an attempt after this and closes its
    /// connection.
    pub timeout: Duration,
    /// `--retries`, `--backoff`, `--retry-budget`.
    pub retry: RetryPolicy,
    /// `--connections`: reused, or one per attempt.
    pub connections: Connections,
    /// `--send`: each element's size, or its bytes.
    pub send: Sending,
}

/// What a request carries (`--send`).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Sending {
    /// The element's size as JSON, `{"size": N}`: nothing to copy, the driver at its fastest.
    #[default]
    Size,
    /// The element's bytes, `application/octet-stream`.
    Bytes,
}

/// How a client holds its connections (`--connections`).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Connections {
    /// One connection per client, opened before the run and reused.
    #[default]
    KeepAlive,
    /// A new connection for every attempt, closed after its reply.
    PerRequest,
}

impl Connections {
    pub fn name(self) -> &'static str {
        match self {
            Connections::KeepAlive => "keep-alive",
            Connections::PerRequest => "per-request",
        }
    }
}

/// How sends are paced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pacing {
    /// Each client: send, wait for the reply, think, repeat. A slow server slows
    /// the clients down, which is the original's behaviour and the seed's story.
    Closed {
        think_time: Duration,
        /// Client starts spread evenly over this long; zero starts them all at once.
        ramp_up: Duration,
    },
    /// Sends leave on a schedule of `rate` per second in total, whatever the
    /// server does; latency counts from the scheduled time (no coordinated omission).
    Open { rate: f64, arrivals: Arrivals },
}

impl Pacing {
    /// The original's client: think 1 s after each reply, all starting together.
    pub const ORIGINAL: Pacing = Pacing::Closed {
        think_time: Duration::from_secs(1),
        ramp_up: Duration::ZERO,
    };

    pub fn mode(&self) -> &'static str {
        match self {
            Pacing::Closed { .. } => "closed",
            Pacing::Open { .. } => "open",
        }
    }
}

/// The spacing of open-loop sends.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// Evenly spaced, 1/rate apart.
    Uniform,
    /// Exponentially distributed gaps with mean 1/rate, as independent users arrive.
    Poisson,
    /// A herd a second: each second's sends all due at its start (rate sends at
    /// 0 s, the next rate at 1 s, ...), as clients that a deploy, a cron job or a
    /// timeout sends back together.
    Bursts,
}

/// The highest open-loop rate, well above what one process can send; it keeps the
/// driver's schedule's arithmetic exact.
pub const MAX_RATE: f64 = 10_000_000.0;

/// The most retries a request may have: beyond this a load is a flood, not a client.
pub const MAX_RETRIES: u32 = 100;

/// How long a load runs when it names neither a duration nor a request count.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(60);

/// Why a load's words cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LoadError(String);

impl LoadError {
    /// clap's complaint about a scenario's words, in one line, made from what clap
    /// knows of it (its kind and context: the word, the value, the flag it clashes
    /// with, the values it takes), not from the text clap renders for a terminal,
    /// which carries a usage line and a pointer to `--help` that a scenario has no
    /// use for; where the word is not a flag, with the flags a load takes.
    fn from_clap(e: &clap::Error) -> LoadError {
        use clap::error::{ContextKind, ErrorKind};
        let said = |kind| e.get(kind).map(ToString::to_string);
        let arg = said(ContextKind::InvalidArg).unwrap_or_default();
        let value = said(ContextKind::InvalidValue).unwrap_or_default();
        let text = match e.kind() {
            ErrorKind::UnknownArgument => format!(
                "unexpected argument '{arg}'{}; a load takes {}, each with its value",
                said(ContextKind::SuggestedArg)
                    .map_or(String::new(), |s| format!(" (did you mean '{s}'?)")),
                flag_names()
            ),
            ErrorKind::InvalidValue if value.is_empty() => {
                format!("a value is required for '{arg}' but none was supplied")
            }
            ErrorKind::InvalidValue => format!(
                "invalid value '{value}' for '{arg}'{}",
                said(ContextKind::ValidValue)
                    .map_or(String::new(), |v| format!(" [possible values: {v}]"))
            ),
            ErrorKind::ValueValidation => format!(
                "invalid value '{value}' for '{arg}'{}",
                std::error::Error::source(e).map_or(String::new(), |why| format!(": {why}"))
            ),
            ErrorKind::ArgumentConflict => match said(ContextKind::PriorArg) {
                Some(prior) if prior == arg => {
                    format!("the argument '{arg}' cannot be used multiple times")
                }
                Some(prior) => format!("the argument '{arg}' cannot be used with '{prior}'"),
                None => format!("the argument '{arg}' cannot be used with the others given"),
            },
            ErrorKind::MissingRequiredArgument => {
                format!("the following required arguments were not provided: {arg}")
            }
            // The kinds the load's flags cannot meet (a subcommand, help): clap's
            // description of the kind, and the word where it names one.
            kind => {
                let what = kind.as_str().unwrap_or("the words do not parse");
                match arg.is_empty() {
                    true => what.to_owned(),
                    false => format!("{what}: '{arg}'"),
                }
            }
        };
        LoadError(text)
    }
}

/// The load's flags, `--n, ... and --retry-budget`, in their declaration's
/// order: what a word that is none of them is told. Read from the declaration,
/// so a new flag is listed without anyone listing it.
fn flag_names() -> String {
    use clap::CommandFactory;
    let flags: Vec<String> = LoadWords::command()
        .get_arguments()
        .filter_map(|arg| arg.get_long())
        .map(|long| format!("--{long}"))
        .collect();
    match flags.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

impl Default for Load {
    /// No flags: one client of the original's closed loop, 1 KiB elements, for
    /// [`DEFAULT_DURATION`].
    fn default() -> Self {
        // Every flag has a default that its own parser reads, a test holds.
        Load::parse(&[]).expect("a load of no words parses")
    }
}

impl Load {
    /// Reads a load from the words a user would give sim-clients.
    pub fn parse(words: &[String]) -> Result<Load, LoadError> {
        let args = LoadWords::try_parse_from(words)
            .map_err(|e| LoadError::from_clap(&e))?
            .load;
        Load::from_args(&args, words.to_vec())
    }

    /// What the flags mean, with `words` kept to show them back; the checks that
    /// span several flags are made here.
    pub fn from_args(args: &LoadArgs, words: Vec<String>) -> Result<Load, LoadError> {
        let retry = RetryPolicy {
            retries: args.retries,
            backoff: args.backoff,
            budget_percent: args.retry_budget,
        };
        if retry.retries == 0 && (retry.backoff != Backoff::None || retry.budget_percent.is_some())
        {
            return Err(LoadError(
                "`--backoff` and `--retry-budget` shape retries: give `--retries N` too".into(),
            ));
        }
        if args.send == Sending::Bytes && args.keys.is_some() {
            return Err(LoadError(
                "`--keys` reads elements, and a read carries no element: drop `--send bytes`"
                    .into(),
            ));
        }
        let (pacing, clients) = pacing_of(args)?;
        Ok(Load {
            words,
            clients,
            stages: args.stages.clone(),
            pacing,
            payload: args.payload_size,
            keys: args.keys,
            duration: args.duration,
            requests_per_client: args.requests,
            seed: args.seed,
            timeout: args.timeout,
            retry,
            connections: args.connections,
            send: args.send,
        })
    }

    /// The words, as typed.
    pub fn words(&self) -> &[String] {
        &self.words
    }

    /// The words without `--duration` and its value: the load as a check or a demo
    /// runs it for a time of its own.
    pub fn words_without_duration(&self) -> Vec<String> {
        flag_values(&self.words)
            .into_iter()
            .filter(|(flag, _)| flag != "--duration")
            .flat_map(|(flag, value)| [flag, value])
            .collect()
    }

    /// This load with some of its clients' ways changed: each flag of `change`
    /// replaces the same flag here, or is added. Only the flags of
    /// [`CLIENT_POLICY_FLAGS`] may change (how clients connect, give up and
    /// retry: a client-side fix): the rest are the ticket's load, which a fix does not
    /// choose.
    pub fn with_changes(&self, change: &[String]) -> Result<Load, LoadError> {
        let changed = flag_values(change);
        if let Some((flag, _)) = changed
            .iter()
            .find(|(flag, _)| !CLIENT_POLICY_FLAGS.contains(&flag.as_str()))
        {
            return Err(LoadError(format!(
                "`{flag}` is the ticket's load, not the clients' way of connecting or retrying; a client-side change takes {}",
                CLIENT_POLICY_FLAGS.join(", ")
            )));
        }
        let mut words: Vec<String> = flag_values(&self.words)
            .into_iter()
            .filter(|(flag, _)| !changed.iter().any(|(f, _)| f == flag))
            .flat_map(|(flag, value)| [flag, value])
            .collect();
        words.extend(changed.into_iter().flat_map(|(flag, value)| [flag, value]));
        Load::parse(&words)
    }

    /// The same load running for `duration`: the duration in its words too.
    pub fn with_duration(&self, duration: Duration) -> Load {
        let mut words = self.words_without_duration();
        words.extend(["--duration".to_owned(), text_of(duration)]);
        Load {
            words,
            duration: Some(duration),
            ..self.clone()
        }
    }

    /// The think time of a closed loop (`None` for an open one).
    pub fn think_time(&self) -> Option<Duration> {
        match self.pacing {
            Pacing::Closed { think_time, .. } => Some(think_time),
            Pacing::Open { .. } => None,
        }
    }

    /// When the run stops: its duration (a plan's length), and a count per
    /// client. With neither given, it runs [`DEFAULT_DURATION`].
    pub fn stop(&self) -> (Option<Duration>, Option<u64>) {
        if let Some(stages) = &self.stages {
            return (Some(stages.total()), None);
        }
        match (self.duration, self.requests_per_client) {
            (None, None) => (Some(DEFAULT_DURATION), None),
            given => given,
        }
    }
}

/// How the flags pace the sends, and how many clients (or connections) carry
/// them: a closed-loop plan's clients are its peak.
fn pacing_of(args: &LoadArgs) -> Result<(Pacing, usize), LoadError> {
    let open_rate = match (&args.rate, &args.stages) {
        (Some(rate), _) => Some(*rate),
        (None, Some(plan)) if plan.unit == Unit::Rate => Some(plan.mean()),
        _ => None,
    };
    if let Some(rate) = open_rate {
        let arrivals = args.arrivals;
        return Ok((Pacing::Open { rate, arrivals }, args.clients));
    }
    if args.arrivals != Arrivals::Uniform {
        return Err(LoadError(
            "`--arrivals` spaces an open loop's sends: give `--rate R`, or a plan of rates (`--stages 'ramp 300/s 1m'`)".into(),
        ));
    }
    let think_time = args.think_time;
    let ramp_up = args.ramp_up;
    let clients = match &args.stages {
        None => args.clients,
        Some(plan) => {
            let peak = plan.peak() as usize;
            if args.clients != 1 && args.clients != peak {
                return Err(LoadError(format!(
                    "a plan of clients sets them ({peak} at its peak): drop `--n {}`",
                    args.clients
                )));
            }
            peak
        }
    };
    Ok((
        Pacing::Closed {
            think_time,
            ramp_up,
        },
        clients,
    ))
}

/// The flags a client-side change may set ([`Load::with_changes`]).
/// How clients hold their connections is theirs to change too: keep-alive is
/// the clients' fix for a server that is slow to take new ones.
pub const CLIENT_POLICY_FLAGS: [&str; 4] =
    ["--retries", "--backoff", "--retry-budget", "--connections"];

/// Words as (flag, value) pairs, `--flag=value` split; a flag without its value
/// (which [`Load::parse`] refuses) keeps an empty one.
fn flag_values(words: &[String]) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    let mut iter = words.iter();
    while let Some(word) = iter.next() {
        match word.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                pairs.push((flag.to_owned(), value.to_owned()))
            }
            _ => pairs.push((word.clone(), iter.next().cloned().unwrap_or_default())),
        }
    }
    pairs
}

impl TryFrom<Vec<String>> for Load {
    type Error = LoadError;

    fn try_from(words: Vec<String>) -> Result<Self, Self::Error> {
        Load::parse(&words)
    }
}

impl From<Load> for Vec<String> {
    fn from(load: Load) -> Self {
        load.words
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn a_client_side_change_replaces_or_adds_retry_flags_only() {
        let ticket = Load::parse(&words("--rate 224 --n 1000 --timeout 1s --retries 3")).unwrap();
        let budget = ticket.with_changes(&words("--retry-budget 10%")).unwrap();
        assert_eq!(budget.retry.budget_percent, Some(10.0));
        assert_eq!(budget.retry.retries, 3, "the rest kept");
        assert_eq!(
            budget.words().join(" "),
            "--rate 224 --n 1000 --timeout 1s --retries 3 --retry-budget 10%"
        );
        let fewer = ticket.with_changes(&words("--retries=1")).unwrap();
        assert_eq!(fewer.retry.retries, 1);
        assert_eq!(
            fewer.words().join(" "),
            "--rate 224 --n 1000 --timeout 1s --retries 1"
        );
        for cheat in ["--rate 100", "--timeout 10s", "--n 5"] {
            let err = ticket.with_changes(&words(cheat)).unwrap_err().to_string();
            assert!(err.contains("the ticket's load"), "{cheat}: {err}");
        }
        let bad = ticket
            .with_changes(&words("--backoff sometimes"))
            .unwrap_err();
        assert!(bad.to_string().contains("sometimes"), "{bad}");
    }

    #[test]
    fn a_load_sends_sizes_unless_told_bytes_and_never_bytes_with_reads() {
        assert_eq!(Load::parse(&words("--n 2")).unwrap().send, Sending::Size);
        let bytes = Load::parse(&words("--n 2 --send bytes")).unwrap();
        assert_eq!(bytes.send, Sending::Bytes);
        let reads = Load::parse(&words("--n 2 --send bytes --keys zipf(10,1.2)")).unwrap_err();
        assert!(reads.to_string().contains("drop `--send bytes`"), "{reads}");
        assert!(Load::parse(&words("--send json")).is_err());
    }

    #[test]
    fn a_load_reads_its_words_and_shows_them_back() {
        let load = Load::parse(&words("--n 135 --think-time 1s --duration 60s")).unwrap();
        assert_eq!(load.clients, 135);
        assert_eq!(load.pacing, Pacing::ORIGINAL);
        assert_eq!(load.think_time(), Some(Duration::from_secs(1)));
        assert_eq!(load.duration, Some(Duration::from_secs(60)));
        assert_eq!(load.payload, PayloadSize::Fixed { bytes: 1024 });
        assert_eq!(
            load.words().join(" "),
            "--n 135 --think-time 1s --duration 60s"
        );
        let short = load.with_duration(Duration::from_secs(10));
        assert_eq!(
            short.words().join(" "),
            "--n 135 --think-time 1s --duration 10s"
        );
        assert_eq!(short.duration, Some(Duration::from_secs(10)));

        let open = Load::parse(&words("--n=200 --rate 400 --arrivals poisson --seed 7")).unwrap();
        assert_eq!(
            open.pacing,
            Pacing::Open {
                rate: 400.0,
                arrivals: Arrivals::Poisson
            }
        );
        assert_eq!(open.think_time(), None);
        assert_eq!(open.stop(), (Some(DEFAULT_DURATION), None));
        assert_eq!(open.seed, Some(7));
        let empty = Load::default();
        assert_eq!((empty.clients, empty.pacing), (1, Pacing::ORIGINAL));
        assert_eq!(empty.stop(), (Some(DEFAULT_DURATION), None));
        assert!(empty.words().is_empty());
    }

    #[test]
    fn bad_loads_say_which_word_is_wrong() {
        for (bad, needle) in [
            ("--n lots", "invalid value 'lots' for '--n"),
            ("--n 0", "at least one client"),
            ("--n", "a value is required for '--n"),
            ("--n 1 --n 2", "cannot be used multiple times"),
            ("--think-time soon", "`soon` is not a duration"),
            ("--rate -3", "above 0"),
            ("--rate 10 --think-time 1s", "cannot be used with"),
            ("--arrivals poisson", "give `--rate R`"),
            ("--stages x", "invalid value 'x' for '--stages"),
            (
                "--arrivals bursty --rate 1",
                "[possible values: uniform, poisson, bursts]",
            ),
            ("--payload-size huge", "huge"),
            ("--target http://x", "a load takes --n"),
            ("--rat 5", "did you mean '--rate'?"),
            ("--target http://x", "--keys, --connections"),
            (
                "--target http://x",
                "--backoff and --retry-budget, each with its value",
            ),
        ] {
            let e = Load::parse(&words(bad)).unwrap_err().to_string();
            assert!(e.contains(needle), "{bad}: {e}");
            // A scenario's TOML error quotes it: one line, no usage, no `--help`.
            assert!(
                !e.contains('\n') && !e.contains("Usage") && !e.contains("help"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn a_plan_sets_the_clients_or_the_rate_and_the_length() {
        let plan = |extra: &[&str]| {
            let mut w = vec![
                "--stages".to_owned(),
                "ramp 50 10s, peak: spike 80 5s, hold 5s".to_owned(),
            ];
            w.extend(extra.iter().map(|s| (*s).to_owned()));
            Load::parse(&w)
        };
        let closed = plan(&["--think-time", "100ms"]).unwrap();
        assert_eq!(closed.clients, 80, "the peak");
        assert_eq!(closed.stop(), (Some(Duration::from_secs(20)), None));
        assert_eq!(closed.think_time(), Some(Duration::from_millis(100)));
        assert_eq!(closed.stages.as_ref().unwrap().stages[1].name, "peak");
        for (extra, needle) in [
            (&["--duration", "5s"][..], "cannot be used with"),
            (&["--rate", "5"], "cannot be used with"),
            (&["--n", "7"], "drop `--n 7`"),
            (&["--arrivals", "poisson"], "give `--rate R`"),
        ] {
            let e = plan(extra).unwrap_err().to_string();
            assert!(e.contains(needle), "{extra:?}: {e}");
        }
        let open = Load::parse(&words("--n 20 --arrivals poisson --stages=ramp_100/s_10s"));
        assert!(open.is_err(), "a plan's words are one value");
        let w: Vec<String> = [
            "--n",
            "20",
            "--arrivals",
            "poisson",
            "--stages",
            "ramp 100/s 10s, hold 10s",
        ]
        .map(str::to_owned)
        .into();
        let open = Load::parse(&w).unwrap();
        assert_eq!(open.clients, 20, "the pool");
        assert_eq!(
            open.pacing,
            Pacing::Open {
                rate: 75.0,
                arrivals: Arrivals::Poisson
            }
        );
    }

    #[test]
    fn clients_that_give_up_and_retry_read_their_words() {
        let load = Load::parse(&words(
            "--n 50 --rate 100 --timeout 200ms --retries 3 --backoff exp-jitter(10ms,1s) --retry-budget 10%",
        ))
        .unwrap();
        assert_eq!(load.timeout, Duration::from_millis(200));
        assert_eq!(
            load.retry,
            RetryPolicy {
                retries: 3,
                backoff: Backoff::ExpJitter {
                    base: Duration::from_millis(10),
                    cap: Duration::from_secs(1)
                },
                budget_percent: Some(10.0),
            }
        );
        let plain = Load::parse(&[]).unwrap();
        assert_eq!(
            (plain.timeout, plain.retry),
            (Duration::from_secs(30), RetryPolicy::NONE)
        );
        for (bad, needle) in [
            ("--backoff exp(1ms,1s)", "give `--retries N`"),
            ("--retries 2 --backoff exp(1s,1ms)", "CAP at least BASE"),
            ("--retries 2 --backoff linear(1ms,1s)", "not a backoff"),
            ("--retries 500", "0..=100"),
            ("--retries 1 --retry-budget 150", "0 to 100"),
            ("--timeout 0", "wait for something"),
        ] {
            let e = Load::parse(&words(bad)).unwrap_err().to_string();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }
}
