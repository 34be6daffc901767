//! The data processor: the original simulator's request path, step by step.
//!
//! ```text
//! request-start ─ network in ─┬─ permit free? ── request-nonblock ─┬─ persist-start ─ network out ─ request-done
//!                             └─ request-block ... request-unblock ┘        │
//!                                                                           └─ (spawned) store ─ persist-done ─ permit back
//! ```
//!
//! The handler does not wait for persistence, exactly like the original: it hands
//! the element *and the permit* to a spawned task and replies. That is why a handful
//! of permits throttles the whole server: each is held for a full persist (~60 ms)
//! although the request that took it is done in ~3.5 ms.
//!
//! Requests run in tasks of their own ([`DataProcessor::submit`]), not in the HTTP
//! handler's future, so a client that hangs up mid-request cannot cancel a request
//! between its request-start and its request-done; every start is matched by a done.
//!
//! **Faults.** A persist that outlives `persist_timeout` (a stalled store) is failed
//! and its permit comes back. **Durable mode** makes the request wait for its
//! persist, so the reply means "on disk". **Shutdown** ([`DataProcessor::drain`])
//! waits until its deadline, then cuts short every request still waiting (for a
//! permit, the network or a durable persist): each gets request-done and a 503, so
//! started = done holds, and the persists still running are reported as abandoned.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::{ConfigError, ConfigUpdate, ServerConfig, Tunables};
use crate::events::Events;
use crate::gate::{GatePermit, PersistGate};
use crate::persist::{self, Element, PersistError, Store};
use crate::stats::Counts;

/// What a request gets back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Reply {
    pub id: u64,
    /// True when no permit was free on arrival and the request waited for one.
    pub blocked: bool,
    /// How long it waited for its permit (0 when it did not block).
    pub permit_wait_ns: u64,
}

/// Why a request ended without its reply. Either way request-done has fired.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("the server is shutting down and cut this request short; it was not stored")]
    ShuttingDown,
    #[error("the element was not stored: {0}")]
    NotStored(String),
}

/// Cloneable handle to the processor; all clones share one gate and one set of counters.
#[derive(Debug, Clone)]
pub struct DataProcessor {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    gate: PersistGate,
    store: Store,
    durable: bool,
    events: Events,
    tunables: RwLock<Tunables>,
    next_id: AtomicU64,
    requests: TaskTracker,
    persists: TaskTracker,
    /// Cancelled at the drain deadline: every wait in the request path ends.
    abandon: CancellationToken,
    requests_cut_short: AtomicU64,
}

/// How shutdown went: what it had to cut short or leave unfinished at its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DrainReport {
    /// Requests ended at the deadline with a 503 (request-done fired for each).
    pub requests_cut_short: u64,
    /// Requests that had still not ended after that (0 unless a request was stuck
    /// in CPU work; `counts` then shows started > done).
    pub requests_abandoned: u64,
    /// Persists still running at the deadline: persist-start without persist-done.
    pub persists_abandoned: u64,
    pub counts: Counts,
}

/// After the deadline, how long cut-short requests get to send their 503. Every
/// wait they can be in ends at once, so this is only ever a bound, never a delay.
const CUT_SHORT_GRACE: Duration = Duration::from_secs(1);

/// How far a request got, for its request-done and its reply.
#[derive(Debug, Default)]
struct Progress {
    blocked: bool,
    waited: Duration,
}

impl DataProcessor {
    pub fn new(config: &ServerConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let gate =
            PersistGate::new(config.permits).map_err(|_| ConfigError::Permits(config.permits))?;
        let (store, first_id) = match &config.persist_dir {
            Some(dir) => {
                let first_id = persist::open_dir(dir).map_err(|e| ConfigError::PersistDir {
                    path: dir.clone(),
                    reason: e.to_string(),
                })?;
                let store = Store::Files {
                    dir: dir.clone(),
                    fsync: config.persist_fsync || config.durable,
                };
                (store, first_id)
            }
            None => (Store::Simulated, 1),
        };
        Ok(Self {
            shared: Arc::new(Shared {
                gate,
                store,
                durable: config.durable,
                events: Events::default(),
                tunables: RwLock::new(config.tunables()),
                next_id: AtomicU64::new(first_id),
                requests: TaskTracker::new(),
                persists: TaskTracker::new(),
                abandon: CancellationToken::new(),
                requests_cut_short: AtomicU64::new(0),
            }),
        })
    }

    /// Runs one request to completion in its own task and waits for the reply.
    /// Dropping the returned future (a client hanging up) does not stop the request.
    pub async fn submit(&self, element: Element) -> Result<Reply, RequestError> {
        let this = self.clone();
        self.shared
            .requests
            .spawn(async move { this.handle(element).await })
            .await
            .unwrap_or(Err(RequestError::ShuttingDown))
    }

    /// The request path of the original simulator. Call through [`Self::submit`]
    /// unless the caller itself cannot be cancelled (the unit tests).
    pub async fn handle(&self, element: Element) -> Result<Reply, RequestError> {
        let s = &*self.shared;
        let started = Instant::now();
        let id = s.next_id.fetch_add(1, Ordering::Relaxed);
        let tunables = self.tunables();
        s.events.request_start(id, element.len());
        let mut progress = Progress::default();
        let outcome = self.process(id, element, &tunables, &mut progress).await;
        // Every request-start gets its request-done, whatever happened in between.
        s.events
            .request_done(id, started.elapsed(), progress.blocked);
        if outcome == Err(RequestError::ShuttingDown) {
            s.requests_cut_short.fetch_add(1, Ordering::Relaxed);
        }
        outcome.map(|()| Reply {
            id,
            blocked: progress.blocked,
            permit_wait_ns: crate::events::nanos(progress.waited),
        })
    }

