//! `system-simulator workshop`: the exercises of docs/workshop/, one per bundled
//! scenario, in the workshop's order.
//!
//! - `workshop list`: the exercises, numbered, each with its one-line ticket;
//! - `workshop start NAME`: the server in that scenario (as `serve --scenario
//!   NAME`, on the usual ports), the ticket, the load to run and the tracing
//!   commands with this process's pid;
//! - `workshop check [NAME]`: the win condition (`check/`), exit 0 when solved
//!   and 1 when not;
//! - `workshop figures [NAME]`: each fix before and after, as the pages show it
//!   (`figures.rs`; `--write` updates the pages).
//!
//! The exercises are the scenarios themselves (`scenarios/*.toml`: `headline`,
//! `ticket`, `[[check]]`), so a page, the server and the check cannot disagree.

pub mod before;
pub mod check;
pub mod confine;
pub mod drill;
pub mod figures;
pub mod fit;
pub mod progress;
pub mod retried_once;
pub mod unwritten_watch;

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};

use crate::serve::ServeArgs;
use simulator_service::scenario::{self, Scenario};
use simulator_service::server::Answers;

#[derive(Debug, Args)]
pub struct WorkshopArgs {
    #[command(subcommand)]
    pub command: WorkshopCommand,
}

impl WorkshopArgs {
    /// `workshop start`: this command runs a server.
    pub fn starts_a_server(&self) -> bool {
        matches!(self.command, WorkshopCommand::Start { .. })
    }
}

#[derive(Debug, Subcommand)]
pub enum WorkshopCommand {
    /// The exercises, in order, with their one-line tickets.
    List {
        /// Print the README's table of the exercises (number, page, ticket).
        #[arg(long)]
        markdown: bool,
    },
    /// Start the server in an exercise's scenario and print its ticket, the load to
    /// run and the tracing commands.
    Start {
        /// The exercise: a scenario name or its number in `workshop list`.
        exercise: String,
        #[command(flatten)]
        serve: Box<ServeArgs>,
    },
    /// The win condition: run the ticket's load against the server for a window and
    /// judge it; exit 0 when every condition holds, 1 when not.
    Check(CheckArgs),
    /// Measure every fix of an exercise (or of all) before and after, on fresh
    /// servers, as the pages' figures; print the Markdown, or write it into the pages.
    Figures {
        /// The exercise [default: all of them].
        exercise: Option<String>,
        /// Each window of load (at least 6 s).
        #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
        duration: Duration,
        /// Write the figures into docs/workshop/NN-NAME.md (run from the repository).
        #[arg(long, conflicts_with = "fixes")]
        write: bool,
        /// Only these fixes of the exercise (and its "before"), comma-separated:
        /// part of its block, for a machine that cannot hold all its servers at
        /// once; `--write` takes the whole block only.
        #[arg(
            long,
            value_delimiter = ',',
            value_name = "FIX,...",
            requires = "exercise"
        )]
        fixes: Vec<String>,
        /// Measure the "before" and every fix at the same time, each on its own
        /// server, as an exercise with an incident always is: one window instead
        /// of one a server, with the servers sharing the CPU. For a quick look
        /// (and the test suite's light exercises); the pages' figures are each
        /// server alone, so not with `--write`.
        #[arg(long, conflicts_with = "write")]
        at_once: bool,
        /// Start each server as the drill's draw of the exercise's cause
        /// (`drill start` on the seed that draws it, in the drill's production
        /// dressing) and judge it by the drill's check: the exercise's figures
        /// as a drill serves it. Not with `--write`.
        #[arg(long, conflicts_with = "write")]
        as_drill: bool,
        /// Measure on servers with less CPU than this machine has.
        #[command(flatten)]
        confinement: confine::Confinement,
    },
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The exercise [default: the scenario the server runs].
    pub exercise: Option<String>,
    /// The server's base URL.
    #[arg(long, default_value = "http://127.0.0.1:7878")]
    pub target: String,
    /// How long the check's own load runs (at least 6 s; with an incident, at
    /// least until 25 s after it ends).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub duration: Duration,
    /// A client-side fix: the clients' retry flags to change in the ticket's
    /// load, as one string, e.g. --client-change '--retry-budget 10%'
    /// (only --retries, --backoff and --retry-budget).
    #[arg(long, value_name = "FLAGS", allow_hyphen_values = true)]
    pub client_change: Option<String>,
    /// The server's admin token, when it was started with one: the check begins
    /// the scenario's incident and shows on its live view with it.
    #[arg(long, env = "ISIM_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    #[command(flatten)]
    pub room: crate::room::seat::RoomArgs,
    /// Keep the check's run in a recording (every probe and /stats a second,
    /// `system-simulator record`'s file), to replay (`trace NAME --from FILE`)
    /// or open in Perfetto (`export`) beside another check's.
    #[arg(long, value_name = "FILE.isim")]
    pub record: Option<std::path::PathBuf>,
    /// Keep this check as the exercise's before, whatever it reads: later
    /// checks are measured against it [default: the first check that
    /// failed is the before].
    #[arg(long)]
    pub new_before: bool,
}

