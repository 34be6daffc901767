//! Durations as people read them: three significant figures in the unit that fits
//! (`850 ns`, `12.3 µs`, `1.38 ms`, `6.63 s`). The human reports use this; the
//! JSON keeps integer nanoseconds, and the DTrace-style quantize keeps
//! nanoseconds as DTrace prints them.

/// `ns` nanoseconds in the largest unit that keeps the figure at 1 or more, to
/// three significant figures. 1 ns, the histograms' floor, where a zero is
/// recorded (a send that waited for no connection), prints as `0`.
pub fn duration(ns: u64) -> String {
    const UNITS: [(f64, &str); 3] = [(1e3, "µs"), (1e6, "ms"), (1e9, "s")];
    if ns <= 1 {
        return "0".to_owned();
    }
    if ns < 1_000 {
        return format!("{ns} ns");
    }
    let ns = ns as f64;
    // From the largest unit down, the first in which the figure is at least 1
    // once rounded (so 999.96 µs prints as 1.00 ms, not 1000 µs).
    for (i, &(scale, unit)) in UNITS.iter().enumerate().rev() {
        let value = ns / scale;
        let text = three_figures(value);
        let rounded: f64 = text.parse().unwrap_or(value);
        if rounded >= 1.0 || i == 0 {
            return format!("{text} {unit}");
        }
    }
    unreachable!("the loop returns at the smallest unit")
}

fn three_figures(value: f64) -> String {
    match value {
        v if v < 9.995 => format!("{v:.2}"),
        v if v < 99.95 => format!("{v:.1}"),
        v => format!("{v:.0}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_significant_figures_in_the_unit_that_fits() {
        for (ns, text) in [
            (0, "0"),
            (1, "0"),
            (2, "2 ns"),
            (850, "850 ns"),
            (1_000, "1.00 µs"),
            (12_345, "12.3 µs"),
            (999_960, "1.00 ms"),
            (1_380_000, "1.38 ms"),
            (99_960_000, "100 ms"),
            (6_631_194_623, "6.63 s"),
            (125_000_000_000, "125 s"),
            (3_600_000_000_000, "3600 s"),
        ] {
            assert_eq!(duration(ns), text, "{ns}");
        }
    }
}
