//! Work: the CPU the processor spends on an element after it arrives and before it
//! is admitted, and which threads spend it.
//!
//! **Contract.** [`Work::run`] runs once per request, on the request's own task,
//! and returns when the work is finished (or shutdown cut its wait short). With
//! `work = none` (the original) it does nothing and fires nothing. With
//! `work = zstd` it compresses WAL-like text (`corpus.rs`), as seed 001 archives
//! WAL segments, between `work-start` and `work-done`: as many bytes as cost
//! `work_cpu` of CPU on this machine (`calibration.rs`), or exactly `work_bytes`
//! when `work_cpu` is 0; and where `work_on` says:
//!
//! - `async-worker`: right here, on the runtime's async worker thread. For the
//!   milliseconds it takes, that worker polls nothing else: timers, other requests,
//!   `/healthz`. The runtime has one worker per core, so a few of these at once
//!   stall the whole server: seed 001's bug, the blocking-runtime scenario.
//! - `blocking-pool`: `tokio::task::spawn_blocking`, behind a semaphore of
//!   `work_limit` (0: none, so under overload tokio starts up to 512 threads that
//!   share the cores with the async workers and the stall comes back as CPU
//!   contention). The request waits asynchronously, which costs the runtime nothing.
//! - `rayon`: a rayon pool of `work_limit` threads (seed 001's fix); the request
//!   waits on a oneshot for the result. With `work_split`, the work is cut into
//!   that many pieces compressed in parallel on the pool (a `par_iter` over the
//!   element): the same CPU, spent on more threads at once.
//!
//! `work_limit` is a number, or sized from the machine: `host-cpus` (every CPU
//! online, as a service that counts `/proc/cpuinfo` does, blind to its quota:
//! a quota's classic bug) or `quota` (the server's cgroup quota in whole cores,
//! rounded down, at least 1). With `work_budget`, a work first waits its turn under the quota
//! (`budget.rs`); that wait counts in work-done's `waited`.
//!
//! The limit is a tokio `Semaphore` rather than a tower layer: the work is one step
//! inside a request, not a service of its own, and the permit must cover exactly
//! the compression. A live change of `work`, `work_on` or `work_limit` builds a new
//! `Work` for new requests ([`Work::matches`]); requests under way keep theirs.

mod budget;
pub mod calibration;
mod corpus;

use std::sync::Arc;
use std::time::{Duration, Instant};

use simulator_api::settings::{PoolSize, WorkKind, WorkOn};
use simulator_api::Settings;
use tokio::sync::{oneshot, Semaphore};
use tokio_util::sync::CancellationToken;

use super::network::CutShort;
use crate::observe::machine::{self, WorkFigures};
use crate::observe::Events;
use budget::Budget;

/// ruzstd's one compressing level, about zstd's level 1. ruzstd is zstd in pure
/// Rust: the C library (zstd-sys) needed the macOS SDK's headers to build for a
/// Mac, which a Linux machine cannot cross-build from. Its bytes cost more CPU
/// than libzstd's level 3 (a fifth to a ninth of the rate here); the work is
/// stated in CPU time and calibrated, so only the bytes of a work change.
const LEVEL: ruzstd::encoding::CompressionLevel = ruzstd::encoding::CompressionLevel::Fastest;
/// The most text compressed in one call: a larger work compresses the text again
/// in pieces of this size, so a long `work_cpu` on a fast machine needs no larger
/// text (the text is kept in memory for the life of the process). The size the
/// calibration measures (`calibration.rs`), so a work of any length is pieces
/// of the measured kind: ruzstd's cost a byte grows with the input (a byte of a
/// 4 MiB call cost 1.3x one of a 512 KiB call here), which a calibration at one
/// size and works at another would miss (exercise 8's fix throttled 6 ms a
/// second with 4 MiB works against a 1 MiB calibration, 0.3 with libzstd).
pub(crate) const MAX_PIECE: usize = 1 << 20;

/// The work configured now.
#[derive(Debug, Clone)]
pub struct Work {
    kind: WorkKind,
    place: Place,
    /// The setting, as asked (`threads` is what it came to here).
    limit: PoolSize,
    split: PoolSize,
    budget_share: f64,
    budget: Option<Arc<Budget>>,
}