/// The exercise called `name` (its own name or its cause's), or numbered `name`
/// in the list (from 1). A wrong name is told the exercises' names only: the
/// causes' would give every answer away.
pub fn exercise(name: &str) -> anyhow::Result<Scenario> {
    if let Some(found) = scenario::bundled_named(name)? {
        return Ok(found);
    }
    let all = scenario::bundled()?;
    if let Ok(n) = name.parse::<usize>() {
        return n
            .checked_sub(1)
            .and_then(|i| all.get(i).cloned())
            .ok_or_else(|| anyhow::anyhow!("there are exercises 1 to {}, not {n}", all.len()));
    }
    if name.ends_with(".toml") || name.contains('/') {
        return Ok(Scenario::load(name)?);
    }
    let names: Vec<&str> = all.iter().map(Scenario::visible_name).collect();
    anyhow::bail!(
        "no exercise is called `{name}`; the exercises: {} (or their numbers, 1 to {})",
        names.join(", "),
        names.len()
    )
}

/// Runs a `workshop` subcommand; the exit status is the check's verdict.
pub async fn run(args: WorkshopArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        WorkshopCommand::List { markdown: false } => list(),
        WorkshopCommand::List { markdown: true } => {
            simulator_service::os::print_listing(&markdown_list()?)?;
            Ok(ExitCode::SUCCESS)
        }
        WorkshopCommand::Start { exercise, serve } => start(&exercise, *serve).await,
        WorkshopCommand::Figures {
            exercise,
            duration,
            write,
            fixes,
            at_once,
            as_drill,
            confinement,
        } => {
            let chosen = match exercise.as_deref() {
                Some(name) => vec![only_fixes(self::exercise(name)?, &fixes)?],
                None => scenario::bundled()?,
            };
            let order = match at_once {
                true => figures::Order::AtOnce,
                false => figures::Order::AsTheExerciseSays,
            };
            measure_figures(chosen, duration, write, order, &confinement, as_drill).await
        }
        WorkshopCommand::Check(args) => check_exercise(&args).await,
    }
}

