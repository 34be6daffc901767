//! `workshop figures`: the before/after figures of the exercise pages, measured.
//!
//! For each fix of an exercise: a fresh server in the scenario (this binary,
//! `serve --scenario NAME` on a free loopback port, in a child process so the
//! measuring load never shares the server's runtime), the win condition measured
//! (`check.rs`), the fix applied live, measured again. The result is a Markdown
//! block that `--write` puts between the page's `figures` markers; the page-claims
//! test (`tests/workshop_pages.rs`) runs a shortened version and checks that every
//! page's figures still say the same: which bounds hold before and after, and the
//! direction and rough size of each change.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::Context;
use simulator_clients::endpoints;

use super::check::{self, Verdict};
use crate::scenario::Scenario;

pub const BEGIN: &str = "<!-- figures:begin";
pub const END: &str = "<!-- figures:end -->";

/// A server of this binary in a child process, killed on drop.
struct ChildServer {
    child: Child,
    url: String,
}

impl ChildServer {
    fn start(scenario: &str) -> anyhow::Result<Self> {
        let mut child = Command::new(std::env::current_exe()?)
            .args(["serve", "--scenario", scenario, "--listen", "127.0.0.1:0"])
            .args(["--admin-listen", "off"])
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
        Ok(Self { child, url })
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The figures block for one exercise: each fix before and after.
pub async fn measure(scenario: &Scenario, window: Duration) -> anyhow::Result<String> {
    let mut out = format!(
        "{BEGIN}: made by `system-simulator workshop figures {} --write` ({} s windows); do not edit by hand -->\n",
        scenario.name,
        window.as_secs()
    );
    for fix in &scenario.fixes {
        let server = ChildServer::start(&scenario.name)?;
        let before = check::check(scenario, &server.url, window).await?;
        let body = fix
            .config_for(scenario.clients())
            .map_err(anyhow::Error::msg)?;
        endpoints::configure(&server.url, &body).await?;
        let after = check::check(scenario, &server.url, window).await?;
        out.push_str(&format!(
            "\nFix `{}`: `{}`{}\n\n",
            fix.name,
            serde_json::to_string(&body)?,
            if fix.trade_off.is_some() {
                " (a trade-off: the check does not pass it)"
            } else {
                ""
            }
        ));
        out.push_str(&table(&before, &after));
    }
    out.push_str(END);
    out.push('\n');
    Ok(out)
}

fn table(before: &Verdict, after: &Verdict) -> String {
    let mut out =
        String::from("| figure | bound | before | after |\n| --- | --- | ---: | ---: |\n");
    let cell = |v: &Verdict, i: usize| {
        v.measured.get(i).map_or("not measured".to_owned(), |m| {
            format!(
                "{} {}",
                round(m.value),
                if m.holds { "pass" } else { "FAIL" }
            )
        })
    };
    for (i, m) in before.measured.iter().enumerate() {
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            m.condition.metric.label(),
            m.condition.bound_text(),
            cell(before, i),
            cell(after, i)
        ));
    }
    out
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

/// The page of an exercise: `docs/workshop/NN-NAME.md`, NN its place in the list.
pub fn page_of(root: &Path, scenario: &Scenario) -> anyhow::Result<PathBuf> {
    let position = crate::scenario::names()
        .iter()
        .position(|n| *n == scenario.name)
        .with_context(|| format!("{} is not a bundled exercise", scenario.name))?;
    Ok(root
        .join("docs/workshop")
        .join(format!("{:02}-{}.md", position + 1, scenario.name)))
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
