//! Benchmark parameters: their declared specs, validation, values and sweeps.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

pub use super::quantity::{parse_duration, parse_size};

/// What values a parameter takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ParamKind {
    /// A whole number in `min..=max`.
    Int { min: u64, max: u64 },
    /// A floating-point number.
    Float,
    /// A byte count: `4096`, `16K`, `5M`, `1G` (powers of 1024).
    Size,
    /// A duration: `2s`, `500ms`, `1.5s`, `100us`.
    Duration,
    /// `true` or `false` (aliases `1`, `yes`, `on`, `0`, `no`, `off`): the
    /// [`Choice`] of `bool`.
    Bool,
    /// One of a fixed list, taken from a [`Choice`] enum by
    /// [`ParamKind::choice`] so the list cannot disagree with the enum.
    Choice { names: &'static [&'static str], aliases: &'static [(&'static str, &'static str)] },
    /// Free text (paths, addresses, commands).
    Text,
    /// Free text swept one value per line (commands compared with each
    /// other, which may hold commas but not newlines).
    Lines,
}

impl ParamKind {
    /// The kind of a parameter whose values are the enum `T`.
    pub const fn choice<T: Choice>() -> ParamKind {
        ParamKind::Choice { names: T::NAMES, aliases: T::ALIASES }
    }

    /// Whether the values name alternatives (`impl=libc,tuned`, a path, a
    /// flag) rather than points on a scale (`size=64,1K`): the kind a user
    /// compares rather than sweeps (`harness/order.rs`).
    pub const fn names_alternatives(&self) -> bool {
        matches!(self, ParamKind::Choice { .. } | ParamKind::Bool | ParamKind::Text | ParamKind::Lines)
    }
}

/// A closed set of parameter values: an enum, its spellings and its old
/// spellings, declared together with [`choice!`] (so every
/// variant has exactly one canonical name) rather than with clap's
/// `ValueEnum`, because the tables must be `const` (a [`ParamKind`] is built
/// in `const` context), readable as data (stored runs are canonicalised
/// through the aliases) and implementable for `bool`.
pub trait Choice: Copy + PartialEq + 'static {
    /// The canonical spellings, in listing order.
    const NAMES: &'static [&'static str];
    /// The value each of [`Choice::NAMES`] stands for, in the same order.
    const VALUES: &'static [Self];
    /// Other spellings accepted, as (alias, canonical name): old spellings
    /// kept so stored runs and scripts still work.
    const ALIASES: &'static [(&'static str, &'static str)] = &[];

    /// The canonical spelling of this value.
    fn name(self) -> &'static str {
        let i = Self::VALUES.iter().position(|v| *v == self).expect("every value of a Choice has a name");
        Self::NAMES[i]
    }
}

/// The canonical spelling of `v` among `names` (itself or through an alias).
/// The one place a choice or a boolean is looked up.
pub(crate) fn canonical_choice(
    names: &'static [&'static str],
    aliases: &'static [(&'static str, &'static str)],
    v: &str,
) -> Option<&'static str> {
    names.iter().find(|n| **n == v).or_else(|| aliases.iter().find(|(a, _)| *a == v).map(|(_, n)| n)).copied()
}

/// Parse a value of `T` (canonical or alias); the one-line error names the
/// parameter, the value and the allowed spellings.
pub(crate) fn parse_choice<T: Choice>(param: &str, v: &str) -> Result<T> {
    match canonical_choice(T::NAMES, T::ALIASES, v).and_then(|n| T::NAMES.iter().position(|x| *x == n)) {
        Some(i) => Ok(T::VALUES[i]),
        None => bail!("value {v:?} is not allowed for parameter {param}: expected {}", T::NAMES.join("|")),
    }
}

impl Choice for bool {
    const NAMES: &'static [&'static str] = &["true", "false"];
    const VALUES: &'static [bool] = &[true, false];
    const ALIASES: &'static [(&'static str, &'static str)] =
        &[("1", "true"), ("yes", "true"), ("on", "true"), ("0", "false"), ("no", "false"), ("off", "false")];
}

