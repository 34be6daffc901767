//! `system-simulator serve`: its flags, the banner, and the server until Ctrl-C.
//!
//! Flags override the `--config` file, which overrides the scenario, which
//! overrides the defaults (the original simulator). The setting flags are made
//! from the one declaration of the settings (`config/flags.rs`), so their help
//! states the real defaults by construction. `workshop start` serves through
//! [`serve_with`], printing its ticket after the banner.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use simulator_api::settings::AdminListen;
use simulator_api::Settings;

use simulator_service::scenario::{self, Scenario};
use simulator_service::server;
use simulator_service::server::machine;
use simulator_service::server::Answers;
use simulator_service::server::IncidentMode;
use simulator_service::server::{self as config, SettingFlags};
use simulator_service::server::{CpuMax, ServerGroup};

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

    /// When the scenario's incident begins: `on-demand` (`PUT /admin/incident`,
    /// or `workshop check` inside its window) or `loop` (its `at` after start,
    /// then every `every`).
    #[arg(long, value_enum, default_value_t)]
    pub incidents: IncidentMode,

    #[command(flatten)]
    pub settings: SettingFlags,
}

impl ServeArgs {
    /// The scenario, then the file, then the flags; validated.
    pub fn resolve(&self) -> anyhow::Result<(Settings, Scenario)> {
        let scenario = Scenario::load(self.scenario.as_deref().unwrap_or(scenario::DEFAULT))?;
        self.resolve_over(scenario)
    }

    /// `scenario` (one made in memory: the drill's), then the file, then the
    /// flags; validated.
    pub fn resolve_over(&self, scenario: Scenario) -> anyhow::Result<(Settings, Scenario)> {
        let settings = config::resolve(&scenario, self.config.as_deref(), &self.settings.0)?;
        Ok((settings, scenario))
    }
}

/// What `main` runs; the exit status is `workshop check`'s verdict.
pub async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    serve_with(args, |_, _| {}).await
}

/// `serve`, with `after_banner(pid, data URL)` printed after the banner's contract
/// lines (`workshop start` prints the ticket there).
pub async fn serve_with(
    args: ServeArgs,
    after_banner: impl FnOnce(u32, &str),
) -> anyhow::Result<()> {
    let resolved = args.resolve()?;
    serve_resolved(args, resolved, after_banner).await
}

/// `serve` in settings and a scenario already resolved (the drill's, made in
/// memory and never written to a file).
pub async fn serve_resolved(
    args: ServeArgs,
    (config, scenario): (Settings, Scenario),
    after_banner: impl FnOnce(u32, &str),
) -> anyhow::Result<()> {
    let answers = args.answers.unwrap_or_default();
    let started = StartedUp::start(&config)?;
    started.print_banner(&config, &scenario, answers)?;
    let (pid, addr) = (std::process::id(), started.addr);
    after_banner(pid, &format!("http://{addr}"));
    tracing::info!(%addr, pid, ?config.permits, "serving");
    let StartedUp {
        listener,
        operator,
        cpu_limit,
        neighbour,
        ..
    } = started;
    let report = server::serve(
        listener,
        operator,
        config,
        scenario,
        answers,
        args.incidents,
        server::shutdown_signal(),
    )
    .await?;
    print!("{}", server::final_report(&report));
    drop(cpu_limit);
    if let Some(n) = neighbour {
        n.stop();
    }
    Ok(())
}

/// What start-up made, before the banner tells of it.
struct StartedUp {
    descriptors: Option<simulator_service::server::Descriptors>,
    memory: Option<simulator_service::server::MemoryLimit>,
    neighbour: Option<std::sync::Arc<simulator_service::server::neighbour::Neighbour>>,
    cpu_limit: Option<ServerGroup>,
    listener: tokio::net::TcpListener,
    addr: std::net::SocketAddr,
    /// The operator's listener, or why there is none.
    operator: Option<tokio::net::TcpListener>,
    operator_missing: Option<String>,
    machine: simulator_api::Machine,
}

impl StartedUp {
    /// Each step in the order it must come: the limits before anything is
    /// opened or allocated, the neighbour before the server enters a CPU limit
    /// of its own, the listeners, then the machine measured.
    fn start(config: &Settings) -> anyhow::Result<Self> {
        // Before anything is opened: a shell's soft limit is far below a room's
        // load, unless the world names the container's.
        let descriptors =
            simulator_service::server::set_descriptor_limit(config.descriptor_limit as u64);
        // Before anything is allocated for serving: all of it counts against the limit.
        let memory = simulator_service::server::set_memory_limit(config.memory_limit);
        // Before the server enters a limit of its own: the neighbour is someone else's.
        let neighbour = start_neighbour(config)?;
        // Before the work is calibrated or served, so all of it counts against the limit.
        let cpu_limit = enter_cpu_limit(config)?;
        server::register_probes();
        let listener = server::bind(config.listen, config.listen_backlog)
            .with_context(|| format!("cannot listen on {}", config.listen))?;
        let addr = listener.local_addr()?;
        // From the configured address, not the bound one: a data port of 0 gives the
        // operator an ephemeral port too, never a guess at the port after a random one.
        let (operator, operator_missing) = bind_operator(config)?;
        // Measure the machine now, before any request needs the work's calibration.
        if config.work != simulator_api::settings::WorkKind::None {
            simulator_service::server::calibrate_work(config);
        }
        let machine = machine::snapshot(
            std::time::Duration::ZERO,
            simulator_service::server::work_figures(config),
        );
        Ok(Self {
            descriptors,
            memory,
            neighbour,
            cpu_limit,
            listener,
            addr,
            operator,
            operator_missing,
            machine,
        })
    }

