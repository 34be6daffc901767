//! One function per event of the model. Each fires its USDT probe, moves the
//! `/stats` counter and records the Prometheus metric, in one place, so the three
//! views of the server can never disagree about what happened. What each event is
//! (its probe's arguments, its counters and metrics) is declared once in
//! `simulator_api::events`; this file says when each counter moves and what each
//! argument carries.

// The usdt probe macros expand, here at their call sites, into the inline assembly
// that places each probe: the unsafe code of this file.
#![allow(unsafe_code)]

use std::cell::LazyCell;
use std::sync::Arc;
use std::time::Duration;

use super::lifetime;
use super::live_counts::LiveCounts;
use super::nanos;
#[cfg(feature = "probes")]
use super::probes::{isim, ProbeId};
#[cfg(feature = "probes")]
use super::tap;
use simulator_api::Counts;

/// Hands the event to the probe tap (`tap.rs`), which makes the arguments only
/// while a tap subscriber asked for it, and fires probe `$probe` of the `isim`
/// provider with the same arguments, evaluated only while a tracer has the
/// probe enabled. Built without the `probes` feature, the closure is dropped
/// uncalled: no probe site and no tap at all.
///
/// The tap first: a tracer's probe is a trap into the kernel, and its return
/// to the thread is a point where the kernel may switch to another thread.
/// With the tap's clock read after the probe, a thread that waited there for a
/// CPU stamped its event that much later than the tracer did: a twin's
/// shortest request read 8.39 ms against bpftrace's 7.10 in a CI run, on a
/// machine busy with a neighbour. Read before the trap, both times come before
/// that wait.
macro_rules! fire {
    // Raw tokens, not an `expr`: usdt's macro looks for a closure literal.
    ($probe:ident, $($args:tt)*) => {
        #[cfg(feature = "probes")]
        {
            tap::emit(ProbeId::$probe, $($args)*);
            isim::$probe!($($args)*);
        }
        #[cfg(not(feature = "probes"))]
        let _ = $($args)*;
    };
}

/// The event sink shared by request handlers and persistence tasks.
#[derive(Debug, Clone, Default)]
pub struct Events {
    counts: Arc<LiveCounts>,
}

impl Events {
    pub fn counts(&self) -> &LiveCounts {
        &self.counts
    }

    /// A figure of the counts (in flight, queued) for a probe's argument, read
    /// from a snapshot just after the event's own change, and only if a tracer or
    /// a tap subscriber asks for it: a snapshot locks every thread's part, which
    /// the event path does not pay while nobody traces. One read serves both, so
    /// the tracer and the tap see the same figure.
    fn figure(&self, of: fn(&Counts) -> u64) -> LazyCell<u64, impl FnOnce() -> u64 + '_> {
        LazyCell::new(move || of(&self.counts.snapshot()))
    }

    pub fn request_start(&self, id: u64, bytes: u64, client_key: u64) {
        fire!(request__start, || (id, bytes, client_key));
        self.counts.record(|c| c.requests_started += 1);
    }

    pub fn request_nonblock(&self, id: u64, available: usize) {
        fire!(request__nonblock, || (id, available as u64));
        self.counts.record(|c| c.requests_nonblocked += 1);
    }

    pub fn request_block(&self, id: u64, permits: usize) {
        fire!(request__block, || (id, permits as u64));
        self.counts.record(|c| c.requests_blocked += 1);
    }

    /// A blocked request refused (after its request-block): at once, or after
    /// waiting `waited` (`permit_wait_limit`).
    pub fn request_shed(&self, id: u64, permits: usize, waited: Duration) {
        fire!(request__shed, || (id, permits as u64, nanos(waited)));
        self.counts.record(|c| c.requests_shed += 1);
    }

    pub fn request_unblock(&self, id: u64, waited: Duration) {
        fire!(request__unblock, || (id, nanos(waited)));
        lifetime::observe(|h| h.permit_wait.record(waited));
    }

    /// The client went away `waited` after request-start, before its reply; the
    /// request runs on to its request-done.
    pub fn request_abandoned(&self, id: u64, waited: Duration) {
        fire!(request__abandoned, || (id, nanos(waited)));
        self.counts.record(|c| c.requests_abandoned += 1);
    }

    /// `cancelled`: ended early because its client had gone (`on_disconnect = cancel`).
    pub fn request_done(&self, id: u64, lifetime: Duration, blocked: bool, cancelled: bool) {
        fire!(request__done, || (
            id,
            nanos(lifetime),
            u64::from(blocked),
            u64::from(cancelled)
        ));
        self.counts.record_and_observe(
            |c| {
                c.requests_done += 1;
                c.requests_cancelled += u64::from(cancelled);
            },
            |h| h.request_lifetime.record(lifetime),
        );
    }

    pub fn persist_start(&self, id: u64, bytes: u64, permits_free: usize) {
        self.counts.record(|c| c.persists_started += 1);
        let in_flight = self.figure(Counts::persists_in_flight);
        fire!(persist__start, || (
            id,
            bytes,
            *in_flight,
            permits_free as u64
        ));
    }

    /// `timed_out` persists are failed ones too (`ok` is false); `wasted`: its
    /// client had gone before it ended.
    pub fn persist_done(
        &self,
        id: u64,
        ok: bool,
        timed_out: bool,
        wasted: bool,
        latency: Duration,
    ) {
        self.counts.record_and_observe(
            |c| {
                c.persists_done += 1;
                c.persists_failed += u64::from(!ok);
                c.persists_timed_out += u64::from(timed_out);
                c.persists_wasted += u64::from(wasted);
            },
            |h| h.persist_latency.record(latency),
        );
        let in_flight = self.figure(Counts::persists_in_flight);
        fire!(persist__done, || (
            id,
            u64::from(ok),
            nanos(latency),
            *in_flight,
            u64::from(wasted)
        ));
    }
}

