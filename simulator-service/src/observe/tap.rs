//! The probe tap: every isim event, streamed in process to whoever asked for it,
//! so an attendee without root (or on an OS whose tracer cannot attach) gets the
//! same events a USDT probe gives a tracer (`GET /admin/tap`, `serving/tap.rs`).
//!
//! Off until somebody subscribes, and then on only for the events some subscriber
//! asked for: `events.rs` calls [`emit`] beside each probe, which reads one atomic
//! word of wanted events and returns; the argument closure runs, the clock is read
//! and the event is sent only when its bit is set. Built without the `probes`
//! feature there is no tap either (`emit` is not called), so the probe-cost
//! benchmark's baseline has neither.
//!
//! Bounded: every subscriber reads one ring of [`TAP_BACKLOG`] events
//! (`tap_ring/`, allocated at the first subscription and shared by all, each
//! subscriber at a cursor of its own), so a subscriber that stops reading costs
//! no more memory however long it waits; when it falls a ring behind it loses the
//! oldest events and is told how many. Sending never waits for a reader and takes
//! no lock: a claim of a position and one cache line written. At most
//! [`MAX_SUBSCRIBERS`] subscribe at once.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use quanta::Clock;

use super::probes::ProbeId;
use super::tap_ring::EventRing;
pub use super::tap_ring::{Read, TapEvent};

/// Events the ring holds: at 100,000 events a second (a flat-out load with every
/// event asked for), 0.65 s of a reader's stall before it loses any. 4 MiB (a
/// slot is one 64-byte cache line).
pub const TAP_BACKLOG: usize = 1 << 16;

/// Subscribers at once: a room's attendees each trace their own server, and one
/// attendee runs a few scripts at a time.
pub const MAX_SUBSCRIBERS: usize = 16;

/// The process's one tap, as the process has one set of probes.
static TAP: Tap = Tap::new();

/// The probe number of an end mark: not an event, the line after which
/// subscription `args[0]`'s stream ends ([`Tap::end`]).
pub const END_MARK: u8 = u8::MAX;

/// A subscription: the ring's events from its start, read at its own cursor
/// ([`Subscription::read`]), until it is dropped.
#[derive(Debug)]
pub struct Subscription {
    pub id: u64,
    tap: &'static Tap,
    ring: &'static Ring,
    cursor: u64,
}

impl Subscription {
    /// The next event in the ring (every subscriber's: the reader keeps the ones
    /// it asked for), or how many it lost, or nothing yet.
    pub fn read(&mut self) -> Read {
        self.ring.events.read(&mut self.cursor)
    }

    /// Returns once [`read`](Self::read) has something.
    pub async fn wait(&self) {
        self.ring.events.wait(self.cursor).await
    }

    /// Events sent that this subscriber has still to read, about.
    pub fn behind(&self) -> u64 {
        self.ring.events.behind(self.cursor)
    }
}

/// Why a subscription was refused.
#[derive(Debug, thiserror::Error)]
pub enum SubscribeError {
    #[error("{MAX_SUBSCRIBERS} tap subscribers already; stop one first")]
    Full,
}

#[derive(Debug)]
pub struct Tap {
    /// Bit `i` set: some subscriber wants `EVENTS[i]`. The union of `subscribers`.
    wanted: AtomicU64,
    ring: OnceLock<Ring>,
    subscribers: Mutex<Vec<(u64, u64)>>,
    next_id: AtomicU64,
}

#[derive(Debug)]
struct Ring {
    clock: Clock,
    /// The clock's raw reading when the ring began.
    began: u64,
    events: EventRing,
}

impl Ring {
    fn new() -> Self {
        let clock = Clock::new();
        Ring {
            began: clock.raw(),
            clock,
            events: EventRing::new(TAP_BACKLOG),
        }
    }

    /// Ns since the ring began. quanta's clock, not std's `Instant`: it reads the
    /// CPU's invariant TSC where there is one (the OS's monotonic clock where
    /// not) without a call into the vDSO. Under one subscriber on every event the
    /// std clock's reads were half of all the send's cost; docs/performance.md
    /// ("The probe tap") has the profile, the head-to-head runs and their
    /// commands. Its calibration runs once, at the first subscription: 200 ms at
    /// most (quanta's bound).
    fn now_ns(&self) -> u64 {
        self.clock.delta_as_nanos(self.began, self.clock.raw())
    }
}

