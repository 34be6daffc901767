//! A live change of the settings (`PUT /admin/config`): every part follows
//! the new settings, or, on any invalid value or a setting that needs a
//! restart, none does. Everything that can fail runs first.

use std::sync::Arc;

use simulator_api::{Settings, SettingsError, SettingsUpdate};

use super::persistence::Persistence;
use super::work::Work;
use super::{normalise, DataProcessor};

impl DataProcessor {
    /// Applies a live change: all of it, or (on any invalid value, or a setting
    /// that needs a restart) none of it. Requests already in the path finish with
    /// the settings they started with.
    pub fn update(&self, update: &SettingsUpdate) -> Result<Arc<Settings>, SettingsError> {
        let s = &*self.inner;
        let mut current = s.settings.write().unwrap_or_else(|p| p.into_inner());
        let next = current.changed_live(update)?;
        // Everything that can fail first, so a refused change leaves nothing changed.
        let new_work = match self.work().matches(&next) {
            true => None,
            false => Some(Work::new(&next).map_err(SettingsError::Other)?),
        };
        s.admission
            .follow(&next)
            .map_err(|e| SettingsError::Other(e.to_string()))?;
        s.backend.store.follow(&next);
        normalise::calibration::note_width(next.record_padding_cpu);
        s.index.follow(&next);
        s.cache.follow(&next);
        if !next.answer_retries_once {
            s.answered_once.forget_all();
        }
        if let Some(work) = new_work {
            *s.work.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(work);
        }
        let mut persistence = s.persistence.write().unwrap_or_else(|p| p.into_inner());
        if !persistence.matches(&next) {
            // The old strategy finishes what it holds; new elements go to the new one.
            *persistence = Persistence::start(&next, Arc::clone(&s.backend));
        }
        *current = Arc::new(next);
        Ok(Arc::clone(&current))
    }
}
