//! `tplab run`: a scenario on virtual GPUs, its trace table and verification (being written).

use clap::Args;
use std::process::ExitCode;

#[derive(Args, Default)]
pub struct RunArgs {}

pub fn run(_args: RunArgs) -> anyhow::Result<ExitCode> {
    let cfg = tplab_engine::Config::default();
    let trace = tplab_engine::trace::schedule(&cfg);
    println!("{} events", trace.events.len());
    Ok(ExitCode::SUCCESS)
}
