//! Whether a change holds across the rounds of a run: the unit of evidence
//! behind a star.
//!
//! A run takes every point of a benchmark once per round, rounds
//! alternating direction, each in a fresh worker. Samples within one worker
//! share its state (where its pages and code landed, what the machine was
//! doing), so they are not independent: two workers of the same
//! configuration differ by more than the samples of one. Rounds are the
//! units that are. So a comparison is judged on the ratio of each round's
//! two medians, paired by round (taken seconds apart), on the log scale,
//! where a 2x slowdown and a 2x speedup are the same size:
//!
//! - a round *holds* the change when its ratio lies beyond the noise
//!   threshold in the direction of the overall change;
//! - with 6 or more paired rounds, a sign test: the chance that so many
//!   rounds hold when A and B are the same (each round's ratio then as
//!   likely above as below 1) is `2 P(Binomial(K, 1/2) >= held)`: 9 of 10
//!   gives 0.021, 10 of 10 0.002, 8 of 10 0.11;
//! - with 3 to 5 paired rounds (a sign test cannot go below 0.0625), every
//!   round must hold, Student's t on the log ratios (K - 1 degrees of
//!   freedom) must give p below the level, and the sides' workers must not
//!   overlap: every round median of the better side beyond every one of the
//!   other (`apart`). Five rounds whose ratios all lean one way by 1-7 %
//!   pass a t-test at 0.05 about once in twenty rows where nothing
//!   changed, and a table has ten such rows; that workers of one VM
//!   settle in speeds a few per cent apart makes it likelier. Apart, five
//!   workers against five happen by chance with p = 2/252 = 0.008 (the
//!   exact rank test on the workers, with no overlap), and a change that
//!   holds across workers (a 1.5x slower fork, a 30x slower pipe) is
//!   apart however widely its rounds spread;
//! - rounds of two different runs were not taken together and are not
//!   paired: their per-round medians are compared as two groups by a rank
//!   test.
//!
//! A side split into modes by where its tasks ran (a two-task latency on
//! two vCPUs) moves its round medians between modes, which widens the
//! spread of its rounds but not the direction of a change that holds: a
//! 6x slowdown holds in every round however far its slower side spreads.

use super::speedup::{mann_whitney_p, speedup_of};
use super::summary::median;
use crate::model::Better;
use serde::{Deserialize, Serialize};
use statrs::distribution::{Binomial, ContinuousCDF, DiscreteCDF, StudentsT};
use std::collections::BTreeMap;

/// Fewer paired rounds than this cannot be judged.
pub(crate) const MIN_ROUNDS: usize = 3;
/// From this many paired rounds on, the sign test decides alone.
pub(crate) const SIGN_ROUNDS: usize = 6;

/// Which test judged the rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum RoundTest {
    /// Sign test over paired rounds (6 or more).
    Sign,
    /// Every paired round holds, and Student's t on the log ratios (3 to 5 rounds).
    PairedT,
    /// Two runs: the per-round medians of each as two groups, Mann-Whitney.
    RankOfRounds,
}

/// How a change fared round by round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Rounds {
    pub(crate) test: RoundTest,
    /// Rounds judged: paired rounds, or B's rounds when the runs differ.
    pub(crate) rounds: usize,
    /// Of those, the rounds whose ratio lies beyond the threshold in the
    /// direction of the change.
    pub(crate) held: usize,
    /// The test's two-sided p-value.
    pub(crate) p: f64,
    /// The smallest and largest per-round speedup (B against A's median of
    /// rounds when the runs differ).
    pub(crate) low: f64,
    pub(crate) high: f64,
    /// [`RoundTest::PairedT`]: whether every round median of one side lies
    /// beyond every one of the other in the change's direction (false for
    /// the other tests, which do not ask it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) apart: bool,
}

impl Rounds {
    /// Whether the rounds hold the star up: the test's p below `alpha`
    /// and, with 3 to 5 paired rounds, the workers apart.
    pub(crate) fn pass(&self, alpha: f64) -> bool {
        self.p < alpha && (self.test != RoundTest::PairedT || self.apart)
    }

