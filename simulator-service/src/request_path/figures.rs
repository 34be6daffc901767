//! What the serving side shows of the request path at one moment (`/stats`,
//! the live view): one snapshot of its parts' figures, read together.

use simulator_api::Counts;

use super::DataProcessor;

/// The request path's figures at one moment.
#[derive(Debug, Clone, Copy)]
pub struct Figures {
    pub counts: Counts,
    /// Elements queued for persistence, not yet taken by a worker.
    pub queued: u64,
    pub permits_available: usize,
    pub permits_total: usize,
    pub permits_waiting: u64,
    /// The store's slots held now and its limit (`None`: no limit).
    pub store_slots: Option<(usize, usize)>,
    /// Elements acknowledged and not yet written: now, and the most at once
    /// over the last second (`persistence/unwritten.rs`).
    pub acked_unwritten: u64,
    pub acked_unwritten_peak: u64,
    /// Entries in the shared index now (0 without one).
    pub index_entries: u64,
    /// Entries in the cache now (0 without one).
    pub cache_held: u64,
    /// Persists journalled since start (`journal`).
    pub journal_entries: u64,
    /// Replies remembered for retries now, and the bytes their copies hold
    /// (`answer_retries_once`); retries answered from them since start.
    pub remembered: (u64, u64),
    pub retries_answered: u64,
}

impl DataProcessor {
    /// The request path's figures now.
    pub fn figures(&self) -> Figures {
        let s = &*self.inner;
        let counts = self.counts();
        Figures {
            counts,
            queued: counts.queued(),
            permits_available: s.admission.available(),
            permits_total: s.admission.total(),
            permits_waiting: s.admission.waiting() as u64,
            store_slots: s.backend.store.slots_busy(),
            acked_unwritten: s.backend.unwritten.now(),
            acked_unwritten_peak: s.backend.unwritten.recent_peak(),
            index_entries: s.index.entries(),
            cache_held: s.cache.len() as u64,
            journal_entries: s.backend.journal.entries(),
            remembered: s.answered_once.held(),
            retries_answered: s.answered_once.answered(),
        }
    }
}
