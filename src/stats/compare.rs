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
//!    suffice), with 3 to 5 every round holds, Student's t on the log
//!    ratios gives p < `alpha` and the sides' workers do not overlap;
//!    fewer rounds are too few to judge;
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

use super::defaults;
use super::modes::{self, ModeChange, ModeInput};
use super::rounds::{self, Rounds};
use super::speeds::{self, Speeds};
use super::speedup;
pub(crate) use super::speedup::{best_rank_p, bootstrap_ci, mann_whitney_p, speedup_of, welch_p, CompareOptions};
use super::summary::median;
use super::verdict::{self, Answer, Pair, PairedChange};
use crate::model::record::ResultRecord;
use crate::model::sample::Placement;
use crate::model::Better;
use serde::{Deserialize, Serialize};

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
    /// Where a side's workers fell into two speeds (`speeds`), A's and B's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) speeds_a: Option<Speeds>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) speeds_b: Option<Speeds>,
    /// The interval the answer was read from, as evidence (not stored):
    /// whether more samples could settle an unknown (`--runs auto`).
    #[serde(skip)]
    pub(crate) evidence: Option<verdict::Evidence>,
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
    /// Workers fell into two speeds and no speed moved: the sides differ
    /// only in how many workers landed in each (`speeds`).
    SpeedMix,
    /// Too few clean samples for the rank test to pass at all, whatever
    /// the change (3 against 3, as `--runs 3` or `--quick` give).
    FewSamples,
    /// The sides took turns, and the interval of their pairs' change is too
    /// wide to tell it from the threshold (too few pairs or workers).
    WideInterval,
    /// With 3 to 5 rounds, a worker of one side is as fast as one of the
    /// other (`rounds`).
    WorkersOverlap,
    /// Two runs measured apart, between which the machine moved, was busier
    /// beside one, or changed speed during one: the change is within what
    /// that could explain ([`Comparison::withhold_within`]).
    MachineChanged,
}

impl Withheld {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Withheld::Noisy => "a side is noisy",
            Withheld::Busy => "a side was measured on a busy CPU",
            Withheld::FewRounds => "too few rounds to judge",
            Withheld::NotInRounds => "held in too few rounds",
            Withheld::SpeedMix => "workers fell into two speeds, and neither speed moved",
            Withheld::FewSamples => "too few clean samples to judge",
            Withheld::WideInterval => "too few pairs to judge",
            Withheld::WorkersOverlap => "its workers overlap (3-5 rounds need them apart)",
            Withheld::MachineChanged => "the machine changed between the runs",
        }
    }
}

impl Comparison {
    /// Between two runs whose machine changed: a change (log) within `bar`
    /// is unknown, neither different nor the same; its star, if it had one,
    /// is withheld (`Withheld::MachineChanged`). A larger change keeps its
    /// star.
    pub(crate) fn withhold_within(&mut self, bar: f64) {
        if self.speedup.ln().abs() > bar {
            return;
        }
        if self.significant {
            self.significant = false;
            self.withheld = Some(Withheld::MachineChanged);
        }
        self.answer = Answer::Unknown;
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
    /// How far this side's disturbed samples moved from its clean ones
    /// (|log ratio of their medians|): what disturbance was seen to do to
    /// it. `None` without both kinds of sample.
    pub(crate) disturbance_moved: Option<f64>,
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
        let values: Vec<f64> = clean.into_iter().map(|(v, _)| v).collect();
        let disturbed: Vec<f64> = if r.samples_meta.len() == r.samples.len() {
            r.samples.iter().zip(&r.samples_meta).filter(|(_, m)| m.disturbed).map(|(v, _)| *v).collect()
        } else {
            Vec::new()
        };
        let moved = (!values.is_empty() && !disturbed.is_empty())
            .then(|| (median(&disturbed) / median(&values)).ln().abs())
            .filter(|x| x.is_finite());
        let side = Side {
            rounds,
            placements,
            split: !r.placement.is_empty(),
            noisy: r.is_noisy(),
            busy: r.is_busy(),
            disturbance_moved: moved,
        };
        (values, side)
    }
}

/// The comparison of two stored results: [`compare_sides`] on their clean
/// samples, with their adjacent pairs where they took turns.
pub(crate) fn compare_results(a: &ResultRecord, b: &ResultRecord, opt: &CompareOptions) -> Option<Comparison> {
    let ((va, sa), (vb, sb)) = (Side::of(a), Side::of(b));
    let pairs = super::paired::pairs((&a.samples, &a.samples_meta), (&b.samples, &b.samples_meta), a.better);
    compare_sides(&va, &sa, &vb, &sb, &pairs, a.better, opt)
}

