//! `GET /admin/tap?events=NAME,NAME`: the probe tap (`observe/tap.rs`) as a text
//! stream, one line an event, for `system-simulator trace` and for `curl -N`.
//! An admin route, so it obeys `--admin-token` and answers loopback callers only
//! without one.
//!
//! The body starts with a `#` line naming the events asked for (all of them when
//! `events` is left out); then each event is `NS PROBE ARG0 ARG1 ...`: ns since
//! the tap began, the probe's name, and its arguments as declared (`GET /probes`'s
//! table, `system-simulator probes`). A line `lost N` says that N events were
//! dropped there because this reader fell a ring behind ([`TAP_BACKLOG`]). The
//! subscription is in force once the response's head has arrived; it ends when
//! the reader hangs up, the server stops, or `DELETE /admin/tap/{id}` (the id is
//! in the `#` line) asks: then after every event that fired before it, so a
//! reader that stops loses nothing still in transit.
//!
//! Events are written in batches of up to [`BATCH_BYTES`], gathered for up to
//! [`GATHER`], so a busy stream costs a write per batch, not per event.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::Response;
use bytes::Bytes;
use futures::stream::{self, Stream, StreamExt};
use serde::Deserialize;
use simulator_api::events::EVENTS;

use super::error::ApiError;
use super::state::AppState;
use tokio_util::sync::CancellationToken;

use crate::observe::tap::{self, Read, Subscription, TapEvent, END_MARK, TAP_BACKLOG};

/// The most one write of the stream carries.
const BATCH_BYTES: usize = 32 * 1024;

/// How long a batch gathers after its first event, unless [`BATCH_EVENTS`] are
/// waiting already: a reader sees events a millisecond or so late, which no
/// script's report can tell, and the server writes a thousand times a second at
/// most instead of once an event.
const GATHER: Duration = Duration::from_millis(1);

/// The longest a reader may ask a batch to gather (`gather_ms`): a recorder,
/// which wants no event soon, only all of them cheaply. The ring holds 0.65 s
/// of a flat-out load, so a longer gather would lose events there.
pub const MAX_GATHER_MS: u64 = 500;

/// Events waiting that make a batch worth writing at once.
const BATCH_EVENTS: u64 = 512;

#[derive(Debug, Deserialize)]
pub struct TapAsk {
    /// Comma-separated event names; every event when absent.
    events: Option<String>,
    /// How long a batch gathers after its first event, in ms (1 to
    /// [`MAX_GATHER_MS`]; default [`GATHER`]): fewer writes and wake-ups for a
    /// reader that does not need its events within a millisecond.
    gather_ms: Option<u64>,
}

pub async fn stream(
    State(state): State<AppState>,
    ask: Result<Query<TapAsk>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(ask) = ask.map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let names: Vec<&str> = match &ask.events {
        Some(list) => list
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .collect(),
        None => EVENTS.iter().map(|e| e.probe).collect(),
    };
    if names.is_empty() {
        return Err(ApiError::BadRequest(
            "events= names no event; leave it out for all of them".into(),
        ));
    }
    let wanted = tap::wanted_of(names.iter().copied()).map_err(|unknown| {
        let all: Vec<&str> = EVENTS.iter().map(|e| e.probe).collect();
        ApiError::BadRequest(format!(
            "no event {}; the events are {}",
            unknown.join(", "),
            all.join(", ")
        ))
    })?;
    let gather = match ask.gather_ms {
        None => GATHER,
        Some(ms @ 1..=MAX_GATHER_MS) => Duration::from_millis(ms),
        Some(ms) => {
            return Err(ApiError::BadRequest(format!(
                "gather_ms={ms}: from 1 to {MAX_GATHER_MS} ms"
            )))
        }
    };
    let subscription = tap::subscribe(wanted).map_err(|e| ApiError::Unavailable(e.to_string()))?;
    let head = Bytes::from(format!(
        "# isim tap {}: {}; each line: ns since the tap began, the probe, its arguments; \
         'lost N': N events dropped while this reader was more than {TAP_BACKLOG} behind; \
         DELETE /admin/tap/{} ends it after the events so far\n",
        subscription.id,
        names.join(" "),
        subscription.id
    ));
    let body = stream::once(async { Ok::<_, Infallible>(head) })
        .chain(batches(subscription, wanted, gather, state.live.closed()))
        .filter(|chunk| std::future::ready(!matches!(chunk, Ok(b) if b.is_empty())));
    Response::builder()
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .header(header::CACHE_CONTROL, "no-store")
        .body(Body::from_stream(body))
        .map_err(|e| ApiError::Internal(e.to_string()))
}

