//! The replay's position and its routes: `GET /live` (the live view's own
//! page), `GET /live/events` (the live stream's events, from the film),
//! `GET /replay` and `PUT /replay` (where it is, and a move).
//!
//! One position for every viewer, as one server has one present: a room
//! watching a facilitator's replay sees what the facilitator moves to. A move
//! ends every stream; each page joins again and gets the history up to the new
//! position (its own page at once, others after the stream's one-second retry).
//! A second is sent and a viewer joins under the same lock, so no viewer misses
//! a second or gets one twice (the live view's rule, `serving/live/mod.rs`).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::extract::rejection::JsonRejection;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::{Json, Router};
use simulator_api::live::{LiveHello, ReplayMove, ReplayState, REPLAY_SPEEDS};
use simulator_api::ErrorBody;
use simulator_service::parts::live::{page, sampler, stream};
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use super::film::Film;

/// Seconds a viewer may fall behind before its stream ends (the live view's).
const VIEWER_BACKLOG: usize = simulator_service::parts::live::VIEWER_BACKLOG;

/// The film, where it is, and its viewers.
#[derive(Debug)]
pub struct Player {
    film: Film,
    file: String,
    stopped: Option<String>,
    position: Mutex<Position>,
    /// Each second shown, as the JSON tick the stream sends; or a move.
    shown: broadcast::Sender<Shown>,
    /// Bumped at each move: the clock starts its second again.
    moves: watch::Sender<u64>,
    /// Cancelled at shutdown: every stream ends.
    pub closed: CancellationToken,
}

#[derive(Debug, Clone, Copy)]
struct Position {
    at: u64,
    speed: f64,
    paused: bool,
}

#[derive(Debug, Clone)]
enum Shown {
    Second(Arc<str>),
    Moved,
}

impl Player {
    pub fn new(film: Film, file: String, stopped: Option<String>, start: ReplayMove) -> Arc<Self> {
        let at = start.at_s.unwrap_or(0).min(film.length_s());
        let position = Position {
            at,
            speed: start.speed.unwrap_or(1.0),
            paused: start.paused.unwrap_or(false) || at == film.length_s(),
        };
        Arc::new(Self {
            film,
            file,
            stopped,
            position: Mutex::new(position),
            shown: broadcast::channel(VIEWER_BACKLOG).0,
            moves: watch::channel(0).0,
            closed: CancellationToken::new(),
        })
    }

    pub fn state(&self) -> ReplayState {
        self.state_of(*self.lock())
    }

    fn state_of(&self, p: Position) -> ReplayState {
        ReplayState {
            file: self.file.clone(),
            began_ms: self.film.began_ms,
            at_s: p.at,
            length_s: self.film.length_s(),
            speed: p.speed,
            paused: p.paused,
            stopped: self.stopped.clone(),
        }
    }

    /// Applies a move, or says why not (nothing changes then).
    pub fn apply(&self, change: &ReplayMove) -> Result<ReplayState, String> {
        let length = self.film.length_s();
        if let Some(at) = change.at_s {
            if at > length {
                return Err(format!("at_s {at} is past the recording's end, {length} s"));
            }
        }
        if let Some(speed) = change.speed {
            let (slowest, fastest) = REPLAY_SPEEDS;
            if !(slowest..=fastest).contains(&speed) {
                return Err(format!(
                    "speed {speed}: from {slowest} to {fastest} recorded seconds a second"
                ));
            }
        }
        let state = {
            let mut p = self.lock();
            p.at = change.at_s.unwrap_or(p.at);
            p.speed = change.speed.unwrap_or(p.speed);
            // At the end it holds, as a film does: a move back stays held
            // until someone presses play.
            p.paused = change.paused.unwrap_or(p.paused) || p.at == length;
            // Nothing is no viewer; the streams end and join at the new place.
            let _ = self.shown.send(Shown::Moved);
            self.state_of(*p)
        };
        self.moves.send_modify(|n| *n += 1);
        Ok(state)
    }

    /// Shows the seconds at the position's pace until shutdown.
    pub async fn play(self: Arc<Self>) {
        let mut moves = self.moves.subscribe();
        loop {
            let Position { at, speed, paused } = *self.lock();
            let holding = paused || at == self.film.length_s();
            let wait = async {
                if holding {
                    std::future::pending::<()>().await;
                }
                tokio::time::sleep(Duration::from_secs_f64(1.0 / speed)).await;
            };
            tokio::select! {
                () = self.closed.cancelled() => return,
                changed = moves.changed() => if changed.is_err() { return },
                () = wait => self.advance(),
            }
        }
    }

    fn advance(&self) {
        let mut p = self.lock();
        if p.paused || p.at >= self.film.length_s() {
            return;
        }
        p.at += 1;
        p.paused = p.at == self.film.length_s();
        let text = serde_json::to_string(&self.film.tick_at(p.at)).unwrap_or_default();
        let _ = self.shown.send(Shown::Second(text.into()));
    }

    /// A new viewer: the hello at the position, and what is shown from there.
    fn join(&self) -> (LiveHello, broadcast::Receiver<Shown>) {
        let p = self.lock();
        // As live: the hello's second is already the history's last.
        let mut tick = self.film.tick_at(p.at);
        tick.second = None;
        let hello = LiveHello {
            started_ms: self.film.began_ms,
            lifetime_bounds_s: sampler::lifetime_bounds(),
            history: self.film.history_at(p.at),
            tick,
            replay: Some(self.state_of(*p)),
        };
        (hello, self.shown.subscribe())
    }