/// Where the work runs; one variant per `work_on`.
#[derive(Debug, Clone)]
enum Place {
    AsyncWorker,
    /// `None`: no limit.
    BlockingPool(Option<Arc<Semaphore>>),
    /// The pool, and the pieces a work is cut into on it.
    Rayon(Arc<rayon::ThreadPool>, usize),
}

/// How one work went, for work-done.
struct WorkTimes {
    waited: Duration,
    ran: Duration,
}

impl Work {
    /// The work `settings` ask for, its pool built and its text made.
    pub fn new(settings: &Settings) -> Result<Self, String> {
        let limit = machine::pool_size(settings.work_limit);
        let place = match settings.work_on {
            WorkOn::AsyncWorker => Place::AsyncWorker,
            WorkOn::BlockingPool => {
                Place::BlockingPool((limit > 0).then(|| Arc::new(Semaphore::new(limit))))
            }
            WorkOn::Rayon => Place::Rayon(
                Arc::new(
                    rayon::ThreadPoolBuilder::new()
                        .num_threads(limit)
                        .thread_name(|i| format!("isim-rayon-{i}"))
                        .build()
                        .map_err(|e| format!("could not start the rayon pool: {e}"))?,
                ),
                machine::pool_size(settings.work_split).max(1),
            ),
        };
        if settings.work == WorkKind::Zstd {
            // Measured here, when the setting is applied, never inside a request.
            corpus::corpus(bytes_per_work(settings).min(MAX_PIECE as u64) as usize);
        }
        let own_limit =
            crate::platform::cgroup::CpuGroup::of_this_process().and_then(|g| g.cpu_max());
        Ok(Self {
            kind: settings.work,
            place,
            limit: settings.work_limit,
            split: settings.work_split,
            budget_share: settings.work_budget,
            budget: Budget::new(settings.work_budget, own_limit).map(Arc::new),
        })
    }

    /// Whether this is the work `settings` ask for (`work_bytes` is read per
    /// request, so it does not count).
    pub fn matches(&self, settings: &Settings) -> bool {
        self.kind == settings.work
            && self.on() == settings.work_on
            && self.limit == settings.work_limit
            && self.split == settings.work_split
            && self.budget_share == settings.work_budget
            // A `work_cpu` set live needs the machine measured before a request does.
            && (settings.work_cpu.is_zero() || calibration::measured().is_some())
    }

    fn on(&self) -> WorkOn {
        match self.place {
            Place::AsyncWorker => WorkOn::AsyncWorker,
            Place::BlockingPool(_) => WorkOn::BlockingPool,
            Place::Rayon(..) => WorkOn::Rayon,
        }
    }

    /// The probes' code for where the work runs: 0 async worker, 1 blocking pool,
    /// 2 rayon (the scripts print it as a name).
    fn code(&self) -> u64 {
        match self.place {
            Place::AsyncWorker => 0,
            Place::BlockingPool(_) => 1,
            Place::Rayon(..) => 2,
        }
    }

    /// Does the work for request `id`. Shutdown (`abandon`) ends a wait for a
    /// slot, never a compression under way; a work cut short still gets its
    /// work-done (run 0), so started = done + in flight holds.
    pub async fn run(
        &self,
        id: u64,
        settings: &Settings,
        events: &Events,
        abandon: &CancellationToken,
    ) -> Result<(), CutShort> {
        if self.kind == WorkKind::None {
            return Ok(());
        }
        let bytes = bytes_per_work(settings) as usize;
        events.work_start(id, bytes as u64, self.code());
        let asked = Instant::now();
        if let Some(budget) = &self.budget {
            if budget
                .wait_turn(cpu_cost(settings, bytes), abandon)
                .await
                .is_err()
            {
                return finish(events, id, asked, self.code());
            }
        }
        let outcome = match &self.place {
            Place::AsyncWorker => Ok(WorkTimes {
                waited: Duration::ZERO,
                ran: timed(|| compress(bytes)),
            }),
            Place::BlockingPool(limit) => {
                let permit = match limit {
                    None => None,
                    Some(limit) => tokio::select! {
                        permit = Arc::clone(limit).acquire_owned() => permit.ok(),
                        () = abandon.cancelled() => return finish(events, id, asked, self.code()),
                    },
                };
                tokio::task::spawn_blocking(move || {
                    let waited = asked.elapsed();
                    let ran = timed(|| compress(bytes));
                    drop(permit);
                    WorkTimes { waited, ran }
                })
                .await
                .map_err(|_| CutShort)
            }
            Place::Rayon(pool, pieces) => {
                let (done, result) = oneshot::channel();
                let pieces = *pieces;
                pool.spawn(move || {
                    let waited = asked.elapsed();
                    let ran = timed(|| compress_in_pieces(bytes, pieces));
                    let _ = done.send(WorkTimes { waited, ran });
                });
                result.await.map_err(|_| CutShort)
            }
        };
        match outcome {
            Ok(WorkTimes { waited, ran }) => {
                events.work_done(id, ran, waited, self.code());
                Ok(())
            }
            Err(CutShort) => finish(events, id, asked, self.code()),
        }
    }
}

