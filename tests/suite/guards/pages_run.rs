//! Every command in README.md, docs/*.md and docs/workshop/*.md runs as printed.
//!
//! Each page gets a terminal of its own (tests/suite/guards/pages_run/session.rs: a bash in a
//! network namespace, so the pages' ports 7878 and 7879 are its own) in a sandbox
//! that looks like a clone: `scripts/`, `tools/`, `scenarios/`, `deploy/` and `docs/` of this
//! repository, and `target/release/` holding the binaries this test run built.
//! `cargo run --release [--bin X] -- ARGS` runs those binaries (a `cargo` on PATH
//! that does only that, so the test does not build a second time) and `sudo` runs
//! its command (the test is root). The commands' text is never edited: durations
//! are cut by `SIMULATOR_MAX_DURATION`, which every tool honours and reports.
//!
//! What a person does between commands, the test does too:
//! - a server (`serve`, `workshop start`) is terminal 1: it runs in the background
//!   until the next server or the page's end, and the next command waits until it
//!   answers `/healthz`;
//! - a load (`clients`, `sim-clients`) is terminal 2: it runs in the background
//!   while the traces and `curl`s that follow run, and is stopped with Ctrl-C
//!   (SIGINT) before a `workshop check` (the pages say to) and at the page's end;
//!   it must then print its report and exit 0;
//! - every other command runs in the foreground and must exit 0; a trace must
//!   print what its script prints (stdout); a `PUT /admin/config` must be taken
//!   (no error body: curl exits 0 on a 400); `workshop check` must give a
//!   verdict (exit 0, or 1 with `not yet:`), and what the page changed before it
//!   (the `PUT /admin/config` bodies since its server started, laid over each
//!   other, and `--client-change`) must be one of the checked scenario's fixes
//!   exactly. The verdict after each of those fixes, on the whole machine, one
//!   core and half a core, is tests/suite/workshop/exercises.rs's, which has the machine to
//!   itself; here the pages run beside other tests, where a CPU-judged verdict
//!   says little.
//!
//! Blocks marked `<!-- not run: REASON -->` are not run; their flags are checked
//! against the `--help` of the tool they name. Marked `<!-- output -->`, a block
//! is what a command prints.
//!
//! Needs root (network namespaces, tracers); skips without, fails under CI. Tier C
//! (the full suite only; `tools/test -E 'test(/^pages_run::/)'`), three pages at
//! a time, loads and traces cut to 3 s, in two tests that run beside the shared
//! ones: the pages that run `workshop check` (README.md and the exercises) and the
//! others (the sweeps of docs/load.md and docs/scenarios.md the longest).

mod blocks;
use crate::common;
mod session;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use blocks::{Block, Mark};
use common::{is_root, skip_or_fail, BIN};
use session::{catches_sigint, running, Job, Session};

/// How long a page's foreground runs and traces last (`SIMULATOR_MAX_DURATION`).
const SHORT: &str = "3s";
/// Each step of a sweep (a sweep runs many).
const SWEEP_STEP: &str = "1s";
/// Pages run at once, each in a namespace of its own.
const PAGES_AT_ONCE: usize = 3;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The pages that take longest, started first so that the three slots finish
/// together (measured alone, `--nocapture`: docs/load.md 92 s, docs/scenarios.md
/// 78 s, 07-store-hiccup-outage 71 s, README 59 s, every other page 10-54 s; in reading
/// order the retry storm's page came last and the run took 235 s for 609 s of pages).
const LONGEST_FIRST: [&str; 4] = [
    "docs/load.md",
    "docs/scenarios.md",
    "docs/workshop/07-store-hiccup-outage.md",
    "README.md",
];

/// The pages, the longest first, then in the order a newcomer reads them.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![repo().join("README.md")];
    for dir in ["docs", "docs/workshop"] {
        let mut found: Vec<PathBuf> = std::fs::read_dir(repo().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        found.sort();
        pages.extend(found);
    }
    let rank = |page: &PathBuf| {
        LONGEST_FIRST
            .iter()
            .position(|long| {
                page.strip_prefix(repo())
                    .is_ok_and(|p| p == Path::new(long))
            })
            .unwrap_or(LONGEST_FIRST.len())
    };
    pages.sort_by_key(rank);
    pages
}

/// What the test must do with a command.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    Server,
    Load,
    Sweep,
    Check,
    Trace,
    Fix,
    Other,
}

