//! A world with a CPU limit (`cpu_quota` per `cpu_period`): the server puts
//! itself in a cgroup of its own with that limit, `/stats` and `/metrics` report
//! what the kernel's bandwidth control did (`cpu.stat`), the group goes when the
//! server does, and a server that may not make one says what would work and exits
//! non-zero. Pools sized `host-cpus` count every CPU online whatever the
//! affinity, as a service that reads `/proc/cpuinfo` does; `quota` sizes them
//! to the limit.
//!
//! Making a cgroup needs root (or a delegated one, which CI does not have): the
//! tests that make one skip with the reason without it, and fail instead under CI.
//! In the quick tier though it needs root (tier B by what it runs: real servers,
//! seconds on a tenth of a core); without root each test skips with its reason.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{burst, client, get, have, is_root, skip_or_fail, stats, Server, BIN, THROTTLED};

/// The server's threads whose name starts with `prefix`.
fn threads_named(pid: u32, prefix: &str) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with(prefix))
        })
        .count()
}

fn cpus_online() -> usize {
    std::fs::read_to_string("/proc/cpuinfo")
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count()
}

/// A tenth of a core and 20 works of 30 ms of CPU: 600 ms of CPU cannot fit in
/// fewer than six periods' quota, so the kernel throttles the group, and the
/// counters say so in both places.
#[tokio::test]
async fn a_server_under_a_cpu_quota_is_in_a_cgroup_of_its_own_that_counts_its_throttling() {
    if !is_root() {
        skip_or_fail("making a cgroup with a CPU quota needs root");
        return;
    }
    let server = Server::start(&THROTTLED);
    let http = client();
    let before = stats(&http, &server.url).await;
    let group = &before["cpu_cgroup"];
    assert_eq!(group["made_by_server"], true, "{group}");
    assert_eq!(group["quota_us"], 10_000, "{group}");
    assert_eq!(group["period_us"], 100_000, "{group}");
    assert_eq!(group["quota_cores"], 0.1, "{group}");
    let dir = group["path"].as_str().unwrap().to_owned();
    assert!(
        dir.ends_with(&format!("isim-serve-{}", server.pid)),
        "{dir}"
    );
    let members = std::fs::read_to_string(Path::new(&dir).join("cgroup.procs")).unwrap();
    assert!(
        members.lines().any(|p| p == server.pid.to_string()),
        "the server is in its group: {members}"
    );
    // A thread names itself once it runs, which under a tenth of a core can come
    // after the server answers: wait for the names, up to 10 s.
    let named_by = Instant::now() + Duration::from_secs(10);
    while threads_named(server.pid, "isim-rayon") < cpus_online() && Instant::now() < named_by {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        threads_named(server.pid, "isim-rayon"),
        cpus_online(),
        "host-cpus: one thread per CPU online"
    );

    burst(&http, &server.url, 20).await;
    let after = stats(&http, &server.url).await;
    let moved = |key: &str| {
        after["cpu_cgroup"][key].as_u64().unwrap() - before["cpu_cgroup"][key].as_u64().unwrap()
    };
    assert!(
        moved("throttled_periods") >= 5,
        "600 ms of CPU at 10 ms per 100 ms: {}",
        after["cpu_cgroup"]
    );
    assert!(moved("throttled_us") > 100_000, "{}", after["cpu_cgroup"]);
    assert!(moved("periods") >= moved("throttled_periods"));

    let metrics = get(&http, &format!("{}/metrics", server.url)).await.body;
    let value = |name: &str| -> f64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} in /metrics"))
            .parse()
            .unwrap()
    };
    let throttled = after["cpu_cgroup"]["throttled_periods"].as_u64().unwrap() as f64;
    assert!(value("isim_cpu_cfs_throttled_periods_total") >= throttled);
    assert!(value("isim_cpu_cfs_throttled_seconds_total") > 0.1);
    assert_eq!(value("isim_cpu_quota_cores"), 0.1);

    let (status, _) = server.terminate(Duration::from_secs(30));
    assert!(status.success(), "{status}");
    assert!(
        !Path::new(&dir).exists(),
        "{dir} is removed with the server"
    );
}

/// `quota` sizes the pool to the quota's whole cores (at least one), whatever
/// the machine has.
#[tokio::test]
async fn a_pool_sized_to_the_quota_has_its_whole_cores() {
    if !is_root() {
        skip_or_fail("making a cgroup with a CPU quota needs root");
        return;
    }
    let server = Server::start(&[
        "--cpu-quota",
        "50ms",
        "--work",
        "zstd",
        "--work-cpu",
        "1ms",
        "--work-on",
        "rayon",
        "--work-limit",
        "quota",
    ]);
    let http = client();
    assert_eq!(
        stats(&http, &server.url).await["cpu_cgroup"]["quota_cores"],
        0.5
    );
    // A thread names itself once it runs: on a busy machine the pool's may
    // not have yet when the server answers (0 seen once, beside other tests).
    let deadline = Instant::now() + Duration::from_secs(10);
    while threads_named(server.pid, "isim-rayon") == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        threads_named(server.pid, "isim-rayon"),
        1,
        "half a core: one thread"
    );
}

/// Without the right to make a cgroup, the server names the commands that would
/// work and exits non-zero before it serves anything.
#[test]
fn a_server_that_cannot_make_its_cgroup_says_what_would_work_and_exits_non_zero() {
    let mut command = if is_root() {
        // Root could: run it as nobody, who may not write the cgroup tree.
        if !have("setpriv") {
            skip_or_fail("no setpriv (util-linux) to run the server as another user");
            return;
        }
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN]);
        c
    } else {
        Command::new(BIN)
    };
    let out = command
        .args(["serve", "--listen", "127.0.0.1:0", "--admin-listen", "off"])
        .args(["--cpu-quota", "50ms"])
        .output()
        .expect("run the server");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    for words in [
        "cannot put the server under the scenario's CPU limit (50ms per 100ms (0.50 cores))",
        "sudo system-simulator serve",
        "systemd-run --user --scope -p CPUQuota=50% -p CPUQuotaPeriodSec=100ms",
    ] {
        assert!(said.contains(words), "`{words}` in:\n{said}");
    }
    assert!(
        String::from_utf8_lossy(&out.stdout).is_empty(),
        "nothing served"
    );
}
