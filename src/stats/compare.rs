//! Comparing two sets of samples: speedup, significance, confidence interval.
//!
//! Convention (the 2003 study's "speedup" column): `speedup` is A/B for
//! lower-is-better figures and B/A for higher-is-better ones, so that
//! `change = (speedup - 1) x 100 %` is positive exactly when B is better.
//!
//! **The rule for a star** (the one place it is decided, [`compare_sides`]):
//! a change is significant when
//! 1. it is at least the noise threshold (1 % by default) on the log scale,
//!    `|ln speedup| >= ln(1 + threshold)`, so a slowdown and a speedup of
//!    the same factor count alike;
//! 2. the Mann-Whitney rank test over the clean samples gives p < `alpha`;
//! 3. it holds across the run's rounds (`rounds::judge`): with 6 or more
//!    paired rounds a sign test over the rounds whose ratio passes the
//!    threshold in the change's direction gives p < `alpha` (9 of 10 rounds
//!    suffice), with 3 to 5 every round holds and Student's t on the log
//!    ratios gives p < `alpha`; fewer rounds are too few to judge;
//! 4. neither side is noisy (too few clean samples) or busy.
//!
//! Where the rounds are unknown (results stored before kdelta kept them),
//! Welch's t-test must pass as well, as the rule was then. Where a side
//! splits by where its tasks ran, the change is also judged mode by mode
//! (`modes`).
//!
//! **A veto weighed against the change.** A noisy or busy side withholds
//! the star only when what disturbed it could explain the change: another
//! task sharing a CPU with the measured ones takes at most its fair share,
//! half the time with one competitor, so a change of 2x or more that holds
//! across the rounds (rule 3) is starred whatever the disturbance (a
//! two-task latency whose tasks keep both CPUs busy themselves, 5-14x
//! slower across CPUs, is then no longer withheld as "busy").
//!
//! **Pairs first.** Where the two sides took turns in the same workers, the
//! change is judged on adjacent pairs instead (`verdict::paired_change`):
//! the estimate, its interval and the star are the pairs', and rules 2-4
//! do not apply (the pairs are clean ones, and their interval already
//! widens with few of them or with workers that disagree).
//!
//! Every comparison also carries one of three answers (`verdict::Answer`):
//! *different* (starred), *same* (its interval within the threshold) or
//! *unknown*; `--runs auto` samples while a comparison is unknown.

use super::modes::{self, ModeChange, ModeInput};
use super::rounds::{self, Rounds};
use super::summary::median;
use super::verdict::{self, Answer, Pair, PairedChange};
use crate::model::record::ResultRecord;
use crate::model::sample::Placement;
use crate::model::Better;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Comparison {
    /// B relative to A, >1 when B is better (ratio of medians).
    pub(crate) speedup: f64,
    /// (speedup - 1) x 100: + means B is better.
    pub(crate) change_pct: f64,
    /// Welch's two-sided p-value (None with fewer than 2 samples a side).
    pub(crate) p_welch: Option<f64>,
    /// Mann-Whitney U two-sided p-value, normal approximation with tie correction.
    pub(crate) p_mann_whitney: Option<f64>,
    /// 95 % bootstrap interval of the speedup (ratio of medians).
    pub(crate) ci_low: Option<f64>,
    pub(crate) ci_high: Option<f64>,
    pub(crate) significant: bool,
    /// How the change fared round by round (absent when the rounds are
    /// unknown or too few).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) rounds: Option<Rounds>,
    /// The change within each placement, when a side split by where its tasks ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) modes: Vec<ModeChange>,
    /// Why a change that passed the rank test and the threshold is not marked significant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) withheld: Option<Withheld>,
    /// Different (starred), same or unknown.
    #[serde(default)]
    pub(crate) answer: Answer,
    /// The change from adjacent pairs, where the sides took turns: then
    /// `speedup`, `change_pct` and the interval are the pairs'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) paired: Option<PairedChange>,
}

impl Comparison {
    /// Rule 1: at least the threshold on the log scale.
    pub(crate) fn beyond_threshold(&self, opt: &CompareOptions) -> bool {
        self.speedup.ln().abs() >= (1.0 + opt.threshold_pct / 100.0).ln() - 1e-12
    }
}

