//! `tplab cert verify FILE`: whether a certificate record is intact.

use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use tplab_quiz::cert::{verify_file, Verdict};

/// Flags of `tplab cert`.
#[derive(Args, Debug, Clone)]
pub struct CertArgs {
    #[command(subcommand)]
    pub command: CertCommand,
}

#[derive(Subcommand, Debug, Clone)]
pub enum CertCommand {
    /// Check a certificate (.json record or .png): exit 0 if intact, 1 if edited.
    Verify { file: PathBuf },
}

pub fn run(args: CertArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        CertCommand::Verify { file } => match verify_file(&file)? {
            Verdict::Intact(c) => {
                println!(
                    "intact: {} passed {} with {}% on {} (ID {})",
                    c.name, c.exam_version, c.score_percent, c.date, c.id
                );
                Ok(ExitCode::SUCCESS)
            }
            Verdict::Tampered {
                record,
                computed_id,
            } => {
                println!(
                    "NOT intact: the record says ID {} but its contents give {computed_id}; the name, \
                     date, score or exam version was changed after it was issued",
                    record.id
                );
                Ok(ExitCode::FAILURE)
            }
        },
    }
}
