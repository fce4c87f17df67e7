//! The value parsers of every command's arguments, each check written once.

use crate::cpuset::CpuSet;
use crate::error::BadInput;
use crate::harness::plan;
use std::time::Duration;

// The values the parsers make that are not std or model types.

/// One `--param NAME=VALUE` (the value may be a comma-separated sweep, the
/// name a `SELECTOR:NAME` scope); which names exist is the benchmark's to say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Setting {
    pub(crate) name: String,
    pub(crate) value: String,
}

/// `--warmup`: a time or a count of runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Warmup {
    /// At least this long (`100ms`).
    Time(Duration),
    /// This many untimed runs (`3`).
    Runs(u64),
}

// The value parsers. Each returns the value in its final type or the
// refusal. A [`BadInput`] is the whole one-line message, flag and value
// included; any other error (a number that does not parse) clap reports
// in its own words, as it does for the options without a parser of ours.

/// A refusal: [`BadInput`], or a parse error clap words itself.
pub(super) type Refusal = Box<dyn std::error::Error + Send + Sync>;

/// A value clap reports in its own words (`invalid value 'X' for '--runs
/// <N|auto>': ...`), unlike a [`BadInput`], which is the whole line.
#[derive(Debug, thiserror::Error)]
pub(super) enum Malformed {
    #[error("{0:?} is not allowed: expected auto or a whole number from 1 to 10000")]
    Runs(String),
    #[error("malformed CPU list {0:?}: expected e.g. 1 or 0-3,8")]
    CpuList(String),
}

/// `--runs`: a whole number from 1 to 10000, or `auto`.
pub(super) fn runs(s: &str) -> Result<plan::Runs, Malformed> {
    if s == "auto" {
        return Ok(plan::Runs::Auto);
    }
    match s.parse::<usize>() {
        Ok(n) if (1..=10000).contains(&n) => Ok(plan::Runs::Fixed(n)),
        _ => Err(Malformed::Runs(s.to_string())),
    }
}

/// `--threshold` (run and compare): a percentage from 0 up to 1000.
pub(super) fn threshold(s: &str) -> Result<f64, Refusal> {
    let pct: f64 = s.parse()?;
    if !(0.0..1000.0).contains(&pct) {
        return Err(BadInput(format!("--threshold {pct} is out of range: allowed 0 .. 1000 (percent)")).into());
    }
    Ok(pct)
}

/// `--time-unit` (cmd): hyperfine's names or the short ones.
pub(super) fn time_unit(s: &str) -> Result<crate::bench::cmd::summary::TimeUnit, Refusal> {
    Ok(crate::bench::cmd::summary::TimeUnit::parse(s)?)
}

/// `--sort` (cmd): hyperfine's orders.
pub(super) fn sort(s: &str) -> Result<crate::bench::cmd::summary::Order, Refusal> {
    Ok(crate::bench::cmd::summary::Order::parse(s)?)
}

/// `--style`: hyperfine's names for colour and the progress bar.
pub(super) fn style(s: &str) -> Result<Style, Refusal> {
    Ok(Style::parse(s)?)
}

/// `--style`, hyperfine's names: what colours the output and whether the
/// progress bar shows (on stderr, on a terminal only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    Auto,
    Full,
    Basic,
    Nocolor,
    Color,
    None,
}

impl Style {
    /// hyperfine's names; anything else is refused in one line.
    pub(crate) fn parse(s: &str) -> Result<Style, BadInput> {
        Ok(match s {
            "auto" => Style::Auto,
            "full" => Style::Full,
            "basic" => Style::Basic,
            "nocolor" => Style::Nocolor,
            "color" => Style::Color,
            "none" => Style::None,
            _ => {
                return Err(BadInput(format!(
                    "--style {s:?} is not allowed: expected auto, full, basic, nocolor, color or none"
                )))
            }
        })
    }

    /// Colour forced on or off; `None`: as the terminal and `NO_COLOR` say.
    pub(crate) fn color(self) -> Option<bool> {
        match self {
            Style::Auto => Option::None,
            Style::Full | Style::Color => Some(true),
            Style::Basic | Style::Nocolor | Style::None => Some(false),
        }
    }

