//! `system-simulator doctor`: which way this machine, as this user, can see
//! inside the server, checked in order of what each way shows (bpftrace as root,
//! DTrace, perf and its paranoid level, the probe tap), and then, exercise by
//! exercise, what this attendee will run for each script its page traces with,
//! and the one command that would open a better way.
//!
//! Every check asks the machine (a program's `--version`, a file of /proc or
//! /sys, the server's own tap), never a table of platforms; the platform is
//! named only to print its documented steps (macOS's SIP, WSL2's kernel,
//! Codespaces), which docs/workshop/reference.md has in full.
//!
//! With the room's line (or `--count`) it also proves the binary works here
//! and tells the room's board (`ready.rs`).

mod ready;

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use simulator_service::os::{Os, THIS as THIS_OS};
use simulator_service::scenario;

/// What `doctor` takes.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// The server whose probe tap to try (its data or operator port).
    #[arg(long, default_value = "http://127.0.0.1:7878")]
    pub target: String,
    /// The server's admin token, when it was started with one.
    #[arg(long, env = "ISIM_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// Prove this laptop ready: a short count on a server of its own (about
    /// 10 s). On by itself with the room's line, whose board then shows it.
    #[arg(long)]
    pub count: bool,
    #[command(flatten)]
    pub room: crate::room::seat::RoomArgs,
}

/// One way to trace, as found here.
#[derive(Debug)]
struct Route {
    name: &'static str,
    /// Whether it attaches here, as this user.
    works: bool,
    /// What was found.
    found: String,
    /// The one command (or step) that would make it work, when it does not.
    better: Option<String>,
}

/// How one script of an exercise runs here.
#[derive(Debug, PartialEq, Eq)]
enum Way {
    Tracer(&'static str),
    /// `trace NAME`: the script's twin, over the tap and /stats.
    Twin,
    /// No way without a tracer: a script with no twin.
    None,
}

pub async fn run(args: DoctorArgs) -> anyhow::Result<()> {
    let root = is_root();
    let user = if root { "root" } else { "not root" };
    // Written whole at the end, so `doctor | head` ends quietly (platform/stdout.rs).
    let mut out = format!(
        "system-simulator doctor: the ways to trace on this machine, as this user ({user})\n\n"
    );
    let routes = [
        bpftrace(root),
        dtrace(root),
        perf(),
        tap(&args.target, args.admin_token.as_deref()).await,
    ];
    for (i, route) in routes.iter().enumerate() {
        let verdict = if route.works { "yes" } else { "no " };
        let _ = writeln!(
            out,
            "  {}. {:<24} {verdict}  {}",
            i + 1,
            route.name,
            route.found
        );
        if let Some(better) = &route.better {
            let _ = writeln!(out, "     {:<24}      better: {better}", "");
        }
    }
    if let Some(limit) = simulator_service::os::hard_limit() {
        let _ = writeln!(
            out,
            "\nfile descriptors: up to {limit} for the clients and the server (they raise `ulimit -n` to the hard limit at start; one a client's connection)"
        );
    }
    // scripts/trace's own choice: DTrace where it attaches, else bpftrace.
    let tracer = if routes[1].works {
        Some("DTrace")
    } else if routes[0].works {
        Some("bpftrace")
    } else {
        None
    };
    let exercise_ways = list_exercises(&mut out, tracer)?;
    for step in platform_steps() {
        let _ = writeln!(out, "\n{step}");
    }
    if !(args.count || args.room.room.is_some()) {
        return simulator_service::os::print_listing(&out);
    }
    simulator_service::os::print_listing(&out)?;
    let tracers = routes
        .iter()
        .zip(["bpftrace", "DTrace", "perf", "tap"])
        .filter(|(route, _)| route.works)
        .map(|(_, name)| name.to_owned())
        .collect();
    ready::prove_and_report(&args.room, tracers, exercise_ways, root).await
}

/// Each exercise's scripts and what this attendee will run for each, written
/// to `out`; each exercise's way in one word, for the room.
fn list_exercises(
    out: &mut String,
    tracer: Option<&'static str>,
) -> anyhow::Result<Vec<simulator_api::room::ExerciseWay>> {
    let _ = writeln!(
        out,
        "\nwhat you will run for each exercise's scripts (the tap prints the script's report, no root needed):"
    );
    let machine = crate::local::machine();
    let mut exercise_ways = Vec::new();
    for exercise in scenario::bundled()?
        .iter()
        .filter(|s| !s.scripts.is_empty())
    {
        let _ = writeln!(out, "  {}:", exercise.visible_name());
        let cannot_show = crate::workshop::fit::cannot_judge(exercise, &machine);
        if let Some(why) = &cannot_show {
            let _ = writeln!(out, "    cannot be shown on this machine: {why}");
        }
        let ways: Vec<Way> = exercise.scripts.iter().map(|s| way(s, tracer)).collect();
        exercise_ways.push(simulator_api::room::ExerciseWay {
            exercise: exercise.visible_name().to_owned(),
            way: way_name(&ways).to_owned(),
            cannot_show: cannot_show.map(|why| why.chars().take(300).collect()),
        });
        for script in &exercise.scripts {
            let _ = writeln!(
                out,
                "    {:<17} {}",
                script,
                describe(way(script, tracer), script)
            );
        }
    }
    Ok(exercise_ways)
}

/// The way an exercise's scripts run, in one word: the tracer's name, `tap`
/// for the twins, or `none` when any script has no way here.
fn way_name(ways: &[Way]) -> &'static str {
    if ways.contains(&Way::None) {
        return "none";
    }
    match ways.first() {
        Some(Way::Tracer(tool)) => tool,
        _ => "tap",
    }
}

