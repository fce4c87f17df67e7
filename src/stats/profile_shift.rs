//! Which functions' share of a profile changed between two results: the
//! profile half of a "why" line under a starred row
//! (`time in do_idle x4.1`).
//!
//! A function's share is the fraction of stack samples in which it appears
//! at least once (inclusive time: a caller counts its callees' samples). A
//! change is reported when it is large (the share at least
//! [`MIN_RATIO`] times larger or smaller, and at least [`MIN_POINTS`]
//! percentage points apart) and significant: a two-proportion z-test, two
//! sided, below `alpha` divided by the number of functions tested
//! (Bonferroni, since every function is a test). Samples within one profile
//! are not independent (they come in bursts of one task's running), so the
//! test is a screen for the size of change worth naming, not a star:
//! stars are decided by `compare_sides` alone. Pure: no I/O.

use crate::model::profile::{frame_name, Profile, CUT, DEEPER};
use statrs::distribution::{ContinuousCDF, Normal};
use std::collections::{BTreeMap, BTreeSet};

/// A share must change by at least this factor to be named.
pub(crate) const MIN_RATIO: f64 = 1.5;
/// ... and by at least this many percentage points.
pub(crate) const MIN_POINTS: f64 = 2.0;
/// The family-wise error rate [`shifts`] is usually asked for.
pub(crate) const ALPHA: f64 = 0.001;

/// One function whose share changed from profile A to profile B.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Shift {
    /// The function, without inferno's `_[k]` annotation.
    pub(crate) function: String,
    pub(crate) kernel: bool,
    /// Shares of samples, 0..1.
    pub(crate) share_a: f64,
    pub(crate) share_b: f64,
    /// The test's p value (before the Bonferroni factor).
    pub(crate) p: f64,
}

impl Shift {
    /// B's share over A's (infinite when A never ran it).
    pub(crate) fn ratio(&self) -> f64 {
        self.share_b / self.share_a
    }

    /// `time in do_idle x4.1`, `time in copy_page_range x0.25`, or with a
    /// share that was nothing, `time in f 0% -> 12%`.
    pub(crate) fn describe(&self) -> String {
        let r = self.ratio();
        if self.share_a == 0.0 || self.share_b == 0.0 {
            return format!("time in {} {:.0}% -> {:.0}%", self.function, self.share_a * 100.0, self.share_b * 100.0);
        }
        let digits = if r >= 10.0 {
            0
        } else if r >= 0.1 {
            1
        } else {
            2
        };
        let digits = if r < 1.0 && digits < 2 { 2 } else { digits };
        format!("time in {} x{:.*}", self.function, digits, r)
    }
}

/// Each function's inclusive samples in `p`, keyed by name and whether it
/// is a kernel frame. The root (the task's name) and kdelta's markers for
/// cut stacks are left out.
pub(crate) fn inclusive(p: &Profile) -> BTreeMap<(String, bool), u64> {
    let mut out: BTreeMap<(String, bool), u64> = BTreeMap::new();
    for (stack, &n) in &p.stacks {
        let mut seen = BTreeSet::new();
        for frame in stack.split(';').skip(1) {
            if frame == CUT || frame == DEEPER {
                continue;
            }
            let (name, kernel) = frame_name(frame);
            if seen.insert((name, kernel)) {
                *out.entry((name.to_string(), kernel)).or_default() += n;
            }
        }
    }
    out
}

/// Each function's self samples in `p` (the stacks it is the leaf of),
/// keyed as [`inclusive`] keys them.
pub(crate) fn exclusive(p: &Profile) -> BTreeMap<(String, bool), u64> {
    let mut out: BTreeMap<(String, bool), u64> = BTreeMap::new();
    for (stack, &n) in &p.stacks {
        let Some(leaf) = stack.split(';').skip(1).last() else { continue };
        if leaf == CUT || leaf == DEEPER {
            continue;
        }
        let (name, kernel) = frame_name(leaf);
        *out.entry((name.to_string(), kernel)).or_default() += n;
    }
    out
}

/// The functions whose share changed significantly from `a` to `b`
/// (module doc), largest change in share first; functions with the same
/// samples on both sides (one call chain) named once. Empty when either
/// profile has no samples.
pub(crate) fn shifts(a: &Profile, b: &Profile, alpha: f64) -> Vec<Shift> {
    let mut out = significant(a, b, alpha);
    // Functions with the same samples on both sides are one call chain
    // (a wrapper and what it calls): named once, by its kernel function if
    // it has one, else its shortest name.
    out.sort_by(|x, y| {
        (x.share_a, x.share_b)
            .partial_cmp(&(y.share_a, y.share_b))
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| y.kernel.cmp(&x.kernel))
            .then_with(|| x.function.len().cmp(&y.function.len()))
            .then_with(|| x.function.cmp(&y.function))
    });
    out.dedup_by(|later, first| later.share_a == first.share_a && later.share_b == first.share_b);
    out.sort_by(|x, y| {
        (y.share_b - y.share_a)
            .abs()
            .total_cmp(&(x.share_b - x.share_a).abs())
            .then_with(|| x.function.cmp(&y.function))
    });
    out
}

