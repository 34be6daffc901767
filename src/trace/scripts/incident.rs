//! The INCIDENT column that retry.bt and cache.bt print (and their twins): 1
//! in a second during which a scenario's incident was in force, whether the
//! script was attached before it began or during it (the server fires
//! incident-in-force every 100 ms while one is), and "incidents begun" in the
//! totals.

use crate::trace::report::{Count, Map};
use simulator_api::events::probe;

/// The probes the column listens to.
pub const PROBES: [&str; 3] = [
    probe::incident__start,
    probe::incident__in__force,
    probe::incident__end,
];

#[derive(Debug, Default)]
pub struct IncidentColumn {
    /// In force now.
    in_force: bool,
    /// In force at some moment of the second being counted.
    seen: bool,
}

impl IncidentColumn {
    /// Takes `probe` if it is one of [`PROBES`]; whether it was.
    pub fn on(&mut self, probe: &str, totals: &mut Map<Count>) -> bool {
        match probe {
            probe::incident__start => totals.add("incidents begun", 1),
            // Fired every 100 ms while one is: known even when attached during it.
            probe::incident__in__force => {}
            probe::incident__end => {
                self.in_force = false;
                return true;
            }
            _ => return false,
        }
        self.in_force = true;
        self.seen = true;
        true
    }

    /// The second's column; the next second starts from whether one is still
    /// in force.
    pub fn second(&mut self) -> u8 {
        let column = u8::from(self.seen);
        self.seen = self.in_force;
        column
    }
}
