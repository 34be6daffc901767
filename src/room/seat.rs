//! An attendee's side of the room: `workshop check --room URL --seat NAME` (or
//! `ISIM_ROOM` and `ISIM_SEAT`, so the pages' commands need no change) joins the
//! room with its password the first time, keeps the seat's token in a file of
//! its own, and reports the check's progress there as it reports it to its own
//! server. Best effort throughout: a room that cannot be reached, or refuses,
//! costs the check one warning, never its verdict.

use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use hyper::{Method, StatusCode};
use simulator_api::client::{exchange, EndpointError};
use simulator_api::live::CheckProgress;
use simulator_api::room::{seat_name_error, JoinAnswer, JoinRequest, SeatReport};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// How long one call to the room may take: a room across a bad Wi-Fi must not
/// hold up the check's seconds or its exit.
const CALL_LIMIT: Duration = Duration::from_secs(3);

#[derive(Debug, Clone, clap::Args)]
pub struct RoomArgs {
    /// Report this check to the workshop's room: the line the facilitator gave,
    /// http://HOST:PORT/join/PASSWORD.
    #[arg(long, env = "ISIM_ROOM", value_name = "URL", requires = "seat")]
    pub room: Option<String>,
    /// This attendee's seat in the room (letters, digits, '.', '_', '-').
    #[arg(long, env = "ISIM_SEAT", value_name = "NAME")]
    pub seat: Option<String>,
}

/// The room's address and password, from the line the facilitator gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invitation {
    /// `http://HOST:PORT`.
    pub base: String,
    pub password: String,
}

impl Invitation {
    pub fn parse(url: &str) -> Result<Invitation, String> {
        let (base, password) = url.split_once("/join/").ok_or_else(|| {
            format!("--room {url}: the facilitator's line is http://HOST:PORT/join/PASSWORD")
        })?;
        let password = password.trim_end_matches('/');
        if !base.starts_with("http://") || password.is_empty() || password.contains('/') {
            return Err(format!(
                "--room {url}: the facilitator's line is http://HOST:PORT/join/PASSWORD"
            ));
        }
        Ok(Invitation {
            base: base.to_owned(),
            password: password.to_owned(),
        })
    }
}

/// A seat the check reports as: the room, its name, its token.
#[derive(Debug, Clone)]
struct Seat {
    invitation: Invitation,
    name: String,
    token: String,
}

/// The check's line to the room: send it the progress; [`SeatLink::finish`]
/// after the verdict.
#[derive(Debug)]
pub struct SeatLink {
    sender: mpsc::UnboundedSender<CheckProgress>,
    task: JoinHandle<Option<String>>,
}

impl SeatLink {
    /// Joins (or finds this seat's token) and starts the link; `None`, with
    /// the one warning printed, when the room cannot take this check's reports.
    pub async fn open(args: &RoomArgs) -> Option<SeatLink> {
        let (url, name) = (args.room.as_deref()?, args.seat.as_deref()?);
        let seat = match seat(url, name).await {
            Ok(seat) => seat,
            Err(why) => {
                eprintln!("note: the room does not show this check: {why}");
                return None;
            }
        };
        let (sender, progress) = mpsc::unbounded_channel();
        let task = tokio::spawn(deliver(seat, progress, rand::random()));
        Some(SeatLink { sender, task })
    }

    /// Where the check's progress goes (the latest is sent; a slow room skips
    /// seconds, never the verdict, which comes last).
    pub fn sender(&self) -> mpsc::UnboundedSender<CheckProgress> {
        self.sender.clone()
    }

    /// Waits for the verdict to reach the room (every sender dropped first);
    /// prints where the seat's own row is when it did.
    pub async fn finish(self) {
        drop(self.sender);
        if let Ok(Ok(Some(row))) = tokio::time::timeout(2 * CALL_LIMIT, self.task).await {
            println!("the room has this verdict; your row: {row}");
        }
    }
}

