//! `system-simulator drill`: a rehearsal of the unknown (issue 99). Every
//! exercise tells its attendee where they are; a drill does not. A seed draws
//! one of the exercises' causes, or nothing at all, and the attendee gets a
//! complaint in a customer's words, the load that shows it, and a server that
//! names nothing: they measure, name the cause, and fix it live.
//!
//! - `drill start [--seed S]`: the drawn server (`draw.rs`, dressed as a
//!   production service by `dress.rs`), its complaint and the load;
//! - `drill diagnose --seed S CAUSE`: the diagnosis noted by the server (the
//!   first is the one of record) and scored right, partly right (the same
//!   resource) or wrong (`diagnosis.rs`);
//! - `drill check --seed S`: the fix judged by the drawn cause's own win
//!   condition (for nothing drawn, a healthy service's), exit 0 when it holds;
//! - `drill causes`: the names a diagnosis may use;
//! - `drill note WORDS`: the attendee's own step in the server's trail (a
//!   tracer run as root, which the server cannot see);
//! - `drill report --seed S`: the trail read as a path (`report.rs`): the
//!   times to the first look, the diagnosis and the fix, and the anti-methods.
//!
//! A facilitator gives the room one seed for one draw. The draw is a function
//! of the seed and the binary, so an attendee who reads the source can compute
//! it: a drill is a rehearsal, not an exam.

pub mod diagnosis;
pub mod draw;
pub mod dress;
pub mod report;

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use hyper::Method;
use simulator_api::client;
use simulator_api::trail::{DiagnosisAnswer, DiagnosisRequest, DrillFindings, Trail};
use simulator_service::scenario::Scenario;
use simulator_service::server::Answers;

use super::{check, progress};
use crate::room::seat::RoomArgs as SeatArgs;
use crate::serve::ServeArgs;
use draw::Draw;

#[derive(Debug, Args)]
pub struct DrillArgs {
    #[command(subcommand)]
    pub command: DrillCommand,
}

impl DrillArgs {
    /// `drill start`: this command runs a server.
    pub fn starts_a_server(&self) -> bool {
        matches!(self.command, DrillCommand::Start { .. })
    }
}

#[derive(Debug, Subcommand)]
pub enum DrillCommand {
    /// Start a server whose fault is drawn by the seed (or nothing is wrong),
    /// and print the customer's complaint and the load that shows it.
    Start {
        /// The draw's seed: the same seed draws the same fault on every
        /// laptop [default: a fresh one, printed].
        #[arg(long)]
        seed: Option<String>,
        #[command(flatten)]
        serve: Box<ServeArgs>,
    },
    /// Name the cause: the server notes it, and the first one named is
    /// scored right, partly right (another cause of the same resource) or
    /// wrong.
    Diagnose {
        /// The seed the drill started with.
        #[arg(long)]
        seed: String,
        /// A cause's name or its exercise's (`drill causes`), or `none`.
        cause: String,
        #[command(flatten)]
        server: DrillServer,
        #[command(flatten)]
        room: SeatArgs,
    },
    /// Add your own words to the trail, now: what you ran that the server
    /// cannot see (a tracer as root, `top`, `ss`).
    Note {
        /// What you ran or saw.
        words: String,
        #[command(flatten)]
        server: DrillServer,
    },
    /// The trail the server kept: every look, change, check and diagnosis
    /// with its time, the time to each milestone, and the anti-methods seen.
    Report {
        /// The seed the drill started with.
        #[arg(long)]
        seed: String,
        #[command(flatten)]
        server: DrillServer,
        #[command(flatten)]
        room: SeatArgs,
        /// The trail a recording of the drill kept (`record`, `workshop check
        /// --record`), instead of the server's.
        #[arg(long, value_name = "FILE.isim", conflicts_with = "target")]
        from: Option<std::path::PathBuf>,
    },
    /// Judge the fix with the drawn cause's own win condition; exit 0 when it
    /// holds and 1 when not. Its figures name what it measures: diagnose first.
    Check {
        /// The seed the drill started with.
        #[arg(long)]
        seed: String,
        #[command(flatten)]
        server: DrillServer,
        #[command(flatten)]
        room: SeatArgs,
        /// How long the check's own load runs (at least 6 s, longer where the
        /// drawn check needs it).
        #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
        duration: Duration,
    },
    /// The causes a diagnosis may name, by resource.
    Causes,
}

