//! Change points in a series of runs: E-divisive means with a permutation
//! test (Matteson and James, 2014), as Apache Otava (formerly Hunter) and
//! MongoDB's signal-processing-algorithms find performance regressions.
//!
//! **The statistic.** For a split of a segment `x[0..n)` at `t` into
//! `A = x[0..t)` (size `m`) and `B = x[t..n)` (size `k`), the energy
//! divergence is `E = 2·mean|a-b| - mean|a-a'| - mean|b-b'|` (the means over
//! the pairs across, within A and within B), and the statistic is
//! `q = m·k/(m+k) · E`: large when the two sides differ in location, weighted
//! so that a split near an end needs a larger difference. All splits of a
//! segment are scored in O(n²) from running sums.
//!
//! **The search.** Start with the whole series as one segment. Each step
//! takes, over every segment, the split with the largest `q` that leaves at
//! least `min_segment` values on each side, and tests it: shuffle that
//! segment `permutations` times, find the largest `q` of each shuffle, and
//! `p = (1 + shuffles at least as large) / (1 + permutations)`. When
//! `p < alpha` the split is a change point and its segment becomes two;
//! otherwise the search stops. The shuffles come from a seeded generator:
//! the same series and seed give the same answer.
//!
//! [`step`] then describes one change point: the segments' medians, the
//! change in percent with a 95 % bootstrap interval over the runs, and
//! whether the raw samples behind the runs agree (Mann-Whitney).

use super::speedup::{bootstrap_ci, mann_whitney_p};
use super::summary::median;
use crate::model::Better;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::Serialize;

/// The search's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Options {
    /// Significance level of the permutation test (default 0.05).
    pub(crate) alpha: f64,
    /// Fewest values on each side of a change point (default 5).
    pub(crate) min_segment: usize,
    /// Shuffles per test (default 199, so `p` moves in steps of 0.005).
    pub(crate) permutations: usize,
    /// Seed of the shuffles.
    pub(crate) seed: u64,
}

impl Default for Options {
    fn default() -> Options {
        use super::defaults as d;
        Options { alpha: d::ALPHA, min_segment: d::MIN_SEGMENT, permutations: d::PERMUTATIONS, seed: 0 }
    }
}

/// One change point: the series changes between `index - 1` and `index`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct ChangePoint {
    /// The first value of the new segment.
    pub(crate) index: usize,
    /// The divergence statistic of the split.
    pub(crate) q: f64,
    /// The permutation test's p-value.
    pub(crate) p: f64,
}

/// What the search found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Detection {
    /// Too few values to split even once: `len` given, `needed` at least.
    TooShort { len: usize, needed: usize },
    /// The change points, in series order (empty: no change found).
    Found(Vec<ChangePoint>),
}

/// The best split of `x` with at least `min` values a side: `(t, q)`.
fn best_split(x: &[f64], min: usize) -> Option<(usize, f64)> {
    let n = x.len();
    let min = min.max(1);
    if n < 2 * min {
        return None;
    }
    // before[i]: sum of |x_i - x_j| over j < i; after[i]: over j > i.
    let mut before = vec![0.0; n];
    let mut after = vec![0.0; n];
    for i in 0..n {
        for j in (i + 1)..n {
            let d = (x[i] - x[j]).abs();
            after[i] += d;
            before[j] += d;
        }
    }
    let total: f64 = after.iter().sum();
    let (mut left, mut right) = (0.0, total);
    let mut best: Option<(usize, f64)> = None;
    for t in 1..n {
        // Moving x[t-1] from the right side to the left.
        left += before[t - 1];
        right -= after[t - 1];
        if t < min || n - t < min {
            continue;
        }
        let q = divergence(t, n - t, total - left - right, left, right);
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((t, q));
        }
    }
    best
}

/// `q` of a split with `m` and `k` values, from the sums of distances across
/// the split and within each side.
fn divergence(m: usize, k: usize, across: f64, within_a: f64, within_b: f64) -> f64 {
    let (mf, kf) = (m as f64, k as f64);
    let pairs = |s: f64| s * (s - 1.0) / 2.0;
    let wa = if m > 1 { within_a / pairs(mf) } else { 0.0 };
    let wb = if k > 1 { within_b / pairs(kf) } else { 0.0 };
    let e = 2.0 * across / (mf * kf) - wa - wb;
    mf * kf / (mf + kf) * e
}

/// The permutation test of a split of `seg` whose statistic is `q`.
fn permutation_p(seg: &[f64], q: f64, opt: &Options, rng: &mut rand_chacha::ChaCha8Rng) -> f64 {
    let mut shuffled = seg.to_vec();
    let mut hits = 0usize;
    for _ in 0..opt.permutations {
        shuffled.shuffle(rng);
        if best_split(&shuffled, opt.min_segment).is_some_and(|(_, s)| s >= q * (1.0 - 1e-12)) {
            hits += 1;
        }
    }
    (1 + hits) as f64 / (1 + opt.permutations) as f64
}

