//! The command line: every subcommand and where it goes (`serve` and its flags
//! are `serve.rs`'s, the workshop's `workshop/`, the driver's `simulator-clients`).

use clap::{Parser, Subcommand};

pub use crate::serve::ServeArgs;
use simulator_service::scenario;

/// A deliberately imperfect, USDT-instrumented data processor for practising
/// performance troubleshooting (provider `isim`).
#[derive(Debug, Parser)]
#[command(name = "system-simulator", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the data processor over HTTP (POST /requests, GET /stats, GET /metrics).
    Serve(Box<ServeArgs>),
    /// The seed in one command: the server, 135 clients for 30 s, the fix, again.
    Demo(Box<crate::demo::DemoArgs>),
    /// The load generator, the same as the `sim-clients` binary (same flags).
    Clients(Box<simulator_clients::cli::Args>),
    /// Every setting: key, flag, default, allowed values, whether it changes live.
    Settings {
        /// Print the Markdown table of docs/limits.md.
        #[arg(long)]
        markdown: bool,
    },
    /// The bundled exercises, each with its ticket's headline and its load.
    /// Their causes and fixes need --answers.
    Scenarios {
        /// Name each scenario's cause, its symptom as measured and its fixes
        /// (the facilitator's view; as a server that hides its answers, an
        /// attendee sees none of it).
        #[arg(long)]
        answers: bool,
    },
    /// Every isim probe: when it fires, its arguments and what it moves (the
    /// Markdown table of docs/tracing.md).
    Probes,
    /// The workshop's exercises: list them, start one, check a fix.
    Workshop(crate::workshop::WorkshopArgs),
    /// A rehearsal of the unknown: a fault drawn by a seed (or none), a
    /// customer's complaint, a diagnosis scored and a fix judged.
    Drill(crate::workshop::drill::DrillArgs),
    /// A bundled script's report without root or a tracer: the server's probe
    /// tap (GET /admin/tap) runs through the script's logic here.
    Trace(crate::trace::TraceArgs),
    /// Keep a run: every probe the tap gives and /stats a second, into a file
    /// that `trace NAME --from FILE` replays.
    Record(crate::recording::record::RecordArgs),
    /// A recording as a timeline that Perfetto's UI opens: a slice a request,
    /// its phases inside, counters and the changes of settings.
    Export(crate::recording::export::ExportArgs),
    /// A recording served as the live view (its page, charts and diagram's
    /// badges), at its own pace or faster, with a position to move.
    Replay(crate::recording::replay::ReplayArgs),
    /// Two runs told apart from their noise: two recordings (.isim) or two
    /// load reports (--json); better, worse or ~ for each figure.
    Compare(crate::recording::compare::CompareRunsArgs),
    /// The facilitator's view of a workshop room: every attendee's checks, live,
    /// on one page (attendees opt in with `workshop check --room URL --seat NAME`).
    Room(crate::room::RoomArgs),
    /// Which way this machine, as this user, can trace: bpftrace, DTrace, perf,
    /// the probe tap; and what each exercise's scripts will run as here.
    Doctor(crate::doctor::DoctorArgs),
    /// A flame graph of a running server's CPU, taken by the server itself
    /// (GET /admin/profile): no root, no perf.
    Profile(crate::profile::ProfileArgs),
    /// A noisy neighbour: CPU-bound threads in a process of their own, printing
    /// the work they do every 25 ms (a world with `neighbour_threads_per_cpu`
    /// starts one beside the server).
    Neighbour(crate::neighbour::NeighbourArgs),
}

pub async fn run(cli: Cli) -> anyhow::Result<std::process::ExitCode> {
    simulator_api::client::name_caller(&command_words(std::env::args().skip(1)));
    let done = match cli.command {
        Command::Workshop(args) => return crate::workshop::run(args).await,
        Command::Drill(args) => return crate::workshop::drill::run(args).await,
        Command::Serve(args) => crate::serve::serve(*args).await,
        Command::Demo(args) => crate::demo::run(*args).await,
        Command::Clients(args) => simulator_clients::cli::run(*args).await,
        // A recording fed to a script is the recording's (`trace_from.rs`).
        Command::Trace(args) => match args.from.clone() {
            Some(path) => crate::recording::trace_from::run(&args, &path),
            None => crate::trace::run(args).await,
        },
        Command::Record(args) => crate::recording::record::run(args).await,
        Command::Export(args) => crate::recording::export::run(&args),
        Command::Replay(args) => crate::recording::replay::run(args).await,
        Command::Compare(args) => crate::recording::compare::run(&args).await,
        Command::Doctor(args) => crate::doctor::run(args).await,
        Command::Profile(args) => crate::profile::run(args).await,
        Command::Room(args) => crate::room::run(args).await,
        Command::Neighbour(args) => crate::neighbour::run(&args),
        Command::Settings { markdown } => {
            simulator_service::os::print_listing(&settings_text(markdown))
        }
        Command::Scenarios { answers } => {
            simulator_service::os::print_listing(&scenarios_text(answers)?)
        }
        Command::Probes => {
            simulator_service::os::print_listing(&simulator_api::events::markdown_table())
        }
    };
    done.map(|()| std::process::ExitCode::SUCCESS)
}

