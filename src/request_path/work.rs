//! Work: what the processor does with an element after it arrives and before it is
//! admitted and persisted.
//!
//! **Contract.** Runs on the request's own task, once per request, with the
//! element; fires no probe yet. Today there is one kind, `none` (the original
//! does no work); CPU-bound kinds (compression, hashing) belong here, as variants
//! of [`Work`], so they can run on the async workers or off them. An enum: the hot
//! path stays statically dispatched and every kind is named in one `match`.

use simulator_api::settings::WorkKind;

use super::Element;

/// The work configured now (`work = ...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// Nothing: the element goes straight to admission.
    None,
}

impl Work {
    pub fn from_kind(kind: WorkKind) -> Self {
        match kind {
            WorkKind::None => Work::None,
        }
    }

    /// Does the work on the element (`none` leaves it alone).
    pub async fn run(&self, _element: &Element) {
        match self {
            Work::None => {}
        }
    }
}