/// E-divisive means over `x` (the module's documentation). Values must be
/// finite; a series shorter than two minimum segments is [`Detection::TooShort`].
pub(crate) fn detect(x: &[f64], opt: &Options) -> Detection {
    let min = opt.min_segment.max(1);
    if x.len() < 2 * min {
        return Detection::TooShort { len: x.len(), needed: 2 * min };
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(opt.seed);
    let mut bounds = vec![0, x.len()];
    let mut found = Vec::new();
    loop {
        let best = bounds
            .windows(2)
            .filter_map(|w| best_split(&x[w[0]..w[1]], min).map(|(t, q)| (w[0], w[1], t, q)))
            .max_by(|a, b| a.3.total_cmp(&b.3));
        let Some((lo, hi, t, q)) = best else { break };
        if q.is_nan() || q <= 0.0 {
            break;
        }
        let p = permutation_p(&x[lo..hi], q, opt, &mut rng);
        if p >= opt.alpha {
            break;
        }
        found.push(ChangePoint { index: lo + t, q, p });
        bounds.push(lo + t);
        bounds.sort_unstable();
    }
    found.sort_by_key(|c| c.index);
    Detection::Found(found)
}

/// One change point described: its two segments compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Step {
    /// Median of the run medians before and after.
    #[serde(rename = "median_before")]
    pub(crate) before: f64,
    #[serde(rename = "median_after")]
    pub(crate) after: f64,
    /// `(after / before - 1) × 100`: + when the figure went up.
    pub(crate) change_pct: f64,
    /// 95 % bootstrap interval of `change_pct`, resampling runs (None with
    /// fewer than 2 runs a side).
    pub(crate) ci_pct: Option<(f64, f64)>,
    /// Mann-Whitney p-value between the pooled raw samples of the two sides.
    pub(crate) samples_p: Option<f64>,
    /// The raw samples agree: their test gives `p < alpha` and their medians
    /// move the way the run medians do.
    pub(crate) samples_agree: bool,
}

/// The two sides of a change point: each run's median, and every raw sample
/// of those runs pooled.
pub(crate) struct Sides<'a> {
    pub(crate) medians_before: &'a [f64],
    pub(crate) medians_after: &'a [f64],
    pub(crate) samples_before: &'a [f64],
    pub(crate) samples_after: &'a [f64],
}

/// Runs resampled for the interval of a step.
const BOOTSTRAP_REPS: usize = 2000;