fn way(script: &str, tracer: Option<&'static str>) -> Way {
    match tracer {
        Some(tool) => Way::Tracer(tool),
        None if crate::trace::scripts::names().any(|name| name == script)
            || script == crate::trace::PROFILE
            || script == crate::trace::OFFCPU =>
        {
            Way::Twin
        }
        None => Way::None,
    }
}

fn describe(way: Way, script: &str) -> String {
    match way {
        Way::Tracer(tool) => format!("{tool}: sudo scripts/trace {script}"),
        Way::Twin => format!(
            "{}: cargo run --release -- trace {script}",
            crate::trace::source_of(script)
        ),
        Way::None => "none without a tracer: it has no twin".to_owned(),
    }
}

fn is_root() -> bool {
    output("id", &["-u"]).is_some_and(|id| id.trim() == "0")
}

/// A program's first line of output, when it runs and exits 0.
fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = if out.stdout.is_empty() {
        out.stderr
    } else {
        out.stdout
    };
    Some(
        String::from_utf8_lossy(&text)
            .lines()
            .next()?
            .trim()
            .to_owned(),
    )
}

fn bpftrace(root: bool) -> Route {
    let name = "bpftrace, as root";
    if THIS_OS != Os::Linux {
        return Route {
            name,
            works: false,
            found: "Linux only".into(),
            better: None,
        };
    }
    let Some(version) = output("bpftrace", &["--version"]) else {
        return Route {
            name,
            works: false,
            found: "not installed".into(),
            better: Some("sudo apt-get install bpftrace   (or your distribution's package)".into()),
        };
    };
    let uprobes = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .any(|d| Path::new(d).exists());
    let btf = Path::new("/sys/kernel/btf/vmlinux").exists();
    let found = format!(
        "{version}; uprobes {}; kernel BTF {} (the socket scripts read it)",
        if uprobes { "yes" } else { "no tracefs" },
        if btf { "yes" } else { "no" }
    );
    Route {
        name,
        works: root && uprobes,
        found,
        better: (!root).then(|| "sudo scripts/trace NAME   (bpftrace needs root)".into()),
    }
}