/// Reports each progress it is given, the latest first; the seat's row's URL
/// once the verdict is in.
async fn deliver(
    mut seat: Seat,
    mut progress: mpsc::UnboundedReceiver<CheckProgress>,
    attempt: u64,
) -> Option<String> {
    let mut warned = false;
    let mut delivered = None;
    while let Some(mut latest) = progress.recv().await {
        while let Ok(newer) = progress.try_recv() {
            latest = newer;
        }
        let report = SeatReport {
            seat: seat.name.clone(),
            attempt,
            progress: latest,
        };
        match send_report(&mut seat, &report).await {
            Ok(()) if report.progress.verdict.is_some() => {
                delivered = Some(row_link(&seat));
            }
            Ok(()) => {}
            Err(why) if !std::mem::replace(&mut warned, true) => {
                eprintln!("note: the room does not show this check: {why}");
            }
            Err(_) => {}
        }
    }
    delivered
}

/// `doctor`'s readiness for the board: joins (or finds this seat's token)
/// and sends it; the seat's row's URL when the room took it.
pub async fn report_ready(
    args: &RoomArgs,
    readiness: &simulator_api::room::Readiness,
) -> Result<String, String> {
    send_once(args, "/room/ready", |seat| {
        simulator_api::room::ReadyReport {
            seat: seat.to_owned(),
            readiness: readiness.clone(),
        }
    })
    .await
}

/// A drill's findings and trail for its column (`drill report` with the
/// room's line): the seat's row's URL when the room took them.
pub async fn report_drill(
    args: &RoomArgs,
    seed: &str,
    findings: &simulator_api::trail::DrillFindings,
    trail: &[simulator_api::trail::TrailEntry],
) -> Result<String, String> {
    send_once(args, "/room/drill", |seat| {
        simulator_api::room::DrillReport {
            seat: seat.to_owned(),
            seed: seed.to_owned(),
            findings: findings.clone(),
            trail: trail.to_vec(),
        }
    })
    .await
}

/// A before and after told apart from their noise, for the seat's cell of
/// `exercise` (a check against the seat's before, or `compare` with the
/// room's line), its runs called `names`: the seat's row's URL when the room
/// took it. The room keeps the first [`ROOM_COMPARED_MAX`] figures.
///
/// [`ROOM_COMPARED_MAX`]: simulator_api::room::ROOM_COMPARED_MAX
pub async fn report_comparison(
    args: &RoomArgs,
    exercise: &str,
    names: [&str; 2],
    c: &simulator_clients::compare::Comparison,
) -> Result<String, String> {
    let rows: Vec<_> = c
        .rows
        .iter()
        .take(simulator_api::room::ROOM_COMPARED_MAX)
        .map(|r| simulator_api::room::ComparedFigure {
            span: r.span.clone(),
            figure: r.figure.clone(),
            before: r.value_text(r.before),
            after: r.value_text(r.after),
            change: r.change_text(),
            verdict: r.verdict.word().to_owned(),
        })
        .collect();
    send_once(args, "/room/compare", |seat| {
        simulator_api::room::CompareReport {
            seat: seat.to_owned(),
            exercise: exercise.to_owned(),
            before: names[0].to_owned(),
            after: names[1].to_owned(),
            rows,
        }
    })
    .await
}

/// Joins (or finds this seat's token) and POSTs the body `made` makes for
/// the seat's name to `path`: the seat's row's URL when the room took it.
async fn send_once<T: serde::Serialize>(
    args: &RoomArgs,
    path: &str,
    made: impl FnOnce(&str) -> T,
) -> Result<String, String> {
    let (url, name) = match (args.room.as_deref(), args.seat.as_deref()) {
        (Some(url), Some(name)) => (url, name),
        _ => return Err("the room's line gives ISIM_ROOM and ISIM_SEAT".into()),
    };
    let mut seat = seat(url, name).await?;
    let body = serde_json::to_vec(&made(name)).map_err(|e| e.to_string())?;
    send(&mut seat, path, Bytes::from(body)).await?;
    Ok(row_link(&seat))
}

/// The link to a seat's own row: its token after `#`, which a browser never
/// sends; the page signs in with it and takes it out of the address bar.
fn row_link(seat: &Seat) -> String {
    format!("{}/room#token={}", seat.invitation.base, seat.token)
}

async fn send_report(seat: &mut Seat, report: &SeatReport) -> Result<(), String> {
    let body = Bytes::from(serde_json::to_vec(report).expect("a report serialises"));
    send(seat, "/room/report", body).await
}

