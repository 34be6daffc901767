//! `system-simulator replay FILE.isim`: a recording served as the live view, so
//! a room can watch yesterday's incident on laptops that cannot run it. The
//! page is the live view's own (`GET /live`), its diagram's badges and charts
//! fed from the recording's seconds (`film.rs`) at the recording's pace or
//! faster, with a bar to pause it and move its position (`player.rs`).
//!
//! It serves until Ctrl-C or SIGTERM (or for `SIMULATOR_MAX_DURATION`, as
//! every long-running tool), and holds at the recording's end.

pub(crate) mod film;
#[cfg(test)]
mod fuzz_tests;
mod player;

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context as _;
use simulator_api::live::{ReplayMove, REPLAY_SPEEDS};
use simulator_api::max_duration;

use crate::recording::format as recording;

/// What `replay` takes.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// The recording (`system-simulator record --out FILE.isim`).
    pub recording: PathBuf,
    /// Where the page listens (port 0: any free port, printed).
    #[arg(long, default_value = "127.0.0.1:7980")]
    pub listen: SocketAddr,
    /// Recorded seconds a second of replay, from 0.1 to 100.
    #[arg(long, default_value_t = 1.0, value_parser = parse_speed)]
    pub speed: f64,
    /// The second to begin at.
    #[arg(long, default_value_t = 0, value_name = "SECOND")]
    pub at: u64,
    /// Begin held at --at; the page's play button goes on.
    #[arg(long)]
    pub paused: bool,
}

fn parse_speed(text: &str) -> Result<f64, String> {
    let (slowest, fastest) = REPLAY_SPEEDS;
    match text.parse::<f64>() {
        Ok(speed) if (slowest..=fastest).contains(&speed) => Ok(speed),
        _ => Err(format!(
            "a number of recorded seconds a second, from {slowest} to {fastest}"
        )),
    }
}

pub async fn run(args: ReplayArgs) -> anyhow::Result<()> {
    // As every long-running tool: a cap on how long it serves (the pages' runner).
    let cap = max_duration::from_env()?;
    let recording = recording::open(&args.recording)?;
    let stopped = recording.stop.told(recording.last_second());
    let film = film::make(&recording)
        .with_context(|| format!("{} cannot be replayed", args.recording.display()))?;
    anyhow::ensure!(
        args.at <= film.length_s(),
        "--at {}: the recording lasts {} s",
        args.at,
        film.length_s()
    );
    let length = film.length_s();
    let start = ReplayMove {
        at_s: Some(args.at),
        speed: Some(args.speed),
        paused: Some(args.paused),
    };
    let file = args.recording.display().to_string();
    let player = player::Player::new(film, file.clone(), stopped.clone(), start);
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    let bound = listener.local_addr()?;
    if let Some(told) = &stopped {
        eprintln!("replay: {told}");
    }
    println!(
        "replay: {file} ({length} s, {} recorded {} at {} UTC) at http://{bound}/live; Ctrl-C ends it",
        recording.head.recorder,
        recording.head.target,
        crate::trace::clock_at(recording.head.began_unix_ms / 1000),
    );
    drop(recording);
    if let Some(cap) = cap {
        eprintln!(
            "replay: it serves for {} ({})",
            humantime::format_duration(cap),
            max_duration::VAR
        );
    }
    let clock = tokio::spawn(player.clone().play());
    let closed = player.closed.clone();
    axum::serve(listener, player::routes(player.clone()))
        .with_graceful_shutdown(async move {
            let capped = async {
                match cap {
                    Some(cap) => tokio::time::sleep(cap).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = simulator_service::server::shutdown_signal() => {}
                () = capped => {}
            }
            closed.cancel();
        })
        .await
        .context("serving the replay")?;
    player.closed.cancel();
    clock.await.context("the replay's clock")?;
    Ok(())
}
