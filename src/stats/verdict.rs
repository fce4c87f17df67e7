//! Three answers to "did it change?": *different*, *same* or *unknown*
//! (Chromium Pinpoint's DIFFERENT, SAME, UNKNOWN), and the paired estimate
//! behind them where the two sides took turns.
//!
//! **Paired** ([`paired_change`]): two sides that took turns in the same
//! workers (`measure::sampler::turns`; the `cmd` commands, the compared
//! values of `mem.*`, `check --within` of such a run) are judged on the log
//! ratio of each adjacent pair (sample `i` of A and sample `i` of B of one
//! worker, milliseconds apart), not on two pooled samples: what moved the
//! machine under both (a drifting VM, a neighbour, the worker's own speed)
//! cancels in the ratio. The estimate is the mean of the pairs' log ratios,
//! each first clipped to the median +- 4 robust standard deviations (a pair
//! hit on one side by something the disturbance rules did not see moves
//! the mean by at most that much). Its interval treats each **worker as a
//! cluster** (a cluster-robust standard error, CR1, with Student's t on
//! workers - 1 degrees of freedom): pairs of one worker share its state and
//! are not independent, workers are. On a machine where whole workers
//! settle in one of two speeds, the interval widens by as much as the
//! workers disagree; where they agree, it is as narrow as the pairs allow.
//!
//! **The level** is [`LEVEL`] (99.5 %, two-sided), not 95 %: `--runs auto`
//! and `check` look at the answer after every extra round and stop when it
//! settles, and each look is one more chance of a false *different*. At
//! 99.5 % per look, a simulation of identical sides under a periodic hog,
//! looked at after every round up to 40 rounds, says *different* in under
//! 5 % of runs (`sequential_looks_keep_false_alarms_rare`).
//!
//! **The answer** from an interval `[lo, hi]` of the log speedup and the
//! noise threshold `t = ln(1 + threshold)` ([`answer`]):
//! - *different*: the interval excludes no change and the estimate is at
//!   least the threshold (`|est| >= t`): a star;
//! - *same*: the interval lies within `(-t, t)`: an equivalence test, as
//!   two one-sided tests at the same level;
//! - *unknown*: anything else; `--runs auto` takes more rounds while a
//!   comparison is unknown, within `--budget`.

use crate::model::environment::RunEnvironment;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};
use std::collections::BTreeMap;

/// Two-sided confidence of every interval an answer is read from.
pub(crate) const LEVEL: f64 = 0.995;
/// Fewer workers (clusters) than this give no paired interval.
pub(crate) const MIN_WORKERS: usize = 3;
/// Fewer pairs than this give no paired interval.
pub(crate) const MIN_PAIRS: usize = 6;
/// Pairs further than this many robust standard deviations from the median
/// are clipped to that distance before the mean.
const CLIP_SD: f64 = 4.0;

/// The three answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Answer {
    /// The change is real and at least the threshold.
    Different,
    /// Any change is within the threshold.
    Same,
    /// Not enough evidence either way.
    #[default]
    Unknown,
}

impl Answer {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Answer::Different => "different",
            Answer::Same => "same",
            Answer::Unknown => "unknown",
        }
    }
}

/// The change estimated from adjacent pairs (as a speedup: > 1 when B is
/// better) and its interval at [`LEVEL`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct PairedChange {
    pub(crate) speedup: f64,
    pub(crate) low: f64,
    pub(crate) high: f64,
    pub(crate) pairs: usize,
    pub(crate) workers: usize,
    /// The pairs' log ratios' robust spread (percent), what one pair tells.
    pub(crate) pair_cv_pct: f64,
}

/// One adjacent pair: the worker it was taken in and the log speedup of B
/// against A (> 0 when B is better).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Pair {
    pub(crate) worker: u32,
    pub(crate) log_speedup: f64,
}

