//! `GET /live` and `GET /live/events`: the page, and its stream of server-sent
//! events: `hello` (the history so far) once, then `second` once a second
//! (docs/api.md has the JSON). Read-only, on the data port and the operator's.
//!
//! At most [`super::MAX_VIEWERS`] streams are open at once. A viewer that
//! cannot keep up with [`super::VIEWER_BACKLOG`] seconds is disconnected; every
//! stream ends when the server stops accepting, so an open page never holds up
//! a shutdown. A viewer that stops reading altogether is closed by the
//! listener's write deadline (`connections.rs`).
//!
//! The events are framed here rather than by axum's `Sse`: a join sends the
//! history as the one shared buffer `Live` keeps (`super::Live::join`), not a
//! copy serialised for each viewer, and `Sse` copies every event's data. The
//! framing is the SSE format's three lines (`event:`, `data:`, a blank line)
//! and a comment as keep-alive.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use futures::stream::{self, StreamExt};
use simulator_api::live::BucketBounds;
use simulator_api::live::{LiveHello, LiveTick};
use std::sync::Arc;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use serde::{Deserialize, Serialize};

use super::{page, sampler};
use crate::serving::error::ApiError;
use crate::serving::state::AppState;

/// How soon a page's browser reconnects after its stream ends (the hello's `retry:`).
const RECONNECT_AFTER_MS: u64 = 1_000;
/// A comment this long after the last event keeps proxies from closing a
/// paused replay's stream (axum's `KeepAlive` default).
const KEEP_ALIVE: Duration = Duration::from_secs(15);

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/live", get(page::serve))
        .route("/live/events", get(events))
}

/// `GET /live/events?waits=true`: this viewer asks for each second's slowest
/// request cut into its waits (`slowest.rs`), for as long as it watches.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventsQuery {
    #[serde(default)]
    waits: bool,
}

/// The hello but its history, which is spliced in after as shared bytes.
#[derive(Serialize)]
struct HelloHead<'a> {
    started_ms: u64,
    lifetime_bounds_s: &'a BucketBounds,
    tick: &'a LiveTick,
}

async fn events(
    State(state): State<AppState>,
    ask: Result<Query<EventsQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(ask) = ask.map_err(|e| {
        ApiError::BadRequest(format!(
            "{}; the only query here is ?waits=true or ?waits=false",
            e.body_text()
        ))
    })?;
    let Some(place) = state.live.admit_viewer() else {
        let mut refused = ApiError::Unavailable(format!(
            "the live view already has {} viewers, the most it serves at once (the rest of the \
             operator's connections stay for its own requests); close a page and retry",
            super::MAX_VIEWERS
        ))
        .into_response();
        // Closed once told: a refused page's connection must not hold one of
        // the slots the operator's own requests keep.
        refused.headers_mut().insert(
            header::CONNECTION,
            header::HeaderValue::from_static("close"),
        );
        return Ok(refused);
    };
    let asking = ask.waits.then(|| state.live.waits.ask());
    let mut tick = sampler::tick(&state, None, &state.stats());
    let (history, receiver) = state.live.join(&mut tick);
    let head = HelloHead {
        started_ms: state.live.started_ms(),
        lifetime_bounds_s: &sampler::lifetime_bounds(),
        tick: &tick,
    };
    Ok(events_of(
        hello_around(&head, history),
        state.live.closed(),
        receiver,
        Some,
        (asking, place),
    ))
}

/// The hello event, its JSON's history the bytes `history` (a JSON array).
fn hello_around(head: &HelloHead<'_>, history: Bytes) -> Vec<Bytes> {
    // Two numbers and a tick cannot fail to serialise.
    let head = serde_json::to_string(head).unwrap_or_else(|_| "{}".into());
    let open = head.strip_suffix('}').unwrap_or(&head);
    let comma = if open.len() > 1 { "," } else { "" };
    vec![
        Bytes::from(format!(
            "event: hello\nretry: {RECONNECT_AFTER_MS}\ndata: {open}{comma}\"history\":"
        )),
        history,
        Bytes::from_static(b"}\n\n"),
    ]
}

/// The hello event of a hello made whole (the replay's).
pub fn hello_event(hello: &LiveHello) -> Vec<Bytes> {
    let data = serde_json::to_string(hello).unwrap_or_else(|_| "{}".into());
    vec![Bytes::from(format!(
        "event: hello\nretry: {RECONNECT_AFTER_MS}\ndata: {data}\n\n"
    ))]
}

