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
//! none is free). Two refinements of it for elements of very different sizes:
//! byte-weighted permits (`permit_bytes`: an element takes a permit per so many
//! bytes, `acquire_many`) and a lane of its own for small elements
//! (`small_lane_bytes`, `small_lane_permits`: a second gate, so small elements
//! never queue behind large ones). An enum rather than a trait object: the strategies are few and
//! known, the hot path stays statically dispatched, and each `match` here names
//! them all, so a new one cannot be forgotten anywhere.

mod semaphore;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use simulator_api::settings::AdmissionKind;
use simulator_api::Settings;
use tokio_util::sync::CancellationToken;

use crate::observe::Events;

pub use semaphore::{GateError, GatePermit, PersistGate, WaitPolicy, MAX_PERMITS};

/// The admission strategy in force.
#[derive(Debug, Clone)]
pub enum Admission {
    Semaphore(Arc<Lanes>),
}

/// The semaphore's gates: the main one (`permits`) and the small elements' lane
/// (`small_lane_permits`), used only while `small_lane_bytes` is set.
#[derive(Debug)]
pub struct Lanes {
    main: PersistGate,
    small: PersistGate,
    /// `small_lane_bytes` in force (0: one lane), for the figures that have no
    /// settings at hand.
    small_lane_bytes: AtomicU64,
}

impl Lanes {
    fn small_in_use(&self) -> bool {
        self.small_lane_bytes.load(Ordering::Relaxed) > 0
    }

    /// The gate an element of `bytes` goes through.
    fn for_element(&self, bytes: u64, settings: &Settings) -> &PersistGate {
        match settings.small_lane_bytes {
            0 => &self.main,
            limit if bytes <= limit => &self.small,
            _ => &self.main,
        }
    }
}

/// Permits an element of `bytes` takes: one per `permit_bytes`, rounded up, and
/// at most a quarter of the gate's permits (one when byte-weighting is off).
///
/// The cap is what makes byte-weighting usable with heavy tails: uncapped, an
/// element larger than the whole budget takes every permit for its whole
/// (long) persist and the gate serves one element at a time; a FIFO semaphore
/// also holds everyone behind a large element while it collects its permits.
/// Capped, the largest elements can take at most a quarter of the gate each.
fn weight(bytes: u64, settings: &Settings, capacity: usize) -> usize {
    match settings.permit_bytes {
        0 => 1,
        per => usize::try_from(bytes.div_ceil(per))
            .unwrap_or(usize::MAX)
            .clamp(1, (capacity / 4).max(1)),
    }
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
    /// Refused because nothing was free: at once (`when_full = shed`) or after
    /// waiting `permit_wait_limit`.
    pub shed: bool,
}

impl Admission {
    pub fn new(settings: &Settings) -> Result<Self, GateError> {
        match settings.admission {
            AdmissionKind::Semaphore => Ok(Admission::Semaphore(Arc::new(Lanes {
                main: PersistGate::new(settings.permits)?,
                small: PersistGate::new(settings.small_lane_permits)?,
                small_lane_bytes: AtomicU64::new(settings.small_lane_bytes),
            }))),
        }
    }

    /// Admits one request with an element of `bytes`, waiting or refusing as
    /// `settings` say; `stop` ends a wait without a permit.
    pub async fn admit(
        &self,
        id: u64,
        events: &Events,
        settings: &Settings,
        bytes: u64,
        stop: &CancellationToken,
    ) -> Admitted {
        match self {
            Admission::Semaphore(lanes) => {
                let gate = lanes.for_element(bytes, settings);
                let a = gate
                    .admit_request(
                        id,
                        events,
                        WaitPolicy {
                            when_full: settings.when_full,
                            wait_limit: settings.permit_wait_limit,
                            stop,
                        },
                        weight(bytes, settings, gate.total()),
                    )
                    .await;
                Admitted {
                    permit: a.permit.map(Permit::Semaphore),
                    blocked: a.blocked,
                    waited: a.waited,
                    shed: a.shed,
                }
            }
        }
    }

    /// Follows a live change of the settings it depends on (`permits`, the lane).
    pub fn follow(&self, settings: &Settings) -> Result<(), GateError> {
        match self {
            Admission::Semaphore(lanes) => {
                lanes.main.resize(settings.permits)?;
                lanes.small.resize(settings.small_lane_permits)?;
                lanes
                    .small_lane_bytes
                    .store(settings.small_lane_bytes, Ordering::Relaxed);
                Ok(())
            }
        }
    }

    /// Ends every wait, now and later, without a permit (shutdown, at the deadline).
    pub fn close(&self) {
        match self {
            Admission::Semaphore(lanes) => {
                lanes.main.close();
                lanes.small.close();
            }
        }
    }

    /// Permits free right now, the small lane's included while it is in use.
    pub fn available(&self) -> usize {
        match self {
            Admission::Semaphore(lanes) => {
                let small = if lanes.small_in_use() {
                    lanes.small.available()
                } else {
                    0
                };
                lanes.main.available() + small
            }
        }
    }

    /// Requests waiting for a permit right now, in either lane.
    pub fn waiting(&self) -> usize {
        match self {
            Admission::Semaphore(lanes) => lanes.main.waiting() + lanes.small.waiting(),
        }
    }

    /// The configured capacity, the small lane's included while it is in use.
    pub fn total(&self) -> usize {
        match self {
            Admission::Semaphore(lanes) => {
                let small = if lanes.small_in_use() {
                    lanes.small.total()
                } else {
                    0
                };
                lanes.main.total() + small
            }
        }
    }
}
