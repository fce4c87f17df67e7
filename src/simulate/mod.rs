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
//! - [`summary`]: distributions and the result document; [`cli`]: the command.

pub(crate) mod cli;
pub(crate) mod engine;
pub(crate) mod policy;
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
use workload::loops::{Iteration, Loops, LoopsCfg};
use workload::make::{Make, MakeCfg};

/// `--smt-rate` default: Molnar's 2.55 s alone against 4.6 s on two siblings.
/// Later cores are typically nearer 0.68 (Nehalem-era) to 0.79 (recent cores
/// on integer code): two siblings together do 1.36x to 1.58x one alone.
pub(crate) const DEFAULT_SMT_RATE: f64 = 0.55;
/// `--cross-core-rate` default: 2.55 s alone against 2.60 s with the other
/// physical CPU busy (2.55 / 2.60, rounded).
pub(crate) const DEFAULT_CROSS_CORE_RATE: f64 = 0.98;

#[derive(Debug, Clone, Copy, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub(crate) enum WorkloadCfg {
    Loops(LoopsCfg),
    Make(MakeCfg),
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
