//! Statistics: summaries, comparisons and warnings. Pure functions, no I/O.

pub mod compare;
pub mod summary;
pub mod warnings;

pub use compare::{compare, geomean, CompareOptions, Comparison};
pub use summary::{summarize, Summary};
pub use warnings::Warning;
