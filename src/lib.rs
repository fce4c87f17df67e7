//! kdelta: a Linux performance lab. See ARCHITECTURE.md for the map.
//!
//! The crate is a binary first: [`main`] is all the command line needs. Every module is private and
//! its items `pub(crate)` unless named below; the public surface is what the integration tests and
//! the fuzz targets reach below the command line, gathered in [`fuzzing`] and [`testing`].
#![deny(unreachable_pub)]

mod app;
mod bench;
mod child;
mod cli;
mod config;
mod cpuset;
mod error;
mod harness;
mod measure;
mod model;
mod place;
mod report;
mod simulate;
mod stats;
mod store;
mod study;
mod sys;
mod topology;

pub use app::main;

/// The parsers of outside input, and what they need, for the fuzz targets in `fuzz/`.
pub mod fuzzing {
    pub use crate::bench::chat::proto::{decode, encoded, read_frame};
    pub use crate::bench::dbench::loadfile::{format_op, parse_bytes, parse_line};
    pub use crate::config::{resolve, split_list};
    pub use crate::cpuset::CpuSet;
    pub use crate::harness::journal::{Entries, MAX_BYTES, MAX_VALUE};
    pub use crate::model::params::{parse_bool, parse_duration, parse_size, scan_list};
    pub use crate::place::cli::flat;
    pub use crate::store::{check_header, APPLICATION_ID, SCHEMA_VERSION};
    pub use crate::topology::{Restriction, Topology};
}

/// What the integration tests in `tests/` drive below the command line: benchmarks measured
/// in-process through a sampler, and the routines and protocols their bars check.
pub mod testing {
    pub use crate::bench::build::BuildMake;
    pub use crate::bench::{find, Benchmark, Params};
    pub use crate::cpuset::CpuSet;
    pub use crate::measure::sampler::{Sampler, SamplerSettings};
    pub use crate::model::params::{expand, parse_size};
    pub use crate::sys::set_affinity;

    /// AIM9's tests, one by one.
    pub mod aim9 {
        pub use crate::bench::aim9::{benchmarks, runner::Ctx, TESTS};
    }
    /// The chat room's wire protocol, for hostile clients.
    pub mod chat {
        pub use crate::bench::chat::{limits::raise_nofile, proto};
    }
    /// The memory routines: naive, the C library's and the tuned ones.
    pub mod mem {
        pub use crate::bench::mem::tuned::{Tuned, Variant};
        pub use crate::bench::mem::{cache, libc_fns::Libc, naive, MemBench, Routine, SIZES};
    }
}
