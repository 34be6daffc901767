//! Scale-out for real: four `sim-clients` processes, each a shard connecting from
//! its own loopback address (127.0.0.2 to .5), started together with
//! `--start-at` against one server. Their reports merge into the exact totals the
//! server counted, the open loop's shards send the unsplit timetable once, and a
//! real Prometheus server scraping the four `--metrics-listen` endpoints agrees
//! with the merge.
//!
//! The `sim-clients` binary is the one `cargo test --workspace` builds beside
//! the server's (the clients crate's own integration tests make cargo build it).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use common::{client, get, have, settled_stats, skip_or_fail, Server, BIN, FAST_SERVER};
use serde_json::Value;
use simulator_clients::LATENCY_BUCKETS_S;

const SHARDS: u32 = 4;

/// One scale-out test at a time: each starts a server and several driver
/// processes, and on two cores three such tests at once starve one another's
/// timers (a send due at the window's end would wake too late and be missed).
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn sim_clients_bin() -> PathBuf {
    let path = Path::new(BIN).with_file_name("sim-clients");
    assert!(
        path.exists(),
        "{} is missing: run the tests with `cargo test --workspace`, which builds it",
        path.display()
    );
    path
}

/// A shard running, with its stderr lines as they come.
struct ShardProcess {
    child: Child,
    stderr: mpsc::Receiver<String>,
    report: PathBuf,
}