/// Reasons a star is withheld.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Withheld {
    /// A side had fewer clean samples than wanted.
    Noisy,
    /// A side had more disturbed samples than clean ones.
    Busy,
    /// Fewer than 3 rounds in which both sides have clean samples.
    FewRounds,
    /// The change does not hold in enough rounds.
    NotInRounds,
    /// Too few clean samples for the rank test to pass at all, whatever
    /// the change (3 against 3, as `--runs 3` or `--quick` give).
    FewSamples,
    /// The sides took turns, and the interval of their pairs' change is too
    /// wide to tell it from the threshold (too few pairs or workers).
    WideInterval,
}

impl Withheld {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Withheld::Noisy => "a side is noisy",
            Withheld::Busy => "a side was measured on a busy CPU",
            Withheld::FewRounds => "too few rounds to judge",
            Withheld::NotInRounds => "held in too few rounds",
            Withheld::FewSamples => "too few clean samples to judge",
            Withheld::WideInterval => "too few pairs to judge",
        }
    }
}

/// What a comparison needs to know of each side beyond its clean samples.
#[derive(Debug, Clone, Default)]
pub(crate) struct Side {
    /// The round of each clean sample (empty when unknown).
    pub(crate) rounds: Vec<u32>,
    /// Where each clean sample's tasks ran (empty when unknown; `None` for one task).
    pub(crate) placements: Vec<Option<Placement>>,
    /// The result split by placement (`ResultRecord::placement`).
    pub(crate) split: bool,
    pub(crate) noisy: bool,
    pub(crate) busy: bool,
}

impl Side {
    /// A stored result's clean samples and what a comparison needs to know of them.
    pub(crate) fn of(r: &ResultRecord) -> (Vec<f64>, Side) {
        let clean = r.clean_with_meta();
        // Rounds are known when every clean sample has a record and one names its round.
        let recorded = clean.iter().all(|(_, m)| m.is_some());
        let known = recorded && clean.iter().any(|(_, m)| m.is_some_and(|m| m.round > 0));
        let rounds = if known { clean.iter().map(|(_, m)| m.map_or(0, |m| m.round)).collect() } else { Vec::new() };
        let placements =
            if recorded { clean.iter().map(|(_, m)| m.and_then(|m| m.placement())).collect() } else { Vec::new() };
        let side = Side { rounds, placements, split: !r.placement.is_empty(), noisy: r.is_noisy(), busy: r.is_busy() };
        (clean.into_iter().map(|(v, _)| v).collect(), side)
    }
}

/// The comparison of two stored results: [`compare_sides`] on their clean
/// samples, with their adjacent pairs where they took turns.
pub(crate) fn compare_results(a: &ResultRecord, b: &ResultRecord, opt: &CompareOptions) -> Option<Comparison> {
    let ((va, sa), (vb, sb)) = (Side::of(a), Side::of(b));
    let pairs = super::paired::pairs((&a.samples, &a.samples_meta), (&b.samples, &b.samples_meta), a.better);
    compare_sides(&va, &sa, &vb, &sb, &pairs, a.better, opt)
}

/// [`compare`], then the rule for a star (the module's documentation):
/// the pairs decide where there are enough of them; otherwise the rounds
/// must agree, and neither side be noisy or busy unless the change is
/// beyond what that could explain.
pub(crate) fn compare_sides(
    a: &[f64],
    sa: &Side,
    b: &[f64],
    sb: &Side,
    pairs: &[Pair],
    better: Better,
    opt: &CompareOptions,
) -> Option<Comparison> {
    let mut c = compare(a, b, better, opt)?;
    let known = !sa.rounds.is_empty() && !sb.rounds.is_empty();
    if known {
        c.rounds =
            rounds::judge((a, &sa.rounds), (b, &sb.rounds), better, c.speedup, opt.threshold_pct, opt.rounds_paired);
    }
    c.modes = modes::changes(
        &ModeInput { values: a, rounds: &sa.rounds, placements: &sa.placements, split: sa.split },
        &ModeInput { values: b, rounds: &sb.rounds, placements: &sb.placements, split: sb.split },
        better,
        opt,
    );
    if let Some(p) = verdict::paired_change(pairs) {
        c.speedup = p.speedup;
        c.change_pct = (p.speedup - 1.0) * 100.0;
        (c.ci_low, c.ci_high) = (Some(p.low), Some(p.high));
        c.answer = verdict::answer(p.speedup, p.low, p.high, opt.threshold_pct);
        c.significant = c.answer == Answer::Different;
        c.paired = Some(p);
        if !c.significant && c.beyond_threshold(opt) {
            c.withheld = Some(Withheld::WideInterval);
        }
        return Some(c);
    }
    c.significant = samples_pass(&c, known, opt);
    let why = if sa.noisy || sb.noisy {
        Some(Withheld::Noisy)
    } else if sa.busy || sb.busy {
        Some(Withheld::Busy)
    } else {
        None
    };
    let why = match why {
        // Disturbance explains at most a halving; rule 3 must still hold.
        Some(_) if known && c.speedup.ln().abs() >= 2f64.ln() && rounds_fail(&c, known, opt).is_none() => None,
        Some(w) => Some(w),
        None => rounds_fail(&c, known, opt),
    };
    if c.significant && why.is_some() {
        c.significant = false;
        c.withheld = why;
    } else if !c.significant && c.beyond_threshold(opt) {
        // A change beyond the threshold that failed the rank test: say why
        // when it could not have passed, or a side was disturbed.
        c.withheld = if best_rank_p(a.len(), b.len()) >= opt.alpha {
            Some(Withheld::FewSamples)
        } else {
            why.filter(|w| *w != Withheld::NotInRounds)
        };
    }
    c.answer = if c.significant {
        Answer::Different
    } else {
        let interval = if known && opt.rounds_paired {
            verdict::rounds_interval(&rounds::paired_log_speedups((a, &sa.rounds), (b, &sb.rounds), better))
        } else {
            c.ci_low.zip(c.ci_high)
        };
        match interval {
            Some((l, h)) if why.is_none() && verdict::answer(c.speedup, l, h, opt.threshold_pct) == Answer::Same => {
                Answer::Same
            }
            _ => Answer::Unknown,
        }
    };
    Some(c)
}

