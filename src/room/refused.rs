//! How the room refuses: a status and `{error, message}`, from the rules'
//! refusals (`board.rs`) and from who is asking (`auth.rs`).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use simulator_api::ErrorBody;

use super::board::Refusal;

/// A refusal as the room answers it: a status and `{error, message}`.
#[derive(Debug)]
pub struct Refused {
    pub(super) status: StatusCode,
    pub(super) kind: &'static str,
    pub(super) message: String,
}

impl Refused {
    pub(super) fn unauthorized(message: &str) -> Refused {
        Refused {
            status: StatusCode::UNAUTHORIZED,
            kind: "unauthorized",
            message: message.to_owned(),
        }
    }

    pub(super) fn bad(message: &str) -> Refused {
        Refused {
            status: StatusCode::BAD_REQUEST,
            kind: "bad_request",
            message: message.to_owned(),
        }
    }
}

impl From<Refusal> for Refused {
    fn from(r: Refusal) -> Refused {
        let (status, kind) = match &r {
            Refusal::BadSeatName(_) | Refusal::UnknownExercise(_) | Refusal::BadReport(_) => {
                (StatusCode::BAD_REQUEST, "bad_request")
            }
            Refusal::BadPassword | Refusal::BadToken(_) | Refusal::NoSuchSeat(_) => {
                (StatusCode::UNAUTHORIZED, "unauthorized")
            }
            Refusal::OtherSeat { .. } => (StatusCode::FORBIDDEN, "other_seat"),
            Refusal::Taken(_) | Refusal::Full => (StatusCode::CONFLICT, "conflict"),
            Refusal::TooManyFrom(_) => (StatusCode::TOO_MANY_REQUESTS, "too_many_seats"),
        };
        Refused {
            status,
            kind,
            message: r.to_string(),
        }
    }
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: self.kind.to_owned(),
            message: self.message,
        };
        (self.status, Json(body)).into_response()
    }
}