impl Drop for ShardProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts shard `k` of [`SHARDS`], from 127.0.0.(k+2), writing its report to `dir`.
fn start_shard(k: u32, dir: &Path, args: &[&str]) -> ShardProcess {
    let report = dir.join(format!("shard-{k}.json"));
    let mut child = Command::new(sim_clients_bin())
        .args(args)
        .args(["--shard", &format!("{k}/{SHARDS}")])
        .args(["--bind", &format!("127.0.0.{}", k + 2)])
        .args(["--json", report.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start sim-clients");
    let pipe = child.stderr.take().expect("piped stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    ShardProcess {
        child,
        stderr: rx,
        report,
    }
}

impl ShardProcess {
    /// The address its metrics endpoint printed.
    fn metrics_addr(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .stderr
                .recv_timeout(left)
                .expect("the shard printed its metrics address within 20 s");
            if let Some(url) = line.strip_prefix("sim-clients: metrics at http://") {
                return url.trim_end_matches("/metrics").to_owned();
            }
        }
    }

    /// Waits for the shard to exit successfully and returns its report.
    fn finish(&mut self, within: Duration) -> Value {
        let status = common::wait_child(&mut self.child, within);
        let said: Vec<String> = self.stderr.try_iter().collect();
        assert!(status.success(), "shard failed: {}", said.join("\n"));
        serde_json::from_str(&std::fs::read_to_string(&self.report).unwrap()).unwrap()
    }
}

/// An RFC 3339 time `ahead` from now: every shard starts then.
fn start_time(ahead: Duration) -> String {
    humantime::format_rfc3339_millis(SystemTime::now() + ahead).to_string()
}

fn merge(dir: &Path) -> Value {
    let merged = dir.join("merged.json");
    let series = dir.join("merged.jsonl");
    let mut files: Vec<String> = (0..SHARDS)
        .map(|k| {
            dir.join(format!("shard-{k}.json"))
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    files.sort();
    let out = Command::new(sim_clients_bin())
        .arg("merge")
        .args(&files)
        .args(["--json", merged.to_str().unwrap()])
        .args(["--series", series.to_str().unwrap()])
        .output()
        .expect("run sim-clients merge");
    assert!(
        out.status.success(),
        "merge failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let merged: Value = serde_json::from_str(&std::fs::read_to_string(merged).unwrap()).unwrap();
    assert_eq!(
        common::schema_errors("report.schema.json", &merged),
        Vec::<String>::new()
    );
    // The merged series adds up to the merged report.
    let completed_by_second: u64 = std::fs::read_to_string(series)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["completed"]
                .as_u64()
                .unwrap()
        })
        .sum();
    assert_eq!(
        completed_by_second,
        merged["requests_completed"].as_u64().unwrap()
    );
    merged
}

fn count(v: &Value, field: &str) -> u64 {
    v[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{field} in {v}"))
}

/// The shards started together: one start time, each at most 1 s late.
fn started_together(reports: &[Value]) {
    for r in reports {
        assert_eq!(
            common::schema_errors("report.schema.json", r),
            Vec::<String>::new()
        );
        assert_eq!(r["start_at"], reports[0]["start_at"]);
        let late = Duration::from_nanos(count(r, "start_late_ns"));
        assert!(late < Duration::from_secs(1), "started {late:?} late");
        assert_eq!(count(r, "errors"), 0, "no request failed: {r}");
    }
}

/// Waits for every shard, checks they started together, and merges their reports.
fn finish_and_merge(shards: &mut [ShardProcess], dir: &Path) -> (Vec<Value>, Value) {
    let reports: Vec<Value> = shards
        .iter_mut()
        .map(|s| s.finish(Duration::from_secs(60)))
        .collect();
    started_together(&reports);
    (reports, merge(dir))
}

#[tokio::test]
async fn an_open_loop_split_four_ways_sends_the_unsplit_timetable_once() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = Server::start(&FAST_SERVER);
    let before = settled_stats(&client(), &server.url).await;
    let dir = tempfile::tempdir().unwrap();
    let at = start_time(Duration::from_secs(3));
    let args = [
        "--target",
        &server.url,
        "--n",
        "16",
        "--rate",
        "400",
        "--arrivals",
        "poisson",
        "--seed",
        "9",
        "--duration",
        "2s",
        "--start-at",
        &at,
        // A busy test machine may wake a send a few ms late; it still counts.
        "--late-after",
        "50ms",
    ];
    let mut shards: Vec<ShardProcess> = (0..SHARDS)
        .map(|k| start_shard(k, dir.path(), &args))
        .collect();
    let (reports, merged) = finish_and_merge(&mut shards, dir.path());
    let after = settled_stats(&client(), &server.url).await;

    // The unsplit timetable, drawn from the same seed.
    let start = tokio::time::Instant::now();
    let whole = simulator_clients::Schedule::new(
        start,
        start + Duration::from_secs(2),
        400.0,
        simulator_clients::Arrivals::Poisson,
        9,
        simulator_clients::Shard::WHOLE,
    );
    let unsplit = std::iter::from_fn(|| whole.claim()).count() as u64;
    assert_eq!(
        count(&merged, "requests_sent") + count(&merged, "sends_missed"),
        unsplit,
        "each send once: {}",
        merged["schedule_lag"]
    );
    assert_eq!(
        count(&merged, "sends_missed"),
        0,
        "{}",
        merged["schedule_lag"]
    );
    let shares: Vec<u64> = reports.iter().map(|r| count(r, "requests_sent")).collect();
    assert!(
        shares.iter().all(|&s| s > 0),
        "every shard sent: {shares:?}"
    );
    assert_eq!(
        count(&after, "requests_started") - count(&before, "requests_started"),
        unsplit,
        "the server saw every send"
    );
    assert_eq!(
        count(&merged, "requests_completed"),
        count(&after, "requests_done") - count(&before, "requests_done")
    );
}

/// Prometheus on a free loopback port, scraping `targets` every second.
struct Prometheus {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    fn start(targets: &[String]) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let quoted: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  - job_name: sim-clients\n    static_configs:\n      - targets: [{}]\n",
            quoted.join(", ")
        );
        let config_path = dir.path().join("prometheus.yml");
        std::fs::write(&config_path, config).unwrap();
        // Prometheus takes no port 0: take a free one and hand it over.
        let port = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap().port()
        };
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus");
        Prometheus {
            child,
            url: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        }
    }

    /// The value of an instant query with one result, or `None` while it has none.
    async fn scalar(&self, query: &str) -> Option<f64> {
        let url = format!("{}/api/v1/query?query={}", self.url, url_encode(query));
        let body = tokio::time::timeout(Duration::from_secs(5), get(&client(), &url))
            .await
            .ok()?;
        let v: Value = serde_json::from_str(&body.body).ok()?;
        let result = v["data"]["result"].as_array()?;
        result.first()?["value"][1].as_str()?.parse().ok()
    }
}

fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The bucket `(lower, upper]` of [`LATENCY_BUCKETS_S`] holding `seconds`.
fn bucket_of(seconds: f64) -> (f64, f64) {
    let mut lower = 0.0;
    for &upper in &LATENCY_BUCKETS_S {
        if seconds <= upper {
            return (lower, upper);
        }
        lower = upper;
    }
    (lower, f64::INFINITY)
}

