//! The room's HTTP routes (docs/api.md, "The room"): the page, its stream of
//! boards (server-sent events, a new board within a moment of any change and
//! every few seconds for the clocks), the board as JSON and CSV, and the calls
//! that change the room: join, report, reveal, free. Who may see what is
//! decided once per request (`auth.rs`): the room's key is the
//! facilitator, a seat's token the seat, nothing the projector.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::rejection::ExtensionRejection;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{delete, get, post, put};
use axum::{Form, Json, Router};
use futures::stream::{self, Stream};
use simulator_api::room::{
    Board, CompareReport, DrillReport, JoinAnswer, JoinRequest, ReadyReport, Reveal,
    SeatComparison, SeatReport, SeatTrail, Viewer,
};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::auth::{self, bearer, Asker};
use super::board::{Refusal, Room};
pub use super::refused::Refused;
use super::view::Looking;

/// A board is sent at least this often, so "stuck" and the clocks move on a
/// page nobody reports to.
const REFRESH_EVERY: Duration = Duration::from_secs(5);
/// How long a stream gathers changes before it sends their board: 30 seats
/// reporting once a second are a board or two a second, not 30.
const GATHER: Duration = Duration::from_millis(500);
/// The largest body the room reads: a report is about 1 KiB.
const BODY_LIMIT: usize = 64 * 1024;

/// The room and what serving it needs.
#[derive(Debug)]
pub struct Shared {
    pub room: Mutex<Room>,
    /// The exercises as their attendees know them (each scenario's
    /// `visible_name`): the board's columns and the names a report may carry.
    pub exercises: Vec<String>,
    /// Each cause's name and its exercise's: a seat's check older than the
    /// exercises' own names reports the cause's, and is counted as the other.
    pub aliases: Vec<(String, String)>,
    pub stuck_after: Duration,
    /// Bumped on every change: the streams and the state file follow it.
    pub changes: watch::Sender<u64>,
    /// Cancelled at shutdown: every stream ends.
    pub closed: CancellationToken,
    pub state_file: Option<PathBuf>,
}

impl Shared {
    pub fn new(room: Room, stuck_after: Duration, state_file: Option<PathBuf>) -> Arc<Shared> {
        // The bundled scenarios are compiled in and parsed by a unit test:
        // failing here is a broken build, not bad input.
        let bundled = simulator_service::scenario::bundled()
            .unwrap_or_else(|e| panic!("the bundled scenarios are broken: {e}"));
        Arc::new(Shared {
            room: Mutex::new(room),
            exercises: bundled
                .iter()
                .map(|s| s.visible_name().to_owned())
                .collect(),
            aliases: bundled
                .iter()
                .map(|s| (s.name.clone(), s.visible_name().to_owned()))
                .collect(),
            stuck_after,
            changes: watch::channel(0).0,
            closed: CancellationToken::new(),
            state_file,
        })
    }

    pub(super) fn room(&self) -> std::sync::MutexGuard<'_, Room> {
        // A panic while holding it would be a bug in board.rs; the room stays usable.
        self.room.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn changed(&self) {
        self.changes.send_modify(|v| *v += 1);
    }

    pub fn board(&self, viewer: Viewer, seat: Option<&str>) -> Board {
        let looking = Looking {
            viewer,
            seat,
            now_ms: now_ms(),
            stuck_after_ms: self.stuck_after.as_millis() as u64,
        };
        self.room().board(&self.exercises, looking)
    }
}

pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

pub fn routes(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/", get(|| async { Redirect::to("/room") }))
        .route("/room", get(super::page::serve))
        .route("/room/events", get(events))
        .route("/room/board", get(board))
        .route("/room.csv", get(csv))
        .route("/room/login", get(sign_in_form).post(sign_in))
        .route("/room/logout", post(sign_out))
        .route("/room/join", post(join))
        .route("/room/report", post(report))
        .route("/room/ready", post(ready))
        .route("/room/drill", post(drill))
        .route("/room/trails", get(trails))
        .route("/room/compare", post(compare))
        .route("/room/comparisons", get(comparisons))
        .route("/room/reveal", put(reveal))
        .route("/room/seats/{seat}", delete(free))
        .route("/healthz", get(|| async { "ok\n" }))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(shared)
}

async fn board(State(shared): State<Arc<Shared>>, asker: Asker) -> Result<Json<Board>, Refused> {
    let (viewer, seat) = asker.viewer(&shared.room())?;
    Ok(Json(shared.board(viewer, seat.as_deref())))
}

