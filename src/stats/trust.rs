//! How far a result can be trusted: the confidence interval of its median,
//! a figure below the resolution of a subtraction, and a
//! result split by where its tasks ran.

use super::summary::median;
pub(crate) use crate::model::sample::PlacementGroup;
use crate::model::sample::{Placement, SampleMeta};
use statrs::distribution::{Binomial, DiscreteCDF};

/// Distribution-free 95 % confidence interval of the median from order
/// statistics: the `j`-th smallest and the `j`-th largest sample, `j` the
/// largest rank with P(Binomial(n, 1/2) < j) <= 2.5 %. Needs 6 samples.
pub(crate) fn median_ci(v: &[f64]) -> Option<(f64, f64)> {
    let n = v.len();
    if n < 6 {
        return None;
    }
    let b = Binomial::new(0.5, n as u64).ok()?;
    // cdf(k) = P(X <= k); we want the largest j >= 1 with P(X <= j - 1) <= 0.025.
    let mut j = 0usize;
    for k in 1..=n / 2 {
        if b.cdf((k - 1) as u64) <= 0.025 {
            j = k;
        } else {
            break;
        }
    }
    if j == 0 {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    Some((s[j - 1], s[n - j]))
}

/// Half the width of the median's 95 % interval, in percent of the median.
pub(crate) fn ci_half_width_pct(v: &[f64]) -> Option<f64> {
    let (lo, hi) = median_ci(v)?;
    let m = median(v);
    (m != 0.0).then(|| (hi - lo) / 2.0 / m.abs() * 100.0)
}

/// A figure that is a difference (a measured overhead subtracted) is below
/// resolution when the 95 % interval of its median reaches zero or below.
/// Returns the bound to print, `< X`: the interval's upper end when it is
/// positive, else the interval's width (what the subtraction can resolve).
/// With fewer than 6 samples, a median at or below zero is below resolution.
pub(crate) fn below_resolution(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let (lo, hi) = match median_ci(v) {
        Some(ci) => ci,
        None => {
            let m = median(v);
            let mut s = v.to_vec();
            s.sort_by(|a, b| a.total_cmp(b));
            if m > 0.0 {
                return None;
            }
            (s[0], s[s.len() - 1])
        }
    };
    if lo > 0.0 {
        return None;
    }
    Some(if hi > 0.0 { hi } else { (hi - lo).max(f64::MIN_POSITIVE) })
}

/// Split a result's samples by where its tasks ran (one CPU against across
/// CPUs) when that explains two clusters: both groups hold at least 2
/// samples and 10 % of them, their medians differ by more than 25 %, and
/// the groups barely overlap (fewer than 10 % of either group's samples lie
/// beyond the other group's median). `None` otherwise, or without the
/// per-sample CPUs of at least two tasks.
pub(crate) fn placement_split(values: &[f64], meta: &[SampleMeta]) -> Option<Vec<PlacementGroup>> {
    if values.len() != meta.len() || values.len() < 4 {
        return None;
    }
    let n = values.len();
    let of = |p: Placement| -> Vec<f64> {
        values.iter().zip(meta).filter(|(_, m)| m.placement() == Some(p)).map(|(v, _)| *v).collect()
    };
    let one = of(Placement::OneCpu);
    let across = of(Placement::Across);
    let enough = |g: &[f64]| g.len() >= 2 && g.len() as f64 >= 0.1 * n as f64;
    if !enough(&one) || !enough(&across) {
        return None;
    }
    let (m1, m2) = (median(&one), median(&across));
    let (lo, hi) = if m1 <= m2 { (&one, &across) } else { (&across, &one) };
    let (mlo, mhi) = (m1.min(m2), m1.max(m2));
    if !(mlo > 0.0 && mhi / mlo > 1.25) {
        return None;
    }
    let crossing_lo = lo.iter().filter(|&&v| v >= mhi).count() as f64 / lo.len() as f64;
    let crossing_hi = hi.iter().filter(|&&v| v <= mlo).count() as f64 / hi.len() as f64;
    if crossing_lo >= 0.1 || crossing_hi >= 0.1 {
        return None;
    }
    let mut groups = vec![
        PlacementGroup { placement: Placement::OneCpu, median: m1, n: one.len(), share: one.len() as f64 / n as f64 },
        PlacementGroup {
            placement: Placement::Across,
            median: m2,
            n: across.len(),
            share: across.len() as f64 / n as f64,
        },
    ];
    let mixed = of(Placement::Mixed);
    if !mixed.is_empty() {
        groups.push(PlacementGroup {
            placement: Placement::Mixed,
            median: median(&mixed),
            n: mixed.len(),
            share: mixed.len() as f64 / n as f64,
        });
    }
    Some(groups)
}

/// `7.1 us on one CPU (62% of samples), 91 us across CPUs (38%)`.
pub(crate) fn describe_split(groups: &[PlacementGroup], unit: &str, fmt: impl Fn(f64) -> String) -> String {
    groups
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let share =
                if i == 0 { format!("{:.0}% of samples", g.share * 100.0) } else { format!("{:.0}%", g.share * 100.0) };
            format!("{} {unit} {} ({share})", fmt(g.median), g.placement.describe())
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn median_interval_from_order_statistics() {
        // n = 10: P(X <= 1) = 11/1024 <= 2.5 %, P(X <= 2) = 56/1024 > 2.5 %:
        // the interval is the 2nd smallest and the 2nd largest.
        let v: Vec<f64> = (1..=10).map(|x| x as f64).collect();
        assert_eq!(median_ci(&v), Some((2.0, 9.0)));
        assert_eq!(median_ci(&v[..5]), None);
        // n = 6: only the extremes (P(X <= 0) = 1/64).
        assert_eq!(median_ci(&[6.0, 1.0, 5.0, 2.0, 4.0, 3.0]), Some((1.0, 6.0)));
        let h = ci_half_width_pct(&[100.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 100.0]).unwrap();
        assert!(h < 1.0, "{h}");
    }

    #[test]
    fn subtraction_below_resolution() {
        // lat.ctx at size 16 on a noisy machine: the net figure straddles zero.
        let v = [-0.9, 0.3, -0.2, 0.4, 0.1, -0.5, 0.2, 0.05, -0.1, 0.3];
        let b = below_resolution(&v).unwrap();
        assert!(b > 0.0 && b <= 0.4, "{b}");
        // All negative: the bound is what the subtraction resolves.
        assert!(below_resolution(&[-0.3, -0.2, -0.25, -0.3, -0.1, -0.2]).unwrap() > 0.0);
        // Clearly positive: a real figure.
        assert_eq!(below_resolution(&[1.1, 1.2, 1.0, 1.15, 1.1, 1.05]), None);
        assert_eq!(below_resolution(&[1.1, 1.2]), None);
        assert!(below_resolution(&[-1.0, 0.5]).is_some());
    }

    fn meta(start: &[u32], end: &[u32]) -> SampleMeta {
        SampleMeta { cpus_start: start.to_vec(), cpus_end: end.to_vec(), ..Default::default() }
    }

    #[test]
    fn splits_a_pipe_by_placement() {
        let mut v = Vec::new();
        let mut m = Vec::new();
        for i in 0..13 {
            v.push(7.0 + (i % 3) as f64 * 0.1);
            m.push(meta(&[1, 1], &[1, 1]));
        }
        for i in 0..8 {
            v.push(90.0 + (i % 4) as f64);
            m.push(meta(&[0, 1], &[0, 1]));
        }
        let g = placement_split(&v, &m).unwrap();
        assert_eq!(g[0].placement, Placement::OneCpu);
        assert_eq!((g[0].n, g[1].n), (13, 8));
        assert!((g[0].median - 7.1).abs() < 0.01 && (g[1].median - 91.5).abs() < 0.6);
        let text = describe_split(&g, "us", |x| format!("{x:.1}"));
        assert_eq!(text, "7.1 us on one CPU (62% of samples), 91.5 us across CPUs (38%)");
        // The same values with placement that does not explain them: no split.
        let shuffled: Vec<SampleMeta> =
            (0..21).map(|i| if i % 2 == 0 { meta(&[1, 1], &[1, 1]) } else { meta(&[0, 1], &[0, 1]) }).collect();
        assert!(placement_split(&v, &shuffled).is_none());
        // One task: nothing to split.
        let solo: Vec<SampleMeta> = (0..21).map(|_| meta(&[0], &[0])).collect();
        assert!(placement_split(&v, &solo).is_none());
    }

    proptest! {
        #[test]
        fn interval_holds_the_median(v in proptest::collection::vec(-1e3f64..1e3, 6..60)) {
            let (lo, hi) = median_ci(&v).unwrap();
            let m = median(&v);
            prop_assert!(lo <= m && m <= hi);
        }
    }
}