/// Every function whose share changed significantly from `a` to `b`
/// (module doc), each member of a call chain included, in no set order.
pub(crate) fn significant(a: &Profile, b: &Profile, alpha: f64) -> Vec<Shift> {
    let (na, nb) = (a.samples as f64, b.samples as f64);
    if na == 0.0 || nb == 0.0 {
        return Vec::new();
    }
    let (ia, ib) = (inclusive(a), inclusive(b));
    let names: BTreeSet<&(String, bool)> = ia.keys().chain(ib.keys()).collect();
    let tests = names.len().max(1) as f64;
    let normal = Normal::new(0.0, 1.0).expect("the standard normal");
    names
        .into_iter()
        .filter_map(|key| {
            let xa = *ia.get(key).unwrap_or(&0) as f64;
            let xb = *ib.get(key).unwrap_or(&0) as f64;
            let (pa, pb) = (xa / na, xb / nb);
            let big = (pb - pa).abs() * 100.0 >= MIN_POINTS
                && (pa == 0.0 || pb == 0.0 || pb / pa >= MIN_RATIO || pa / pb >= MIN_RATIO);
            if !big {
                return None;
            }
            let pooled = (xa + xb) / (na + nb);
            let se = (pooled * (1.0 - pooled) * (1.0 / na + 1.0 / nb)).sqrt();
            if se == 0.0 {
                return None;
            }
            let z = ((pb - pa) / se).abs();
            let p = 2.0 * (1.0 - normal.cdf(z));
            (p * tests < alpha).then(|| Shift { function: key.0.clone(), kernel: key.1, share_a: pa, share_b: pb, p })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(text: &str) -> Profile {
        let mut p = Profile::default();
        p.add_folded(text);
        p
    }

    #[test]
    fn a_large_change_is_named_and_noise_is_not() {
        let a = profile("kdelta;main;do_idle_[k] 100\nkdelta;main;work 800\nkdelta;main;other 100\n");
        let b = profile("kdelta;main;do_idle_[k] 410\nkdelta;main;work 530\nkdelta;main;other 60\n");
        let s = shifts(&a, &b, ALPHA);
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!(s[0].function, "do_idle");
        assert!(s[0].kernel);
        assert_eq!(s[0].describe(), "time in do_idle x4.1");
        assert_eq!(s[1].function, "work");
        assert!(!s[1].kernel);
        assert_eq!(s[1].describe(), "time in work x0.66");
        // `other`: 10% -> 6%, 1.67 times smaller but only 4 points, on
        // 1000 samples a side: not significant after Bonferroni.
        // `main` is in every sample on both sides: no change; the root is left out.
        assert!(s.iter().all(|x| x.function != "main" && x.function != "kdelta"));

        // The same shares on a few samples: not significant.
        let a = profile("k;main;do_idle_[k] 1\nk;main;work 9\n");
        let b = profile("k;main;do_idle_[k] 4\nk;main;work 6\n");
        assert!(shifts(&a, &b, ALPHA).is_empty());
        // One chain (the same samples on both sides) is named once, by its
        // kernel function.
        let a = profile("k;main;close;sys_close_[k] 100\nk;main;work 900\n");
        let b = profile("k;main;close;sys_close_[k] 500\nk;main;work 500\n");
        let s = shifts(&a, &b, ALPHA);
        let names: Vec<&str> = s.iter().map(|x| x.function.as_str()).collect();
        assert_eq!(names, ["sys_close", "work"], "{s:?}");
        // A large but small-in-points change: not named.
        let a = profile("k;main;rare 1\nk;main;work 9999\n");
        let b = profile("k;main;rare 50\nk;main;work 9950\n");
        assert!(shifts(&a, &b, ALPHA).is_empty());
    }

    #[test]
    fn a_function_new_on_one_side_and_recursion_counted_once() {
        let a = profile("k;main;f;f;f 100\nk;main;g 100\n");
        let b = profile("k;main;f 100\nk;main;g 50\nk;main;copy_page_range_[k] 50\n");
        let s = shifts(&a, &b, ALPHA);
        let new = s.iter().find(|x| x.function == "copy_page_range").unwrap();
        assert_eq!(new.describe(), "time in copy_page_range 0% -> 25%");
        // f: 50% on both sides (its recursion counts a sample once).
        assert!(s.iter().all(|x| x.function != "f"), "{s:?}");
        assert!(shifts(&Profile::default(), &b, ALPHA).is_empty());
    }
}
