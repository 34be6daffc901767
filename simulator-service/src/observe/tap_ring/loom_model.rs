//! The tap's ring under the loom model checker: loom runs each model's threads
//! through every interleaving (and every value a relaxed load may read) up to a
//! bound on preemptions, and fails on the first that breaks an assertion.
//!
//! The ring is `ring.rs` itself, included here with loom's atomics in place of
//! std's, so the model checks the code the server runs. Two properties:
//!
//! - **no mixed event**: two senders a lap apart on one slot (a ring of one),
//!   and a reader at either lap; whatever a read returns as an event is one of
//!   the two events whole. The send without the claim (each sender marking the
//!   slot busy with a plain store, the ring's first design) fails this at
//!   every bound, none included: the older sender writes words over the newer
//!   event and publishes its own number, and the reader a lap behind takes the
//!   mix. So did the claim with a relaxed compare-and-swap: nothing ordered the
//!   older sender's words before the newer one's, and a reader that saw the
//!   newer publication read an older word.
//! - **no lost wake-up**: a reader arming its wait beside a sender either sees
//!   the event or the sender is told to wake it (without the fence in `arm`,
//!   it fails).
//!
//! 0.6 s in a debug build at a bound of 3 preemptions (the quick tier);
//! `LOOM_MAX_PREEMPTIONS=100 cargo test --lib loom_model`, every interleaving,
//! 33-80 s.

use loom::sync::Arc;
use loom::thread;

// What the model does not call (a reader's backlog, the tests' stalled claim).
#[allow(dead_code)]
mod under_loom {
    use loom::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};

    include!("ring.rs");
}
use under_loom::{Read, Ring, TapEvent};

fn event(probe: u8) -> TapEvent {
    let all = u64::from(probe);
    TapEvent {
        probe,
        at_ns: all,
        args: [all; 6],
    }
}

fn model(check: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if std::env::var_os("LOOM_MAX_PREEMPTIONS").is_none() {
        builder.preemption_bound = Some(3);
    }
    builder.check(check);
}

/// The read at `cursor`, if an event, is one of the sent ones, whole.
fn read_whole(ring: &Ring, cursor: u64) {
    let mut at = cursor;
    if let Read::Event(e) = ring.read(&mut at) {
        assert!(
            e == event(1) || e == event(2),
            "a mixed event read at {cursor} as whole: {e:?}"
        );
    }
}

#[test]
fn two_senders_a_lap_apart_never_mix_their_events() {
    model(|| {
        // One slot: positions 0 and 1 are a lap apart on it.
        let ring = Arc::new(Ring::new(1));
        let senders: Vec<_> = [1, 2]
            .map(|probe| {
                let ring = ring.clone();
                thread::spawn(move || {
                    let _ = ring.send(event(probe));
                })
            })
            .into_iter()
            .collect();
        read_whole(&ring, 0);
        read_whole(&ring, 1);
        for sender in senders {
            sender.join().unwrap();
        }
        read_whole(&ring, 0);
        read_whole(&ring, 1);
    });
}

#[test]
fn a_reader_arming_its_wait_sees_the_event_or_is_woken() {
    model(|| {
        let ring = Arc::new(Ring::new(2));
        let sender = {
            let ring = ring.clone();
            thread::spawn(move || ring.send(event(1)))
        };
        let readable = ring.arm(0);
        let told_to_wake = sender.join().unwrap();
        assert!(
            readable || told_to_wake,
            "the reader waits for an event already sent, and nobody wakes it"
        );
    });
}
