//! The isim probes, for real: present in the binary, and counted by bpftrace attached
//! to a running server exactly as many times as the server and its clients say.
//!
//! These tests skip with a printed reason where readelf, bpftrace or root is missing
//! and fail instead when CI is set (CI runs as root with bpftrace installed).

use crate::common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::*;
use simulator_service::server::probe_names;

/// usdt's macro runs on the build machine, so the registers of a probe site
/// cannot be chosen there for the target: it writes the site once for each
/// architecture, each under its own `#[cfg(target_arch)]`, and the target's
/// compiler keeps its own (third_party/usdt-impl/PATCHED.md). Published usdt-impl
/// 0.6.0 wrote the build machine's alone, so an arm64 cross build failed with
/// `invalid register rdi`. What the cross-built arm64 binary then carries (every
/// probe, `8@x0`...) is `tools/check-platforms linux-arm64`'s to show: a
/// release cross build takes minutes.
#[cfg(target_os = "linux")]
#[test]
fn the_probe_macro_writes_each_architecture_s_registers_under_its_own_cfg() {
    let source = "provider isim { probe request__start(uint64_t, uint64_t); };";
    let code = usdt_impl::compile_provider_source(source, &Default::default())
        .expect("a valid provider")
        .to_string();
    // Each site runs from its `target_arch` to the next one's.
    let sites: Vec<&str> = code.split("target_arch = ").skip(1).collect();
    let site = |arch: &str| {
        let found: Vec<&&str> = sites.iter().filter(|s| s.starts_with(arch)).collect();
        assert_eq!(found.len(), 1, "one {arch} site in {code}");
        *found[0]
    };
    let (x86, arm) = (site("\"x86_64\""), site("\"aarch64\""));
    assert!(
        x86.contains("8@%rdi 8@%rsi") && x86.contains("in (\"rdi\")"),
        "{x86}"
    );
    assert!(
        arm.contains("8@x0 8@x1") && arm.contains("in (\"x0\")"),
        "{arm}"
    );
    assert!(
        !x86.contains("x0") && !arm.contains("rdi"),
        "each site its own registers"
    );
}

#[test]
fn the_binary_declares_every_isim_probe() {
    if !have("readelf") {
        return skip_or_fail("readelf not installed (Debian package binutils)");
    }
    let out = Command::new("readelf").args(["-n", BIN]).output().unwrap();
    let notes = String::from_utf8_lossy(&out.stdout);
    let mut found: Vec<String> = Vec::new();
    let mut provider = None;
    for line in notes.lines().map(str::trim) {
        if let Some(p) = line.strip_prefix("Provider: ") {
            provider = Some(p.to_owned());
        } else if let Some(name) = line.strip_prefix("Name: ") {
            if provider.as_deref() == Some("isim") {
                found.push(name.to_owned());
            }
        }
    }
    found.sort();
    let mut want: Vec<String> = probe_names().iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(found, want, ".note.stapsdt of {BIN}");
}

/// bpftrace can attach uprobes only with tracefs mounted; mount it if we may.
fn ensure_tracefs() {
    if std::path::Path::new("/sys/kernel/tracing/uprobe_events").exists() {
        return;
    }
    let _ = Command::new("mount")
        .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
        .status();
}

/// A bpftrace process counting every isim probe of one pid.
struct Tracer {
    child: std::process::Child,
    lines: mpsc::Receiver<String>,
}

impl Tracer {
    fn attach(pid: u32) -> Tracer {
        ensure_tracefs();
        // BEGIN fires only once every probe is attached, so "ready" means counting.
        let program = r#"usdt:*:isim:* { @[probe] = count(); } BEGIN { printf("ready\n"); }"#;
        let mut child = Command::new("bpftrace")
            .args(["-p", &pid.to_string(), "-e", program])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start bpftrace");
        let (tx, rx) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) if line.trim() == "ready" => break,
                Ok(_) => continue,
                Err(_) => {
                    let _ = child.kill();
                    let stderr = read_all(child.stderr.take().unwrap());
                    panic!("bpftrace did not attach within 60 s: {stderr}");
                }
            }
        }
        Tracer { child, lines: rx }
    }

    /// Stops bpftrace (SIGINT prints the maps) and returns the count per probe name.
    fn counts(mut self) -> BTreeMap<String, u64> {
        let status = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        wait_child(&mut self.child, Duration::from_secs(30));
        let mut counts = BTreeMap::new();
        for line in self.lines.try_iter() {
            // @[usdt:/proc/123/root/.../system-simulator:isim:request-start]: 30
            let Some((key, value)) = line.rsplit_once("]: ") else {
                continue;
            };
            let Some(name) = key.rsplit(':').next() else {
                continue;
            };
            if let Ok(v) = value.trim().parse() {
                counts.insert(name.to_owned(), v);
            }
        }
        counts
    }
}

