//! The drill's production dressing: settings a production service sets for
//! itself, laid under the drawn cause's, so a diff of the drill's settings
//! against the defaults lists many keys and not the fault's alone.
//!
//! Each dressed key is one no exercise's world, fault or fix reads at its
//! default: server limits no exercise's load comes near (connections, header
//! and body deadlines, the drain), the persistence pool's size where the pool
//! is not in use, the part and lane sizes of modes that are off, where work
//! would run in a service that has none and the size and split of its idle
//! pool (the split also where work runs whole on the blocking pool), and two
//! choices that are the faults
//! of exercises 9 and 10 in a world where they cost nothing: Nagle's
//! algorithm on (`tcp_nodelay = false`) with replies in one write, and the
//! TLS-like handshake on the accept loop with no CPU to spend on it. The
//! values are drawn by the seed among plausible ones, so two attendees'
//! settings differ where their faults do not.
//!
//! What it cannot hide: a fault whose value is the default (8 permits, work
//! on the async workers, replies remembered for 0 s): a diff against the
//! defaults lists the other draws' value of that key and not this one's, and
//! no harmless value can stand in for the fault. Nor a world that differs
//! from every other's (a neighbour, a CPU limit, a memory limit, the store's
//! latency). Those are visible as they would be in life: `top`, the cgroup's
//! files, `ulimit`, and the store's own latency. Where the fault is in the
//! world, the service's own settings say nothing: the neighbour's draw and
//! the draw of nothing list the same keys (`tests/suite/workshop/drill.rs`).

use simulator_api::settings::SettingsUpdate;
use simulator_api::Settings;

/// The dressed keys that change only at a restart: a server's values of them
/// tell the seed it started with (`drill check` refuses another seed's).
pub const RESTART_KEYS: &[&str] = &[
    "max_connections",
    "header_read_timeout",
    "body_read_timeout",
    "drain_timeout",
];

/// The dressing for `seed`, with `cause` (the drawn cause's settings) laid
/// over it: the cause's keys always win.
pub fn production(seed: &str, cause: &SettingsUpdate) -> SettingsUpdate {
    dressing(seed, &Settings::default().with(cause)).and(cause)
}

/// The dressing alone, for a service whose settings are `under`.
fn dressing(seed: &str, under: &Settings) -> SettingsUpdate {
    let mut pick = Picker::new(seed);
    let mut dress: SettingsUpdate = serde_json::from_value(serde_json::json!({
        "max_connections": pick.one(&[4096, 8192, 16384]),
        "header_read_timeout": pick.one(&["5s", "15s", "20s"]),
        "body_read_timeout": pick.one(&["15s", "20s", "60s"]),
        "drain_timeout": pick.one(&["15s", "20s", "30s"]),
        "listen_backlog": pick.one(&[1024, 2048, 3072]),
        "persist_workers": pick.one(&[16, 48, 64]),
        "persist_queue": pick.one(&[256, 2048, 4096]),
        "parts_at_once": pick.one(&[2, 8, 16]),
        "small_lane_permits": pick.one(&[4, 16, 32]),
    }))
    .expect("the dressing's keys and values are settings");
    // Nagle's algorithm delays a reply's second write until the first is
    // acknowledged; with the reply in one write there is no second.
    if under.reply_writes == Settings::default().reply_writes {
        dress.tcp_nodelay = Some(false);
    }
    // The handshake's work on the accept loop blocks it for as long as it
    // takes: with no work, not at all.
    if under.handshake_cpu.is_zero() {
        dress.handshake_on = Some(simulator_api::settings::HandshakeOn::AcceptLoop);
    }
    // Where the work runs, and the pool's size and split, matter only where
    // there is work: a pool with nothing to run is idle threads.
    use simulator_api::settings::WorkOn;
    let no_work = under.work == Settings::default().work;
    if no_work {
        dress.work_on = Some(match pick.index(2) {
            0 => WorkOn::BlockingPool,
            _ => WorkOn::Rayon,
        });
    }
    let (limit, split) = (pick.one(&[2, 4, 8]), pick.one(&[2, 4]));
    let mut pools = serde_json::Map::new();
    if no_work {
        pools.insert("work_limit".into(), limit);
    }
    // The split cuts a work into pieces on rayon's pool only: work on the
    // blocking pool runs whole.
    if no_work || under.work_on == WorkOn::BlockingPool {
        pools.insert("work_split".into(), split);
    }
    let pools: SettingsUpdate =
        serde_json::from_value(serde_json::Value::Object(pools)).expect("pool sizes are settings");
    dress.and(&pools)
}

