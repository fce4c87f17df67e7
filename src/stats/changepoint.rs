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
//! segment are scored in O(n log n): each value's summed distance to the
//! values before it comes from a Fenwick tree over the values' ranks, and
//! running sums give every split from those.
//!
//! **The search.** Start with the whole series as one segment. Each step
//! takes, over every segment, the split with the largest `q` that leaves at
//! least `min_segment` values on each side, and tests it: shuffle that
//! segment `permutations` times, find the largest `q` of each shuffle, and
//! `p = (1 + shuffles at least as large) / (1 + permutations)`. When
//! `p < alpha` the split is a change point and its segment becomes two;
//! otherwise the search stops. The shuffles stop as soon as `p` can no
//! longer fall below `alpha` (after `alpha·(1 + permutations)` shuffles at
//! least as large), so a test costs at most `permutations` shuffles of
//! O(n log n) each, and a split that is no change point usually far fewer.
//! A series's search shuffles at most [`MAX_SHUFFLED`] values in all: one
//! that would need more stops with the change points found so far, and
//! says so. The shuffles come from a seeded generator:
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

/// The values of a segment ready to be scored in any order: each value's
/// rank, the values sorted, and each rank's summed distance to every value.
/// A shuffle reorders the ranks; none of this changes, so a permutation
/// costs O(n log n), not the O(n²) of summing every pair again.
struct Ranked {
    /// `rank[i]`: where `x[i]` sorts (ties by position, which changes
    /// nothing: equal values are 0 apart).
    rank: Vec<usize>,
    /// The values, sorted and moved by their mean (distances do not move;
    /// sums of smaller numbers keep more digits).
    sorted: Vec<f64>,
    /// `dist[r]`: the sum of `|sorted[r] - v|` over every value `v`.
    dist: Vec<f64>,
}

impl Ranked {
    fn of(x: &[f64]) -> Ranked {
        let n = x.len();
        let mean = if n == 0 { 0.0 } else { x.iter().sum::<f64>() / n as f64 };
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| x[a].total_cmp(&x[b]).then(a.cmp(&b)));
        let sorted: Vec<f64> = order.iter().map(|&i| x[i] - mean).collect();
        let mut rank = vec![0; n];
        for (r, &i) in order.iter().enumerate() {
            rank[i] = r;
        }
        let total: f64 = sorted.iter().sum();
        let mut below = 0.0;
        let dist = (0..n)
            .map(|r| {
                let v = sorted[r];
                let d = (v * r as f64 - below) + (total - below - v) - v * (n - r - 1) as f64;
                below += v;
                d
            })
            .collect();
        Ranked { rank, sorted, dist }
    }

    /// The best split of the values in the order `ranks` gives, with at
    /// least `min` a side: `(t, q)`.
    fn best_split(&self, ranks: &[usize], min: usize) -> Option<(usize, f64)> {
        let n = ranks.len();
        let min = min.max(1);
        if n < 2 * min {
            return None;
        }
        // before[i]: sum of |x_i - x_j| over j < i, from the counts and sums
        // of the values seen so far below x_i's rank (a Fenwick tree over
        // ranks); after[i]: x_i's distance to all, less that.
        let mut count = Fenwick::new(n);
        let mut sum = Fenwick::new(n);
        let (mut before, mut after) = (vec![0.0; n], vec![0.0; n]);
        let mut seen_sum = 0.0;
        for (i, &r) in ranks.iter().enumerate() {
            let v = self.sorted[r];
            let (c, s) = (count.prefix(r), sum.prefix(r));
            let b = (v * c - s) + (seen_sum - s) - v * (i as f64 - c);
            before[i] = b;
            after[i] = self.dist[r] - b;
            count.add(r, 1.0);
            sum.add(r, v);
            seen_sum += v;
        }
        split_from(&before, &after, min)
    }
}