impl Events {
    /// A persist got a second attempt `after` its start.
    pub fn persist_hedge(&self, id: u64, after: Duration) {
        fire!(persist__hedge, || (id, nanos(after)));
        self.counts.record(|c| c.persists_hedged += 1);
    }

    /// The element went into the persistence queue; returns nothing, the depth
    /// travels in the probe.
    pub fn queue_enqueue(&self, id: u64) {
        self.counts.record(|c| c.queue_enqueued += 1);
        let depth = self.figure(Counts::queued);
        fire!(queue__enqueue, || (id, *depth));
    }

    /// A worker took the element after it waited `waited` in the queue.
    pub fn queue_dequeue(&self, id: u64, waited: Duration) {
        self.counts
            .record_and_observe(|c| c.queue_dequeued += 1, |h| h.queue_wait.record(waited));
        let depth = self.figure(Counts::queued);
        fire!(queue__dequeue, || (id, nanos(waited), *depth));
    }

    /// The queue was full and the request is refused (the element never queued).
    pub fn queue_refuse(&self, id: u64) {
        self.counts.record(|c| c.queue_refused += 1);
        let depth = self.figure(Counts::queued);
        fire!(queue__refuse, || (id, *depth));
    }

    /// A dequeued element was dropped: it waited `waited`, over `limit` (zero:
    /// its client had gone and `on_disconnect = cancel`).
    pub fn queue_drop(&self, id: u64, waited: Duration, limit: Duration) {
        self.counts.record(|c| c.queue_dropped += 1);
        fire!(queue__drop, || (id, nanos(waited), nanos(limit)));
    }
}

impl Events {
    /// The element's work was asked for, to run `on` (0 async worker, 1 blocking
    /// pool, 2 rayon).
    pub fn work_start(&self, id: u64, bytes: u64, on: u64) {
        fire!(work__start, || (id, bytes, on));
        self.counts.record(|c| c.work_started += 1);
    }

    /// The work ran for `ran` after waiting `waited` for a slot or a thread.
    pub fn work_done(&self, id: u64, ran: Duration, waited: Duration, on: u64) {
        fire!(work__done, || (id, nanos(ran), nanos(waited), on));
        self.counts.record_and_observe(
            |c| c.work_done += 1,
            |h| {
                h.work_time.record(ran);
                h.work_wait.record(waited);
            },
        );
    }

    /// The runtime's canary woke `late` after its `interval` was up. Not a
    /// `/stats` counter: the runtime watch keeps the canary's own figures.
    pub fn cache_hit(&self, id: u64, key: u64) {
        fire!(cache__hit, || (id, key));
        self.counts.record(|c| c.cache_hits += 1);
    }

    pub fn cache_stale_hit(&self, id: u64, key: u64) {
        fire!(cache__stale__hit, || (id, key));
        self.counts.record(|c| c.cache_stale_hits += 1);
    }

    pub fn cache_miss(&self, id: u64, key: u64) {
        fire!(cache__miss, || (id, key));
        self.counts.record(|c| c.cache_misses += 1);
    }

    pub fn cache_fill_start(&self, id: u64, key: u64) {
        self.counts.record(|c| c.cache_fills_started += 1);
        let in_flight = self.figure(Counts::cache_fills_in_flight);
        fire!(cache__fill__start, || (id, key, *in_flight));
    }