/// The work's cost here, for `/stats.machine`: zstd's measured rate, and the
/// bytes of one work where the scenario has zstd work. Asking for the bytes of a
/// `work_cpu` would measure the machine in a /stats request: only once it has
/// been measured.
pub fn figures(settings: &Settings) -> WorkFigures {
    let measured = calibration::measured();
    let zstd = settings.work == WorkKind::Zstd;
    WorkFigures {
        zstd_bytes_per_cpu_s: measured.map(|c| c.bytes_per_cpu_s.round()),
        work_bytes: (zstd && (settings.work_cpu.is_zero() || measured.is_some()))
            .then(|| bytes_per_work(settings)),
    }
}

/// Bytes one work compresses under `settings`: what `work_cpu` costs here, or
/// `work_bytes` when it is 0. The first call with a `work_cpu` measures the machine.
pub fn bytes_per_work(settings: &Settings) -> u64 {
    if settings.work_cpu.is_zero() {
        settings.work_bytes
    } else {
        calibration::calibration().bytes_for(settings.work_cpu)
    }
}

/// The CPU one work of `bytes` costs: `work_cpu`, or the bytes at the rate
/// measured here (zstd's rate is measured before any `work_bytes` work runs
/// under a budget only if `work_cpu` asked for it; unmeasured, 1 ms a MiB).
fn cpu_cost(settings: &Settings, bytes: usize) -> Duration {
    if !settings.work_cpu.is_zero() {
        return settings.work_cpu;
    }
    match calibration::measured() {
        Some(c) => Duration::from_secs_f64(bytes as f64 / c.bytes_per_cpu_s),
        None => Duration::from_millis((bytes >> 20).max(1) as u64),
    }
}

/// A work that never ran: its work-done, with run 0, and the request cut short.
fn finish(events: &Events, id: u64, asked: Instant, code: u64) -> Result<(), CutShort> {
    events.work_done(id, Duration::ZERO, asked.elapsed(), code);
    Err(CutShort)
}

fn timed(f: impl FnOnce() -> usize) -> Duration {
    let start = Instant::now();
    std::hint::black_box(f());
    start.elapsed()
}

/// Compresses `bytes` cut into `pieces`, in parallel on the rayon pool this runs
/// on (a scope's tasks go to the current pool); returns the compressed size.
fn compress_in_pieces(bytes: usize, pieces: usize) -> usize {
    if pieces <= 1 {
        return compress(bytes);
    }
    let each = bytes.div_ceil(pieces);
    let out = std::sync::atomic::AtomicUsize::new(0);
    rayon::scope(|s| {
        for _ in 0..pieces {
            s.spawn(|_| {
                out.fetch_add(compress(each), std::sync::atomic::Ordering::Relaxed);
            });
        }
    });
    out.into_inner()
}

/// Makes the shared text long enough for [`compress`] of `bytes`, now rather
/// than in the first compression (a compaction's snapshot: `index/`).
pub(crate) fn make_text_for(bytes: usize) {
    corpus::corpus(bytes.min(MAX_PIECE));
}

/// Compresses `bytes` of the shared text, in pieces of at most [`MAX_PIECE`];
/// returns the compressed size.
pub(crate) fn compress(bytes: usize) -> usize {
    let text = corpus::corpus(bytes.min(MAX_PIECE));
    let mut left = bytes;
    let mut out = 0;
    while left > 0 {
        let piece = left.min(MAX_PIECE);
        out += zstd_len(&text[..piece]);
        left -= piece;
    }
    out
}

/// The size of `bytes` compressed with zstd: a slice of memory into a Vec, which
/// cannot fail.
pub(crate) fn zstd_len(bytes: &[u8]) -> usize {
    ruzstd::encoding::compress_to_vec(bytes, LEVEL).len()
}