/// A Fenwick (binary indexed) tree of sums over ranks.
struct Fenwick(Vec<f64>);

impl Fenwick {
    fn new(n: usize) -> Fenwick {
        Fenwick(vec![0.0; n + 1])
    }
    fn add(&mut self, at: usize, v: f64) {
        let mut i = at + 1;
        while i < self.0.len() {
            self.0[i] += v;
            i += i & i.wrapping_neg();
        }
    }
    /// The sum over ranks below `at`.
    fn prefix(&self, at: usize) -> f64 {
        let (mut i, mut s) = (at, 0.0);
        while i > 0 {
            s += self.0[i];
            i -= i & i.wrapping_neg();
        }
        s
    }
}

/// The best split of `x` with at least `min` values a side: `(t, q)`.
fn best_split(x: &[f64], min: usize) -> Option<(usize, f64)> {
    let ranked = Ranked::of(x);
    ranked.best_split(&ranked.rank, min)
}

/// The best split from each value's summed distance to the values before
/// it and after it.
fn split_from(before: &[f64], after: &[f64], min: usize) -> Option<(usize, f64)> {
    let n = before.len();
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

/// The permutation test of a split of `seg` whose statistic is `q`, and
/// how many shuffles it took. It stops as soon as the answer is settled:
/// once `p` can no longer fall below `alpha`, the remaining shuffles cannot
/// make the split a change point (a p-value at or above `alpha` is never
/// reported), so a flat series costs a few shuffles, and a change point the
/// shuffles asked for.
fn shuffled_p(seg: &[f64], q: f64, opt: &Options, rng: &mut rand_chacha::ChaCha8Rng) -> (f64, usize) {
    let ranked = Ranked::of(seg);
    let mut shuffled = ranked.rank.clone();
    let mut hits = 0usize;
    let settled = |hits: usize| (1 + hits) as f64 / (1 + opt.permutations) as f64 >= opt.alpha;
    let mut taken = 0;
    for _ in 0..opt.permutations {
        shuffled.shuffle(rng);
        taken += 1;
        if ranked.best_split(&shuffled, opt.min_segment).is_some_and(|(_, s)| s >= q * (1.0 - 1e-12)) {
            hits += 1;
            if settled(hits) {
                break;
            }
        }
    }
    ((1 + hits) as f64 / (1 + opt.permutations) as f64, taken)
}

/// Values shuffled and scored in one series's search, at most: the work
/// bound that keeps any `--permutations` on any series within tens of
/// seconds (5·10^8 values is 250,000 shuffles of 2,000 runs, 25 tests at
/// 10,000 permutations). A search that reaches it stops there with the
/// change points found so far ([`detect_bounded`] says so).
pub(crate) const MAX_SHUFFLED: usize = 500_000_000;

/// E-divisive means over `x` (the module's documentation). Values must be
/// finite; a series shorter than two minimum segments is [`Detection::TooShort`].
#[cfg(test)]
pub(crate) fn detect(x: &[f64], opt: &Options) -> Detection {
    detect_bounded(x, opt, MAX_SHUFFLED).0
}

/// [`detect`] within `budget` values shuffled and scored, and whether the
/// budget ended the search before it was done (a next test would have
/// passed it). Deterministic: the same series, seed and budget give the
/// same answer.
pub(crate) fn detect_bounded(x: &[f64], opt: &Options, budget: usize) -> (Detection, bool) {
    let min = opt.min_segment.max(1);
    if x.len() < 2 * min {
        return (Detection::TooShort { len: x.len(), needed: 2 * min }, false);
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(opt.seed);
    let mut bounds = vec![0, x.len()];
    let mut found = Vec::new();
    let mut spent = 0usize;
    let mut cut_short = false;
    loop {
        let best = bounds
            .windows(2)
            .filter_map(|w| best_split(&x[w[0]..w[1]], min).map(|(t, q)| (w[0], w[1], t, q)))
            .max_by(|a, b| a.3.total_cmp(&b.3));
        let Some((lo, hi, t, q)) = best else { break };
        if q.is_nan() || q <= 0.0 {
            break;
        }
        // A test takes at most this much; one that might pass the budget
        // is not started.
        let cost = (hi - lo).saturating_mul(opt.permutations);
        if spent.saturating_add(cost) > budget {
            cut_short = true;
            break;
        }
        let (p, taken) = shuffled_p(&x[lo..hi], q, opt, &mut rng);
        spent += (hi - lo) * taken;
        if p >= opt.alpha {
            break;
        }
        found.push(ChangePoint { index: lo + t, q, p });
        bounds.push(lo + t);
        bounds.sort_unstable();
    }
    found.sort_by_key(|c| c.index);
    (Detection::Found(found), cut_short)
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

    /// Every split scored as its definition says: every pair summed.
    fn best_split_by_pairs(x: &[f64], min: usize) -> Option<(usize, f64)> {
        let n = x.len();
        let mut before = vec![0.0; n];
        let mut after = vec![0.0; n];
        for i in 0..n {
            for j in (i + 1)..n {
                let d = (x[i] - x[j]).abs();
                after[i] += d;
                before[j] += d;
            }
        }
        if n < 2 * min.max(1) {
            return None;
        }
        split_from(&before, &after, min.max(1))
    }

    #[test]
    fn ranked_scoring_matches_every_pair_summed() {
        for seed in 0..20u64 {
            let mut x = noisy(60, 1000.0, 0.05, seed);
            x.extend(noisy(40, 1030.0, 0.05, seed + 99));
            x[7] = x[3]; // a tie
            for min in [1, 5, 20] {
                let (t, q) = best_split(&x, min).unwrap();
                let (t2, q2) = best_split_by_pairs(&x, min).unwrap();
                assert_eq!(t, t2, "seed {seed} min {min}");
                assert!((q - q2).abs() <= 1e-9 * q2.abs().max(1.0), "seed {seed}: {q} vs {q2}");
            }
        }
    }

    #[test]
    fn a_split_that_is_no_change_stops_shuffling_early() {
        // 10,000 shuffles asked for; a flat series settles "no change" after
        // about alpha x 10,000 = 500 shuffles at least as large.
        let x = noisy(400, 100.0, 0.02, 5);
        let (_, q) = best_split(&x, 5).unwrap();
        let opt = Options { permutations: 10_000, ..Options::default() };
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let (p, taken) = shuffled_p(&x, q, &opt, &mut rng);
        assert!(p >= opt.alpha, "{p}");
        assert!(taken < opt.permutations / 2, "{taken} shuffles");
        // A real step still takes every shuffle, and its p is exact.
        let mut y = noisy(200, 100.0, 0.01, 6);
        y.extend(noisy(200, 110.0, 0.01, 7));
        let (_, q) = best_split(&y, 5).unwrap();
        let (p, taken) = shuffled_p(&y, q, &opt, &mut rng);
        assert_eq!((p, taken), (1.0 / 10_001.0, 10_000));
    }

    #[test]
    fn a_search_stops_within_its_budget_and_says_so() {
        let mut x = Vec::new();
        for k in 0..8 {
            x.extend(noisy(30, 100.0 + 5.0 * (k % 2) as f64, 0.005, k));
        }
        let opt = Options { permutations: 999, ..Options::default() };
        let (all, short) = detect_bounded(&x, &opt, usize::MAX);
        assert!(!short);
        assert!(found(&all).len() >= 7, "{all:?}");
        // Room for the first test and a few of the next: fewer, and said.
        let (some, short) = detect_bounded(&x, &opt, 240 * 999 * 3);
        assert!(short);
        let some = found(&some);
        assert!(!some.is_empty() && some.len() < found(&all).len(), "{some:?}");
        assert!(some.iter().all(|c| found(&all).contains(c)));
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
