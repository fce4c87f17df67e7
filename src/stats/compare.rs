//! Comparing two sets of samples: speedup, significance, confidence interval.
//!
//! Convention (the 2003 study's "speedup" column): `speedup` is A/B for
//! lower-is-better figures and B/A for higher-is-better ones, so that
//! `change = (speedup - 1) x 100 %` is positive exactly when B is better.
//! A difference is marked significant when Welch's t-test and the
//! Mann-Whitney rank test both give p < `alpha` AND |change| is at least the
//! noise threshold (1 % by default); [`compare_sides`] adds the run's own
//! A/A noise and withholds the mark from noisy or busy sides.

use super::summary::median;
use crate::model::Better;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// B relative to A, >1 when B is better (ratio of medians).
    pub speedup: f64,
    /// (speedup - 1) x 100: + means B is better.
    pub change_pct: f64,
    /// Welch's two-sided p-value (None with fewer than 2 samples a side).
    pub p_welch: Option<f64>,
    /// Mann-Whitney U two-sided p-value, normal approximation with tie correction.
    pub p_mann_whitney: Option<f64>,
    /// 95 % bootstrap interval of the speedup (ratio of medians).
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub significant: bool,
    /// The larger of the two sides' A/A noise (spread of per-round medians), percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aa_noise_pct: Option<f64>,
    /// Why a difference that passed the test is not marked significant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withheld: Option<Withheld>,
}

/// Reasons a star is withheld.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Withheld {
    /// A side had fewer clean samples than wanted.
    Noisy,
    /// A side had more disturbed samples than clean ones.
    Busy,
    /// The change is no larger than the spread between rounds of one side.
    WithinAaNoise,
}

impl Withheld {
    pub fn describe(self) -> &'static str {
        match self {
            Withheld::Noisy => "a side is noisy",
            Withheld::Busy => "a side was measured on a busy CPU",
            Withheld::WithinAaNoise => "within the A/A noise",
        }
    }
}

/// What a comparison needs to know of each side beyond its clean samples.
#[derive(Debug, Clone, Default)]
pub struct Side {
    /// The round of each clean sample (empty when unknown).
    pub rounds: Vec<u32>,
    pub noisy: bool,
    pub busy: bool,
}

/// [`compare`], then withhold the star when either side is noisy or busy,
/// or when the change lies within the noise of either side against itself
/// (the spread of its per-round medians, `trust::aa_noise_pct`).
pub fn compare_sides(a: &[f64], sa: &Side, b: &[f64], sb: &Side, better: Better, opt: &CompareOptions) -> Option<Comparison> {
    let mut c = compare(a, b, better, opt)?;
    let aa = [super::trust::aa_noise_pct(a, &sa.rounds), super::trust::aa_noise_pct(b, &sb.rounds)].into_iter().flatten().reduce(f64::max);
    c.aa_noise_pct = aa;
    let why = if sa.noisy || sb.noisy {
        Some(Withheld::Noisy)
    } else if sa.busy || sb.busy {
        Some(Withheld::Busy)
    } else if aa.is_some_and(|n| c.change_pct.abs() <= n) {
        Some(Withheld::WithinAaNoise)
    } else {
        None
    };
    if c.significant && why.is_some() {
        c.significant = false;
        c.withheld = why;
    }
    Some(c)
}

#[derive(Debug, Clone, Copy)]
pub struct CompareOptions {
    pub alpha: f64,
    /// Noise threshold in percent.
    pub threshold_pct: f64,
    pub bootstrap: usize,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions { alpha: 0.05, threshold_pct: 1.0, bootstrap: 2000 }
    }
}

pub fn speedup_of(a: f64, b: f64, better: Better) -> f64 {
    match better {
        Better::Lower => a / b,
        Better::Higher => b / a,
    }
}

pub fn compare(a: &[f64], b: &[f64], better: Better, opt: &CompareOptions) -> Option<Comparison> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let (ma, mb) = (median(a), median(b));
    let speedup = speedup_of(ma, mb, better);
    if !speedup.is_finite() || speedup <= 0.0 {
        return None;
    }
    let change_pct = (speedup - 1.0) * 100.0;
    let p_welch = welch_p(a, b);
    let p_mann_whitney = mann_whitney_p(a, b);
    let (ci_low, ci_high) = match bootstrap_ci(a, b, better, opt.bootstrap) {
        Some((l, h)) => (Some(l), Some(h)),
        None => (None, None),
    };
    // Both tests must agree: Welch's t on the means, and the Mann-Whitney rank
    // test, which outliers and skew cannot sway and which cannot reach
    // p < 0.05 on three samples a side.
    let significant = p_welch.is_some_and(|p| p < opt.alpha) && p_mann_whitney.is_some_and(|p| p < opt.alpha) && change_pct.abs() >= opt.threshold_pct;
    Some(Comparison { speedup, change_pct, p_welch, p_mann_whitney, ci_low, ci_high, significant, aa_noise_pct: None, withheld: None })
}

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, var)
}

