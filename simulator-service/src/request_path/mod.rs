//! The request path: what happens to one request, part by part.
//!
//! ```text
//! request-start ─ network in ─ normalise ─ index ─ work ─ admission ─┬─ persistence hand-off ─ network out ─ request-done
//!                 (network.rs) (normalise/) (index/) (work/)           │  (persistence/)
//!                                                    (admission/) ─────┘        └─ store (store/) ─ persist-done ─ permit back
//!
//! a read ({"key": K}):
//! request-start ─ network in ─ cache (cache/): hit, or miss and a fill ─ network out ─ request-done
//!                                                      └─ store read (store/), a slot of its own
//! ```
//!
//! Each part is a module that owns one decision and documents its contract:
//! `network` (the simulated traverse, in and out), `normalise` (the record
//! trimmed, and the digest the reply carries), `index` (the element recorded in
//! a shared map behind a lock, and the compactor that holds it), `work` (what is done to the
//! element), `admission` (what a request must obtain before its element is handed
//! on, and what happens when it cannot: the workshop's gate), `persistence` (how
//! elements reach the store and how many at once), `store` (simulated or files,
//! faults around it) and, for a read, `cache` (the look-aside cache and its
//! fills). This file only strings them together and keeps the books:
//! every request-start gets its request-done, whatever happens in between.
//! Beside it: a live change of the settings (`live_change.rs`), shutdown
//! (`drain.rs`), and the figures the serving side shows (`figures.rs`).
//!
//! In the original configuration the handler does not wait for persistence: it
//! hands the element *and the permit* to a spawned task and replies. That is why a
//! handful of permits throttles the whole server: each is held for a full persist
//! (~60 ms) although the request that took it is done in ~3.5 ms.
//!
//! A client that hangs up mid-request cannot tear a request apart between its
//! request-start and its request-done: a request runs in the HTTP handler's
//! future until it is dropped, and then the rest of it on a task of its own
//! ([`DataProcessor::submit`], `run_to_end.rs`). What the rest does is
//! `on_disconnect`: run on as if the client were there (`detach`), or end at its
//! next wait (`cancel`): every wait in the path takes a `stop` token, which is
//! shutdown's own in `detach` mode and a child of it that the client's leaving
//! cancels in `cancel` mode (`client.rs`).
//!
//! **Durable mode** makes the request wait for its persist, so the reply means "on
//! disk". **Shutdown** ([`DataProcessor::drain`]) waits until its deadline, then
//! cuts short every request still waiting (for admission, the network, room in a
//! queue or a durable persist): each gets request-done and a 503, so started = done
//! holds, and the persists still running are reported as abandoned.

pub mod admission;
mod answered_once;
pub mod cache;
mod client;
pub mod delay;
mod drain;
mod element;
mod figures;
pub mod index;
mod live_change;
pub mod network;
pub mod normalise;
pub mod persistence;
mod run_to_end;
pub mod store;
pub mod work;

use std::future::Future;

use client::ClientWatch;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use simulator_api::settings::{OnDisconnect, PermitUntil, WhenFull};
use simulator_api::{Counts, Reply, Settings, SettingsError};
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::observe::{nanos, Events};
use admission::Admission;
use answered_once::{AnsweredOnce, Seen};
use persistence::{Backend, Job, Persistence};
use store::Store;
use work::Work;

pub use drain::DrainReport;
pub use element::Element;

/// Why a request ended without its reply. Either way request-done has fired.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("the server is shutting down and cut this request short; it was not stored")]
    ShuttingDown,
    #[error("the element was not stored: {0}")]
    NotStored(String),
    #[error("no permit was free and the server sheds load (when_full = shed): try again")]
    Shed,
    #[error(
        "the persistence queue is full and the server sheds load (when_full = shed): try again"
    )]
    QueueFull,
    #[error("the cache had fill_limit fills in flight and this read missed: try again")]
    FillLimit,
    #[error("waited {0:?} for a permit, the most permit_wait_limit allows: try again")]
    WaitedTooLong(Duration),
    /// A retry's key (`isim-request-key`) named another element than the one
    /// stored under it (`answer_retries_once`).
    #[error(
        "isim-request-key {0} was used for another element: a retry must send the same element"
    )]
    KeyReused(u64),
    /// Nobody reads this one: its client had gone (`on_disconnect = cancel`).
    #[error("the client went away and the request was cancelled (on_disconnect = cancel)")]
    Cancelled,
}

