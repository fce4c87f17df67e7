//! Statistics: summaries, comparisons and warnings. Pure functions, no I/O.

pub(crate) mod changepoint;
pub(crate) mod compare;
pub(crate) mod modes;
pub(crate) mod paired;
pub(crate) mod profile_shift;
pub(crate) mod rounds;
pub(crate) mod speeds;
pub(crate) mod speedup;
pub(crate) mod summary;
pub(crate) mod trust;
pub(crate) mod verdict;
pub(crate) mod warnings;

pub(crate) use compare::{compare_sides, geomean, CompareOptions, Comparison, Side, Withheld};
pub(crate) use summary::summarize;
pub(crate) use warnings::Warning;
