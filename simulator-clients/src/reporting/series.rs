//! The run second by second: `--series FILE` gets one JSON line per second,
//! written as it goes, so a stall or a fix applied mid-run shows where it
//! happened; the JSON report keeps every second with its latency histogram
//! (encoded, a few hundred bytes), so `merge` can add the shards' seconds into one
//! exact series. Only the current second's histogram is held whole in memory.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::fs::File;
use tokio::io::{AsyncWriteExt, BufWriter};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::reporting::record::{Interval, Running};

/// One line of the series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    /// Seconds from the start of the run to the end of this interval; the last
    /// interval is usually shorter than a second.
    pub t_s: f64,
    /// Attempts sent, retries included.
    pub sent: u64,
    /// Attempts answered 2xx within their timeout: this second's goodput.
    pub completed: u64,
    pub blocked: u64,
    pub errors: u64,
    pub late: u64,
    /// Of `sent`, the attempts that retried a failed one.
    pub retries: u64,
    /// Requests that ended without a success this second.
    pub given_up: u64,
    /// Latency from the scheduled send time; 0 when nothing completed.
    pub p50_ns: u64,
    pub p99_ns: u64,
    /// The 99th percentile of this second's new connections' handshakes; 0
    /// when none was opened. Series of earlier versions have none: read as 0.
    #[serde(default)]
    pub connect_p99_ns: u64,
    /// The plan's stage in force as the second ended; absent without a plan
    /// (and in series of earlier versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
}

impl Line {
    pub fn new(t_s: f64, i: &Interval) -> Self {
        let q = |h: &hdrhistogram::Histogram<u64>, p| {
            if h.is_empty() {
                0
            } else {
                h.value_at_quantile(p)
            }
        };
        Self {
            t_s,
            sent: i.sent,
            completed: i.completed,
            blocked: i.blocked,
            errors: i.errors.total(),
            late: i.late,
            retries: i.retries,
            given_up: i.given_up,
            p50_ns: q(&i.latency, 0.5),
            p99_ns: q(&i.latency, 0.99),
            connect_p99_ns: q(&i.connect, 0.99),
            stage: None,
        }
    }
}

/// One second as the JSON report keeps it: the line and its whole histogram.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Second {
    #[serde(flatten)]
    pub line: Line,
    /// The second's latency histogram, HDR V2 + DEFLATE in base64 (`hdr.rs`).
    pub latency_hdr: String,
    /// The second's handshakes, the same way; empty when none was opened (and
    /// in reports of earlier versions).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub connect_hdr: String,
}

/// The collector running beside a load run.
#[derive(Debug)]
pub struct SeriesWriter {
    stop: CancellationToken,
    task: JoinHandle<(Vec<Second>, std::io::Result<()>)>,
}

/// Creates `path` before the run starts, so a bad path fails before any load is sent.
pub async fn create(path: &Path) -> std::io::Result<File> {
    File::create(path).await
}

/// Where each second goes.
#[derive(Debug, Default)]
pub struct SecondOutputs {
    /// Written to this file, a JSON line each.
    pub file: Option<File>,
    /// Kept for the report.
    pub seconds: bool,
    /// Sent here as each second ends.
    pub lines: Option<tokio::sync::mpsc::UnboundedSender<Line>>,
}

impl SeriesWriter {
    /// Takes the run's intervals each second, to where `keep` says.
    pub fn start(shared: Arc<dyn Running>, keep: SecondOutputs) -> Self {
        let stop = CancellationToken::new();
        let task = tokio::spawn(collect(shared, keep, stop.clone()));
        Self { stop, task }
    }

    /// Takes the last, partial interval, flushes the file and returns the seconds
    /// kept, with the file's outcome.
    pub async fn finish(self) -> (Vec<Second>, std::io::Result<()>) {
        self.stop.cancel();
        self.task
            .await
            .unwrap_or_else(|e| (Vec::new(), Err(std::io::Error::other(e))))
    }
}

async fn collect(
    shared: Arc<dyn Running>,
    keep: SecondOutputs,
    stop: CancellationToken,
) -> (Vec<Second>, std::io::Result<()>) {
    let mut kept = Vec::new();
    let SecondOutputs {
        file,
        seconds,
        lines,
    } = keep;
    let written = collect_into(
        shared.as_ref(),
        file,
        seconds.then_some(&mut kept),
        lines,
        stop,
    )
    .await;
    (kept, written)
}

async fn collect_into(
    shared: &dyn Running,
    file: Option<File>,
    mut keep: Option<&mut Vec<Second>>,
    lines: Option<tokio::sync::mpsc::UnboundedSender<Line>>,
    stop: CancellationToken,
) -> std::io::Result<()> {
    let mut out = file.map(BufWriter::new);
    let mut ticks = tokio::time::interval_at(
        shared.started() + Duration::from_secs(1),
        Duration::from_secs(1),
    );
    let mut last = false;
    while !last {
        let t_s = tokio::select! {
            biased;
            () = stop.cancelled() => {
                last = true;
                shared.started().elapsed().as_secs_f64()
            }
            at = ticks.tick() => (at - shared.started()).as_secs_f64(),
        };
        let Some(interval) = shared.recorder().take_interval() else {
            break;
        };
        if last && interval.sent == 0 {
            break;
        }
        let mut line = Line::new(t_s, &interval);
        // Just before the second's end: a stage that ends with it is its own.
        line.stage = shared.stage_at((t_s - 1e-6).max(0.0));
        if let Some(lines) = &lines {
            // A receiver gone is no reason to stop the series.
            let _ = lines.send(line.clone());
        }
        if let Some(out) = out.as_mut() {
            let mut text = serde_json::to_vec(&line)?;
            text.push(b'\n');
            out.write_all(&text).await?;
            // One flush a second keeps `tail -f` live at no measurable cost.
            out.flush().await?;
        }
        if let Some(kept) = keep.as_deref_mut() {
            kept.push(Second {
                line,
                latency_hdr: crate::reporting::hdr::encode(&interval.latency),
                connect_hdr: if interval.connect.is_empty() {
                    String::new()
                } else {
                    crate::reporting::hdr::encode(&interval.connect)
                },
            });
        }
    }
    match out.as_mut() {
        Some(out) => out.flush().await,
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reporting::report::tests::schema_errors;

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

    #[test]
    fn a_seconds_handshakes_are_in_its_line() {
        let mut interval = Interval::default();
        interval
            .connect
            .record(1_020_000_000)
            .expect("in the histogram's range");
        let line = Line::new(1.0, &interval);
        assert!(
            (1_019_000_000..=1_021_000_000).contains(&line.connect_p99_ns),
            "{line:?}"
        );
        let value = serde_json::to_value(&line).unwrap();
        assert_eq!(
            schema_errors("series.schema.json", &value),
            Vec::<String>::new()
        );
    }
}
