//! The text the CPU work compresses: WAL-like records, made once and shared.
//!
//! Seed 001 compresses write-ahead-log segments. The elements clients send are
//! small, so the work stands for the segment an element lands in: `work_bytes` of
//! records like `00001234 put user:004711 9f3a...`, as compressible as a real
//! log (zstd makes them about a third to a half of their size). The text is made
//! from a fixed seed, once, and only ever grown, so every work on the same
//! `work_bytes` costs the same and no request pays for making it after the first
//! (the processor makes it when the setting is applied).

use std::fmt::Write as _;
use std::sync::{Arc, OnceLock, RwLock};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The shared text, at least as long as the largest `work_bytes` asked for so far.
static CORPUS: OnceLock<RwLock<Arc<Vec<u8>>>> = OnceLock::new();

/// At least `len` bytes of WAL-like text; the same bytes on every call.
pub fn corpus(len: usize) -> Arc<Vec<u8>> {
    let lock = CORPUS.get_or_init(RwLock::default);
    {
        let text = lock.read().unwrap_or_else(|p| p.into_inner());
        if text.len() >= len {
            return Arc::clone(&text);
        }
    }
    let mut text = lock.write().unwrap_or_else(|p| p.into_inner());
    if text.len() < len {
        *text = Arc::new(records(len));
    }
    Arc::clone(&text)
}

/// `len` bytes or a little more of records from a fixed seed.
fn records(len: usize) -> Vec<u8> {
    let mut rng = StdRng::seed_from_u64(0x15_1A);
    let mut text = String::with_capacity(len + 64);
    let mut seq = 0u64;
    while text.len() < len {
        seq += 1;
        let key: u32 = rng.random_range(0..100_000);
        let value: u64 = rng.random();
        let op = if rng.random_bool(0.8) { "put" } else { "del" };
        // Writing to a String cannot fail.
        let _ = writeln!(text, "{seq:08} {op} user:{key:06} {value:016x}");
    }
    text.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_the_same_every_time_and_grows_on_demand() {
        let small = corpus(1000);
        assert!(small.len() >= 1000);
        let large = corpus(100_000);
        assert!(large.len() >= 100_000);
        assert_eq!(&large[..1000], &small[..1000]);
        let ratio = super::super::zstd_len(&large[..100_000]) as f64 / 1e5;
        assert!(
            (0.15..0.7).contains(&ratio),
            "compresses like a log, not like zeros or noise: {ratio}"
        );
    }
}