// Every event has a bit of the wanted word.
const _: () = assert!(simulator_api::events::EVENTS.len() <= 64);

/// Sends `args()` as event `probe` when a subscriber wants it; otherwise one load
/// and a branch.
#[inline(always)]
pub fn emit<A: ProbeArgs>(probe: ProbeId, args: impl FnOnce() -> A) {
    TAP.emit(probe, args)
}

/// [`Tap::end`] on the process's tap.
pub fn end(id: u64) -> bool {
    TAP.end(id)
}

/// Subscribes to the events whose bits `wanted` sets, on the process's tap.
pub fn subscribe(wanted: u64) -> Result<Subscription, SubscribeError> {
    TAP.subscribe(wanted)
}

impl Tap {
    pub const fn new() -> Self {
        Tap {
            wanted: AtomicU64::new(0),
            ring: OnceLock::new(),
            subscribers: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(0),
        }
    }

    // Always inlined, and everything past the test out of line: what a request
    // pays with nobody subscribed is one load, a test and a branch not taken.
    #[inline(always)]
    pub fn emit<A: ProbeArgs>(&self, probe: ProbeId, args: impl FnOnce() -> A) {
        if self.wanted.load(Ordering::Relaxed) & (1u64 << probe as u32) != 0 {
            self.send(probe as u8, args);
        }
    }

    #[cold]
    #[inline(never)]
    fn send<A: ProbeArgs>(&self, probe: u8, args: impl FnOnce() -> A) {
        let args = args().into_array();
        let Some(ring) = self.ring.get() else { return };
        let at_ns = ring.now_ns();
        ring.events.send(TapEvent { probe, at_ns, args });
    }

    pub fn subscribe(&'static self, wanted: u64) -> Result<Subscription, SubscribeError> {
        let mut subscribers = self.lock();
        if subscribers.len() >= MAX_SUBSCRIBERS {
            return Err(SubscribeError::Full);
        }
        let ring = self.ring.get_or_init(Ring::new);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        // The cursor taken before the bits go up, so no event it asked for is sent unseen.
        let cursor = ring.events.tail();
        subscribers.push((id, wanted));
        self.wanted.store(union(&subscribers), Ordering::Relaxed);
        Ok(Subscription {
            id,
            tap: self,
            ring,
            cursor,
        })
    }

    /// Puts an end mark for subscription `id` in the ring, after every event sent
    /// so far: its stream delivers those and ends, so a reader that stops counts
    /// everything that fired before it asked (nothing still in transit is lost).
    /// False when there is no such subscription.
    pub fn end(&self, id: u64) -> bool {
        let subscribers = self.lock();
        if !subscribers.iter().any(|(other, _)| *other == id) {
            return false;
        }
        if let Some(ring) = self.ring.get() {
            let at_ns = ring.now_ns();
            ring.events.send(TapEvent {
                probe: END_MARK,
                at_ns,
                args: [id, 0, 0, 0, 0, 0],
            });
        }
        true
    }

    fn unsubscribe(&self, id: u64) {
        let mut subscribers = self.lock();
        subscribers.retain(|(other, _)| *other != id);
        self.wanted.store(union(&subscribers), Ordering::Relaxed);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, u64)>> {
        // A panic while holding it cannot leave the list half-changed.
        self.subscribers.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Subscribers now.
    pub fn subscribers(&self) -> usize {
        self.lock().len()
    }
}

impl Default for Tap {
    fn default() -> Self {
        Self::new()
    }
}

fn union(subscribers: &[(u64, u64)]) -> u64 {
    subscribers.iter().fold(0, |all, (_, wanted)| all | wanted)
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.tap.unsubscribe(self.id);
    }
}

/// A probe's argument tuple as the tap's six words.
pub trait ProbeArgs {
    fn into_array(self) -> [u64; 6];
}

impl ProbeArgs for (u64, u64) {
    fn into_array(self) -> [u64; 6] {
        [self.0, self.1, 0, 0, 0, 0]
    }
}

impl ProbeArgs for (u64, u64, u64) {
    fn into_array(self) -> [u64; 6] {
        [self.0, self.1, self.2, 0, 0, 0]
    }
}

impl ProbeArgs for (u64, u64, u64, u64) {
    fn into_array(self) -> [u64; 6] {
        [self.0, self.1, self.2, self.3, 0, 0]
    }
}

