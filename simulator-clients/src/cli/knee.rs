//! `sim-clients knee`: its flags read into a search (`crate::knee`), the
//! steps' rows as they come, the table and answer, and the JSON and chart
//! asked for.

use anyhow::Context;

use super::flags::KneeArgs;
use crate::knee::{self, KneePlan};
use simulator_api::load::Unit;

/// `10/s` (a rate) or `8` (clients).
fn level(text: &str) -> anyhow::Result<(Unit, f64)> {
    let (number, unit) = match text.strip_suffix("/s") {
        Some(rate) => (rate, Unit::Rate),
        None => (text, Unit::Clients),
    };
    let value: f64 = number
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v > 0.0)
        .with_context(|| format!("`{text}` is no level: write a rate (10/s) or clients (8)"))?;
    Ok((unit, value))
}

pub async fn run(args: KneeArgs) -> anyhow::Result<()> {
    let bars =
        crate::thresholds::parse_all(&args.bars, None).map_err(crate::thresholds::Refused)?;
    let (unit, from) = level(&args.from)?;
    let to = match &args.to {
        Some(text) => {
            let (to_unit, to) = level(text)?;
            anyhow::ensure!(
                to_unit == unit,
                "--to is in --from's unit: both rates (/s) or both clients"
            );
            to
        }
        None => from * 10_000.0,
    };
    #[cfg(not(feature = "charts"))]
    anyhow::ensure!(
        args.svg.is_none(),
        "--svg: this build draws no charts; run the knee with sim-clients (cargo run --release --bin sim-clients -- knee ...)"
    );
    let reserve = |path: &Option<std::path::PathBuf>| {
        path.as_deref().map(crate::reporting::reserve).transpose()
    };
    let (json, svg) = (reserve(&args.json)?, reserve(&args.svg)?);
    let plan = KneePlan {
        target: args.target.clone(),
        bars: bars.clone(),
        unit,
        from,
        to,
        ratio: args.ratio,
        precision: args.precision / 100.0,
        // Every tool's runs are cut by SIMULATOR_MAX_DURATION (a page's test).
        step: simulator_api::max_duration::cut_and_say(
            "knee",
            "--step",
            args.step,
            simulator_api::max_duration::from_env()?,
        ),
        connections: args.connections,
        think_time: args.think_time,
    };
    plan.validate()?;
    let cancel = super::cancel_on_ctrl_c();
    eprintln!("knee: each step's row as it ends\n{}", knee::table::HEAD);
    let report = knee::run(&plan, cancel, |step| {
        eprintln!("{}", knee::table::row(unit, step))
    })
    .await?;
    print!("{}", knee::table::render(&report));
    if let Some(out) = json {
        crate::reporting::write_json(out, &report)?;
    }
    if let Some(out) = svg {
        draw(out, &report, &bars)?;
    }
    Ok(())
}

#[cfg(feature = "charts")]
fn draw(
    out: simulator_api::output::Output,
    report: &knee::KneeReport,
    bars: &[crate::thresholds::Threshold],
) -> anyhow::Result<()> {
    let svg = knee::chart::render(report, bars)?;
    let png = crate::sweep::chart::png(&svg)?;
    let png_path = out.path().with_extension("png");
    let path = out.path().display().to_string();
    out.write(svg.as_bytes())
        .with_context(|| format!("writing {path}"))?;
    std::fs::write(&png_path, png).with_context(|| format!("writing {}", png_path.display()))?;
    Ok(())
}

#[cfg(not(feature = "charts"))]
fn draw(
    _: simulator_api::output::Output,
    _: &knee::KneeReport,
    _: &[crate::thresholds::Threshold],
) -> anyhow::Result<()> {
    Ok(())
}
