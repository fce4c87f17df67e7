//! Statistics: summaries, comparisons and warnings. Pure functions, no I/O.

pub mod compare;
pub mod modes;
pub mod paired;
pub mod rounds;
pub mod summary;
pub mod trust;
pub mod warnings;

pub use compare::{compare, compare_sides, geomean, CompareOptions, Comparison, Side, Withheld};
pub use summary::{summarize, Summary};
pub use warnings::Warning;
