//! The aggregations the bundled scripts use (`count()`, `avg()`, `min()`,
//! `max()`, `hist()`), kept and printed as bpftrace 0.17 prints them, so a tap
//! twin's summary reads like its `.bt` script's and the same parser reads both
//! (`@map[label]: value`; a histogram's `[lo, hi)  count |@@@|` rows).
//!
//! Written by hand because the layout is the product: it must match bpftrace's
//! byte for byte where a reader compares them (the labels, the power-of-two
//! buckets, the 52-column bars), which no crate does.

use std::collections::BTreeMap;

/// One `@map`: its label-keyed entries of one aggregation.
#[derive(Debug, Clone)]
pub struct Map<A> {
    name: &'static str,
    entries: BTreeMap<&'static str, A>,
}

impl<A: Aggregation> Map<A> {
    pub fn new(name: &'static str) -> Self {
        Map {
            name,
            entries: BTreeMap::new(),
        }
    }

    /// `@name[label] = agg(value)`.
    pub fn add(&mut self, label: &'static str, value: u64) {
        self.entries.entry(label).or_default().add(value);
    }

    #[cfg(test)]
    pub fn get(&self, label: &str) -> Option<&A> {
        self.entries.get(label)
    }

    /// `print(@name)`: nothing for an empty map, as bpftrace.
    pub fn print(&self, out: &mut String) {
        A::print(self.name, &self.entries, out);
    }
}

/// One aggregating function.
pub trait Aggregation: Default {
    fn add(&mut self, value: u64);
    fn print(map: &str, entries: &BTreeMap<&'static str, Self>, out: &mut String);
}

/// `count()`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Count(pub u64);

/// `avg()`: bpftrace keeps the sum and the count and prints their integer quotient.
#[derive(Debug, Clone, Copy, Default)]
pub struct Avg {
    sum: u64,
    count: u64,
}

/// `max()`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Max(pub u64);

/// `min()`: no value yet is none (bpftrace prints only keys that were set).
#[derive(Debug, Clone, Copy, Default)]
pub struct Min(pub Option<u64>);

impl Avg {
    pub fn value(&self) -> u64 {
        self.sum.checked_div(self.count).unwrap_or(0)
    }
}

impl Aggregation for Count {
    fn add(&mut self, _: u64) {
        self.0 += 1;
    }
    fn print(map: &str, entries: &BTreeMap<&'static str, Self>, out: &mut String) {
        print_values(map, entries.iter().map(|(k, v)| (*k, v.0)), false, out);
    }
}

impl Aggregation for Avg {
    fn add(&mut self, value: u64) {
        self.sum = self.sum.wrapping_add(value);
        self.count += 1;
    }
    // bpftrace 0.17 ends an avg() map with an empty line; the others without.
    fn print(map: &str, entries: &BTreeMap<&'static str, Self>, out: &mut String) {
        print_values(map, entries.iter().map(|(k, v)| (*k, v.value())), true, out);
    }
}

impl Aggregation for Max {
    fn add(&mut self, value: u64) {
        self.0 = self.0.max(value);
    }
    fn print(map: &str, entries: &BTreeMap<&'static str, Self>, out: &mut String) {
        print_values(map, entries.iter().map(|(k, v)| (*k, v.0)), false, out);
    }
}

impl Aggregation for Min {
    fn add(&mut self, value: u64) {
        self.0 = Some(self.0.map_or(value, |m| m.min(value)));
    }
    fn print(map: &str, entries: &BTreeMap<&'static str, Self>, out: &mut String) {
        let set = entries.iter().filter_map(|(k, v)| Some((*k, v.0?)));
        print_values(map, set, false, out);
    }
}

/// bpftrace prints a map's entries from the smallest value up.
fn print_values<'a>(
    map: &str,
    entries: impl Iterator<Item = (&'a str, u64)>,
    blank_after: bool,
    out: &mut String,
) {
    let mut sorted: Vec<(&str, u64)> = entries.collect();
    if sorted.is_empty() {
        return;
    }
    sorted.sort_by_key(|(_, value)| *value);
    for (label, value) in sorted {
        out.push_str(&format!("@{map}[{label}]: {value}\n"));
    }
    if blank_after {
        out.push('\n');
    }
}

/// `hist()`: power-of-two buckets. Bucket 0 holds negatives (never, here: every
/// value is a u64), 1 holds 0, 2 holds 1, and bucket i >= 3 holds
/// [2^(i-2), 2^(i-1)).
#[derive(Debug, Clone, Default)]
pub struct Hist {
    buckets: Vec<u64>,
}

/// A bar of the histogram's largest bucket, in characters.
const BAR_WIDTH: u64 = 52;

impl Hist {
    /// The bucket `value` falls in.
    pub fn bucket_of(value: u64) -> usize {
        match value {
            0 => 1,
            v => 2 + v.ilog2() as usize,
        }
    }