/// The subscription's events as text, a batch of what is waiting at a time. The
/// stream owns the subscription: the reader gone or the server stopping drops
/// it, which takes its events off the tap.
fn batches(
    subscription: Subscription,
    wanted: u64,
    gather: Duration,
    closed: CancellationToken,
) -> impl Stream<Item = Result<Bytes, Infallible>> {
    stream::unfold(Some(subscription), move |subscription| {
        let closed = closed.clone();
        async move {
            // Ended by its mark: the last batch went out, now the end of the body.
            let mut subscription = subscription?;
            tokio::select! {
                () = closed.cancelled() => return None,
                () = subscription.wait() => {}
            }
            // Let a batch gather: a write and a wake-up a millisecond at most,
            // not one an event (a busy server fires hundreds of thousands a second).
            if subscription.behind() < BATCH_EVENTS {
                tokio::select! {
                    () = closed.cancelled() => {}
                    () = tokio::time::sleep(gather) => {}
                }
            }
            let mut text = Vec::with_capacity(BATCH_BYTES + 256);
            let mut ending = false;
            loop {
                match subscription.read() {
                    Read::Event(event) if event.probe == END_MARK => {
                        if event.args[0] == subscription.id {
                            ending = true;
                            break;
                        }
                    }
                    Read::Event(event) if wanted & (1 << event.probe) != 0 => {
                        write_event(&mut text, &event)
                    }
                    Read::Event(_) => {}
                    Read::Lost(lost) => {
                        text.extend_from_slice(b"lost ");
                        push_number(&mut text, lost);
                        text.push(b'\n');
                    }
                    Read::Empty => break,
                }
                if text.len() >= BATCH_BYTES {
                    break;
                }
            }
            let next_state = (!ending).then_some(subscription);
            Some((Ok(Bytes::from(text)), next_state))
        }
    })
}

/// `NS PROBE ARGS...`, the probe's declared arguments only.
fn write_event(text: &mut Vec<u8>, event: &TapEvent) {
    let declared = &EVENTS[usize::from(event.probe)];
    push_number(text, event.at_ns);
    text.push(b' ');
    text.extend_from_slice(declared.probe.as_bytes());
    for &arg in &event.args[..declared.args.len()] {
        text.push(b' ');
        push_number(text, arg);
    }
    text.push(b'\n');
}

/// `n` in decimal, by itoa (two digits a step from a table): this is the
/// stream's inner loop, six numbers an event at hundreds of thousands of events a
/// second, where `write!`'s formatting machinery cost more than the rest of an
/// event's way to the socket.
fn push_number(text: &mut Vec<u8>, n: u64) {
    text.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// `DELETE /admin/tap/{id}`: ends subscription `id`'s stream after every event
/// sent so far (404 when there is no such subscription).
pub async fn end(Path(id): Path<u64>) -> Result<&'static str, ApiError> {
    if tap::end(id) {
        Ok("ending after the events so far\n")
    } else {
        Err(ApiError::NotFound(format!(
            "/admin/tap/{id}: no such tap subscription"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_a_line_of_its_declared_arguments() {
        let mut text = Vec::new();
        let start = EVENTS
            .iter()
            .position(|e| e.probe == "request-start")
            .unwrap();
        let event = TapEvent {
            probe: start as u8,
            at_ns: 1_000_000_007,
            args: [18_446_744_073_709_551_615, 0, 5, 9, 9, 9],
        };
        write_event(&mut text, &event);
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "1000000007 request-start 18446744073709551615 0 5\n"
        );
    }
}
