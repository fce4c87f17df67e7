//! `kdelta check`'s arguments.

use super::parse::{drift, max_regression};
use super::run::RunArgs;
use clap::Args;

/// `kdelta check`: the run options of `kdelta run`, a baseline, and the limit.
#[derive(Args, Debug)]
pub(crate) struct CheckArgs {
    /// The baseline: a run id, or a label (its newest run).
    #[arg(long, value_name = "RUN|LABEL", required_unless_present = "within")]
    pub(crate) against: Option<String>,

    /// No stored baseline: judge what the run compares (its --config
    /// values, a --param's values, its --cmd commands), each against the
    /// first, measured interleaved in the same run.
    #[arg(long, conflicts_with_all = ["against", "any_host"])]
    pub(crate) within: bool,

    /// Judge this stored run (an id or a label) instead of running; the
    /// selectors, if given, pick its rows.
    #[arg(long = "run", value_name = "RUN|LABEL")]
    pub(crate) stored: Option<String>,

    /// The slowdown allowed, in percent, in each benchmark's direction: a
    /// row regresses when its change is significant and worse than this.
    /// Default: the noise threshold (--threshold).
    #[arg(long, value_name = "PCT", value_parser = max_regression)]
    pub(crate) max_regression: Option<f64>,

    /// With --against: the slowdown allowed beyond --max-regression, in
    /// percent, for how far a machine's speed drifts between two runs
    /// (on a VM an unchanged command read up to 1.7 % slower than its
    /// baseline of minutes before, its reference loops steady;
    /// docs/check.md). 0 judges a stored run as if it were measured now.
    #[arg(long, value_name = "PCT", requires = "against", conflicts_with = "within", value_parser = drift,
          default_value_t = crate::stats::defaults::DRIFT_PCT)]
    pub(crate) drift: f64,

    /// With --against: the baseline's build as a command (cmd family).
    /// When the stored baseline cannot tell (the machine's speed moved
    /// since, or during a run; a change within --drift), measure this
    /// again, interleaved with the --cmd command, and judge the two as
    /// --within does, rather than answer 125.
    #[arg(long, value_name = "COMMAND", requires = "against", conflicts_with_all = ["within", "stored"])]
    pub(crate) baseline_cmd: Option<String>,

    /// Judge against a baseline measured on another machine (different CPU
    /// model, topology, memory or architecture).
    #[arg(long)]
    pub(crate) any_host: bool,

    #[command(flatten)]
    pub(crate) run: RunArgs,
}