/// Declare a parameter enum and its [`Choice`] tables in one place, so each
/// variant has exactly one canonical spelling, given beside it, followed by
/// any old spellings, as in
/// `choice! { pub(crate) enum Model { Threads = "threads" | "thread", Processes = "processes" } }`
/// (the unit test `choices_take_their_names_and_aliases_and_refuse_the_rest` declares one).
macro_rules! choice {
    ($(#[$m:meta])* $vis:vis enum $name:ident { $($(#[$vm:meta])* $var:ident = $s:literal $(| $alias:literal)*),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        $vis enum $name { $($(#[$vm])* $var),+ }
        impl crate::model::params::Choice for $name {
            const NAMES: &'static [&'static str] = &[$($s),+];
            const VALUES: &'static [Self] = &[$($name::$var),+];
            const ALIASES: &'static [(&'static str, &'static str)] = &[$($(($alias, $s),)*)+];
        }
    };
}
pub(crate) use choice;

/// One declared parameter of a benchmark.
#[derive(Debug, Clone)]
pub struct ParamSpec {
    pub name: &'static str,
    pub(crate) help: &'static str,
    pub(crate) kind: ParamKind,
    /// Default value; a comma-separated list is swept. `auto` means the
    /// benchmark derives it at run time (for example from the cache sizes).
    pub default: &'static str,
    /// Default under `--quick`, when it differs.
    pub(crate) quick: Option<&'static str>,
    /// Other spellings of a value, as (alias, canonical), for kinds that are
    /// not a [`Choice`] (a text parameter's special value, `server=auto`).
    pub(crate) aliases: &'static [(&'static str, &'static str)],
    /// An option of how to run, not a name of what ran (`cmd.run`'s
    /// `shell`, `warmup`, ...): text outputs name it only where it is set
    /// away from its default. Stores, JSON and CSV keep every parameter.
    pub(crate) option: bool,
    /// What a value reaches beyond kdelta's own work (a command, a file, a
    /// server), unless it is the default or one of the harmless values
    /// listed: what an agent must allow ([`crate::model::reach`]).
    pub(crate) reach: Option<(super::reach::Reach, &'static [&'static str])>,
}

impl ParamSpec {
    pub const fn new(name: &'static str, kind: ParamKind, default: &'static str, help: &'static str) -> Self {
        ParamSpec { name, help, kind, default, quick: None, aliases: &[], option: false, reach: None }
    }
    /// Any value but the default and `harmless` ones reaches `r`.
    pub(crate) const fn reaches(mut self, r: super::reach::Reach, harmless: &'static [&'static str]) -> Self {
        self.reach = Some((r, harmless));
        self
    }
    /// What value `v` reaches, if anything ([`ParamSpec::reaches`]).
    pub(crate) fn reach_of(&self, v: &str) -> Option<super::reach::Reach> {
        let (r, harmless) = self.reach?;
        let v = self.canonical(v);
        (v != self.default && !harmless.contains(&v)).then_some(r)
    }
    /// Marks an option (see [`ParamSpec::option`]).
    pub const fn option(mut self) -> Self {
        self.option = true;
        self
    }
    pub const fn aliases(mut self, a: &'static [(&'static str, &'static str)]) -> Self {
        self.aliases = a;
        self
    }

    /// Every other spelling this parameter takes, as (alias, canonical).
    pub fn value_aliases(&self) -> Vec<(&'static str, &'static str)> {
        let own: &[(&str, &str)] = match self.kind {
            ParamKind::Bool => <bool as Choice>::ALIASES,
            ParamKind::Choice { aliases, .. } => aliases,
            _ => &[],
        };
        own.iter().chain(self.aliases).copied().collect()
    }

    /// The canonical spelling of a value: a choice's or boolean's name for
    /// any of its spellings, a declared alias's target; anything else as is
    /// (including values that would not validate).
    pub fn canonical<'a>(&self, v: &'a str) -> &'a str {
        let own = match self.kind {
            ParamKind::Bool => canonical_choice(<bool as Choice>::NAMES, <bool as Choice>::ALIASES, v),
            ParamKind::Choice { names, aliases } => canonical_choice(names, aliases, v),
            _ => None,
        };
        own.or_else(|| self.aliases.iter().find(|(a, _)| *a == v).map(|(_, n)| *n)).unwrap_or(v)
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
            ParamKind::Choice { names, .. } => names.join("|"),
            ParamKind::Text => "text".into(),
            ParamKind::Lines => "text, one value per line".into(),
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
            ParamKind::Choice { names, aliases } => canonical_choice(names, aliases, v).is_some(),
            ParamKind::Text => !v.is_empty(),
            ParamKind::Lines => !v.trim().is_empty() && !v.contains('\n'),
        };
        if !ok {
            bail!("value {v:?} is not allowed for parameter {}: expected {}", self.name, self.kind_name());
        }
        Ok(())
    }
}