/// Welch's unequal-variance t-test, two-sided p-value.
pub fn welch_p(a: &[f64], b: &[f64]) -> Option<f64> {
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

/// Mann-Whitney U test, two-sided, normal approximation with tie correction
/// and continuity correction. Needs at least 2 samples a side.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> Option<f64> {
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
pub fn bootstrap_ci(a: &[f64], b: &[f64], better: Better, reps: usize) -> Option<(f64, f64)> {
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

/// Geometric mean of positive values (None if any is not positive).
pub fn geomean(v: &[f64]) -> Option<f64> {
    if v.is_empty() || v.iter().any(|&x| !(x > 0.0) || !x.is_finite()) {
        return None;
    }
    Some((v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::Rng;

    #[test]
    fn direction() {
        // Latency 11.16 -> 11.31 us is about -1 % (the study's pipe row).
        let c = compare(&[11.16, 11.16], &[11.31, 11.31], Better::Lower, &CompareOptions::default()).unwrap();
        assert!((c.change_pct + 1.326).abs() < 0.01, "{}", c.change_pct);
        // Rate 164071 -> 202809 is +24 % (the study's chat row).
        let c = compare(&[164071.0], &[202809.0], Better::Higher, &CompareOptions::default()).unwrap();
        assert!((c.change_pct - 23.61).abs() < 0.01);
        assert!(!c.significant, "one sample a side can never be significant");
    }

    #[test]
    fn welch_known_answer() {
        // Computed independently: scipy.stats.ttest_ind(a, b, equal_var=False)
        // gives t = -3.7888, df = 7.873, p = 0.0054800.
        let a = [19.1, 20.3, 18.7, 21.0, 19.8];
        let b = [21.5, 22.9, 20.8, 23.4, 22.1];
        let p = welch_p(&a, &b).unwrap();
        assert!((p - 0.0054800).abs() < 1e-5, "{p}");
        assert_eq!(welch_p(&[1.0, 1.0], &[1.0, 1.0]), Some(1.0));
    }

    #[test]
    fn mann_whitney_known_answer() {
        // scipy.stats.mannwhitneyu(..., method='asymptotic') gives p = 0.0121858.
        let p = mann_whitney_p(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert!((p - 0.0121858).abs() < 1e-5, "{p}");
        let p = mann_whitney_p(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]).unwrap();
        assert!(p > 0.9, "{p}");
    }

    #[test]
    fn significance_needs_both() {
        let a: Vec<f64> = (0..10).map(|i| 100.0 + (i % 3) as f64 * 0.01).collect();
        let b: Vec<f64> = a.iter().map(|x| x * 0.995).collect();
        let c = compare(&a, &b, Better::Lower, &CompareOptions::default()).unwrap();
        assert!(c.p_welch.unwrap() < 0.05);
        assert!(!c.significant, "0.5 % is below the 1 % noise threshold");
        let b: Vec<f64> = a.iter().map(|x| x * 0.9).collect();
        let c = compare(&a, &b, Better::Lower, &CompareOptions::default()).unwrap();
        assert!(c.significant && c.change_pct > 10.0);
        let (l, h) = (c.ci_low.unwrap(), c.ci_high.unwrap());
        assert!(l <= c.speedup && c.speedup <= h);
    }

    #[test]
    fn geomeans() {
        assert!((geomean(&[2.0, 8.0]).unwrap() - 4.0).abs() < 1e-12);
        assert!(geomean(&[1.0, 0.0]).is_none());
        assert!(geomean(&[]).is_none());
    }

    /// A simulated run on a fake clock: `rounds` interleaved rounds of A then
    /// B (reversed every other round), `per` samples per worker of 0.15 s. The
    /// machine drifts slowly under everything, each worker lands on a slightly
    /// different state, and with `hog_on_b` a CPU-bound loop on B's CPU is
    /// switched on and off every 2 s: while it runs, half of B's samples are
    /// preempted (the disturbance rule drops them, as the harness does) and
    /// the clean ones still pay up to 2 % for the hog's cache and TLB traffic.
    /// Returns each side's clean samples and rounds.
    fn simulate(seed: u64, rounds: u32, per: usize, hog_on_b: bool) -> ((Vec<f64>, Side), (Vec<f64>, Side)) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let (mut a, mut b) = ((Vec::new(), Side::default()), (Vec::new(), Side::default()));
        let mut t = rng.gen_range(0.0..4.0);
        let mut drift = 1.0f64;
        let hog = |t: f64| (t / 2.0).floor() as i64 % 2 == 0;
        for r in 1..=rounds {
            let order: [bool; 2] = if r % 2 == 1 { [false, true] } else { [true, false] };
            for is_b in order {
                drift *= 1.0 + rng.gen_range(-0.01..0.01);
                let worker = 1.0 + rng.gen_range(-0.01..0.01);
                for _ in 0..per {
                    t += 0.15 / per as f64;
                    let mut v = 10.0 * drift * worker * (1.0 + rng.gen_range(-0.005..0.005));
                    if hog_on_b && is_b && hog(t) {
                        if rng.gen_bool(0.5) {
                            continue;
                        }
                        v *= 1.0 + rng.gen_range(0.0..0.02);
                    }
                    let side = if is_b { &mut b } else { &mut a };
                    side.0.push(v);
                    side.1.rounds.push(r);
                }
            }
        }
        (a, b)
    }

    #[test]
    fn a_against_a_almost_never_stars() {
        let opt = CompareOptions { bootstrap: 0, ..Default::default() };
        for hog_on_b in [false, true] {
            let mut starred_plain = 0;
            let mut starred = 0;
            let trials = 400;
            for seed in 0..trials {
                let ((va, sa), (vb, sb)) = simulate(seed, 5, 2, hog_on_b);
                let c = compare_sides(&va, &sa, &vb, &sb, Better::Lower, &opt).unwrap();
                starred += usize::from(c.significant);
                starred_plain += usize::from(compare(&va, &vb, Better::Lower, &opt).unwrap().significant);
            }
            // Welch alone, on rounds that drift, stars far more often than 5 %;
            // with the A/A check, at most 2 % of identical pairs are starred.
            assert!(starred * 50 <= trials as usize, "hog {hog_on_b}: {starred} of {trials} starred (Welch alone: {starred_plain})");
            eprintln!("hog {hog_on_b}: {starred} of {trials} starred (Welch alone: {starred_plain})");
            assert!(starred_plain > starred, "hog {hog_on_b}: the check removed nothing ({starred_plain})");
        }
    }

    #[test]
    fn a_real_difference_still_stars() {
        let opt = CompareOptions { bootstrap: 0, ..Default::default() };
        let mut starred = 0;
        for seed in 0..100 {
            let ((va, sa), (vb, sb)) = simulate(seed, 5, 2, false);
            let vb: Vec<f64> = vb.iter().map(|v| v * 1.15).collect();
            starred += usize::from(compare_sides(&va, &sa, &vb, &sb, Better::Lower, &opt).unwrap().significant);
        }
        assert!(starred >= 95, "{starred} of 100 real 15 % differences starred");
    }

    #[test]
    fn three_samples_a_side_never_star() {
        // Completely separated, 15 % apart: Welch alone would star it, but a
        // rank test cannot reach p < 0.05 on three samples a side.
        let opt = CompareOptions::default();
        let c = compare(&[10.0, 10.1, 10.05], &[11.5, 11.6, 11.55], Better::Lower, &opt).unwrap();
        assert!(c.p_welch.unwrap() < 0.05 && c.p_mann_whitney.unwrap() > 0.05 && !c.significant);
        let a = [10.0, 10.1, 10.05, 10.02, 10.08];
        let b = [11.5, 11.6, 11.55, 11.52, 11.58];
        assert!(compare(&a, &b, Better::Lower, &opt).unwrap().significant, "five a side can be");
    }

    #[test]
    fn noisy_or_busy_sides_never_star() {
        let a: Vec<f64> = (0..10).map(|i| 10.0 + (i % 2) as f64 * 0.01).collect();
        let b: Vec<f64> = a.iter().map(|x| x * 1.5).collect();
        let opt = CompareOptions::default();
        let noisy = Side { noisy: true, ..Default::default() };
        let c = compare_sides(&a, &Side::default(), &b, &noisy, Better::Lower, &opt).unwrap();
        assert!(!c.significant && c.withheld == Some(Withheld::Noisy));
        let busy = Side { busy: true, ..Default::default() };
        let c = compare_sides(&a, &busy, &b, &Side::default(), Better::Lower, &opt).unwrap();
        assert!(!c.significant && c.withheld == Some(Withheld::Busy));
        assert!(compare_sides(&a, &Side::default(), &b, &Side::default(), Better::Lower, &opt).unwrap().significant);
    }

    proptest! {
        #[test]
        fn identical_sets_show_no_change(v in proptest::collection::vec(1.0f64..1000.0, 2..20)) {
            let c = compare(&v, &v, Better::Lower, &CompareOptions::default()).unwrap();
            prop_assert!((c.change_pct).abs() < 1e-9);
            prop_assert!(!c.significant);
        }

        #[test]
        fn swapping_inverts(a in proptest::collection::vec(1.0f64..1000.0, 2..10), b in proptest::collection::vec(1.0f64..1000.0, 2..10)) {
            let x = compare(&a, &b, Better::Higher, &CompareOptions::default()).unwrap();
            let y = compare(&b, &a, Better::Higher, &CompareOptions::default()).unwrap();
            prop_assert!((x.speedup * y.speedup - 1.0).abs() < 1e-9);
            let p1 = x.p_welch.unwrap(); let p2 = y.p_welch.unwrap();
            prop_assert!((p1 - p2).abs() < 1e-9);
            prop_assert!((0.0..=1.0).contains(&p1));
        }
    }
}