/// Rules 1 and 2; where the rounds are unknown, Welch's t as well. Where
/// they are known Welch's t, which a side split into modes sways, is
/// reported but not required.
fn samples_pass(c: &Comparison, known: bool, opt: &CompareOptions) -> bool {
    let welch = known || c.p_welch.is_some_and(|p| p < opt.alpha);
    welch && c.p_mann_whitney.is_some_and(|p| p < opt.alpha) && c.beyond_threshold(opt)
}

/// Rule 3: why the rounds withhold the star (`None` when they do not, or
/// when they are unknown and the samples alone decide).
fn rounds_fail(c: &Comparison, known: bool, opt: &CompareOptions) -> Option<Withheld> {
    if !known {
        return None;
    }
    match &c.rounds {
        None => Some(Withheld::FewRounds),
        Some(r) if r.p >= opt.alpha => Some(Withheld::NotInRounds),
        Some(_) => None,
    }
}

/// Rules 1 to 3 for a comparison whose `rounds` were judged (`known`).
pub(super) fn passes(c: &Comparison, known: bool, opt: &CompareOptions) -> bool {
    samples_pass(c, known, opt) && rounds_fail(c, known, opt).is_none()
}

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
        CompareOptions { alpha: 0.05, threshold_pct: 1.0, bootstrap: 2000, rounds_paired: true }
    }
}

pub(crate) fn speedup_of(a: f64, b: f64, better: Better) -> f64 {
    match better {
        Better::Lower => a / b,
        Better::Higher => b / a,
    }
}

pub(crate) fn compare(a: &[f64], b: &[f64], better: Better, opt: &CompareOptions) -> Option<Comparison> {
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
    let mut c = Comparison {
        speedup,
        change_pct,
        p_welch,
        p_mann_whitney,
        ci_low,
        ci_high,
        significant: false,
        rounds: None,
        modes: Vec::new(),
        withheld: None,
        answer: Answer::Unknown,
        paired: None,
    };
    c.significant = p_welch.is_some_and(|p| p < opt.alpha)
        && p_mann_whitney.is_some_and(|p| p < opt.alpha)
        && c.beyond_threshold(opt);
    Some(c)
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

/// Mann-Whitney U test, two-sided, normal approximation with tie correction
/// and continuity correction. Needs at least 2 samples a side.
/// The smallest p-value the rank test can give with `n` and `m` samples:
/// that of two sides that do not overlap at all.
pub(crate) fn best_rank_p(n: usize, m: usize) -> f64 {
    let a: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let b: Vec<f64> = (n..n + m).map(|i| i as f64).collect();
    mann_whitney_p(&a, &b).unwrap_or(1.0)
}

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

/// Geometric mean of positive values (None if any is not positive, NaN or
/// infinite).
pub(crate) fn geomean(v: &[f64]) -> Option<f64> {
    if v.is_empty() || v.iter().any(|&x| x <= 0.0 || !x.is_finite()) {
        return None;
    }
    Some((v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp())
}

#[cfg(test)]
#[path = "compare_tests.rs"]
mod tests;