/// The program a command runs and its arguments, the way the pages spell them.
fn invocation(command: &str) -> (String, Vec<String>) {
    let code = blocks::without_comment(command);
    let words = shlex::split(&code.replace("\\\n", " ")).unwrap_or_default();
    let mut words: Vec<String> = words.into_iter().skip_while(|w| w == "sudo").collect();
    if words.first().map(String::as_str) == Some("cargo")
        && words.get(1).map(String::as_str) == Some("run")
    {
        let bin = words
            .iter()
            .position(|w| w == "--bin")
            .and_then(|i| words.get(i + 1).cloned())
            .unwrap_or_else(|| "system-simulator".into());
        let args = match words.iter().position(|w| w == "--") {
            Some(i) => words.split_off(i + 1),
            None => Vec::new(),
        };
        return (bin, args);
    }
    if words.is_empty() {
        return (String::new(), words);
    }
    let program = words.remove(0);
    let program = program.rsplit('/').next().unwrap().to_string();
    (program, words)
}

fn kind(command: &str) -> Kind {
    let (program, args) = invocation(command);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match (program.as_str(), args.as_slice()) {
        _ if command.trim_start().starts_with("for ") => Kind::Other,
        ("system-simulator", ["serve", ..])
        | ("system-simulator", ["workshop", "start", ..])
        | ("system-simulator", ["drill", "start", ..]) => Kind::Server,
        ("system-simulator", ["workshop", "check", ..]) => Kind::Check,
        ("system-simulator", ["clients", "sweep", ..]) | ("sim-clients", ["sweep", ..]) => {
            Kind::Sweep
        }
        ("system-simulator", ["clients", "merge", ..]) | ("sim-clients", ["merge", ..]) => {
            Kind::Other
        }
        ("system-simulator", ["clients", ..]) | ("sim-clients", _) => Kind::Load,
        ("trace", _) | ("system-simulator", ["trace", ..]) => Kind::Trace,
        ("curl", _) if command.contains("admin/config") && command.contains("PUT") => Kind::Fix,
        _ => Kind::Other,
    }
}

