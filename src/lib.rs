//! kdelta: a Linux performance lab. See ARCHITECTURE.md for the map.
//!
//! The crate is a binary first: [`main`] is all the command line needs. Every module is private and
//! its items `pub(crate)` unless named below; the public surface is what the integration tests and
//! the fuzz targets reach below the command line, gathered in [`fuzzing`] and [`testing`].
#![deny(unreachable_pub)]

/// `eprintln!` for the whole crate (it shadows std's in every module below):
/// a closed stderr (`kdelta study ... 2>&1 | head`) drops the message
/// instead of panicking, so a run goes on to its end.
macro_rules! eprintln {
    ($($t:tt)*) => {
        $crate::error::to_stderr(format_args!($($t)*))
    };
}

mod app;
mod bench;
mod child;
mod cli;
mod config;
mod cpuset;
mod doctor;
mod error;
mod fleet;
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
    pub use crate::store::{check_header, APPLICATION_ID, SCHEMA_VERSION};
    pub use crate::topology::flat;
    pub use crate::topology::{Restriction, Topology};
}

/// What the integration tests in `tests/` drive below the command line: benchmarks measured
/// in-process through a sampler, and the routines and protocols their bars check.
pub mod testing {
    pub use crate::bench::build::BuildMake;
    pub use crate::bench::{find, Benchmark, Params};
    pub use crate::cpuset::CpuSet;
    pub use crate::measure::profile::ProfileSettings;
    pub use crate::measure::sampler::{Sampler, SamplerSettings};
    pub use crate::model::params::{expand, parse_size};
    pub use crate::store::pg_testdb::TestDb;
    pub use crate::sys::set_affinity;

    /// AIM9's tests, one by one.
    pub mod aim9 {
        pub use crate::bench::aim9::{benchmarks, runner::Ctx, TESTS};
    }
    /// The chat room's wire protocol, for hostile clients.
    pub mod chat {
        pub use crate::bench::chat::{limits::raise_nofile, proto};
    }
    /// Stored runs written directly, for tests of the commands that read
    /// them (`kdelta check --run`, `kdelta history`): test data, never
    /// shown as measured.
    pub mod stored {
        use crate::model::record::{ResultRecord, RunRecord, RunStatus, Status};
        use crate::model::sample::Quality;
        use crate::model::{Better, Params};
        use std::path::Path;

        /// A clean result of `benchmark` (its family the name's first part)
        /// under `up` on CPU 0, unit `us`, lower is better, no parameters:
        /// the other fields come by struct update.
        pub(crate) fn ok_result(benchmark: &str, samples: &[f64]) -> ResultRecord {
            ResultRecord {
                benchmark: benchmark.into(),
                family: benchmark.split('.').next().unwrap_or_default().into(),
                params: Params::default(),
                config: "up".into(),
                cpus: "0".into(),
                unit: "us".into(),
                better: Better::Lower,
                status: Status::Ok,
                reason: None,
                samples: samples.to_vec(),
                samples_meta: vec![],
                quality: None,
                placement: vec![],
                below_resolution: None,
                summary: crate::stats::summarize(samples, false),
                iterations: None,
                extras: Default::default(),
                notes: vec![],
                warnings: vec![],
                simulated: false,
                profile: None,
            }
        }

        /// One result to store: a benchmark's samples at one point.
        #[derive(Debug, Clone, Default)]
        pub struct Result {
            pub benchmark: String,
            pub higher_is_better: bool,
            pub samples: Vec<f64>,
            /// The reason of a failed result (its samples are ignored).
            pub failed: Option<String>,
            /// Fewer clean samples than wanted: never marked significant.
            pub noisy: bool,
        }

