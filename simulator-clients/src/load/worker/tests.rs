//! The clients' pacing on paused time, against a fake server whose service time
//! and stalls are exact, so every count and time below is exact too.

use std::sync::Mutex;

use super::*;
use crate::plan::{Arrivals, RetryPolicy, Stop};
use crate::reporting::report::Report;

/// A server that answers after `service`, and holds every reply due inside
/// `stall` until the stall ends.
struct Fake {
    service: Duration,
    stall: Option<(Instant, Instant)>,
    sends: Arc<Mutex<Vec<Instant>>>,
}

impl Exchange for Fake {
    fn send_element(
        &mut self,
        _body: Body,
        _timeout: Duration,
    ) -> impl Future<Output = Result<Reply, Failure>> + Send {
        let (service, stall, sends) = (self.service, self.stall, Arc::clone(&self.sends));
        async move {
            sends.lock().unwrap().push(Instant::now());
            tokio::time::sleep(service).await;
            if let Some((from, until)) = stall {
                let now = Instant::now();
                if now >= from && now < until {
                    tokio::time::sleep_until(until).await;
                }
            }
            Ok(Reply {
                id: 0,
                blocked: false,
                permit_wait_ns: 0,
                digest: None,
            })
        }
    }
}

struct Run {
    shared: Arc<RunState>,
    sends: Vec<Duration>,
    elapsed: Duration,
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn closed_plan(clients: usize, think: Duration, ramp_up: Duration, stop: Stop) -> LoadPlan {
    LoadPlan {
        stop,
        ..LoadPlan::default()
    }
    .with_load(|load| {
        load.clients = clients;
        load.pacing = Pacing::Closed {
            think_time: think,
            ramp_up,
        };
    })
}

fn open_plan(connections: usize, rate: f64, duration: Duration) -> LoadPlan {
    LoadPlan {
        stop: Stop {
            duration: Some(duration),
            requests_per_client: None,
        },
        ..LoadPlan::default()
    }
    .with_load(|load| {
        load.clients = connections;
        load.pacing = Pacing::Open {
            rate,
            arrivals: Arrivals::Uniform,
        };
    })
}

fn for_duration(d: Duration) -> Stop {
    Stop {
        duration: Some(d),
        requests_per_client: None,
    }
}

/// Runs `plan` against the fake; `stall` is relative to the start.
async fn run(plan: LoadPlan, service: Duration, stall: Option<(Duration, Duration)>) -> Run {
    run_cancelled_at(plan, service, stall, None).await
}

async fn run_cancelled_at(
    plan: LoadPlan,
    service: Duration,
    stall: Option<(Duration, Duration)>,
    cancel_at: Option<Duration>,
) -> Run {
    plan.validate().expect("valid plan");
    let cancel = CancellationToken::new();
    let shared = Arc::new(RunState::new(plan, cancel.clone(), false));
    let start = shared.start;
    if let Some(at) = cancel_at {
        tokio::spawn(async move {
            tokio::time::sleep_until(start + at).await;
            cancel.cancel();
        });
    }
    let sends = Arc::new(Mutex::new(Vec::new()));
    let stall = stall.map(|(from, until)| (start + from, start + until));
    run_clients(Arc::clone(&shared), |_| Fake {
        service,
        stall,
        sends: Arc::clone(&sends),
    })
    .await;
    let elapsed = start.elapsed();
    let mut sends: Vec<Duration> = sends.lock().unwrap().iter().map(|t| *t - start).collect();
    sends.sort();
    Run {
        shared,
        sends,
        elapsed,
    }
}

#[tokio::test(start_paused = true)]
async fn a_closed_loop_sends_once_per_reply_plus_think_time() {
    let plan = closed_plan(10, ms(1000), Duration::ZERO, for_duration(ms(10_000)));
    let r = run(plan, ms(3), None).await;
    let t = r.shared.recorder.tally();
    // Sends at 0, 1.003, 2.006 ... 9.027 s: ten per client.
    assert_eq!((t.sent, t.completed, t.late), (100, 100, 0));
    assert_eq!(r.sends[..10], [Duration::ZERO; 10], "all start together");
    assert_eq!(r.sends[99], ms(9_027));
    assert_eq!(r.elapsed, ms(10_000), "the run lasts its duration");
    assert!(
        t.histograms
            .latency
            .equivalent(t.histograms.latency.min(), 3_000_000)
            && t.histograms
                .latency
                .equivalent(t.histograms.latency.max(), 3_000_000),
        "every reply took the 3 ms service time"
    );
    assert!(
        t.histograms.schedule_lag.max() < 1_000_000,
        "woke on time: {}",
        t.histograms.schedule_lag.max()
    );
}

#[tokio::test(start_paused = true)]
async fn requests_per_client_stops_each_client_after_its_last_reply() {
    let stop = Stop {
        duration: None,
        requests_per_client: Some(3),
    };
    let r = run(closed_plan(5, ms(100), Duration::ZERO, stop), ms(10), None).await;
    assert_eq!(r.shared.recorder.tally().completed, 15);
    assert_eq!(r.elapsed, ms(230), "3 x 10 ms service + 2 x 100 ms think");
}

#[tokio::test(start_paused = true)]
async fn ramp_up_spreads_the_first_sends_evenly() {
    let stop = Stop {
        duration: None,
        requests_per_client: Some(1),
    };
    let r = run(closed_plan(4, ms(1000), ms(1000), stop), ms(1), None).await;
    assert_eq!(r.sends, [ms(0), ms(250), ms(500), ms(750)]);
}

#[tokio::test(start_paused = true)]
async fn cancel_stops_the_run_and_keeps_what_was_measured() {
    let plan = closed_plan(3, ms(1000), Duration::ZERO, for_duration(ms(60_000)));
    let r = run_cancelled_at(plan, ms(10), None, Some(ms(2_500))).await;
    assert_eq!(
        r.shared.recorder.tally().completed,
        9,
        "sends at 0, 1.01, 2.02 s"
    );
    assert_eq!(r.elapsed, ms(2_500));
}

#[tokio::test(start_paused = true)]
async fn an_open_loop_sends_exactly_on_its_timetable() {
    let r = run(open_plan(4, 100.0, ms(10_000)), ms(5), None).await;
    let t = r.shared.recorder.tally();
    assert_eq!((t.sent, t.completed, t.late), (1000, 1000, 0));
    let expected: Vec<Duration> = (0..1000).map(|k| ms(10 * k)).collect();
    assert_eq!(r.sends, expected);
    assert_eq!(r.elapsed, ms(10_000));
}

#[tokio::test(start_paused = true)]
async fn sends_still_queued_when_the_window_closes_are_missed_and_counted() {
    // Two connections at 100/s; the server stalls from 8 s to 12 s, past the
    // 10 s window: the sends due from 8 s on wait for a connection until after
    // the window closes. Every one of the 1,000 is either sent or missed.
    let r = run(
        open_plan(2, 100.0, ms(10_000)),
        ms(5),
        Some((ms(8_000), ms(12_000))),
    )
    .await;
    let t = r.shared.recorder.tally();
    assert_eq!(t.sent + t.missed, 1000, "each send of the timetable once");
    // Sent: the 800 due before the stall, the two that met it, and the two that
    // the connections take when it ends at 12 s (due at 8.02 and 8.03 s: later
    // than late_after, so they are counted missed too, not sent).
    assert_eq!(t.sent, 802, "sent {}", t.sent);
    assert_eq!(t.missed, 198);
}

#[tokio::test(start_paused = true)]
async fn a_stall_shows_in_the_open_loops_latency_and_late_sends() {
    // Two connections at 100/s; the server stalls from 2 s to 4 s.
    let r = run(
        open_plan(2, 100.0, ms(10_000)),
        ms(5),
        Some((ms(2_000), ms(4_000))),
    )
    .await;
    let t = r.shared.recorder.tally();
    assert_eq!(t.sent, 1000, "every scheduled send still leaves");
    // The 200 sends due during the stall leave late, and so do those due while
    // the backlog drains: two connections at 5 ms serve 400/s against 100/s
    // arriving, so the backlog is gone at 2 + 2 x 400 / 300 = 4.67 s.
    assert!((255..=267).contains(&t.late), "late {}", t.late);
    let p99 = |h: &hdrhistogram::Histogram<u64>| Duration::from_nanos(h.value_at_quantile(0.99));
    assert!(
        p99(&t.histograms.latency) > ms(1_500),
        "from the scheduled time the stall is plain: p99 {:?}",
        p99(&t.histograms.latency)
    );
    assert!(
        p99(&t.histograms.latency_from_send) < ms(10),
        "from the actual send only the two stuck requests see it: p99 {:?}",
        p99(&t.histograms.latency_from_send)
    );
    // Lateness split: the sends were late waiting for a connection (both stuck),
    // never because the timer woke late (it cannot in paused time).
    assert!(
        p99(&t.histograms.schedule_lag_connection) > ms(1_000),
        "the stall's lag is the wait for a connection: p99 {:?}",
        p99(&t.histograms.schedule_lag_connection)
    );
    assert!(
        t.histograms.schedule_lag_timer.max() <= 1_000_000,
        "the timer was never late: max {} ns",
        t.histograms.schedule_lag_timer.max()
    );
    assert_eq!(
        t.histograms.schedule_lag_connection.len(),
        t.histograms.schedule_lag.len()
    );
    assert_eq!(
        p99(&t.histograms.schedule_lag),
        p99(&t.histograms.schedule_lag_connection),
        "the lag is its parts' sum"
    );
}

#[tokio::test(start_paused = true)]
async fn a_closed_loop_hides_the_same_stall_in_its_percentiles() {
    // The contrast the open loop exists for: ten closed-loop clients each have one
    // request caught in the stall and simply send less meanwhile, so 10 slow
    // requests of some 5,300 stay under the 1 % a p99 looks at.
    let plan = closed_plan(10, ms(10), Duration::ZERO, for_duration(ms(10_000)));
    let r = run(plan, ms(5), Some((ms(2_000), ms(4_000)))).await;
    let t = r.shared.recorder.tally();
    assert_eq!(t.late, 0, "a closed loop never falls behind its own pace");
    assert!(
        t.histograms.latency.value_at_quantile(0.99) < 10_000_000,
        "p99 {}",
        t.histograms.latency.value_at_quantile(0.99)
    );
}

#[tokio::test(start_paused = true)]
async fn replies_after_the_window_are_drained_and_kept_out_of_the_rates() {
    // 4 clients, no think time, a server that takes 3 s a reply: at the 10 s mark
    // every client has a request out that returns at 12 s, inside the 5 s drain.
    let plan = LoadPlan {
        max_drain: ms(5000),
        ..closed_plan(4, Duration::ZERO, Duration::ZERO, for_duration(ms(10_000)))
    };
    let r = run(plan.clone(), ms(3000), None).await;
    let t = r.shared.recorder.tally();
    assert_eq!(
        r.elapsed,
        ms(12_000),
        "the run waits for the replies in flight"
    );
    assert_eq!(
        (t.completed, t.completed_after_window, t.unanswered),
        (16, 4, 0)
    );
    let report = Report::new(&plan, 0, &t, r.elapsed, None);
    assert_eq!(
        (report.window_ns, report.drain_ns),
        (10_000_000_000, 2_000_000_000)
    );
    // 12 replies within the 10 s window: the rate, whatever the drain took.
    assert_eq!(report.throughput_per_s, 1.2);
    assert_eq!(
        t.histograms.latency.len(),
        16,
        "drained replies are in the latency"
    );
}

#[tokio::test(start_paused = true)]
async fn the_drain_gives_up_at_max_drain_and_says_how_many_it_left() {
    let plan = LoadPlan {
        max_drain: ms(500),
        ..closed_plan(4, Duration::ZERO, Duration::ZERO, for_duration(ms(10_000)))
    };
    let r = run(plan.clone(), ms(3000), None).await;
    let t = r.shared.recorder.tally();
    assert_eq!(r.elapsed, ms(10_500), "bounded by --max-drain");
    assert_eq!(
        (t.completed, t.completed_after_window, t.unanswered),
        (12, 0, 4)
    );
    assert_eq!(t.sent, 16, "unanswered requests were sent");
    let report = Report::new(&plan, 0, &t, r.elapsed, None);
    assert_eq!(report.drain_ns, 500_000_000);
    let text = report.render();
    assert!(text.contains("then drained 500 ms"), "{text}");
    assert!(text.contains("4 unanswered"), "{text}");
}

/// On the real clock, not paused: paused time fires an elapsed sleep at once, and
/// the real timer does not. Nothing here waits, so nothing here is timed.
#[tokio::test]
async fn a_send_already_due_goes_without_waiting_for_a_timer_tick() {
    use futures::FutureExt;
    let plan = closed_plan(1, Duration::ZERO, Duration::ZERO, for_duration(ms(100)));
    let shared = RunState::new(plan, CancellationToken::new(), false);
    // tokio's timer fires even an elapsed sleep only at its next turn (a 1 ms tick
    // in real time); a send that is due must not go through it at all.
    let now = Instant::now();
    let due_now = shared.wait_until(now).now_or_never();
    assert!(
        matches!(due_now, Some(Some(_))),
        "ready at once: {due_now:?}"
    );
    let late = shared.wait_until(now - ms(3)).now_or_never();
    assert!(
        matches!(late, Some(Some(lag)) if lag >= ms(3)),
        "its lag is how late it is: {late:?}"
    );
    assert!(
        tokio::time::sleep_until(now).now_or_never().is_none(),
        "what it avoids"
    );
}

/// A server whose every `fail_every`-th attempt (counting from the first) times
/// out, as an attempt left unanswered past the client's timeout does; the rest
/// are answered after `service`.
struct Flaky {
    service: Duration,
    fail_every: u64,
    attempts: Arc<std::sync::atomic::AtomicU64>,
    sends: Arc<Mutex<Vec<Instant>>>,
}

impl Exchange for Flaky {
    fn send_element(
        &mut self,
        _body: Body,
        timeout: Duration,
    ) -> impl Future<Output = Result<Reply, Failure>> + Send {
        let n = self.attempts.fetch_add(1, Ordering::SeqCst);
        let (service, fails, sends) = (
            self.service,
            n.is_multiple_of(self.fail_every),
            Arc::clone(&self.sends),
        );
        async move {
            sends.lock().unwrap().push(Instant::now());
            if fails {
                tokio::time::sleep(timeout).await;
                return Err(Failure::Timeout);
            }
            tokio::time::sleep(service).await;
            Ok(Reply {
                id: 0,
                blocked: false,
                permit_wait_ns: 0,
                digest: None,
            })
        }
    }
}

/// Runs one closed-loop client per request stream against [`Flaky`].
async fn run_flaky(plan: LoadPlan, fail_every: u64) -> (Arc<RunState>, Vec<Duration>) {
    plan.validate().expect("valid plan");
    let shared = Arc::new(RunState::new(plan, CancellationToken::new(), false));
    let start = shared.start;
    let attempts = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let sends = Arc::new(Mutex::new(Vec::new()));
    run_clients(Arc::clone(&shared), |_| Flaky {
        service: ms(5),
        fail_every,
        attempts: Arc::clone(&attempts),
        sends: Arc::clone(&sends),
    })
    .await;
    let sends = sends.lock().unwrap().iter().map(|t| *t - start).collect();
    (shared, sends)
}

fn retrying(retries: u32, backoff: &str, budget: Option<f64>) -> RetryPolicy {
    RetryPolicy {
        retries,
        backoff: backoff.parse().unwrap(),
        budget_percent: budget,
    }
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_its_backoff_turns_a_timeout_into_a_success() {
    // Every other attempt times out after 100 ms; one retry, 50 ms later, cures it.
    let plan = LoadPlan {
        ..closed_plan(
            1,
            ms(1000),
            Duration::ZERO,
            Stop {
                duration: None,
                requests_per_client: Some(3),
            },
        )
    }
    .with_load(|load| {
        load.timeout = ms(100);
        load.retry = retrying(1, "exp(50ms, 1s)", None);
    });
    let (shared, sends) = run_flaky(plan, 2).await;
    let t = shared.recorder.tally();
    assert_eq!((t.sent, t.retries, t.completed, t.given_up), (6, 3, 3, 0));
    assert_eq!(t.errors.timeout, 3);
    // Attempt at 0 times out at 100, the retry leaves at 150 and is answered at
    // 155; the next request is due 1 s after that reply.
    assert_eq!(sends[..4], [ms(0), ms(150), ms(1155), ms(1305)]);
    assert!(
        t.histograms
            .latency
            .equivalent(t.histograms.latency.max(), 5_000_000),
        "a retry's latency counts from its own send"
    );
    assert!(
        t.histograms
            .request_latency
            .equivalent(t.histograms.request_latency.min(), 155_000_000)
            && t.histograms
                .request_latency
                .equivalent(t.histograms.request_latency.max(), 155_000_000),
        "across attempts: 100 ms timeout, 50 ms backoff, 5 ms answer"
    );
}

#[tokio::test(start_paused = true)]
async fn without_retries_a_timeout_is_a_request_given_up() {
    let plan = LoadPlan {
        ..closed_plan(
            1,
            ms(1000),
            Duration::ZERO,
            Stop {
                duration: None,
                requests_per_client: Some(4),
            },
        )
    }
    .with_load(|load| {
        load.timeout = ms(100);
    });
    let (shared, _) = run_flaky(plan, 2).await;
    let t = shared.recorder.tally();
    assert_eq!((t.sent, t.retries, t.completed, t.given_up), (4, 0, 2, 2));
}

#[tokio::test(start_paused = true)]
async fn the_retry_budget_holds_retries_to_their_share_of_first_attempts() {
    // Every attempt fails; 20 % of first attempts may be retried.
    let plan = LoadPlan {
        ..closed_plan(10, ms(100), Duration::ZERO, for_duration(ms(5_000)))
    }
    .with_load(|load| {
        load.timeout = ms(10);
        load.retry = retrying(3, "none", Some(20.0));
    });
    let (shared, _) = run_flaky(plan, 1).await;
    let t = shared.recorder.tally();
    let firsts = t.sent - t.retries;
    assert!(t.retries > 0, "some retries were allowed");
    assert!(
        t.retries as f64 <= 0.2 * firsts as f64,
        "{} retries for {firsts} first attempts",
        t.retries
    );
    assert_eq!(t.completed, 0);
    assert_eq!(t.given_up, firsts, "every request ended without a success");
}

/// `words` as a load against the default target (a plan's words hold spaces,
/// so they come as a list).
fn load_plan(words: &[&str]) -> LoadPlan {
    let words: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
    let load = simulator_api::Load::parse(&words).expect("the load parses");
    LoadPlan::new(load, "http://127.0.0.1:7878")
}

#[tokio::test(start_paused = true)]
async fn a_four_stage_plans_stages_add_up_to_the_whole_run() {
    let plan = load_plan(&[
        "--think-time",
        "100ms",
        "--stages",
        "warm: ramp 20 5s, base: hold 5s, peak: spike 60 3s, after: hold 4s",
    ]);
    let r = run(plan, ms(20), None).await;
    let total = r.shared.recorder.tally();
    let stages = r.shared.recorder.stages();
    assert_eq!(stages.len(), 4);
    // The plan, and the last replies' 20 ms.
    assert!(
        r.elapsed >= ms(17_000) && r.elapsed <= ms(17_020),
        "{:?}",
        r.elapsed
    );
    let sum = |f: fn(&crate::reporting::record::Interval) -> u64| stages.iter().map(f).sum::<u64>();
    assert_eq!(sum(|s| s.sent), total.sent);
    assert_eq!(sum(|s| s.completed), total.completed);
    assert_eq!(sum(|s| s.late), total.late);
    let latencies: u64 = stages.iter().map(|s| s.latency.len()).sum();
    assert_eq!(latencies, total.histograms.latency.len());
    // 20 clients held for 5 s send 20 / 120 ms a second; the spike 60.
    let per_s = |k: usize, secs: f64| stages[k].sent as f64 / secs;
    let held = 20.0 / 0.12;
    assert!(
        (per_s(1, 5.0) / held - 1.0).abs() < 0.02,
        "base {}",
        per_s(1, 5.0)
    );
    assert!(
        (per_s(2, 3.0) / (3.0 * held) - 1.0).abs() < 0.03,
        "peak {}",
        per_s(2, 3.0)
    );
    assert!(
        (per_s(3, 4.0) / held - 1.0).abs() < 0.03,
        "after {}",
        per_s(3, 4.0)
    );
    // The ramp averages half its level.
    assert!(
        (per_s(0, 5.0) / (held / 2.0) - 1.0).abs() < 0.1,
        "warm {}",
        per_s(0, 5.0)
    );
}

#[tokio::test(start_paused = true)]
async fn a_ramped_open_loops_sends_follow_the_ramp_each_second() {
    let plan = load_plan(&["--n", "50", "--stages", "ramp 1000/s 10s, hold 5s"]);
    let r = run(plan, ms(5), None).await;
    let t = r.shared.recorder.tally();
    assert_eq!(t.late, 0, "every send on time");
    // Second s of the ramp is due the rate's integral over it: 100 s + 50.
    for s in 0..15u64 {
        let sent = r.sends.iter().filter(|d| d.as_secs() == s).count() as f64;
        let due = if s < 10 {
            100.0 * s as f64 + 50.0
        } else {
            1000.0
        };
        assert!(
            (sent / due - 1.0).abs() <= 0.02,
            "second {s}: {sent} sent, {due} due"
        );
    }
    assert_eq!(t.sent, 5_000 + 5_000);
}
