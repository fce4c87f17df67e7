//! The `place` family: `place.loops`, `kdelta place` as a benchmark, so a
//! study (sched-2002) can measure Molnar's loops experiment for real, in a
//! worker like any other point, stored and resumable. One sample is one
//! `kdelta place` run (`crate::place::runner`): `loops` concurrent loops of
//! `iterations` built-in CPU-bound jobs of `work` million rounds each, every
//! job a new process placed by the policy (`naive`: a random logical CPU,
//! `smt-aware`: an idle core first, `kernel`: no pinning). The figure is the
//! mean wall time of one job, seconds (Molnar's "time per loop").
//!
//! The placement uses the CPUs the worker may use (its configuration's
//! affinity), read from the live topology as `kdelta place` does. The work
//! is a fixed number of rounds, not calibrated per worker, so every policy
//! and configuration times the same work. The share of samples in which
//! two loops shared a core while another core ran none is stored per sample
//! (`shared_pct`); without SMT the result says what the policies mean here.

use super::{BenchInfo, Benchmark, Better, ParamKind, ParamSpec, Params, Sampler};
use crate::place::runner::{self, Job, PlacePolicy, RunCfg};
use anyhow::{Context, Result};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

pub(crate) const FAMILY: super::Family =
    super::Family { benchmarks, summary: None, server: None, command: None, run_flags: &[] };

pub(crate) fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    vec![Box::new(PlaceLoops)]
}

crate::model::params::choice! {
    /// `policy=`: where each new process of a loop goes (`kdelta place --policy`).
    pub(crate) enum Policy { Naive = "naive", SmtAware = "smt-aware", Kernel = "kernel" }
}

impl Policy {
    fn runner(self) -> PlacePolicy {
        match self {
            Policy::Naive => PlacePolicy::Naive,
            Policy::SmtAware => PlacePolicy::SmtAware,
            Policy::Kernel => PlacePolicy::Kernel,
        }
    }
}

/// What placement means without SMT siblings, said on every such result.
pub(crate) const NO_SMT_NOTE: &str = "no SMT here (no core has two logical CPUs): smt-aware's \"an idle core first\" is \"an idle CPU first\" and it has no siblings to avoid, so naive against smt-aware measures loops doubled up on one CPU against spread over the CPUs, not a shared core's siblings";

struct PlaceParams {
    policy: Policy,
    loops: usize,
    iterations: usize,
    /// Rounds of the built-in job.
    rounds: u64,
}

impl PlaceParams {
    fn from(p: &Params) -> Result<Self> {
        Ok(PlaceParams {
            policy: p.choice::<Policy>("policy")?,
            loops: p.usize("loops")?,
            iterations: p.usize("iterations")?,
            rounds: p.u64("work")? * 1_000_000,
        })
    }
}

pub(crate) struct PlaceLoops;

impl Benchmark for PlaceLoops {
    fn info(&self) -> BenchInfo {
        BenchInfo::new("place.loops", "concurrent loops of a CPU-bound job, each job a new process placed by a policy (kdelta place): mean wall seconds of one job", "s", Better::Lower)
            .param(ParamSpec::new("policy", ParamKind::choice::<Policy>(), "naive,smt-aware,kernel", "placement: naive (a random logical CPU), smt-aware (an idle core first), kernel (no pinning)"))
            .param(ParamSpec::new("loops", ParamKind::Int { min: 1, max: 256 }, "2", "concurrent loops (Molnar's experiment: 2)"))
            .param(ParamSpec::new("iterations", ParamKind::Int { min: 1, max: 10_000 }, "4", "jobs per loop in one sample").quick("2"))
            .param(ParamSpec::new("work", ParamKind::Int { min: 1, max: 1_000_000 }, "100", "million rounds of the built-in job (100: about a second on a 2020s core)").quick("50"))
            .samples(5, 3)
            .timeout(Duration::from_secs(1800))
    }

    fn check(&self, p: &Params) -> Result<()> {
        PlaceParams::from(p).map(drop)
    }

    fn run(&self, p: &Params, s: &mut Sampler) -> Result<()> {
        let PlaceParams { policy, loops, iterations, rounds } = PlaceParams::from(p)?;
        let (topo, guessed) = crate::place::live::live_topology();
        let smt = crate::place::live::smt_known(&topo, guessed.is_some());
        if let Some(g) = guessed {
            s.note(g);
        }
        match smt {
            Some(false) => s.note(NO_SMT_NOTE),
            None => s.note("SMT siblings unknown here: core sharing is counted per logical CPU"),
            Some(true) => {}
        }
        s.extra("smt_present", smt);
        s.extra("cpus", topo.online.to_string());
        // Nothing raises it: a Ctrl-C of kdelta kills the worker's process
        // group, and the runner's children die with the worker.
        let stop = AtomicBool::new(false);
        // A new seed per sample, so naive's random choices are sampled, not repeated.
        let seed0 = crate::sys::clock::unix_now().to_bits() ^ u64::from(std::process::id());
        for i in 0..s.samples_wanted() {
            let cfg = RunCfg {
                policy: policy.runner(),
                loops,
                iterations,
                job: Job::Builtin { rounds },
                seed: seed0.wrapping_add(i as u64),
                sample: Duration::from_millis(10),
            };
            s.begin_sample();
            let t0 = Instant::now();
            let rep = runner::run(&topo, &cfg, &stop).context("running the loops")?;
            let elapsed = t0.elapsed();
            let failed = rep.iterations.iter().filter(|r| !r.ok).count();
            if failed > 0 {
                anyhow::bail!("{failed} of {} jobs of the built-in job failed", rep.iterations.len());
            }
            let times: Vec<f64> = rep.iterations.iter().map(|r| r.seconds).collect();
            if times.is_empty() {
                anyhow::bail!("no job finished");
            }
            s.push(times.iter().sum::<f64>() / times.len() as f64, elapsed);
            let shared = if rep.samples > 0 { rep.shared_samples as f64 * 100.0 / rep.samples as f64 } else { 0.0 };
            s.part("shared_pct", shared);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::sampler::SamplerSettings;
    use crate::model::params::expand;
    use std::collections::BTreeMap;

    #[test]
    fn every_policy_gives_one_figure_per_sample() {
        let info = PlaceLoops.info();
        let o: BTreeMap<String, String> =
            [("work", "1"), ("iterations", "2")].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let pts = expand(&info.params, &o, true, info.name).unwrap();
        assert_eq!(pts.len(), 3, "one point per policy");
        for p in &pts {
            let t = tempfile::tempdir().unwrap();
            let mut s = Sampler::new(SamplerSettings::direct(2, t.path()));
            PlaceLoops.run(p, &mut s).unwrap();
            let out = s.finish();
            assert_eq!(out.samples.len(), 2);
            assert!(out.samples.iter().all(|v| *v > 0.0));
            assert_eq!(out.parts["shared_pct"].len(), 2);
        }
    }

    #[test]
    fn bad_parameters_are_refused_by_the_plan() {
        let info = PlaceLoops.info();
        for (k, v) in [("policy", "random"), ("loops", "0"), ("work", "x")] {
            let o: BTreeMap<String, String> = [(k.to_string(), v.to_string())].into();
            assert!(expand(&info.params, &o, false, info.name).is_err(), "{k}={v}");
        }
    }
}
