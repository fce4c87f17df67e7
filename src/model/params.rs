//! Benchmark parameters: their declared specs, validation, values and sweeps.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// What values a parameter takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ParamKind {
    /// A whole number in `min..=max`.
    Int {
        min: u64,
        max: u64,
    },
    /// A floating-point number.
    Float,
    /// A byte count: `4096`, `16K`, `5M`, `1G` (powers of 1024).
    Size,
    /// A duration: `2s`, `500ms`, `1.5s`, `100us`.
    Duration,
    Bool,
    /// One of a fixed list.
    Choice(&'static [&'static str]),
    /// Free text (paths, addresses, commands).
    Text,
}

/// One declared parameter of a benchmark.
#[derive(Debug, Clone)]
pub struct ParamSpec {
    pub name: &'static str,
    pub help: &'static str,
    pub kind: ParamKind,
    /// Default value; a comma-separated list is swept. `auto` means the
    /// benchmark derives it at run time (for example from the cache sizes).
    pub default: &'static str,
    /// Default under `--quick`, when it differs.
    pub quick: Option<&'static str>,
}

impl ParamSpec {
    pub const fn new(name: &'static str, kind: ParamKind, default: &'static str, help: &'static str) -> Self {
        ParamSpec { name, help, kind, default, quick: None }
    }
    pub const fn quick(mut self, q: &'static str) -> Self {
        self.quick = Some(q);
        self
    }

    pub fn kind_name(&self) -> String {
        match self.kind {
            ParamKind::Int { min, max } => format!("integer {min}..{max}"),
            ParamKind::Float => "number".into(),
            ParamKind::Size => "size (e.g. 16K, 5M)".into(),
            ParamKind::Duration => "duration (e.g. 2s, 500ms)".into(),
            ParamKind::Bool => "true|false".into(),
            ParamKind::Choice(c) => c.join("|"),
            ParamKind::Text => "text".into(),
        }
    }

    /// Check one value; the error names the value and what is allowed.
    pub fn validate(&self, v: &str) -> Result<()> {
        if v == "auto" && self.default == "auto" {
            return Ok(());
        }
        let ok = match self.kind {
            ParamKind::Int { min, max } => v.parse::<u64>().map(|x| x >= min && x <= max).unwrap_or(false),
            ParamKind::Float => v.parse::<f64>().map(|x| x.is_finite()).unwrap_or(false),
            ParamKind::Size => parse_size(v).is_ok(),
            ParamKind::Duration => parse_duration(v).is_ok(),
            ParamKind::Bool => parse_bool(v).is_ok(),
            ParamKind::Choice(c) => c.contains(&v),
            ParamKind::Text => !v.is_empty(),
        };
        if !ok {
            bail!("value {v:?} is not allowed for parameter {}: expected {}", self.name, self.kind_name());
        }
        Ok(())
    }
}

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
    let n: f64 = num.parse().map_err(|_| anyhow::anyhow!("bad size {s:?}: expected a number with an optional K/M/G suffix"))?;
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
    if !secs.is_finite() || secs < 0.0 || secs > 1e7 {
        bail!("bad duration {s:?}: out of range");
    }
    Ok(Duration::from_secs_f64(secs))
}

pub fn parse_bool(s: &str) -> Result<bool> {
    match s {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => bail!("bad boolean {s:?}: expected true or false"),
    }
}

/// One point of a sweep: every parameter of a benchmark with one value.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Params(pub BTreeMap<String, String>);

