//! Statistics: summaries, comparisons and warnings. Pure functions, no I/O.

pub(crate) mod changepoint;
pub(crate) mod compare;
pub(crate) mod modes;
pub(crate) mod paired;
pub(crate) mod profile_shift;
pub(crate) mod rounds;
pub(crate) mod run_modes;
pub(crate) mod speeds;
pub(crate) mod speedup;
pub(crate) mod summary;
pub(crate) mod trust;
pub(crate) mod verdict;
pub(crate) mod warnings;

/// The statistical defaults, written once: the command line's
/// `default_value_t`, [`CompareOptions::default`], the change points'
/// options and the requests a study makes all read them here.
pub(crate) mod defaults {
    /// `--threshold`: the noise threshold of a star, in percent.
    pub(crate) const THRESHOLD_PCT: f64 = 1.0;
    /// `--ci-target`: how narrow a result compared with nothing refines its
    /// median's interval, in percent.
    pub(crate) const CI_TARGET_PCT: f64 = 1.0;
    /// The significance level of every test (`--alpha` of `history`).
    pub(crate) const ALPHA: f64 = 0.05;
    /// `history --min-segment`: fewest runs on each side of a change point.
    pub(crate) const MIN_SEGMENT: usize = 5;
    /// `history --permutations`: shuffles of the change-point test.
    pub(crate) const PERMUTATIONS: usize = 199;
    /// How far one command's speed moved between runs of an identical build
    /// with both reference loops steady: against a stored run, `check` allows
    /// this much more than `--max-regression` (its `--drift`). On the AMD EPYC
    /// (Zen 4) VM of docs/verdicts.md (eighth series), an unchanged command
    /// read -0.2 % to +1.7 % slower than its baseline 12-14 minutes old, over
    /// 15 runs, its reference loops within 0.5 %; a build 3 % slower read
    /// +3.0 % to +6.4 %.
    pub(crate) const DRIFT_PCT: f64 = 2.0;
    /// The limit `check --against` judges within by default (`--max-regression`
    /// at the threshold, plus `--drift`): a run whose reference loops moved more
    /// while it ran is judged against only at 2x, and `run` warns of it.
    pub(crate) const AGAINST_LIMIT_PCT: f64 = THRESHOLD_PCT + DRIFT_PCT;
    /// A change of 2x, on the log scale: more than disturbance, drift between
    /// rounds or a machine that changed speed explains (another task on a
    /// CPU takes at most half of it; a worker's two speeds here differ by
    /// 60 % at most), so those rules never withhold a star from it.
    pub(crate) const LARGE_CHANGE_LN: f64 = std::f64::consts::LN_2;
}

pub(crate) use compare::{compare_sides, geomean, CompareOptions, Comparison, Side, Withheld};
pub(crate) use summary::summarize;
pub(crate) use warnings::Warning;