/// `true`, `false` and their aliases (see [`ParamKind::Bool`]).
pub fn parse_bool(s: &str) -> Result<bool> {
    parse_choice::<bool>("boolean", s)
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
        parse_choice(name, self.str(name)?)
    }
    /// A [`Choice`] parameter as its enum.
    pub fn choice<T: Choice>(&self, name: &str) -> Result<T> {
        parse_choice(name, self.str(name)?)
    }
    /// A size that may be `auto` (or absent): `None` then.
    pub fn size_or_auto(&self, name: &str) -> Result<Option<u64>> {
        if self.is_auto(name) || !self.0.contains_key(name) {
            return Ok(None);
        }
        self.size(name).map(Some)
    }
    /// A text value that may be `auto`: `None` then.
    pub fn text_or_auto(&self, name: &str) -> Result<Option<&str>> {
        if self.is_auto(name) {
            return Ok(None);
        }
        self.str(name).map(Some)
    }
    /// True when the value is `auto` (derive at run time).
    pub fn is_auto(&self, name: &str) -> bool {
        self.0.get(name).map(|v| v == "auto").unwrap_or(false)
    }
    pub fn set(&mut self, name: &str, v: impl Into<String>) {
        self.0.insert(name.to_string(), v.into());
    }
    /// `name=value name=value`, for tables; a value of several lines shows
    /// them separated by `\n`, so it stays on one line. [`CARRIED`]
    /// parameters are left out: they name nothing.
    pub fn display(&self) -> String {
        self.shown().map(|(k, v)| format!("{k}={}", one_line(v))).collect::<Vec<_>>().join(" ")
    }

    /// [`Params::display`] without the options at their default, given as
    /// (name, default): what text outputs print.
    pub(crate) fn display_set(&self, defaults: &[(&str, &str)]) -> String {
        self.shown()
            .filter(|(k, _)| !self.unsaid(k, defaults))
            .map(|(k, v)| format!("{k}={}", one_line(v)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Whether parameter `k` is an option at its default (`defaults` as
    /// (name, default)), which text leaves unsaid.
    pub(crate) fn unsaid(&self, k: &str, defaults: &[(&str, &str)]) -> bool {
        defaults.iter().any(|(n, d)| *n == k && self.0.get(k).is_some_and(|v| v == d))
    }

    /// The parameters that name the point, by name: all but [`CARRIED`] ones.
    pub(crate) fn shown(&self) -> impl Iterator<Item = (&String, &String)> + Clone {
        self.0.iter().filter(|(k, _)| !is_carried(k))
    }

    /// What the [`CARRIED`] parameters hold, as (parameter, name, text) for
    /// each of their `NAME=TEXT` lines, in order.
    pub(crate) fn carried(&self) -> Vec<(&str, &str, &str)> {
        let mut out = Vec::new();
        for (k, v) in self.0.iter().filter(|(k, _)| is_carried(k)) {
            for (name, text) in v.lines().filter_map(|l| l.split_once('=')) {
                out.push((k.as_str(), name, text));
            }
        }
        out
    }
}

/// Parameters that carry data to the worker rather than name a point:
/// `cmd.run`'s `commands`, the `NAME=COMMAND` line of each named command
/// (the point is `cmd=NAME`). Each holds `NAME=TEXT` lines and is the same at
/// every point of a run; it is kept with the result (old runs match new
/// ones only with the same texts) but never shown in a point's name, a
/// table, a title or an export's `params`: its texts are said once, as a
/// legend ([`legend`]), and given their own column or field.
pub(crate) const CARRIED: &[&str] = &["commands"];

pub(crate) fn is_carried(name: &str) -> bool {
    CARRIED.contains(&name)
}

/// A point as runs stored before [`CARRIED`] parameters were left out wrote
/// it (`cmd.run cleanup=none cmd=fast commands=fast=gzip -1\\nbest=gzip -9
/// figure=wall [up]`), without them: each `NAME=...` is cut up to the next
/// parameter, which sorts after it (the names were in order), or ` [`.
pub(crate) fn without_carried(shown: &str) -> String {
    let mut s = shown.to_string();
    for k in CARRIED {
        let Some(at) = s.find(&format!(" {k}=")) else { continue };
        let rest = &s[at + 1 + k.len() + 1..];
        let next = rest
            .match_indices(' ')
            .map(|(i, _)| i)
            .find(|&i| {
                let word = rest[i + 1..].split(['=', ' ']).next().unwrap_or_default();
                let named = rest[i + 1..].starts_with(&format!("{word}="))
                    && word > *k
                    && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                named || rest[i..].starts_with(" [")
            })
            .unwrap_or(rest.len());
        let end = at + 1 + k.len() + 1 + next;
        s.replace_range(at..end, "");
    }
    s
}

/// The line under a table that says what the names stand for, `commands:
/// fast = gzip -1 -c f; best = gzip -9 -c f`, from the points' carried
/// parameters (each name once, in the order first met); `None` when none.
pub(crate) fn legend<'a>(points: impl IntoIterator<Item = &'a Params>) -> Option<String> {
    let mut by_param: Vec<(&str, Vec<(&str, &str)>)> = Vec::new();
    for p in points {
        for (k, name, text) in p.carried() {
            let i = match by_param.iter().position(|(q, _)| *q == k) {
                Some(i) => i,
                None => {
                    by_param.push((k, Vec::new()));
                    by_param.len() - 1
                }
            };
            if !by_param[i].1.iter().any(|(n, t)| *n == name && *t == text) {
                by_param[i].1.push((name, text));
            }
        }
    }
    let lines: Vec<String> = by_param
        .iter()
        .map(|(k, named)| {
            let each: Vec<String> = named.iter().map(|(n, t)| format!("{n} = `{t}`")).collect();
            format!("{k}: {}", each.join("; "))
        })
        .collect();
    (!lines.is_empty()).then(|| crate::model::text::printable(&lines.join("; ")).into_owned())
}

/// A parameter value on one line, as tables show it: the lines of a value
/// of several separated by `\n`, any other control character (an escape
/// sequence in a command's text) shown as [`printable`](crate::model::text::printable)
/// does, never obeyed by a terminal.
pub(crate) fn one_line(v: &str) -> std::borrow::Cow<'_, str> {
    if v.contains('\n') {
        crate::model::text::printable(&v.replace('\n', "\\n")).into_owned().into()
    } else {
        crate::model::text::printable(v)
    }
}

/// Split a sweep list (`2,8,16`) into its values, trimmed, empty items dropped.
/// There is no quoting: every comma separates two values. A parameter whose
/// one value may hold commas (a command) is of kind `Text`, which [`expand`]
/// never splits, so such a parameter cannot be swept.
pub(crate) fn split_list(v: &str) -> Vec<String> {
    v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
}

/// Most values one scanned range may give.
pub(crate) const MAX_SCAN: usize = 1000;

/// A placeholder's values: a comma-separated list whose items may be
/// ranges, as hyperfine's `--parameter-scan` (`1..4` is 1,2,3,4; `0..100:25`
/// steps by 25; `0.5..1.5:0.5` is 0.5,1.0,1.5; both ends included).
pub fn scan_list(v: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for item in split_list(v) {
        let Some((a, rest)) = item.split_once("..") else {
            if out.len() == MAX_SCAN {
                return Err(format!("more than {MAX_SCAN} values"));
            }
            out.push(item);
            continue;
        };
        let (b, step) = rest.split_once(':').unwrap_or((rest, "1"));
        if [a, b, step].iter().any(|x| x.contains('.')) {
            let values = scan_decimal(&item, a, b, step, MAX_SCAN - out.len())?;
            out.extend(values);
            continue;
        }
        let num =
            |x: &str| x.trim().parse::<i64>().map_err(|_| format!("{item:?}: a range is NUM..NUM or NUM..NUM:STEP"));
        let (a, b, step) = (num(a)?, num(b)?, num(step)?);
        if step <= 0 || b < a {
            return Err(format!("{item:?}: a range goes up, by a step above zero"));
        }
        let n = (b as i128 - a as i128) / step as i128 + 1;
        if n > (MAX_SCAN - out.len()) as i128 {
            return Err(format!("{item:?}: more than {MAX_SCAN} values"));
        }
        out.extend((0..n).map(|i| (a as i128 + i * step as i128).to_string()));
    }
    Ok(out)
}

/// A range with decimals (`0.1..0.5:0.1`, as hyperfine's `--parameter-scan`
/// with `-D`): each value `a + i * step` up to `b` (a hair of rounding
/// allowed), written with as many decimals as the most precise end or
/// step has, so `0.1..0.3:0.1` is `0.1,0.2,0.3`, never `0.30000000000000004`.
fn scan_decimal(item: &str, a: &str, b: &str, step: &str, room: usize) -> Result<Vec<String>, String> {
    let num = |x: &str| {
        x.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| format!("{item:?}: a range is NUM..NUM or NUM..NUM:STEP"))
    };
    let (lo, hi, by) = (num(a)?, num(b)?, num(step)?);
    if by <= 0.0 || hi < lo {
        return Err(format!("{item:?}: a range goes up, by a step above zero"));
    }
    let places = [a, b, step].iter().map(|x| x.trim().split_once('.').map_or(0, |(_, f)| f.len())).max().unwrap_or(0);
    let n = ((hi - lo) / by + 1e-9).floor() + 1.0;
    if n > room as f64 {
        return Err(format!("{item:?}: more than {MAX_SCAN} values"));
    }
    Ok((0..n as usize).map(|i| format!("{:.*}", places, lo + i as f64 * by)).collect())
}

