//! `workshop figures`: the before/after figures of the exercise pages, measured.
//!
//! For each fix of an exercise: a fresh server in the scenario (this binary,
//! `serve --scenario NAME` on a free loopback port, in a child process so the
//! measuring load never shares the server's runtime; with `--as-drill`,
//! `drill start` on the seed that draws its cause, dressed as the drill dresses
//! it: [`Serving`]), the win condition measured
//! (`check/`), the fix applied live, measured again. The result is a Markdown
//! block that `--write` puts between the page's `figures` markers; the page-claims
//! test (`tests/suite/workshop/exercises.rs`) runs a shortened version and checks that every
//! page's figures still say the same: which bounds hold before and after, and the
//! direction and rough size of each change.
//!
//! An exercise with an incident (retry-storm) measures its "before" and every fix
//! at once, each on its own server: each window must last until well after the
//! incident (40 s), its figures are rates against a timeline rather than CPU, and
//! its servers use a small share of a core, so running them together changes no
//! figure and saves minutes. The others run one server at a time: their figures
//! are what a whole machine (or its confined share) gives one server; with
//! `--at-once` they too share the machine, for a quick look (the test suite
//! measures its light exercises so), never for the pages.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use anyhow::Context;
use simulator_api::client;

use super::check::{self, Verdict};
use super::confine::{Cgroup, Confinement};
use super::progress;
use simulator_service::scenario::Scenario;

pub const BEGIN: &str = "<!-- figures:begin";
pub const END: &str = "<!-- figures:end -->";
/// How a block begins its one line where the machine cannot show the exercise.
pub const NOT_MEASURED: &str = "Not measured here";

/// A server of this binary in a child process, killed on drop.
struct ChildServer {
    child: Child,
    url: String,
    /// The cgroup it runs in, removed after it ends (field order: after `child`).
    _cgroup: Option<Cgroup>,
}

/// Where the servers of a measurement come from.
#[derive(Debug, Clone)]
pub enum Serving {
    /// `serve --scenario NAME`: the exercise as its page runs it.
    Exercise,
    /// `drill start --seed SEED` on the seed that draws the exercise's cause:
    /// the cause under the drill's production dressing, judged by the drill's
    /// check (the cause's own win condition). The exercise's fixes are
    /// applied as its page applies them, so the figures say whether the
    /// dressing leaves the exercise as it was.
    Drill {
        seed: String,
        drilled: Box<Scenario>,
    },
}

impl Serving {
    /// The drill's draw of `cause`.
    pub fn drill_of(cause: &Scenario) -> anyhow::Result<Self> {
        let seed = super::drill::draw::seed_for(&cause.name)?;
        let drilled = super::drill::draw::Draw::of(&seed)?.scenario()?;
        Ok(Serving::Drill {
            seed,
            drilled: Box::new(drilled),
        })
    }

    /// The command that starts one server of `scenario`.
    fn args<'a>(&'a self, scenario: &'a Scenario) -> Vec<&'a str> {
        let mut args = match self {
            Serving::Exercise => vec!["serve", "--scenario", scenario.name.as_str()],
            Serving::Drill { seed, .. } => vec!["drill", "start", "--seed", seed.as_str()],
        };
        args.extend(["--listen", "127.0.0.1:0", "--admin-listen", "off"]);
        args
    }

    /// The scenario the check judges: the exercise's, or the drill's.
    fn judged<'a>(&'a self, scenario: &'a Scenario) -> &'a Scenario {
        match self {
            Serving::Exercise => scenario,
            Serving::Drill { drilled, .. } => drilled,
        }
    }
}

