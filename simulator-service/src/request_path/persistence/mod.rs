//! Persistence: how elements reach the store, and how many persist at once.
//!
//! **Contract.** [`Persistence::hand_off`] takes a [`Job`] (the element, its
//! admission permit, the settings of its request) and returns once the element is
//! in persistence's hands; the request does not wait for the store unless it is
//! durable. Every element handed off gets exactly one `persist-start` and one
//! `persist-done` (ok or not; a persist still running after `persist_timeout`
//! fails), and its permit is dropped right after its persist-done, never before;
//! except that a pool may refuse an element at a full queue (`queue-refuse`, the
//! request gets a 503) or drop one that waited too long (`queue-drop`, its permit
//! goes back then), and neither is persisted. An element over `part_bytes` is
//! written as parts, `parts_at_once` at a time ([`Backend::written`], multipart);
//! it is still one persist-start and one persist-done.
//!
//! Strategies, one file each: `task_per_element.rs` (the original: a task spawned
//! per element, persist-start at the hand-off) and `pool.rs` (`persist_workers`
//! workers behind a queue of `persist_queue` elements, persist-start when a worker
//! takes the element). An enum, like admission: few strategies, static dispatch,
//! every one named in each `match`. A live change of strategy or pool size starts
//! a new one for new elements; the old one finishes what it holds. Whichever
//! holds an element whose request will not wait for its write, it is counted as
//! owed until its write ends (`unwritten.rs`).

mod journal;
mod pool;
mod task_per_element;
mod unwritten;

use std::sync::Arc;

use futures::StreamExt;
use simulator_api::settings::PersistenceKind;
use simulator_api::Settings;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::admission::{Admission, Permit};
use super::client::ClientWatch;
use super::delay;
use super::store::{PersistError, Store};
use super::Element;
use crate::observe::Events;

pub use journal::Journal;
pub use pool::Pool;
pub use task_per_element::TaskPerElement;
pub use unwritten::{Owed, Unwritten};

/// Why a hand-off did not take the element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandOffError {
    /// Shutdown ended the wait for room.
    CutShort,
    /// The queue was full and `when_full = shed`.
    QueueFull,
}

/// One element on its way to the store.
#[derive(Debug)]
pub struct Job {
    pub id: u64,
    pub element: Element,
    /// Held until the persist has ended; `None` when the request kept its permit
    /// only for the hand-off (`permit_until = hand-off`).
    pub permit: Option<Permit>,
    /// The settings in force when the request entered the path.
    pub settings: Arc<Settings>,
    /// Durable mode: told how the persist went.
    pub notify: Option<oneshot::Sender<Result<(), String>>>,
    /// Whether the request's client has gone: a persist that ends after it did
    /// is wasted work.
    pub client: ClientWatch,
    /// Set by the hand-off when the reply will not wait for the write
    /// (`unwritten.rs`); `None` until then.
    pub owed: Option<Owed>,
}

/// What every strategy persists through.
#[derive(Debug)]
pub struct Backend {
    pub store: Store,
    pub events: Events,
    /// For the permits-free figure of persist-start.
    pub admission: Admission,
    /// Every persist task runs on this tracker, so shutdown can wait for them.
    pub tasks: TaskTracker,
    /// Elements acknowledged and not yet written, whichever strategy holds them.
    pub unwritten: Arc<Unwritten>,
    /// The persists' journal (`journal`; unopened while it is off).
    pub journal: Journal,
}

/// The persistence strategy in force.
#[derive(Debug, Clone)]
pub enum Persistence {
    TaskPerElement(TaskPerElement),
    Pool(Pool),
}

impl Persistence {
    /// Starts the strategy `settings` ask for.
    pub fn start(settings: &Settings, backend: Arc<Backend>) -> Self {
        match settings.persistence {
            PersistenceKind::TaskPerElement => {
                Persistence::TaskPerElement(TaskPerElement::new(backend))
            }
            PersistenceKind::Pool => Persistence::Pool(Pool::start(
                settings.persist_workers,
                settings.persist_queue,
                backend,
            )),
        }
    }

    /// Whether this strategy is the one `settings` ask for, sized as they say.
    pub fn matches(&self, settings: &Settings) -> bool {
        match self {
            Persistence::TaskPerElement(_) => {
                settings.persistence == PersistenceKind::TaskPerElement
            }
            Persistence::Pool(pool) => {
                settings.persistence == PersistenceKind::Pool
                    && pool.workers() == settings.persist_workers
                    && pool.capacity() == settings.persist_queue
            }
        }
    }

    /// Takes the element; waits only for room in a full queue (or shutdown).
    pub async fn hand_off(
        &self,
        job: Job,
        abandon: &CancellationToken,
    ) -> Result<(), HandOffError> {
        match self {
            Persistence::TaskPerElement(t) => {
                t.hand_off(job);
                Ok(())
            }
            Persistence::Pool(pool) => pool.hand_off(job, abandon).await,
        }
    }