    /// Whether the progress bar may show (it does on a terminal only).
    pub(crate) fn progress(self) -> bool {
        !matches!(self, Style::Color | Style::None)
    }
}

/// `check --max-regression`: a percentage from 0 up to 1000.
pub(super) fn max_regression(s: &str) -> Result<f64, Refusal> {
    let pct: f64 = s.parse()?;
    if !(0.0..=1000.0).contains(&pct) {
        return Err(BadInput(format!("--max-regression {pct} is out of range: allowed 0 .. 1000 (percent)")).into());
    }
    Ok(pct)
}

/// `check --drift`: a percentage from 0 to 100.
pub(super) fn drift(s: &str) -> Result<f64, Refusal> {
    let pct: f64 = s.parse()?;
    if !(0.0..=100.0).contains(&pct) {
        return Err(BadInput(format!("--drift {pct} is out of range: allowed 0 .. 100 (percent)")).into());
    }
    Ok(pct)
}

/// `--ci-target`: a percentage above 0 up to 100.
pub(super) fn ci_target(s: &str) -> Result<f64, Refusal> {
    let pct: f64 = s.parse()?;
    if !(pct > 0.0 && pct <= 100.0) {
        return Err(BadInput(format!("--ci-target {pct} is out of range: allowed above 0 up to 100 (percent)")).into());
    }
    Ok(pct)
}

/// A duration as benchmark parameters write it (`10ms`, `2s`, `5m`).
pub(super) fn duration(flag: &str, s: &str) -> Result<Duration, BadInput> {
    crate::model::params::parse_duration(s).map_err(|e| BadInput(format!("{flag}: {e}")))
}

pub(super) fn out_of_range(flag: &str, s: &str, allowed: &str) -> BadInput {
    BadInput(format!("{flag} {s} is out of range: allowed {allowed}"))
}

/// `--sample-time`: 100us to 60s.
pub(super) fn sample_time(s: &str) -> Result<Duration, BadInput> {
    let d = duration("--sample-time", s)?;
    if d.as_secs_f64() < 1e-4 || d.as_secs_f64() > 60.0 {
        return Err(out_of_range("--sample-time", s, "100us .. 60s"));
    }
    Ok(d)
}

/// `--warmup`: up to 60s, or a bare count of runs up to 10000.
pub(super) fn warmup(s: &str) -> Result<Warmup, BadInput> {
    if s.bytes().all(|b| b.is_ascii_digit()) && !s.is_empty() {
        return match s.parse::<u64>() {
            Ok(n) if n <= 10_000 => Ok(Warmup::Runs(n)),
            _ => Err(out_of_range("--warmup", s, "0 .. 10000 runs, or a duration up to 60s")),
        };
    }
    let d = duration("--warmup", s)?;
    if d.as_secs_f64() > 60.0 {
        return Err(out_of_range("--warmup", s, "0 .. 60s"));
    }
    Ok(Warmup::Time(d))
}

/// `--budget`: 1s up to a week.
pub(super) fn budget(s: &str) -> Result<Duration, BadInput> {
    let d = duration("--budget", s)?;
    if d < Duration::from_secs(1) || d > Duration::from_secs(7 * 24 * 3600) {
        return Err(out_of_range("--budget", s, "1s .. 7days"));
    }
    Ok(d)
}

/// `--quiet-wait`: 0 to 60s.
pub(super) fn quiet_wait(s: &str) -> Result<Duration, BadInput> {
    let d = duration("--quiet-wait", s)?;
    if d > Duration::from_secs(60) {
        return Err(out_of_range("--quiet-wait", s, "0 .. 60s"));
    }
    Ok(d)
}

/// `--timeout`: 1ms or more.
pub(super) fn timeout(s: &str) -> Result<Duration, BadInput> {
    let d = duration("--timeout", s)?;
    if d < Duration::from_millis(1) {
        return Err(out_of_range("--timeout", s, "1ms and above"));
    }
    Ok(d)
}

/// What `serve` says of a limit of zero, whichever it is.
pub(super) const SERVE_ZERO: &str = "--max-conns, --max-runs and the timeouts must be above zero";

/// `serve --max-conns` and `--max-runs`: above zero.
pub(super) fn serve_limit(s: &str) -> Result<usize, Refusal> {
    match s.parse::<usize>()? {
        0 => Err(BadInput(SERVE_ZERO.to_string()).into()),
        n => Ok(n),
    }
}