    /// `9 of 10 rounds`.
    pub(crate) fn describe(&self) -> String {
        format!("{} of {} rounds", self.held, self.rounds)
    }
}

/// Each round's median, in round order; samples of round 0 (unknown) are left out.
pub(crate) fn round_medians(values: &[f64], rounds: &[u32]) -> BTreeMap<u32, f64> {
    let mut by: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    if values.len() == rounds.len() {
        for (&v, &r) in values.iter().zip(rounds) {
            if r > 0 {
                by.entry(r).or_default().push(v);
            }
        }
    }
    by.into_iter().map(|(r, v)| (r, median(&v))).collect()
}

/// The log speedup of each round both sides took (> 0 when B is better),
/// in round order.
pub(crate) fn paired_log_speedups(a: (&[f64], &[u32]), b: (&[f64], &[u32]), better: Better) -> Vec<f64> {
    let (ma, mb) = (round_medians(a.0, a.1), round_medians(b.0, b.1));
    ma.iter()
        .filter_map(|(r, &x)| mb.get(r).map(|&y| speedup_of(x, y, better)))
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(f64::ln)
        .collect()
}

/// Two-sided sign test: `2 P(Binomial(n, 1/2) >= held)`, at most 1.
pub(crate) fn sign_p(n: usize, held: usize) -> f64 {
    if held == 0 || n == 0 {
        return 1.0;
    }
    let Ok(b) = Binomial::new(0.5, n as u64) else { return 1.0 };
    (2.0 * b.sf(held as u64 - 1)).min(1.0)
}

/// Student's t test that the mean of `d` is zero, two-sided.
pub(crate) fn one_sample_t_p(d: &[f64]) -> Option<f64> {
    let n = d.len();
    if n < 2 {
        return None;
    }
    let nf = n as f64;
    let m = d.iter().sum::<f64>() / nf;
    let var = d.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (nf - 1.0);
    if var == 0.0 {
        return Some(if m == 0.0 { 1.0 } else { 0.0 });
    }
    let t = m / (var / nf).sqrt();
    let dist = StudentsT::new(0.0, 1.0, nf - 1.0).ok()?;
    Some((2.0 * (1.0 - dist.cdf(t.abs()))).clamp(0.0, 1.0))
}

/// How the change `speedup` (B against A, > 1 when B is better) fares round
/// by round. `paired`: the two sides' rounds were taken together (one run).
/// `None` when fewer than [`MIN_ROUNDS`] rounds can be judged.
pub(crate) fn judge(
    a: (&[f64], &[u32]),
    b: (&[f64], &[u32]),
    better: Better,
    speedup: f64,
    threshold_pct: f64,
    paired: bool,
) -> Option<Rounds> {
    let (ma, mb) = (round_medians(a.0, a.1), round_medians(b.0, b.1));
    let dir = speedup.ln().signum();
    let limit = super::speedup::log_threshold(threshold_pct);
    let holds = |s: f64| dir != 0.0 && dir * s.ln() >= limit;
    let spread = |s: &[f64]| s.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| (l.min(x), h.max(x)));
    if !paired {
        let (ra, rb): (Vec<f64>, Vec<f64>) = (ma.into_values().collect(), mb.into_values().collect());
        if ra.len() < MIN_ROUNDS || rb.len() < MIN_ROUNDS {
            return None;
        }
        let base = median(&ra);
        let s: Vec<f64> =
            rb.iter().map(|&m| speedup_of(base, m, better)).filter(|s| s.is_finite() && *s > 0.0).collect();
        let held = s.iter().filter(|&&x| holds(x)).count();
        let p = mann_whitney_p(&ra, &rb)?;
        let (low, high) = spread(&s);
        return Some(Rounds { test: RoundTest::RankOfRounds, rounds: rb.len(), held, p, low, high, apart: false });
    }
    let s: Vec<f64> = ma
        .iter()
        .filter_map(|(r, &x)| mb.get(r).map(|&y| speedup_of(x, y, better)))
        .filter(|s| s.is_finite() && *s > 0.0)
        .collect();
    let k = s.len();
    if k < MIN_ROUNDS {
        return None;
    }
    let held = s.iter().filter(|&&x| holds(x)).count();
    let (low, high) = spread(&s);
    if k >= SIGN_ROUNDS {
        return Some(Rounds { test: RoundTest::Sign, rounds: k, held, p: sign_p(k, held), low, high, apart: false });
    }
    let p = if held == k {
        one_sample_t_p(&s.iter().map(|x| x.ln()).collect::<Vec<_>>()).unwrap_or(1.0)
    } else {
        sign_p(k, held)
    };
    let apart = apart(&ma.into_values().collect::<Vec<_>>(), &mb.into_values().collect::<Vec<_>>(), better, dir);
    Some(Rounds { test: RoundTest::PairedT, rounds: k, held, p, low, high, apart })
}