/// A sandbox that looks like a clone, with the test's binaries as the release
/// build and the page's `cargo` and `sudo` first on PATH; returns PATH.
fn sandbox(dir: &Path) -> String {
    let bins = Path::new(BIN).parent().unwrap();
    let release = dir.join("target/release");
    std::fs::create_dir_all(&release).unwrap();
    for name in ["system-simulator", "sim-clients"] {
        std::os::unix::fs::symlink(bins.join(name), release.join(name)).unwrap();
    }
    for linked in [
        "scripts",
        "tools",
        "scenarios",
        "deploy",
        "docs",
        "Cargo.toml",
    ] {
        std::os::unix::fs::symlink(repo().join(linked), dir.join(linked)).unwrap();
    }
    let shims = dir.join("shims");
    std::fs::create_dir_all(&shims).unwrap();
    let cargo = format!(
        "#!/usr/bin/env bash\n\
         # The pages' cargo in tests/suite/guards/pages_run.rs: runs the binaries this test run built.\n\
         case \"${{1:-}}\" in\n\
           build) exit 0 ;;\n\
           run) shift; bin=system-simulator\n\
             while [ $# -gt 0 ]; do case \"$1\" in\n\
               --release|-q|--quiet) shift ;;\n\
               --bin) bin=$2; shift 2 ;;\n\
               --) shift; break ;;\n\
               *) echo \"cargo (pages test): unknown $1\" >&2; exit 2 ;;\n\
             esac; done\n\
             exec {release}/$bin \"$@\" ;;\n\
           *) echo \"cargo (pages test): the pages may not run cargo $1 here\" >&2; exit 2 ;;\n\
         esac\n",
        release = release.display()
    );
    for (name, text) in [
        ("cargo", cargo.as_str()),
        ("sudo", "#!/bin/sh\nexec \"$@\"\n"),
    ] {
        let path = shims.join(name);
        std::fs::write(&path, text).unwrap();
        Command::new("chmod").arg("+x").arg(&path).status().unwrap();
    }
    format!(
        "{}:{}:{}",
        shims.display(),
        release.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// One page's run: its failures, each naming the page's line.
struct PageRun<'a> {
    page: &'a str,
    session: Session,
    servers: Vec<Job>,
    /// The loads running, with the page line that started each.
    loads: Vec<(usize, Job)>,
    fixed: bool,
    /// The `PUT /admin/config` bodies the page sent since its server started,
    /// laid over each other.
    applied: serde_json::Map<String, serde_json::Value>,
    failures: Vec<String>,
}

impl PageRun<'_> {
    fn fail(&mut self, line: usize, command: &str, why: String) {
        self.failures
            .push(format!("{}:{line}: `{command}`: {why}", self.page));
    }

    /// Ctrl-C to every load, as the pages ask before a check; each must report.
    fn stop_loads(&mut self) {
        for (line, load) in std::mem::take(&mut self.loads) {
            let deadline = Instant::now() + Duration::from_secs(10);
            while running(load.pid) && !catches_sigint(load.pid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let done = self.session.stop(&load, "INT");
            if done.code != 0 || !done.stdout.contains("requests done") {
                let why = format!(
                    "after Ctrl-C, exit {} without a report\n{}{}",
                    done.code, done.stdout, done.stderr
                );
                self.fail(line, &load.command, why);
            }
        }
    }

    fn stop_servers(&mut self) {
        for server in std::mem::take(&mut self.servers) {
            self.session.stop(&server, "TERM");
        }
    }

    /// Runs one command of the page; `as_user`: as an attendee without root.
    fn run(&mut self, line: usize, command: &str, as_user: bool) {
        eprintln!(
            "{}:{line}: {}",
            self.page,
            command.lines().next().unwrap_or("")
        );
        let code = blocks::without_comment(command);
        let background = code.ends_with('&') && !code.contains("done");
        let text = if background {
            code.trim_end_matches('&').trim_end()
        } else {
            command
        };
        match kind(text) {
            Kind::Server => {
                self.stop_loads();
                self.stop_servers();
                let server = self.session.spawn(text, None);
                let ready = self.session.run(
                    "for _ in $(seq 300); do curl -sf -o /dev/null localhost:7878/healthz && break; sleep 0.1; done; curl -sf -o /dev/null localhost:7878/healthz",
                    None,
                    Duration::from_secs(60),
                );
                if ready.code != 0 {
                    let printed = self.session.printed(&server);
                    self.fail(line, text, format!("the server never answered\n{printed}"));
                }
                self.servers.push(server);
                self.fixed = false;
                self.applied.clear();
            }
            Kind::Load => {
                let load = self.session.spawn(text, None);
                self.loads.push((line, load));
            }
            Kind::Check => {
                self.stop_loads();
                let done = self
                    .session
                    .run(text, Some(SHORT), Duration::from_secs(180));
                // A verdict, either way: the verdict after each of the scenario's
                // fixes is the exercise harness's (tests/suite/workshop/exercises.rs, with
                // the machine to itself), and the page's fix must be one of them.
                let verdict =
                    done.code == 0 || (done.code == 1 && done.stdout.contains("not yet:"));
                if !verdict {
                    let why = format!("exit {}\n{}{}", done.code, done.stdout, done.stderr);
                    self.fail(line, text, why);
                }
                if let Err(why) = fix_is_the_scenarios(&self.applied, text) {
                    self.fail(line, text, why);
                }
                if self.fixed && done.code != 0 {
                    eprintln!(
                        "{}:{line}: not yet after the page's fix (beside the shared tests; the fix's verdict is workshop::exercises::each's):\n{}",
                        self.page, done.stdout
                    );
                }
            }
            kind => {
                let cap = if kind == Kind::Sweep {
                    SWEEP_STEP
                } else {
                    SHORT
                };
                let within = Duration::from_secs(if kind == Kind::Sweep { 300 } else { 120 });
                if background {
                    let job = self.session.spawn(text, Some(cap));
                    self.loads.push((line, job));
                    return;
                }
                let done = if as_user {
                    self.session.run(&as_a_user(text), Some(cap), within)
                } else {
                    self.session.run(text, Some(cap), within)
                };
                // curl exits 0 on an HTTP error; the server's error bodies say so.
                let refused = kind == Kind::Fix && done.stdout.contains("\"error\"");
                let silent_trace = kind == Kind::Trace && done.stdout.trim().is_empty();
                if done.code != 0 || silent_trace || refused {
                    let what = match (silent_trace, refused) {
                        (true, _) => ", printed nothing",
                        (_, true) => ", the server refused it",
                        _ => "",
                    };
                    let why = format!(
                        "exit {}{what}\nstdout: {}\nstderr: {}",
                        done.code, done.stdout, done.stderr
                    );
                    self.fail(line, text, why);
                }
                if kind == Kind::Fix {
                    self.fixed = true;
                    match fix_body(text) {
                        Ok(body) => self.applied.extend(body),
                        Err(why) => self.fail(line, text, why),
                    }
                }
            }
        }
    }
}

/// Whether what a page changed before `check` (the server's settings it sent,
/// `applied`, and the clients' flags of `--client-change`) is, all of it, one of
/// the checked scenario's fixes, or nothing: the exercise harness holds each
/// fix's verdict on the whole machine, one core and half a core, so a page's
/// check after a fix of its own would be judged nowhere.
fn fix_is_the_scenarios(
    applied: &serde_json::Map<String, serde_json::Value>,
    check: &str,
) -> Result<(), String> {
    let (_, args) = invocation(check);
    let name = args
        .iter()
        .skip(2)
        .find(|a| !a.starts_with('-'))
        .ok_or("a page's check names its exercise")?;
    let clients: Vec<String> = match args.iter().position(|a| a == "--client-change") {
        Some(at) => shlex::split(
            args.get(at + 1)
                .ok_or("--client-change without its flags")?,
        )
        .ok_or("--client-change's flags do not parse")?,
        None => Vec::new(),
    };
    if applied.is_empty() && clients.is_empty() {
        return Ok(());
    }
    let scenario = simulator_service::scenario::Scenario::load(name).map_err(|e| e.to_string())?;
    let settings: simulator_api::SettingsUpdate =
        serde_json::from_value(applied.clone().into()).map_err(|e| e.to_string())?;
    let matching = scenario.fixes.iter().any(|fix| {
        fix.config_for(scenario.load.clients).as_ref() == Ok(&settings) && fix.load == clients
    });
    match matching {
        true => Ok(()),
        false => Err(format!(
            "the page checks {name} after {} and clients {clients:?}, which is none of its fixes (`system-simulator scenarios`): tests/suite/workshop/exercises.rs judges those",
            serde_json::Value::from(applied.clone())
        )),
    }
}

/// The JSON body of a page's `curl -X PUT .../admin/config --json BODY` (or
/// `-d`/`--data`), as an object.
fn fix_body(command: &str) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    let (_, args) = invocation(command);
    let body = args
        .iter()
        .position(|a| matches!(a.as_str(), "--json" | "-d" | "--data" | "--data-raw"))
        .and_then(|at| args.get(at + 1))
        .ok_or("a fix sends its body with --json or -d")?;
    match serde_json::from_str(body) {
        Ok(serde_json::Value::Object(object)) => Ok(object),
        _ => Err(format!("the fix's body is not a JSON object: {body}")),
    }
}

