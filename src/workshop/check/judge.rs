//! The verdict's figures: every bar of the scenario measured on the window
//! (each metric computes its own, `metrics/`), from the clients' report and
//! the server's figures around it, once the server is known to have seen the
//! check's requests and not many more; and the notes beside them.

use simulator_api::client;
use simulator_api::load::Load;
use simulator_api::Counts;
use simulator_clients::Report;

use super::metrics::{Bar, Window};
use super::window::WindowRun;
use super::{Measured, Stop};
use simulator_service::scenario::Scenario;

/// Every condition measured on the window, once the server is known to have
/// seen the check's requests and not many more: another load beside the check's
/// would change what the window means.
pub(super) async fn judge(
    scenario: &Scenario,
    bars: &[Bar],
    target: &str,
    load: &Load,
    ran: &WindowRun,
) -> Result<(Vec<Measured>, Vec<String>), Stop> {
    let after = client::stats(target).await?;
    let between_reads_s = ran.before_at.elapsed().as_secs_f64();
    let report = &ran.report;
    let Some(server) = &report.server else {
        return Err(Stop::Refused(
            "the server's /stats did not answer around the window".into(),
        ));
    };
    the_checks_requests_alone(report, server)?;
    let window = Window {
        scenario,
        report,
        server,
        seconds: report.window_ns as f64 / 1e9,
        before: &ran.before,
        after: &after,
        between_reads_s,
        watched: &ran.unwritten,
        retried: ran.retried,
        incident_end_s: ran.incident_end_s,
        open_loop: matches!(load.pacing, simulator_api::load::Pacing::Open { .. }),
    };
    let measured = bars
        .iter()
        .map(|bar| {
            let value = bar.metric.measure(&window);
            Measured {
                bar: *bar,
                value,
                holds: bar.holds(value),
            }
        })
        .collect();
    let notes = descriptor_limit_note(scenario, &after)
        .into_iter()
        .chain(memory_limit_note(scenario, &after))
        .collect();
    Ok((measured, notes))
}

/// In a world that sets the descriptor limit, the limit the server has now,
/// as the check read it: raised from outside (`prlimit`) it is no longer the
/// world's, and the growth, not the limit, is what the check judges.
fn descriptor_limit_note(scenario: &Scenario, after: &simulator_api::Stats) -> Option<String> {
    let world = scenario.settings().descriptor_limit as u64;
    let limit = after.descriptors?.limit;
    (world > 0).then(|| match limit == world {
        true => format!("the server's descriptor limit: {limit}, the world's"),
        false => format!(
            "the server's descriptor limit: {limit}, not the world's {world}: a higher limit moves the cliff, and the growth is what is judged"
        ),
    })
}

/// In a world that sets the memory limit, the limit the server has now, as the
/// check read it: raised from outside (`prlimit --data`) it only moves the
/// kill, and the growth, not the limit, is what the check judges.
fn memory_limit_note(scenario: &Scenario, after: &simulator_api::Stats) -> Option<String> {
    let world = scenario.settings().memory_limit;
    let mib = |bytes: u64| format!("{} MiB", bytes >> 20);
    let limit = after.memory?.limit_bytes;
    (world > 0).then(|| match limit {
        Some(limit) if limit == world => {
            format!("the server's memory limit: {}, the world's", mib(limit))
        }
        limit => format!(
            "the server's memory limit: {}, not the world's {}: a higher limit moves the kill, and the growth is what is judged",
            limit.map_or("none".to_owned(), mib),
            mib(world)
        ),
    })
}

/// Refused unless the server saw about the requests the check sent: many more
/// is another load beside it; many fewer, requests that went elsewhere. An
/// attempt that failed short of a reply (never connected, timed out, its
/// connection broken) may never have reached the server's count: a starved
/// server (cold-cache's, beside thirteen other exercises' on two CPUs) counted
/// 13,273 of 18,554 while its clients gave up on thousands.
fn the_checks_requests_alone(report: &Report, server: &Counts) -> Result<(), Stop> {
    let sent = report.requests_sent as f64;
    let seen = server.requests_started as f64;
    let errors = &report.errors_by_kind;
    let maybe_unseen =
        (errors.connect + errors.connect_timeout + errors.timeout + errors.io) as f64;
    if seen < (sent - maybe_unseen) * 0.95 || seen > sent * 1.1 + 20.0 {
        return Err(Stop::Refused(format!(
            "the server counted {seen:.0} requests while the check sent {sent:.0}: stop any other load (the check brings its own) and check again"
        )));
    }
    Ok(())
}