/// The paired estimate and its cluster-robust interval; `None` with fewer
/// than [`MIN_PAIRS`] pairs or [`MIN_WORKERS`] workers.
pub(crate) fn paired_change(pairs: &[Pair]) -> Option<PairedChange> {
    let d: Vec<f64> = pairs.iter().map(|p| p.log_speedup).filter(|x| x.is_finite()).collect();
    if d.len() < MIN_PAIRS || d.len() != pairs.len() {
        return None;
    }
    let mid = super::summary::median(&d);
    let sd = super::summary::scaled_mad(&d);
    let clip = |x: f64| if sd > 0.0 { x.clamp(mid - CLIP_SD * sd, mid + CLIP_SD * sd) } else { x };
    let mut by: BTreeMap<u32, (f64, usize)> = BTreeMap::new();
    for p in pairs {
        let e = by.entry(p.worker).or_default();
        e.0 += clip(p.log_speedup);
        e.1 += 1;
    }
    let (n, g) = (d.len() as f64, by.len());
    if g < MIN_WORKERS {
        return None;
    }
    let est = by.values().map(|(s, _)| s).sum::<f64>() / n;
    // CR1: sum over clusters of (their residuals' sum)^2, scaled by G/(G-1).
    let meat: f64 = by.values().map(|(s, k)| (s - *k as f64 * est).powi(2)).sum();
    let var = meat / (n * n) * g as f64 / (g as f64 - 1.0);
    let t = StudentsT::new(0.0, 1.0, g as f64 - 1.0).ok()?.inverse_cdf(1.0 - (1.0 - LEVEL) / 2.0);
    let half = t * var.sqrt();
    Some(PairedChange {
        speedup: est.exp(),
        low: (est - half).exp(),
        high: (est + half).exp(),
        pairs: d.len(),
        workers: g,
        pair_cv_pct: sd * 100.0,
    })
}

/// The answer an interval of the speedup (`low..high`, > 1 when B is
/// better) and its estimate give against the noise threshold.
pub(crate) fn answer(speedup: f64, low: f64, high: f64, threshold_pct: f64) -> Answer {
    let t = (1.0 + threshold_pct / 100.0).ln() - 1e-12;
    let (est, lo, hi) = (speedup.ln(), low.ln(), high.ln());
    if !(est.is_finite() && lo.is_finite() && hi.is_finite()) || lo > hi {
        return Answer::Unknown;
    }
    if (lo > 0.0 || hi < 0.0) && est.abs() >= t {
        Answer::Different
    } else if lo > -t && hi < t {
        Answer::Same
    } else {
        Answer::Unknown
    }
}

/// What an answer was read from: the estimate of the log speedup, its
/// standard error and the degrees of freedom of its interval. Kept so the
/// harness can ask whether more samples could still settle an unknown.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Evidence {
    pub(crate) est: f64,
    pub(crate) se: f64,
    pub(crate) df: f64,
}

impl Evidence {
    /// From a speedup interval at [`LEVEL`] read with Student's t on `df`
    /// degrees of freedom; `None` when anything is not finite or `df < 1`.
    /// The estimate is the interval's centre (both intervals read here are
    /// symmetric on the log scale).
    pub(crate) fn of_interval(low: f64, high: f64, df: f64) -> Option<Evidence> {
        let (lo, hi) = (low.ln(), high.ln());
        if !(lo.is_finite() && hi.is_finite() && df >= 1.0) || lo > hi {
            return None;
        }
        let se = (hi - lo) / 2.0 / t_at_level(df)?;
        Some(Evidence { est: (lo + hi) / 2.0, se, df })
    }