/// `GET /room/events`: `board` at once, then after each change (a burst of
/// changes within [`GATHER`] is one board) unless this viewer's board is the
/// same as the last sent, and every [`REFRESH_EVERY`].
async fn events(
    State(shared): State<Arc<Shared>>,
    asker: Asker,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, Refused> {
    let (viewer, seat) = asker.viewer(&shared.room())?;
    let changes = shared.changes.subscribe();
    let boards = stream::unfold((changes, None), move |(mut changes, last)| {
        let (shared, seat) = (shared.clone(), seat.clone());
        async move {
            let board = loop {
                if last.is_some() {
                    tokio::select! {
                        () = shared.closed.cancelled() => return None,
                        changed = changes.changed() => {
                            changed.ok()?;
                            tokio::time::sleep(GATHER).await;
                        }
                        () = tokio::time::sleep(REFRESH_EVERY) => {}
                    }
                }
                changes.mark_unchanged();
                let board = shared.board(viewer, seat.as_deref());
                if last
                    .as_ref()
                    .is_none_or(|sent| !same_but_the_clock(sent, &board))
                {
                    break board;
                }
            };
            let event = Event::default()
                .event("board")
                .retry(Duration::from_secs(1))
                .json_data(&board)
                .unwrap_or_else(|e| Event::default().event("error").data(e.to_string()));
            Some((Ok(event), (changes, Some(board))))
        }
    });
    Ok(Sse::new(boards).keep_alive(KeepAlive::default()))
}

/// Whether two boards differ only in when they were made: a page whose row
/// nobody changed is not sent the same board again (the refresh still is,
/// for the clocks, once a [`REFRESH_EVERY`]).
fn same_but_the_clock(sent: &Board, now: &Board) -> bool {
    now.now_ms.saturating_sub(sent.now_ms) < REFRESH_EVERY.as_millis() as u64
        && Board {
            now_ms: now.now_ms,
            ..sent.clone()
        } == *now
}

async fn csv(State(shared): State<Arc<Shared>>, asker: Asker) -> Result<Response, Refused> {
    asker.facilitator(&shared.room())?;
    let text = shared.room().csv(
        &shared.exercises,
        now_ms(),
        shared.stuck_after.as_millis() as u64,
    );
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"room.csv\"",
            ),
        ],
        text,
    )
        .into_response())
}

async fn join(
    State(shared): State<Arc<Shared>>,
    peer: Result<ConnectInfo<SocketAddr>, ExtensionRejection>,
    Json(asked): Json<JoinRequest>,
) -> Result<Json<JoinAnswer>, Refused> {
    // The room's own machine may hold any number of seats.
    let from = peer
        .ok()
        .map(|ConnectInfo(p)| p.ip())
        .filter(|ip| !ip.is_loopback());
    let token =
        shared
            .room()
            .join_from(&asked.seat, &asked.password, from, new_secret, now_ms())?;
    shared.changed();
    Ok(Json(JoinAnswer {
        seat: asked.seat,
        token,
    }))
}

