//! Admin routes: change the configuration live, reset the counters, and begin
//! the scenario's incident now (`PUT /admin/incident`, `incidents.rs`), take a
//! running check's progress for the live view (`PUT /admin/check`) and a
//! load's stages (`PUT /admin/stage`), and profile
//! the server's CPU (`GET /admin/profile`, `crate::profile`), where its threads
//! wait (`GET /admin/threads`). The trail's routes (`GET`/`POST /admin/trail`,
//! `POST /admin/diagnosis`) are `trail/routes.rs`'s; a change and a check's edges are
//! noted in the trail here, where they are made.
//!
//! `PUT /admin/config` is how a workshop applies a fix (the seed's: more permits)
//! while scripts are attached, and, with `{"scenario": NAME}`, switches to another
//! bundled scenario live where only live settings differ. Access: without a token only loopback clients may call
//! these routes, and only with a Host and Origin that name this machine
//! (`same_machine.rs`; 403 otherwise); with `--admin-token` (or `ISIM_ADMIN_TOKEN`) every
//! caller must send `Authorization: Bearer <token>` (401 otherwise).

use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::rejection::ExtensionRejection;

use axum::extract::{ConnectInfo, RawQuery, Request, State};
use axum::http::{header, HeaderMap};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use axum::{Json, Router};

use simulator_api::live::{CheckProgress, LoadStage};
use simulator_api::{IncidentStatus, Settings, SettingsUpdate, Stats};

use super::answers::Answers;
use super::body::TimedBody;
use super::error::{bad_json, ApiError};
use super::incidents::IncidentError;
use super::state::AppState;
use super::trail::{self, routes as trail_routes, Step};
use crate::scenario::Scenario;
use simulator_api::trail::TrailKind;

pub fn routes(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/admin/config", put(update_config))
        .route("/admin/reset", post(reset))
        .route("/admin/incident", put(begin_incident))
        .route("/admin/check", put(report_check))
        .route("/admin/stage", put(report_stage))
        .route("/admin/profile", get(profile))
        .route("/admin/profile/heap", get(heap_profile))
        .route("/admin/threads", get(threads))
        .route("/admin/tap", get(tap_stream))
        .route("/admin/tap/{id}", delete(tap_end))
        .route(
            "/admin/trail",
            get(trail_routes::read).post(trail_routes::add_note),
        )
        .route("/admin/diagnosis", post(trail_routes::diagnose))
        .route_layer(middleware::from_fn_with_state(state, guard))
}

async fn guard(
    State(state): State<AppState>,
    peer: Result<ConnectInfo<SocketAddr>, ExtensionRejection>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    match state.processor.settings().admin_token() {
        Some(token) => {
            let presented = request
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "));
            match presented {
                Some(p) if constant_time_eq(p.as_bytes(), token.as_bytes()) => {}
                _ => {
                    return Err(ApiError::Unauthorized(
                        "admin routes need Authorization: Bearer <admin token>",
                    ))
                }
            }
        }
        None => {
            // A router served without connect info cannot tell who calls: refuse.
            if !peer.is_ok_and(|ConnectInfo(p)| p.ip().is_loopback()) {
                return Err(ApiError::Forbidden(
                    "admin routes answer loopback clients only; configure an admin token to allow others",
                ));
            }
            // Loopback, but from a page in a browser or a rebound name?
            if let Some(why) = super::same_machine::refusal(request.headers()) {
                return Err(ApiError::Forbidden(why));
            }
        }
    }
    Ok(next.run(request).await)
}