/// A command not run here: its flags must be ones its tool takes.
fn check_flags(command: &str) -> Option<String> {
    let syntax = Command::new("bash")
        .args(["-n", "-c", command])
        .output()
        .unwrap();
    if !syntax.status.success() {
        return Some(format!(
            "not shell: {}",
            String::from_utf8_lossy(&syntax.stderr)
        ));
    }
    let (program, args) = invocation(command);
    let help_of: Vec<String> = match program.as_str() {
        "system-simulator" | "sim-clients" => {
            let words: Vec<String> = args
                .iter()
                .take_while(|a| !a.starts_with('-'))
                .cloned()
                .collect();
            let bin = Path::new(BIN).with_file_name(&program);
            let mut help = vec![bin.display().to_string()];
            help.extend(words);
            help
        }
        "python3" if args.first().is_some_and(|a| a.ends_with(".py")) => {
            vec![
                "python3".into(),
                repo().join(&args[0]).display().to_string(),
            ]
        }
        _ => return None,
    };
    let out = Command::new(&help_of[0])
        .args(&help_of[1..])
        .arg("--help")
        .current_dir(repo())
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    let unknown: Vec<&str> = args
        .iter()
        .filter(|a| a.starts_with("--"))
        .map(|a| a.split('=').next().unwrap())
        .filter(|flag| !help.contains(flag))
        .collect();
    (!out.status.success() || !unknown.is_empty()).then(|| {
        format!(
            "`{}` does not take {unknown:?}\n{help}",
            help_of[1..].join(" ")
        )
    })
}

/// Whether the test runs a block of this mark.
fn runs(mark: &Mark) -> bool {
    matches!(mark, Mark::Run | Mark::AsUser)
}