    pub fn cache_fill_done(&self, id: u64, key: u64, took: Duration) {
        self.counts.record_and_observe(
            |c| {
                c.cache_fills_ended += 1;
                c.cache_fills_done += 1;
            },
            |h| h.cache_fill_latency.record(took),
        );
        fire!(cache__fill__done, || (id, key, nanos(took)));
    }

    /// `read`: the store had read the element (its work was wasted), not only
    /// queued for it.
    pub fn cache_fill_abandoned(&self, id: u64, key: u64, read: bool, after: Duration) {
        self.counts.record(|c| {
            c.cache_fills_ended += 1;
            c.cache_fills_abandoned += 1;
            c.cache_fills_wasted += u64::from(read);
        });
        fire!(cache__fill__abandoned, || (
            id,
            key,
            u64::from(read),
            nanos(after)
        ));
    }

    pub fn cache_fill_refuse(&self, id: u64, key: u64) {
        self.counts.record(|c| c.cache_fills_refused += 1);
        let in_flight = self.figure(Counts::cache_fills_in_flight);
        fire!(cache__fill__refuse, || (id, key, *in_flight));
    }

    pub fn canary_tick(seq: u64, late: Duration, interval: Duration) {
        fire!(canary__tick, || (seq, nanos(late), nanos(interval)));
        lifetime::observe(|h| h.timer_lateness.record(late));
    }
}

impl Events {
    /// Incident `seq` began and lasts `lasts`.
    pub fn incident_start(&self, seq: u64, lasts: Duration) {
        fire!(incident__start, || (seq, nanos(lasts)));
        self.counts.record(|c| c.incidents_started += 1);
    }

    /// Incident `seq` is in force, for `elapsed` so far (every 100 ms while it
    /// is: `serving/incidents.rs`). Never inlined: inlined into the incident's
    /// spawned task, the probe site was copied into a task harness the linker
    /// then dropped, and that copy's note (address 0x45 in a release build)
    /// made bpftrace warn "invalid address" on every attach.
    #[inline(never)]
    pub fn incident_in_force(&self, seq: u64, elapsed: Duration) {
        fire!(incident__in__force, || (seq, nanos(elapsed)));
    }

    /// Incident `seq` ended after `lasted`.
    pub fn incident_end(&self, seq: u64, lasted: Duration) {
        fire!(incident__end, || (seq, nanos(lasted)));
        self.counts.record(|c| c.incidents_ended += 1);
    }
}

impl Events {
    /// Request `id` found the index's lock held, with `entries` in the index.
    pub fn lock_wait_start(&self, id: u64, entries: u64) {
        fire!(lock__wait__start, || (id, entries));
        self.counts.record(|c| c.lock_waits_started += 1);
    }

    /// Request `id` got the index's lock after waiting `waited`.
    pub fn lock_wait_done(&self, id: u64, waited: Duration) {
        fire!(lock__wait__done, || (id, nanos(waited)));
        self.counts
            .record_and_observe(|c| c.lock_waits_done += 1, |h| h.lock_wait.record(waited));
    }

    /// Compaction `seq` began on an index of `entries`.
    pub fn compaction_start(&self, seq: u64, entries: u64) {
        fire!(compaction__start, || (seq, entries));
        self.counts.record(|c| c.compactions_started += 1);
    }

    /// Compaction `seq` ended after `took`, `entries` left and `dropped` gone;
    /// `held`: the longest it held the index's lock at once.
    pub fn compaction_done(
        &self,
        seq: u64,
        entries: u64,
        dropped: u64,
        held: Duration,
        took: Duration,
    ) {
        fire!(compaction__done, || (
            seq,
            entries,
            dropped,
            nanos(held),
            nanos(took)
        ));
        self.counts.record_and_observe(
            |c| c.compactions_done += 1,
            |h| h.compaction_hold.record(held),
        );
    }
}

/// Which of the server's two listeners an `accept-error` is of (its third
/// argument).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListenerKind {
    Data = 0,
    Operator = 1,
}

impl Events {
    /// The `seq`th failed accept(2) since the server started, on `listener`,
    /// with `errno` (0 where the error carries none). Never inlined, as
    /// `incident_in_force`: it runs from the accept loop's task.
    #[inline(never)]
    pub fn accept_error(&self, seq: u64, errno: i32, listener: ListenerKind) {
        fire!(accept__error, || (
            seq,
            u64::try_from(errno).unwrap_or(0),
            listener as u64
        ));
        self.counts.record(|c| c.accept_errors += 1);
    }
}
