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

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;
use tokio_util::task::TaskTracker;

use crate::config::{ConfigError, ConfigUpdate, ServerConfig, Tunables};
use crate::events::Events;
use crate::gate::{GateError, GatePermit, PersistGate};
use crate::persist::{Element, Store};
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

/// Cloneable handle to the processor; all clones share one gate and one set of counters.
#[derive(Debug, Clone)]
pub struct DataProcessor {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    gate: PersistGate,
    store: Store,
    events: Events,
    tunables: RwLock<Tunables>,
    next_id: AtomicU64,
    requests: TaskTracker,
    persists: TaskTracker,
}

/// What shutdown could not finish before its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DrainReport {
    pub requests_abandoned: u64,
    pub persists_abandoned: u64,
    pub counts: Counts,
}

impl DataProcessor {
    pub fn new(config: &ServerConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let gate =
            PersistGate::new(config.permits).map_err(|_| ConfigError::Permits(config.permits))?;
        let store = match &config.persist_dir {
            Some(dir) => Store::Files {
                dir: dir.clone(),
                fsync: config.persist_fsync,
            },
            None => Store::Simulated,
        };
        Ok(Self {
            shared: Arc::new(Shared {
                gate,
                store,
                events: Events::default(),
                tunables: RwLock::new(config.tunables()),
                next_id: AtomicU64::new(1),
                requests: TaskTracker::new(),
                persists: TaskTracker::new(),
            }),
        })
    }

    /// Runs one request to completion in its own task and waits for the reply.
    /// Dropping the returned future (a client hanging up) does not stop the request.
    pub async fn submit(&self, element: Element) -> Result<Reply, GateError> {
        let this = self.clone();
        self.shared
            .requests
            .spawn(async move { this.handle(element).await })
            .await
            .unwrap_or(Err(GateError::Closed))
    }

    /// The request path of the original simulator. Call through [`Self::submit`]
    /// unless the caller itself cannot be cancelled (the unit tests).
    pub async fn handle(&self, element: Element) -> Result<Reply, GateError> {
        let s = &*self.shared;
        let started = Instant::now();
        let id = s.next_id.fetch_add(1, Ordering::Relaxed);
        let tunables = self.tunables();
        let bytes = element.len();

        s.events.request_start(id, bytes);
        self.network_traverse(&tunables).await;

        // The original's `try_acquire`, and `acquire` when that fails.
        let (permit, waited) = match s.gate.try_admit() {
            Some(permit) => {
                s.events.request_nonblock(id, s.gate.available());
                (permit, None)
            }
            None => {
                s.events.request_block(id, s.gate.total());
                let wait_started = Instant::now();
                let permit = s.gate.admit().await?;
                let waited = wait_started.elapsed();
                s.events.request_unblock(id, waited);
                (permit, Some(waited))
            }
        };

        s.events.persist_start(id, bytes, s.gate.available());
        self.spawn_persist(id, element, tunables, permit);

        self.network_traverse(&tunables).await;
        s.events
            .request_done(id, started.elapsed(), waited.is_some());
        Ok(Reply {
            id,
            blocked: waited.is_some(),
            permit_wait_ns: waited.map_or(0, |w| u64::try_from(w.as_nanos()).unwrap_or(u64::MAX)),
        })
    }

    /// Persists in the background, holding the permit until the store is done.
    fn spawn_persist(&self, id: u64, element: Element, tunables: Tunables, permit: GatePermit) {
        let this = self.clone();
        self.shared.persists.spawn(async move {
            let started = Instant::now();
            let outcome = this.shared.store.persist(id, &element, &tunables).await;
            if let Err(err) = &outcome {
                tracing::debug!(id, %err, "persist failed");
            }
            this.shared
                .events
                .persist_done(id, outcome.is_ok(), started.elapsed());
            // persist-done fires before the permit goes back, as in the original.
            drop(permit);
        });
    }

    async fn network_traverse(&self, tunables: &Tunables) {
        let delay = tunables.network_delay.sample(&mut rand::rng());
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
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
    /// `deadline`, and reports what was left unfinished.
    pub async fn drain(&self, deadline: Instant) -> DrainReport {
        let s = &*self.shared;
        s.requests.close();
        s.persists.close();
        let _ = tokio::time::timeout_at(deadline, async {
            s.requests.wait().await;
            s.persists.wait().await;
        })
        .await;
        let counts = self.counts();
        DrainReport {
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
