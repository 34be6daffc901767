//! `system-simulator profile`: a flame graph of a running server, taken by the
//! server itself (`GET /admin/profile`), so it needs no root, no perf and no
//! tracer: the route for every attendee. With `--stacks`, the same drawn from
//! what `scripts/profile.bt` or `scripts/profile.d` printed (`stacks.rs`), or
//! with `--off-cpu` what `scripts/offcpu.bt` or `.d` printed: time off the CPU.
//! With `--heap`, where the server's live bytes were allocated
//! (`GET /admin/profile/heap`). Writes the SVG, or the folded stacks, where
//! `--out` says. With `--diff-base`, two files of stacks of one kind (CPU,
//! off-CPU or heap) drawn as differential flame graphs: a before and an
//! after, what grew and what shrank.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use simulator_api::max_duration;
use simulator_api::output::Output;

/// What `profile` takes.
#[derive(Debug, clap::Args)]
pub struct ProfileArgs {
    /// The server: its data port or its operator port.
    #[arg(long, default_value = "http://127.0.0.1:7878")]
    pub target: String,
    /// How long to sample, in seconds (1 to 120). SIMULATOR_MAX_DURATION cuts it.
    #[arg(long, default_value_t = 10)]
    pub seconds: u64,
    /// Where to write it; `-` for standard output.
    #[arg(long, default_value = "flame.svg")]
    pub out: PathBuf,
    /// `svg` (a flame graph) or `folded` (the stacks, a line each, for inferno,
    /// FlameGraph's scripts or a diff of two profiles).
    #[arg(long, default_value = "svg", value_parser = ["svg", "folded"])]
    pub format: String,
    /// The server's admin token, when it was started with one.
    #[arg(long, env = "ISIM_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// Draw what scripts/profile.bt or scripts/profile.d printed, or what
    /// scripts/trace folded of it (a file, or `-` for standard input), instead
    /// of asking a server.
    #[arg(long, value_name = "FILE")]
    pub stacks: Option<PathBuf>,
    /// With --stacks: the traced server's pid, while it runs, to name the frames
    /// the tracer printed as bare addresses (from its memory map and symbols).
    #[arg(long, requires = "stacks")]
    pub pid: Option<u32>,
    /// With --stacks: what scripts/offcpu.bt or scripts/offcpu.d printed, time
    /// off the CPU in microseconds by stack; the threads waiting for work (the
    /// runtime's parked workers, idle blocking threads, the compactor between
    /// compactions) are left out, and how much is said.
    #[arg(long, requires = "stacks")]
    pub off_cpu: bool,
    /// Where the server's threads are by the wall clock instead of where its
    /// CPU goes (`GET /admin/threads`): the kernel's state of each thread every
    /// 10 ms, and whether an async worker was parked or inside a task; no root.
    #[arg(long, conflicts_with = "stacks")]
    pub threads: bool,
    /// Where the server's live bytes were allocated instead of where its CPU
    /// goes (`GET /admin/profile/heap`): the heap now by allocation site, from
    /// jemalloc's sampling profiler (Linux builds); no root, no seconds. With
    /// --stacks: the file is such a heap profile, saved with --format folded.
    #[arg(long, conflicts_with_all = ["threads", "off_cpu"])]
    pub heap: bool,
    /// With --stacks: draw what changed from FILE (the before, of the same
    /// kind) to the --stacks file (the after), as Brendan Gregg's differential
    /// flame graphs: --out has the after's widths, red where a frame grew and
    /// blue where it shrank; OUT-before.svg the before's, to see what
    /// vanished. The before is scaled to the after's total first.
    #[arg(long, value_name = "FILE", requires = "stacks")]
    pub diff_base: Option<PathBuf>,
    /// With --diff-base: a stack whose change is under this share of its
    /// larger count draws grey, as no change.
    #[arg(long, default_value = "5%", value_parser = simulator_api::load::parse_percent, requires = "diff_base")]
    pub grey_under: f64,
}

pub async fn run(args: ProfileArgs) -> anyhow::Result<()> {
    let out = Output::reserve(&args.out)
        .with_context(|| format!("cannot write {}", args.out.display()))?;
    if let Some(path) = &args.stacks {
        return from_stacks(path, &args, out);
    }
    if args.heap {
        eprintln!(
            "profile: the live heap of {} by allocation site (the server reads its allocator's samples; no root)",
            args.target
        );
        let path = format!("/admin/profile/heap?format={}", args.format);
        return fetch_into(out, &args, &path, Duration::from_secs(60)).await;
    }
    if args.seconds == 0 || args.seconds > simulator_service::profile::MAX_SECONDS {
        anyhow::bail!(
            "--seconds must be 1 to {}, got {}",
            simulator_service::profile::MAX_SECONDS,
            args.seconds
        );
    }
    let cap = max_duration::from_env()?;
    let seconds = max_duration::cut_and_say(
        "profile",
        "--seconds",
        Duration::from_secs(args.seconds),
        cap,
    )
    .as_secs()
    .max(1);
    let route = match args.threads {
        false => {
            eprintln!(
                "profile: sampling {} for {seconds} s at {} Hz (the server samples itself; no root)",
                args.target,
                simulator_service::profile::FREQUENCY_HZ
            );
            "profile"
        }
        true => {
            eprintln!(
                "profile: reading {}'s threads every 10 ms for {seconds} s (the server reads itself; no root)",
                args.target
            );
            "threads"
        }
    };
    let path = format!("/admin/{route}?seconds={seconds}&format={}", args.format);
    fetch_into(out, &args, &path, Duration::from_secs(seconds + 30)).await
}

