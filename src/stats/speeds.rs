//! Modes by worker: whole workers of one point that settle in distinct
//! speeds.
//!
//! On a VM, a worker (one process, started afresh) may run all its samples
//! at one of two speeds: the host placed its vCPU, its memory or its cache
//! share one way or the other for the worker's lifetime. Samples within a
//! worker then agree, and workers disagree in two clusters. Two sides
//! compared worker against worker (configurations, two runs) can then
//! differ only in how many of their workers landed in each speed: six fast
//! of ten against four of ten looks like a change of a few percent that
//! holds in most rounds, and is none.
//!
//! [`split`] finds such a split in one side's worker medians: the widest gap
//! between consecutive (log) medians, at least [`MIN_GAP`] and [`SPREAD_X`]
//! times the spread within the two groups, each holding at least
//! [`MIN_WORKERS`] workers. [`within`] then judges the change speed by
//! speed: each side's workers in the mode nearest the other's. When every
//! mode the sides share moved by less than the threshold, the change is a
//! mix, not a change (`compare::Withheld::SpeedMix`).

use super::summary::{median, scaled_mad};
use serde::{Deserialize, Serialize};

/// The smallest gap between two speeds, on the log scale (3 %).
pub(crate) const MIN_GAP: f64 = 0.03;
/// How many times the spread within each speed the gap must be.
pub(crate) const SPREAD_X: f64 = 4.0;
/// Workers each speed needs.
pub(crate) const MIN_WORKERS: usize = 2;

/// One speed of a side's workers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Speed {
    /// The median of its workers' medians.
    pub(crate) median: f64,
    pub(crate) workers: usize,
}

/// A side whose workers fall into two speeds, the lower first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Speeds {
    pub(crate) low: Speed,
    pub(crate) high: Speed,
}

impl Speeds {
    /// `6 of 10 workers at 1.02, 4 at 1.31` (values as `fmt` shows them).
    pub(crate) fn describe(&self, fmt: impl Fn(f64) -> String) -> String {
        let n = self.low.workers + self.high.workers;
        format!(
            "{} of {n} workers at {}, {} at {}",
            self.low.workers,
            fmt(self.low.median),
            self.high.workers,
            fmt(self.high.median)
        )
    }
}

/// Each worker's median, workers told apart by `worker` (aligned with
/// `values`), in first-seen order.
pub(crate) fn worker_medians(values: &[f64], worker: &[u32]) -> Vec<f64> {
    let mut keys: Vec<u32> = Vec::new();
    for w in worker {
        if !keys.contains(w) {
            keys.push(*w);
        }
    }
    keys.iter()
        .map(|k| {
            let v: Vec<f64> = values.iter().zip(worker).filter(|(_, w)| *w == k).map(|(x, _)| *x).collect();
            median(&v)
        })
        .collect()
}

/// The two speeds of `medians` (one per worker, positive), if they split.
pub(crate) fn split(medians: &[f64]) -> Option<Speeds> {
    let mut l: Vec<f64> = medians.iter().filter(|x| **x > 0.0 && x.is_finite()).map(|x| x.ln()).collect();
    if l.len() < 2 * MIN_WORKERS || l.len() != medians.len() {
        return None;
    }
    l.sort_by(|a, b| a.total_cmp(b));
    let (k, gap) =
        (MIN_WORKERS..=l.len() - MIN_WORKERS).map(|k| (k, l[k] - l[k - 1])).max_by(|a, b| a.1.total_cmp(&b.1))?;
    let (lo, hi) = l.split_at(k);
    let spread = scaled_mad(lo).max(scaled_mad(hi));
    if gap < MIN_GAP || gap < SPREAD_X * spread {
        return None;
    }
    let speed = |g: &[f64]| Speed { median: median(g).exp(), workers: g.len() };
    Some(Speeds { low: speed(lo), high: speed(hi) })
}

/// The change speed by speed: for every speed of one side, the other
/// side's nearest (its only one when it does not split), as ratios B/A of
/// the two speeds' medians. `None` when neither side splits.
pub(crate) fn within(a: &[f64], b: &[f64]) -> Option<Vec<f64>> {
    let (sa, sb) = (split(a), split(b));
    if sa.is_none() && sb.is_none() {
        return None;
    }
    let levels = |s: &Option<Speeds>, m: &[f64]| match s {
        Some(s) => vec![s.low.median, s.high.median],
        None => vec![median(m)],
    };
    let (la, lb) = (levels(&sa, a), levels(&sb, b));
    let nearest = |x: f64, to: &[f64]| {
        to.iter().copied().min_by(|p, q| (p / x).ln().abs().total_cmp(&(q / x).ln().abs())).unwrap_or(x)
    };
    // Each of the larger set of speeds against its nearest on the other side.
    let out = if la.len() >= lb.len() {
        la.iter().map(|&x| nearest(x, &lb) / x).collect()
    } else {
        lb.iter().map(|&y| y / nearest(y, &la)).collect()
    };
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_in_two_speeds_split_and_one_speed_does_not() {
        let two = [1.00, 1.01, 0.99, 1.30, 1.31, 1.00, 1.29];
        let s = split(&two).unwrap();
        assert_eq!((s.low.workers, s.high.workers), (4, 3));
        assert!((s.low.median - 1.0).abs() < 0.01 && (s.high.median - 1.30).abs() < 0.01);
        assert_eq!(s.describe(|x| format!("{x:.2}")), "4 of 7 workers at 1.00, 3 at 1.30");
        // One speed with ordinary spread; a lone outlier worker; too few.
        assert!(split(&[1.00, 1.02, 0.98, 1.01, 0.99, 1.03]).is_none());
        assert!(split(&[1.00, 1.01, 0.99, 1.00, 1.50]).is_none());
        assert!(split(&[1.0, 1.0, 1.3]).is_none());
        // A gap smaller than 3 %, however tight the groups.
        assert!(split(&[1.00, 1.00, 1.02, 1.02]).is_none());
    }

    #[test]
    fn a_mix_of_the_same_two_speeds_is_no_change_within_them() {
        // Six fast of ten against four fast of ten: the medians differ by
        // 30 %, the speeds by nothing.
        let a = [1.0, 1.0, 1.01, 0.99, 1.0, 1.0, 1.3, 1.3, 1.31, 1.29];
        let b = [1.0, 1.01, 0.99, 1.0, 1.3, 1.3, 1.31, 1.29, 1.3, 1.3];
        let w = within(&a, &b).unwrap();
        assert!(w.iter().all(|r| (r - 1.0).abs() < 0.01), "{w:?}");
        // Both speeds 10 % slower: a change within each.
        let b: Vec<f64> = a.iter().map(|x| x * 1.1).collect();
        assert!(within(&a, &b).unwrap().iter().all(|r| (r - 1.1).abs() < 0.01));
        // One side in one speed: judged against the other's nearest.
        let b = [1.3, 1.31, 1.29, 1.3, 1.3];
        let w = within(&a, &b).unwrap();
        assert!(w.iter().any(|r| (r - 1.0).abs() < 0.01), "{w:?}");
        assert!(within(&[1.0, 1.01, 0.99, 1.0], &[1.1, 1.1, 1.11, 1.09]).is_none());
    }

    #[test]
    fn worker_medians_follow_first_seen_order() {
        assert_eq!(worker_medians(&[1.0, 5.0, 3.0, 7.0, 2.0], &[2, 1, 2, 1, 2]), [2.0, 6.0]);
    }
}
