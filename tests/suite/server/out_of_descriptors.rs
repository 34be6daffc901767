//! The server at its descriptor limit: started under `ulimit -n 64` and sent
//! more idle connections than that, so accept(2) fails with EMFILE. It must
//! count every failure where `/stats`, `/metrics` and the probe agree, wait
//! between tries without spinning a CPU, log the spell in a few lines, keep
//! its operator's routes answering new connections, and serve again once the
//! connections close (`serving/accept_failures.rs`).

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::common::{client, stats, Server};

/// Idle connections held against a limit of 64: more than the table holds.
const HELD: usize = 80;

/// How long the test holds them after the first failure.
const HOLD: Duration = Duration::from_secs(5);

/// One request on a connection of its own (a pooled client would reuse one
/// accepted before the limit), answered within `within`: the reply's status
/// line, or why there is none.
async fn fresh_get(addr: &str, path: &str, within: Duration) -> Result<String, String> {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        let ask = format!("GET {path} HTTP/1.1\r\nhost: test\r\nconnection: close\r\n\r\n");
        stream
            .write_all(ask.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut reply = String::new();
        stream
            .read_to_string(&mut reply)
            .await
            .map_err(|e| e.to_string())?;
        Ok(reply)
    };
    match tokio::time::timeout(within, exchange).await {
        Ok(reply) => reply,
        Err(_) => Err(format!("no reply to {path} within {within:?}")),
    }
}

/// The server's CPU time so far, user and system (`/proc/PID/stat`, in ticks of
/// 1/100 s: Linux's USER_HZ on every architecture it runs on).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read /proc/PID/stat");
    // The fields after the command's closing parenthesis; utime and stime are
    // the 14th and 15th of the whole line.
    let after = &stat[stat.rfind(')').expect("a command in parentheses") + 2..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}

/// The log lines the server has written so far.
fn log_lines(server: &Server) -> Vec<String> {
    let log = server.stderr.as_ref().expect("kept log");
    std::iter::from_fn(|| log.try_recv().ok()).collect()
}

