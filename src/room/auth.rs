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

use axum::extract::{ConnectInfo, FromRequestParts, Query};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use simulator_api::room::Viewer;
use simulator_service::parts::same_machine;

use super::board::Room;
use super::refused::Refused;

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

    /// Who this is in `room`, and the seat where a seat's token says so.
    pub fn viewer(&self, room: &Room) -> Result<(Viewer, Option<String>), Refused> {
        if self.query.key.is_some() || self.query.token.is_some() {
            return Err(Refused::bad(
                "the room's key and tokens never go in a URL: send `Authorization: Bearer SECRET`, \
                 or sign in at /room/login (a link's secret goes after #)",
            ));
        }
        // The projector's page is the projector's even in a browser signed in
        // as the facilitator: the room's own laptop often drives the projector.
        if self.query.view_as.as_deref() == Some("projector") {
            return Ok((Viewer::Projector, None));
        }
        if let Some(secret) = self.secret() {
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
        match self.query.view_as.as_deref() {
            None => Ok((Viewer::Projector, None)),
            Some("facilitator") if self.on_this_machine() => Ok((Viewer::Facilitator, None)),
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

    pub fn facilitator(&self, room: &Room) -> Result<(), Refused> {
        match self.viewer(room)? {
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

/// The `Set-Cookie` that signs a page in with `secret`; an empty one signs
/// it out. Tokens and keys are hex (`new_secret`) and the room checks a secret
/// before it sets one, so the value needs no quoting.
pub fn cookie_for(secret: &str) -> String {
    let max_age = if secret.is_empty() {
        0
    } else {
        COOKIE_MAX_AGE_S
    };
    format!("{COOKIE}={secret}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}")
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
