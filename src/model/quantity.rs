//! Sizes and durations as a user writes them (`16K`, `1.5M`, `500ms`,
//! `2m`): parameters, flags and sweeps read them through these two.

use anyhow::{bail, Result};
use std::time::Duration;

/// Parse `16K`, `5M`, `1G`, `4096`, `1.5M` (binary multiples).
pub fn parse_size(s: &str) -> Result<u64> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m: u64 = match c.to_ascii_uppercase() {
                'B' => 1,
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                _ => bail!("bad size {s:?}: unknown suffix {c:?} (use K, M, G)"),
            };
            (&t[..i], m)
        }
        _ => (t, 1),
    };
    let n: f64 =
        num.parse().map_err(|_| anyhow::anyhow!("bad size {s:?}: expected a number with an optional K/M/G suffix"))?;
    if !n.is_finite() || n < 0.0 || n * mult as f64 > 1e18 {
        bail!("bad size {s:?}: out of range");
    }
    Ok((n * mult as f64).round() as u64)
}

/// Parse `2s`, `500ms`, `100us`, `1.5s`, `2m`; a bare number is seconds.
pub fn parse_duration(s: &str) -> Result<Duration> {
    let t = s.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| anyhow::anyhow!("bad duration {s:?}: expected e.g. 2s, 500ms"))?;
    let secs = match unit {
        "" | "s" => n,
        "ms" => n / 1e3,
        "us" => n / 1e6,
        "ns" => n / 1e9,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        _ => bail!("bad duration {s:?}: unknown unit {unit:?} (use ns, us, ms, s, m, h)"),
    };
    if !secs.is_finite() || !(0.0..=1e7).contains(&secs) {
        bail!("bad duration {s:?}: out of range");
    }
    Ok(Duration::from_secs_f64(secs))
}