#[test]
fn out_of_descriptors_the_server_counts_waits_logs_a_few_lines_and_keeps_its_operator_routes() {
    if !cfg!(target_os = "linux") {
        eprintln!("skipped: reads /proc/PID/stat for the server's CPU");
        return;
    }
    let server = Server::start_under_ulimit("-n 64", &["--header-read-timeout", "60s"]);
    let operator = server.operator_url.clone().expect("an operator listener");
    let operator_addr = operator.trim_start_matches("http://").to_owned();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let before = stats(&client(), &operator).await;
        assert_eq!(
            before["descriptors"]["limit"], 64,
            "{}",
            before["descriptors"]
        );
        let open_at_start = before["descriptors"]["open"].as_u64().unwrap();
        assert!(
            open_at_start < 40,
            "room for connections: {open_at_start} open"
        );

        let flooded = Instant::now();
        // Each new connection to the operator at the limit: one failed accept
        // before its lent descriptor.
        let mut operator_asks = 0;
        let mut held = Vec::new();
        for _ in 0..HELD {
            held.push(
                TcpStream::connect(server.addr())
                    .await
                    .expect("the kernel completes the handshake"),
            );
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut at_limit = before.clone();
        while at_limit["accept_errors"] == 0 {
            assert!(
                Instant::now() < deadline,
                "no accept failed within 10 s: {at_limit}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
            let reply = fresh_get(&operator_addr, "/stats", Duration::from_secs(2)).await;
            operator_asks += 1;
            at_limit = reply
                .ok()
                .and_then(|r| serde_json::from_str(r.split("\r\n\r\n").nth(1)?).ok())
                .unwrap_or(at_limit);
        }
        assert_eq!(
            at_limit["descriptors"]["open"], 64,
            "every slot taken: {}",
            at_limit["descriptors"]
        );
        let _ = log_lines(&server);

        // Held at the limit: the data port waits, the operator answers.
        let cpu_before = cpu_seconds(server.pid);
        let began = Instant::now();
        let mut answered = 0;
        while began.elapsed() < HOLD {
            let reply = fresh_get(&operator_addr, "/healthz", Duration::from_secs(1)).await;
            operator_asks += 1;
            let reply =
                reply.unwrap_or_else(|why| panic!("the operator's /healthz at the limit: {why}"));
            assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
            answered += 1;
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        let cores = (cpu_seconds(server.pid) - cpu_before) / began.elapsed().as_secs_f64();
        // Measured 0.012-0.023 of a core in six runs (a debug build, ten
        // failed accepts a second and four /healthz): 4.3x under; a loop
        // that retried at once would take a whole one.
        assert!(cores < 0.1, "{cores:.3} of a core while out of descriptors");
        assert!(answered >= 15, "{answered} answers in {HOLD:?}");
        let data = fresh_get(&server.addr(), "/healthz", Duration::from_millis(500)).await;
        assert!(
            data.is_err(),
            "the data port cannot take a connection: {data:?}"
        );
        let spell = log_lines(&server);
        let on = |listener: &str| -> Vec<&String> {
            spell
                .iter()
                .filter(|l| l.contains("accept") && l.contains(listener))
                .collect()
        };
        let accept_lines = on("on the data port");
        // The line at the spell's start (read before the hold, or just after
        // it began) and the one 5 s after it; as many for the operator's
        // listener, whose own accepts failed before each lent descriptor.
        assert!(
            (1..=2).contains(&accept_lines.len()),
            "a line every 5 s, not every failure: {accept_lines:#?}"
        );
        let operator_lines = on("on the operator's listener");
        assert!(operator_lines.len() <= 2, "{operator_lines:#?}");
        assert!(
            accept_lines
                .iter()
                .any(|l| l.contains("accept still failing on the data port")),
            "{accept_lines:#?}"
        );

        // Let them go: the data port answers again.
        drop(held);
        let reply = fresh_get(&server.addr(), "/healthz", Duration::from_secs(2)).await;
        let reply = reply.unwrap_or_else(|why| panic!("after the connections closed: {why}"));
        assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");

        let after = stats(&client(), &operator).await;
        let failures = after["accept_errors"].as_u64().unwrap();
        let seconds = flooded.elapsed().as_secs_f64();
        // Ten tries a second on the data port, and one for each of the
        // operator's connections.
        let most = 11.0 * seconds + f64::from(operator_asks);
        assert!(
            failures as f64 <= most,
            "{failures} failures in {seconds:.1} s ({operator_asks} asks of the operator): spinning?"
        );
        // 75 failures in 5.8 s in six runs: 1.9x over this floor, 1.1x
        // under the ceiling above (82 there with 18 asks: a pause cannot
        // come sooner than 100 ms, so no run can pass it without spinning).
        assert!(
            failures as f64 >= 8.0 * HOLD.as_secs_f64(),
            "{failures} failures"
        );
        eprintln!(
            "out of descriptors: {cores:.3} of a core, {answered} answers of /healthz, \
             {failures} failed accepts in {seconds:.1} s ({operator_asks} asks of the operator)"
        );
        let metrics = fresh_get(&operator_addr, "/metrics", Duration::from_secs(2))
            .await
            .unwrap();
        let metric = metrics
            .lines()
            .find_map(|l| l.strip_prefix("isim_accept_errors_total "))
            .unwrap_or_else(|| panic!("no isim_accept_errors_total in {metrics}"));
        assert_eq!(metric.trim().parse::<u64>().unwrap(), failures);
        // The spell ends at the first accept a second or more after its last
        // failure: the data port is asked until it says so.
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut ended = Vec::new();
        while !ended
            .iter()
            .any(|l: &String| l.contains("accept works again on the data port"))
        {
            assert!(
                Instant::now() < deadline,
                "no line says it works again: {ended:#?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
            let _ = fresh_get(&server.addr(), "/healthz", Duration::from_secs(1)).await;
            ended.extend(log_lines(&server));
        }
    });
}