#[tokio::test]
#[ignore = "tier C: a real Prometheus scraping four shards"]
async fn four_closed_loop_shards_merge_exactly_and_prometheus_agrees() {
    let _serial = ONE_AT_A_TIME.lock().await;
    if !have("prometheus") {
        skip_or_fail("prometheus not installed (Debian package prometheus)");
        return;
    }
    let server = Server::start(&FAST_SERVER);
    let before = settled_stats(&client(), &server.url).await;
    let dir = tempfile::tempdir().unwrap();
    let at = start_time(Duration::from_secs(5));
    let run_id = "scale-out-test";
    let listens: Vec<String> = (0..SHARDS)
        .map(|k| format!("127.0.0.{}:0", k + 2))
        .collect();
    let mut shards: Vec<ShardProcess> = (0..SHARDS)
        .map(|k| {
            let args = [
                "--target",
                &server.url,
                "--n",
                "40",
                "--think-time",
                "10ms",
                "--duration",
                "3s",
                "--start-at",
                &at,
                "--run-id",
                run_id,
                "--metrics-listen",
                &listens[k as usize],
                "--metrics-linger",
                "5s",
            ];
            start_shard(k, dir.path(), &args)
        })
        .collect();
    let targets: Vec<String> = shards.iter().map(ShardProcess::metrics_addr).collect();
    let prometheus = Prometheus::start(&targets);
    let (_, merged) = finish_and_merge(&mut shards, dir.path());
    let after = settled_stats(&client(), &server.url).await;
    let completed = count(&merged, "requests_completed");
    assert!(completed > 1000, "a real load: {completed}");
    assert_eq!(
        completed,
        count(&after, "requests_done") - count(&before, "requests_done"),
        "the merged count is the server's"
    );
    assert_eq!(merged["merged"]["shards"], serde_json::json!([0, 1, 2, 3]));

    // The shards lingered 5 s after their runs while Prometheus scraped every
    // second; last_over_time reads the final scrape even now that they are gone.
    let selector = format!("{{run=\"{run_id}\"}}");
    let sum = format!("sum(last_over_time(sim_clients_requests_completed_total{selector}[5m]))");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut seen = None;
    while Instant::now() < deadline {
        seen = prometheus.scalar(&sum).await;
        if seen == Some(completed as f64) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(seen, Some(completed as f64), "PromQL {sum}");

    let p99 = format!(
        "histogram_quantile(0.99, sum by (le) (last_over_time(sim_clients_latency_seconds_bucket{selector}[5m])))"
    );
    let estimate = prometheus
        .scalar(&p99)
        .await
        .expect("a p99 from Prometheus");
    let exact = count(&merged["latency"], "p99_ns") as f64 / 1e9;
    // HDR reports a value's bucket by its highest equivalent (within 0.1 %); the
    // sample itself may sit just under a bucket boundary.
    let (lower, upper) = bucket_of(exact);
    let (lower_hdr, _) = bucket_of(exact / 1.001);
    assert!(
        (lower.min(lower_hdr)..=upper).contains(&estimate),
        "PromQL p99 {estimate} s is outside the bucket ({lower}, {upper}] of the exact p99 {exact} s"
    );
}

#[tokio::test]
async fn a_sweep_split_over_two_shards_measures_the_whole_load_at_each_step() {
    let _serial = ONE_AT_A_TIME.lock().await;
    let server = Server::start(&FAST_SERVER);
    let dir = tempfile::tempdir().unwrap();
    let at = start_time(Duration::from_secs(3));
    let mut shards: Vec<(Child, PathBuf)> = (0..2)
        .map(|k| {
            let json = dir.path().join(format!("sweep-{k}.json"));
            let child = Command::new(sim_clients_bin())
                .args(["sweep", "--target", &server.url, "--n", "8,16"])
                .args(["--duration", "2s", "--repeat", "1", "--think-time", "50ms"])
                .args(["--start-at", &at, "--step-gap", "2s"])
                .args(["--shard", &format!("{k}/2")])
                .args(["--json", json.to_str().unwrap()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start sim-clients sweep");
            (child, json)
        })
        .collect();
    let sweeps: Vec<Value> = shards
        .iter_mut()
        .map(|(child, json)| {
            let status = common::wait_child(child, Duration::from_secs(60));
            assert!(status.success(), "sweep shard failed");
            serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
        })
        .collect();
    for step in 0..2 {
        let done: Vec<f64> = sweeps
            .iter()
            .map(|s| {
                s["before"][step]["mean"]["requests_done_per_min"]
                    .as_f64()
                    .unwrap()
            })
            .collect();
        let predicted = sweeps[0]["before"][step]["predicted_per_min"]
            .as_f64()
            .unwrap();
        // Each shard runs half the clients, but reads the server's count of both
        // halves since shard 0's reset: the whole step's load, near the model's.
        for d in &done {
            assert!(
                *d > 0.75 * predicted && *d < 1.15 * predicted,
                "step {step}: {done:?} per minute against {predicted} predicted for every client"
            );
        }
        assert!(
            (done[0] - done[1]).abs() < 0.1 * predicted,
            "both shards read one window: {done:?}"
        );
    }
    assert_eq!(sweeps[1]["shard"]["index"], 1);
}