/// Expand the user's `--param` overrides over the specs' defaults into the
/// cartesian product of swept values. Unknown names and bad values are errors
/// naming what is allowed. Text parameters are never split on commas.
pub fn expand(
    specs: &[ParamSpec],
    overrides: &BTreeMap<String, String>,
    quick: bool,
    bench: &str,
) -> Result<Vec<Params>> {
    expand_open(specs, overrides, quick, bench, false)
}

/// [`expand`], and with `open` every override naming no declared parameter
/// is swept too, as a comma-separated list of values (a benchmark's
/// placeholders: `--param t=1,2` fills `{t}`), after the declared ones.
pub(crate) fn expand_open(
    specs: &[ParamSpec],
    overrides: &BTreeMap<String, String>,
    quick: bool,
    bench: &str,
    open: bool,
) -> Result<Vec<Params>> {
    let mut axes = declared_axes(specs, overrides, quick, bench, open)?;
    for (k, raw) in overrides.iter().filter(|(k, _)| !specs.iter().any(|s| s.name == k.as_str())) {
        let values = scan_list(raw).map_err(|e| anyhow::anyhow!("parameter {k} of {bench}: {e}"))?;
        if values.is_empty() {
            bail!("parameter {k} of {bench} has no value");
        }
        axes.push((k.clone(), values));
    }
    bound_points(&axes, bench)?;
    let mut points = vec![Params::default()];
    for (name, values) in &axes {
        let mut next = Vec::with_capacity(points.len() * values.len());
        for p in &points {
            for v in values {
                let mut q = p.clone();
                q.set(name, v.clone());
                next.push(q);
            }
        }
        points = next;
    }
    Ok(points)
}