    /// Whether `growth` times the samples (and clusters) could still turn
    /// an unknown into *different* or *same*: the interval projected to
    /// that size (standard error shrinking as the square root, Student's t
    /// on the larger clusters' count), around today's estimate, with room
    /// for the estimate to move by a quarter of that half-width. `false`
    /// means more samples are futile: a change sitting on the threshold, or
    /// spread too wide to settle within the cap; the comparison stays
    /// *unknown* and the run stops sampling it (a futility stop, which
    /// cannot add a false *different*).
    pub(crate) fn could_settle(&self, growth: f64, threshold_pct: f64) -> bool {
        if growth.is_nan() || growth <= 1.0 {
            return false;
        }
        if self.df < FUTILITY_MIN_DF {
            // A standard error read from so few clusters is itself a
            // guess (from 3 workers it may be half or twice the truth):
            // too little to call more samples futile.
            return true;
        }
        let t = (1.0 + threshold_pct / 100.0).ln();
        let df = (self.df + 1.0) * growth - 1.0;
        let Some(q) = t_at_level(df) else { return true };
        let half = 0.75 * q * self.se / growth.sqrt();
        // The true change may lie half a standard error either side of
        // today's estimate: a 3 % slowdown read as +0.9 % from nine noisy
        // pairs must still be sampled, not let go as sitting on the threshold.
        let e = self.est.abs();
        let (far, near) = (e + 0.5 * self.se, (e - 0.5 * self.se).max(0.0));
        (far >= t && far > half) || near + half < t
    }
}

/// The futility stop looks only once the samples (and time) left could at
/// most grow a comparison this many times: a quarter of `check`'s budget is
/// spent before a comparison may be let go, so a slowdown that nine noisy
/// pairs read as +0.9 % gets the time to show itself.
pub(crate) const FUTILITY_MAX_GROWTH: f64 = 4.0;

/// The degrees of freedom (clusters less one) an interval needs before the
/// futility stop may trust its standard error: five workers' pairs.
pub(crate) const FUTILITY_MIN_DF: f64 = 4.0;

/// The two-sided [`LEVEL`] point of Student's t on `df` degrees of freedom.
fn t_at_level(df: f64) -> Option<f64> {
    Some(StudentsT::new(0.0, 1.0, df).ok()?.inverse_cdf(1.0 - (1.0 - LEVEL) / 2.0))
}

/// Student's t interval at [`LEVEL`] of the mean of `d` (log speedups of
/// paired rounds), as a speedup interval; `None` with fewer than 3 values.
pub(crate) fn rounds_interval(d: &[f64]) -> Option<(f64, f64)> {
    let n = d.len();
    if n < 3 || d.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let nf = n as f64;
    let m = d.iter().sum::<f64>() / nf;
    let var = d.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (nf - 1.0);
    let t = StudentsT::new(0.0, 1.0, nf - 1.0).ok()?.inverse_cdf(1.0 - (1.0 - LEVEL) / 2.0);
    let half = t * (var / nf).sqrt();
    Some(((m - half).exp(), (m + half).exp()))
}

/// CPUs' worth of other processes' time (`RunEnvironment::others_cpus`)
/// that makes a machine busy: the harness warns of a run with more beside
/// it, and a check does not judge two runs whose machines differ by as much.
pub(crate) const BUSY_CPUS: f64 = 0.25;

/// Whether other processes kept the machine busier during one of a
/// baseline run and a new one than during the other, by at least
/// [`BUSY_CPUS`]. A busy CPU slows its neighbours without preempting
/// them (two vCPUs of one core, or of one host core under a hypervisor:
/// a compiled loop beside a loop that toggles on the other vCPU read 2-13 %
/// slower here, every sample clean), so a change between such runs may be
/// the neighbour's. `Some` says how busy each was; `None` when they were
/// alike, or a run does not know (made before kdelta measured it).
pub(crate) fn machine_busier(base: &RunEnvironment, new: &RunEnvironment) -> Option<String> {
    let (b, n) = (base.others_cpus?, new.others_cpus?);
    if !b.is_finite() || !n.is_finite() || (n - b).abs() < BUSY_CPUS {
        return None;
    }
    Some(format!(
        "other processes kept {n:.2} CPUs busy during this run and {b:.2} during the baseline: \
         a busy CPU slows its neighbours without taking their CPU"
    ))
}

