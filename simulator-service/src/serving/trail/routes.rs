//! The trail's routes: the layer on the operator's routes that notes each
//! look that was answered, `GET /admin/trail`, a note (`POST /admin/trail`)
//! and a diagnosis (`POST /admin/diagnosis`).

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use axum::Json;
use simulator_api::trail::{
    DiagnosisAnswer, DiagnosisRequest, Trail, TrailKind, TrailNote, TRAIL_TEXT_MAX,
};

use super::{caller, Step};
use crate::serving::body::TimedBody;
use crate::serving::error::{bad_json, ApiError};
use crate::serving::state::AppState;

/// The look a request to the operator's routes is, if it is one: its tool
/// and what it asked for. Changes, checks, diagnoses and notes are noted by
/// their routes; the health check and the trail itself are no look.
fn look_of(method: &Method, path: &str, query: Option<&str>) -> Option<(&'static str, String)> {
    let query = query.unwrap_or("");
    let asked = |key: &str| {
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))
            .map(str::to_owned)
    };
    if method != Method::GET {
        return None;
    }
    let look = match path {
        "/stats" if query.contains("answers=show") => ("stats", "/stats with the answers".into()),
        "/stats" => ("stats", "/stats".into()),
        "/metrics" => ("metrics", "/metrics".into()),
        "/scenarios" => ("scenarios", "/scenarios".into()),
        "/live" | "/live/events" => ("live", "the live view".into()),
        "/admin/tap" => (
            "tap",
            asked("events").unwrap_or_else(|| "every event".into()),
        ),
        "/admin/profile" => ("profile", "CPU profile".into()),
        "/admin/profile/heap" => ("heap", "heap profile".into()),
        "/admin/threads" => ("threads", "threads by the wall clock".into()),
        _ => return None,
    };
    Some(look)
}

/// The layer on the operator's routes: a look that was answered is noted.
pub async fn note_looks(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let look = look_of(
        request.method(),
        request.uri().path(),
        request.uri().query(),
    );
    let by = caller(request.headers());
    let response = next.run(request).await;
    if let Some((tool, what)) = look {
        if response.status().is_success() {
            // A tracer's script names itself in its caller (`trace count`):
            // that says more than the events it asked for.
            let what = match (tool, by.strip_prefix("trace ")) {
                ("tap", Some(script)) => format!("trace {script}"),
                _ => what,
            };
            let step = Step {
                kind: TrailKind::Look,
                tool,
                what,
                by,
                passed: None,
            };
            state.trails.note(&state.live, step);
        }
    }
    response
}

/// `GET /admin/trail`.
pub async fn read(State(state): State<AppState>) -> Json<Trail> {
    Json(state.trails.snapshot(&state.live))
}

/// `POST /admin/trail {"note": "..."}`: the attendee's own words, now.
pub async fn add_note(
    State(state): State<AppState>,
    headers: HeaderMap,
    TimedBody(body): TimedBody,
) -> Result<StatusCode, ApiError> {
    let TrailNote { note } = serde_json::from_slice(&body).map_err(bad_json)?;
    let note = bounded("a note", &note)?;
    let step = Step {
        kind: TrailKind::Note,
        tool: "",
        what: note,
        by: caller(&headers),
        passed: None,
    };
    state.trails.note(&state.live, step);
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /admin/diagnosis {"cause": NAME}`: a cause named, among the bundled
/// scenarios' and their exercises' names, or `none`. The first one named is
/// the one of record; later ones are noted and not scored.
pub async fn diagnose(
    State(state): State<AppState>,
    headers: HeaderMap,
    TimedBody(body): TimedBody,
) -> Result<Json<DiagnosisAnswer>, ApiError> {
    let DiagnosisRequest { cause } = serde_json::from_slice(&body).map_err(bad_json)?;
    let cause = bounded("a diagnosis", &cause)?;
    let known = crate::scenario::bundled_named(&cause)
        .map_err(|e| ApiError::Internal(e.to_string()))?
        .map(|s| s.name);
    let cause = match (known, cause.eq_ignore_ascii_case("none")) {
        (Some(name), _) => name,
        (None, true) => "none".to_owned(),
        (None, false) => {
            return Err(ApiError::BadRequest(format!(
                "no cause is called {cause:?}: `system-simulator drill causes` lists the names"
            )))
        }
    };
    Ok(Json(state.trails.diagnose(
        &state.live,
        cause,
        caller(&headers),
    )))
}

/// A text of at most [`TRAIL_TEXT_MAX`] bytes with something in it.
fn bounded(what: &str, text: &str) -> Result<String, ApiError> {
    let text = text.trim();
    if text.is_empty() || text.len() > TRAIL_TEXT_MAX {
        return Err(ApiError::BadRequest(format!(
            "{what} has 1 to {TRAIL_TEXT_MAX} bytes, not {}",
            text.len()
        )));
    }
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_answered_get_of_a_view_is_a_look() {
        assert_eq!(
            look_of(
                &Method::GET,
                "/admin/tap",
                Some("events=permit-wait-start,permit-acquired")
            ),
            Some(("tap", "permit-wait-start,permit-acquired".to_owned()))
        );
        assert_eq!(look_of(&Method::GET, "/healthz", None), None);
        assert_eq!(look_of(&Method::GET, "/admin/trail", None), None);
        assert_eq!(look_of(&Method::PUT, "/admin/config", None), None);
        assert_eq!(
            look_of(&Method::GET, "/stats", Some("answers=show"))
                .unwrap()
                .1,
            "/stats with the answers"
        );
    }
}