/// Most points one benchmark's sweep may have: the product of its
/// parameters' value counts is checked against it before any point is built.
pub(crate) const MAX_POINTS: u64 = 10_000;

/// Refuse a sweep of more than [`MAX_POINTS`] points, naming each swept
/// parameter's count, before anything is built.
fn bound_points(axes: &[(String, Vec<String>)], bench: &str) -> Result<()> {
    let total = axes.iter().try_fold(1u64, |n, (_, v)| n.checked_mul(v.len() as u64));
    if total.is_some_and(|n| n <= MAX_POINTS) {
        return Ok(());
    }
    let swept: Vec<String> =
        axes.iter().filter(|(_, v)| v.len() > 1).map(|(k, v)| format!("{k} ({} values)", v.len())).collect();
    let total = total.map(|n| n.to_string()).unwrap_or_else(|| "too many".into());
    bail!("the sweep of {bench} has {total} points ({}), more than {MAX_POINTS}: sweep fewer values", swept.join(" x "))
}

/// Each parameter a benchmark declares with its values (the user's, else
/// its default), validated, in the specs' order.
fn declared_axes(
    specs: &[ParamSpec],
    overrides: &BTreeMap<String, String>,
    quick: bool,
    bench: &str,
    open: bool,
) -> Result<Vec<(String, Vec<String>)>> {
    for k in overrides.keys() {
        if !open && !specs.iter().any(|s| s.name == k) {
            let allowed: Vec<&str> = specs.iter().map(|s| s.name).collect();
            if allowed.is_empty() {
                bail!("unknown parameter {k:?} for {bench}: it takes no parameters");
            }
            bail!("unknown parameter {k:?} for {bench}: allowed: {}", allowed.join(", "));
        }
    }
    let mut axes = Vec::new();
    for spec in specs {
        let raw = match overrides.get(spec.name) {
            Some(v) => v.as_str(),
            None if quick => spec.quick.unwrap_or(spec.default),
            None => spec.default,
        };
        let values = match spec.kind {
            ParamKind::Text => vec![raw.to_string()],
            ParamKind::Lines => raw.lines().map(|l| l.to_string()).filter(|l| !l.trim().is_empty()).collect(),
            _ => split_list(raw),
        };
        if values.is_empty() {
            bail!("parameter {} of {bench} has no value; {}: {}", spec.name, spec.name, spec.help);
        }
        // One spelling is stored: old spellings become the canonical one.
        let values: Vec<String> = values.iter().map(|v| spec.canonical(v).to_string()).collect();
        for v in &values {
            spec.validate(v).map_err(|e| anyhow::anyhow!("{bench}: {e}"))?;
        }
        axes.push((spec.name.to_string(), values));
    }
    Ok(axes)
}

/// Rewrite stored values in their canonical spelling (a run stored with
/// `model=thread` then matches one with `model=threads`). Parameters without
/// a spec are left as they are.
pub(crate) fn canonicalise(specs: &[ParamSpec], p: &mut Params) {
    for (k, v) in p.0.iter_mut() {
        if let Some(spec) = specs.iter().find(|s| s.name == k) {
            let c = spec.canonical(v);
            if c != v {
                *v = c.to_string();
            }
        }
    }
}

#[cfg(test)]
#[path = "params_tests.rs"]
mod tests;