/// Compares without an early exit, so the time taken does not reveal how much of a
/// guessed token was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn update_config(
    State(state): State<AppState>,
    headers: HeaderMap,
    TimedBody(body): TimedBody,
) -> Result<Json<Settings>, ApiError> {
    require_json(&headers)?;
    let mut body: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&body).map_err(bad_json)?;
    // `"scenario": NAME` switches scenarios: its settings, with the rest of the
    // body laid over them, all or nothing like any other change.
    let update_named_a_scenario = body.contains_key("scenario");
    let scenario = match body.remove("scenario") {
        None => None,
        Some(serde_json::Value::String(name)) => Some(bundled_scenario(&name, state.answers)?),
        Some(other) => {
            return Err(ApiError::BadRequest(format!(
                "scenario must be the name of a bundled scenario, got {other}"
            )))
        }
    };
    let rest: SettingsUpdate =
        serde_json::from_value(serde_json::Value::Object(body)).map_err(bad_json)?;
    let update = match &scenario {
        // Every live setting as the scenario has it, its restart-only ones as a
        // check (a scenario that changes one needs a restart), then the body.
        Some(s) => SettingsUpdate::live_part_of(&s.settings())
            .and(&s.config)
            .and(&rest),
        None => rest,
    };
    let now = state
        .processor
        .update(&update)
        .map_err(|e| ApiError::BadRequest(e.to_string()))?;
    if let Some(scenario) = scenario {
        tracing::info!(scenario = %scenario.name, "scenario switched");
        state.set_scenario(scenario);
    }
    let switched = update_named_a_scenario.then(|| format!("scenario {} ", state.scenario_name()));
    // The values in force, never the request body as sent.
    let changed: Vec<String> = now
        .texts()
        .into_iter()
        .filter(|(key, _)| update.keys().contains(key))
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    tracing::info!(changed = %changed.join(" "), "configuration changed");
    let step = Step {
        kind: TrailKind::Change,
        tool: "",
        what: format!(
            "{}{}",
            switched.clone().unwrap_or_default(),
            changed.join(" ")
        ),
        by: trail::caller(&headers),
        passed: None,
    };
    state.trails.note(&state.live, step);
    state.live.mark(
        "config",
        format!("{}{}", switched.unwrap_or_default(), changed.join(" ")),
    );
    Ok(Json((*now).clone()))
}

/// A bundled scenario by its name or its exercise's; files are not read
/// through the API. A wrong name is told the list an attendee may see: the
/// exercises' names where the server hides its answers.
fn bundled_scenario(name: &str, answers: Answers) -> Result<Scenario, ApiError> {
    let internal = |e: crate::scenario::ScenarioError| ApiError::Internal(e.to_string());
    if let Some(found) = crate::scenario::bundled_named(name).map_err(internal)? {
        return Ok(found);
    }
    let all = crate::scenario::bundled().map_err(internal)?;
    let listed: Vec<&str> = all
        .iter()
        .map(|s| match answers {
            Answers::Shown => s.name.as_str(),
            Answers::Hidden => s.visible_name(),
        })
        .collect();
    Err(ApiError::BadRequest(format!(
        "no bundled scenario is called {name:?}; bundled: {}",
        listed.join(", ")
    )))
}

/// A config body is JSON; a missing content type is taken as JSON too, so a bare
/// `curl -X PUT --data-binary` works, but a form or text body is refused.
fn require_json(headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let essence = value
        .to_str()
        .ok()
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase());
    match essence.as_deref() {
        Some("application/json") => Ok(()),
        _ => Err(ApiError::UnsupportedMediaType(format!(
            "admin bodies are JSON: send content-type application/json (curl -H 'Content-Type: application/json' -d '{{...}}'), not {:?}",
            String::from_utf8_lossy(value.as_bytes())
        ))),
    }
}

async fn reset(State(state): State<AppState>, headers: HeaderMap) -> Json<Stats> {
    state.processor.events().counts().reset();
    let step = Step {
        kind: TrailKind::Change,
        tool: "",
        what: "counters reset".to_owned(),
        by: trail::caller(&headers),
        passed: None,
    };
    state.trails.note(&state.live, step);
    tracing::info!("counters reset");
    state.live.mark("reset", "counters reset");
    Json(state.stats())
}