/// A stream of the live view's events: `hello` (its bytes as given), then
/// each second `text_of` gives, until it gives none (for a replay, a move),
/// the viewer falls [`super::VIEWER_BACKLOG`] behind, or `closed` is
/// cancelled. `held` lives as long as the stream (a viewer's ask for the cut).
/// The replay's stream (`system-simulator replay`) is this one, fed from a
/// recording.
pub fn events_of<T: Clone + Send + 'static, H: Send + 'static>(
    hello: Vec<Bytes>,
    closed: CancellationToken,
    receiver: broadcast::Receiver<T>,
    text_of: fn(T) -> Option<Arc<str>>,
    held: H,
) -> Response {
    let seconds = stream::unfold((receiver, held), move |(mut receiver, held)| {
        let closed = closed.clone();
        async move {
            let next = tokio::select! {
                () = closed.cancelled() => return None,
                next = receiver.recv() => next,
                () = tokio::time::sleep(KEEP_ALIVE) => {
                    return Some((Bytes::from_static(b":\n\n"), (receiver, held)));
                }
            };
            // Too slow for the backlog, or the stream's end: none, and the
            // page reconnects.
            let text = next.ok().and_then(text_of)?;
            let event = format!("event: second\ndata: {text}\n\n");
            Some((Bytes::from(event), (receiver, held)))
        }
    });
    let body = stream::iter(hello).chain(seconds).map(Ok::<_, Infallible>);
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(body))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::response::IntoResponse;
    use http_body_util::BodyExt;
    use simulator_api::Settings;

    use super::*;
    use crate::request_path::DataProcessor;
    use crate::scenario::Scenario;
    use crate::serving::live::VIEWER_BACKLOG;

    fn state() -> AppState {
        let processor = DataProcessor::new(&Settings::default()).unwrap();
        AppState::new(processor, Scenario::load("semaphore-starvation").unwrap())
    }

    /// The next whole event (the hello comes in three frames).
    async fn next_event(body: &mut Body) -> Option<String> {
        let mut event = String::new();
        while !event.ends_with("\n\n") {
            let frame = body.frame().await?.unwrap();
            event.push_str(std::str::from_utf8(&frame.into_data().unwrap()).unwrap());
        }
        Some(event)
    }

    async fn viewer(state: &AppState) -> Body {
        viewer_asking(state, false).await
    }

    async fn viewer_asking(state: &AppState, waits: bool) -> Body {
        let mut body = events(State(state.clone()), Ok(Query(EventsQuery { waits })))
            .await
            .into_response()
            .into_body();
        let hello = next_event(&mut body).await.unwrap();
        assert!(hello.starts_with("event: hello\n"), "{hello}");
        body
    }

    fn second(state: &AppState) {
        state.live.push(sampler::tick(state, None, &state.stats()));
    }

    #[tokio::test]
    async fn a_viewer_asking_for_the_cut_asks_for_as_long_as_its_stream_lives() {
        let state = state();
        let plain = viewer(&state).await;
        assert!(
            !state.live.waits.any(),
            "a viewer asks for no cut by itself"
        );
        let asking = viewer_asking(&state, true).await;
        assert!(state.live.waits.any());
        drop(plain);
        assert!(state.live.waits.any());
        drop(asking);
        assert!(!state.live.waits.any(), "its stream gone, its ask is too");
    }

    #[tokio::test]
    async fn a_viewer_that_keeps_up_gets_every_second() {
        let state = state();
        let mut body = viewer(&state).await;
        for _ in 0..3 * VIEWER_BACKLOG {
            second(&state);
            let event = next_event(&mut body).await.unwrap();
            assert!(event.starts_with("event: second\n"), "{event}");
        }
        state.live.close();
        assert_eq!(
            next_event(&mut body).await,
            None,
            "the stream ends with the server"
        );
    }

    #[tokio::test]
    async fn a_viewer_that_falls_behind_is_dropped_not_buffered() {
        let state = state();
        let mut slow = viewer(&state).await;
        for _ in 0..VIEWER_BACKLOG + 2 {
            second(&state);
        }
        assert_eq!(state.live.viewers(), 1);
        // Its seconds were not kept for it: the stream ends instead.
        assert_eq!(next_event(&mut slow).await, None);
        assert_eq!(state.live.viewers(), 0);
    }
}
