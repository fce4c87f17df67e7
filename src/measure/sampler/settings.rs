//! How the parent wants a worker to sample (`SamplerSettings`, sent in its job).

use super::*;

/// How the parent wants this worker to sample.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SamplerSettings {
    pub samples: usize,
    /// Target duration of one sample.
    pub target: Duration,
    /// Minimum warm-up before the first sample (at least one call of the
    /// calibrated loop).
    #[serde(default = "default_warmup")]
    pub warmup: Duration,
    /// `--warmup N`: untimed runs a whole-run benchmark makes first
    /// ([`Sampler::warmup_runs`]).
    #[serde(default)]
    pub warmup_runs: Option<u64>,
    /// The warm-up may end before `warmup` once the loop's time has
    /// settled ([`SETTLE_MIN`] at least): the default warm-up, not one the
    /// user gave.
    #[serde(default)]
    pub warmup_settles: bool,
    /// The worker's time limit for this point, when the harness set one
    /// ([`Sampler::time_left`]).
    #[serde(default)]
    pub time_limit: Option<Duration>,
    pub quick: bool,
    /// Iteration count found by an earlier worker for the same benchmark and
    /// parameters; reused so every round of every configuration times the same work.
    pub iterations: Option<u64>,
    pub tmpdir: PathBuf,
    /// Last-level cache size from sysfs, for benchmarks sized relative to it.
    pub llc_bytes: Option<u64>,
    /// Take disturbed samples again (the harness always does; direct calls
    /// from tests do not, so they get exactly the samples they ask for).
    #[serde(default = "yes")]
    pub retake: bool,
    /// How long a whole-run sample that follows a disturbed one waits for
    /// the worker's CPUs to go quiet ([`Sampler::begin_sample`]); zero
    /// (direct calls, old job files) never waits.
    #[serde(default)]
    pub quiet_wait: Duration,
    /// The last sample of one of this worker's points, in an earlier
    /// worker, was disturbed (a retake's always was): its first whole-run
    /// sample waits for quiet too.
    #[serde(default)]
    pub quiet_first: bool,
    /// Who answers for the directories the benchmark makes outside `tmpdir`
    /// ([`Sampler::owned_dir`]): the harness; `None`, this process.
    #[serde(default)]
    pub owner: Option<crate::measure::owned::Owner>,
    /// Count perf events of the measured tasks in every sample
    /// (`--counters`; `SampleMeta::counters`).
    #[serde(default)]
    pub counters: bool,
    /// The `cpu.stat` of the worker's cgroup when its configuration limits
    /// the CPU: each sample records its throttling (`SampleMeta::throttling`).
    #[serde(default)]
    pub cpu_stat: Option<PathBuf>,
    /// `--profile`: after the measured samples, take profiled ones apart
    /// ([`crate::measure::profile`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::measure::profile::ProfileSettings>,
}

pub(super) fn yes() -> bool {
    true
}

impl SamplerSettings {
    /// Settings for calling a benchmark directly, outside the harness (tests,
    /// measurement helpers): a 2 ms target, no warm-up, quick, no calibration
    /// carried over, LLC unknown. Change fields with struct update syntax.
    pub fn direct(samples: usize, tmpdir: impl Into<PathBuf>) -> Self {
        SamplerSettings {
            samples,
            target: Duration::from_millis(2),
            warmup: Duration::ZERO,
            warmup_runs: None,
            warmup_settles: false,
            time_limit: None,
            quick: true,
            iterations: None,
            tmpdir: tmpdir.into(),
            llc_bytes: None,
            retake: false,
            quiet_wait: Duration::ZERO,
            quiet_first: false,
            owner: None,
            counters: false,
            cpu_stat: None,
            profile: None,
        }
    }
}

/// The shortest warm-up that may end early, and how close the last
/// [`SETTLE_CALLS`] calls of the loop must agree (max over min) for it to.
pub(crate) const SETTLE_MIN: Duration = Duration::from_millis(30);
pub(crate) const SETTLE_CALLS: usize = 3;
pub(crate) const SETTLE_SPREAD: f64 = 0.02;

/// Whether a warm-up's call times (oldest first) have settled: the last
/// [`SETTLE_CALLS`] within [`SETTLE_SPREAD`] of each other, and the newest
/// no faster than the others by more than that (not still speeding up).
pub(crate) fn settled(secs: &[f64]) -> bool {
    if secs.len() < SETTLE_CALLS {
        return false;
    }
    let last = &secs[secs.len() - SETTLE_CALLS..];
    let (lo, hi) = last.iter().fold((f64::INFINITY, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
    lo > 0.0 && hi / lo - 1.0 <= SETTLE_SPREAD
}

pub(super) fn default_warmup() -> Duration {
    Duration::from_millis(100)
}