/// Begins the scenario's (first) incident now; the server ends it after its
/// `lasts`. 400 when the scenario declares none, 409 while one is in force. The
/// body, if any, is ignored: the incident is the scenario's, not the caller's.
async fn begin_incident(State(state): State<AppState>) -> Result<Json<IncidentStatus>, ApiError> {
    let scenario = state.scenario();
    let incident = scenario.incident.first().ok_or_else(|| {
        ApiError::BadRequest(format!(
            "scenario {} declares no incident to begin",
            state.scenario_name()
        ))
    })?;
    state
        .incidents
        .begin(incident)
        .map(Json)
        .map_err(|e| match e {
            IncidentError::InForce { .. } => ApiError::Conflict(e.to_string()),
            IncidentError::Refused(_) => ApiError::BadRequest(e.to_string()),
        })
}

/// `workshop check` reports how its check of this server goes, once a second and
/// at the verdict, for the live view. Nothing else reads it.
async fn report_check(
    State(state): State<AppState>,
    headers: HeaderMap,
    TimedBody(body): TimedBody,
) -> Result<Json<CheckProgress>, ApiError> {
    require_json(&headers)?;
    let progress: CheckProgress = serde_json::from_slice(&body).map_err(bad_json)?;
    if progress.conditions.len() > MAX_CHECK_CONDITIONS {
        return Err(ApiError::BadRequest(format!(
            "a check has at most {MAX_CHECK_CONDITIONS} conditions, got {}",
            progress.conditions.len()
        )));
    }
    let by = trail::caller(&headers);
    let step = |what: String, passed| Step {
        kind: TrailKind::Check,
        tool: "",
        what,
        by: by.clone(),
        passed,
    };
    if let Some(verdict) = &progress.verdict {
        let step = step(verdict.clone(), progress.passed);
        state.trails.note(&state.live, step);
    }
    if state.live.report_check(progress.clone()) {
        let step = step("begins".to_owned(), None);
        state.trails.note(&state.live, step);
    }
    Ok(Json(progress))
}

/// A load's stage begins: a marker on every chart, an entry in the trail (a
/// recording keeps the trail, so a replay marks it too).
async fn report_stage(
    State(state): State<AppState>,
    headers: HeaderMap,
    TimedBody(body): TimedBody,
) -> Result<Json<LoadStage>, ApiError> {
    require_json(&headers)?;
    let stage: LoadStage = serde_json::from_slice(&body).map_err(bad_json)?;
    if let Some(why) = stage.refusal() {
        return Err(ApiError::BadRequest(why));
    }
    let step = Step {
        kind: TrailKind::Stage,
        tool: "",
        what: stage.label.clone(),
        by: trail::caller(&headers),
        passed: None,
    };
    state.trails.note(&state.live, step);
    state.live.mark("stage", stage.label.clone());
    Ok(Json(stage))
}

/// `GET /admin/profile?seconds=N&format=svg|folded`: samples this server's
/// stacks for N seconds (default 10, at most `profile::MAX_SECONDS`) and
/// answers a flame graph (`image/svg+xml`) or the folded stacks (`text/plain`).
/// 409 while another profile is being taken.
async fn profile(
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let (seconds, svg) = begin_sampling(&state, query, "profile", "profiling for")?;
    let folded = crate::profile::sample(Duration::from_secs(seconds))
        .await
        .map_err(|e| match e {
            crate::profile::ProfileError::Busy => ApiError::Conflict(e.to_string()),
            _ => ApiError::Internal(e.to_string()),
        })?;
    let title = || {
        format!(
            "system-simulator, scenario {}: {} samples in {seconds} s at {} Hz of CPU",
            state.scenario_name(),
            folded.total(),
            crate::profile::FREQUENCY_HZ
        )
    };
    Ok(folded_answer(&folded, svg, title, "samples"))
}