        /// Store a complete run on host `host` (a host snapshot as JSON)
        /// with these results, in configuration `up`; its id.
        pub fn write_run(
            db: &Path,
            label: Option<&str>,
            host: serde_json::Value,
            results: &[Result],
        ) -> anyhow::Result<i64> {
            let mut store = crate::store::Store::open(db)?;
            let env = crate::model::environment::RunEnvironment::default();
            let run = RunRecord::begin(label.map(String::from), "kdelta run (test data)".into(), vec![], host, env);
            let id = store.begin_run(&run)?;
            for (i, r) in results.iter().enumerate() {
                store.add_result(id, i, &record(r))?;
            }
            store.finish_run(id, RunStatus::Complete, &Default::default())?;
            Ok(id)
        }

        fn record(r: &Result) -> ResultRecord {
            let samples = if r.failed.is_some() { Vec::new() } else { r.samples.clone() };
            let n = samples.len();
            ResultRecord {
                unit: "ms".into(),
                better: if r.higher_is_better { Better::Higher } else { Better::Lower },
                status: if r.failed.is_some() { Status::Failed } else { Status::Ok },
                reason: r.failed.clone(),
                quality: Some(Quality {
                    wanted: n + usize::from(r.noisy),
                    clean: n,
                    noisy: r.noisy,
                    ..Default::default()
                }),
                ..ok_result(&r.benchmark, &samples)
            }
        }

        /// One result of a run: every sample counts as clean.
        pub struct StoredResult<'a> {
            pub benchmark: &'a str,
            pub params: &'a [(&'a str, &'a str)],
            pub config: &'a str,
            pub samples: &'a [f64],
        }

        /// The run's own fields: its label, start time (RFC 3339, UTC) and the
        /// host snapshot's hostname and kernel release.
        pub struct StoredRun<'a> {
            pub label: Option<&'a str>,
            pub started: &'a str,
            pub hostname: &'a str,
            pub kernel: &'a str,
        }

        /// Store a complete run with `results` (unit `us`, lower is better) in
        /// the store at `db` (created if absent); returns its id.
        pub fn store_run(db: &std::path::Path, run: &StoredRun, results: &[StoredResult]) -> anyhow::Result<i64> {
            store_run_with_meta(db, run, &[], results)
        }

        /// As [`store_run`], the run carrying the metadata `meta`
        /// (`("commit", "abc123")`), taken as given.
        pub fn store_run_with_meta(
            db: &std::path::Path,
            run: &StoredRun,
            meta: &[(&str, &str)],
            results: &[StoredResult],
        ) -> anyhow::Result<i64> {
            let mut store = crate::store::Store::open(db)?;
            let mut rec = RunRecord::begin(
                run.label.map(str::to_string),
                "kdelta run (stored by a test)".into(),
                Vec::new(),
                serde_json::json!({"hostname": run.hostname, "kernel_release": run.kernel}),
                Default::default(),
            );
            rec.started = run.started.to_string();
            rec.meta = crate::model::meta::RunMeta(meta.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
            let id = store.begin_run(&rec)?;
            for (seq, r) in results.iter().enumerate() {
                store.add_result(id, seq, &result(r))?;
            }
            store.finish_run(id, RunStatus::Complete, &Default::default())?;
            Ok(id)
        }

        fn result(r: &StoredResult) -> ResultRecord {
            let mut params = Params::default();
            for (k, v) in r.params {
                params.set(k, *v);
            }
            ResultRecord { params, config: r.config.into(), ..ok_result(r.benchmark, r.samples) }
        }
    }
    /// The memory routines: naive, the C library's and the tuned ones.
    pub mod mem {
        pub use crate::bench::mem::tuned::{choose, cpu, rule::Vendor, Cpu, Tuned, Variant};
        pub use crate::bench::mem::{cache, libc_fns::Libc, naive, MemBench, Routine, SIZES};
    }
    /// The fake machines of every test (`/sys` and `/proc` trees below a
    /// `KDELTA_SYSFS_ROOT`), one copy for unit and integration tests alike.
    pub mod fake;
    /// The former name of [`fake`]'s writer and snapshot, for code in flight.
    pub mod fake_root {
        pub use super::fake::{snapshot, write};
    }
}