/// The words that name the command, before its first flag (`trace
/// permit-wait`, `workshop check`): how the servers it calls name it in their
/// trail (`simulator_api::trail`). At most three, so a value never rides along.
fn command_words(args: impl Iterator<Item = String>) -> String {
    args.take_while(|a| !a.starts_with('-'))
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn settings_text(markdown: bool) -> String {
    use std::fmt::Write;
    if markdown {
        return simulator_api::settings::markdown_table();
    }
    let mut out = String::new();
    for s in simulator_api::SETTINGS {
        let default = (s.default_text)();
        let _ = writeln!(
            out,
            "{:<22} --{:<22} {:<28} {:<8} {}",
            s.key,
            s.flag(),
            if default.is_empty() {
                "(unset)".into()
            } else {
                default
            },
            if s.live { "live" } else { "restart" },
            s.bounds.describe()
        );
    }
    out
}

/// The bundled scenarios as `scenarios` lists them: by the names and
/// headlines an attendee sees; with `answers`, by their causes, with their
/// symptoms as measured and their fixes.
fn scenarios_text(answers: bool) -> anyhow::Result<String> {
    use std::fmt::Write;
    let mut out = String::new();
    if !answers {
        for (i, s) in scenario::bundled()?.iter().enumerate() {
            writeln!(out, "{:>2}. {}: {}", i + 1, s.visible_name(), s.headline)?;
            writeln!(out, "    load: sim-clients {}", s.load.words().join(" "))?;
        }
        writeln!(
            out,
            "\nTheir causes and fixes: system-simulator scenarios --answers (a spoiler)."
        )?;
        return Ok(out);
    }
    for s in scenario::bundled()? {
        writeln!(out, "{} ({}): {}", s.name, s.seed_words(), s.summary)?;
        writeln!(out, "  the exercise: {}", s.visible_name())?;
        writeln!(out, "  symptom: {}", s.symptom)?;
        writeln!(out, "  load:    sim-clients {}", s.load.words().join(" "))?;
        for fix in &s.fixes {
            let body = serde_json::to_string(&fix.config)?;
            writeln!(out, "  fix {}: {}", fix.name, fix.summary)?;
            writeln!(out, "    curl -X PUT localhost:7878/admin/config -H 'Content-Type: application/json' -d '{body}'")?;
        }
        writeln!(out)?;
    }
    Ok(out)
}

impl Command {
    /// Whether it runs on one thread rather than a worker per core: the room
    /// takes a few reports a second, and a pool's workers waking each other for
    /// them cost it more CPU than its work (`tools/bench/room.py`).
    pub fn runs_on_one_thread(&self) -> bool {
        matches!(self, Command::Room(_) | Command::Neighbour(_))
    }

    /// The log level unless RUST_LOG says otherwise: a server (`serve`, `workshop
    /// start`) logs what an operator wants to see; the commands that print tables
    /// (the demo, the clients) only warnings.
    pub fn default_log_level(&self) -> &'static str {
        match self {
            Command::Serve(_) | Command::Room(_) => "info",
            Command::Workshop(w) if w.starts_a_server() => "info",
            Command::Drill(d) if d.starts_a_server() => "info",
            _ => "warn",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use simulator_api::Settings;

    /// clap's own checks of every command's flags (two groups of one name,
    /// a flag twice), which it makes only when a command is first parsed.
    #[test]
    fn every_commands_flags_are_well_formed() {
        Cli::command().debug_assert();
        simulator_clients::cli::Args::command().debug_assert();
    }

    /// The server starts its neighbour by this binary's own command: the
    /// words it runs parse back to `neighbour` with its threads.
    #[test]
    fn the_neighbour_the_server_starts_is_this_binarys_neighbour_command() {
        let program = crate::neighbour::program(12).unwrap();
        let words = std::iter::once("system-simulator".as_ref()).chain(program.get_args());
        match Cli::try_parse_from(words).unwrap().command {
            Command::Neighbour(args) => assert_eq!(args.threads, Some(12)),
            other => panic!("the neighbour's program parses as {other:?}"),
        }
    }

    #[test]
    fn help_states_the_real_defaults() {
        let mut cmd = Cli::command();
        let help = cmd
            .find_subcommand_mut("serve")
            .unwrap()
            .render_long_help()
            .to_string();
        let d = Settings::default();
        for default in [
            format!("[default: {}]", d.listen),
            format!("[default: {}]", d.permits),
            format!("[default: {}]", d.persist_latency),
            format!("[default: {}]", d.network_delay),
            format!("[default: {}]", humantime::format_duration(d.drain_timeout)),
            "[default: 16MiB]".to_owned(),
            "[default: 1GiB]".to_owned(),
            "[default: semaphore-starvation]".to_owned(),
            format!(
                "[default: {}]",
                humantime::format_duration(d.header_read_timeout)
            ),
            format!(
                "[default: {}]",
                humantime::format_duration(d.body_read_timeout)
            ),
            format!(
                "[default: {}]",
                humantime::format_duration(d.persist_timeout)
            ),
            format!("[default: {}]", d.max_connections),
        ] {
            assert!(help.contains(&default), "--help lacks {default}");
        }
        assert_eq!(d.max_body_bytes, 16 << 20);
        assert_eq!(d.max_element_bytes, 1 << 30);
    }

    #[test]
    fn flags_override_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sim.toml");
        std::fs::write(&file, "permits = 64\npersist_latency = \"exp(10ms)\"\n").unwrap();
        let cli = Cli::try_parse_from([
            "system-simulator",
            "serve",
            "--config",
            file.to_str().unwrap(),
            "--permits",
            "3",
        ])
        .unwrap();
        let Command::Serve(args) = cli.command else {
            panic!("parsed as serve")
        };
        let (c, _) = args.resolve().unwrap();
        assert_eq!(c.permits, 3);
        assert_eq!(c.persist_latency.to_string(), "exp(10ms)");
    }

    #[test]
    fn invalid_values_fail_at_start_with_the_reason() {
        let cli = Cli::try_parse_from(["system-simulator", "serve", "--permits", "0"]).unwrap();
        let Command::Serve(args) = cli.command else {
            panic!("parsed as serve")
        };
        assert!(args
            .resolve()
            .unwrap_err()
            .to_string()
            .contains("permits must be between 1"));
        let err = Cli::try_parse_from(["system-simulator", "serve", "--persist-latency", "quick"])
            .unwrap_err();
        assert!(err.to_string().contains("quick"));
    }

    fn serve_args(words: &[&str]) -> ServeArgs {
        let cli = Cli::try_parse_from(["system-simulator", "serve"].iter().chain(words)).unwrap();
        let Command::Serve(args) = cli.command else {
            panic!("parsed as serve")
        };
        *args
    }

    #[test]
    fn a_scenario_file_sits_under_the_config_file_and_the_flags() {
        let dir = tempfile::tempdir().unwrap();
        let scenario = dir.path().join("mine.toml");
        let original = simulator_service::scenario::BUNDLED[0].1;
        let edited = original.replace("permits = 8\n", "permits = 3\npersist_workers = 4\n");
        assert_ne!(edited, original, "the bundled file sets permits = 8");
        std::fs::write(&scenario, edited).unwrap();
        let file = dir.path().join("sim.toml");
        std::fs::write(&file, "persist_workers = 5\n").unwrap();
        let path = scenario.to_str().unwrap();
        let (c, s) = serve_args(&["--scenario", path]).resolve().unwrap();
        assert_eq!(
            (c.permits, c.persist_workers, s.name.as_str()),
            (3, 4, "semaphore-starvation")
        );
        let (c, _) = serve_args(&["--scenario", path, "--config", file.to_str().unwrap()])
            .resolve()
            .unwrap();
        assert_eq!((c.permits, c.persist_workers), (3, 5));
        let (c, _) = serve_args(&["--scenario", path, "--permits", "9"])
            .resolve()
            .unwrap();
        assert_eq!(c.permits, 9);
        let err = serve_args(&["--scenario", "no-such"])
            .resolve()
            .unwrap_err();
        assert!(err.to_string().contains("semaphore-starvation"), "{err}");
    }

    #[test]
    fn switches_take_no_value_and_choices_name_their_options() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().to_str().unwrap();
        let (c, _) = serve_args(&["--persist-dir", d, "--durable"])
            .resolve()
            .unwrap();
        assert!(c.durable && !c.persist_fsync);
        let (c, _) = serve_args(&["--persist-dir", d, "--persist-fsync", "false"])
            .resolve()
            .unwrap();
        assert!(!c.persist_fsync);
        let err = Cli::try_parse_from(["system-simulator", "serve", "--persistence", "magic"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("task-per-element, pool"), "{err}");
    }
}

#[cfg(test)]
mod scenarios_listing_tests {
    use super::*;

    #[test]
    fn the_listing_names_no_cause_and_no_fix_unless_asked_for_the_answers() {
        let plain = scenarios_text(false).unwrap();
        let answers = scenarios_text(true).unwrap();
        // The loads are what `workshop start` prints to run: an attendee sees
        // them anyway (slow-small-requests' sizes are lognormal there too).
        let headlines: String = plain
            .lines()
            .filter(|l| !l.trim_start().starts_with("load:"))
            .collect::<Vec<_>>()
            .join("\n")
            .to_lowercase();
        for s in scenario::bundled().unwrap() {
            assert!(plain.contains(s.visible_name()), "{}", s.visible_name());
            for word in std::iter::once(&s.name).chain(&s.cause_words) {
                assert!(
                    !headlines.contains(&word.to_lowercase()),
                    "`scenarios` tells {}'s cause: {word:?}",
                    s.visible_name()
                );
            }
            assert!(answers.contains(&s.name));
            for fix in &s.fixes {
                assert!(
                    !plain.contains(&fix.name),
                    "`scenarios` names fix {}",
                    fix.name
                );
                assert!(answers.contains(&fix.name));
            }
        }
        assert!(!plain.contains("admin/config"));
    }
}