/// `serve --idle-timeout`: above zero.
pub(super) fn idle_timeout(s: &str) -> Result<Duration, BadInput> {
    serve_timeout("--idle-timeout", s)
}

/// `serve --write-timeout`: above zero.
pub(super) fn write_timeout(s: &str) -> Result<Duration, BadInput> {
    serve_timeout("--write-timeout", s)
}

pub(super) fn serve_timeout(flag: &str, s: &str) -> Result<Duration, BadInput> {
    let d = duration(flag, s)?;
    if d.is_zero() {
        return Err(BadInput(SERVE_ZERO.to_string()));
    }
    Ok(d)
}

/// `--param NAME=VALUE`: both sides non-empty. A name given twice is
/// refused by [`crate::app`], which sees the whole list.
pub(super) fn param(s: &str) -> Result<Setting, BadInput> {
    match s.split_once('=') {
        Some((name, value)) if !name.is_empty() && !value.is_empty() && !name.contains(char::is_whitespace) => {
            Ok(Setting { name: name.to_string(), value: value.to_string() })
        }
        // `-p 'make clean'` is hyperfine's --prepare: a name has no space.
        _ if s.contains(char::is_whitespace) => Err(BadInput(format!(
            "malformed --param {s:?}: expected NAME=VALUE; -p is --param here (hyperfine's -p/--prepare is spelled \
             --prepare)"
        ))),
        _ => Err(BadInput(format!("malformed --param {s:?}: expected NAME=VALUE or NAME=V1,V2"))),
    }
}

/// `--label` of a run to be stored (`run`, `study`, `simulate --store`):
/// bounded ([`crate::model::text::LABEL_MAX`] bytes) and printable.
pub(super) fn label(s: &str) -> Result<String, BadInput> {
    crate::model::text::check_free_text("--label", s, crate::model::text::LABEL_MAX)
        .map_err(|e| BadInput(e.to_string()))?;
    Ok(s.to_string())
}

/// `report --title`: bounded ([`crate::model::text::TITLE_MAX`] bytes) and printable.
pub(super) fn title(s: &str) -> Result<String, BadInput> {
    crate::model::text::check_free_text("--title", s, crate::model::text::TITLE_MAX)
        .map_err(|e| BadInput(e.to_string()))?;
    Ok(s.to_string())
}

/// `history --since`: a date (`2024-05-01`, midnight UTC) or an RFC 3339
/// time in UTC (`2024-05-01T10:00:00Z`), as the stored start times are
/// written, so the two compare as text.
pub(super) fn since(s: &str) -> Result<String, BadInput> {
    let full = if s.len() == 10 { format!("{s}T00:00:00Z") } else { s.to_string() };
    match humantime::parse_rfc3339(&full) {
        Ok(t) => Ok(humantime::format_rfc3339_seconds(t).to_string()),
        Err(_) => Err(BadInput(format!("--since {s:?} is not a date: expected YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ"))),
    }
}

/// `history --alpha`: above 0, below 1.
pub(super) fn alpha(s: &str) -> Result<f64, Refusal> {
    let a: f64 = s.parse()?;
    if !(a > 0.0 && a < 1.0) {
        return Err(out_of_range("--alpha", s, "above 0 and below 1").into());
    }
    Ok(a)
}

/// `history --min-segment`: 1 to 1000 runs.
pub(super) fn min_segment(s: &str) -> Result<usize, Refusal> {
    match s.parse::<usize>()? {
        n @ 1..=1000 => Ok(n),
        _ => Err(out_of_range("--min-segment", s, "1 .. 1000 (runs)").into()),
    }
}

/// `history --permutations`: 1 to 100000.
pub(super) fn permutations(s: &str) -> Result<usize, Refusal> {
    match s.parse::<usize>()? {
        n @ 1..=100_000 => Ok(n),
        _ => Err(out_of_range("--permutations", s, "1 .. 100000").into()),
    }
}

