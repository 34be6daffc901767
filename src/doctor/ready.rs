//! `doctor` with the room's line (`ISIM_ROOM`, `ISIM_SEAT`) or `--count`: the
//! laptop's readiness. A short count proves the installed binaries work here,
//! as this user: a server of its own on a free loopback port, `trace count`
//! over its probe tap while `clients` loads it for 2 s, and the script's
//! counts against the server's `/stats`. The readiness (this machine's facts,
//! the ways to trace, that count) then goes to the room's board.
//!
//! It runs this very executable's `serve`, `trace` and `clients`, as an
//! attendee would, rather than calling them in process: what is proven is
//! the binary on this laptop, start-up, ports and pipes included.

use std::process::Stdio;
use std::time::Duration;

use simulator_api::room::{ExerciseWay, Readiness, ShortCount};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The short count's load: 5 clients for 2 s, a request each 50 ms.
const LOAD: [&str; 6] = ["--n", "5", "--think-time", "50ms", "--duration", "2s"];
/// count's run: long enough for the load and its drain.
const TRACE_SECONDS: &str = "6";
/// The longest the whole count may take before it is called failed.
const COUNT_LIMIT: Duration = Duration::from_secs(40);

/// The short count, its verdict printed, and the readiness sent to the room
/// when its line was given; an error when the laptop is not ready.
pub async fn prove_and_report(
    room: &crate::room::seat::RoomArgs,
    tracers: Vec<String>,
    exercises: Vec<ExerciseWay>,
    root: bool,
) -> anyhow::Result<()> {
    println!(
        "\nthe short count: a server of its own, `trace count` over its tap, 5 clients for 2 s ..."
    );
    let readiness = readiness(tracers, exercises, short_count().await, root);
    println!("{}", verdict(&readiness));
    if room.room.is_some() {
        match crate::room::seat::report_ready(room, &readiness).await {
            Ok(row) => println!("the room's board shows it; your row: {row}"),
            Err(why) => eprintln!("note: the room does not show this laptop's readiness: {why}"),
        }
    }
    anyhow::ensure!(readiness.ready, "this laptop is not ready yet");
    Ok(())
}

/// Runs the short count; why it could not, in the attendee's words.
pub async fn short_count() -> Result<ShortCount, String> {
    match tokio::time::timeout(COUNT_LIMIT, count()).await {
        Ok(counted) => counted,
        Err(_) => Err(format!(
            "the short count took over {} s",
            COUNT_LIMIT.as_secs()
        )),
    }
}

/// This executable with `args`, as the count runs each part of it.
fn command(exe: &std::path::Path, args: &[&str]) -> Command {
    let mut c = Command::new(exe);
    // The count's seconds are the check itself: never cut short.
    c.args(args)
        .env_remove("SIMULATOR_MAX_DURATION")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    c
}

/// A server of the count's own on a free loopback port, and its address.
async fn start_server(exe: &std::path::Path) -> Result<(Child, String), String> {
    let mut server = command(
        exe,
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "off",
            "--permits",
            "100000",
        ],
    )
    .stdout(Stdio::piped())
    .spawn()
    .map_err(|e| format!("the server does not start here ({e})"))?;
    let mut banner = BufReader::new(server.stdout.take().expect("piped")).lines();
    let url = loop {
        match banner.next_line().await {
            Ok(Some(line)) => {
                if let Some(url) = loopback_url(&line) {
                    break url;
                }
            }
            _ => return Err("the server started but printed no address".into()),
        }
    };
    // The rest of the banner and the final counts, read so its pipe never fills.
    tokio::spawn(async move { while let Ok(Some(_)) = banner.next_line().await {} });
    Ok((server, url))
}

async fn count() -> Result<ShortCount, String> {
    let exe = std::env::current_exe().map_err(|e| format!("where is this program? ({e})"))?;
    let command = |args: &[&str]| command(&exe, args);
    let (mut server, url) = start_server(&exe).await?;
    let mut trace = command(&[
        "trace",
        "--target",
        &url,
        "--seconds",
        TRACE_SECONDS,
        "count",
    ])
    .stdout(Stdio::piped())
    .spawn()
    .map_err(|e| format!("trace count does not start ({e})"))?;
    let mut report = BufReader::new(trace.stdout.take().expect("piped")).lines();
    // The load starts once count has said it counts: its subscription is on.
    loop {
        match report.next_line().await {
            Ok(Some(line)) if line.starts_with("Counting isim probes") => break,
            Ok(Some(_)) => {}
            _ => return Err("trace count ended before it counted (the probe tap?)".into()),
        }
    }
    let loaded = command(&[&["clients", "--target", &url][..], &LOAD].concat())
        .stdout(Stdio::null())
        .status()
        .await
        .map_err(|e| format!("the clients do not start ({e})"))?;
    if !loaded.success() {
        return Err(format!("the clients failed ({loaded})"));
    }
    let mut lines = Vec::new();
    while let Ok(Some(line)) = report.next_line().await {
        lines.push(line);
    }
    let stats = simulator_api::client::stats(&url)
        .await
        .map_err(|e| format!("the server's /stats did not answer ({e})"))?;
    let _ = server.kill().await;
    let _ = trace.wait().await;
    let started = last_count(&lines, "requests started")
        .ok_or("trace count printed no count of requests started")?;
    let done = last_count(&lines, "requests done").unwrap_or(0);
    let server_started = stats.counts.requests_started;
    Ok(ShortCount {
        started,
        done,
        server_started,
        agreed: started > 0 && started == done && started == server_started,
    })
}