/// The drill's server, for the commands that speak to it.
#[derive(Debug, Clone, Args)]
pub struct DrillServer {
    /// The server's base URL.
    #[arg(long, default_value = "http://127.0.0.1:7878")]
    pub target: String,
    /// The server's admin token, when it was started with one.
    #[arg(long, env = "ISIM_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
}

/// Runs a `drill` subcommand; the exit status is the check's verdict.
pub async fn run(args: DrillArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        DrillCommand::Start { seed, serve } => start(seed, *serve).await,
        DrillCommand::Diagnose {
            seed,
            cause,
            server,
            room,
        } => {
            diagnose(&seed, &cause, &server).await?;
            tell_room(&seed, &server, &room).await?;
            Ok(ExitCode::SUCCESS)
        }
        DrillCommand::Note { words, server } => {
            let body = serde_json::to_vec(&simulator_api::trail::TrailNote { note: words })?;
            admin(&server, Method::POST, "/admin/trail", body).await?;
            println!("noted in the trail");
            Ok(ExitCode::SUCCESS)
        }
        DrillCommand::Report {
            seed,
            server,
            room,
            from,
        } => {
            let drawn = Draw::of(&seed)?;
            let trail = match &from {
                Some(path) => crate::recording::format::open(path)?.trail.with_context(|| {
                    format!("{} holds no trail: recorded by an older build, or its server refused the recorder its admin routes", path.display())
                })?,
                None => {
                    started_with(&drawn.scenario()?, &seed, &server.target).await?;
                    read_trail(&server).await?
                }
            };
            let found = report::findings(&trail, &drawn);
            print!("{}", report::render(&trail, &found));
            send_to_room(&room, &seed, &trail, &found).await;
            Ok(ExitCode::SUCCESS)
        }
        DrillCommand::Check {
            seed,
            server,
            room,
            duration,
        } => {
            let drilled = Draw::of(&seed)?.scenario()?;
            started_with(&drilled, &seed, &server.target).await?;
            let verdict = judge(&drilled, &server.target, duration).await?;
            tell_room(&seed, &server, &room).await?;
            Ok(verdict)
        }
        DrillCommand::Causes => {
            print!("{}", diagnosis::vocabulary()?);
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `drill start`: the drawn server, its complaint printed after the banner.
async fn start(seed: Option<String>, mut serve: ServeArgs) -> anyhow::Result<ExitCode> {
    if let Some(other) = &serve.scenario {
        anyhow::bail!("a drill draws its own fault; drop --scenario {other}");
    }
    let seed = seed.unwrap_or_else(draw::fresh_seed);
    let drilled = Draw::of(&seed)?.scenario()?;
    // Nothing the server serves may name the draw.
    serve.answers = Some(Answers::Hidden);
    let resolved = serve.resolve_over(drilled.clone())?;
    crate::serve::serve_resolved(serve, resolved, |pid, data_url| {
        print_complaint(&drilled, &seed, pid, data_url);
    })
    .await?;
    Ok(ExitCode::SUCCESS)
}

/// After a diagnosis or a check: the drill's report sent to the room's
/// drill column, when the room's line is given.
async fn tell_room(seed: &str, server: &DrillServer, room: &SeatArgs) -> anyhow::Result<()> {
    if room.room.is_none() {
        return Ok(());
    }
    let trail = read_trail(server).await?;
    let found = report::findings(&trail, &Draw::of(seed)?);
    send_to_room(room, seed, &trail, &found).await;
    Ok(())
}

/// `GET /admin/trail`.
async fn read_trail(server: &DrillServer) -> anyhow::Result<Trail> {
    let text = admin(server, Method::GET, "/admin/trail", Vec::new()).await?;
    Ok(serde_json::from_str(&text)?)
}

/// The findings and the trail's first steps to the room's drill column, when
/// the room's line is given; best effort: a room that cannot take them costs
/// one warning.
async fn send_to_room(room: &SeatArgs, seed: &str, trail: &Trail, found: &DrillFindings) {
    if room.room.is_none() {
        return;
    }
    let steps: Vec<_> = report::steps(trail)
        .take(simulator_api::room::ROOM_TRAIL_MAX)
        .cloned()
        .collect();
    match crate::room::seat::report_drill(room, seed, found, &steps).await {
        Ok(link) => println!("the room's drill column has it: {link}"),
        Err(why) => eprintln!("note: the room does not show this drill: {why}"),
    }
}

/// `drill diagnose`: the cause named to the server, which notes it; the
/// first one named is the one of record, and its score is printed.
async fn diagnose(seed: &str, cause: &str, server: &DrillServer) -> anyhow::Result<()> {
    let drawn = Draw::of(seed)?;
    diagnosis::named(cause)?;
    started_with(&drawn.scenario()?, seed, &server.target).await?;
    let body = serde_json::to_vec(&DiagnosisRequest {
        cause: cause.to_owned(),
    })?;
    let answer: DiagnosisAnswer =
        serde_json::from_str(&admin(server, Method::POST, "/admin/diagnosis", body).await?)?;
    let score = diagnosis::score(
        drawn.cause.as_ref(),
        diagnosis::named(&answer.of_record)?.as_ref(),
    );
    match answer.this_one_counts {
        true => println!("your diagnosis, {cause}: {score}"),
        false => println!(
            "noted; the diagnosis the report scores is your first, {}: {score}",
            answer.of_record
        ),
    }
    Ok(())
}

/// One admin call to the drill's server, its answer's text.
async fn admin(
    server: &DrillServer,
    method: Method,
    path: &str,
    body: Vec<u8>,
) -> anyhow::Result<String> {
    let token = server.admin_token.as_deref();
    let text = client::exchange(&server.target, method, path, body.into(), token).await?;
    Ok(text)
}

/// The complaint and what to run, printed after the server's banner.
fn print_complaint(s: &Scenario, seed: &str, pid: u32, data_url: &str) {
    let load = crate::local::shell_line(s.load.words());
    let target = match data_url {
        "http://127.0.0.1:7878" => String::new(),
        other => format!(" --target {other}"),
    };
    println!("\n=== drill {seed} ===\n{}", s.ticket.trim());
    println!("\nthe load that shows it (another terminal):");
    println!("  cargo run --release -- clients --target {data_url} {load}");
    println!("look inside as you would in any exercise: `doctor`, `trace`, /stats, /live, `profile`; the server is pid {pid}");
    println!("name the cause (the names: `system-simulator drill causes`):");
    println!("  cargo run --release -- drill diagnose --seed {seed} CAUSE");
    println!("when you think it is fixed (stop your load first; the check brings its own):");
    println!("  cargo run --release -- drill check --seed {seed}{target}");
    println!("the server keeps your trail; add what it cannot see (a tracer as root), and read it at the end:");
    println!("  cargo run --release -- drill note{target} \"ran bpftrace ...\"");
    println!("  cargo run --release -- drill report --seed {seed}{target}\n");
}

/// Refuses a server that was not started with `seed`: its restart-only
/// settings (the dressing's server limits, drawn by the seed) differ from
/// the seed's. Another seed's server could run another fault, and judging it
/// by this seed's check would say nothing.
async fn started_with(drilled: &Scenario, seed: &str, target: &str) -> anyhow::Result<()> {
    let stats = simulator_api::client::stats(target).await.map_err(|e| {
        anyhow::anyhow!("no drill answers at {target} ({e}): `drill start --seed {seed}`")
    })?;
    let expected = drilled.settings();
    let restart_only = dress::RESTART_KEYS;
    let differs = stats
        .config
        .texts()
        .into_iter()
        .zip(expected.texts())
        .any(|(found, seeds)| restart_only.contains(&found.0) && found.1 != seeds.1);
    if stats.scenario != draw::NAME || differs {
        anyhow::bail!(
            "the server at {target} was not started with `drill start --seed {seed}`: its settings are another draw's (or it is no drill)"
        );
    }
    Ok(())
}

/// `drill check`: the drawn cause's win condition against `target`.
async fn judge(drilled: &Scenario, target: &str, asked: Duration) -> anyhow::Result<ExitCode> {
    let window = check::window_for(drilled, asked);
    println!(
        "drill check against {target}: {} s of the complaint's load",
        window.as_secs()
    );
    let audience = progress::Audience::server(target);
    let verdict = check::check(drilled, &audience, window, &[]).await?;
    progress::tell_verdict(&audience, &verdict.as_progress(window)).await;
    drop(audience);
    print!("{}", verdict.render());
    Ok(if verdict.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
