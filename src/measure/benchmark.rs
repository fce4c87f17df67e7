//! What a benchmark is to the harness: its description ([`BenchInfo`]), the
//! [`Benchmark`] trait it implements, and [`Simple`], a benchmark made of two
//! functions. The registry of families lives in `bench/`; the harness is
//! handed the benchmarks and never names one.

use super::sampler::Sampler;
use crate::model::{Better, ParamSpec, Params};
use std::time::Duration;

/// A benchmark's description of itself.
#[derive(Debug, Clone)]
pub struct BenchInfo {
    /// Full name, `family.rest` (`lat.syscall`).
    pub name: &'static str,
    /// Family, the part before the first dot (`lat`).
    pub(crate) family: &'static str,
    /// One line: what one operation is.
    pub(crate) summary: &'static str,
    /// Unit of the figure (`us`, `MB/s`, `ops/s`, `msg/s`).
    pub unit: &'static str,
    pub(crate) better: Better,
    pub params: Vec<ParamSpec>,
    /// Wall-clock limit for one worker invocation (calibration, warm-up and the
    /// samples it takes); past it the worker is killed and the result fails.
    pub(crate) timeout: Duration,
    /// Samples per result by default and under `--quick` (`--runs` overrides).
    pub samples: usize,
    pub(crate) quick_samples: usize,
    /// Former names (stored runs under them compare with this one, and
    /// `find` and selectors take them).
    pub(crate) aliases: Vec<&'static str>,
    /// Its points may share a worker, each on a thread of its own, taking
    /// turns sample by sample (`sampler::turns`): the values a user compares
    /// then see the same moments of a machine whose speed moves. Only for a
    /// `run` that is self-contained: no fork, signal handler, process-wide
    /// setting or other thread of its own.
    pub(crate) lockstep: bool,
    /// It takes parameters it does not declare (`--param t=1,2`), each swept
    /// as a comma-separated list: the placeholders of a user's command.
    pub(crate) open: bool,
}

impl BenchInfo {
    /// A description with the defaults most micro-benchmarks want: 10 samples,
    /// 3 under `--quick`, a 60 s limit per worker.
    pub fn new(name: &'static str, summary: &'static str, unit: &'static str, better: Better) -> Self {
        let family = name.split('.').next().unwrap_or(name);
        BenchInfo {
            name,
            family,
            summary,
            unit,
            better,
            params: Vec::new(),
            timeout: Duration::from_secs(60),
            samples: 10,
            quick_samples: 3,
            aliases: Vec::new(),
            lockstep: false,
            open: false,
        }
    }
    /// A former name of this benchmark.
    pub fn alias(mut self, old: &'static str) -> Self {
        self.aliases.push(old);
        self
    }
    /// True for its name or one of its former names.
    pub fn is_named(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }
    /// Its points may take turns in one worker ([`BenchInfo::lockstep`]).
    pub fn lockstep(mut self) -> Self {
        self.lockstep = true;
        self
    }
    /// It takes undeclared parameters ([`BenchInfo::open`]).
    pub(crate) fn open(mut self) -> Self {
        self.open = true;
        self
    }
    pub fn param(mut self, p: ParamSpec) -> Self {
        self.params.push(p);
        self
    }
    /// Its options with their defaults, as (name, default): what text
    /// leaves unsaid (`Params::display_set`).
    pub(crate) fn option_defaults(&self) -> Vec<(&'static str, &'static str)> {
        self.params.iter().filter(|p| p.option).map(|p| (p.name, p.default)).collect()
    }
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }
    pub fn samples(mut self, full: usize, quick: usize) -> Self {
        self.samples = full;
        self.quick_samples = quick;
        self
    }
}

/// Why this machine cannot run a benchmark, or one of its parameter points:
/// one line, listed by `kdelta list` and stored as the point's reason.
#[derive(Debug, thiserror::Error)]
pub enum Unsupported {
    /// A program the benchmark runs is not on this machine (`/bin/sh`).
    #[error("{0} is missing")]
    Missing(&'static str),
    /// The CPU topology, which [`Env`] carries, could not be read.
    #[error("the CPU topology could not be read")]
    NoTopology,
    /// A parameter the answer depends on does not parse (the point's
    /// `check` refuses it as bad input before anything runs).
    #[error("{0}")]
    Param(anyhow::Error),
    /// The family's own reason (a program kdelta was built without, a
    /// missing tool, a CPU that lacks an instruction set).
    #[error(transparent)]
    Family(Box<dyn std::error::Error + Send + Sync>),
}

impl Unsupported {
    /// A family's own reason.
    pub(crate) fn family(e: impl std::error::Error + Send + Sync + 'static) -> Unsupported {
        Unsupported::Family(Box::new(e))
    }
}

/// What a benchmark may look at to decide whether it runs here.
pub struct Env<'a> {
    pub topology: &'a crate::topology::Topology,
}