impl ChildServer {
    fn start(
        scenario: &Scenario,
        serving: &Serving,
        confinement: &Confinement,
    ) -> anyhow::Result<Self> {
        let (mut command, cgroup) =
            confinement.command(&std::env::current_exe()?, &serving.args(scenario))?;
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("start a server")?;
        let mut first = String::new();
        let mut stdout = BufReader::new(child.stdout.take().context("the server's stdout")?);
        stdout.read_line(&mut first)?;
        // Keep reading what it prints after: a closed pipe would fail its next
        // banner line and end it.
        std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
        let url = first
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .with_context(|| format!("the server's banner has no address: {first}"))?
            .to_owned();
        Ok(Self {
            child,
            url,
            _cgroup: cgroup,
        })
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The figures block for one exercise: the win condition on a fresh server in the
/// scenario (before), then on a fresh server per fix with the fix applied (after),
/// every server confined as `confinement` says. One "before" serves every fix: it
/// is the same scenario, and a fresh server per "after" starts without the backlog
/// a "before" leaves (which the check would first wait out).
pub async fn measure(
    scenario: &Scenario,
    window: Duration,
    order: Order,
    confinement: &Confinement,
    serving: &Serving,
) -> anyhow::Result<String> {
    let window = check::window_for(scenario, window);
    let mut out = format!(
        "{BEGIN}: made by `system-simulator workshop figures {} --write` ({} s windows); do not edit by hand -->\n",
        scenario.name,
        window.as_secs()
    );
    // The world's table ends its own last line; each fix's heading opens with
    // the one blank line Markdown needs.
    out.push_str(&format!("\n{}", world_line(scenario)));
    out.push_str(&format!("\n{TOLD_APART}\n"));
    // A confinement that cannot show the exercise is known before any server
    // starts (under a tighter quota cgroup v1 refuses the server's own group).
    let here = simulator_service::server::machine::snapshot(Duration::ZERO, Default::default());
    if let Some(why) = super::fit::cannot_judge(scenario, &confinement.applied_to(&here)) {
        return Ok(not_measured(out, confinement, &why));
    }
    let machine = {
        let server = ChildServer::start(scenario, serving, confinement)?;
        client::stats(&server.url).await?.machine
    };
    if let Some(why) = super::fit::cannot_judge(scenario, &machine) {
        return Ok(not_measured(out, confinement, &why));
    }
    let verdicts = measure_all(scenario, window, order, confinement, serving).await?;
    all_judged(scenario, confinement, &verdicts)?;
    let before = &verdicts[0];
    for (fix, after) in scenario.fixes.iter().zip(&verdicts[1..]) {
        let body = fix
            .config_for(scenario.load.clients)
            .map_err(anyhow::Error::msg)?;
        out.push_str(&format!(
            "\nFix `{}`: {}{}\n\n",
            fix.name,
            fix_sides(&body, &fix.load, fix.outside.as_deref())?,
            if fix.trade_off.is_some() {
                " (a trade-off: the check does not pass it)"
            } else {
                ""
            }
        ));
        out.push_str(&table(before, after));
        out.push_str(&told_apart(before, after)?);
    }
    // Under a quota of its own the server's `cores` is the quota's, rounded up;
    // the CPUs it bursts on are its affinity's.
    let cores = match machine.cpu_quota_cores {
        Some(quota) if !scenario.settings().cpu_quota.is_zero() => format!(
            "{} CPUs under its {quota:.2}-core quota",
            machine.affinity_cpus
        ),
        _ => format!(
            "{} core{}",
            machine.cores,
            if machine.cores == 1 { "" } else { "s" }
        ),
    };
    out.push_str(&format!(
        "\nMeasured on {}: {cores} ({}), timer tick {} ms{}.\n",
        cpu_model(),
        confinement.describe(),
        machine.timer_tick_us as f64 / 1e3,
        machine
            .zstd_bytes_per_cpu_s
            .map_or(String::new(), |r| format!(
                ", zstd {:.0} MB per CPU second",
                r / 1e6
            )),
    ));
    out.push_str(END);
    out.push('\n');
    Ok(out)
}

/// The verdicts before a fix and after each, on fresh servers one after
/// another or at once, as `order` and the exercise say.
async fn measure_all(
    scenario: &Scenario,
    window: Duration,
    order: Order,
    confinement: &Confinement,
    serving: &Serving,
) -> anyhow::Result<Vec<Verdict>> {
    let runs = std::iter::once(None).chain(scenario.fixes.iter().map(Some));
    if order == Order::AtOnce || measures_its_fixes_at_once(scenario) {
        return futures::future::try_join_all(
            runs.map(|fix| measure_one(scenario, fix, window, confinement, serving)),
        )
        .await;
    }
    let mut verdicts = Vec::new();
    for fix in runs {
        verdicts.push(measure_one(scenario, fix, window, confinement, serving).await?);
    }
    Ok(verdicts)
}

/// An error where a check would not judge ("before" first, then each fix):
/// a refused check has no figures, so its table would be empty and the reason
/// the only thing worth printing.
fn all_judged(
    scenario: &Scenario,
    confinement: &Confinement,
    verdicts: &[Verdict],
) -> anyhow::Result<()> {
    let names =
        std::iter::once("before a fix").chain(scenario.fixes.iter().map(|f| f.name.as_str()));
    for (name, verdict) in names.zip(verdicts) {
        if let Some(why) = verdict.refused() {
            anyhow::bail!(
                "{} ({name}, {}): the check would not judge: {why}",
                scenario.name,
                confinement.describe()
            );
        }
    }
    Ok(())
}

/// The block so far, closed with the reason it has no figures.
fn not_measured(mut out: String, confinement: &Confinement, why: &str) -> String {
    out.push_str(&format!(
        "\n{NOT_MEASURED} ({}): {why}.\n{END}\n",
        confinement.describe()
    ));
    out
}

/// How the servers of one exercise's figures share the time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// At once for an exercise with an incident, one after another otherwise
    /// ([`measures_its_fixes_at_once`]): what the pages' figures are.
    AsTheExerciseSays,
    /// Every server at once (`--at-once`): one window, the servers sharing the CPU.
    AtOnce,
}

/// Whether `workshop figures` measures the exercise's "before" and every fix at
/// once, each on its own server (an exercise with an incident: the module's
/// comment says why), rather than one server after another.
pub fn measures_its_fixes_at_once(scenario: &Scenario) -> bool {
    !scenario.incident.is_empty()
}

/// The win condition on a fresh server in the scenario, with `fix` applied
/// (its server side live, its client side in the check's load) or without one.
async fn measure_one(
    scenario: &Scenario,
    fix: Option<&simulator_api::Fix>,
    window: Duration,
    confinement: &Confinement,
    serving: &Serving,
) -> anyhow::Result<Verdict> {
    let server = ChildServer::start(scenario, serving, confinement)?;
    let judged = serving.judged(scenario);
    let Some(fix) = fix else {
        return check::check(
            judged,
            &progress::Audience::server(&server.url),
            window,
            &[],
        )
        .await;
    };
    let body = fix
        .config_for(scenario.load.clients)
        .map_err(anyhow::Error::msg)?;
    client::configure(&server.url, &body).await?;
    if let Some(command) = &fix.outside {
        run_outside(command, &server.url).await?;
    }
    check::check(
        judged,
        &progress::Audience::server(&server.url),
        window,
        &fix.load,
    )
    .await
}

/// Runs a fix outside the service in a shell, with the server's pid in
/// `$SERVER` and its neighbour's in `$NEIGHBOUR`, as its operator would.
pub async fn run_outside(command: &str, url: &str) -> anyhow::Result<()> {
    let stats = client::stats(url).await?;
    let neighbour = stats
        .neighbour
        .map(|n| n.pid.to_string())
        .unwrap_or_default();
    let out = std::process::Command::new("sh")
        .args(["-c", command])
        .env("SERVER", stats.pid.to_string())
        .env("NEIGHBOUR", neighbour)
        .output()
        .with_context(|| format!("run `{command}`"))?;
    anyhow::ensure!(
        out.status.success(),
        "`{command}` failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(())
}

/// A fix as the figures name it: the server's change, the clients', or both;
/// or a command outside the service.
fn fix_sides(
    body: &simulator_api::SettingsUpdate,
    clients: &[String],
    outside: Option<&str>,
) -> anyhow::Result<String> {
    if let Some(command) = outside {
        return Ok(format!("outside the service, `{command}`"));
    }
    let server = match body.keys().is_empty() {
        true => None,
        false => Some(format!("`{}`", serde_json::to_string(body)?)),
    };
    let clients =
        (!clients.is_empty()).then(|| format!("clients `{}`", crate::local::shell_line(clients)));
    Ok(match (server, clients) {
        (Some(s), Some(c)) => format!("{s} and {c}"),
        (Some(s), None) => s,
        (None, Some(c)) => c,
        (None, None) => "no change".into(),
    })
}

fn table(before: &Verdict, after: &Verdict) -> String {
    let mut out =
        String::from("| figure | bound | before | after |\n| --- | --- | ---: | ---: |\n");
    let cell = |v: &Verdict, i: usize| {
        v.measured().get(i).map_or("not measured".to_owned(), |m| {
            format!(
                "{} {}",
                round(m.value),
                if m.holds { "pass" } else { "FAIL" }
            )
        })
    };
    for (i, m) in before.measured().iter().enumerate() {
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            m.bar.metric.label(),
            m.bar.bound_text(),
            cell(before, i),
            cell(after, i)
        ));
    }
    out
}

