//! Summaries of simulated runs: distributions, histograms and the result document.

use super::{RepResult, SimConfig};
use serde::Serialize;

/// A distribution of values (seconds).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Dist {
    pub(crate) n: usize,
    pub(crate) min: f64,
    pub(crate) median: f64,
    pub(crate) mean: f64,
    pub(crate) max: f64,
}

impl Dist {
    pub(crate) fn of(values: &[f64]) -> Option<Dist> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
        Some(Dist { n, min: v[0], median, mean: v.iter().sum::<f64>() / n as f64, max: v[n - 1] })
    }
}

/// Equal-width bins from the minimum to the maximum.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Bin {
    pub(crate) lo: f64,
    pub(crate) hi: f64,
    pub(crate) count: usize,
}

pub(crate) fn histogram(values: &[f64], bins: usize) -> Vec<Bin> {
    let Some(d) = Dist::of(values) else {
        return Vec::new();
    };
    let bins = bins.max(1);
    let width = (d.max - d.min) / bins as f64;
    if width <= 0.0 {
        return vec![Bin { lo: d.min, hi: d.max, count: values.len() }];
    }
    let mut out: Vec<Bin> =
        (0..bins).map(|i| Bin { lo: d.min + width * i as f64, hi: d.min + width * (i + 1) as f64, count: 0 }).collect();
    for &x in values {
        let i = (((x - d.min) / width) as usize).min(bins - 1);
        out[i].count += 1;
    }
    out
}

/// Per-iteration times of the `loops` workload.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct LoopsSummary {
    pub(crate) iteration: Dist,
    /// Every iteration's time, for storing as samples.
    #[serde(skip)]
    pub(crate) times: Vec<f64>,
    pub(crate) histogram: Vec<Bin>,
}

/// Makespans of the `make` workload over repetitions.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct MakeSummary {
    pub(crate) best: f64,
    pub(crate) mean: f64,
    pub(crate) worst: f64,
    pub(crate) makespans: Vec<f64>,
}

/// One policy's result.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PolicyResult {
    pub(crate) policy: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) loops: Option<LoopsSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) make: Option<MakeSummary>,
    /// Simulated time a core ran two tasks while another core was fully idle, summed over reps.
    pub(crate) doubled_time: f64,
    pub(crate) doubled_longest: f64,
    pub(crate) migrations_running: u64,
    pub(crate) events: u64,
    /// Wall-clock seconds the simulation took, and simulated events per wall second.
    pub(crate) wall_seconds: f64,
    pub(crate) events_per_sec: f64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) reps: Vec<RepResult>,
}

pub(crate) fn summarize(
    cfg: &SimConfig,
    policy: &str,
    reps: Vec<RepResult>,
    wall_seconds: f64,
    keep_reps: bool,
) -> PolicyResult {
    let times: Vec<f64> = reps.iter().flat_map(|r| r.iterations.iter().map(|i| i.time())).collect();
    let loops = match cfg.workload {
        super::WorkloadCfg::Loops(_) => Dist::of(&times).map(|iteration| LoopsSummary {
            iteration,
            histogram: histogram(&times, 10),
            times: times.clone(),
        }),
        _ => None,
    };
    let make = match cfg.workload {
        super::WorkloadCfg::Make(_) => {
            let m: Vec<f64> = reps.iter().map(|r| r.makespan).collect();
            Dist::of(&m).map(|d| MakeSummary { best: d.min, mean: d.mean, worst: d.max, makespans: m })
        }
        _ => None,
    };
    let events: u64 = reps.iter().map(|r| r.counters.events).sum();
    PolicyResult {
        policy: policy.to_string(),
        loops,
        make,
        doubled_time: reps.iter().map(|r| r.counters.doubled_time).sum(),
        doubled_longest: reps.iter().map(|r| r.counters.doubled_longest).fold(0.0, f64::max),
        migrations_running: reps.iter().map(|r| r.counters.migrations_running).sum(),
        events,
        wall_seconds,
        events_per_sec: if wall_seconds > 0.0 { events as f64 / wall_seconds } else { 0.0 },
        reps: if keep_reps { reps } else { Vec::new() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dist_and_histogram() {
        let d = Dist::of(&[3.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!((d.min, d.median, d.mean, d.max), (1.0, 2.5, 4.0, 10.0));
        let h = histogram(&[1.0, 1.0, 2.0, 3.0], 2);
        assert_eq!(h.iter().map(|b| b.count).collect::<Vec<_>>(), vec![2, 2]);
        assert_eq!(histogram(&[5.0, 5.0], 4).len(), 1);
        assert!(Dist::of(&[]).is_none());
    }
}
