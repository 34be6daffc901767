//! Admission: what a request must obtain before its element is handed to
//! persistence, and what happens when it cannot have it at once.
//!
//! **Contract.** [`Admission::admit`] returns a [`Permit`] (or none, when shutdown
//! ended the wait or the request was shed) and whether the request had to wait and
//! for how long. The permit travels with the element into persistence and is given
//! back when it is dropped, which persistence does once the persist has ended
//! (`permit_until = persist-done`, the original): so admission bounds persists in
//! flight, and by Little's law the throughput is at most capacity / mean persist
//! time. With `permit_until = hand-off` the request drops it as soon as its element
//! is handed to persistence, and admission bounds only the hand-offs. Each strategy fires its own probes; every strategy fires either
//! `request-nonblock` or `request-block` for each request, so the seed's count
//! script keeps balancing.
//!
//! Strategies, one file each: `semaphore.rs` (the original: `permits`, wait when
//! none is free). An enum rather than a trait object: the strategies are few and
//! known, the hot path stays statically dispatched, and each `match` here names
//! them all, so a new one cannot be forgotten anywhere.

mod semaphore;

use std::time::Duration;

use simulator_api::settings::AdmissionKind;
use simulator_api::Settings;

use crate::observe::Events;

pub use semaphore::{GateError, GatePermit, PersistGate, MAX_PERMITS};

/// The admission strategy in force.
#[derive(Debug, Clone)]
pub enum Admission {
    Semaphore(PersistGate),
}

/// What a request holds while its element persists; dropping it gives it back.
#[derive(Debug)]
#[must_use = "dropping the permit at once would let the next request through"]
pub enum Permit {
    Semaphore(GatePermit),
}

/// How admission went for one request.
#[derive(Debug)]
pub struct Admitted<P = Permit> {
    /// `None` when shutdown ended the wait: the request must end with a 503.
    pub permit: Option<P>,
    /// It could not be admitted at once (request-block fired).
    pub blocked: bool,
    /// How long it waited.
    pub waited: Duration,
    /// Refused at once because nothing was free (`when_full = shed`).
    pub shed: bool,
}

impl Admission {
    pub fn new(settings: &Settings) -> Result<Self, GateError> {
        match settings.admission {
            AdmissionKind::Semaphore => {
                Ok(Admission::Semaphore(PersistGate::new(settings.permits)?))
            }
        }
    }

    /// Admits one request, waiting or refusing as `settings` say.
    pub async fn admit(&self, id: u64, events: &Events, settings: &Settings) -> Admitted {
        match self {
            Admission::Semaphore(gate) => {
                let a = gate.admit_request(id, events, settings.when_full).await;
                Admitted {
                    permit: a.permit.map(Permit::Semaphore),
                    blocked: a.blocked,
                    waited: a.waited,
                    shed: a.shed,
                }
            }
        }
    }

    /// Follows a live change of the settings it depends on (`permits`).
    pub fn follow(&self, settings: &Settings) -> Result<(), GateError> {
        match self {
            Admission::Semaphore(gate) => gate.resize(settings.permits),
        }
    }

    /// Ends every wait, now and later, without a permit (shutdown, at the deadline).
    pub fn close(&self) {
        match self {
            Admission::Semaphore(gate) => gate.close(),
        }
    }

    /// Permits free right now.
    pub fn available(&self) -> usize {
        match self {
            Admission::Semaphore(gate) => gate.available(),
        }
    }

    /// The configured capacity.
    pub fn total(&self) -> usize {
        match self {
            Admission::Semaphore(gate) => gate.total(),
        }
    }
}