/// What the second table under each fix is, said once above them.
pub const TOLD_APART: &str =
    "Under each fix, a second table: the check's own clients before and after, \
     told apart from their noise as `compare` tells two runs apart \
     (the window's seconds resampled in blocks, 99 % intervals). \
     `~` is a change the window cannot tell from noise.";

/// The header of the comparison's table, which the page tests read by.
pub const TOLD_APART_HEADER: &str =
    "| the check's clients | before | after | change [99 % interval] | verdict |";

/// The check's own load before a fix and after it, told apart from its noise
/// (`sim-clients compare`'s statistics over the window's seconds), as a table:
/// what the fix changed for the clients, beside the bounds' figures.
fn told_apart(before: &Verdict, after: &Verdict) -> anyhow::Result<String> {
    use simulator_clients::compare;
    let (Some(b), Some(a)) = (before.load(), after.load()) else {
        return Ok(String::new());
    };
    let c = compare::before_and_after(b, a, ["before", "after"])?;
    let mut out = format!("\n{TOLD_APART_HEADER}\n| --- | ---: | ---: | ---: | --- |\n");
    // The whole window comes first; a load with a plan adds its stages, which
    // the pages leave out.
    for r in c.rows.iter().take(compare::FIGURES.len()) {
        out.push_str(&format!(
            "| {} | {} | {} | {} | `{}` |\n",
            r.figure,
            r.value_text(r.before),
            r.value_text(r.after),
            r.change_text(),
            r.verdict.word()
        ));
    }
    Ok(out)
}

