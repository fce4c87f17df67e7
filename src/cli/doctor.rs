//! `kdelta doctor`'s arguments.

use super::parse::doctor_cpus;
use crate::cpuset::CpuSet;
use clap::Args;

/// `kdelta doctor`: what is read, what is changed, on which CPUs.
#[derive(Args, Debug)]
pub(crate) struct DoctorArgs {
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// Make the changes kdelta can make, each kernel file's original
    /// journaled first; restored at the end of the next run, by
    /// `kdelta doctor --reset` or by `kdelta restore`.
    #[arg(long, conflicts_with = "reset")]
    pub(crate) apply: bool,
    /// Put back what `--apply` changed (replays the journal).
    #[arg(long)]
    pub(crate) reset: bool,
    /// The CPUs you will measure on (default: every CPU kdelta may use),
    /// for the IRQ and cpuidle checks.
    #[arg(long, value_name = "LIST", value_parser = doctor_cpus)]
    pub(crate) cpus: Option<CpuSet>,
}
