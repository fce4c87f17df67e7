//! The SMT scheduler simulator (`kdelta simulate`).
//!
//! A discrete-event model of tasks on a machine of packages x cores x SMT
//! threads, where two busy siblings slow each other down (rate `s`), used to
//! re-create Ingo Molnar's 2002 HT-aware scheduler experiment and to ask what
//! a placement policy would do on a given topology.
//!
//! - [`shape`]: the topology (`--topology 2x1x2`).
//! - [`engine`]: the event loop and rate model, independent of policies.
//! - [`policy`]: `stock-2002`, `ht-aware-2002`, `modern`.
//! - [`workload`]: `loops` and `make`.
//! - [`summary`]: distributions and the result document; [`render`]: its text and JSON.
//!
//! The command's arguments are `cli::SimulateArgs`; `app::simulate` runs it.

pub(crate) mod engine;
pub(crate) mod policy;
pub(crate) mod render;
pub(crate) mod shape;
pub(crate) mod state;
pub(crate) mod summary;
pub(crate) mod workload;

#[cfg(test)]
mod tests;

use engine::{Counters, Engine, EngineCfg, Segment};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use shape::Shape;
use std::time::Instant;
use summary::{summarize, PolicyResult};
use workload::loops::{Iteration, Loops, LoopsCfg};
use workload::make::{Make, MakeCfg};

/// `--smt-rate` default: Molnar's 2.55 s alone against 4.6 s on two siblings.
/// Later cores are typically nearer 0.68 (Nehalem-era) to 0.79 (recent cores
/// on integer code): two siblings together do 1.36x to 1.58x one alone.
pub(crate) const DEFAULT_SMT_RATE: f64 = 0.55;
/// `--cross-core-rate` default: 2.55 s alone against 2.60 s with the other
/// physical CPU busy (2.55 / 2.60, rounded).
pub(crate) const DEFAULT_CROSS_CORE_RATE: f64 = 0.98;
/// `--balance-ms` default: the balance interval, milliseconds.
pub(crate) const DEFAULT_BALANCE_MS: f64 = 4.0;
/// `--timeslice-ms` default: the time slice, milliseconds.
pub(crate) const DEFAULT_TIMESLICE_MS: f64 = 100.0;
/// `--jitter` default: the relative spread of a loop's work per iteration.
pub(crate) const DEFAULT_JITTER: f64 = 0.01;
/// `--seed` default.
pub(crate) const DEFAULT_SEED: u64 = 1;

#[derive(Debug, Clone, Copy, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub(crate) enum WorkloadCfg {
    Loops(LoopsCfg),
    Make(MakeCfg),
}

impl Default for EngineCfg {
    /// The rates and intervals `kdelta simulate` takes when none are given.
    fn default() -> EngineCfg {
        EngineCfg {
            smt_rate: DEFAULT_SMT_RATE,
            cross_core_rate: DEFAULT_CROSS_CORE_RATE,
            timeslice: DEFAULT_TIMESLICE_MS / 1e3,
            balance: DEFAULT_BALANCE_MS / 1e3,
        }
    }
}

impl WorkloadCfg {
    /// Seeded repetitions when `--reps` is not given: one of the loops (each
    /// already many iterations), ten builds.
    pub(crate) fn default_reps(&self) -> usize {
        match self {
            WorkloadCfg::Loops(_) => 1,
            WorkloadCfg::Make(_) => 10,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct SimConfig {
    pub(crate) shape: Shape,
    pub(crate) engine: EngineCfg,
    pub(crate) policy: policy::PolicyName,
    pub(crate) workload: WorkloadCfg,
    pub(crate) seed: u64,
    pub(crate) reps: usize,
    pub(crate) trace: bool,
}

/// One repetition's outcome.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RepResult {
    pub(crate) rep: usize,
    /// Simulated time when the last task exited, seconds.
    pub(crate) makespan: f64,
    pub(crate) counters: Counters,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) iterations: Vec<Iteration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) trace: Option<Vec<Segment>>,
}

/// A seeded generator for one purpose of one repetition. The workload stream
/// does not depend on the policy, so policies are compared on the same work.
pub(crate) fn rng_for(seed: u64, rep: usize, stream: u64) -> ChaCha8Rng {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    r.set_stream(rep as u64 * 4 + stream);
    r
}

/// Run one repetition.
pub(crate) fn run_rep(cfg: &SimConfig, rep: usize) -> anyhow::Result<RepResult> {
    let policy = policy::make(cfg.policy, cfg.shape.ncpus(), cfg.shape.ncores());
    let trace = cfg.trace && rep == 0;
    let mut eng = Engine::new(cfg.shape, cfg.engine, policy, rng_for(cfg.seed, rep, 1), trace);
    let wl_rng = rng_for(cfg.seed, rep, 0);
    let plan_rng = rng_for(cfg.seed, 0, 2);
    let (makespan, iterations) = match cfg.workload {
        WorkloadCfg::Loops(l) => {
            let mut w = Loops::new(l, wl_rng);
            let end = eng.run(&mut w);
            (end, w.done)
        }
        WorkloadCfg::Make(m) => {
            let mut w = Make::new(m, plan_rng, wl_rng);
            let end = eng.run(&mut w);
            (end, Vec::new())
        }
    };
    Ok(RepResult { rep, makespan, counters: eng.counters, iterations, trace: eng.trace })
}

/// Run all repetitions of one configuration.
pub(crate) fn run(cfg: &SimConfig) -> anyhow::Result<Vec<RepResult>> {
    (0..cfg.reps.max(1)).map(|r| run_rep(cfg, r)).collect()
}

/// Run every requested policy.
pub(crate) fn simulate_all(
    cfg: &SimConfig,
    policies: &[policy::PolicyName],
    bench_speed: bool,
) -> anyhow::Result<Vec<PolicyResult>> {
    let mut out = Vec::new();
    for p in policies {
        let mut c = cfg.clone();
        c.policy = *p;
        let t0 = Instant::now();
        let reps = run(&c)?;
        let mut res = summarize(&c, p.as_str(), reps, t0.elapsed().as_secs_f64(), c.trace);
        if bench_speed {
            // Re-run (without trace) until a second has passed, for a steadier rate.
            c.trace = false;
            let (mut ev, t1) = (0u64, Instant::now());
            while t1.elapsed().as_secs_f64() < 1.0 {
                ev += run(&c)?.iter().map(|r| r.counters.events).sum::<u64>();
            }
            res.wall_seconds = t1.elapsed().as_secs_f64();
            res.events = ev;
            res.events_per_sec = ev as f64 / res.wall_seconds;
        }
        out.push(res);
    }
    Ok(out)
}