/// Describe a change point from its two sides; `None` when a side is empty
/// or the medians give no finite ratio.
pub(crate) fn step(s: &Sides, alpha: f64) -> Option<Step> {
    if s.medians_before.is_empty() || s.medians_after.is_empty() {
        return None;
    }
    let (before, after) = (median(s.medians_before), median(s.medians_after));
    let ratio = after / before;
    if !ratio.is_finite() || before == 0.0 {
        return None;
    }
    // Higher-is-better orientation makes the bootstrap's ratio after/before.
    let ci_pct = bootstrap_ci(s.medians_before, s.medians_after, Better::Higher, BOOTSTRAP_REPS)
        .map(|(lo, hi)| ((lo - 1.0) * 100.0, (hi - 1.0) * 100.0));
    let samples_p = mann_whitney_p(s.samples_before, s.samples_after);
    let pooled_up = !s.samples_before.is_empty()
        && !s.samples_after.is_empty()
        && median(s.samples_after) > median(s.samples_before);
    let samples_agree = samples_p.is_some_and(|p| p < alpha) && pooled_up == (after > before);
    Some(Step { before, after, change_pct: (ratio - 1.0) * 100.0, ci_pct, samples_p, samples_agree })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::Rng;

    /// `n` values around `level`, with a relative noise of about `sd`
    /// (Box-Muller), from `seed`.
    fn noisy(n: usize, level: f64, sd: f64, seed: u64) -> Vec<f64> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let (u, v): (f64, f64) = (rng.gen_range(1e-12..1.0), rng.gen());
                let z = (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos();
                level * (1.0 + sd * z)
            })
            .collect()
    }

    fn found(d: &Detection) -> &[ChangePoint] {
        match d {
            Detection::Found(c) => c,
            Detection::TooShort { .. } => panic!("too short: {d:?}"),
        }
    }

    #[test]
    fn the_statistic_matches_its_definition() {
        // A = [1, 2], B = [4]: across |1-4|+|2-4| = 5, within A 1.
        // E = 2*5/2 - 1/1 - 0 = 4; q = 2*1/3 * 4.
        let q = divergence(2, 1, 5.0, 1.0, 0.0);
        assert!((q - 8.0 / 3.0).abs() < 1e-12, "{q}");
        let (t, _) = best_split(&[1.0, 1.0, 1.0, 5.0, 5.0, 5.0], 1).unwrap();
        assert_eq!(t, 3);
    }

    #[test]
    fn a_five_percent_step_is_found_where_it_is() {
        for seed in 0..10 {
            let mut x = noisy(20, 100.0, 0.01, seed);
            x.extend(noisy(20, 105.0, 0.01, seed + 1000));
            let opt = Options { seed, ..Options::default() };
            let c = found(&detect(&x, &opt)).to_vec();
            assert_eq!(c.len(), 1, "seed {seed}: {c:?}");
            assert_eq!(c[0].index, 20, "seed {seed}");
            assert!(c[0].p < 0.05);
        }
    }

    #[test]
    fn two_steps_are_both_found() {
        let mut x = noisy(15, 100.0, 0.01, 1);
        x.extend(noisy(15, 110.0, 0.01, 2));
        x.extend(noisy(15, 95.0, 0.01, 3));
        let at: Vec<usize> = found(&detect(&x, &Options::default())).iter().map(|c| c.index).collect();
        // Both steps, whatever a 5 % test may add by chance in the flat parts.
        assert!(at.contains(&15) && at.contains(&30) && at.len() <= 3, "{at:?}");
    }

    #[test]
    fn a_flat_series_finds_nothing_in_most_seeds() {
        let hits = (0..20u64)
            .filter(|&seed| {
                let x = noisy(40, 100.0, 0.02, seed);
                !found(&detect(&x, &Options { seed, ..Options::default() })).is_empty()
            })
            .count();
        assert!(hits <= 2, "{hits} of 20 flat series had a change point");
    }

    #[test]
    fn the_same_seed_gives_the_same_answer() {
        let mut x = noisy(12, 100.0, 0.02, 7);
        x.extend(noisy(12, 102.0, 0.02, 8));
        let opt = Options { seed: 42, ..Options::default() };
        assert_eq!(detect(&x, &opt), detect(&x, &opt));
    }

    #[test]
    fn short_and_constant_series() {
        let opt = Options::default();
        assert_eq!(detect(&[], &opt), Detection::TooShort { len: 0, needed: 10 });
        assert_eq!(detect(&[1.0; 9], &opt), Detection::TooShort { len: 9, needed: 10 });
        assert_eq!(detect(&[3.0; 10], &opt), Detection::Found(vec![]));
        assert_eq!(detect(&[3.0; 40], &opt), Detection::Found(vec![]));
        let one = Options { min_segment: 1, ..opt };
        assert_eq!(detect(&[1.0], &one), Detection::TooShort { len: 1, needed: 2 });
        assert!(matches!(detect(&[1.0, 2.0], &one), Detection::Found(_)));
    }

    #[test]
    fn a_step_is_described() {
        let before = noisy(20, 100.0, 0.01, 3);
        let after = noisy(20, 105.0, 0.01, 4);
        let sb: Vec<f64> = before.iter().flat_map(|&m| [m * 0.99, m, m * 1.01]).collect();
        let sa: Vec<f64> = after.iter().flat_map(|&m| [m * 0.99, m, m * 1.01]).collect();
        let sides = Sides { medians_before: &before, medians_after: &after, samples_before: &sb, samples_after: &sa };
        let s = step(&sides, 0.05).unwrap();
        assert!((s.change_pct - 5.0).abs() < 1.0, "{}", s.change_pct);
        let (lo, hi) = s.ci_pct.unwrap();
        assert!(lo < s.change_pct && s.change_pct < hi && lo > 2.0 && hi < 8.0, "{lo} {hi}");
        assert!(s.samples_agree);
        // Samples that say the opposite do not agree.
        let sides = Sides { samples_before: &sa, samples_after: &sb, ..sides };
        assert!(!step(&sides, 0.05).unwrap().samples_agree);
        let empty = Sides { medians_before: &[], ..sides };
        assert!(step(&empty, 0.05).is_none());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn any_series_gives_an_answer_within_bounds(
            x in proptest::collection::vec(-1e6f64..1e6, 0..40),
            min in 1usize..8,
            seed: u64,
        ) {
            let opt = Options { min_segment: min, permutations: 19, seed, ..Options::default() };
            match detect(&x, &opt) {
                Detection::TooShort { len, needed } => prop_assert!(len < needed && needed == 2 * min),
                Detection::Found(c) => {
                    let mut last = 0;
                    for cp in c {
                        prop_assert!(cp.index >= last + min && cp.index + min <= x.len());
                        prop_assert!(cp.p > 0.0 && cp.p < opt.alpha && cp.q > 0.0);
                        last = cp.index;
                    }
                }
            }
        }

        #[test]
        fn the_answer_does_not_depend_on_scale(
            x in proptest::collection::vec(1f64..1e3, 10..30),
            k in 0.01f64..100.0,
        ) {
            let opt = Options { permutations: 19, ..Options::default() };
            let scaled: Vec<f64> = x.iter().map(|v| v * k).collect();
            let idx = |d: Detection| match d {
                Detection::Found(c) => c.iter().map(|c| c.index).collect::<Vec<_>>(),
                Detection::TooShort { .. } => vec![usize::MAX],
            };
            prop_assert_eq!(idx(detect(&x, &opt)), idx(detect(&scaled, &opt)));
        }
    }
}
