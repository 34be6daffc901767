//! The latency histograms and their text form for the JSON report.
//!
//! Every histogram of a run covers 1 ns to 1 h at 3 significant digits, so any two
//! of them add exactly: the percentiles of a merge are those of one histogram fed
//! every value, which averaging per-machine percentiles never is. In the report a
//! histogram travels as HdrHistogram's V2 encoding with DEFLATE, in base64: the
//! form the Java, C, Go and Python implementations read too (Python's
//! `HdrHistogram.decode`), so a report can be checked with other tools.

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// The highest latency a histogram holds; longer ones are recorded as this.
pub const HIGHEST_NS: u64 = 3_600_000_000_000;
/// Significant digits: values within 0.1 % share a bucket.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// An empty histogram of the run's shape.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIGHEST_NS, SIGNIFICANT_DIGITS)
        .expect("static histogram bounds are valid")
}

/// Why a histogram in a report could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("not base64: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("not an HDR V2 histogram: {0:?}")]
    Hdr(hdrhistogram::serialization::DeserializeError),
    #[error("a histogram of another shape (1 ns to {high} ns, {digits} digits); sim-clients records 1 ns to {HIGHEST_NS} ns, {SIGNIFICANT_DIGITS} digits")]
    Shape { high: u64, digits: u8 },
}

/// `h` as base64 of its V2 + DEFLATE encoding.
pub fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    // Writing to a Vec cannot fail, and a histogram of our own shape always encodes.
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("an in-memory histogram encodes");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A histogram written by [`encode`] (or by another HdrHistogram implementation
/// with the same bounds).
pub fn decode(text: &str) -> Result<Histogram<u64>, DecodeError> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(text.trim())?;
    let read: Histogram<u64> = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(DecodeError::Hdr)?;
    // Adding into our shape would fail (or clip) for values beyond its range.
    let mut ours = new_histogram();
    ours.add(&read).map_err(|_| DecodeError::Shape {
        high: read.high(),
        digits: read.sigfig(),
    })?;
    Ok(ours)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const QUANTILES: [f64; 9] = [0.0, 0.1, 0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999, 1.0];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The report's promise: merging the shards' histograms, each through
        /// its text form, gives what one histogram fed every value gives, at every
        /// percentile, and the same count, min, max and mean.
        #[test]
        fn merging_shards_equals_one_histogram_of_every_value(
            shards in proptest::collection::vec(
                proptest::collection::vec(1u64..HIGHEST_NS, 0..300), 1..8),
        ) {
            let mut whole = new_histogram();
            let mut merged = new_histogram();
            for values in &shards {
                let mut shard = new_histogram();
                for &v in values {
                    shard.record(v).unwrap();
                    whole.record(v).unwrap();
                }
                merged.add(decode(&encode(&shard)).unwrap()).unwrap();
            }
            prop_assert_eq!(merged.len(), whole.len());
            if !whole.is_empty() {
                prop_assert_eq!(merged.min(), whole.min());
                prop_assert_eq!(merged.max(), whole.max());
                prop_assert_eq!(merged.mean(), whole.mean());
                for q in QUANTILES {
                    prop_assert_eq!(merged.value_at_quantile(q), whole.value_at_quantile(q), "q {}", q);
                }
                for p in 1..=200u32 {
                    let q = f64::from(p) / 200.0;
                    prop_assert_eq!(merged.value_at_quantile(q), whole.value_at_quantile(q));
                }
            }
        }
    }

    #[test]
    fn garbage_is_refused_with_a_reason() {
        assert!(matches!(decode("not base64!"), Err(DecodeError::Base64(_))));
        assert!(matches!(decode("aGVsbG8="), Err(DecodeError::Hdr(_))));
        let mut other = Histogram::<u64>::new_with_bounds(1, u64::MAX / 2, 3).unwrap();
        other.record(u64::MAX / 4).unwrap();
        let text = base64::engine::general_purpose::STANDARD.encode({
            let mut b = Vec::new();
            V2DeflateSerializer::new()
                .serialize(&other, &mut b)
                .unwrap();
            b
        });
        assert!(matches!(decode(&text), Err(DecodeError::Shape { .. })));
    }

    #[test]
    fn an_empty_histogram_round_trips_small() {
        let text = encode(&new_histogram());
        assert!(text.len() < 100, "{} bytes", text.len());
        assert!(decode(&text).unwrap().is_empty());
    }
}
