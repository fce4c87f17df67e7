//! Figures for people: about four significant digits, thousands grouped;
//! signed percentages.

/// A figure for people: about four significant digits, thousands grouped.
pub(crate) fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    if a >= 10_000.0 {
        group_thousands(v.round() as i64)
    } else if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else if a >= 1.0 {
        format!("{v:.3}")
    } else if a == 0.0 {
        "0".into()
    } else {
        // Four significant digits for small figures (0.04213).
        let digits = (3 - a.log10().floor() as i32).clamp(0, 12) as usize;
        format!("{v:.digits$}")
    }
}

fn group_thousands(v: i64) -> String {
    let s = v.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0 {
        format!("-{out}")
    } else {
        out
    }
}

pub(crate) fn fmt_pct(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v.abs() >= 100.0 {
        format!("{v:+.0}%")
    } else {
        format!("{v:+.1}%")
    }
}

/// A change as a factor, as hyperfine says "times faster": `5.75x slower`
/// for a speedup (B against A, > 1 better) of 0.174. A time or a rate is
/// faster or slower; another figure (a size, a count) better or worse.
pub(crate) fn fmt_factor(speedup: f64, unit: &str) -> String {
    if !speedup.is_finite() || speedup <= 0.0 {
        return "-".into();
    }
    let speed = ["ns", "us", "ms", "s"].contains(&unit) || unit.ends_with("/s");
    let (up, down) = if speed { ("faster", "slower") } else { ("better", "worse") };
    if speedup >= 1.0 {
        format!("{speedup:.2}x {up}")
    } else {
        format!("{:.2}x {down}", 1.0 / speedup)
    }
}

/// Output of the commands that print only text or JSON (`simulate`, `place`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum TextOrJson {
    Text,
    Json,
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_change_reads_as_a_factor_its_way() {
        use super::fmt_factor;
        assert_eq!(fmt_factor(1.0 / 5.75, "ms"), "5.75x slower");
        assert_eq!(fmt_factor(2.0, "GB/s"), "2.00x faster");
        assert_eq!(fmt_factor(1.0, "us"), "1.00x faster");
        assert_eq!(fmt_factor(0.5, "KB"), "2.00x worse");
        assert_eq!(fmt_factor(f64::NAN, "ms"), "-");
    }
}
