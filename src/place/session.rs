//! One `kdelta place`: its request checked, the loops run on a topology,
//! and the result (or the SMT rate measured instead).

use super::job;
use super::live::smt_known;
use super::runner::{self, Job, PlacePolicy, RunCfg, RunReport};
use crate::error::bad_input;
use crate::simulate::summary::{histogram, Bin, Dist};
use crate::topology::Topology;
use serde::Serialize;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// What one `kdelta place` is asked to do (`cli::PlaceArgs` in its final type).
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) policy: PlacePolicy,
    pub(crate) loops: usize,
    pub(crate) iterations: usize,
    pub(crate) seed: u64,
    pub(crate) job_ms: u64,
    pub(crate) sample_ms: u64,
    /// The command to loop; empty for the built-in job.
    pub(crate) cmd: Vec<String>,
}

#[derive(Debug, Serialize)]
pub(crate) struct PlaceResult {
    pub(crate) policy: PlacePolicy,
    pub(crate) loops: usize,
    pub(crate) iterations_per_loop: usize,
    pub(crate) job: String,
    /// Whether the machine has SMT siblings; None when it cannot be told.
    pub(crate) smt_present: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) topology_note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) iteration: Option<Dist>,
    pub(crate) histogram: Vec<Bin>,
    pub(crate) failed_iterations: usize,
    pub(crate) samples: u64,
    pub(crate) shared_samples: u64,
    /// shared_samples / samples, or None when no sample had two loops running.
    pub(crate) shared_fraction: Option<f64>,
    pub(crate) repins: u64,
    pub(crate) interrupted: bool,
    pub(crate) runs: Vec<runner::IterRec>,
}

#[derive(Debug, Serialize)]
pub(crate) struct SmtRateResult {
    /// s = time alone / time with the sibling busy; None with a reason when it cannot be measured.
    pub(crate) smt_rate: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cpus: Option<(u32, u32)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) alone_seconds: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) pair_seconds: Option<f64>,
}

pub(crate) fn check(args: &Request) -> anyhow::Result<PlacePolicy> {
    let policy = args.policy;
    if !(1..=1024).contains(&args.loops) {
        return Err(bad_input(format!("-n {}: allowed is 1 to 1024 loops", args.loops)));
    }
    if !(1..=1_000_000).contains(&args.iterations) {
        return Err(bad_input(format!("--iterations {}: allowed is 1 to 1000000", args.iterations)));
    }
    if !(1..=3_600_000).contains(&args.job_ms) {
        return Err(bad_input(format!("--job-ms {}: allowed is 1 to 3600000", args.job_ms)));
    }
    if !(1..=10_000).contains(&args.sample_ms) {
        return Err(bad_input(format!("--sample-ms {}: allowed is 1 to 10000", args.sample_ms)));
    }
    Ok(policy)
}

/// Run `place` on a given topology with a given stop flag (the testable core).
pub(crate) fn place(
    args: &Request,
    topo: &Topology,
    topo_note: Option<String>,
    stop: &AtomicBool,
) -> anyhow::Result<PlaceResult> {
    let policy = check(args)?;
    let job = if args.cmd.is_empty() {
        Job::Builtin { rounds: job::calibrate(Duration::from_millis(args.job_ms)) }
    } else {
        Job::Cmd(args.cmd.clone())
    };
    let cfg = RunCfg {
        policy,
        loops: args.loops,
        iterations: args.iterations,
        job: job.clone(),
        seed: args.seed,
        sample: Duration::from_millis(args.sample_ms),
    };
    let rep: RunReport = runner::run(topo, &cfg, stop)?;
    let times: Vec<f64> = rep.iterations.iter().filter(|i| i.ok).map(|i| i.seconds).collect();
    let smt = smt_known(topo, topo_note.is_some());
    Ok(PlaceResult {
        policy,
        loops: args.loops,
        iterations_per_loop: args.iterations,
        job: match &job {
            Job::Builtin { rounds } => format!("built-in CPU-bound job, {rounds} rounds (calibrated to about {} ms)", args.job_ms),
            Job::Cmd(a) => a.join(" "),
        },
        smt_present: smt,
        topology_note: topo_note,
        note: match smt {
            Some(true) => None,
            Some(false) => Some(
                "SMT is absent on this machine (no core has two logical CPUs): the policies differ only in pinning, and no SMT difference is expected"
                    .to_string(),
            ),
            None => Some("SMT siblings unknown (no topology): core sharing is counted per logical CPU".to_string()),
        },
        iteration: Dist::of(&times),
        histogram: histogram(&times, 10),
        failed_iterations: rep.iterations.iter().filter(|i| !i.ok).count(),
        samples: rep.samples,
        shared_samples: rep.shared_samples,
        shared_fraction: (rep.samples > 0).then(|| rep.shared_samples as f64 / rep.samples as f64),
        repins: rep.repins,
        interrupted: rep.interrupted,
        runs: rep.iterations,
    })
}

/// `--measure-smt-rate` on a given topology.
pub(crate) fn measure_smt_rate(
    args: &Request,
    topo: &Topology,
    topo_note: Option<&str>,
    stop: &AtomicBool,
) -> anyhow::Result<SmtRateResult> {
    check(args)?;
    let Some(core) = topo.cores.iter().find(|c| c.cpus.len() >= 2) else {
        let mut reason = match smt_known(topo, topo_note.is_some()) {
            Some(_) => {
                "needs SMT siblings (two logical CPUs of one core); this machine has none: SMT is absent".to_string()
            }
            None => "needs SMT siblings (two logical CPUs of one core); none are known here".to_string(),
        };
        if let Some(n) = topo_note {
            reason.push_str(&format!(" ({n})"));
        }
        return Ok(SmtRateResult {
            smt_rate: None,
            reason: Some(reason),
            cpus: None,
            alone_seconds: None,
            pair_seconds: None,
        });
    };
    let v = core.cpus.to_vec();
    let (a, b) = (v[0], v[1]);
    let rounds = job::calibrate(Duration::from_millis(args.job_ms));
    let mut alone = Vec::new();
    let mut pair = Vec::new();
    for _ in 0..3 {
        let Some(x) = runner::run_pinned_together(&[a], rounds, stop)? else {
            return Ok(interrupted());
        };
        alone.push(x[0]);
        let Some(y) = runner::run_pinned_together(&[a, b], rounds, stop)? else {
            return Ok(interrupted());
        };
        pair.push((y[0] + y[1]) / 2.0);
    }
    let med = |v: &[f64]| Dist::of(v).map(|d| d.median).unwrap_or(f64::NAN);
    let (ta, tp) = (med(&alone), med(&pair));
    Ok(SmtRateResult {
        smt_rate: Some(ta / tp),
        reason: None,
        cpus: Some((a, b)),
        alone_seconds: Some(ta),
        pair_seconds: Some(tp),
    })
}

fn interrupted() -> SmtRateResult {
    SmtRateResult {
        smt_rate: None,
        reason: Some("interrupted".into()),
        cpus: None,
        alone_seconds: None,
        pair_seconds: None,
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
