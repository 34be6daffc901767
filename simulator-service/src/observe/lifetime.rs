//! The process's lifetime figures of the event path: every counter of
//! `simulator_api::events` since the process started (a reset of `/stats` leaves
//! them alone, so Prometheus's `rate()` over them stays right) and every event
//! histogram, the ones `/metrics` reports and the live view's heatmap reads.
//!
//! Kept in per-thread parts (`shards.rs`) and added up when read, so recording an
//! event's counts and samples takes one uncontended lock on this core's own cache
//! lines; the `metrics` crate's recorder, which these replace on the event path,
//! moved one shared atomic per counter and pushed every histogram sample onto a
//! shared list until the next scrape. The histograms have the fixed buckets of
//! [`BUCKETS_NS`] (a sample on a bound counts in that bound's bucket, as
//! Prometheus's `le` says), and their exposition is the one the recorder wrote.

use std::sync::OnceLock;
use std::time::Duration;

use simulator_api::Counts;

use super::nanos;
use super::process::write_family;
use super::shards::Shards;

/// The histograms' bucket bounds in ns: 100 us to 60 s, dense around the default
/// 1-100 ms so the 60 ms persist and the ~3.5 ms request lifetime both resolve.
pub const BUCKETS_NS: [u64; 20] = [
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_000_000,
    3_000_000,
    5_000_000,
    7_500_000,
    10_000_000,
    20_000_000,
    35_000_000,
    50_000_000,
    60_000_000,
    75_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    5_000_000_000,
    60_000_000_000,
];

/// The bounds in seconds, as `le` writes them.
pub fn bounds_seconds() -> Vec<f64> {
    BUCKETS_NS.iter().map(|&ns| ns as f64 / 1e9).collect()
}

/// One histogram: samples per bucket (the last past every bound: `+Inf`) and
/// their sum.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Histogram {
    per_bucket: [u64; BUCKETS_NS.len() + 1],
    sum_ns: u64,
}

impl Histogram {
    #[inline]
    pub fn record(&mut self, sample: Duration) {
        let ns = nanos(sample);
        self.per_bucket[BUCKETS_NS.partition_point(|&bound| bound < ns)] += 1;
        self.sum_ns = self.sum_ns.saturating_add(ns);
    }

    /// Samples at or under each bound, then all of them (`+Inf`).
    pub fn cumulative(&self) -> Vec<u64> {
        self.per_bucket
            .iter()
            .scan(0, |below, n| {
                *below += n;
                Some(*below)
            })
            .collect()
    }

    /// Samples per bucket since `earlier` (a reading of the same histogram).
    pub fn per_bucket_since(&self, earlier: &Histogram) -> Vec<u64> {
        self.per_bucket
            .iter()
            .zip(&earlier.per_bucket)
            .map(|(now, was)| now.saturating_sub(*was))
            .collect()
    }

    fn plus(&self, other: &Histogram) -> Histogram {
        let mut sum = *self;
        for (mine, theirs) in sum.per_bucket.iter_mut().zip(&other.per_bucket) {
            *mine += theirs;
        }
        sum.sum_ns = sum.sum_ns.saturating_add(other.sum_ns);
        sum
    }

    fn write(&self, out: &mut String, name: &str, help: &str) {
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} histogram\n"));
        let cumulative = self.cumulative();
        for (bound, count) in bounds_seconds().iter().zip(&cumulative) {
            out.push_str(&format!("{name}_bucket{{le=\"{bound}\"}} {count}\n"));
        }
        let count = cumulative.last().copied().unwrap_or(0);
        out.push_str(&format!(
            "{name}_bucket{{le=\"+Inf\"}} {count}\n{name}_sum {}\n{name}_count {count}\n\n",
            self.sum_ns as f64 / 1e9
        ));
    }
}

/// Every event histogram, in the server's buckets.
pub type Histograms = simulator_api::events::EventHistograms<Histogram>;