    /// Shutdown: take nothing more; what is queued still persists.
    pub fn close(&self) {
        match self {
            Persistence::TaskPerElement(_) => {}
            Persistence::Pool(pool) => pool.close(),
        }
    }
}

impl Backend {
    /// What an element handed on owes until its write: nothing when its request
    /// waits for the write (durable), one place in the count otherwise.
    fn owed(&self, job: &Job) -> Option<Owed> {
        job.notify.is_none().then(|| self.unwritten.owe())
    }

    /// The element's write: whole, or (`part_bytes`, multipart) as parts of that
    /// size, `parts_at_once` at a time, as an object store's multipart upload
    /// does; the first failed part fails the element. Each part is a store write
    /// of its own (its latency, its per-MiB cost, its store slot, its hedge).
    async fn written(
        &self,
        id: u64,
        element: &Element,
        settings: &Settings,
    ) -> Result<(), PersistError> {
        let size = element.len();
        if settings.part_bytes == 0 || size <= settings.part_bytes {
            return self.hedged(id, element, settings).await;
        }
        let parts = (0..size.div_ceil(settings.part_bytes)).map(|i| {
            let part = (size - i * settings.part_bytes).min(settings.part_bytes);
            async move { self.hedged(id, &Element::Synthetic(part), settings).await }
        });
        let mut writes = futures::stream::iter(parts).buffer_unordered(settings.parts_at_once);
        while let Some(outcome) = writes.next().await {
            outcome?;
        }
        Ok(())
    }

    /// The store's persist, hedged: with `hedge_after` set, an attempt still
    /// running then is raced by a second one, and the first to finish decides
    /// (the other is dropped: the simulated store holds nothing to clean up, and
    /// settings refuse hedging with files). One element, one outcome, one
    /// persist-done, however many attempts.
    async fn hedged(
        &self,
        id: u64,
        element: &Element,
        settings: &Settings,
    ) -> Result<(), PersistError> {
        if settings.hedge_after.is_zero() {
            return self.store.persist(id, element).await;
        }
        // Boxed: a race of two writes and a timer is over 2 KB of state, which
        // every persist's future would carry inline, and move into its box,
        // hedging or not (issue 62).
        Box::pin(self.race(id, element, settings)).await
    }

    /// Two attempts when the first is still running at `hedge_after`.
    async fn race(
        &self,
        id: u64,
        element: &Element,
        settings: &Settings,
    ) -> Result<(), PersistError> {
        let first = self.store.persist(id, element);
        tokio::pin!(first);
        tokio::select! {
            outcome = &mut first => outcome,
            () = tokio::time::sleep(settings.hedge_after) => {
                self.events.persist_hedge(id, settings.hedge_after);
                let second = self.store.persist(id, element);
                tokio::select! {
                    outcome = &mut first => outcome,
                    outcome = second => outcome,
                }
            }
        }
    }

    /// The write within `persist_timeout`, its intent and outcome journalled
    /// first and last where `journal` is on (`journal.rs`).
    async fn journalled(
        &self,
        id: u64,
        element: &Element,
        settings: &Settings,
    ) -> Result<(), PersistError> {
        let entry = match settings.journal {
            true => Some(self.journal.begin(id, element.len())?),
            false => None,
        };
        let timeout = settings.persist_timeout;
        let outcome = match delay::within(timeout, self.written(id, element, settings)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(PersistError::TimedOut(timeout)),
        };
        if let Some(entry) = entry {
            self.journal.end(entry, &outcome, settings.journal_on_error);
        }
        outcome
    }

    /// persist-start, with the figures the probe carries.
    fn started(&self, job: &Job) {
        self.events
            .persist_start(job.id, job.element.len(), self.admission.available());
    }

    /// Runs one persist to its end: the store within `persist_timeout`, then
    /// persist-done, then the permit back, then (durable mode) the request told.
    async fn persist(&self, job: Job) {
        let Job {
            id,
            element,
            permit,
            settings,
            notify,
            client,
            owed,
        } = job;
        let started = Instant::now();
        let outcome = self.journalled(id, &element, &settings).await;
        if let Err(err) = &outcome {
            tracing::debug!(id, %err, "persist failed");
        }
        let timed_out = matches!(outcome, Err(PersistError::TimedOut(_)));
        self.events.persist_done(
            id,
            outcome.is_ok(),
            timed_out,
            client.gone(),
            started.elapsed(),
        );
        // Written (or failed for good): no longer owed, from the same moment
        // persists in flight counts it done.
        drop(owed);
        // persist-done fires before the permit goes back, as in the original.
        drop(permit);
        if let Some(notify) = notify {
            // The request may have been cut short and gone; nothing to tell then.
            let _ = notify.send(outcome.map_err(|e| e.to_string()));
        }
    }
}
