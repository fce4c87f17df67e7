//! Paired samples: two results whose samples were taken in turns in the
//! same workers (`measure::sampler::turns`), so that sample `i` of one and
//! sample `i` of the other, in one worker, ran milliseconds apart.
//!
//! On a machine whose speed moves (a VM's memory bandwidth, shared with
//! other tenants), such a pair moves together: measured here, the log
//! figures of paired samples of the C library's memset against itself
//! correlate at 0.80 (median over 94 points not in cache). The ratio of the
//! two medians ignores that and carries both sides' swings; the median of
//! the per-pair ratios cancels what the pair shared. Of the same 94 A/A
//! points, 14 had a ratio of medians outside 0.95-1.053 and 3 a median of
//! pair ratios (docs/mem.md).

use super::summary::median;
use super::verdict::Pair;
use crate::model::sample::{used, SampleMeta};
use crate::model::Better;
use std::collections::BTreeMap;

/// The per-pair ratio of two results taken in turns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Paired {
    /// Median over the pairs of `b / a`.
    pub(crate) ratio: f64,
    /// A distribution-free 95 % interval of that median (order statistics
    /// of the pair ratios; the widest pair at the ends with few pairs).
    pub(crate) low: f64,
    pub(crate) high: f64,
    pub(crate) pairs: usize,
}

/// Fewer pairs than this say too little: the caller falls back to medians.
pub(crate) const MIN_PAIRS: usize = 3;

/// Pair `a`'s and `b`'s samples that shared a worker: within each worker
/// (`job`), the `i`-th sample of one with the `i`-th of the other, in the
/// order they were taken; a pair is kept when both samples are used (not
/// disturbed) and positive. `None` when the results were not taken in turns
/// or fewer than [`MIN_PAIRS`] pairs remain.
/// Each side is a result's samples and its per-sample records
/// (`ResultRecord::samples`, `samples_meta`).
pub(crate) fn paired_ratio(a: (&[f64], &[SampleMeta]), b: (&[f64], &[SampleMeta])) -> Option<Paired> {
    let (ja, jb) = (by_job(a.0, a.1)?, by_job(b.0, b.1)?);
    let mut ratios: Vec<f64> = Vec::new();
    for (_, xs, ys) in in_turns(&ja, &jb) {
        for (x, y) in xs.iter().zip(ys) {
            if let (Some(x), Some(y)) = (x, y) {
                if *x > 0.0 && *y > 0.0 {
                    ratios.push(y / x);
                }
            }
        }
    }
    of_ratios(ratios)
}

/// The adjacent pairs of two results taken in turns, as `verdict` judges
/// them: each worker's `i`-th used sample of one with its `i`-th of the
/// other, as the log speedup of B against A (> 0 when B is better). Empty
/// when they were not taken in turns.
pub(crate) fn pairs(a: (&[f64], &[SampleMeta]), b: (&[f64], &[SampleMeta]), better: Better) -> Vec<Pair> {
    let (Some(ja), Some(jb)) = (by_job(a.0, a.1), by_job(b.0, b.1)) else { return Vec::new() };
    let mut out = Vec::new();
    for (job, xs, ys) in in_turns(&ja, &jb) {
        for (x, y) in xs.iter().zip(ys) {
            if let (Some(x), Some(y)) = (x, y) {
                // B against A, > 1 when B is better (as `compare::speedup_of`,
                // written here so that this module needs nothing of `compare`).
                let s = match better {
                    Better::Lower => x / y,
                    Better::Higher => y / x,
                };
                if *x > 0.0 && *y > 0.0 && s.is_finite() {
                    out.push(Pair { worker: job, log_speedup: s.ln() });
                }
            }
        }
    }
    out
}

/// The median of per-pair ratios and its interval.
pub(crate) fn of_ratios(mut ratios: Vec<f64>) -> Option<Paired> {
    ratios.retain(|r| r.is_finite());
    if ratios.len() < MIN_PAIRS {
        return None;
    }
    ratios.sort_by(|x, y| x.total_cmp(y));
    let n = ratios.len();
    // Ranks of the median's 95 % interval: n/2 -+ 1.96 sqrt(n)/2 (the
    // normal approximation of the binomial), clamped to the sample.
    let half = 0.98 * (n as f64).sqrt();
    let lo = ((n as f64 / 2.0 - half).floor().max(0.0)) as usize;
    let hi = ((n as f64 / 2.0 + half).ceil() as usize).min(n - 1);
    Some(Paired { ratio: median(&ratios), low: ratios[lo], high: ratios[hi], pairs: n })
}

/// One worker's samples of one result, in the order taken (`Some(value)`
/// when used), and the time they spanned (first start, last end).
struct Worker {
    values: Vec<Option<f64>>,
    span: (f64, f64),
}