fn tracing_available() -> bool {
    if !have("bpftrace") {
        skip_or_fail("bpftrace not installed (Debian package bpftrace)");
        return false;
    }
    if !is_root() {
        skip_or_fail("attaching bpftrace needs root");
        return false;
    }
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bpftrace_counts_equal_what_was_sent_and_what_stats_says() {
    if !tracing_available() {
        return;
    }
    let server = Server::start(&["--persist-latency", "20ms"]);
    let pid = server.pid;
    let tracer = tokio::task::spawn_blocking(move || Tracer::attach(pid))
        .await
        .unwrap();

    let client = client();
    const WAVES: usize = 5;
    const PER_WAVE: usize = 40;
    let mut blocked_replies = 0;
    for _ in 0..WAVES {
        // 40 at once through 8 permits: some must block.
        blocked_replies += burst(&client, &server.url, PER_WAVE).await;
    }
    let sent = (WAVES * PER_WAVE) as u64;
    let stats = settled_stats(&client, &server.url).await;
    let probes = tokio::task::spawn_blocking(move || tracer.counts())
        .await
        .unwrap();

    let probe = |name: &str| probes.get(name).copied().unwrap_or(0);
    let stat = |field: &str| stats[field].as_u64().unwrap();
    assert!(
        blocked_replies > 0,
        "the load never blocked; the test would prove nothing"
    );
    assert_eq!(probe("request-start"), sent, "{probes:?}");
    assert_eq!(probe("request-done"), sent);
    assert_eq!(probe("persist-start"), sent);
    assert_eq!(probe("persist-done"), sent);
    assert_eq!(probe("request-block"), blocked_replies, "probes vs replies");
    assert_eq!(probe("request-unblock"), blocked_replies);
    assert_eq!(probe("request-nonblock"), sent - blocked_replies);
    for (name, field) in [
        ("request-start", "requests_started"),
        ("request-done", "requests_done"),
        ("request-block", "requests_blocked"),
        ("request-nonblock", "requests_nonblocked"),
        ("persist-start", "persists_started"),
        ("persist-done", "persists_done"),
    ] {
        assert_eq!(probe(name), stat(field), "{name} vs /stats {field}");
    }
}

/// bpftrace starting the server itself (`-c`) attaches by path before the process
/// runs, the case rust-lld's layout broke until `.cargo/config.toml` linked with
/// separate loadable segments: every request must still be counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bpftrace_started_with_c_counts_every_request() {
    if !tracing_available() {
        return;
    }
    ensure_tracefs();
    let program = format!(
        "usdt:{BIN}:isim:request-start {{ @started = count(); }} \
         usdt:{BIN}:isim:request-done {{ @done = count(); }}"
    );
    let command = format!("{BIN} serve --listen 127.0.0.1:0 {}", FAST_SERVER.join(" "));
    let mut child = Command::new("bpftrace")
        .args(["-c", &command, "-e", &program])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start bpftrace");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // The server's banner comes through bpftrace's stdout once it runs.
    let banner = tokio::task::block_in_place(|| {
        let mut seen = Vec::new();
        let banner = lines
            .by_ref()
            .map_while(Result::ok)
            .inspect(|l| seen.push(l.clone()))
            .find(|l| l.contains("listening on http://"));
        banner.unwrap_or_else(|| {
            let _ = child.kill();
            let stderr = child.stderr.take().map(read_all).unwrap_or_default();
            panic!(
                "no banner from the server under bpftrace -c; stdout {seen:?}, stderr:\n{stderr}"
            )
        })
    });
    let url = banner
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap()
        .to_owned();
    let server_pid = banner
        .rsplit_once("(pid ")
        .and_then(|(_, p)| p.trim_end_matches(')').parse::<u32>().ok())
        .expect("the server's pid in its banner");

    let client = client();
    const SENT: u64 = 25;
    for _ in 0..SENT {
        post_element(&client, &url).await;
    }
    let status = Command::new("kill")
        .args(["-TERM", &server_pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    // bpftrace exits with its child and prints the maps.
    let output: Vec<String> = tokio::task::block_in_place(|| lines.map_while(Result::ok).collect());
    wait_child(&mut child, Duration::from_secs(30));
    let count = |map: &str| {
        output
            .iter()
            .find_map(|l| l.strip_prefix(&format!("{map}: ")))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    assert_eq!(count("@started"), SENT, "{output:?}");
    assert_eq!(count("@done"), SENT, "{output:?}");
}
