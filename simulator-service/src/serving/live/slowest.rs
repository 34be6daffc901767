//! The live view's slowest request of each second, cut into what it waited on
//! (`observe/waits.rs`), read off the probe tap in process.
//!
//! On only while a page asks for it (`GET /live/events?waits=true`, the
//! panel's switch): with none asking there is no subscription, so the tap
//! costs the serving path its one atomic load a probe. While one asks, the tap
//! sends the cut's probes (about eight events a request): flat out that cost
//! the server 4 to 9 % of its requests a second (docs/performance.md, "Live
//! viewers"), at an exercise's load nothing a run shows. A request that began
//! before the subscription has no cut; a lap of the ring lost forgets every
//! request in flight, so none is cut from half its events.
//!
//! The tap is the process's, as the lifetime histogram is: where servers share
//! a process (the demo's second server), their requests are cut together.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use simulator_api::live::SlowestRequest;

use crate::observe::waits::Cut;
#[cfg(feature = "probes")]
pub use watching::watch;

/// The slowest request cut since the sampler last took it.
#[derive(Debug, Default, Clone)]
pub struct Slowest(Arc<Mutex<Option<Cut>>>);

impl Slowest {
    /// The slowest request since the last take, as the second carries it.
    pub fn take(&self) -> Option<SlowestRequest> {
        let cut = self.lock().take()?;
        Some(cut.slowest_request())
    }

    #[cfg(any(test, feature = "probes"))]
    fn keep(&self, cut: Cut) {
        crate::observe::waits::keep_slowest(&mut self.lock(), cut);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Cut>> {
        // A cut is whole or absent: a poisoned lock still holds one.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The viewers asking for the cut now.
#[derive(Debug, Default, Clone)]
pub struct Askers(Arc<AtomicUsize>);

impl Askers {
    /// One more asks, until the guard is dropped (its stream ended).
    pub fn ask(&self) -> Asking {
        self.0.fetch_add(1, Ordering::Relaxed);
        Asking(self.0.clone())
    }

    pub fn any(&self) -> bool {
        self.0.load(Ordering::Relaxed) > 0
    }
}

/// A viewer's ask for the cut, for as long as it is held.
#[derive(Debug)]
pub struct Asking(Arc<AtomicUsize>);

impl Drop for Asking {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The reader of the tap, which exists only with the `probes` feature.
#[cfg(feature = "probes")]
mod watching {
    use std::time::Duration;

    use simulator_api::events::EVENTS;
    use tokio_util::sync::CancellationToken;

    use super::{Askers, Slowest};
    use crate::observe::tap::{self, Read};
    use crate::observe::waits::{Cutter, PROBES};

    /// How often the reader looks at the tap when it is quiet: a page closed
    /// on an idle server ends its subscription this soon.
    const LOOK_EVERY: Duration = Duration::from_secs(1);
    /// How long a batch of events gathers before it is read (as the tap's
    /// route batches): a wake-up every 50 ms, not one an event.
    const GATHER: Duration = Duration::from_millis(50);

    /// Cuts every request while a viewer asks, until `stop`.
    pub async fn watch(askers: Askers, slowest: Slowest, stop: CancellationToken) {
        let Ok(wanted) = tap::wanted_of(PROBES) else {
            unreachable!("the cut's probes are the tap's events")
        };
        loop {
            while !askers.any() {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(LOOK_EVERY) => {}
                }
            }
            // Sixteen subscribers already: no cut this time; try again later.
            let Ok(mut subscription) = tap::subscribe(wanted) else {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(LOOK_EVERY) => {}
                }
                continue;
            };
            let mut cutter = Cutter::default();
            while askers.any() {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = subscription.wait() => {}
                    () = tokio::time::sleep(LOOK_EVERY) => continue,
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(GATHER) => {}
                }
                loop {
                    match subscription.read() {
                        Read::Event(e) if wanted & (1 << e.probe) != 0 => {
                            let probe = EVENTS[usize::from(e.probe)].probe;
                            if let Some(cut) = cutter.on(probe, e.at_ns, &e.args) {
                                slowest.keep(cut);
                            }
                        }
                        Read::Event(_) => {}
                        Read::Lost(_) => cutter = Cutter::default(),
                        Read::Empty => break,
                    }
                }
            }
            // The last asker left: the subscription drops here.
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(id: u64, lifetime_ns: u64) -> Cut {
        let mut parts = [0; crate::observe::waits::PARTS.len()];
        parts[crate::observe::waits::REST] = lifetime_ns;
        Cut {
            id,
            lifetime_ns,
            reported_ns: lifetime_ns,
            parts,
            behind: None,
        }
    }

    #[test]
    fn an_ask_lasts_as_long_as_its_guard() {
        let askers = Askers::default();
        assert!(!askers.any());
        let (one, two) = (askers.ask(), askers.ask());
        drop(one);
        assert!(askers.any());
        drop(two);
        assert!(!askers.any());
    }

    #[test]
    fn a_take_gives_the_slowest_since_the_last_and_starts_again() {
        let slowest = Slowest::default();
        assert_eq!(slowest.take(), None);
        slowest.keep(cut(1, 5_000_000));
        slowest.keep(cut(2, 9_000_000));
        slowest.keep(cut(3, 7_000_000));
        let taken = slowest.take().unwrap();
        assert_eq!((taken.id, taken.lifetime_ms), (2, 9.0));
        assert_eq!(slowest.take(), None);
    }
}