/// `GET /admin/profile/heap?format=svg|folded`: the live heap now by
/// allocation site (`profile::heap`), in bytes, as a flame graph or as folded
/// stacks; 501 with the reason where the build has no heap profiler.
async fn heap_profile(
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let svg = match query.as_deref().unwrap_or("") {
        "" | "format=svg" => true,
        "format=folded" => false,
        other => {
            return Err(ApiError::BadRequest(format!(
                "a heap profile takes format=svg or format=folded, not {other:?}"
            )))
        }
    };
    state.live.mark("profile", "heap profile".to_owned());
    let (folded, profilers) = crate::profile::heap::live()
        .await
        .map_err(ApiError::NotImplemented)?;
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    let title = || {
        format!(
            "system-simulator, scenario {}: the live heap, {:.1} MiB by allocation site (jemalloc's samples, one every {} KiB allocated; {:.1} MiB of the profiler's own symbol caches left out)",
            state.scenario_name(),
            mib(folded.total()),
            crate::platform::heap::SAMPLE_EVERY_BYTES / 1024,
            mib(profilers),
        )
    };
    Ok(folded_answer(&folded, svg, title, "bytes"))
}

/// Folded stacks as a flame graph (`svg`, titled by `title`, counting in
/// `unit`) or as text.
fn folded_answer(
    folded: &crate::profile::Folded,
    svg: bool,
    title: impl FnOnce() -> String,
    unit: &str,
) -> Response {
    let (content_type, body) = match svg {
        true => ("image/svg+xml", folded.svg_counting(&title(), unit)),
        false => ("text/plain; charset=utf-8", folded.text().into_bytes()),
    };
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

/// `GET /admin/threads?seconds=N&format=svg|folded`: where this server's
/// threads are by the wall clock for N seconds (default 10), read from the
/// kernel every 10 ms (`profile::threads`), counted in ms: the no-root half of
/// an off-CPU profile.
async fn threads(
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let (seconds, svg) = begin_sampling(&state, query, "threads", "reading its threads for")?;
    let folded = crate::profile::threads::sample(Duration::from_secs(seconds)).await;
    let title = || {
        format!(
            "system-simulator, scenario {}: its threads by the wall clock for {seconds} s, ms (no root: the kernel's state and wchan)",
            state.scenario_name(),
        )
    };
    Ok(folded_answer(&folded, svg, title, "ms"))
}

/// What both sampling endpoints begin with: their query read (seconds, and
/// whether to answer an SVG), and the sampling marked on the live view as
/// `kind`, "`doing` N s".
fn begin_sampling(
    state: &AppState,
    query: Option<String>,
    kind: &'static str,
    doing: &str,
) -> Result<(u64, bool), ApiError> {
    let (seconds, svg) = profile_query(query.as_deref().unwrap_or(""))?;
    state.live.mark(kind, format!("{doing} {seconds} s"));
    Ok((seconds, svg))
}

/// A profile's query: its seconds, and whether it is to be an SVG.
fn profile_query(query: &str) -> Result<(u64, bool), ApiError> {
    let max = crate::profile::MAX_SECONDS;
    let (mut seconds, mut svg) = (10, true);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=').unwrap_or((pair, "")) {
            ("seconds", n) => {
                seconds = n
                    .parse()
                    .ok()
                    .filter(|n| (1..=max).contains(n))
                    .ok_or_else(|| {
                        ApiError::BadRequest(format!("seconds must be 1 to {max}, got {n:?}"))
                    })?;
            }
            ("format", "svg") => svg = true,
            ("format", "folded") => svg = false,
            ("format", other) => {
                return Err(ApiError::BadRequest(format!(
                    "format must be svg or folded, got {other:?}"
                )))
            }
            (other, _) => {
                return Err(ApiError::BadRequest(format!(
                    "a profile takes seconds and format, not {other:?}"
                )))
            }
        }
    }
    Ok((seconds, svg))
}

/// More than any scenario declares; bounds what a caller can make the page hold.
const MAX_CHECK_CONDITIONS: usize = 32;

#[cfg(feature = "probes")]
use super::tap::{end as tap_end, stream as tap_stream};

/// Built without the probes feature there are no events to stream.
#[cfg(not(feature = "probes"))]
async fn tap_stream() -> ApiError {
    ApiError::Unavailable(
        "built without the probes feature: no probe tap; rebuild with the default features".into(),
    )
}

#[cfg(not(feature = "probes"))]
async fn tap_end() -> ApiError {
    tap_stream().await
}