/// `http://127.0.0.1:PORT` from a line of the server's banner.
fn loopback_url(line: &str) -> Option<String> {
    let at = line.find("http://127.0.0.1:")?;
    let rest = &line[at + "http://127.0.0.1:".len()..];
    let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
    (!port.is_empty()).then(|| format!("http://127.0.0.1:{port}"))
}

/// The last figure count printed for `label`, as count.bt prints its map
/// (`@counts[requests started]: 123`).
fn last_count(lines: &[String], label: &str) -> Option<u64> {
    let key = format!("[{label}]:");
    lines
        .iter()
        .rev()
        .filter(|l| l.contains(&key))
        .find_map(|l| l.split_whitespace().last()?.parse().ok())
}

/// The readiness of this laptop from what `doctor` found.
pub fn readiness(
    mut tracers: Vec<String>,
    exercises: Vec<ExerciseWay>,
    count: Result<ShortCount, String>,
    root: bool,
) -> Readiness {
    let mut problems = Vec::new();
    if count.is_ok() && !tracers.iter().any(|t| t == "tap") {
        tracers.push("tap".into()); // the count ran over it
    }
    let count = match count {
        Ok(c) if c.agreed => Some(c),
        Ok(c) => {
            problems.push(format!(
                "the short count disagreed: count saw {} started and {} done, the server {}",
                c.started, c.done, c.server_started
            ));
            Some(c)
        }
        Err(why) => {
            problems.push(why);
            None
        }
    };
    if exercises.iter().any(|e| e.way == "none") {
        problems.push("some exercise has no way to trace here (doctor lists which)".into());
    }
    let machine = crate::local::machine();
    Readiness {
        ready: problems.is_empty(),
        version: format!("system-simulator {}", env!("CARGO_PKG_VERSION")),
        os: machine.os,
        arch: std::env::consts::ARCH.to_owned(),
        kernel: kernel(),
        cgroup: cgroup_version(),
        cores: machine.cores as u32,
        file_limit: simulator_service::os::hard_limit(),
        root,
        tracers,
        exercises,
        count,
        problems,
    }
}

/// `uname -r`.
fn kernel() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .or_else(|| {
            let out = std::process::Command::new("uname")
                .arg("-r")
                .output()
                .ok()?;
            String::from_utf8(out.stdout).ok()
        })
        .map(|k| k.trim().chars().take(100).collect())
        .unwrap_or_default()
}

/// 2 where /sys/fs/cgroup is the unified hierarchy, 1 where it holds the v1
/// controllers, none without a cgroup file system.
fn cgroup_version() -> Option<u8> {
    let root = std::path::Path::new("/sys/fs/cgroup");
    if root.join("cgroup.controllers").exists() {
        Some(2)
    } else if root.join("cpu").exists() || root.join("cpu,cpuacct").exists() {
        Some(1)
    } else {
        None
    }
}

/// One line for the attendee: ready, or the first thing to fix.
pub fn verdict(r: &Readiness) -> String {
    match (&r.count, r.problems.first()) {
        (Some(c), None) => format!(
            "ready: a short count agreed ({} requests started and done, as the server counted)",
            c.started
        ),
        (_, Some(first)) => format!("NOT READY: {first}"),
        (None, None) => "NOT READY".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_banner_gives_the_address_and_count_its_figures() {
        assert_eq!(
            loopback_url("system-simulator: listening on http://127.0.0.1:40123 (data)"),
            Some("http://127.0.0.1:40123".into())
        );
        assert_eq!(loopback_url("listening on http://127.0.0.1:"), None);
        let lines: Vec<String> = [
            "Counting isim probes for 6 s",
            "@counts[requests started]: 12",
            "@counts[requests done]: 11",
            "",
            "@counts[non blocked requests]: 310",
            "@counts[requests done]: 310",
            "@counts[requests started]: 310",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(last_count(&lines, "requests started"), Some(310));
        assert_eq!(last_count(&lines, "requests done"), Some(310));
        assert_eq!(last_count(&lines, "blocked requests"), None);
    }

    #[test]
    fn a_laptop_is_ready_only_when_its_count_agreed_and_says_why_not() {
        let agreed = ShortCount {
            started: 200,
            done: 200,
            server_started: 200,
            agreed: true,
        };
        let ready = readiness(vec!["tap".into()], Vec::new(), Ok(agreed), false);
        assert!(ready.ready && ready.problems.is_empty(), "{ready:?}");
        assert!(verdict(&ready).starts_with("ready: "));
        assert_eq!(ready.bounds_error(), None);

        let short = ShortCount {
            done: 190,
            agreed: false,
            ..agreed
        };
        let not = readiness(vec!["tap".into()], Vec::new(), Ok(short), false);
        assert!(!not.ready);
        assert!(
            verdict(&not).contains("200 started and 190 done"),
            "{}",
            verdict(&not)
        );

        let failed = readiness(
            Vec::new(),
            Vec::new(),
            Err("the server does not start".into()),
            false,
        );
        assert_eq!(verdict(&failed), "NOT READY: the server does not start");
    }
}
