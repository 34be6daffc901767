//! The command line: `system-simulator serve` and its flags, and the other
//! subcommands.
//!
//! Flags override the `--config` file, which overrides the scenario, which
//! overrides the defaults (the original simulator). The setting flags are made
//! from the one declaration of the settings (`config/flags.rs`), so their help
//! states the real defaults by construction.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use simulator_api::settings::AdminListen;
use simulator_api::Settings;

use crate::config::{self, SettingFlags};
use crate::observe::{machine, probes};
use crate::scenario::{self, Scenario};
use crate::serving::answers::Answers;
use crate::serving::{self, shutdown};

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
    Demo(crate::demo::DemoArgs),
    /// The load generator, the same as the `sim-clients` binary (same flags).
    Clients(Box<simulator_clients::args::Args>),
    /// Every setting: key, flag, default, allowed values, whether it changes live.
    Settings {
        /// Print the Markdown table of docs/limits.md.
        #[arg(long)]
        markdown: bool,
    },
    /// The bundled scenarios, with their symptom, load and fixes.
    Scenarios,
    /// Every isim probe: when it fires, its arguments and what it moves (the
    /// Markdown table of docs/tracing.md).
    Probes,
    /// The workshop's exercises: list them, start one, check a fix.
    Workshop(crate::workshop::WorkshopArgs),
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Start in this scenario: a bundled name (`system-simulator scenarios` lists
    /// them) or a TOML file [default: semaphore-starvation].
    #[arg(long, value_name = "NAME|FILE")]
    pub scenario: Option<String>,

    /// TOML file with any of the settings below (keys are the flag names with `_`).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Whether `/stats` and `/scenarios` name the cause and the fixes, or keep them
    /// back until asked with `?answers=show` [default: shown; hidden under
    /// `workshop start`].
    #[arg(long, value_enum)]
    pub answers: Option<Answers>,

    #[command(flatten)]
    pub settings: SettingFlags,
}

impl ServeArgs {
    /// The scenario, then the file, then the flags; validated.
    pub fn resolve(&self) -> anyhow::Result<(Settings, Scenario)> {
        let scenario = Scenario::load(self.scenario.as_deref().unwrap_or(scenario::DEFAULT))?;
        let settings = config::resolve(&scenario, self.config.as_deref(), &self.settings.0)?;
        Ok((settings, scenario))
    }
}

/// What `main` runs; the exit status is `workshop check`'s verdict.
pub async fn run(cli: Cli) -> anyhow::Result<std::process::ExitCode> {
    let done = match cli.command {
        Command::Workshop(args) => return crate::workshop::run(args).await,
        Command::Serve(args) => serve(*args).await,
        Command::Demo(args) => crate::demo::run(args).await,
        Command::Clients(args) => simulator_clients::args::run(*args).await,
        Command::Settings { markdown } => {
            print_settings(markdown);
            Ok(())
        }
        Command::Scenarios => print_scenarios(),
        Command::Probes => {
            print!("{}", simulator_api::events::markdown_table());
            Ok(())
        }
    };
    done.map(|()| std::process::ExitCode::SUCCESS)
}

fn print_settings(markdown: bool) {
    if markdown {
        print!("{}", simulator_api::settings::markdown_table());
        return;
    }
    for s in simulator_api::SETTINGS {
        let default = (s.default_text)();
        println!(
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
}

fn print_scenarios() -> anyhow::Result<()> {
    for s in scenario::bundled()? {
        println!("{} (seed {}): {}", s.name, s.seed, s.summary);
        println!("  symptom: {}", s.symptom);
        println!("  load:    sim-clients {}", s.load.join(" "));
        for fix in &s.fixes {
            let body = serde_json::to_string(&fix.config)?;
            println!("  fix {}: {}", fix.name, fix.summary);
            println!("    curl -X PUT localhost:7878/admin/config --json '{body}'");
        }
        println!();
    }
    Ok(())
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    serve_with(args, |_, _| {}).await
}

/// `serve`, with `after_banner(pid, data URL)` printed after the banner's contract
/// lines (`workshop start` prints the ticket there).
pub async fn serve_with(
    args: ServeArgs,
    after_banner: impl FnOnce(u32, &str),
) -> anyhow::Result<()> {
    let (config, scenario) = args.resolve()?;
    probes::register();
    let listener = serving::bind(config.listen)
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    let addr = listener.local_addr()?;
    // From the configured address, not the bound one: a data port of 0 gives the
    // operator an ephemeral port too, never a guess at the port after a random one.
    let (operator, operator_missing) = bind_operator(&config)?;
    let pid = std::process::id();
    // The first two lines are a contract: tests and scripts read the addresses.
    println!("system-simulator listening on http://{addr} (pid {pid})");
    match (&operator, operator_missing) {
        (Some(l), _) => println!(
            "  operator routes (/stats, /metrics, /admin/...) also on http://{}",
            l.local_addr()?
        ),
        (None, Some(why)) => println!("  operator routes on the data port only: {why}"),
        (None, None) => println!("  operator routes on the data port only (--admin-listen off)"),
    }
    println!(
        "  scenario {}: {} permits, persistence {}, persist latency {}, network delay {} each way",
        scenario.name,
        config.permits,
        config.persistence.name(),
        config.persist_latency,
        config.network_delay
    );
    // Measure the machine now, before any request needs the work's calibration.
    if config.work != simulator_api::settings::WorkKind::None {
        crate::request_path::work::bytes_per_work(&config);
    }
    let machine = machine::snapshot(&config, std::time::Duration::ZERO);
    println!("  {}", machine::banner(&config, &machine));
    for (i, command) in probes::trace_commands(pid).iter().enumerate() {
        let lead = if i == 0 { "trace it:" } else { "" };
        println!("  {lead:<10} {command}");
    }
    println!("  stop with Ctrl-C; final counts are printed on exit");
    after_banner(pid, &format!("http://{addr}"));
    tracing::info!(%addr, pid, ?config.permits, "serving");
    let report = serving::run(
        listener,
        operator,
        config,
        scenario,
        args.answers.unwrap_or_default(),
        shutdown::signal(),
    )
    .await?;
    print!("{}", shutdown::final_report(&report));
    Ok(())
}

/// The operator's listener. With `auto` (the data port + 1) a port already taken
/// is no reason not to start, since any of the thousands of ephemeral ports a load
/// uses can hold it: the routes then stay on the data port only, and the second
/// value says why for the banner. A port the user named must be had.
fn bind_operator(
    config: &Settings,
) -> anyhow::Result<(Option<tokio::net::TcpListener>, Option<String>)> {
    let Some(at) = config.admin_listen.address(config.listen) else {
        return Ok((None, None));
    };
    match serving::bind(at) {
        Ok(listener) => Ok((Some(listener), None)),
        Err(e) if config.admin_listen == AdminListen::Auto => Ok((
            None,
            Some(format!(
                "{at} (the data port + 1, --admin-listen auto) is taken ({e}); name a free one with --admin-listen ADDR"
            )),
        )),
        Err(e) => Err(anyhow::Error::new(e).context(format!(
            "cannot listen on {at} for the operator's routes (--admin-listen; `off` serves them on the data port only)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

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
        let original = crate::scenario::BUNDLED[0].1;
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
