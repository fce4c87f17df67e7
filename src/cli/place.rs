//! `kdelta place`'s arguments.

use crate::model::fmt::TextOrJson;
use crate::place::runner::PlacePolicy;
use crate::place::session::Request;

/// Run N concurrent loops of a command (or a built-in CPU-bound job), each
/// iteration a new process placed by a policy; report wall times and core sharing.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct PlaceArgs {
    /// Placement policy: naive (random logical CPU), smt-aware (idle core first), kernel (no pinning).
    #[arg(long, value_enum, default_value_t = PlacePolicy::SmtAware)]
    pub(crate) policy: PlacePolicy,
    /// Number of concurrent loops.
    #[arg(short = 'n', long = "loops", default_value_t = 2)]
    pub(crate) loops: usize,
    /// Iterations per loop.
    #[arg(long, default_value_t = 5)]
    pub(crate) iterations: usize,
    /// Measure the SMT rate s (one job alone against two on the siblings of one core) instead.
    #[arg(long)]
    pub(crate) measure_smt_rate: bool,
    /// Seed for the naive policy's random choices.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = TextOrJson::Text)]
    pub(crate) format: TextOrJson,
    /// Length of the built-in job, milliseconds (for tests).
    #[arg(long, default_value_t = 1000, hide = true)]
    pub(crate) job_ms: u64,
    /// Sampling period of /proc/PID/stat, milliseconds.
    #[arg(long, default_value_t = 10, hide = true)]
    pub(crate) sample_ms: u64,
    /// The command to loop (after `--`); without it, the built-in job.
    #[arg(last = true)]
    pub(crate) cmd: Vec<String>,
}

impl PlaceArgs {
    /// What to run, as `place::session` takes it (checked there).
    pub(crate) fn request(&self) -> Request {
        Request {
            policy: self.policy,
            loops: self.loops,
            iterations: self.iterations,
            seed: self.seed,
            job_ms: self.job_ms,
            sample_ms: self.sample_ms,
            cmd: self.cmd.clone(),
        }
    }
}