/// The user the pages' no-root lines run as: nobody (65534), who may not attach
/// a tracer, read another user's /proc, or write the test's files.
const UNPRIVILEGED: &str = "65534";

/// `command` as an attendee without root runs it: its words unchanged, through
/// setpriv as [`UNPRIVILEGED`], with the page's PATH (its `cargo` runs the
/// binaries this test built). Its kind is the command's own (a trace is a trace).
fn as_a_user(command: &str) -> String {
    let code = blocks::without_comment(command);
    let quoted = shlex::try_quote(code).expect("a command without NUL");
    format!(
        "setpriv --reuid={UNPRIVILEGED} --regid={UNPRIVILEGED} --clear-groups -- bash -c {quoted}"
    )
}

fn run_page(page: &Path, work: &Path) -> Vec<String> {
    let name = page.strip_prefix(repo()).unwrap().display().to_string();
    let text = std::fs::read_to_string(page).unwrap();
    let blocks: Vec<Block> = match blocks::blocks(&text) {
        Ok(b) => b,
        Err(e) => return vec![format!("{name}: {e}")],
    };
    // Commands not run here: their flags are checked.
    let mut failures: Vec<String> = blocks
        .iter()
        .filter(|b| matches!(b.mark, Mark::NotRun(_)))
        .flat_map(|b| b.commands.iter().zip(&b.command_lines))
        .filter_map(|(c, line)| check_flags(c).map(|e| format!("{name}:{line}: `{c}`: {e}")))
        .collect();
    if !blocks.iter().any(|b| runs(&b.mark)) {
        return failures;
    }
    let dir = work.join(name.replace('/', "_"));
    let path = sandbox(&dir);
    let started = Instant::now();
    let mut run = PageRun {
        page: &name,
        session: Session::start(&dir, &path, dir.join("session")),
        servers: Vec::new(),
        loads: Vec::new(),
        fixed: false,
        applied: serde_json::Map::new(),
        failures: Vec::new(),
    };
    for block in blocks.iter().filter(|b| runs(&b.mark)) {
        for (command, line) in block.commands.iter().zip(&block.command_lines) {
            run.run(*line, command, block.mark == Mark::AsUser);
        }
    }
    run.stop_loads();
    run.stop_servers();
    eprintln!("{name}: ran in {:.0?}", started.elapsed());
    failures.append(&mut run.failures);
    failures
}

/// Whether a page runs `workshop check`. Such pages take longest (a check's
/// windows, before and after), so they run in a test of their own, beside the
/// other pages' test. A page whose blocks do not parse goes with the others,
/// where its error is reported.
fn checks_an_exercise(page: &Path) -> bool {
    let text = std::fs::read_to_string(page).unwrap();
    blocks::blocks(&text).is_ok_and(|blocks| {
        blocks
            .iter()
            .filter(|b| runs(&b.mark))
            .flat_map(|b| &b.commands)
            .any(|c| kind(c) == Kind::Check)
    })
}