/// [`compare`]'s figures, then the rule for a star (the module's documentation):
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
        return Some(by_pairs(c, p, opt));
    }
    c.significant = samples_pass(&c, known, opt);
    let why = if sa.noisy || sb.noisy {
        Some(Withheld::Noisy)
    } else if sa.busy || sb.busy {
        Some(Withheld::Busy)
    } else {
        None
    };
    let mix = if known { speed_mix(&mut c, (a, sa), (b, sb), opt) } else { None };
    let why = match why {
        // Disturbance explains at most a halving, and no more than twice
        // what it was seen to do to the side's disturbed samples; rule 3
        // must still hold.
        // Where the disturbance cannot explain the change, what withholds
        // it is the rounds, if anything: say so.
        Some(_) if known && beyond_disturbance(c.speedup, sa, sb, opt) => rounds_fail(&c, known, opt).or(mix),
        Some(w) => Some(w),
        None => rounds_fail(&c, known, opt).or(mix),
    };
    if c.significant && why.is_some() {
        c.significant = false;
        c.withheld = why;
    } else if !c.significant && speedup::beyond_threshold(c.speedup, opt.threshold_pct) {
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
            let d = rounds::paired_log_speedups((a, &sa.rounds), (b, &sb.rounds), better);
            let i = verdict::rounds_interval(&d);
            if let Some((l, h)) = i {
                c.evidence = verdict::Evidence::of_interval(l, h, d.len() as f64 - 1.0);
            }
            i
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

/// Where the two sides took turns in one worker, the adjacent pairs'
/// interval decides: the change, its interval and the answer are theirs.
fn by_pairs(mut c: Comparison, p: verdict::PairedChange, opt: &CompareOptions) -> Comparison {
    c.speedup = p.speedup;
    c.change_pct = (p.speedup - 1.0) * 100.0;
    (c.ci_low, c.ci_high) = (Some(p.low), Some(p.high));
    c.answer = verdict::answer(p.speedup, p.low, p.high, opt.threshold_pct);
    c.evidence = verdict::Evidence::of_interval(p.low, p.high, p.workers as f64 - 1.0);
    c.significant = c.answer == Answer::Different;
    c.paired = Some(p);
    if !c.significant && speedup::beyond_threshold(c.speedup, opt.threshold_pct) {
        c.withheld = Some(Withheld::WideInterval);
    }
    c
}

/// Whether a change is larger than disturbance could explain: 2x or more
/// (another task sharing a CPU takes at most half of it), or beyond the
/// threshold plus twice how far the disturbed samples of every noisy or
/// busy side moved from its clean ones. A side with no disturbed samples to
/// tell by (noisy for want of samples) leaves the 2x rule alone.
fn beyond_disturbance(speedup: f64, sa: &Side, sb: &Side, opt: &CompareOptions) -> bool {
    let change = speedup.ln().abs();
    if change >= defaults::LARGE_CHANGE_LN {
        return true;
    }
    let vetoing = [sa, sb].into_iter().filter(|s| s.noisy || s.busy);
    let seen: Option<Vec<f64>> = vetoing.map(|s| s.disturbance_moved).collect();
    match seen {
        Some(v) if !v.is_empty() => {
            let most = v.into_iter().fold(0.0, f64::max);
            change > speedup::log_threshold(opt.threshold_pct) + 2.0 * most
        }
        _ => false,
    }
}

/// Workers in two speeds (each round is a worker of the point): records
/// each side's speeds, and says [`Withheld::SpeedMix`] when the change is
/// beyond the threshold but no speed the sides share moved by as much.
fn speed_mix(c: &mut Comparison, a: (&[f64], &Side), b: (&[f64], &Side), opt: &CompareOptions) -> Option<Withheld> {
    let (ma, mb) = (speeds::worker_medians(a.0, &a.1.rounds), speeds::worker_medians(b.0, &b.1.rounds));
    (c.speeds_a, c.speeds_b) = (speeds::split(&ma), speeds::split(&mb));
    let within = speeds::within(&ma, &mb)?;
    let moved = within.iter().any(|&r| speedup::beyond_threshold(r, opt.threshold_pct));
    (speedup::beyond_threshold(c.speedup, opt.threshold_pct) && !moved).then_some(Withheld::SpeedMix)
}

/// Rules 1 and 2; where the rounds are unknown, Welch's t as well. Where
/// they are known Welch's t, which a side split into modes sways, is
/// reported but not required.
fn samples_pass(c: &Comparison, known: bool, opt: &CompareOptions) -> bool {
    speedup::samples_pass(c.speedup, c.p_welch, c.p_mann_whitney, known, opt)
}

/// Rule 3: why the rounds withhold the star (`None` when they do not, or
/// when they are unknown and the samples alone decide). Where the sides
/// took their rounds in turns (`rounds_paired`), too few rounds to judge
/// leave a change of 2x or more to the samples: a machine's drift between
/// rounds does not make one (two speeds of a worker here differ by 60 % at
/// most), as disturbance does not (`beyond_disturbance`). Runs measured
/// apart (two runs, runs pooled by host) stay judged by their rounds.
fn rounds_fail(c: &Comparison, known: bool, opt: &CompareOptions) -> Option<Withheld> {
    if !known {
        return None;
    }
    match &c.rounds {
        None if opt.rounds_paired && c.speedup.ln().abs() >= defaults::LARGE_CHANGE_LN => None,
        None => Some(Withheld::FewRounds),
        Some(r) if r.p >= opt.alpha => Some(Withheld::NotInRounds),
        Some(r) if !r.pass(opt.alpha) => Some(Withheld::WorkersOverlap),
        Some(_) => None,
    }
}

/// The figures of two sets of samples (speedup, p-values, interval) before
/// anything is judged: `significant` is false and the answer unknown until
/// [`compare_sides`], the one place a star is decided, weighs them.
fn compare(a: &[f64], b: &[f64], better: Better, opt: &CompareOptions) -> Option<Comparison> {
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
    Some(Comparison {
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
        speeds_a: None,
        speeds_b: None,
        evidence: None,
    })
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
