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
}

pub(crate) use compare::{compare_sides, geomean, CompareOptions, Comparison, Side, Withheld};
pub(crate) use summary::summarize;
pub(crate) use warnings::Warning;
