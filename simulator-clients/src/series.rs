//! `--series FILE`: one JSON line per second of the run, written as it goes, so a
//! stall or a fix applied mid-run shows where it happened and a long run still
//! holds only one second of figures in memory.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::fs::File;
use tokio::io::{AsyncWriteExt, BufWriter};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::record::Interval;
use crate::worker::RunState;

/// One line of the series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Line {
    /// Seconds from the start of the run to the end of this interval; the last
    /// interval is usually shorter than a second.
    pub t_s: f64,
    pub sent: u64,
    pub completed: u64,
    pub blocked: u64,
    pub errors: u64,
    pub late: u64,
    /// Latency from the scheduled send time; 0 when nothing completed.
    pub p50_ns: u64,
    pub p99_ns: u64,
}

impl Line {
    pub fn new(t_s: f64, i: &Interval) -> Self {
        let q = |p| {
            if i.latency.is_empty() {
                0
            } else {
                i.latency.value_at_quantile(p)
            }
        };
        Self {
            t_s,
            sent: i.sent,
            completed: i.completed,
            blocked: i.blocked,
            errors: i.errors,
            late: i.late,
            p50_ns: q(0.5),
            p99_ns: q(0.99),
        }
    }
}

/// The writer running beside a load run.
#[derive(Debug)]
pub struct SeriesWriter {
    stop: CancellationToken,
    task: JoinHandle<std::io::Result<()>>,
}

/// Creates `path` before the run starts, so a bad path fails before any load is sent.
pub async fn create(path: &Path) -> std::io::Result<File> {
    File::create(path).await
}

impl SeriesWriter {
    pub fn start(shared: Arc<RunState>, file: File) -> Self {
        let stop = CancellationToken::new();
        let task = tokio::spawn(write_lines(shared, file, stop.clone()));
        Self { stop, task }
    }

    /// Writes the last, partial interval and flushes.
    pub async fn finish(self) -> std::io::Result<()> {
        self.stop.cancel();
        self.task.await.map_err(std::io::Error::other)?
    }
}

async fn write_lines(
    shared: Arc<RunState>,
    file: File,
    stop: CancellationToken,
) -> std::io::Result<()> {
    let mut out = BufWriter::new(file);
    let mut ticks = tokio::time::interval_at(
        shared.start + Duration::from_secs(1),
        Duration::from_secs(1),
    );
    let mut last = false;
    while !last {
        let t_s = tokio::select! {
            biased;
            () = stop.cancelled() => {
                last = true;
                shared.start.elapsed().as_secs_f64()
            }
            at = ticks.tick() => (at - shared.start).as_secs_f64(),
        };
        let Some(interval) = shared.recorder.take_interval() else {
            break;
        };
        if last && interval.sent == 0 {
            break;
        }
        let mut line = serde_json::to_vec(&Line::new(t_s, &interval))?;
        line.push(b'\n');
        out.write_all(&line).await?;
        // One flush a second keeps `tail -f` live at no measurable cost.
        out.flush().await?;
    }
    out.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::schema_errors;

    #[test]
    fn lines_match_the_schema() {
        let empty = Line::new(0.25, &Interval::default());
        assert_eq!((empty.p50_ns, empty.p99_ns), (0, 0));
        let value = serde_json::to_value(&empty).unwrap();
        assert_eq!(
            schema_errors("series.schema.json", &value),
            Vec::<String>::new()
        );
        let mut extra = value;
        extra["p90_ns"] = 1.into();
        assert!(!schema_errors("series.schema.json", &extra).is_empty());
    }
}