/// `push --to`: a PostgreSQL URL (a file path is not a shared store).
pub(super) fn shared_store(s: &str) -> Result<String, BadInput> {
    use crate::store::location::{locate, redact_arg, Location};
    match locate(std::path::Path::new(s)) {
        Ok(Location::Postgres(_)) => Ok(s.to_string()),
        Ok(_) => Err(BadInput(format!(
            "--to {:?} is not a shared store: give postgresql://USER@HOST[:PORT]/DBNAME",
            redact_arg(s)
        ))),
        Err(e) => Err(BadInput(e.to_string())),
    }
}

/// One `--meta KEY=VALUE` of `run` or `study`: the key and the value
/// checked ([`crate::model::meta::pair`]); the whole list is checked by
/// [`run_meta`].
pub(super) fn meta_pair(s: &str) -> Result<(String, String), BadInput> {
    crate::model::meta::pair(s).map_err(|e| BadInput(e.to_string()))
}

/// Every `--meta` of a run as its metadata: at most 64 keys, none twice.
pub(crate) fn run_meta(pairs: &[(String, String)]) -> Result<crate::model::meta::RunMeta, BadInput> {
    crate::model::meta::RunMeta::from_pairs(pairs).map_err(|e| BadInput(e.to_string()))
}

/// `runs --meta KEY=VALUE` or `--meta KEY`.
pub(super) fn meta_filter(s: &str) -> Result<crate::model::meta::MetaFilter, BadInput> {
    crate::model::meta::MetaFilter::parse(s).map_err(|e| BadInput(e.to_string()))
}

/// `history --order-by KEY`: a metadata key as `--meta` takes one.
pub(super) fn meta_key(s: &str) -> Result<String, BadInput> {
    crate::model::meta::key(s).map_err(|e| BadInput(format!("--order-by: {e}")))?;
    Ok(s.to_string())
}

/// `agent --host-name`: what a label may hold, without blanks or commas.
pub(super) fn host_name(s: &str) -> Result<String, BadInput> {
    crate::model::text::check_free_text("--host-name", s, crate::model::text::LABEL_MAX)
        .map_err(|e| BadInput(e.to_string()))?;
    if s.chars().any(|c| c.is_whitespace() || c == ',' || c == '=') {
        return Err(BadInput(format!("--host-name {s:?}: no blanks, ',' or '=' in a host name")));
    }
    Ok(s.to_string())
}

/// One `agent --labels KEY=VALUE`: as a `--meta` pair, the value without ','.
pub(super) fn host_label(s: &str) -> Result<(String, String), BadInput> {
    let (k, v) = crate::model::meta::pair(s).map_err(|e| BadInput(format!("--labels: {e}")))?;
    if k == "host" {
        return Err(BadInput("--labels host=...: every host has host=NAME already (see --host-name)".into()));
    }
    Ok((k, v))
}

/// `submit --hosts`: `all` or `KEY=VALUE`.
pub(super) fn hosts(s: &str) -> Result<crate::fleet::queue::Hosts, BadInput> {
    if s == "all" {
        return Ok(crate::fleet::queue::Hosts::All);
    }
    let (k, v) =
        crate::model::meta::pair(s).map_err(|e| BadInput(format!("--hosts {s:?}: expected all or KEY=VALUE ({e})")))?;
    Ok(crate::fleet::queue::Hosts::Label(k, v))
}

/// `agent --lease`: 1 s to 30 min.
pub(super) fn lease(s: &str) -> Result<Duration, BadInput> {
    let d = duration("--lease", s)?;
    if d < Duration::from_secs(1) || d > Duration::from_secs(1800) {
        return Err(out_of_range("--lease", s, "1s .. 30m"));
    }
    Ok(d)
}

/// `agent --poll`: 100 ms to 10 min.
pub(super) fn poll(s: &str) -> Result<Duration, BadInput> {
    let d = duration("--poll", s)?;
    if d < Duration::from_millis(100) || d > Duration::from_secs(600) {
        return Err(out_of_range("--poll", s, "100ms .. 10m"));
    }
    Ok(d)
}

/// `doctor --cpus LIST`: a CPU list (checked against the machine by the command).
pub(super) fn doctor_cpus(s: &str) -> Result<CpuSet, Malformed> {
    CpuSet::parse_list(s).ok().filter(|c| !c.is_empty()).ok_or_else(|| Malformed::CpuList(s.to_string()))
}
