//! `GET /live` and `GET /live/events`: the page, and its stream of server-sent
//! events: `hello` (the history so far) once, then `second` once a second
//! (docs/api.md has the JSON). Read-only, on the data port and the operator's.
//!
//! At most [`super::MAX_VIEWERS`] streams are open at once. A viewer that
//! cannot keep up with [`super::VIEWER_BACKLOG`] seconds is disconnected; every stream ends when the server stops accepting, so an open
//! page never holds up a shutdown.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::routing::get;
use axum::Router;
use futures::stream::{self, Stream, StreamExt};
use simulator_api::live::LiveHello;
use std::sync::Arc;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use serde::Deserialize;

use super::{page, sampler};
use crate::serving::error::ApiError;
use crate::serving::state::AppState;

/// How soon a page's browser reconnects after its stream ends.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);

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

async fn events(
    State(state): State<AppState>,
    ask: Result<Query<EventsQuery>, QueryRejection>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let Query(ask) = ask.map_err(|e| {
        ApiError::BadRequest(format!(
            "{}; the only query here is ?waits=true or ?waits=false",
            e.body_text()
        ))
    })?;
    let place = state.live.admit_viewer().ok_or_else(|| {
        ApiError::Unavailable(format!(
            "the live view already has {} viewers, the most it serves at once (the rest of the \
             operator's connections stay for its own requests); close a page and retry",
            super::MAX_VIEWERS
        ))
    })?;
    let asking = ask.waits.then(|| state.live.waits.ask());
    let mut tick = sampler::tick(&state, None, &state.stats());
    let (history, receiver) = state.live.join(&mut tick);
    let hello = LiveHello {
        started_ms: state.live.started_ms(),
        lifetime_bounds_s: sampler::lifetime_bounds(),
        history,
        tick,
        replay: None,
    };
    Ok(events_of(
        &hello,
        state.live.closed(),
        receiver,
        Some,
        (asking, place),
    ))
}

/// A stream of the live view's events: `hello`, then each second `text_of`
/// gives, until it gives none (for a replay, a move), the viewer falls
/// [`super::VIEWER_BACKLOG`] behind, or `closed` is cancelled. `held` lives as
/// long as the stream (a viewer's ask for the cut). The replay's stream
/// (`system-simulator replay`) is this one, fed from a recording.
pub fn events_of<T: Clone + Send + 'static, H: Send + 'static>(
    hello: &LiveHello,
    closed: CancellationToken,
    receiver: broadcast::Receiver<T>,
    text_of: fn(T) -> Option<Arc<str>>,
    held: H,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    // `retry`: a page reconnects a second after its stream ends (a restart).
    let hello = Event::default()
        .event("hello")
        .retry(RECONNECT_AFTER)
        .json_data(hello)
        .unwrap_or_else(|e| Event::default().event("error").data(e.to_string()));
    let seconds = stream::unfold((receiver, held), move |(mut receiver, held)| {
        let closed = closed.clone();
        async move {
            let next = tokio::select! {
                () = closed.cancelled() => return None,
                next = receiver.recv() => next,
            };
            // Too slow for the backlog, or the stream's end: none, and the
            // page reconnects.
            let text = next.ok().and_then(text_of)?;
            Some((
                Event::default().event("second").data(&*text),
                (receiver, held),
            ))
        }
    });
    Sse::new(stream::once(async { hello }).chain(seconds).map(Ok)).keep_alive(KeepAlive::default())
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

    async fn next_event(body: &mut Body) -> Option<String> {
        let frame = body.frame().await?.unwrap();
        Some(String::from_utf8(frame.into_data().unwrap().to_vec()).unwrap())
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
