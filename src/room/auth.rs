//! Who is asking the room, decided once per request ([`Asker`]), and how a
//! page signs in. The room's secrets (the facilitator's key, each seat's
//! token) never travel in a URL: URLs end up on projectors, in browser
//! history, in `Referer` headers and in proxies' logs. They come in a header
//! instead: `Authorization: Bearer SECRET` from programs, or the cookie
//! `POST /room/login` sets on a page (HttpOnly, SameSite=Strict, so no other
//! site's page can send it). A link that carries a secret puts it after `#`,
//! which a browser never sends; the page posts it to `/room/login` and takes
//! it out of the address bar.
//!
//! On the room's own machine the facilitator needs no key at all:
//! `/room?as=facilitator` from a loopback address, with a `Host` and `Origin`
//! that name this machine (the operator port's rule, `same_machine.rs`, so a
//! page elsewhere or a name rebound to 127.0.0.1 does not pass).
//!
//! Plain HTTP on a venue's network still shows a header to anyone capturing
//! its packets; docs/api.md says what that leaves open.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, FromRequestParts, Query, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::Form;
use simulator_api::room::Viewer;
use simulator_service::serving::same_machine;

use super::server::{Refused, Shared};

/// The cookie a signed-in page carries: the key or a seat's token.
pub const COOKIE: &str = "room_auth";
/// How long a sign-in lasts: a workshop's day.
const COOKIE_MAX_AGE_S: u64 = 12 * 3600;

/// What a request says of who sent it.
#[derive(Debug)]
pub struct Asker {
    query: AskedAs,
    headers: HeaderMap,
    peer: Option<SocketAddr>,
}

/// The query a page's requests carry: `as=facilitator` only. The secrets'
/// old names are read to refuse them with a reason, not to use them.
#[derive(Debug, Default, serde::Deserialize)]
struct AskedAs {
    #[serde(rename = "as")]
    view_as: Option<String>,
    key: Option<String>,
    token: Option<String>,
}

impl<S: Send + Sync> FromRequestParts<S> for Asker {
    type Rejection = Refused;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Asker, Refused> {
        let Query(query) = Query::<AskedAs>::from_request_parts(parts, state)
            .await
            .map_err(|e| Refused::bad(&e.body_text()))?;
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(p)| *p);
        Ok(Asker {
            query,
            headers: parts.headers.clone(),
            peer,
        })
    }
}

impl Asker {
    /// The secret the request carries: its bearer token, else its cookie.
    fn secret(&self) -> Option<&str> {
        bearer(&self.headers).or_else(|| cookie(&self.headers, COOKIE))
    }

    /// Whether the request comes from a program or page on the room's own
    /// machine that meant to ask this room.
    fn on_this_machine(&self) -> bool {
        self.peer.is_some_and(|p| p.ip().is_loopback())
            && same_machine::refusal(&self.headers).is_none()
    }
}

impl Shared {
    /// Who `asker` is, and the seat where a seat's token says so.
    pub fn viewer(&self, asker: &Asker) -> Result<(Viewer, Option<String>), Refused> {
        if asker.query.key.is_some() || asker.query.token.is_some() {
            return Err(Refused::bad(
                "the room's key and tokens never go in a URL: send `Authorization: Bearer SECRET`, \
                 or sign in at /room/login (a link's secret goes after #)",
            ));
        }
        // The projector's page is the projector's even in a browser signed in
        // as the facilitator: the room's own laptop often drives the projector.
        if asker.query.view_as.as_deref() == Some("projector") {
            return Ok((Viewer::Projector, None));
        }
        if let Some(secret) = asker.secret() {
            let room = self.room();
            if room.is_key(secret) {
                return Ok((Viewer::Facilitator, None));
            }
            return match room.seat_of(secret) {
                Some(seat) => Ok((Viewer::Seat, Some(seat.to_owned()))),
                None => Err(Refused::unauthorized(
                    "not this room's key or any seat's token (a freed seat's, or another room's): \
                     sign in again at /room/login",
                )),
            };
        }
        match asker.query.view_as.as_deref() {
            None => Ok((Viewer::Projector, None)),
            Some("facilitator") if asker.on_this_machine() => Ok((Viewer::Facilitator, None)),
            Some("facilitator") => Err(Refused::unauthorized(
                "the facilitator's view without a key is for the room's own machine \
                 (http://127.0.0.1:PORT/room?as=facilitator); elsewhere, sign in at /room/login \
                 with the key the room printed",
            )),
            Some(other) => Err(Refused::bad(&format!(
                "as={other}: a page is as=projector or as=facilitator, or whoever its sign-in says"
            ))),
        }
    }

    pub fn facilitator(&self, asker: &Asker) -> Result<(), Refused> {
        match self.viewer(asker)? {
            (Viewer::Facilitator, _) => Ok(()),
            _ => Err(Refused::unauthorized(
                "this is the facilitator's: sign in at /room/login with the room's key, \
                 or send `Authorization: Bearer KEY`",
            )),
        }
    }
}

pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
}

/// The value of cookie `name` in the request's `Cookie` headers.
fn cookie<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, value)| value)
}

/// What the sign-in form posts.
#[derive(Debug, serde::Deserialize)]
pub struct SignIn {
    secret: String,
}

/// `GET /room/login`: a form that asks for the key (or a seat's token).
pub async fn form() -> impl IntoResponse {
    (
        [(header::CACHE_CONTROL, "no-store")],
        Html(include_str!("login.html")),
    )
}

/// `POST /room/login`: a known key or token becomes the page's cookie and the
/// browser goes to the board; anything else is refused and sets nothing.
pub async fn sign_in(
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
    // Tokens and keys are hex (`new_secret`); anything else was refused above,
    // so the value needs no quoting.
    let cookie =
        format!("{COOKIE}={secret}; Path=/; HttpOnly; SameSite=Strict; Max-Age={COOKIE_MAX_AGE_S}");
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
pub async fn sign_out() -> Response {
    (
        StatusCode::SEE_OTHER,
        [
            (
                header::SET_COOKIE,
                format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"),
            ),
            (header::LOCATION, "/room".into()),
        ],
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_is_found_among_others_and_in_any_cookie_header() {
        let mut h = HeaderMap::new();
        h.append(header::COOKIE, "a=1; room_auth=abc; b=2".parse().unwrap());
        assert_eq!(cookie(&h, COOKIE), Some("abc"));
        let mut h = HeaderMap::new();
        h.append(header::COOKIE, "a=1".parse().unwrap());
        h.append(header::COOKIE, "room_auth=def".parse().unwrap());
        assert_eq!(cookie(&h, COOKIE), Some("def"));
        assert_eq!(cookie(&h, "room"), None);
    }
}