    /// The banner. Its first two lines are a contract: tests and scripts read
    /// the addresses.
    fn print_banner(
        &self,
        config: &Settings,
        scenario: &Scenario,
        answers: Answers,
    ) -> anyhow::Result<()> {
        let (addr, pid) = (self.addr, std::process::id());
        println!("system-simulator listening on http://{addr} (pid {pid})");
        match (&self.operator, &self.operator_missing) {
            (Some(l), _) => println!(
                "  operator routes (/stats, /metrics, /admin/...) also on http://{}",
                l.local_addr()?
            ),
            (None, Some(why)) => println!("  operator routes on the data port only: {why}"),
            (None, None) => {
                println!("  operator routes on the data port only (--admin-listen off)")
            }
        }
        // A workshop's server names its exercise, never the cause.
        let named = match answers {
            Answers::Shown => scenario.name.as_str(),
            Answers::Hidden => scenario.visible_name(),
        };
        println!(
            "  scenario {named}: {} permits, persistence {}, persist latency {}, network delay {} each way",
            config.permits,
            config.persistence.name(),
            config.persist_latency,
            config.network_delay
        );
        print_world_beside(config, self.cpu_limit.as_ref(), self.neighbour.as_deref());
        println!("  {}", machine::banner(config, &self.machine));
        if let Some(memory) = &self.memory {
            println!("  {memory}");
        }
        if let Some(descriptors) = &self.descriptors {
            println!("  {descriptors}");
        }
        for (i, command) in server::trace_commands(pid, &scenario.scripts)
            .iter()
            .enumerate()
        {
            let lead = if i == 0 { "trace it:" } else { "" };
            println!("  {lead:<10} {command}");
        }
        let live_at = match &self.operator {
            Some(l) => format!("http://{}", l.local_addr()?),
            None => format!("http://{addr}"),
        };
        println!("  live view (project it for the room): {live_at}/live");
        println!("  stop with Ctrl-C; final counts are printed on exit");
        Ok(())
    }
}

/// The banner's lines on what the world puts around the server: its CPU limit
/// and its neighbour, where it has them.
fn print_world_beside(
    config: &Settings,
    cpu_limit: Option<&ServerGroup>,
    neighbour: Option<&simulator_service::server::neighbour::Neighbour>,
) {
    if let Some(group) = cpu_limit {
        println!(
            "  CPU limit (the scenario's world): {} in cgroup {} ({})",
            limit_of(config).describe(),
            group.group().dir().display(),
            if group.made_here() {
                "made for this server"
            } else {
                "the one it was started in, which had that limit already"
            }
        );
    }
    if let Some(n) = neighbour {
        println!(
            "  a neighbour (the scenario's world): pid {} with {} CPU-bound threads, `pgrep -x {}`; {} units of work a second alone",
            n.pid(),
            n.stats().threads,
            simulator_service::server::neighbour::PROCESS_NAME,
            n.stats().alone_per_s.unwrap_or(0)
        );
    }
}

/// The world's neighbour, when it has one: this many threads for each CPU the
/// server may use.
fn start_neighbour(
    config: &Settings,
) -> anyhow::Result<Option<std::sync::Arc<simulator_service::server::neighbour::Neighbour>>> {
    if config.neighbour_threads_per_cpu == 0 {
        return Ok(None);
    }
    let threads = config.neighbour_threads_per_cpu * machine::affinity_cpus().max(1);
    let threads = threads.min(simulator_service::server::neighbour::MAX_THREADS) as u32;
    simulator_service::server::neighbour::start(crate::neighbour::program(threads)?, threads)
        .map(Some)
}

/// The world's CPU limit, as the kernel takes it.
fn limit_of(config: &Settings) -> CpuMax {
    CpuMax {
        quota_us: Some(config.cpu_quota.as_micros() as u64),
        period_us: config.cpu_period.as_micros() as u64,
    }
}

/// Puts this process under the world's `cpu_quota`, when it has one; an error
/// that names the commands that would work when this process cannot.
fn enter_cpu_limit(config: &Settings) -> anyhow::Result<Option<ServerGroup>> {
    if config.cpu_quota.is_zero() {
        return Ok(None);
    }
    let limit = limit_of(config);
    ServerGroup::enter(limit).map(Some).map_err(|why| {
        let percent = limit.cores().unwrap_or(0.0) * 100.0;
        let period = simulator_api::value::text_of(config.cpu_period);
        anyhow::anyhow!(
            "cannot put the server under the scenario's CPU limit ({}): {why}.\n\
             It needs a cgroup it may write. Any of these works:\n  \
             sudo system-simulator serve ...            (root makes its own group)\n  \
             systemd-run --user --scope -p CPUQuota={percent:.0}% -p CPUQuotaPeriodSec={period} -- system-simulator serve ...\n    \
             (systemd sets the limit and the server keeps it; cgroup v2 with the cpu controller delegated to your user)\n  \
             systemd-run --user --scope -p Delegate=yes -- system-simulator serve ...   (a group of your own to divide)",
            limit.describe()
        )
    })
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
    match server::bind(at, simulator_api::settings::DEFAULT_LISTEN_BACKLOG) {
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
