//! Summaries of one result's samples.

pub(crate) use crate::model::Summary;

pub(crate) fn summarize(samples: &[f64], rate: bool) -> Option<Summary> {
    if samples.is_empty() || samples.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mut s = samples.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    let amean = s.iter().sum::<f64>() / n as f64;
    let var = if n > 1 { s.iter().map(|v| (v - amean).powi(2)).sum::<f64>() / (n - 1) as f64 } else { 0.0 };
    let stddev = var.sqrt();
    let (mean, kind) = if rate && s.iter().all(|&v| v > 0.0) {
        (n as f64 / s.iter().map(|v| 1.0 / v).sum::<f64>(), "harmonic")
    } else {
        (amean, "arithmetic")
    };
    Some(Summary {
        n,
        median: quantile_sorted(&s, 0.5),
        mean,
        mean_kind: kind.into(),
        min: s[0],
        max: s[n - 1],
        stddev,
        cv: if amean != 0.0 { stddev / amean.abs() } else { 0.0 },
        p5: quantile_sorted(&s, 0.05),
        p95: quantile_sorted(&s, 0.95),
        p99: quantile_sorted(&s, 0.99),
    })
}

/// Linear-interpolation quantile (type 7) of sorted data.
pub(crate) fn quantile_sorted(s: &[f64], q: f64) -> f64 {
    if s.is_empty() {
        return f64::NAN;
    }
    let h = (s.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    s[lo] + (h - lo as f64) * (s[hi] - s[lo])
}

pub(crate) fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    quantile_sorted(&s, 0.5)
}

/// The median absolute deviation from the median, scaled by 1.4826 (a
/// standard deviation for normal data): a spread outliers cannot sway.
pub(crate) fn scaled_mad(v: &[f64]) -> f64 {
    let m = median(v);
    let d: Vec<f64> = v.iter().map(|x| (x - m).abs()).collect();
    1.4826 * median(&d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_answers() {
        let s = summarize(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0], false).unwrap();
        assert_eq!(s.median, 4.5);
        assert_eq!(s.mean, 5.0);
        assert_eq!(s.min, 2.0);
        assert_eq!(s.max, 9.0);
        assert!((s.stddev - 2.138_089_935).abs() < 1e-6, "{}", s.stddev);
        assert!((s.cv - 0.427_617_987).abs() < 1e-6);
        // Harmonic mean of rates 40 and 60 is 48.
        let r = summarize(&[40.0, 60.0], true).unwrap();
        assert!((r.mean - 48.0).abs() < 1e-12);
        assert_eq!(r.mean_kind, "harmonic");
        assert!(summarize(&[], false).is_none());
        assert!(summarize(&[1.0, f64::NAN], false).is_none());
        let one = summarize(&[3.0], false).unwrap();
        assert_eq!((one.stddev, one.cv, one.p99), (0.0, 0.0, 3.0));
    }

    proptest! {
        #[test]
        fn invariants(v in proptest::collection::vec(0.001f64..1e6, 1..50), rate: bool) {
            let s = summarize(&v, rate).unwrap();
            prop_assert!(s.min <= s.median && s.median <= s.max);
            prop_assert!(s.min <= s.mean * (1.0 + 1e-12) && s.mean <= s.max * (1.0 + 1e-12));
            prop_assert!(s.p5 <= s.p95 && s.p95 <= s.p99 && s.p99 <= s.max);
            prop_assert!(s.stddev >= 0.0 && s.cv >= 0.0);
            // Scaling every sample scales location, keeps cv.
            let k = 3.5;
            let t = summarize(&v.iter().map(|x| x * k).collect::<Vec<_>>(), rate).unwrap();
            prop_assert!((t.median - s.median * k).abs() <= 1e-9 * t.median.abs().max(1.0));
            prop_assert!((t.cv - s.cv).abs() <= 1e-9);
        }
    }
}