fn dtrace(root: bool) -> Route {
    let name = "DTrace";
    let Some(version) = output("dtrace", &["-V"]) else {
        let better = if THIS_OS == Os::Linux {
            "DTrace for Linux: https://github.com/oracle/dtrace-utils (bpftrace does the same here)"
        } else {
            "DTrace ships with macOS, illumos and FreeBSD"
        };
        return Route {
            name,
            works: false,
            found: "not installed".into(),
            better: Some(better.into()),
        };
    };
    let sip = (THIS_OS == Os::MacOs)
        .then(|| output("csrutil", &["status"]))
        .flatten();
    let blocked_by_sip = sip.as_deref().is_some_and(|s| s.contains("enabled."));
    let found = match &sip {
        Some(status) => format!("{version}; {status}"),
        None => version,
    };
    let better = if blocked_by_sip {
        Some("SIP limits DTrace: in Recovery, csrutil enable --without dtrace (docs/workshop/reference.md)".into())
    } else if !root {
        Some("sudo scripts/trace NAME   (DTrace needs root)".into())
    } else {
        None
    };
    Route {
        name,
        works: root && !blocked_by_sip,
        found,
        better,
    }
}

fn perf() -> Route {
    let name = "perf (CPU profiles)";
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|v| v.trim().parse::<i32>().ok());
    let version = output("perf", &["--version"]);
    let (works, level) = match paranoid {
        Some(p) if p <= 2 => (
            version.is_some(),
            format!("perf_event_paranoid {p}: profiles of your own processes"),
        ),
        Some(p) => (
            false,
            format!("perf_event_paranoid {p}: perf is off for users"),
        ),
        None => (false, "no perf_event_paranoid (not Linux)".into()),
    };
    let better = match (&version, paranoid) {
        (None, Some(_)) => {
            Some("sudo apt-get install linux-perf   (or linux-tools-$(uname -r))".into())
        }
        (Some(_), Some(p)) if p > 2 => Some("sudo sysctl kernel.perf_event_paranoid=2".into()),
        _ => None,
    };
    Route {
        name,
        works,
        found: format!(
            "{}; {level}; the isim probes need root either way",
            version.as_deref().unwrap_or("not installed")
        ),
        better,
    }
}

async fn tap(target: &str, token: Option<&str>) -> Route {
    let name = "the probe tap (no root)";
    match simulator_api::client::tap(target, &["canary-tick"], token).await {
        Ok(body) => {
            drop(body);
            Route {
                name,
                works: true,
                found: format!("{target} streams its probes' events"),
                better: None,
            }
        }
        Err(e) => Route {
            name,
            works: false,
            found: format!("no server answers it at {target} ({e})"),
            better: Some(
                "start the exercise's server (cargo run --release -- workshop start NAME), or pass --target"
                    .into(),
            ),
        },
    }
}

/// The documented steps of the platform this runs on, when it has some.
fn platform_steps() -> Vec<String> {
    let mut steps = Vec::new();
    let version = std::fs::read_to_string("/proc/version").unwrap_or_default();
    if version.to_lowercase().contains("microsoft") {
        steps.push(
            "WSL2: bpftrace needs a WSL kernel with BTF (5.15.74.2 or later: `wsl --update` in \
             Windows), then `sudo apt-get install bpftrace`; the tap works as it is."
                .to_owned(),
        );
    }
    if std::env::var_os("CODESPACES").is_some() {
        steps.push(
            "Codespaces: the container cannot trace the host's kernel; use the tap \
             (cargo run --release -- trace NAME)."
                .to_owned(),
        );
    }
    if THIS_OS == Os::MacOs {
        steps.push(
            "macOS: with SIP on, `sudo dtrace` may not see the probes; the tap needs nothing, \
             or trace in a Lima VM (limactl start; limactl shell default; sudo apt-get install bpftrace)."
                .to_owned(),
        );
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tracer_runs_everything_and_without_one_the_twins() {
        assert_eq!(way("count", Some("bpftrace")), Way::Tracer("bpftrace"));
        assert_eq!(way("cgroup-cpu", Some("DTrace")), Way::Tracer("DTrace"));
        assert_eq!(way("count", None), Way::Twin);
        assert_eq!(way("delayed-ack", None), Way::Twin);
        assert_eq!(way("profile", None), Way::Twin);
        assert_eq!(way("no-such-script", None), Way::None);
    }

    #[test]
    fn every_exercise_script_is_bundled_and_has_a_way_without_root() {
        for exercise in scenario::bundled().unwrap() {
            for script in &exercise.scripts {
                let bundled = Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("scripts")
                    .join(format!("{script}.bt"));
                assert!(bundled.exists(), "{}: {script}", exercise.name);
                assert_eq!(way(script, None), Way::Twin, "{script}");
            }
        }
    }
}