pub trait Benchmark: Send + Sync {
    fn info(&self) -> BenchInfo;

    /// `Err(reason)` when this machine cannot run it (a missing tool, device or
    /// permission). Unsupported benchmarks are listed, skipped and recorded as
    /// unavailable, never failed.
    fn supported(&self, _env: &Env) -> Result<(), Unsupported> {
        Ok(())
    }

    /// [`supported`](Self::supported) for one parameter point, for a
    /// benchmark whose parameters choose what it needs (the program
    /// `lat.proc.exec` starts): that point is recorded as unavailable, the
    /// others run. By default, the benchmark's own answer.
    fn supported_at(&self, env: &Env, _params: &Params) -> Result<(), Unsupported> {
        self.supported(env)
    }

    /// Validate one parameter point before anything runs (parse and check a
    /// loadfile, check a path or address). Return [`crate::error::bad_input`]
    /// for the user's mistakes: they exit 2 before the run starts.
    fn check(&self, _params: &Params) -> anyhow::Result<()> {
        Ok(())
    }

    /// Bytes of memory this parameter point's buffers take, when the
    /// parameters alone tell (`None`: unknown or small). The harness refuses
    /// a point needing more than the machine can give, before anything runs.
    fn memory(&self, _params: &Params) -> Option<u64> {
        None
    }

    /// A line printed before the run starts for this parameter point (for
    /// example the message counts a chat run will exchange), so a user can
    /// check the work before waiting for it.
    fn preamble(&self, _params: &Params) -> Option<String> {
        None
    }

    /// Run once for this parameter point in the parent, before the first
    /// worker of the whole run (every point's, in the plan's order, before
    /// any is measured or stored), with the parent's working directory and
    /// environment: set-up that every worker of every configuration shares
    /// (`cmd`'s `--setup-once`). An error ends the run before it starts.
    fn before_run(&self, _params: &Params) -> anyhow::Result<()> {
        Ok(())
    }

    /// Run once for this parameter point in the parent after the last
    /// worker of the run has ended, also when the run failed or was
    /// interrupted, for every point whose [`before_run`](Self::before_run)
    /// succeeded. An error is reported, not fatal: the results are kept.
    fn after_run(&self, _params: &Params) -> anyhow::Result<()> {
        Ok(())
    }

    /// Measure, inside the worker process (the configuration is already
    /// applied). Take `s.samples_wanted()` samples, through
    /// [`Sampler::measure`] for loops of a primitive or [`Sampler::push`] for
    /// whole runs. Temporary files go under `s.tmpdir()`, which the harness
    /// removes even if the worker is killed.
    fn run(&self, params: &Params, s: &mut Sampler) -> anyhow::Result<()>;
}

/// A benchmark made of two plain functions, for the many primitives that need
/// no state of their own.
pub(crate) struct Simple {
    info: fn() -> BenchInfo,
    run: fn(&Params, &mut Sampler) -> anyhow::Result<()>,
    supported: fn() -> Result<(), Unsupported>,
    memory: fn(&Params) -> Option<u64>,
}

impl Simple {
    pub(crate) fn boxed(
        info: fn() -> BenchInfo,
        run: fn(&Params, &mut Sampler) -> anyhow::Result<()>,
    ) -> Box<dyn Benchmark> {
        Box::new(Simple { info, run, supported: || Ok(()), memory: |_| None })
    }
    /// A benchmark whose buffers' size its parameters tell ([`Benchmark::memory`]).
    pub(crate) fn boxed_sized(
        info: fn() -> BenchInfo,
        run: fn(&Params, &mut Sampler) -> anyhow::Result<()>,
        memory: fn(&Params) -> Option<u64>,
    ) -> Box<dyn Benchmark> {
        Box::new(Simple { info, run, supported: || Ok(()), memory })
    }
}

impl Benchmark for Simple {
    fn info(&self) -> BenchInfo {
        (self.info)()
    }
    fn supported(&self, _env: &Env) -> Result<(), Unsupported> {
        (self.supported)()
    }
    fn memory(&self, params: &Params) -> Option<u64> {
        (self.memory)(params)
    }
    fn run(&self, params: &Params, s: &mut Sampler) -> anyhow::Result<()> {
        (self.run)(params, s)
    }
}