/// POSTs `body` to `path` as the seat; a room that no longer knows the token
/// (restarted without its state file, or the seat freed) gets a join first, once.
async fn send(seat: &mut Seat, path: &str, body: Bytes) -> Result<(), String> {
    match post(seat, path, body.clone()).await {
        Err(e) if e.status() == Some(StatusCode::UNAUTHORIZED) => {
            let answer = join(&seat.invitation, &seat.name).await?;
            seat.token = answer.token;
            remember(&seat.invitation, &seat.name, &seat.token);
            post(seat, path, body).await.map_err(|e| words(&e))
        }
        done => done.map_err(|e| words(&e)),
    }
}

async fn post(seat: &Seat, path: &str, body: Bytes) -> Result<(), EndpointError> {
    let base = &seat.invitation.base;
    let call = exchange(base, Method::POST, path, body, Some(&seat.token));
    match tokio::time::timeout(CALL_LIMIT, call).await {
        Ok(answer) => answer.map(drop),
        Err(_) => Err(EndpointError::Http(
            format!("POST {base}{path}"),
            format!("no answer within {} s", CALL_LIMIT.as_secs()),
        )),
    }
}

/// The seat, with the token this machine keeps for it or a new one.
async fn seat(url: &str, name: &str) -> Result<Seat, String> {
    let invitation = Invitation::parse(url)?;
    if let Some(why) = seat_name_error(name) {
        return Err(format!("--seat: {why}"));
    }
    let kept = token_file(&invitation, name).and_then(|f| std::fs::read_to_string(f).ok());
    let token = match kept {
        Some(token) if !token.trim().is_empty() => token.trim().to_owned(),
        _ => {
            let token = join(&invitation, name).await?.token;
            remember(&invitation, name, &token);
            token
        }
    };
    Ok(Seat {
        invitation,
        name: name.to_owned(),
        token,
    })
}

async fn join(invitation: &Invitation, name: &str) -> Result<JoinAnswer, String> {
    let request = JoinRequest {
        seat: name.to_owned(),
        password: invitation.password.clone(),
    };
    let body = Bytes::from(serde_json::to_vec(&request).expect("a join serialises"));
    let base = &invitation.base;
    let call = exchange(base, Method::POST, "/room/join", body, None);
    let text = match tokio::time::timeout(CALL_LIMIT, call).await {
        Ok(answer) => answer.map_err(|e| words(&e))?,
        Err(_) => {
            return Err(format!(
                "{base} did not answer within {} s",
                CALL_LIMIT.as_secs()
            ))
        }
    };
    serde_json::from_str(&text).map_err(|e| format!("{base} is not a room ({e})"))
}

/// The room's own words when it refused, else what went wrong.
fn words(e: &EndpointError) -> String {
    if let EndpointError::Refused { message, .. } = e {
        if let Ok(body) = serde_json::from_str::<simulator_api::ErrorBody>(message) {
            return body.message;
        }
    }
    e.to_string()
}

/// Keeps the seat's token, so the next check reports as the same seat; a
/// token that cannot be kept is told once and the check goes on.
fn remember(invitation: &Invitation, name: &str, token: &str) {
    let Some(file) = token_file(invitation, name) else {
        return;
    };
    let written = file
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| simulator_service::os::write_private(&file, token.as_bytes()));
    if let Err(e) = written {
        eprintln!(
            "note: could not keep the seat's token in {} ({e}): the next check cannot report as seat {name}",
            file.display()
        );
    }
}

/// `$XDG_STATE_HOME/system-simulator/rooms/HOST_PORT/SEAT.token` (or under
/// `~/.local/state`): one file a room and seat, so eight checks of one
/// machine's seats never write the same file.
pub fn token_file(invitation: &Invitation, name: &str) -> Option<PathBuf> {
    let room: String = invitation
        .base
        .trim_start_matches("http://")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    Some(
        crate::local::state_dir()?
            .join("rooms")
            .join(room)
            .join(format!("{name}.token")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_facilitators_line_gives_the_room_and_its_password() {
        assert_eq!(
            Invitation::parse("http://studio:7900/join/plum-42"),
            Ok(Invitation {
                base: "http://studio:7900".into(),
                password: "plum-42".into()
            })
        );
        for bad in [
            "http://studio:7900",
            "http://studio:7900/join/",
            "studio:7900/join/x",
        ] {
            assert!(Invitation::parse(bad).is_err(), "{bad}");
        }
    }
}