async fn report(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Json(mut report): Json<SeatReport>,
) -> Result<StatusCode, Refused> {
    if let Some((_, exercise)) = shared
        .aliases
        .iter()
        .find(|(cause, _)| *cause == report.progress.scenario)
    {
        report.progress.scenario.clone_from(exercise);
    }
    let token = bearer(&headers).ok_or_else(|| {
        Refused::unauthorized("a report carries its seat's token (Authorization: Bearer)")
    })?;
    shared
        .room()
        .report(token, report, &shared.exercises, now_ms())?;
    shared.changed();
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /room/ready`: a laptop's readiness (`doctor` with the room's line).
async fn ready(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Json(report): Json<ReadyReport>,
) -> Result<StatusCode, Refused> {
    let token = bearer(&headers).ok_or_else(|| {
        Refused::unauthorized("a readiness report carries its seat's token (Authorization: Bearer)")
    })?;
    shared.room().ready(token, report, now_ms())?;
    shared.changed();
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /room/drill`: a seat's drill (`drill report` with the room's line).
async fn drill(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Json(report): Json<DrillReport>,
) -> Result<StatusCode, Refused> {
    let token = bearer(&headers).ok_or_else(|| {
        Refused::unauthorized("a drill report carries its seat's token (Authorization: Bearer)")
    })?;
    shared.room().drill(token, report, now_ms())?;
    shared.changed();
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /room/trails`: the drills' trails this viewer may see, side by side
/// on the debrief; the board carries each seat's findings only.
async fn trails(
    State(shared): State<Arc<Shared>>,
    asker: Asker,
) -> Result<Json<Vec<SeatTrail>>, Refused> {
    seen_by(&shared, &asker, Room::trails)
}

/// What `asker` may see of the room, as `read` reads it.
fn seen_by<T>(
    shared: &Shared,
    asker: &Asker,
    read: impl FnOnce(&Room, Looking<'_>) -> T,
) -> Result<Json<T>, Refused> {
    let room = shared.room();
    let (viewer, seat) = asker.viewer(&room)?;
    let looking = Looking {
        viewer,
        seat: seat.as_deref(),
        now_ms: now_ms(),
        stuck_after_ms: shared.stuck_after.as_millis() as u64,
    };
    Ok(Json(read(&room, looking)))
}

/// `POST /room/compare`: a seat's before and after (`compare` with the
/// room's line).
async fn compare(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Json(mut report): Json<CompareReport>,
) -> Result<StatusCode, Refused> {
    if let Some((_, exercise)) = shared
        .aliases
        .iter()
        .find(|(cause, _)| *cause == report.exercise)
    {
        report.exercise.clone_from(exercise);
    }
    let token = bearer(&headers).ok_or_else(|| {
        Refused::unauthorized("a comparison carries its seat's token (Authorization: Bearer)")
    })?;
    shared.room().compare(token, report, now_ms())?;
    shared.changed();
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /room/comparisons[?seat=NAME]`: the befores and afters this viewer
/// may see, each seat's latest, or every exercise's of the seat named; the
/// board carries each seat's latest headline only.
async fn comparisons(
    State(shared): State<Arc<Shared>>,
    asker: Asker,
    Query(which): Query<WhichSeat>,
) -> Result<Json<Vec<SeatComparison>>, Refused> {
    seen_by(&shared, &asker, |room, looking| {
        room.comparisons(looking, which.seat.as_deref())
    })
}

/// The query of `GET /room/comparisons`.
#[derive(Debug, serde::Deserialize)]
struct WhichSeat {
    seat: Option<String>,
}

async fn reveal(
    State(shared): State<Arc<Shared>>,
    asker: Asker,
    Json(asked): Json<Reveal>,
) -> Result<Json<Reveal>, Refused> {
    asker.facilitator(&shared.room())?;
    shared.room().revealed = asked.revealed;
    shared.changed();
    Ok(Json(asked))
}

async fn free(
    State(shared): State<Arc<Shared>>,
    Path(seat): Path<String>,
    asker: Asker,
) -> Result<StatusCode, Refused> {
    asker.facilitator(&shared.room())?;
    shared.room().free(&seat, now_ms()).map_err(|r| match r {
        Refusal::NoSuchSeat(_) => Refused {
            status: StatusCode::NOT_FOUND,
            kind: "not_found",
            message: r.to_string(),
        },
        r => r.into(),
    })?;
    shared.changed();
    Ok(StatusCode::NO_CONTENT)
}

/// A new token or key: 128 random bits, as hex.
pub fn new_secret() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// What the sign-in form posts.
#[derive(Debug, serde::Deserialize)]
struct SignIn {
    secret: String,
}

/// `GET /room/login`: a form that asks for the key (or a seat's token).
async fn sign_in_form() -> impl IntoResponse {
    (
        [(header::CACHE_CONTROL, "no-store")],
        Html(include_str!("login.html")),
    )
}

/// `POST /room/login`: a known key or token becomes the page's cookie and the
/// browser goes to the board; anything else is refused and sets nothing.
async fn sign_in(
    State(shared): State<Arc<Shared>>,
    Form(asked): Form<SignIn>,
) -> Result<Response, Refused> {
    let secret = asked.secret.trim();
    let known = {
        let room = shared.room();
        room.is_key(secret) || room.seat_of(secret).is_some()
    };
    if !known {
        return Err(Refused::unauthorized(
            "not this room's key or any seat's token: the key is the one the room printed",
        ));
    }
    let cookie = auth::cookie_for(secret);
    Ok((
        StatusCode::SEE_OTHER,
        [
            (header::SET_COOKIE, cookie),
            (header::LOCATION, "/room".into()),
        ],
    )
        .into_response())
}

/// `POST /room/logout`: the cookie forgotten.
async fn sign_out() -> Response {
    (
        StatusCode::SEE_OTHER,
        [
            (header::SET_COOKIE, auth::cookie_for("")),
            (header::LOCATION, "/room".into()),
        ],
    )
        .into_response()
}