impl ProbeArgs for (u64, u64, u64, u64, u64) {
    fn into_array(self) -> [u64; 6] {
        [self.0, self.1, self.2, self.3, self.4, 0]
    }
}

/// Bit `i` set for every event named; the unknown names back as the error.
pub fn wanted_of<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<u64, Vec<&'a str>> {
    let mut wanted = 0;
    let mut unknown = Vec::new();
    for name in names {
        match simulator_api::events::EVENTS
            .iter()
            .position(|e| e.probe == name)
        {
            Some(i) => wanted |= 1 << i,
            None => unknown.push(name),
        }
    }
    if unknown.is_empty() {
        Ok(wanted)
    } else {
        Err(unknown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn next_event(sub: &mut Subscription) -> TapEvent {
        match sub.read() {
            Read::Event(event) => event,
            other => panic!("not an event: {other:?}"),
        }
    }

    fn tap() -> &'static Tap {
        Box::leak(Box::new(Tap::new()))
    }

    fn bit(probe: ProbeId) -> u64 {
        1 << probe as u32
    }

    #[test]
    fn nothing_is_made_until_someone_asks_and_only_what_was_asked() {
        let tap = tap();
        let made = std::cell::Cell::new(0);
        tap.emit(ProbeId::request__start, || {
            made.set(made.get() + 1);
            (1u64, 2u64)
        });
        assert_eq!(made.get(), 0, "no subscriber: the arguments are never made");
        assert!(tap.ring.get().is_none(), "and no ring is allocated");

        let mut sub = tap.subscribe(bit(ProbeId::request__done)).unwrap();
        tap.emit(ProbeId::request__start, || {
            made.set(made.get() + 1);
            (1u64, 2u64)
        });
        assert_eq!(made.get(), 0, "an event nobody asked for is not made");
        tap.emit(ProbeId::request__done, || (7u64, 9u64, 0u64, 0u64));
        let event = next_event(&mut sub);
        assert_eq!(event.probe, ProbeId::request__done as u8);
        assert_eq!(event.args, [7, 9, 0, 0, 0, 0]);

        drop(sub);
        assert_eq!(tap.wanted.load(Ordering::Relaxed), 0, "gone: off again");
        assert_eq!(tap.subscribers(), 0);
    }

    #[test]
    fn a_reader_that_falls_behind_loses_the_oldest_and_is_told_how_many() {
        let tap = tap();
        let mut sub = tap.subscribe(bit(ProbeId::canary__tick)).unwrap();
        let sent = TAP_BACKLOG as u64 + 100;
        for seq in 0..sent {
            tap.emit(ProbeId::canary__tick, || (seq, 0u64, 0u64));
        }
        assert_eq!(sub.read(), Read::Lost(100));
        let next = next_event(&mut sub);
        assert_eq!(
            next.args[0], 100,
            "the oldest went; the rest are kept in order"
        );
        assert_eq!(sub.behind(), TAP_BACKLOG as u64 - 1);
    }

    #[test]
    fn an_end_mark_follows_every_event_sent_before_it() {
        let tap = tap();
        let mut sub = tap.subscribe(bit(ProbeId::request__start)).unwrap();
        tap.emit(ProbeId::request__start, || (1u64, 1u64));
        assert!(tap.end(sub.id));
        assert!(!tap.end(sub.id + 1), "no such subscription");
        assert_eq!(next_event(&mut sub).args[0], 1);
        let mark = next_event(&mut sub);
        assert_eq!((mark.probe, mark.args[0]), (END_MARK, sub.id));
    }

    #[test]
    fn subscribers_are_limited() {
        let tap = tap();
        let held: Vec<_> = (0..MAX_SUBSCRIBERS)
            .map(|_| tap.subscribe(1).unwrap())
            .collect();
        assert!(matches!(tap.subscribe(1), Err(SubscribeError::Full)));
        drop(held);
        assert!(tap.subscribe(1).is_ok());
    }

    #[test]
    fn names_become_bits_and_unknown_names_are_told() {
        assert_eq!(
            wanted_of(["request-start", "canary-tick"]).unwrap(),
            bit(ProbeId::request__start) | bit(ProbeId::canary__tick)
        );
        assert_eq!(wanted_of(["request-start", "nope"]), Err(vec!["nope"]));
    }
}