impl Params {
    pub fn str(&self, name: &str) -> Result<&str> {
        self.0.get(name).map(|s| s.as_str()).ok_or_else(|| anyhow::anyhow!("parameter {name} missing"))
    }
    pub fn u64(&self, name: &str) -> Result<u64> {
        let v = self.str(name)?;
        v.parse().map_err(|_| anyhow::anyhow!("parameter {name}={v:?} is not a whole number"))
    }
    pub fn usize(&self, name: &str) -> Result<usize> {
        Ok(self.u64(name)? as usize)
    }
    pub fn f64(&self, name: &str) -> Result<f64> {
        let v = self.str(name)?;
        v.parse().map_err(|_| anyhow::anyhow!("parameter {name}={v:?} is not a number"))
    }
    pub fn size(&self, name: &str) -> Result<u64> {
        parse_size(self.str(name)?)
    }
    pub fn duration(&self, name: &str) -> Result<Duration> {
        parse_duration(self.str(name)?)
    }
    pub fn bool(&self, name: &str) -> Result<bool> {
        parse_bool(self.str(name)?)
    }
    /// True when the value is `auto` (derive at run time).
    pub fn is_auto(&self, name: &str) -> bool {
        self.0.get(name).map(|v| v == "auto").unwrap_or(false)
    }
    pub fn set(&mut self, name: &str, v: impl Into<String>) {
        self.0.insert(name.to_string(), v.into());
    }
    /// `name=value name=value`, for tables.
    pub fn display(&self) -> String {
        self.0.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
    }
}

/// Split a sweep list (`2,8,16`) into values. Quoted commas are not special:
/// parameters that take commas inside one value (commands) use `;` lists... no,
/// they simply are not swept: see [`expand`].
pub fn split_list(v: &str) -> Vec<String> {
    v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
}

/// Expand the user's `--param` overrides over the specs' defaults into the
/// cartesian product of swept values. Unknown names and bad values are errors
/// naming what is allowed. Text parameters are never split on commas.
pub fn expand(specs: &[ParamSpec], overrides: &BTreeMap<String, String>, quick: bool, bench: &str) -> Result<Vec<Params>> {
    for k in overrides.keys() {
        if !specs.iter().any(|s| s.name == k) {
            let allowed: Vec<&str> = specs.iter().map(|s| s.name).collect();
            if allowed.is_empty() {
                bail!("unknown parameter {k:?} for {bench}: it takes no parameters");
            }
            bail!("unknown parameter {k:?} for {bench}: allowed: {}", allowed.join(", "));
        }
    }
    let mut points = vec![Params::default()];
    for spec in specs {
        let raw = match overrides.get(spec.name) {
            Some(v) => v.as_str(),
            None if quick => spec.quick.unwrap_or(spec.default),
            None => spec.default,
        };
        let values = if matches!(spec.kind, ParamKind::Text) { vec![raw.to_string()] } else { split_list(raw) };
        if values.is_empty() {
            bail!("parameter {} of {bench} has no value", spec.name);
        }
        for v in &values {
            spec.validate(v).map_err(|e| anyhow::anyhow!("{bench}: {e}"))?;
        }
        let mut next = Vec::with_capacity(points.len() * values.len());
        for p in &points {
            for v in &values {
                let mut q = p.clone();
                q.set(spec.name, v.clone());
                next.push(q);
            }
        }
        points = next;
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations() {
        assert_eq!(parse_size("16K").unwrap(), 16384);
        assert_eq!(parse_size("5M").unwrap(), 5 << 20);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert!(parse_size("5Q").is_err());
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert!(parse_duration("2 fortnights").is_err());
    }

    #[test]
    fn expands_sweeps() {
        let specs = [ParamSpec::new("procs", ParamKind::Int { min: 2, max: 1024 }, "2,8", "").quick("2"), ParamSpec::new("size", ParamKind::Size, "0,16K", "")];
        let none = BTreeMap::new();
        assert_eq!(expand(&specs, &none, false, "x").unwrap().len(), 4);
        assert_eq!(expand(&specs, &none, true, "x").unwrap().len(), 2);
        let mut o = BTreeMap::new();
        o.insert("procs".to_string(), "1".to_string());
        let e = expand(&specs, &o, false, "lat.ctx").unwrap_err().to_string();
        assert!(e.contains("\"1\"") && e.contains("2..1024"), "{e}");
        let mut o = BTreeMap::new();
        o.insert("bogus".to_string(), "1".to_string());
        let e = expand(&specs, &o, false, "lat.ctx").unwrap_err().to_string();
        assert!(e.contains("bogus") && e.contains("procs, size"), "{e}");
    }
}