/// Rule 3: the change holds across the rounds, given how they fared
/// (`None`: too few rounds). Rounds that are not `known` (results stored
/// before kdelta kept them) leave the samples to decide.
pub(crate) fn rounds_hold(known: bool, rounds: Option<&Rounds>, alpha: f64) -> bool {
    match rounds {
        _ if !known => true,
        None => false,
        Some(r) => r.pass(alpha) || r.p.is_nan(),
    }
}

/// Whether every round median of side B lies beyond every one of side A in
/// direction `dir` (> 0: B better), so that no worker of one side would
/// pass for one of the other.
fn apart(a: &[f64], b: &[f64], better: Better, dir: f64) -> bool {
    dir != 0.0
        && !a.is_empty()
        && !b.is_empty()
        && a.iter().all(|&x| b.iter().all(|&y| dir * speedup_of(x, y, better).ln() > 0.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sign_test_values() {
        // Computed by hand: 2 (1 + 10) / 1024 and 2 / 1024.
        assert!((sign_p(10, 9) - 22.0 / 1024.0).abs() < 1e-12);
        assert!((sign_p(10, 10) - 2.0 / 1024.0).abs() < 1e-12);
        assert!((sign_p(10, 8) - 112.0 / 1024.0).abs() < 1e-12);
        assert!((sign_p(5, 5) - 0.0625).abs() < 1e-12, "five rounds cannot reach 0.05");
        assert_eq!(sign_p(10, 0), 1.0);
        assert_eq!(sign_p(10, 3), 1.0);
    }

    #[test]
    fn t_known_answer() {
        // t = 0.15 / (0.041231 / sqrt 5) = 8.1349 on 4 degrees of freedom;
        // p = I_{4/(4+t^2)}(2, 1/2) = 0.0012423 (the incomplete beta
        // integrated numerically, independently of statrs).
        let p = one_sample_t_p(&[0.1, 0.2, 0.15, 0.12, 0.18]).unwrap();
        assert!((p - 0.0012423).abs() < 1e-6, "{p}");
    }

    fn rounds_of(per: &[&[f64]]) -> (Vec<f64>, Vec<u32>) {
        let mut v = Vec::new();
        let mut r = Vec::new();
        for (i, xs) in per.iter().enumerate() {
            for &x in *xs {
                v.push(x);
                r.push(i as u32 + 1);
            }
        }
        (v, r)
    }

    #[test]
    fn a_bimodal_slower_side_holds_in_every_round() {
        // lat.pipe up against noht on two vCPUs: up 1.86-1.88 us, noht's
        // rounds 9.4-42.7 us (one CPU in some samples, across in others).
        let a = rounds_of(&[&[1.86, 1.87], &[1.88, 1.87], &[1.86, 1.86], &[1.87, 1.88], &[1.86, 1.87]]);
        let b = rounds_of(&[&[9.4, 41.0], &[42.7, 40.1], &[10.2, 9.9], &[38.0, 12.0], &[30.5, 9.6]]);
        let r = judge((&a.0, &a.1), (&b.0, &b.1), Better::Lower, 1.87 / 25.0, 1.0, true).unwrap();
        assert_eq!((r.test, r.rounds, r.held), (RoundTest::PairedT, 5, 5));
        assert!(r.p < 0.01, "{r:?}");
        assert!(r.low < r.high && r.high < 0.25);
        assert!(r.apart && r.pass(0.05), "however widely its rounds spread: {r:?}");
    }

    #[test]
    fn five_rounds_that_lean_one_way_with_workers_that_overlap_do_not_pass() {
        // lat.select.file, up against noht, one CPU each way, the README's
        // command on a 2-vCPU VM (2026-11-29): every round 1.2-7.2 % in
        // noht's favour, Student's t p = 0.049, but two of noht's five
        // workers were as slow as up's fastest.
        let up =
            rounds_of(&[&[0.2683, 0.2693], &[0.2671, 0.2673], &[0.2643, 0.2691], &[0.2617, 0.2619], &[0.2647, 0.2688]]);
        let noht =
            rounds_of(&[&[0.2658, 0.2653], &[0.2635, 0.2632], &[0.2493, 0.2481], &[0.2551, 0.2560], &[0.2600, 0.2601]]);
        let r = judge((&up.0, &up.1), (&noht.0, &noht.1), Better::Lower, 1.028, 1.0, true).unwrap();
        assert_eq!((r.test, r.rounds, r.held), (RoundTest::PairedT, 5, 5));
        assert!(r.p < 0.05, "the t-test alone would star it: {r:?}");
        assert!(!r.apart && !r.pass(0.05), "{r:?}");
        // Shifted 5 % further, every worker of noht is faster than every one of up.
        let faster: Vec<f64> = noht.0.iter().map(|x| x * 0.95).collect();
        let r = judge((&up.0, &up.1), (&faster, &noht.1), Better::Lower, 1.08, 1.0, true).unwrap();
        assert!(r.apart && r.pass(0.05), "{r:?}");
    }

    #[test]
    fn rounds_that_disagree_do_not_hold() {
        let a = rounds_of(&[&[10.0], &[10.0], &[10.0], &[10.0], &[10.0], &[10.0], &[10.0], &[10.0], &[10.0], &[10.0]]);
        // Three rounds 3 % faster, the rest within 0.5 %: a hog on some rounds.
        let b = rounds_of(&[&[9.7], &[10.02], &[9.7], &[9.98], &[10.0], &[9.7], &[10.01], &[9.99], &[10.03], &[9.97]]);
        let r = judge((&a.0, &a.1), (&b.0, &b.1), Better::Lower, 1.01, 1.0, true).unwrap();
        assert_eq!((r.test, r.rounds, r.held), (RoundTest::Sign, 10, 3));
        assert_eq!(r.p, 1.0);
        // A 3 % change in every round is found.
        let b = rounds_of(&[&[9.7], &[9.72], &[9.69], &[9.71], &[9.7], &[9.68], &[9.73], &[9.7], &[9.71], &[9.75]]);
        let r = judge((&a.0, &a.1), (&b.0, &b.1), Better::Lower, 1.03, 1.0, true).unwrap();
        assert_eq!(r.held, 10);
        assert!(r.p < 0.01);
    }

    #[test]
    fn too_few_rounds_or_rounds_unknown() {
        let a = rounds_of(&[&[1.0, 1.1], &[1.0, 1.1]]);
        assert!(judge((&a.0, &a.1), (&a.0, &a.1), Better::Lower, 1.0, 1.0, true).is_none());
        let zeros = vec![0u32; 4];
        let v = vec![1.0; 4];
        assert!(judge((&v, &zeros), (&v, &zeros), Better::Lower, 1.0, 1.0, true).is_none());
    }

    #[test]
    fn runs_apart_compare_their_rounds_as_groups() {
        let a = rounds_of(&[&[10.0], &[10.1], &[9.9], &[10.05], &[9.95], &[10.0]]);
        let b = rounds_of(&[&[12.0], &[12.1], &[11.9], &[12.05], &[11.95], &[12.0]]);
        let r = judge((&a.0, &a.1), (&b.0, &b.1), Better::Lower, 10.0 / 12.0, 1.0, false).unwrap();
        assert_eq!((r.test, r.rounds, r.held), (RoundTest::RankOfRounds, 6, 6));
        assert!(r.p < 0.01, "{r:?}");
    }

    /// Five rounds of one row, two samples per worker: each worker settles
    /// in one of two speeds 3 % apart (as a VM's do), then moves by
    /// `worker_sd` and each sample by 0.3 %; side B is `change` slower.
    /// Whether the rounds pass, with the workers-apart rule and without it.
    fn five_rounds(rng: &mut rand_chacha::ChaCha8Rng, change: f64, worker_sd: f64) -> (bool, bool) {
        use rand::Rng;
        let mut normal = || {
            let (u, v): (f64, f64) = (rng.gen_range(1e-12..1.0), rng.gen_range(0.0..1.0));
            (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        };
        let mut side = |factor: f64| {
            let per: Vec<Vec<f64>> = (0..5)
                .map(|_| {
                    let mode = if normal() > 0.0 { 1.03 } else { 1.0 };
                    let w = factor * mode * (1.0 + worker_sd * normal());
                    (0..2).map(|_| w * (1.0 + 0.003 * normal())).collect()
                })
                .collect();
            rounds_of(&per.iter().map(Vec::as_slice).collect::<Vec<_>>())
        };
        let (a, b) = (side(1.0), side(1.0 + change));
        let s = super::super::summary::median(&a.0) / super::super::summary::median(&b.0);
        match judge((&a.0, &a.1), (&b.0, &b.1), Better::Lower, s, 1.0, true) {
            Some(r) => (r.pass(0.05), r.p < 0.05),
            None => (false, false),
        }
    }

    #[test]
    fn workers_apart_keep_a_table_of_unchanged_rows_unstarred_and_find_real_changes() {
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(51);
        let rate = |rng: &mut rand_chacha::ChaCha8Rng, change: f64, sd: f64, n: usize| {
            let (mut with, mut without) = (0, 0);
            for _ in 0..n {
                let (w, wo) = five_rounds(rng, change, sd);
                with += usize::from(w);
                without += usize::from(wo);
            }
            (with as f64 / n as f64, without as f64 / n as f64)
        };
        // Unchanged rows (4000 simulated): the t-test alone starred 1.1 % of
        // them, about one table of ten rows in ten; apart, 0.5 %.
        let (with, without) = rate(&mut rng, 0.0, 0.01, 4000);
        assert!(without > 0.008 && with < 0.007 && with < without / 1.8, "unchanged: {with} apart, {without} without");
        // A 10 % change is found as often as before; a 50 % one always.
        let (with, without) = rate(&mut rng, 0.10, 0.01, 1000);
        assert!(with > 0.95 && without > 0.95, "10 %: {with} apart, {without} without");
        let (with, _) = rate(&mut rng, 0.5, 0.05, 1000);
        assert!(with > 0.99, "50 %: {with}");
    }

    proptest! {
        #[test]
        fn a_slowdown_and_a_speedup_of_one_factor_judge_alike(f in 1.02f64..8.0, k in 3usize..12) {
            let a: Vec<f64> = (0..k).map(|i| 10.0 + (i % 3) as f64 * 0.01).collect();
            let r: Vec<u32> = (1..=k as u32).collect();
            let slower: Vec<f64> = a.iter().map(|x| x * f).collect();
            let faster: Vec<f64> = a.iter().map(|x| x / f).collect();
            let s = judge((&a, &r), (&slower, &r), Better::Lower, 1.0 / f, 1.0, true).unwrap();
            let q = judge((&a, &r), (&faster, &r), Better::Lower, f, 1.0, true).unwrap();
            prop_assert_eq!(s.held, q.held);
            prop_assert!((s.p - q.p).abs() < 1e-9);
            prop_assert!((s.low * q.high - 1.0).abs() < 1e-9);
        }

        #[test]
        fn p_is_a_probability(v in proptest::collection::vec(0.1f64..100.0, 6..40)) {
            let r: Vec<u32> = (0..v.len() as u32).map(|i| i / 2 + 1).collect();
            let w: Vec<f64> = v.iter().rev().copied().collect();
            if let Some(x) = judge((&v, &r), (&w, &r), Better::Higher, 1.05, 1.0, true) {
                prop_assert!((0.0..=1.0).contains(&x.p));
                prop_assert!(x.held <= x.rounds);
            }
        }
    }
}