/// The page's statement of the world: every world setting and its value in the
/// scenario, which `workshop check` holds the server to, as a table three
/// settings a row (a list of twenty in one sentence could not be read).
pub fn world_line(scenario: &Scenario) -> String {
    let settings = scenario.settings();
    let world: Vec<String> = settings
        .texts()
        .into_iter()
        .filter(|(key, _)| simulator_api::settings::info(key).is_some_and(|i| i.world))
        .map(|(key, value)| match value.is_empty() {
            true => format!("`{key}` unset"),
            false => format!("`{key} = {value}`"),
        })
        .collect();
    let mut out = String::from(
        "The world, which a fix may not change: the ticket's load and the settings below. \
         `workshop check` refuses to judge a server where any of it moved.\n\n\
         | the world | | |\n| --- | --- | --- |\n",
    );
    for row in world.chunks(3) {
        let mut cells = row.to_vec();
        cells.resize(3, String::new());
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

/// The CPU's model name, where the OS says it (Linux: /proc/cpuinfo).
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_owned())
}

/// Three significant figures, the way the pages print them.
fn round(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// The page of an exercise: `docs/workshop/NN-NAME.md`, NN its place in the
/// list and NAME the exercise's (never the cause's: an attendee reads it first).
pub fn page_of(root: &Path, scenario: &Scenario) -> anyhow::Result<PathBuf> {
    let position = simulator_service::scenario::names()
        .iter()
        .position(|n| *n == scenario.name)
        .with_context(|| format!("{} is not a bundled exercise", scenario.name))?;
    Ok(root.join("docs/workshop").join(format!(
        "{:02}-{}.md",
        position + 1,
        scenario.visible_name()
    )))
}

/// Replaces the figures block of `page` with `block`.
pub fn write_into(page: &Path, block: &str) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(page).with_context(|| format!("read {}", page.display()))?;
    let start = text
        .find(BEGIN)
        .with_context(|| format!("{} has no {BEGIN} marker", page.display()))?;
    let end = text
        .find(END)
        .with_context(|| format!("{} has no {END} marker", page.display()))?
        + END.len();
    let updated = format!("{}{}{}", &text[..start], block.trim_end(), &text[end..]);
    std::fs::write(page, updated).with_context(|| format!("write {}", page.display()))?;
    Ok(())
}