/// Each worker's samples. `None` when the result has no per-sample records
/// to pair by.
fn by_job(samples: &[f64], meta: &[SampleMeta]) -> Option<BTreeMap<u32, Worker>> {
    if meta.len() != samples.len() || samples.is_empty() {
        return None;
    }
    let keep = used(meta, samples.len());
    let mut idx: Vec<usize> = (0..samples.len()).collect();
    idx.sort_by(|&i, &j| meta[i].t.total_cmp(&meta[j].t));
    let mut out: BTreeMap<u32, Worker> = BTreeMap::new();
    for i in idx {
        let (start, end) = (meta[i].t, meta[i].t + meta[i].wall_s.max(0.0));
        let w = out.entry(meta[i].job).or_insert(Worker { values: Vec::new(), span: (start, end) });
        w.values.push(keep[i].then_some(samples[i]));
        w.span = (w.span.0.min(start), w.span.1.max(end));
    }
    Some(out)
}

/// The workers both results have and in which they took turns: a worker
/// number alone does not make a pair, since two runs number their workers
/// alike. Taken in turns, the two sides' samples in a worker interleave,
/// so their spans overlap; two runs' workers of one number are minutes
/// apart, and their samples shared nothing a pair could cancel.
fn in_turns<'w>(
    a: &'w BTreeMap<u32, Worker>,
    b: &'w BTreeMap<u32, Worker>,
) -> impl Iterator<Item = (u32, &'w [Option<f64>], &'w [Option<f64>])> {
    a.iter().filter_map(move |(job, x)| {
        let y = b.get(job)?;
        let overlap = x.span.0 <= y.span.1 && y.span.0 <= x.span.1;
        overlap.then_some((*job, x.values.as_slice(), y.values.as_slice()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    type Rec = (Vec<f64>, Vec<SampleMeta>);

    fn rec(samples: &[(u32, f64, f64, bool)]) -> Rec {
        samples
            .iter()
            .map(|&(job, t, v, disturbed)| (v, SampleMeta { job, t, disturbed, ..Default::default() }))
            .unzip()
    }

    fn paired(a: &Rec, b: &Rec) -> Option<Paired> {
        paired_ratio((&a.0, &a.1), (&b.0, &b.1))
    }

    #[test]
    fn pairs_follow_workers_and_order_and_skip_disturbed() {
        // Worker 1: A 10, B 11 | A 20, B 22 | A 30 (disturbed), B 99.
        // Worker 2: A 5, B 6 | A 8, B 8.8. A's medians move 4x; B/A stays ~1.1.
        let a = rec(&[
            (1, 0.0, 10.0, false),
            (1, 2.0, 20.0, false),
            (1, 4.0, 30.0, true),
            (2, 6.0, 5.0, false),
            (2, 8.0, 8.0, false),
        ]);
        let b = rec(&[
            (1, 1.0, 11.0, false),
            (1, 3.0, 22.0, false),
            (1, 5.0, 99.0, false),
            (2, 7.0, 6.0, false),
            (2, 9.0, 8.8, false),
        ]);
        let p = paired(&a, &b).unwrap();
        assert_eq!(p.pairs, 4);
        assert!((p.ratio - 1.1).abs() < 1e-9, "{p:?}");
        assert!(p.low <= p.ratio && p.ratio <= p.high);
        assert!((p.high - 1.2).abs() < 1e-9, "{p:?}");
    }

    #[test]
    fn samples_from_different_workers_do_not_pair() {
        let a = rec(&[(1, 0.0, 1.0, false), (1, 1.0, 1.0, false), (1, 2.0, 1.0, false)]);
        let b = rec(&[(2, 3.0, 2.0, false), (2, 4.0, 2.0, false), (2, 5.0, 2.0, false)]);
        assert_eq!(paired(&a, &b), None);
        // No per-sample records: nothing to pair by.
        let bare: Rec = (vec![1.0, 2.0, 3.0], Vec::new());
        assert_eq!(paired(&bare, &bare), None);
    }

    /// Two runs number their workers alike: worker 1 of a stored baseline
    /// and worker 1 of a run minutes later took no turns, and do not pair.
    #[test]
    fn workers_of_one_number_in_two_runs_do_not_pair() {
        let run = |t0: f64, v: f64| rec(&[(1, t0, v, false), (1, t0 + 1.0, v, false), (1, t0 + 2.0, v, false)]);
        let (then, now) = (run(0.0, 1.0), run(600.0, 2.0));
        assert_eq!(paired(&then, &now), None);
        assert!(pairs((&then.0, &then.1), (&now.0, &now.1), Better::Lower).is_empty());
        // The same samples taken in turns (spans overlapping) do pair.
        let turns = run(0.5, 2.0);
        assert_eq!(paired(&then, &turns).map(|p| (p.pairs, p.ratio)), Some((3, 2.0)));
        assert_eq!(pairs((&then.0, &then.1), (&turns.0, &turns.1), Better::Lower).len(), 3);
    }

    #[test]
    fn the_interval_narrows_with_pairs_and_holds_the_median() {
        let few = of_ratios(vec![0.9, 1.0, 1.1]).unwrap();
        assert_eq!((few.low, few.ratio, few.high), (0.9, 1.0, 1.1));
        let many: Vec<f64> = (0..101).map(|i| 0.5 + i as f64 / 100.0).collect();
        let p = of_ratios(many).unwrap();
        assert!((p.ratio - 1.0).abs() < 1e-9);
        assert!(p.low > 0.85 && p.high < 1.15, "{p:?}");
        assert_eq!(of_ratios(vec![1.0, f64::NAN, 2.0]), None);
    }
}