/// `workshop list`: the exercises in order, with what may not fit this machine.
fn list() -> anyhow::Result<ExitCode> {
    use std::fmt::Write;
    let machine = crate::local::machine();
    let mut out = String::new();
    for (i, s) in scenario::bundled()?.iter().enumerate() {
        writeln!(
            out,
            "{:>2}. {:<22} ({}) {}",
            i + 1,
            s.visible_name(),
            s.seed_words(),
            s.headline
        )?;
        for warning in fit::warnings(s, &machine) {
            writeln!(out, "      on this machine: {warning}")?;
        }
    }
    writeln!(
        out,
        "\nstart one with `system-simulator workshop start NAME`; docs/workshop/ has the pages"
    )?;
    simulator_service::os::print_listing(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// The README's table of the exercises: each one's number, its page, and the
/// ticket's headline (what an attendee is told, never the cause).
pub fn markdown_list() -> anyhow::Result<String> {
    use std::fmt::Write;
    let mut out = String::from("| # | exercise | the ticket |\n| --- | --- | --- |\n");
    for (i, s) in scenario::bundled()?.iter().enumerate() {
        let n = i + 1;
        let name = s.visible_name();
        writeln!(
            out,
            "| {n} | [{name}](docs/workshop/{n:02}-{name}.md) | {} |",
            s.headline
        )?;
    }
    Ok(out)
}

/// `workshop start NAME`: the server in the exercise's scenario, its ticket printed.
async fn start(name: &str, mut serve: ServeArgs) -> anyhow::Result<ExitCode> {
    let chosen = exercise(name)?;
    if let Some(other) = &serve.scenario {
        anyhow::bail!("`workshop start {name}` starts its own scenario; drop --scenario {other}");
    }
    serve.scenario = Some(chosen.name.clone());
    // The attendee reads the cause and the fix in the hints, when ready.
    serve.answers.get_or_insert(Answers::Hidden);
    crate::serve::serve_with(serve, |pid, data_url| print_ticket(&chosen, pid, data_url)).await?;
    Ok(ExitCode::SUCCESS)
}

/// The exercise with only the fixes named (all of them when none is).
fn only_fixes(mut scenario: Scenario, names: &[String]) -> anyhow::Result<Scenario> {
    if names.is_empty() {
        return Ok(scenario);
    }
    if let Some(unknown) = names
        .iter()
        .find(|n| !scenario.fixes.iter().any(|f| &f.name == *n))
    {
        let known: Vec<&str> = scenario.fixes.iter().map(|f| f.name.as_str()).collect();
        anyhow::bail!(
            "{} has no fix `{unknown}`; its fixes are {}",
            scenario.name,
            known.join(", ")
        );
    }
    scenario.fixes.retain(|f| names.contains(&f.name));
    Ok(scenario)
}

/// `workshop figures [NAME]`: the pages' before/after figures, printed or written.
async fn measure_figures(
    chosen: Vec<Scenario>,
    duration: Duration,
    write: bool,
    order: figures::Order,
    confinement: &confine::Confinement,
    as_drill: bool,
) -> anyhow::Result<ExitCode> {
    for s in chosen {
        let window = check::window_for(&s, duration);
        let serving = match as_drill {
            true => figures::Serving::drill_of(&s)?,
            false => figures::Serving::Exercise,
        };
        let block = figures::measure(&s, window, order, confinement, &serving).await?;
        if write {
            let page = figures::page_of(std::path::Path::new("."), &s)?;
            figures::write_into(&page, &block)?;
            println!("wrote the figures of {}", page.display());
        } else {
            println!("{block}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `workshop check [NAME]`: the win condition measured; exit 0 when it holds.
async fn check_exercise(args: &CheckArgs) -> anyhow::Result<ExitCode> {
    let target = args.target.as_str();
    let chosen = match &args.exercise {
        Some(name) => exercise(name)?,
        None => Scenario::load(&simulator_api::client::stats(target).await?.scenario)?,
    };
    let window = check::window_for(&chosen, args.duration);
    let change = match &args.client_change {
        None => Vec::new(),
        Some(text) => shlex::split(text)
            .with_context(|| format!("--client-change {text:?}: unbalanced quotes"))?,
    };
    announce(&chosen, target, window, &chosen.load_with(&change)?);
    let room = crate::room::seat::SeatLink::open(&args.room).await;
    let audience = progress::Audience {
        target: target.to_owned(),
        admin_token: args.admin_token.clone(),
        room: room.as_ref().map(|r| r.sender()),
        warned: Default::default(),
    };
    let recording = match &args.record {
        Some(path) => {
            Some(crate::recording::record::beside(target, args.admin_token.as_deref(), path).await?)
        }
        None => None,
    };
    let judged = check::check(&chosen, &audience, window, &change).await;
    if let Some(recording) = recording {
        match recording.end().await {
            Ok(kept) => eprintln!("workshop check: the run is kept in {kept}"),
            Err(e) => eprintln!("workshop check: the recording failed: {e:#}"),
        }
    }
    let verdict = match judged {
        Ok(verdict) => verdict,
        Err(e) => {
            // The room hears it too, or the seat's cell would run forever.
            if let (Some(link), Some(room)) = (&audience.room, room) {
                let _ = link.send(check::Verdict::error(&chosen, &e).as_progress(window));
                drop(audience);
                room.finish().await;
            }
            return Err(e);
        }
    };
    progress::tell_verdict(&audience, &verdict.as_progress(window)).await;
    drop(audience);
    print!("{}", verdict.render());
    if let Some(room) = room {
        room.finish().await;
    }
    measure_against_the_before(args, &chosen, &verdict).await;
    Ok(if verdict.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// What the check is about to run: its load, its window and its incident.
fn announce(chosen: &Scenario, target: &str, window: Duration, load: &simulator_api::Load) {
    println!(
        "workshop check {} against {target}: {} s of the ticket's load (sim-clients {})",
        chosen.visible_name(),
        window.as_secs(),
        crate::local::shell_line(&load.words_without_duration())
    );
    if let Some(incident) = chosen.incident.first() {
        println!(
            "  with its incident {} s in, for {} s: {}",
            incident.at.as_secs_f64(),
            incident.lasts.as_secs_f64(),
            incident.summary
        );
    }
}

/// The check against the exercise's before (`before.rs`), printed under the
/// verdict and, with the room's line, sent as the seat's before and after.
async fn measure_against_the_before(args: &CheckArgs, chosen: &Scenario, verdict: &check::Verdict) {
    let exercise = chosen.visible_name();
    let seat = args.room.room.as_ref().and(args.room.seat.as_deref());
    let Some(path) = before::file(seat, exercise) else {
        return; // no home to keep it in: nothing to say each time
    };
    match before::after_check(&path, verdict, args.new_before) {
        before::Outcome::Nothing => {}
        before::Outcome::Kept(path) => println!(
            "kept as the before of {exercise} ({}): each later check of it is measured against it (--new-before keeps another)",
            path.display()
        ),
        before::Outcome::Trouble(why) => eprintln!("note: no before and after: {why}"),
        before::Outcome::Compared(c) => {
            println!(
                "\nmeasured against the before (each second resampled in blocks, 99 % intervals; `~` is no change told apart from noise):\n{}",
                simulator_clients::compare::render(&c)
            );
            if args.room.room.is_some() {
                let names = [c.before.as_str(), c.after.as_str()];
                match crate::room::seat::report_comparison(&args.room, exercise, names, &c).await {
                    Ok(link) => println!("the room has this before and after: {link}"),
                    Err(why) => eprintln!("note: the room does not show this before and after: {why}"),
                }
            }
        }
    }
}

/// The ticket and what to run, printed after the server's own banner.
fn print_ticket(s: &Scenario, pid: u32, data_url: &str) {
    let load = crate::local::shell_line(s.load.words());
    let target = match data_url {
        "http://127.0.0.1:7878" => String::new(),
        other => format!(" --target {other}"),
    };
    println!(
        "\n=== exercise {} ({}) ===\n{}",
        s.visible_name(),
        s.seed_words(),
        s.ticket.trim()
    );
    println!("\nput the ticket's load on it (another terminal):");
    println!("  cargo run --release -- clients --target {data_url} {load}");
    println!("look inside (root):");
    for command in simulator_service::server::trace_commands(pid, &s.scripts) {
        println!("  {command}");
    }
    if let Some(incident) = s.incident.first() {
        println!(
            "replay the incident ({}; the server puts it back after {} s):",
            incident.summary,
            incident.lasts.as_secs_f64()
        );
        println!("  curl -X PUT {data_url}/admin/incident");
    }
    println!("when you think it is fixed (stop your load first; the check brings its own):");
    println!(
        "  cargo run --release -- workshop check {}{target}",
        s.visible_name()
    );
    if let Ok(page) = figures::page_of(std::path::Path::new(""), s) {
        println!("hints and the solution: {}\n", page.display());
    }
    for warning in fit::warnings(s, &crate::local::machine()) {
        println!("NOTE, on this machine: {warning}\n");
    }
}
