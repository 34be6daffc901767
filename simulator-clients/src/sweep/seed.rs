//! The seed's own figures (seed 003's three runs, averaged per minute), for
//! putting beside a sweep of the default scenario: the comparison the product
//! exists to make. The same table is in `docs/results/README.md`.

/// One client count of the seed's table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeedRow {
    pub clients: usize,
    /// Requests a minute with the original 8 permits.
    pub requests_per_min: f64,
    /// Blocked share with the original permits, 0 to 1.
    pub blocked_share: f64,
    /// Requests a minute after the seed's fix (permits = 8 x clients).
    pub fixed_requests_per_min: f64,
}

/// The seed's table, in its order.
pub const SEED_TABLE: [SeedRow; 5] = [
    SeedRow {
        clients: 1,
        requests_per_min: 60.0,
        blocked_share: 0.0,
        fixed_requests_per_min: 60.0,
    },
    SeedRow {
        clients: 15,
        requests_per_min: 895.0,
        blocked_share: 0.31,
        fixed_requests_per_min: 885.0,
    },
    SeedRow {
        clients: 125,
        requests_per_min: 7422.0,
        blocked_share: 0.39,
        fixed_requests_per_min: 7375.0,
    },
    SeedRow {
        clients: 135,
        requests_per_min: 7742.0,
        blocked_share: 0.999,
        fixed_requests_per_min: 7965.0,
    },
    SeedRow {
        clients: 1000,
        requests_per_min: 7686.0,
        blocked_share: 1.0,
        fixed_requests_per_min: 59002.0,
    },
];

/// The scenario whose sweep the seed's figures belong beside.
pub const SEED_SCENARIO: &str = "semaphore-starvation";
