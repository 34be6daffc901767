//! What a twin that reads counters keeps of them: the first reading (its
//! summary covers everything since), the reading at its last line (each line is
//! the change since) and the newest; and how bpftrace prints the totals such a
//! script ends with.

/// The first, the last line's and the newest reading of a twin's counters.
#[derive(Debug, Default)]
pub struct Readings<R> {
    first: Option<R>,
    last_line: R,
    now: R,
}

impl<R: Clone + Default> Readings<R> {
    /// A new reading; the first is also where the first line starts.
    pub fn read(&mut self, now: R) {
        if self.first.is_none() {
            self.first = Some(now.clone());
            self.last_line = now.clone();
        }
        self.now = now;
    }

    pub fn now(&self) -> &R {
        &self.now
    }

    /// The newest reading and the one at the last line; the next line starts
    /// from the newest.
    pub fn line(&mut self) -> (R, R) {
        let then = std::mem::replace(&mut self.last_line, self.now.clone());
        (self.now.clone(), then)
    }

    /// The newest reading and the first: the whole run.
    pub fn whole(&self) -> (R, R) {
        let first = self.first.clone().unwrap_or_else(|| self.now.clone());
        (self.now.clone(), first)
    }
}

/// A script's `count()` totals as bpftrace prints them at its exit: `@name: N`
/// and a blank line, `@name: 0` for a map that never counted (bpftrace 0.17
/// prints an unkeyed map that was never hit as 0; a reader of the summary, and
/// the tests that hold the twin to the script, look for every name).
pub fn print_totals(out: &mut String, totals: &[(&str, u64)]) {
    for (map, n) in totals {
        out.push_str(&format!("@{map}: {n}\n\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_spans_since_the_last_and_the_whole_since_the_first() {
        let mut r = Readings::default();
        r.read(10);
        r.read(15);
        assert_eq!(r.line(), (15, 10));
        r.read(18);
        assert_eq!(r.line(), (18, 15));
        assert_eq!(r.whole(), (18, 10));
        let mut out = String::new();
        print_totals(&mut out, &[("a", 0), ("b", 3)]);
        assert_eq!(out, "@a: 0\n\n@b: 3\n\n");
    }
}
