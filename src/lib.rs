//! kdelta: a Linux performance lab. See ARCHITECTURE.md for the map.

pub mod bench;
pub mod cpuset;
pub mod error;
pub mod harness;
pub mod place;
pub mod simulate;
pub mod topology;