    async fn process(
        &self,
        id: u64,
        element: Element,
        tunables: &Tunables,
        progress: &mut Progress,
    ) -> Result<(), RequestError> {
        let s = &*self.shared;
        let bytes = element.len();
        self.network_traverse(tunables).await?;

        // The original's `try_acquire`, and `acquire` when that fails.
        let permit = match s.gate.try_admit() {
            Some(permit) => {
                s.events.request_nonblock(id, s.gate.available());
                permit
            }
            None => {
                s.events.request_block(id, s.gate.total());
                progress.blocked = true;
                let wait_started = Instant::now();
                // Shutdown closes the gate, which ends this wait.
                let permit = s
                    .gate
                    .admit()
                    .await
                    .map_err(|_| RequestError::ShuttingDown)?;
                progress.waited = wait_started.elapsed();
                s.events.request_unblock(id, progress.waited);
                permit
            }
        };

        s.events.persist_start(id, bytes, s.gate.available());
        let stored = self.spawn_persist(id, element, *tunables, permit);
        if let Some(stored) = stored {
            tokio::select! {
                outcome = stored => match outcome {
                    Ok(Ok(())) => {}
                    Ok(Err(reason)) => return Err(RequestError::NotStored(reason)),
                    Err(_) => return Err(RequestError::ShuttingDown),
                },
                () = s.abandon.cancelled() => return Err(RequestError::ShuttingDown),
            }
        }
        self.network_traverse(tunables).await
    }

    /// Persists in the background, holding the permit until the store is done or
    /// `persist_timeout` gives up on it. In durable mode the returned receiver
    /// says how it went.
    fn spawn_persist(
        &self,
        id: u64,
        element: Element,
        tunables: Tunables,
        permit: GatePermit,
    ) -> Option<oneshot::Receiver<Result<(), String>>> {
        let (notify, stored) = match self.shared.durable {
            true => {
                let (tx, rx) = oneshot::channel();
                (Some(tx), Some(rx))
            }
            false => (None, None),
        };
        let this = self.clone();
        self.shared.persists.spawn(async move {
            let s = &*this.shared;
            let started = Instant::now();
            let timeout = tunables.persist_timeout;
            let outcome =
                match tokio::time::timeout(timeout, s.store.persist(id, &element, &tunables)).await
                {
                    Ok(outcome) => outcome,
                    Err(_) => Err(PersistError::TimedOut(timeout)),
                };
            if let Err(err) = &outcome {
                tracing::debug!(id, %err, "persist failed");
            }
            let timed_out = matches!(outcome, Err(PersistError::TimedOut(_)));
            s.events
                .persist_done(id, outcome.is_ok(), timed_out, started.elapsed());
            // persist-done fires before the permit goes back, as in the original.
            drop(permit);
            if let Some(notify) = notify {
                // The request may have been cut short and gone; nothing to tell then.
                let _ = notify.send(outcome.map_err(|e| e.to_string()));
            }
        });
        stored
    }

    async fn network_traverse(&self, tunables: &Tunables) -> Result<(), RequestError> {
        let delay = tunables.network_delay.sample(&mut rand::rng());
        if delay.is_zero() {
            return Ok(());
        }
        tokio::select! {
            () = tokio::time::sleep(delay) => Ok(()),
            () = self.shared.abandon.cancelled() => Err(RequestError::ShuttingDown),
        }
    }

    pub fn gate(&self) -> &PersistGate {
        &self.shared.gate
    }

    pub fn events(&self) -> &Events {
        &self.shared.events
    }

    pub fn counts(&self) -> Counts {
        self.shared.events.stats().snapshot()
    }

    pub fn tunables(&self) -> Tunables {
        *self
            .shared
            .tunables
            .read()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Applies a live change: all of it, or (on any invalid value) none of it.
    pub fn update(&self, update: &ConfigUpdate) -> Result<Tunables, ConfigError> {
        let mut tunables = self
            .shared
            .tunables
            .write()
            .unwrap_or_else(|p| p.into_inner());
        let next = update.apply_to(*tunables)?;
        if let Some(permits) = update.permits {
            self.shared
                .gate
                .resize(permits)
                .map_err(|_| ConfigError::Permits(permits))?;
        }
        *tunables = next;
        Ok(next)
    }

    /// Waits until every request and persist in flight has finished, or until
    /// `deadline`; then cuts short the requests still waiting and reports the
    /// persists left running.
    pub async fn drain(&self, deadline: Instant) -> DrainReport {
        let s = &*self.shared;
        s.requests.close();
        s.persists.close();
        let finished = tokio::time::timeout_at(deadline, async {
            s.requests.wait().await;
            s.persists.wait().await;
        })
        .await
        .is_ok();
        if !finished {
            s.abandon.cancel();
            s.gate.close();
            let _ = tokio::time::timeout(CUT_SHORT_GRACE, s.requests.wait()).await;
        }
        let counts = self.counts();
        DrainReport {
            requests_cut_short: s.requests_cut_short.load(Ordering::Relaxed),
            requests_abandoned: counts.requests_in_flight(),
            persists_abandoned: counts.persists_in_flight(),
            counts,
        }
    }

    /// How long the simulated persistence takes on average (for Little's law).
    pub fn mean_persist_time(&self) -> Duration {
        self.tunables().persist_latency.mean()
    }
}
