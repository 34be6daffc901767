//! Test harness: the real `system-simulator` binary on 127.0.0.1 port 0, a small
//! HTTP client, and bounded waits. Every wait has a deadline; nothing sleeps to
//! dodge a race.
#![allow(dead_code)] // each test file uses a different part of the harness

pub mod browser;
pub mod figures;

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_system-simulator");

/// The load driver's own binary, beside [`BIN`]: the workspace's test build
/// builds it. Only it draws a sweep's chart (the server's binary leaves the
/// driver's `charts` feature off).
pub fn sim_clients() -> std::path::PathBuf {
    let bin = std::path::Path::new(BIN)
        .with_file_name(format!("sim-clients{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.exists(),
        "{} is not built: run the tests with --workspace (tools/test does)",
        bin.display()
    );
    bin
}

/// Server flags for tests about the clients rather than the gate: permits never
/// run short and a request costs next to nothing, so the clients set the pace.
pub const FAST_SERVER: [&str; 6] = [
    "--permits",
    "1000",
    "--network-delay",
    "0",
    "--persist-latency",
    "1ms",
];

/// Exercise 14's server (its neighbour beside it, two threads a CPU) and its
/// ticket's load without a duration: each test adds its own.
pub const NEIGHBOURED: [&str; 4] = ["--scenario", "noisy-neighbour", "--admin-listen", "off"];
pub const NEIGHBOURED_LOAD: [&str; 6] = ["--n", "16", "--rate", "60", "--arrivals", "poisson"];

/// A server the kernel throttles whenever it works: a tenth of a core (10 ms a
/// 100 ms period, in a cgroup the server makes: root) and 30 ms of CPU per element
/// on a pool of a thread per CPU online (tests/suite/server/cpu_limit.rs, scripts_live.rs).
pub const THROTTLED: [&str; 10] = [
    "--cpu-quota",
    "10ms",
    "--work",
    "zstd",
    "--work-cpu",
    "30ms",
    "--work-on",
    "rayon",
    "--work-limit",
    "host-cpus",
];

/// A running server; killed on drop if the test did not stop it.
pub struct Server {
    child: Child,
    pub url: String,
    /// The operator's own listener (`--admin-listen`), unless it is off.
    pub operator_url: Option<String>,
    pub pid: u32,
    stdout: mpsc::Receiver<String>,
    /// What the server logged, when started with [`Server::start_logging`].
    pub stderr: Option<mpsc::Receiver<String>>,
}

impl Server {
    pub fn start(args: &[&str]) -> Server {
        Self::start_with_env(args, &[])
    }

    pub fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Server {
        Self::spawn(&["serve"], "127.0.0.1:0", args, env, false)
    }

    /// `workshop start NAME`: the server as an attendee starts it.
    pub fn start_exercise(name: &str) -> Server {
        Self::spawn(&["workshop", "start", name], "127.0.0.1:0", &[], &[], false)
    }

    /// `workshop start NAME` on a given loopback address (to restart it there).
    pub fn start_exercise_on(name: &str, listen: &str) -> Server {
        Self::spawn(&["workshop", "start", name], listen, &[], &[], false)
    }

    /// `drill start --seed SEED`: the drill's server, as an attendee starts it,
    /// from the directory `cwd` (to see what it writes there).
    pub fn start_drill(seed: &str, cwd: &std::path::Path) -> Server {
        let mut command = Command::new(BIN);
        command.current_dir(cwd);
        Self::spawn_as(
            command,
            &["drill", "start", "--seed", seed],
            "127.0.0.1:0",
            &[],
            &[],
            false,
        )
    }

    /// A server on a given loopback address, e.g. to restart one on its old port.
    pub fn start_on(listen: &str, args: &[&str]) -> Server {
        Self::spawn(&["serve"], listen, args, &[], false)
    }

    /// A server at its default log level (RUST_LOG unset) whose log lines are kept
    /// in `stderr`.
    pub fn start_logging(args: &[&str]) -> Server {
        Self::spawn(&["serve"], "127.0.0.1:0", args, &[], true)
    }

    /// A server as an unprivileged user: nobody (65534) when the test runs as
    /// root, the test's own user otherwise.
    pub fn start_unprivileged(args: &[&str]) -> Server {
        Self::spawn_as(
            unprivileged(BIN),
            &["serve"],
            "127.0.0.1:0",
            args,
            &[],
            false,
        )
    }

    /// A server started from a shell that first ran `ulimit ULIMIT` ([`under_ulimit`]),
    /// its log kept in `stderr`, as [`Server::start_logging`]'s.
    pub fn start_under_ulimit(ulimit: &str, args: &[&str]) -> Server {
        Self::spawn_as(
            under_ulimit(ulimit, BIN),
            &["serve"],
            "127.0.0.1:0",
            args,
            &[],
            true,
        )
    }

    /// A server in a network namespace of the test's own: its port and its
    /// listening socket are seen only from there ([`Netns::command`]).
    pub fn start_in(netns: &Netns, args: &[&str]) -> Server {
        Self::spawn_as(
            netns.command(BIN),
            &["serve"],
            "127.0.0.1:0",
            args,
            &[],
            false,
        )
    }

    fn spawn(
        lead: &[&str],
        listen: &str,
        args: &[&str],
        env: &[(&str, &str)],
        keep_log: bool,
    ) -> Server {
        Self::spawn_as(Command::new(BIN), lead, listen, args, env, keep_log)
    }

    /// Starts `command` (the binary, or the binary inside a namespace) as a server.
    fn spawn_as(
        mut command: Command,
        lead: &[&str],
        listen: &str,
        args: &[&str],
        env: &[(&str, &str)],
        keep_log: bool,
    ) -> Server {
        command
            .args(lead)
            .args(["--listen", listen])
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        if keep_log {
            command.env_remove("RUST_LOG").stderr(Stdio::piped());
        } else {
            command.env("RUST_LOG", "warn").stderr(Stdio::inherit());
        }
        let mut child = command.spawn().expect("start system-simulator");
        let rx = lines_of(child.stdout.take().expect("piped stdout"));
        let stderr = child.stderr.take().map(lines_of);
        let first = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("server printed its address within 30 s");
        let url = first
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no address in {first:?}"))
            .to_owned();
        let second = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("server printed where its operator routes are");
        let operator_url = second
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .map(str::to_owned);
        let pid = child.id();
        Server {
            child,
            url,
            operator_url,
            pid,
            stdout: rx,
            stderr,
        }
    }

    /// `127.0.0.1:PORT`, for raw TCP.
    pub fn addr(&self) -> String {
        self.url.trim_start_matches("http://").to_owned()
    }

    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([format!("-{signal}"), self.pid.to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal} {}", self.pid);
    }

    /// The value of a seed-style line (`  label   N`) the server printed at shutdown.
    pub fn final_count(printed: &str, label: &str) -> u64 {
        printed
            .lines()
            .find(|l| l.trim_start().starts_with(label))
            .and_then(|l| l.split_whitespace().last()?.parse().ok())
            .unwrap_or_else(|| panic!("no `{label}` line in:\n{printed}"))
    }

    /// Sends SIGTERM and returns the exit status and everything printed after the banner.
    pub fn terminate(mut self, within: Duration) -> (ExitStatus, String) {
        self.signal("TERM");
        let status = wait_child(&mut self.child, within);
        // The reader thread may still hold the last lines: read until it hangs up
        // at end of file, not just what has arrived so far.
        let mut rest = Vec::new();
        while let Ok(line) = self.stdout.recv_timeout(Duration::from_secs(10)) {
            rest.push(line);
        }
        (status, rest.join("\n"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A network namespace of the test's own (`ip netns add`: root, iproute2) with its
/// loopback up, deleted on drop. Inside it `ss` lists only the sockets opened
/// there, so a tool that finds "the server listening on a port" finds the test's
/// one whatever else the machine runs (pages' terminals are namespaced for the same
/// reason: tests/suite/guards/pages_run/session.rs). The processes keep the machine's pids.
pub struct Netns {
    pub name: String,
}

impl Netns {
    /// `tag` tells apart the namespaces of one test process.
    pub fn new(tag: &str) -> Netns {
        let name = format!("isim-{tag}-{}", std::process::id());
        // A namespace a killed run left behind under the same name.
        let _ = Command::new("ip").args(["netns", "delete", &name]).output();
        let netns = Netns { name };
        netns.run(&["ip", "netns", "add", &netns.name]);
        netns.run(&[
            "ip",
            "netns",
            "exec",
            &netns.name,
            "ip",
            "link",
            "set",
            "lo",
            "up",
        ]);
        netns
    }

    /// `program` to run inside the namespace (`ip netns exec` execs it: the child's
    /// pid is the program's).
    pub fn command(&self, program: &str) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.name, program]);
        command
    }

    fn run(&self, argv: &[&str]) {
        let out = Command::new(argv[0])
            .args(&argv[1..])
            .output()
            .unwrap_or_else(|e| panic!("run {argv:?}: {e}"));
        assert!(
            out.status.success(),
            "{argv:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "delete", &self.name])
            .output();
    }
}

/// Lines of a pipe as they arrive, read on a thread of their own.
fn lines_of(pipe: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The stdout of a command that must have succeeded; its output if it did not.
pub fn stdout_of_success(out: &std::process::Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

pub fn wait_child(child: &mut Child, within: Duration) -> ExitStatus {
    exited_within(child, within).unwrap_or_else(|| panic!("process did not exit within {within:?}"))
}

/// The child's exit status if it ends within `within`; None (still running) if not.
pub fn exited_within(child: &mut Child, within: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().expect("wait for child") {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A parsed response.
#[derive(Debug)]
pub struct Response {
    pub status: StatusCode,
    pub headers: hyper::HeaderMap,
    pub body: String,
}

impl Response {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

pub type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

pub fn client() -> HttpClient {
    Client::builder(TokioExecutor::new()).build_http()
}

/// One request with a 30 s bound.
pub async fn send(
    client: &HttpClient,
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> Response {
    let mut builder = Request::builder().method(method).uri(url);
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    let request = builder.body(Full::new(body.into())).expect("valid request");
    let response = tokio::time::timeout(Duration::from_secs(30), client.request(request))
        .await
        .expect("answered within 30 s")
        .expect("HTTP exchange");
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    Response {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

pub async fn get(client: &HttpClient, url: &str) -> Response {
    send(client, Method::GET, url, &[], Bytes::new()).await
}

pub async fn post_element(client: &HttpClient, base: &str) -> Value {
    let r = send(
        client,
        Method::POST,
        &format!("{base}/requests"),
        &[],
        Bytes::from_static(b"element"),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.json()
}

pub async fn put_json(client: &HttpClient, url: &str, body: &str) -> Response {
    send(
        client,
        Method::PUT,
        url,
        &[("content-type", "application/json")],
        body.to_owned(),
    )
    .await
}

pub async fn stats(client: &HttpClient, base: &str) -> Value {
    get(client, &format!("{base}/stats")).await.json()
}

/// Sends `n` requests at once and returns how many replies said `blocked`.
pub async fn burst(client: &HttpClient, base: &str, n: usize) -> u64 {
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..n {
        let (client, base) = (client.clone(), base.to_owned());
        set.spawn(async move { post_element(&client, &base).await });
    }
    let replies = set.join_all().await;
    replies.iter().filter(|r| r["blocked"] == true).count() as u64
}

/// Polls `/stats` until nothing is in flight (requests, persists, cache fills;
/// bounded), then returns it.
pub async fn settled_stats(client: &HttpClient, base: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let s = stats(client, base).await;
        let fills_ended = s["cache_fills_started"] == s["cache_fills_ended"];
        if s["requests_in_flight"] == 0
            && s["persists_in_flight"] == 0
            && s["persists_queued"] == 0
            && fills_ended
        {
            return s;
        }
        assert!(Instant::now() < deadline, "still in flight after 30 s: {s}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// True when the tests must not skip (CI sets CI=true).
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// The end of the name of every test judged by the CPU it gets, besides the
/// exercises' own (`workshop::exercises::each::NAME`): what .config/nextest.toml's
/// run-alone group picks them by.
pub const ALONE_SUFFIX: &str = "_alone";

/// Call first in a test whose verdict depends on the CPU its servers get (a
/// win condition, a canary's lateness, a tracer's sampling on time): it fails
/// unless the test's name puts it in .config/nextest.toml's run-alone group (a
/// name ending in [`ALONE_SUFFIX`], or an exercise's), so a rename cannot
/// quietly move it into the shared pool, where it would be judged beside
/// three other tests. libtest runs each test on a thread named after it.
pub fn runs_alone() {
    let thread = std::thread::current();
    let name = thread.name().unwrap_or("");
    assert!(
        name.ends_with(ALONE_SUFFIX) || name.starts_with("workshop::exercises::each::"),
        "test `{name}` is judged by the CPU it gets, so it must run alone: end its name in `{ALONE_SUFFIX}` (.config/nextest.toml picks the run-alone tests by it)"
    );
}

/// Skips with a printed reason, or fails when running under CI.
pub fn skip_or_fail(reason: &str) {
    assert!(!in_ci(), "CI must run this test, but: {reason}");
    eprintln!("SKIPPED: {reason}");
}

/// The word that follows `marker` in `text` (a banner's address, key or
/// password); panics naming both when there is none.
pub fn word_after(text: &str, marker: &str) -> String {
    let at = text
        .find(marker)
        .unwrap_or_else(|| panic!("{marker} in {text}"))
        + marker.len();
    text[at..]
        .split(|c: char| c.is_whitespace())
        .next()
        .unwrap()
        .to_owned()
}

/// Reads everything a child wrote to a pipe.
pub fn read_all(mut pipe: impl Read) -> String {
    let mut out = String::new();
    let _ = pipe.read_to_string(&mut out);
    out
}

/// The errors of `value` against one of `simulator-clients/schema/`'s schemas.
pub fn schema_errors(file: &str, value: &Value) -> Vec<String> {
    let path = format!(
        "{}/simulator-clients/schema/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("valid schema");
    validator
        .iter_errors(value)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// Whether a program is on PATH.
pub fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether this process runs as root (needed to attach tracers).
/// `program` under a descriptor limit set as a user sets it in a shell:
/// `ulimit -Sn 256` lowers the soft limit alone (a Mac's shell starts so, its
/// hard limit far higher), `ulimit -n 256` both. The shell execs the program,
/// so its pid is the program's.
pub fn under_ulimit(ulimit: &str, program: &str) -> Command {
    let mut command = Command::new("bash");
    command.args([
        "-c",
        &format!("ulimit {ulimit} && exec \"$0\" \"$@\""),
        program,
    ]);
    command
}

/// `program` to run as an unprivileged user: under `setpriv` as nobody when
/// the test runs as root (the file must be readable by all), as it is otherwise.
pub fn unprivileged(program: &str) -> Command {
    if !is_root() {
        return Command::new(program);
    }
    let mut command = Command::new("setpriv");
    command.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--",
        program,
    ]);
    command
}

pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Files under the repository's root, each with its path from there and its
/// text: `first`, then those of `dirs` whose name ends in one of `endings`,
/// sorted within each folder.
pub fn repo_files(first: &[&str], dirs: &[&str], endings: &[&str]) -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found: Vec<std::path::PathBuf> = first.iter().map(|f| root.join(f)).collect();
    for dir in dirs {
        let mut here: Vec<_> = std::fs::read_dir(root.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| endings.iter().any(|e| p.to_string_lossy().ends_with(e)))
            .collect();
        here.sort();
        found.extend(here);
    }
    found
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p.strip_prefix(root).unwrap().display().to_string(), text)
        })
        .collect()
}

/// The pages a person reads: README.md, docs/*.md and docs/workshop/*.md.
pub fn pages_read() -> Vec<(String, String)> {
    repo_files(&["README.md"], &["docs", "docs/workshop"], &[".md"])
}

/// The first event of the server's live view (`GET /live/events`), its hello.
pub async fn live_hello(base: &str) -> Value {
    let request = Request::get(format!("{base}/live/events"))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = client().request(request).await.unwrap();
    let mut body = response.into_body();
    let mut text = String::new();
    while !text.contains("\n\n") {
        let frame = tokio::time::timeout(Duration::from_secs(10), body.frame())
            .await
            .expect("the hello within 10 s")
            .unwrap()
            .unwrap();
        if let Ok(data) = frame.into_data() {
            text.push_str(&String::from_utf8_lossy(&data));
        }
    }
    let data: String = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim_start)
        .collect();
    serde_json::from_str(&data).unwrap()
}

/// A process's resident memory now, from /proc/PID/status (Linux).
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}