impl Lifetime {
    /// The Prometheus text of every event counter, then every event histogram.
    pub fn write(&self, out: &mut String) {
        let counters = simulator_api::events::EVENTS
            .iter()
            .flat_map(|event| event.counters);
        for counter in counters {
            let (name, help) = (counter.metric.name, counter.metric.help);
            write_family(
                out,
                name,
                "counter",
                help,
                (counter.get)(&self.counts) as f64,
            );
        }
        for (metric, histogram) in self.histograms.each() {
            histogram.write(out, metric.name, metric.help);
        }
    }
}

/// The counts and histograms since the process started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lifetime {
    pub counts: Counts,
    pub histograms: Histograms,
}

/// The process's parts, one set for every server in it, as the Prometheus
/// recorder was one per process.
pub fn parts() -> &'static Shards<Lifetime> {
    static PARTS: OnceLock<Shards<Lifetime>> = OnceLock::new();
    PARTS.get_or_init(Shards::default)
}

/// Samples of an event that moves no counter (`canary-tick`, `request-unblock`).
#[inline]
pub fn observe(samples: impl FnOnce(&mut Histograms)) {
    parts().with(|l| samples(&mut l.histograms));
}

/// Everything so far, the parts added up.
pub fn read() -> Lifetime {
    parts()
        .all()
        .iter()
        .fold(Lifetime::default(), |sum, part| Lifetime {
            counts: sum.counts.plus(&part.counts),
            histograms: sum.histograms.zip_with(&part.histograms, Histogram::plus),
        })
}

/// Every request's time inside the server so far, summed, in ns (the
/// `request_lifetime` histogram's sum): `/stats.requests_done_ns`.
pub fn requests_done_ns() -> u64 {
    parts().all().iter().fold(0u64, |sum, part| {
        sum.saturating_add(part.histograms.request_lifetime.sum_ns)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_on_a_bound_counts_in_that_bounds_bucket() {
        let mut h = Histogram::default();
        h.record(Duration::from_micros(100));
        h.record(Duration::from_nanos(100_001));
        h.record(Duration::ZERO);
        h.record(Duration::from_secs(61));
        let cumulative = h.cumulative();
        assert_eq!(cumulative.len(), BUCKETS_NS.len() + 1);
        assert_eq!(cumulative[0], 2, "0 and 100 us are at or under 100 us");
        assert_eq!(cumulative[1], 3, "100.001 us is under 250 us");
        assert_eq!(cumulative[BUCKETS_NS.len() - 1], 3, "61 s is past 60 s");
        assert_eq!(cumulative[BUCKETS_NS.len()], 4);
        assert_eq!(h.sum_ns, 61_000_000_000 + 200_001);
    }

    #[test]
    fn the_exposition_is_the_recorders() {
        let mut h = Histogram::default();
        h.record(Duration::from_millis(3));
        h.record(Duration::from_millis(70));
        let mut out = String::new();
        h.write(&mut out, "isim_x_seconds", "Help.");
        assert!(out.starts_with(
            "# HELP isim_x_seconds Help.\n# TYPE isim_x_seconds histogram\n\
             isim_x_seconds_bucket{le=\"0.0001\"} 0\n\
             isim_x_seconds_bucket{le=\"0.00025\"} 0\n"
        ));
        for line in [
            "isim_x_seconds_bucket{le=\"0.003\"} 1\n",
            "isim_x_seconds_bucket{le=\"0.075\"} 2\n",
            "isim_x_seconds_bucket{le=\"60\"} 2\n",
            "isim_x_seconds_bucket{le=\"+Inf\"} 2\nisim_x_seconds_sum 0.073\nisim_x_seconds_count 2\n\n",
        ] {
            assert!(out.contains(line), "{line:?} missing from\n{out}");
        }
    }

    #[test]
    fn every_events_metric_is_written_once() {
        let mut out = String::new();
        read().write(&mut out);
        for event in simulator_api::events::EVENTS {
            for name in event
                .counters
                .iter()
                .map(|c| c.metric.name)
                .chain(event.histograms.iter().map(|h| h.name))
            {
                assert_eq!(out.matches(&format!("# TYPE {name} ")).count(), 1, "{name}");
            }
        }
    }
}