    fn lock(&self) -> MutexGuard<'_, Position> {
        // Nothing under this lock panics; a poisoned one still holds a position.
        self.position.lock().unwrap_or_else(|p| p.into_inner())
    }
}

pub fn routes(player: Arc<Player>) -> Router {
    Router::new()
        .route("/", get(|| async { Redirect::temporary("/live") }))
        .route("/live", get(page::serve))
        .route("/live/events", get(events))
        .route("/replay", get(state).put(move_to))
        .with_state(player)
}

async fn state(State(player): State<Arc<Player>>) -> Json<ReplayState> {
    Json(player.state())
}

async fn move_to(
    State(player): State<Arc<Player>>,
    body: Result<Json<ReplayMove>, JsonRejection>,
) -> Response {
    let refused = |message: String| {
        let body = ErrorBody {
            error: "bad_move".into(),
            message,
        };
        (StatusCode::BAD_REQUEST, Json(body)).into_response()
    };
    let Json(change) = match body {
        Ok(body) => body,
        Err(e) => {
            return refused(format!(
                "{}: a move is JSON with at_s, speed or paused",
                e.body_text()
            ))
        }
    };
    match player.apply(&change) {
        Ok(state) => Json(state).into_response(),
        Err(why) => refused(why),
    }
}

async fn events(State(player): State<Arc<Player>>) -> Response {
    let (hello, receiver) = player.join();
    stream::events_of(
        stream::hello_event(&hello),
        player.closed.clone(),
        receiver,
        |shown| match shown {
            Shown::Second(text) => Some(text),
            // A move: the page joins again at the new place.
            Shown::Moved => None,
        },
        // A recording's cut costs no server: every second has it.
        (),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::replay::film::{fixture, make};

    fn player(seconds: usize, start: ReplayMove) -> Arc<Player> {
        let film = make(&fixture::recording(&vec![2; seconds])).unwrap();
        Player::new(film, "run.isim".into(), None, start)
    }

    fn at(speed: f64) -> ReplayMove {
        ReplayMove {
            at_s: None,
            speed: Some(speed),
            paused: None,
        }
    }

    async fn next_second(shown: &mut broadcast::Receiver<Shown>) -> u64 {
        match shown.recv().await.unwrap() {
            Shown::Second(text) => {
                let tick: simulator_api::live::LiveTick = serde_json::from_str(&text).unwrap();
                tick.second.unwrap().t
            }
            Shown::Moved => panic!("a move, not a second"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn it_plays_each_second_once_at_its_speed_and_holds_at_the_end() {
        let player = player(5, at(2.0));
        let (hello, mut shown) = player.join();
        assert!(hello.history.is_empty());
        assert_eq!(
            hello.tick.second, None,
            "the hello's second is in its history"
        );
        let began = tokio::time::Instant::now();
        tokio::spawn(player.clone().play());
        for t in 1..=5 {
            assert_eq!(next_second(&mut shown).await, t);
        }
        assert_eq!(began.elapsed(), Duration::from_millis(2500), "two a second");
        let state = player.state();
        assert_eq!((state.at_s, state.paused), (5, true));
        // Held: an hour later nothing more was shown.
        tokio::time::sleep(Duration::from_secs(3600)).await;
        assert!(shown.try_recv().is_err());
        player.closed.cancel();
    }

    #[tokio::test(start_paused = true)]
    async fn a_move_ends_the_streams_and_a_viewer_joins_at_the_new_place() {
        let player = player(10, at(1.0));
        let (_, mut shown) = player.join();
        let moved = player
            .apply(&ReplayMove {
                at_s: Some(7),
                speed: None,
                paused: Some(true),
            })
            .unwrap();
        assert_eq!((moved.at_s, moved.paused), (7, true));
        assert!(matches!(shown.recv().await.unwrap(), Shown::Moved));
        let (hello, _) = player.join();
        let history: Vec<u64> = hello.history.iter().map(|s| s.t).collect();
        assert_eq!(history, (1..=7).collect::<Vec<_>>());
        assert_eq!(hello.tick.totals.requests_done, 14);
        assert_eq!(hello.replay.unwrap().at_s, 7);
    }

    #[tokio::test(start_paused = true)]
    async fn moved_back_from_the_end_it_holds_until_played() {
        let player = player(
            3,
            ReplayMove {
                at_s: Some(3),
                speed: Some(1.0),
                paused: None,
            },
        );
        assert!(player.state().paused, "it starts at its end: held");
        player
            .apply(&ReplayMove {
                at_s: Some(1),
                speed: None,
                paused: None,
            })
            .unwrap();
        let (_, mut shown) = player.join();
        tokio::spawn(player.clone().play());
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert!(shown.try_recv().is_err(), "held at second 1");
        player
            .apply(&ReplayMove {
                at_s: None,
                speed: None,
                paused: Some(false),
            })
            .unwrap();
        assert!(matches!(shown.recv().await.unwrap(), Shown::Moved));
        let (_, mut shown) = player.join();
        assert_eq!(next_second(&mut shown).await, 2);
        player.closed.cancel();
    }

    #[test]
    fn a_bad_move_is_refused_with_its_reason_and_changes_nothing() {
        let player = player(4, at(1.0));
        let before = player.state();
        let past = player.apply(&ReplayMove {
            at_s: Some(5),
            speed: None,
            paused: Some(true),
        });
        assert!(past.unwrap_err().contains("past the recording's end, 4 s"));
        for speed in [0.0, 0.01, 101.0, f64::NAN] {
            let why = player.apply(&at(speed)).unwrap_err();
            assert!(why.contains("from 0.1 to 100"), "{speed}: {why}");
        }
        assert_eq!(player.state(), before);
    }
}