/// Runs the pages that `wanted` picks (and `PAGES_RUN_ONLY` names, if set),
/// `PAGES_AT_ONCE` at a time, and fails with every failure of every page.
fn run_pages(wanted: fn(&Path) -> bool) {
    if !is_root() {
        skip_or_fail(
            "the pages' commands need root: a network namespace of their own, and tracers",
        );
        return;
    }
    let work = std::env::temp_dir().join(format!("isim-pages-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let only = std::env::var("PAGES_RUN_ONLY").ok();
    let queue: Vec<PathBuf> = pages()
        .into_iter()
        .filter(|page| wanted(page))
        .filter(|page| only.as_deref().is_none_or(|o| page.ends_with(o)))
        .collect();
    let queue = std::sync::Mutex::new(queue.into_iter());
    let failures = std::sync::Mutex::new(Vec::new());
    // Pages side by side, each in its own namespace: most of a page's time is
    // waiting (a trace's seconds, a server's start), and one after another they
    // would add minutes to CI.
    std::thread::scope(|scope| {
        for _ in 0..PAGES_AT_ONCE {
            scope.spawn(|| loop {
                let Some(page) = queue.lock().unwrap().next() else {
                    break;
                };
                let found = run_page(&page, &work);
                failures.lock().unwrap().extend(found);
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    let _ = std::fs::remove_dir_all(&work);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The pages that run `workshop check`: beside the shared tests, as their checks'
/// verdicts are the exercise harness's (a page's fix is one it judges).
#[test]
#[ignore = "tier C: 4 minutes, every page that checks an exercise run as printed (root: namespaces, tracers)"]
fn every_page_that_checks_an_exercise_runs_as_printed() {
    run_pages(checks_an_exercise);
}

/// Every other page (the sweeps of docs/load.md, the tracing pages): beside the
/// shared tests, as their commands are judged by exit codes and output, not by
/// the CPU they got.
#[test]
#[ignore = "tier C: 2 minutes, every page that checks no exercise run as printed (root: namespaces, tracers)"]
fn every_other_page_runs_as_printed() {
    run_pages(|page| !checks_an_exercise(page));
}

#[test]
fn commands_are_told_apart_as_a_person_runs_them() {
    assert_eq!(
        kind("cargo run --release -- workshop start slow-backend"),
        Kind::Server
    );
    assert_eq!(
        kind("cargo run --release -- serve   # terminal 1"),
        Kind::Server
    );
    assert_eq!(kind("target/release/system-simulator serve"), Kind::Server);
    assert_eq!(
        kind("cargo run --release --bin sim-clients -- --n 135 --duration 60s"),
        Kind::Load
    );
    assert_eq!(
        kind("cargo run --release -- clients --n 4 --duration 60s"),
        Kind::Load
    );
    assert_eq!(kind("sim-clients sweep --n 5,10 --fix"), Kind::Sweep);
    assert_eq!(
        kind("sudo scripts/trace persist-time --seconds 20"),
        Kind::Trace
    );
    assert_eq!(kind("cargo run --release -- workshop check x"), Kind::Check);
    assert_eq!(
        kind("curl -X PUT localhost:7879/admin/config -H 'Content-Type: application/json' -d '{\"permits\": 32}'"),
        Kind::Fix
    );
    assert_eq!(
        kind("curl -s localhost:7879/stats | python3 -m json.tool"),
        Kind::Other
    );
}

#[test]
fn a_pages_check_after_a_fix_of_its_own_is_refused() {
    let body = |cmd: &str| fix_body(cmd).unwrap();
    let check = |name: &str| format!("cargo run --release -- workshop check {name}");
    let seed = body(
        "curl -X PUT localhost:7879/admin/config -H 'Content-Type: application/json' -d '{\"permits\": 1080}'",
    );
    assert_eq!(
        fix_is_the_scenarios(&seed, &check("semaphore-starvation")),
        Ok(())
    );
    let wider = body("curl -X PUT localhost:7879/admin/config -d '{\"permits\": 1000}'");
    assert!(fix_is_the_scenarios(&wider, &check("semaphore-starvation")).is_err());
    // The same setting spelled as the server takes it, not as the scenario writes it.
    let parts = body(
        "curl -X PUT localhost:7879/admin/config --json '{\"part_bytes\": \"256KiB\", \"parts_at_once\": 8}'",
    );
    assert_eq!(
        fix_is_the_scenarios(&parts, &check("size-variance")),
        Ok(())
    );
    assert!(fix_is_the_scenarios(&parts, &check("slow-backend")).is_err());
    let none = serde_json::Map::new();
    let budget =
        "cargo run --release -- workshop check retry-storm --client-change '--retry-budget 10%'";
    assert_eq!(fix_is_the_scenarios(&none, budget), Ok(()));
    let more = "cargo run --release -- workshop check retry-storm --client-change '--retries 9'";
    assert!(fix_is_the_scenarios(&none, more).is_err());
    assert_eq!(fix_is_the_scenarios(&none, &check("slow-backend")), Ok(()));
    assert!(fix_body("curl -X PUT localhost:7879/admin/config --json 'permits'").is_err());
}

#[test]
fn the_pages_started_first_are_pages() {
    for long in LONGEST_FIRST {
        assert!(
            repo().join(long).is_file(),
            "LONGEST_FIRST names {long}, which is not a page any more"
        );
    }
}

#[test]
fn every_exercise_page_runs_its_check() {
    let checking: Vec<PathBuf> = pages()
        .into_iter()
        .filter(|p| checks_an_exercise(p))
        .collect();
    for scenario in simulator_service::scenario::bundled().unwrap() {
        let page = system_simulator::workshop::figures::page_of(repo(), &scenario).unwrap();
        let name = scenario.visible_name();
        assert!(
            checking.contains(&page),
            "the page of {name} runs `workshop check {name}`: it is not among {checking:?}"
        );
    }
}
