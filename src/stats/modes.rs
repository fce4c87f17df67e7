//! A change judged mode by mode: where a side's samples split by where its
//! tasks ran (on one CPU, across CPUs; `trust::placement_split`), the two
//! sides are compared within each placement, and a placement found on one
//! side only is said to be new. The row's verdict then says which modes
//! moved: `lat.pipe` from one CPU to two may be as fast as before when both
//! tasks share a CPU, and slower only because it now also runs across CPUs.

use super::rounds::{self, rounds_hold, Rounds};
use super::speedup::{mann_whitney_p, samples_pass, speedup_of, welch_p, CompareOptions};
use super::summary::median;
use crate::model::sample::Placement;
use crate::model::Better;
use serde::{Deserialize, Serialize};

/// One side's share of a placement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ModeSide {
    pub(crate) median: f64,
    pub(crate) n: usize,
    /// Share of the side's samples whose placement is known, 0..1.
    pub(crate) share: f64,
}

/// The change within one placement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ModeChange {
    pub(crate) placement: Placement,
    /// `None`: the placement is not a mode of that side (under 10 % of its
    /// samples, or fewer than 2).
    pub(crate) a: Option<ModeSide>,
    pub(crate) b: Option<ModeSide>,
    /// Both sides have the mode: B against A, as the row's change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) change_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) rounds: Option<Rounds>,
    /// Both sides have it and the change within it passes the row's rule.
    pub(crate) significant: bool,
}

impl ModeChange {
    /// The mode moved: a significant change within it, or a mode one side lacks.
    pub(crate) fn moved(&self) -> bool {
        self.significant || self.a.is_some() != self.b.is_some()
    }
}

/// One side as the mode comparison needs it: clean samples, their rounds
/// and placements (aligned), and whether the side's result split by placement.
pub(crate) struct ModeInput<'a> {
    pub(crate) values: &'a [f64],
    pub(crate) rounds: &'a [u32],
    pub(crate) placements: &'a [Option<Placement>],
    pub(crate) split: bool,
}

fn pick<'a>(s: &ModeInput<'a>, p: Placement) -> (Vec<f64>, Vec<u32>, f64) {
    let known = s.placements.iter().filter(|x| x.is_some()).count();
    let mut v = Vec::new();
    let mut r = Vec::new();
    for (i, x) in s.placements.iter().enumerate() {
        if *x == Some(p) {
            v.push(s.values[i]);
            r.push(s.rounds.get(i).copied().unwrap_or(0));
        }
    }
    let share = if known == 0 { 0.0 } else { v.len() as f64 / known as f64 };
    (v, r, share)
}

/// The change per placement, when either side split by placement and both
/// sides know where each sample ran. Empty otherwise.
pub(crate) fn changes(a: &ModeInput, b: &ModeInput, better: Better, opt: &CompareOptions) -> Vec<ModeChange> {
    let aligned = |s: &ModeInput| s.placements.len() == s.values.len() && s.placements.iter().any(|p| p.is_some());
    if !(a.split || b.split) || !aligned(a) || !aligned(b) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for p in [Placement::OneCpu, Placement::Across] {
        let (va, ra, sha) = pick(a, p);
        let (vb, rb, shb) = pick(b, p);
        let side = |v: &[f64], share: f64| {
            (v.len() >= 2 && share >= 0.1).then(|| ModeSide { median: median(v), n: v.len(), share })
        };
        let (ma, mb) = (side(&va, sha), side(&vb, shb));
        if ma.is_none() && mb.is_none() {
            continue;
        }
        let mut m = ModeChange { placement: p, a: ma, b: mb, change_pct: None, rounds: None, significant: false };
        if m.a.is_some() && m.b.is_some() {
            // The mode's median and tests only (no bootstrap interval: it is never shown).
            let speedup = speedup_of(median(&va), median(&vb), better);
            if speedup.is_finite() && speedup > 0.0 {
                let known = ra.iter().any(|&r| r > 0) && rb.iter().any(|&r| r > 0);
                let rounds = if known {
                    rounds::judge((&va, &ra), (&vb, &rb), better, speedup, opt.threshold_pct, opt.rounds_paired)
                } else {
                    None
                };
                // The row's rule, judged on the mode's samples and rounds.
                m.significant = samples_pass(speedup, welch_p(&va, &vb), mann_whitney_p(&va, &vb), known, opt)
                    && rounds_hold(known, rounds.as_ref(), opt.alpha);
                m.change_pct = Some((speedup - 1.0) * 100.0);
                m.rounds = rounds;
            }
        }
        out.push(m);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_mode_moved_and_the_shared_one_did_not() {
        // A: every sample on one CPU at 7 us. B: 60 % on one CPU at 7 us,
        // 40 % across CPUs at 90 us, over five rounds.
        let mut a = (Vec::new(), Vec::new(), Vec::new());
        let mut b = (Vec::new(), Vec::new(), Vec::new());
        for r in 1..=5u32 {
            for i in 0..5 {
                a.0.push(7.0 + i as f64 * 0.01);
                a.1.push(r);
                a.2.push(Some(Placement::OneCpu));
                let across = i < 2;
                b.0.push(if across { 90.0 + i as f64 } else { 7.0 + i as f64 * 0.01 });
                b.1.push(r);
                b.2.push(Some(if across { Placement::Across } else { Placement::OneCpu }));
            }
        }
        let ia = ModeInput { values: &a.0, rounds: &a.1, placements: &a.2, split: false };
        let ib = ModeInput { values: &b.0, rounds: &b.1, placements: &b.2, split: true };
        let m = changes(&ia, &ib, Better::Lower, &CompareOptions::default());
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].placement, Placement::OneCpu);
        assert!(!m[0].moved(), "{:?}", m[0]);
        assert!(m[0].change_pct.unwrap().abs() < 1.0);
        assert_eq!(m[1].placement, Placement::Across);
        assert!(m[1].a.is_none() && m[1].b.is_some() && m[1].moved());
        assert!((m[1].b.as_ref().unwrap().share - 0.4).abs() < 1e-9);
        // Neither side split: nothing to say.
        let ib = ModeInput { split: false, ..ib };
        assert!(changes(&ia, &ib, Better::Lower, &CompareOptions::default()).is_empty());
    }
}
