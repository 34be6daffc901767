//! Where a fired event waits until a subscriber's stream collects it: a shelf of
//! its own for every thread that fires events, so the request path never takes a
//! lock another core is taking (the first tap shared one ring's lock between the
//! runtime's workers: 400 ns an event, 9 % of req/s flat out).
//!
//! A thread puts an event on its shelf under the shelf's own mutex, which only
//! the collector ever contends for (once a millisecond), and reads the clock
//! inside it. The collector, every subscriber's stream taking turns
//! ([`Shelves::collect`]), reads the clock (the watermark), then empties every
//! shelf; any event stamped at or before the watermark is on a shelf by then
//! (its thread held that shelf's lock when it read the clock, before the
//! collector asked for it), so the events up to the watermark go into the ring
//! in time order and the later ones wait for the next turn. Streams see one
//! order, the order the events fired, as a tracer's ring buffer gives them.
//!
//! Written by hand because the crates that merge per-thread queues
//! (crossbeam's, rtrb) give no order between threads, which the scripts need
//! (a request's done after its start, when they ran on different workers).

use std::cell::RefCell;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::broadcast;

use super::{TapEvent, END_MARK, LOST_MARK};

/// Events a thread's shelf holds between two collections (a millisecond apart
/// while some stream is read): 4 million events a second a thread, ten times a
/// core's flat out. Beyond it (nobody collecting: every reader stalled) the
/// thread counts what it drops and the next collection tells the readers. 512
/// KiB a thread that fires events (the runtime's workers).
pub const SHELF_EVENTS: usize = 8192;

/// Every thread's shelf, and the collector's state.
#[derive(Debug, Default)]
pub(super) struct Shelves {
    all: Mutex<Vec<Arc<Shelf>>>,
    collector: Mutex<Collector>,
}

#[derive(Debug, Default)]
struct Shelf(Mutex<Stock>);

#[derive(Debug)]
struct Stock {
    events: Vec<TapEvent>,
    /// Events dropped on a full shelf since the last collection, by probe.
    lost: [u64; 64],
    lost_any: bool,
}

impl Default for Stock {
    fn default() -> Self {
        Stock {
            events: Vec::new(),
            lost: [0; 64],
            lost_any: false,
        }
    }
}

#[derive(Debug, Default)]
struct Collector {
    /// Collected but stamped after the last watermark, and end marks asked for:
    /// next turn's.
    held: Vec<TapEvent>,
}

thread_local! {
    /// This thread's shelf on each tap it fired on (one in a server; tests make more).
    static MINE: RefCell<Vec<(usize, Arc<Shelf>)>> = const { RefCell::new(Vec::new()) };
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section here leaves its data whole, panic or not.
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shelves {
    /// Puts an event on this thread's shelf, stamped by `clock` under its lock.
    pub(super) fn put(&self, probe: u8, args: [u64; 6], clock: impl Fn() -> u64) {
        let key = self as *const Shelves as usize;
        // A thread being torn down has no thread-locals left: its last events go.
        let _ = MINE.try_with(|mine| {
            let mut mine = mine.borrow_mut();
            let at = match mine.iter().position(|(k, _)| *k == key) {
                Some(at) => at,
                None => {
                    let shelf = Arc::new(Shelf::default());
                    lock(&self.all).push(Arc::clone(&shelf));
                    mine.push((key, shelf));
                    mine.len() - 1
                }
            };
            let mut stock = lock(&mine[at].1 .0);
            let at_ns = clock();
            if stock.events.len() < SHELF_EVENTS {
                stock.events.push(TapEvent { probe, at_ns, args });
            } else {
                stock.lost[usize::from(probe) % 64] += 1;
                stock.lost_any = true;
            }
        });
    }

    /// Moves every event stamped up to now into `ring`, in time order, and the
    /// end marks due; a no-op while another stream is collecting.
    pub(super) fn collect(&self, ring: &broadcast::Sender<TapEvent>, clock: impl Fn() -> u64) {
        let Ok(mut collector) = self.collector.try_lock() else {
            return;
        };
        let watermark = clock();
        let mut lost = [0u64; 64];
        {
            let mut all = lock(&self.all);
            for shelf in all.iter() {
                let mut stock = lock(&shelf.0);
                collector.held.extend_from_slice(&stock.events);
                stock.events.clear();
                if stock.lost_any {
                    for (sum, n) in lost.iter_mut().zip(stock.lost.iter_mut()) {
                        *sum += std::mem::take(n);
                    }
                    stock.lost_any = false;
                }
            }
            // A thread that ended leaves its shelf here alone, emptied above.
            all.retain(|shelf| Arc::strong_count(shelf) > 1 || !lock(&shelf.0).events.is_empty());
        }
        for (probe, &n) in lost.iter().enumerate().filter(|(_, n)| **n > 0) {
            let _ = ring.send(TapEvent {
                probe: LOST_MARK,
                at_ns: watermark,
                args: [probe as u64, n, 0, 0, 0, 0],
            });
        }
        // Each shelf's events are in order already: a stable sort merges the runs.
        collector.held.sort_by_key(|e| e.at_ns);
        let due = collector.held.partition_point(|e| e.at_ns <= watermark);
        for event in collector.held.drain(..due) {
            // An error: no receiver left (the last just went); nothing to do.
            let _ = ring.send(event);
        }
    }

    /// Shelves now (threads that fired, and ended threads' not yet emptied).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        lock(&self.all).len()
    }

    /// Puts subscription `id`'s end mark among the events, stamped now: it goes
    /// into the ring after every event that fired before it and before any after.
    pub(super) fn end_after(&self, id: u64, clock: impl Fn() -> u64) {
        let mut collector = lock(&self.collector);
        let at_ns = clock();
        collector.held.push(TapEvent {
            probe: END_MARK,
            at_ns,
            args: [id, 0, 0, 0, 0, 0],
        });
    }
}