/// The server's answer to `GET path`, given `within` to come, written to `out`.
async fn fetch_into(
    out: Output,
    args: &ProfileArgs,
    path: &str,
    within: Duration,
) -> anyhow::Result<()> {
    let body = simulator_api::client::exchange_within(
        &args.target,
        hyper::Method::GET,
        path,
        bytes::Bytes::new(),
        args.admin_token.as_deref(),
        within,
    )
    .await?;
    write_out(out, body.as_bytes())
}

/// A file's name, for a title: not where it was kept.
fn source_of(path: &std::path::Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    )
}

/// The stacks in `path` (`-`: standard input), folded: already folded (what
/// scripts/trace prints, or `--format folded` saved), or a tracer's own.
fn read_folded(
    path: &std::path::Path,
    names: Option<&mut simulator_service::profile::symbols::Symbolizer>,
) -> anyhow::Result<simulator_service::profile::Folded> {
    let text = match path.as_os_str() == "-" {
        true => std::io::read_to_string(std::io::stdin()).context("cannot read standard input")?,
        false => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?,
    };
    match simulator_service::profile::Folded::parse(&text) {
        Ok(folded) if folded.total() > 0 => Ok(folded),
        _ => simulator_service::profile::stacks::fold(&text, names)
            .with_context(|| format!("cannot fold the stacks in {}", path.display())),
    }
}

/// What the counts of a file of stacks count, by the flags: CPU samples,
/// microseconds off the CPU (the threads waiting for work left out, and said),
/// or heap bytes.
fn kept(
    args: &ProfileArgs,
    folded: simulator_service::profile::Folded,
    source: &str,
) -> (simulator_service::profile::Folded, String, &'static str) {
    if args.heap {
        let title = format!(
            "system-simulator: {:.1} MiB of live heap from {source}",
            folded.total() as f64 / (1024.0 * 1024.0)
        );
        return (folded, title, "bytes");
    }
    if !args.off_cpu {
        let title = format!("system-simulator: {} samples from {source}", folded.total());
        return (folded, title, "samples");
    }
    let (busy, idle) = folded.without_idle();
    eprintln!(
        "profile: {source}: {} ms off the CPU waiting for something, {} ms waiting for work left out",
        busy.total() / 1000,
        idle / 1000
    );
    let title = format!(
        "system-simulator: {} ms off the CPU from {source} (threads waiting for work left out)",
        busy.total() / 1000,
    );
    (busy, title, "us")
}

/// A tracer's stacks, folded, written as `args.format` says; with
/// `--diff-base`, the differential flame graphs of the two.
fn from_stacks(path: &std::path::Path, args: &ProfileArgs, out: Output) -> anyhow::Result<()> {
    let mut names = match args.pid {
        None => None,
        Some(pid) => Some(
            simulator_service::profile::symbols::Symbolizer::of_process(pid)
                .with_context(|| format!("cannot read process {pid}'s memory map"))?,
        ),
    };
    let source = source_of(path);
    let (folded, title, unit) = kept(args, read_folded(path, names.as_mut())?, &source);
    if let Some(base) = &args.diff_base {
        let (before, ..) = kept(args, read_folded(base, names.as_mut())?, &source_of(base));
        return differential(&before, &folded, &source_of(base), &source, unit, args, out);
    }
    let body = match args.format.as_str() {
        "folded" => folded.text().into_bytes(),
        _ => folded.svg_counting(&title, unit),
    };
    write_out(out, &body)
}

/// Both views of the differential flame graph of `before` and `after`: the
/// after's widths into `out`, the before's into OUT-before.svg beside it.
fn differential(
    before: &simulator_service::profile::Folded,
    after: &simulator_service::profile::Folded,
    before_name: &str,
    after_name: &str,
    unit: &str,
    args: &ProfileArgs,
    out: Output,
) -> anyhow::Result<()> {
    use simulator_service::profile::diff::{self, Drawing, View};
    anyhow::ensure!(
        args.format == "svg" && !out.is_stdout(),
        "--diff-base draws two SVG files (--out and OUT-before.svg): not --format folded or --out -"
    );
    let before_path = out.path().with_file_name(format!(
        "{}-before.svg",
        out.path().file_stem().unwrap_or_default().to_string_lossy()
    ));
    let views = [
        (View::After, "the after's widths, red grew, blue shrank"),
        (View::Before, "the before's widths, blue shrank or vanished"),
    ];
    let mut drawn = views.iter().map(|(view, words)| {
        let title = format!("{before_name} -> {after_name}: {words}");
        let drawing = Drawing {
            title: &title,
            view: *view,
            grey_under: args.grey_under / 100.0,
            unit,
        };
        diff::svg(before, after, &drawing)
    });
    let (after_svg, before_svg) = (
        drawn.next().unwrap_or_default(),
        drawn.next().unwrap_or_default(),
    );
    std::fs::write(&before_path, before_svg)
        .with_context(|| format!("cannot write {}", before_path.display()))?;
    eprintln!("profile: wrote {}", before_path.display());
    write_out(out, &after_svg)
}

/// Writes `body` to `out`, or to standard output for `-`.
/// Writes the profile where `--out` said; the file was reserved before any
/// sampling (`simulator_api::output`).
fn write_out(out: Output, body: &[u8]) -> anyhow::Result<()> {
    let (path, to_stdout) = (out.path().display().to_string(), out.is_stdout());
    out.write(body).with_context(|| match to_stdout {
        true => "cannot write standard output".to_owned(),
        false => format!("cannot write {path}"),
    })?;
    if !to_stdout {
        eprintln!("profile: wrote {path}");
    }
    Ok(())
}