/// Whether the machine's speed changed during the run of `e`: a reference
/// loop measured after its last worker differs from the one measured
/// before its first by more than `tolerance_pct`. Nothing then says how
/// far the run's own figures moved (the command moved 13 % while its table
/// loop moved 3.3 % here), so a check does not judge against or with such
/// a run below 2x. `Some((kind, change in percent, after against before))`.
pub(crate) fn machine_unsteady(e: &RunEnvironment, tolerance_pct: f64) -> Option<(String, f64)> {
    let (before, after) = (e.reference_before.as_ref()?, e.reference_after.as_ref()?);
    before.kinds.iter().find_map(|b| {
        let a = after.kinds.iter().find(|a| a.name == b.name)?;
        let ok = |x: f64| x.is_finite() && x > 0.0;
        let moved = (a.ns / b.ns).ln();
        (ok(a.ns) && ok(b.ns) && moved.abs() > (1.0 + tolerance_pct / 100.0).ln())
            .then(|| (b.name.clone(), (moved.exp() - 1.0) * 100.0))
    })
}

/// Whether the machine's own speed moved between a baseline run and a new
/// one, by their reference loops (`measure::reference`, before the first
/// worker and after the last): a kind whose figure moved by more than the
/// limit plus what each run's own two measurements disagree by. `Some`
/// says how far which kind moved (`its reference table loop runs 4.0%
/// faster`; the caller names what it moved since) and the move (log); `None` when it
/// did not, or when a run has no reference (made before kdelta measured one).
pub(crate) fn machine_moved(base: &RunEnvironment, new: &RunEnvironment, limit_pct: f64) -> Option<(String, f64)> {
    let figure = |e: &RunEnvironment, name: &str| {
        let ns: Vec<f64> = [&e.reference_before, &e.reference_after]
            .into_iter()
            .flatten()
            .filter_map(|r| r.kinds.iter().find(|k| k.name == name).map(|k| k.ns))
            .filter(|x| x.is_finite() && *x > 0.0)
            .collect();
        let mean = ns.iter().map(|x| x.ln()).sum::<f64>() / ns.len() as f64;
        let spread = ns.iter().map(|x| (x.ln() - mean).abs()).fold(0.0, f64::max);
        (!ns.is_empty()).then_some((mean, spread))
    };
    let kinds = base.reference_before.as_ref().or(base.reference_after.as_ref())?;
    for k in &kinds.kinds {
        let (Some((b, sb)), Some((n, sn))) = (figure(base, &k.name), figure(new, &k.name)) else { continue };
        let moved = n - b;
        if moved.abs() > (1.0 + limit_pct / 100.0).ln() + sb.max(sn) {
            let way = if moved > 0.0 { "slower" } else { "faster" };
            return Some((
                format!("its reference {} runs {:.1}% {way}", k.name, (moved.abs().exp() - 1.0) * 100.0),
                moved.abs(),
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::environment::{Reference, ReferenceKind};
    use rand::{Rng, SeedableRng};

    fn pairs_of(per_worker: &[&[f64]]) -> Vec<Pair> {
        per_worker
            .iter()
            .enumerate()
            .flat_map(|(w, xs)| xs.iter().map(move |&x| Pair { worker: w as u32 + 1, log_speedup: x }))
            .collect()
    }

    #[test]
    fn a_run_whose_loops_disagree_was_unsteady() {
        let refs = |ns: f64| Some(Reference { kinds: vec![ReferenceKind { name: "table loop".into(), ns }] });
        let env = |before: f64, after: f64| RunEnvironment {
            reference_before: refs(before),
            reference_after: refs(after),
            ..Default::default()
        };
        // The 3.3 % of docs/verdicts.md's eighth series, against 1 % + 2 %.
        let (kind, pct) = machine_unsteady(&env(3.912, 4.042), 3.0).unwrap();
        assert_eq!(kind, "table loop");
        assert!((pct - 3.32).abs() < 0.01, "{pct}");
        assert_eq!(machine_unsteady(&env(4.042, 3.912), 3.0).map(|(_, p)| p < 0.0), Some(true));
        assert!(machine_unsteady(&env(3.913, 3.885), 3.0).is_none());
        assert!(machine_unsteady(&RunEnvironment { reference_after: None, ..env(1.0, 2.0) }, 3.0).is_none());
        assert!(machine_unsteady(&env(0.0, 2.0), 3.0).is_none());
    }

    #[test]
    fn cluster_robust_interval_known_answer() {
        // Three workers of two pairs: sums 0.03, 0.05, 0.04 over n = 6, so
        // est = 0.02; residual sums 0.03-0.04, 0.05-0.04, 0.04-0.04 give
        // meat = 2e-4, var = 2e-4 / 36 * 3 / 2 = 8.333e-6, se = 2.8868e-3;
        // t(2 df, 0.9975) = 14.089 (the 99.75 % point of Student's t with 2
        // degrees of freedom: sqrt(2) * q / sqrt(1 - q^2), q = 2 * 0.9975 - 1).
        let p = paired_change(&pairs_of(&[&[0.01, 0.02], &[0.02, 0.03], &[0.02, 0.02]])).unwrap();
        assert!((p.speedup.ln() - 0.02).abs() < 1e-12, "{p:?}");
        let q: f64 = 2.0 * 0.9975 - 1.0;
        let t = 2f64.sqrt() * q / (1.0 - q * q).sqrt();
        let half = t * (2e-4f64 / 36.0 * 1.5).sqrt();
        assert!((p.high.ln() - (0.02 + half)).abs() < 1e-9, "{p:?} {half}");
        assert!((p.low.ln() - (0.02 - half)).abs() < 1e-9, "{p:?}");
        assert_eq!((p.pairs, p.workers), (6, 3));
    }

    #[test]
    fn too_few_pairs_or_workers_give_nothing() {
        assert!(paired_change(&pairs_of(&[&[0.1, 0.1], &[0.1, 0.1]])).is_none());
        assert!(paired_change(&pairs_of(&[&[0.1, 0.1, 0.1, 0.1, 0.1, 0.1]])).is_none());
        assert!(paired_change(&pairs_of(&[&[0.1], &[0.1], &[0.1]])).is_none());
    }

    #[test]
    fn one_wild_pair_moves_the_estimate_little() {
        let mut w: Vec<Vec<f64>> = (0..8).map(|i| vec![0.03 + 0.001 * (i % 3) as f64; 5]).collect();
        w[3][2] = 2.0;
        let refs: Vec<&[f64]> = w.iter().map(|v| v.as_slice()).collect();
        let p = paired_change(&pairs_of(&refs)).unwrap();
        assert!(p.speedup.ln() < 0.035, "{p:?}");
    }

    #[test]
    fn answers() {
        // 1 % threshold.
        assert_eq!(answer(1.03, 1.01, 1.05, 1.0), Answer::Different);
        assert_eq!(answer(0.97, 0.95, 0.99, 1.0), Answer::Different);
        assert_eq!(answer(1.001, 0.995, 1.006, 1.0), Answer::Same);
        assert_eq!(answer(1.0, 0.97, 1.03, 1.0), Answer::Unknown);
        // Excludes 1 but below the threshold, and not surely within it.
        assert_eq!(answer(1.005, 1.001, 1.02, 1.0), Answer::Unknown);
        // Excludes 1, below the threshold and within it: same.
        assert_eq!(answer(1.005, 1.001, 1.008, 1.0), Answer::Same);
        assert_eq!(answer(f64::NAN, 1.0, 1.0, 1.0), Answer::Unknown);
    }

    #[test]
    fn a_machine_busier_on_one_side_is_told_by_other_processes_time() {
        let env = |o: Option<f64>| RunEnvironment { others_cpus: o, ..Default::default() };
        assert_eq!(machine_busier(&env(Some(0.11)), &env(Some(0.30))), None);
        let why = machine_busier(&env(Some(0.11)), &env(Some(0.49))).expect("a hog half the time");
        assert!(why.contains("0.49 CPUs busy during this run and 0.11 during the baseline"), "{why}");
        // Either way round: a busy baseline makes a quiet run look faster.
        assert!(machine_busier(&env(Some(0.8)), &env(Some(0.0))).is_some());
        assert_eq!(machine_busier(&env(None), &env(Some(1.0))), None);
        assert_eq!(machine_busier(&env(Some(f64::NAN)), &env(Some(1.0))), None);
    }

    #[test]
    fn a_machine_that_moved_is_told_by_its_reference_loops() {
        let env = |before: f64, after: f64| RunEnvironment {
            reference_before: Some(Reference { kinds: vec![ReferenceKind { name: "table loop".into(), ns: before }] }),
            reference_after: Some(Reference { kinds: vec![ReferenceKind { name: "table loop".into(), ns: after }] }),
            ..Default::default()
        };
        assert_eq!(machine_moved(&env(1.0, 1.0), &env(1.005, 1.0), 1.0), None);
        let (m, by) = machine_moved(&env(1.0, 1.0), &env(1.10, 1.12), 1.0).expect("11 % slower");
        assert!((by - (1.11f64).ln()).abs() < 0.02, "{by}");
        assert!(m.contains("reference table loop runs 11.0% slower"), "{m}");
        // A run whose own two measurements disagree allows as much.
        assert_eq!(machine_moved(&env(1.0, 1.2), &env(1.1, 1.1), 1.0), None);
        // No reference in the baseline: nothing to tell.
        assert_eq!(machine_moved(&RunEnvironment::default(), &env(2.0, 2.0), 1.0), None);
    }

    #[test]
    fn more_samples_are_futile_only_where_the_cap_could_not_settle_it() {
        let ev =
            |est_pct: f64, se_pct: f64, df: f64| Evidence { est: (1.0 + est_pct / 100.0).ln(), se: se_pct / 100.0, df };
        // Far from the threshold either way: more samples settle it.
        assert!(ev(0.0, 0.2, 9.0).could_settle(3.0, 1.0));
        assert!(ev(10.0, 2.0, 9.0).could_settle(3.0, 1.0));
        // Near nothing, a standard error of 1 %: 3x the samples leave a
        // half-width past the threshold (not *same*) and wider than any
        // change a standard error away (not *different*): futile.
        assert!(!ev(0.2, 1.0, 9.0).could_settle(3.0, 1.0));
        // Within half a standard error of it: the truth may lie beyond; sample on.
        assert!(ev(0.9, 0.5, 9.0).could_settle(3.0, 1.0));
        // The try that let a 3 % slowdown go: +0.9 % from nine pairs of five
        // workers, a standard error of 0.64 %, nine times the time left.
        assert!(ev(0.92, 0.64, 4.0).could_settle(9.0, 1.0));
        // Identical sides, standard error 2 % from 5 clusters: 3x the
        // samples leave a half-width near 3 %, never inside +-1 %, nor a
        // change a standard error off beyond it; 50x may.
        assert!(!ev(0.2, 2.0, 4.0).could_settle(3.0, 1.0));
        assert!(ev(0.2, 2.0, 4.0).could_settle(50.0, 1.0));
        // No room to grow: nothing more can be learnt.
        assert!(!ev(0.0, 0.1, 9.0).could_settle(1.0, 1.0));
        // A 3 % change whose pairs came from three workers (2 df) with a
        // wide spread: the spread itself is too uncertain to stop on; with
        // the same spread from ten workers, 5x the samples cannot settle it.
        assert!(ev(3.0, 8.0, 2.0).could_settle(5.0, 1.0));
        assert!(!ev(3.0, 8.0, 9.0).could_settle(5.0, 1.0));
        // From an interval: the estimate is its centre on the log scale.
        let e = Evidence::of_interval(1.0 / 1.02, 1.02, 4.0).unwrap();
        assert!(e.est.abs() < 1e-12 && e.se > 0.0, "{e:?}");
        assert!(Evidence::of_interval(1.1, 1.0, 4.0).is_none());
        assert!(Evidence::of_interval(0.9, 1.1, 0.0).is_none());
    }

    #[test]
    fn rounds_interval_known_answer() {
        // Mean 0.02, sd 0.008165, n = 4: half = t(3, 0.9975) * sd / 2, where
        // t = 7.4533 solves the closed form of Student's t CDF with 3
        // degrees of freedom, 1/2 + (x/(1 + t^2/3) + atan x) / pi, x = t/sqrt 3.
        let (l, h) = rounds_interval(&[0.01, 0.02, 0.03, 0.02 + 0.0]).unwrap();
        let sd = ((0.0001 + 0.0 + 0.0001 + 0.0) / 3.0f64).sqrt();
        let half = 7.4533 * sd / 2.0;
        assert!((h.ln() - (0.02 + half)).abs() < 1e-4, "{l} {h}");
        assert!(rounds_interval(&[0.1, 0.2]).is_none());
    }

    /// The looks `--runs auto` takes: from the 5th worker, each time the
    /// workers have grown by half.
    fn is_look(w: usize) -> bool {
        let mut k = 5usize;
        while k < w {
            k = (k * 3).div_ceil(2);
        }
        k == w
    }

    /// A command and its copy taking turns in workers of `per` pairs: each
    /// pair's log ratio is the real change plus noise (cv `cv`); each worker
    /// has a bias of its own (`worker_sd`, the two-speed workers), and with
    /// `hog` a periodic loop hits one side of a third of the pairs by up to
    /// 10 % (samples the disturbance rules missed). Looked at after every
    /// worker from the 5th, as `--runs auto` does, up to `workers`; returns
    /// the first settled answer and the workers it took.
    fn sequential(seed: u64, change: f64, cv: f64, worker_sd: f64, hog: bool, workers: u32) -> (Answer, u32) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let per = 4;
        let mut pairs = Vec::new();
        let normal = |rng: &mut rand_chacha::ChaCha8Rng| {
            // Box-Muller.
            let (u, v): (f64, f64) = (rng.gen_range(1e-12..1.0), rng.gen_range(0.0..1.0));
            (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        };
        for w in 1..=workers {
            let bias = worker_sd * normal(&mut rng);
            for _ in 0..per {
                let mut d = change + bias + cv * normal(&mut rng);
                if hog && rng.gen_bool(1.0 / 3.0) {
                    // Either side, at random (the order is randomised).
                    let hit = rng.gen_range(0.0..0.1);
                    d += if rng.gen_bool(0.5) { hit } else { -hit };
                }
                pairs.push(Pair { worker: w, log_speedup: d });
            }
            if is_look(w as usize) {
                if let Some(p) = paired_change(&pairs) {
                    let a = answer(p.speedup, p.low, p.high, 1.0);
                    if a != Answer::Unknown {
                        return (a, w);
                    }
                }
            }
        }
        (Answer::Unknown, workers)
    }

    #[test]
    fn sequential_looks_keep_false_alarms_rare() {
        for (worker_sd, hog) in [(0.0, false), (0.0, true), (0.02, true)] {
            let trials = 400;
            let false_alarms =
                (0..trials).filter(|&s| sequential(s, 0.0, 0.065, worker_sd, hog, 40).0 == Answer::Different).count();
            eprintln!("{worker_sd} {hog}: {false_alarms} of {trials} different");
            assert!(false_alarms * 20 <= trials as usize, "{worker_sd} {hog}: {false_alarms} of {trials} different");
        }
    }

    #[test]
    fn a_three_percent_change_is_found_and_ten_percent_quickly() {
        let trials = 200;
        let runs: Vec<(Answer, u32)> =
            (0..trials).map(|s| sequential(1000 + s, -0.03, 0.065, 0.0, false, 40)).collect();
        let found = runs.iter().filter(|r| r.0 == Answer::Different).count();
        assert!(found * 10 >= trials as usize * 9, "{found} of {trials} found");
        // Under the hog, with two-speed workers, a 10 % slowdown: never the wrong way.
        let runs: Vec<(Answer, u32)> =
            (0..trials).map(|s| sequential(2000 + s, -0.10, 0.065, 0.02, true, 40)).collect();
        assert!(runs.iter().all(|r| r.0 != Answer::Same), "a 10 % change called same");
        let found = runs.iter().filter(|r| r.0 == Answer::Different).count();
        assert!(found * 10 >= trials as usize * 8, "{found} of {trials} found");
    }
}