impl From<persistence::HandOffError> for RequestError {
    fn from(e: persistence::HandOffError) -> Self {
        match e {
            persistence::HandOffError::CutShort => RequestError::ShuttingDown,
            persistence::HandOffError::QueueFull => RequestError::QueueFull,
        }
    }
}

impl From<network::CutShort> for RequestError {
    fn from(_: network::CutShort) -> Self {
        RequestError::ShuttingDown
    }
}

/// Why the processor cannot start with a configuration.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error("persist_dir {path}: {reason}")]
    PersistDir { path: String, reason: String },
}

/// Cloneable handle to the processor; all clones share one set of parts and counters.
#[derive(Debug, Clone)]
pub struct DataProcessor {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    admission: Admission,
    backend: Arc<Backend>,
    /// Replaced whole by a live change of strategy or pool size.
    persistence: RwLock<Persistence>,
    /// Replaced whole by a live change of `work`, `work_on` or `work_limit`.
    work: RwLock<Arc<Work>>,
    events: Events,
    /// The shared index (`index`) and its compactor.
    index: index::Index,
    /// The look-aside cache in front of the store's reads (`cache_entries`).
    cache: Arc<cache::Cache>,
    /// The replies remembered for the clients' retries (`answer_retries_once`).
    answered_once: AnsweredOnce,
    settings: RwLock<Arc<Settings>>,
    next_id: AtomicU64,
    requests: TaskTracker,
    /// Cancelled at the drain deadline: every wait in the request path ends.
    abandon: CancellationToken,
    requests_cut_short: AtomicU64,
    /// The longest request ended since the live view last read it, ns.
    longest_ns: AtomicU64,
}

/// What a request asks for: an element stored (the data processor's own
/// path), or the element of a key read (`cache/`).
#[derive(Debug)]
enum Operation {
    Store(Element),
    Read(u64),
}

impl Operation {
    /// request-start's bytes: the element's; 0 for a read.
    fn bytes(&self) -> u64 {
        match self {
            Operation::Store(element) => element.len(),
            Operation::Read(_) => 0,
        }
    }
}

/// How far a request got, for its request-done and its reply.
#[derive(Debug, Default)]
struct Progress {
    blocked: bool,
    waited: Duration,
    digest: Option<u32>,
}

impl DataProcessor {
    /// Builds every part from `settings` (validated first). Call it, and
    /// [`Self::update`], within a Tokio runtime: a persistence pool's workers are
    /// spawned on it.
    pub fn new(settings: &Settings) -> Result<Self, StartError> {
        settings.validate()?;
        let admission =
            Admission::new(settings).map_err(|e| SettingsError::Other(e.to_string()))?;
        let (store, first_id) = Store::open(settings).map_err(|e| StartError::PersistDir {
            path: settings
                .persist_dir
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            reason: e.to_string(),
        })?;
        let work = Work::new(settings).map_err(SettingsError::Other)?;
        // Measured here, when the setting is applied, never inside a request.
        normalise::calibration::note_width(settings.record_padding_cpu);
        let events = Events::default();
        let index = index::Index::new(settings, &events);
        let backend = Arc::new(Backend {
            store,
            events: events.clone(),
            admission: admission.clone(),
            tasks: TaskTracker::new(),
            unwritten: Arc::default(),
            journal: persistence::Journal::new(settings),
        });
        Ok(Self {
            inner: Arc::new(Inner {
                persistence: RwLock::new(Persistence::start(settings, Arc::clone(&backend))),
                admission,
                backend,
                work: RwLock::new(Arc::new(work)),
                events,
                index,
                cache: Arc::new(cache::Cache::new(settings)),
                answered_once: AnsweredOnce::default(),
                settings: RwLock::new(Arc::new(settings.clone())),
                next_id: AtomicU64::new(first_id),
                requests: TaskTracker::new(),
                abandon: CancellationToken::new(),
                requests_cut_short: AtomicU64::new(0),
                longest_ns: AtomicU64::new(0),
            }),
        })
    }

