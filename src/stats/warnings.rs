//! Warnings about a result or a run. They explain a figure; they never change it.

pub(crate) use crate::model::Warning;

pub(crate) const CV_THRESHOLD: f64 = 0.05;

/// Warnings about one result's samples (and how long each took).
pub(crate) fn for_samples(samples: &[f64], sample_secs: &[f64]) -> Vec<Warning> {
    let mut w = Vec::new();
    let n = samples.len();
    if n >= 2 {
        if let Some(s) = super::summary::summarize(samples, false) {
            if s.cv > CV_THRESHOLD {
                w.push(Warning::HighVariation { cv: s.cv, threshold: CV_THRESHOLD });
            }
        }
    }
    if let Some(c) = two_clusters(samples) {
        w.push(c);
    } else if n >= 5 {
        let mut s = samples.to_vec();
        s.sort_by(|a, b| a.total_cmp(b));
        let q1 = super::summary::quantile_sorted(&s, 0.25);
        let q3 = super::summary::quantile_sorted(&s, 0.75);
        let iqr = q3 - q1;
        let count = s.iter().filter(|&&v| v < q1 - 1.5 * iqr || v > q3 + 1.5 * iqr).count();
        if count > 0 {
            w.push(Warning::Outliers { count, n });
        }
    }
    if let Some(min) = sample_secs.iter().copied().filter(|s| s.is_finite()).reduce(f64::min) {
        if min < 1e-3 {
            w.push(Warning::ShortSamples { secs: min });
        }
    }
    w
}

/// Detect two clusters: split the sorted samples at their widest gap (in log
/// space); report when each side holds at least 20 % of the samples (2 at
/// least), the two medians differ by more than 25 %, and the gap is wider than
/// three times the larger spread within a side.
pub(crate) fn two_clusters(samples: &[f64]) -> Option<Warning> {
    let n = samples.len();
    if n < 4 || samples.iter().any(|&v| v <= 0.0 || v.is_nan()) {
        return None;
    }
    let mut s: Vec<f64> = samples.iter().map(|v| v.ln()).collect();
    s.sort_by(|a, b| a.total_cmp(b));
    let min_side = ((n as f64 * 0.2).ceil() as usize).max(2);
    let (mut best, mut at) = (0.0, 0);
    for i in min_side..=(n - min_side) {
        let g = s[i] - s[i - 1];
        if g > best {
            best = g;
            at = i;
        }
    }
    if at == 0 {
        return None;
    }
    let (lo, hi) = s.split_at(at);
    let spread = (lo[lo.len() - 1] - lo[0]).max(hi[hi.len() - 1] - hi[0]);
    let (ml, mh) = (super::summary::quantile_sorted(lo, 0.5).exp(), super::summary::quantile_sorted(hi, 0.5).exp());
    if mh / ml > 1.25 && best > 3.0 * spread {
        Some(Warning::TwoClusters { low: ml, high: mh, low_n: lo.len(), high_n: hi.len() })
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_two_clusters() {
        let v = [7.1, 7.0, 90.0, 88.0, 7.2, 91.0, 6.9, 89.5];
        match two_clusters(&v) {
            Some(Warning::TwoClusters { low, high, low_n, high_n }) => {
                assert!((6.9..7.3).contains(&low) && (88.0..91.0).contains(&high));
                assert_eq!((low_n, high_n), (4, 4));
            }
            other => panic!("{other:?}"),
        }
        assert!(two_clusters(&[7.0, 7.1, 7.2, 7.05, 7.15]).is_none());
        // One stray sample is an outlier, not a cluster.
        assert!(two_clusters(&[7.0, 7.1, 7.2, 7.05, 7.15, 7.1, 7.0, 30.0]).is_none());
    }

    #[test]
    fn flags_variation_outliers_and_short_samples() {
        let w = for_samples(&[10.0, 10.1, 9.9, 10.0, 10.05, 10.0, 14.0], &[0.01; 7]);
        assert!(w.iter().any(|w| matches!(w, Warning::Outliers { count: 1, n: 7 })), "{w:?}");
        let w = for_samples(&[1.0, 2.0, 1.5], &[0.0001, 0.01, 0.01]);
        assert!(w.iter().any(|w| matches!(w, Warning::HighVariation { .. })));
        assert!(w.iter().any(|w| matches!(w, Warning::ShortSamples { .. })));
        assert!(for_samples(&[5.0, 5.0, 5.0], &[0.01; 3]).is_empty());
    }
}