/// FNV-1a, 64 bits: the same draw for the same seed on every build.
pub(super) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Draws values from a seed: each pick a fresh hash (FNV-1a, as the draw's) of the seed and
/// the pick's number, so adding a key later changes none of the others.
struct Picker<'a> {
    seed: &'a str,
    picks: u64,
}

impl<'a> Picker<'a> {
    fn new(seed: &'a str) -> Self {
        Self { seed, picks: 0 }
    }

    fn one<T: Clone + serde::Serialize>(&mut self, among: &[T]) -> serde_json::Value {
        serde_json::to_value(&among[self.index(among.len())]).expect("a plain value serialises")
    }

    /// A number below `n`.
    fn index(&mut self, n: usize) -> usize {
        self.picks += 1;
        let hash = fnv1a(format!("{}/{}", self.seed, self.picks).as_bytes());
        (hash % n as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use simulator_service::scenario;

    #[test]
    fn the_dressing_never_moves_a_causes_key_or_its_world_and_is_valid() {
        for cause in scenario::bundled().unwrap() {
            for seed in ["a", "b", "c", "plum-42"] {
                let dressed = production(seed, &cause.config);
                let settings = Settings::default().with(&dressed);
                settings.validate().unwrap();
                assert!(
                    settings.world_changes(&cause.settings()).is_empty(),
                    "{}: the dressing moved the world",
                    cause.name
                );
                let kept = dressed.only(&cause.config.keys());
                assert_eq!(kept, cause.config, "{}: a cause's key moved", cause.name);
            }
        }
    }

    #[test]
    fn a_diff_against_the_defaults_lists_many_keys_beside_the_faults() {
        let defaults = Settings::default().texts();
        for cause in scenario::bundled().unwrap() {
            let dressed = Settings::default().with(&production("plum-42", &cause.config));
            let moved: Vec<&str> = dressed
                .texts()
                .iter()
                .zip(&defaults)
                .filter(|(now, default)| now.1 != default.1)
                .map(|(now, _)| now.0)
                .collect();
            let own = cause.config.keys();
            let dressed_only = moved.iter().filter(|k| !own.contains(k)).count();
            assert!(
                dressed_only >= 9,
                "{}: {dressed_only} keys moved by the dressing alone: {moved:?}",
                cause.name,
            );
        }
    }

    #[test]
    fn the_restart_keys_are_dressed_and_change_only_at_a_restart() {
        let keys = dressing("x", &Settings::default()).keys();
        for key in RESTART_KEYS {
            assert!(keys.contains(key), "{key} is not dressed");
            let info = simulator_api::SETTINGS
                .iter()
                .find(|s| s.key == *key)
                .unwrap();
            assert!(!info.live && !info.world, "{key}");
        }
        // 81 combinations: two seeds share them once in 81 at most, as drawn.
        let told = |seed: &str| {
            let s = Settings::default().with(&dressing(seed, &Settings::default()));
            s.texts()
                .into_iter()
                .filter(|(k, _)| RESTART_KEYS.contains(k))
                .collect::<Vec<_>>()
        };
        let alike = (0..100)
            .filter(|n| told(&format!("a{n}")) == told(&format!("b{n}")))
            .count();
        assert!(alike <= 5, "{alike} pairs of 100 share their restart keys");
    }

    #[test]
    fn two_seeds_dress_differently_and_one_seed_always_alike() {
        let config = SettingsUpdate::default();
        assert_eq!(production("x", &config), production("x", &config));
        let distinct: std::collections::HashSet<String> = (0..20)
            .map(|n| serde_json::to_string(&production(&format!("s{n}"), &config)).unwrap())
            .collect();
        assert!(
            distinct.len() >= 15,
            "{} dressings of 20 seeds",
            distinct.len()
        );
    }
}