    /// Starts one request to store `element` (request-start fires now) and
    /// returns the future of its reply. Dropping that future (a client hanging
    /// up) does not stop the request: request-abandoned fires, and the rest of it
    /// runs on a task of its own (`run_to_end.rs`) to its request-done.
    /// `client_key` is the client's key for the request (0: none), which
    /// request-start carries.
    pub fn submit(
        &self,
        element: Element,
        client_key: u64,
    ) -> impl Future<Output = Result<Reply, RequestError>> + Send + 'static {
        self.submit_operation(Operation::Store(element), client_key)
    }

    /// Starts one request to read the element of `key` (`cache/`), as
    /// [`Self::submit`] does.
    pub fn submit_read(
        &self,
        key: u64,
        client_key: u64,
    ) -> impl Future<Output = Result<Reply, RequestError>> + Send + 'static {
        self.submit_operation(Operation::Read(key), client_key)
    }

    fn submit_operation(
        &self,
        operation: Operation,
        client_key: u64,
    ) -> impl Future<Output = Result<Reply, RequestError>> + Send + 'static {
        let (id, started) = self.start(operation.bytes(), client_key);
        let (this, gone) = (self.clone(), self.clone());
        let client = ClientWatch::default();
        let left = client.clone();
        run_to_end::RunToEnd::new(
            &self.inner.requests,
            async move {
                this.finish(id, started, operation, client_key, client)
                    .await
            },
            move || {
                left.leave();
                gone.inner.events.request_abandoned(id, started.elapsed());
            },
        )
    }

    /// The request path, awaited to its end. Call through [`Self::submit`] unless
    /// the caller itself cannot be cancelled (the unit tests).
    pub async fn handle(&self, element: Element) -> Result<Reply, RequestError> {
        let (id, started) = self.start(element.len(), 0);
        self.finish(
            id,
            started,
            Operation::Store(element),
            0,
            ClientWatch::default(),
        )
        .await
    }

    /// A new request: its id, and the instant it started (request-start).
    fn start(&self, bytes: u64, client_key: u64) -> (u64, Instant) {
        let s = &*self.inner;
        let started = Instant::now();
        let id = s.next_id.fetch_add(1, Ordering::Relaxed);
        s.events.request_start(id, bytes, client_key);
        (id, started)
    }

    /// Everything after request-start, to request-done.
    async fn finish(
        &self,
        id: u64,
        started: Instant,
        operation: Operation,
        client_key: u64,
        client: ClientWatch,
    ) -> Result<Reply, RequestError> {
        let s = &*self.inner;
        let settings = self.settings();
        let mut progress = Progress::default();
        // Borrowed where the request shares the server's token: a clone locks the
        // token's node, a lock both workers take on every request.
        let child;
        let stop = match settings.on_disconnect {
            OnDisconnect::Detach => &s.abandon,
            OnDisconnect::Cancel => {
                child = s.abandon.child_token();
                client.cancel_on_leaving(child.clone());
                &child
            }
        };
        // A retry answered from memory, or the element kept to remember it by.
        let (seen, kept) = match &operation {
            Operation::Store(element) if settings.answer_retries_once && client_key != 0 => {
                let remember_for = settings.remember_replies_for;
                match s.answered_once.look_up(client_key, element, remember_for) {
                    Seen::New => (Seen::New, Some(element.clone())),
                    seen => (seen, None),
                }
            }
            _ => (Seen::New, None),
        };
        let mut outcome = match (seen, operation) {
            (Seen::Before(_), _) => Ok(()),
            (Seen::OtherElement, _) => Err(RequestError::KeyReused(client_key)),
            (Seen::New, Operation::Store(element)) => {
                self.process(id, element, settings, client.clone(), stop, &mut progress)
                    .await
            }
            (Seen::New, Operation::Read(key)) => self.read(id, key, &settings, &client, stop).await,
        };
        // A wait ended by the client leaving, not by shutdown.
        if outcome == Err(RequestError::ShuttingDown)
            && stop.is_cancelled()
            && !s.abandon.is_cancelled()
        {
            outcome = Err(RequestError::Cancelled);
        }
        let cancelled = outcome == Err(RequestError::Cancelled);
        // Every request-start gets its request-done, whatever happened in between.
        let lifetime = started.elapsed();
        s.events
            .request_done(id, lifetime, progress.blocked, cancelled);
        // A read first: the shared line is written only by a new longest.
        let ns = nanos(lifetime);
        if ns > s.longest_ns.load(Ordering::Relaxed) {
            s.longest_ns.fetch_max(ns, Ordering::Relaxed);
        }
        if outcome == Err(RequestError::ShuttingDown) {
            s.requests_cut_short.fetch_add(1, Ordering::Relaxed);
        }
        outcome.map(|()| match seen {
            Seen::Before(reply) => reply,
            _ => {
                let reply = Reply {
                    id,
                    blocked: progress.blocked,
                    permit_wait_ns: nanos(progress.waited),
                    digest: progress.digest,
                };
                if let Some(element) = kept {
                    s.answered_once.remember(client_key, &element, reply);
                }
                reply
            }
        })
    }

    async fn process(
        &self,
        id: u64,
        element: Element,
        settings: Arc<Settings>,
        client: ClientWatch,
        stop: &CancellationToken,
        progress: &mut Progress,
    ) -> Result<(), RequestError> {
        let s = &*self.inner;
        network::traverse(&settings.network_delay, settings.timer_tick, stop).await?;
        progress.digest = normalise::run(id, &element, &settings, stop).await?;
        if settings.index {
            // On this async worker, as a handler that takes a std lock does.
            s.index.record(id, element.len());
        }
        self.work().run(id, &settings, &s.events, stop).await?;

        let admitted = s
            .admission
            .admit(id, &s.events, &settings, element.len(), stop)
            .await;
        progress.blocked = admitted.blocked;
        progress.waited = admitted.waited;
        if admitted.shed {
            return Err(match settings.when_full {
                WhenFull::Shed => RequestError::Shed,
                WhenFull::Wait => RequestError::WaitedTooLong(admitted.waited),
            });
        }
        let permit = admitted.permit.ok_or(RequestError::ShuttingDown)?;
        // Who holds the permit: the persist (the original) or this request, until
        // its element has been handed on.
        let (for_persist, for_hand_off) = match settings.permit_until {
            PermitUntil::PersistDone => (Some(permit), None),
            PermitUntil::HandOff => (None, Some(permit)),
        };

        let (notify, stored) = match settings.durable {
            true => {
                let (tx, rx) = oneshot::channel();
                (Some(tx), Some(rx))
            }
            false => (None, None),
        };
        let job = Job {
            id,
            element,
            permit: for_persist,
            settings: Arc::clone(&settings),
            notify,
            client,
            owed: None,
        };
        self.persistence().hand_off(job, stop).await?;
        drop(for_hand_off);
        if let Some(stored) = stored {
            tokio::select! {
                outcome = stored => match outcome {
                    Ok(Ok(())) => {}
                    Ok(Err(reason)) => return Err(RequestError::NotStored(reason)),
                    Err(_) => return Err(RequestError::ShuttingDown),
                },
                () = stop.cancelled() => return Err(RequestError::ShuttingDown),
            }
        }
        network::traverse(&settings.network_delay, settings.timer_tick, stop).await?;
        Ok(())
    }

    /// A read: the network in, the element from the cache or a fill
    /// (`cache/`), the network out. The fill is tied to the client, whatever
    /// `on_disconnect` says: a read whose client has gone ends at once.
    async fn read(
        &self,
        id: u64,
        key: u64,
        settings: &Settings,
        client: &ClientWatch,
        stop: &CancellationToken,
    ) -> Result<(), RequestError> {
        let s = &*self.inner;
        network::traverse(&settings.network_delay, settings.timer_tick, stop).await?;
        s.cache
            .read(&s.backend, (id, key), settings, client.leaving(), stop)
            .await
            .map_err(|e| match e {
                cache::ReadError::FillLimit => RequestError::FillLimit,
                cache::ReadError::ClientGone => RequestError::Cancelled,
                cache::ReadError::ShuttingDown => RequestError::ShuttingDown,
            })?;
        network::traverse(&settings.network_delay, settings.timer_tick, stop).await?;
        Ok(())
    }

    fn persistence(&self) -> Persistence {
        self.inner
            .persistence
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn work(&self) -> Arc<Work> {
        Arc::clone(&self.inner.work.read().unwrap_or_else(|p| p.into_inner()))
    }

    pub fn admission(&self) -> &Admission {
        &self.inner.admission
    }

    pub fn events(&self) -> &Events {
        &self.inner.events
    }

    pub fn counts(&self) -> Counts {
        self.inner.events.counts().snapshot()
    }

    /// The longest request ended and the longest compaction hold since the
    /// last call (the live view's, once a second); `None` where none ended.
    pub fn take_longest(&self) -> (Option<Duration>, Option<Duration>) {
        let some = |ns: u64| (ns > 0).then(|| Duration::from_nanos(ns));
        (
            some(self.inner.longest_ns.swap(0, Ordering::Relaxed)),
            some(self.inner.index.take_longest_hold()),
        )
    }

    /// The settings in force now.
    pub fn settings(&self) -> Arc<Settings> {
        Arc::clone(
            &self
                .inner
                .settings
                .read()
                .unwrap_or_else(|p| p.into_inner()),
        )
    }
}