    /// The bucket's label: `[0]`, `[1]`, `[2, 4)`, ..., `[4M, 8M)`.
    pub fn label(bucket: usize) -> String {
        match bucket {
            0 => "(..., 0)".into(),
            1 => "[0]".into(),
            2 => "[1]".into(),
            i => format!("[{}, {})", power_label(i - 2), power_label(i - 1)),
        }
    }
}

/// 2^power as bpftrace writes it: 512, 1K, 2M, 4G, 8T.
fn power_label(power: usize) -> String {
    let (rest, suffix) = match power {
        p if p >= 40 => (p - 40, "T"),
        p if p >= 30 => (p - 30, "G"),
        p if p >= 20 => (p - 20, "M"),
        p if p >= 10 => (p - 10, "K"),
        p => (p, ""),
    };
    format!("{}{suffix}", 1u64 << rest)
}

impl Aggregation for Hist {
    fn add(&mut self, value: u64) {
        let bucket = Hist::bucket_of(value);
        if self.buckets.len() <= bucket {
            self.buckets.resize(bucket + 1, 0);
        }
        self.buckets[bucket] += 1;
    }

    /// Each key's histogram from its lowest used bucket to its highest, empty
    /// ones between included, then an empty line.
    fn print(map: &str, entries: &BTreeMap<&'static str, Self>, out: &mut String) {
        for (label, hist) in entries {
            let Some(first) = hist.buckets.iter().position(|&n| n > 0) else {
                continue;
            };
            let last = hist.buckets.iter().rposition(|&n| n > 0).unwrap_or(first);
            let most = hist.buckets[first..=last]
                .iter()
                .copied()
                .max()
                .unwrap_or(1);
            out.push_str(&format!("@{map}[{label}]: \n"));
            for (i, &n) in hist.buckets.iter().enumerate().take(last + 1).skip(first) {
                let bar = "@".repeat((n * BAR_WIDTH / most) as usize);
                out.push_str(&format!(
                    "{:<16}{n:>8} |{bar:<width$}|\n",
                    Hist::label(i),
                    width = BAR_WIDTH as usize
                ));
            }
            out.push('\n');
        }
    }
}

/// A histogram's rows as printed (by bpftrace or by [`Hist`]): each bucket's
/// label and count, in order. For tests and for comparing the twins.
pub fn hist_rows(printed: &str, map_and_label: &str) -> Vec<(String, u64)> {
    let head = format!("@{map_and_label}]:");
    let mut lines = printed.lines().skip_while(|l| !l.starts_with(&head));
    lines.next();
    lines
        .map_while(|line| {
            let (label, rest) = line.split_once(')').map_or_else(
                || line.split_once(']').map(|(l, r)| (format!("{l}]"), r)),
                |(l, r)| Some((format!("{l})"), r)),
            )?;
            let count = rest.split('|').next()?.trim().parse().ok()?;
            Some((label, count))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_and_labels_are_bpftraces() {
        assert_eq!(Hist::label(Hist::bucket_of(0)), "[0]");
        assert_eq!(Hist::label(Hist::bucket_of(1)), "[1]");
        assert_eq!(Hist::label(Hist::bucket_of(3)), "[2, 4)");
        assert_eq!(Hist::label(Hist::bucket_of(1023)), "[512, 1K)");
        assert_eq!(Hist::label(Hist::bucket_of(1024)), "[1K, 2K)");
        assert_eq!(Hist::label(Hist::bucket_of(4_597_892)), "[4M, 8M)");
        assert_eq!(Hist::label(Hist::bucket_of(194_338_101)), "[128M, 256M)");
        assert_eq!(Hist::label(Hist::bucket_of(3 << 30)), "[2G, 4G)");
    }

    /// The rows of a histogram bpftrace 0.17 printed (request-lifetime.bt, 290
    /// requests), made again from the same counts.
    #[test]
    fn a_histogram_prints_as_bpftrace_printed_it() {
        let bpftrace = "@spread[request lifetimes visualisation]: \n\
[4M, 8M)               8 |@                                                   |\n\
[8M, 16M)              0 |                                                    |\n\
[16M, 32M)             0 |                                                    |\n\
[32M, 64M)             4 |                                                    |\n\
[64M, 128M)           12 |@@                                                  |\n\
[128M, 256M)         266 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n\n";
        let mut map = Map::<Hist>::new("spread");
        for (value, times) in [
            (5 << 20, 8),
            (40 << 20, 4),
            (100 << 20, 12),
            (200 << 20, 266),
        ] {
            for _ in 0..times {
                map.add("request lifetimes visualisation", value);
            }
        }
        let mut out = String::new();
        map.print(&mut out);
        assert_eq!(out, bpftrace);
        let rows = hist_rows(&out, "spread[request lifetimes visualisation");
        assert_eq!(rows.len(), 6);
        assert_eq!(rows[5], ("[128M, 256M)".to_owned(), 266));
    }

    #[test]
    fn values_print_smallest_first_and_avg_is_the_integer_mean() {
        let mut counts = Map::<Count>::new("counts");
        counts.add("requests done", 0);
        counts.add("requests done", 0);
        counts.add("blocked requests", 0);
        let mut avg = Map::<Avg>::new("average");
        avg.add("average write", 3);
        avg.add("average write", 4);
        let mut least = Map::<Min>::new("shortest");
        let mut out = String::new();
        counts.print(&mut out);
        avg.print(&mut out);
        least.print(&mut out);
        assert_eq!(
            out,
            "@counts[blocked requests]: 1\n@counts[requests done]: 2\n@average[average write]: 3\n\n"
        );
        least.add("min write", 9);
        least.add("min write", 2);
        assert_eq!(least.get("min write").unwrap().0, Some(2));
    }
}
