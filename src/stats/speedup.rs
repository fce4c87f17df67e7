//! Two sets of samples, before any rule for a star: the speedup of their
//! medians, Welch's t, the Mann-Whitney rank test, the bootstrap interval,
//! and the threshold test (rule 1 of `compare`'s rule, written once). The
//! modules that judge a change (`compare`, `rounds`, `modes`) all build on
//! these, so they import nothing from each other's judgement.

use super::summary::median;
use crate::model::Better;
use rand::{Rng, SeedableRng};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

#[derive(Debug, Clone, Copy)]
pub(crate) struct CompareOptions {
    pub(crate) alpha: f64,
    /// Noise threshold in percent.
    pub(crate) threshold_pct: f64,
    pub(crate) bootstrap: usize,
    /// The two sides' rounds were taken together (one run's configurations
    /// or parameter values), so round k of one pairs with round k of the
    /// other; false for two runs.
    pub(crate) rounds_paired: bool,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            alpha: super::defaults::ALPHA,
            threshold_pct: super::defaults::THRESHOLD_PCT,
            bootstrap: 2000,
            rounds_paired: true,
        }
    }
}

/// B against A, > 1 when B is better: A/B for lower-is-better figures, B/A
/// for higher-is-better ones.
pub(crate) fn speedup_of(a: f64, b: f64, better: Better) -> f64 {
    match better {
        Better::Lower => a / b,
        Better::Higher => b / a,
    }
}

/// The noise threshold on the log scale, the one place it is computed: a
/// change `speedup` passes it when `|ln speedup|` is at least this, so a
/// slowdown and a speedup of the same factor count alike. A rounding slack
/// of 1e-12 lets a change of exactly the threshold pass.
pub(crate) fn log_threshold(threshold_pct: f64) -> f64 {
    (1.0 + threshold_pct / 100.0).ln() - 1e-12
}

/// Rule 1: the change `speedup` is at least the threshold ([`log_threshold`]).
pub(crate) fn beyond_threshold(speedup: f64, threshold_pct: f64) -> bool {
    speedup.ln().abs() >= log_threshold(threshold_pct)
}

/// Rules 1 and 2; where the rounds are unknown, Welch's t as well. Where
/// they are known Welch's t, which a side split into modes sways, is
/// reported but not required.
pub(crate) fn samples_pass(
    speedup: f64,
    p_welch: Option<f64>,
    p_mann_whitney: Option<f64>,
    known: bool,
    opt: &CompareOptions,
) -> bool {
    let welch = known || p_welch.is_some_and(|p| p < opt.alpha);
    welch && p_mann_whitney.is_some_and(|p| p < opt.alpha) && beyond_threshold(speedup, opt.threshold_pct)
}

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, var)
}

/// Welch's unequal-variance t-test, two-sided p-value.
pub(crate) fn welch_p(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (ma, va) = mean_var(a);
    let (mb, vb) = mean_var(b);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let se2 = va / na + vb / nb;
    if se2 == 0.0 {
        return Some(if ma == mb { 1.0 } else { 0.0 });
    }
    let t = (ma - mb) / se2.sqrt();
    let df = se2 * se2 / ((va / na).powi(2) / (na - 1.0) + (vb / nb).powi(2) / (nb - 1.0));
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    Some((2.0 * (1.0 - dist.cdf(t.abs()))).clamp(0.0, 1.0))
}

/// The smallest p-value the rank test can give with `n` and `m` samples:
/// that of two sides that do not overlap at all.
pub(crate) fn best_rank_p(n: usize, m: usize) -> f64 {
    let a: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let b: Vec<f64> = (n..n + m).map(|i| i as f64).collect();
    mann_whitney_p(&a, &b).unwrap_or(1.0)
}

/// Mann-Whitney U test, two-sided, normal approximation with tie correction
/// and continuity correction. Needs at least 2 samples a side.
pub(crate) fn mann_whitney_p(a: &[f64], b: &[f64]) -> Option<f64> {
    let (na, nb) = (a.len(), b.len());
    if na < 2 || nb < 2 {
        return None;
    }
    let mut all: Vec<(f64, usize)> = a.iter().map(|&x| (x, 0)).chain(b.iter().map(|&x| (x, 1))).collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len();
    let mut ranks = vec![0.0; n];
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let r = (i + j) as f64 / 2.0 + 1.0;
        for k in ranks.iter_mut().take(j + 1).skip(i) {
            *k = r;
        }
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    let ra: f64 = all.iter().zip(&ranks).filter(|(x, _)| x.1 == 0).map(|(_, r)| r).sum();
    let (naf, nbf, nf) = (na as f64, nb as f64, n as f64);
    let u = ra - naf * (naf + 1.0) / 2.0;
    let mu = naf * nbf / 2.0;
    let sigma2 = naf * nbf / 12.0 * ((nf + 1.0) - tie_term / (nf * (nf - 1.0)));
    if sigma2 <= 0.0 {
        return Some(1.0);
    }
    let z = ((u - mu).abs() - 0.5).max(0.0) / sigma2.sqrt();
    let norm = Normal::new(0.0, 1.0).ok()?;
    Some((2.0 * (1.0 - norm.cdf(z))).clamp(0.0, 1.0))
}

/// Percentile bootstrap of the speedup (ratio of medians), 95 %, with a fixed
/// seed so the same samples always give the same interval.
pub(crate) fn bootstrap_ci(a: &[f64], b: &[f64], better: Better, reps: usize) -> Option<(f64, f64)> {
    if a.len() < 2 || b.len() < 2 || reps < 100 {
        return None;
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x6b64_656c_7461);
    let mut ra = vec![0.0; a.len()];
    let mut rb = vec![0.0; b.len()];
    let mut out = Vec::with_capacity(reps);
    for _ in 0..reps {
        for x in ra.iter_mut() {
            *x = a[rng.gen_range(0..a.len())];
        }
        for x in rb.iter_mut() {
            *x = b[rng.gen_range(0..b.len())];
        }
        let s = speedup_of(median(&ra), median(&rb), better);
        if s.is_finite() {
            out.push(s);
        }
    }
    if out.len() < reps / 2 {
        return None;
    }
    out.sort_by(|x, y| x.total_cmp(y));
    Some((super::summary::quantile_sorted(&out, 0.025), super::summary::quantile_sorted(&out, 0.975)))
}
