//! `kdelta history`: one series per benchmark point (benchmark, parameters,
//! configuration, host) over the stored runs, each run's median with its
//! 95 % interval, and the change points found (`stats::changepoint`), in
//! text, Markdown, CSV or JSON. The series are built by `app`; this module
//! only draws them.

use super::fmt_num;
use super::Format;
use crate::model::meta::RunMeta;
use crate::model::{Better, Params};
use crate::stats::changepoint::{ChangePoint, Step};
use anyhow::Result;
use serde::Serialize;
use std::fmt::Write;

/// Everything `kdelta history` prints.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct History {
    /// The search's settings, so a reader can repeat it.
    pub(crate) alpha: f64,
    pub(crate) min_segment: usize,
    pub(crate) permutations: usize,
    pub(crate) seed: u64,
    pub(crate) series: Vec<Series>,
}

/// One benchmark point over the runs.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Series {
    pub(crate) benchmark: String,
    pub(crate) params: Params,
    pub(crate) config: String,
    /// The hostname of the runs' host snapshot.
    pub(crate) host: String,
    pub(crate) unit: String,
    pub(crate) better: Better,
    /// In run order.
    pub(crate) runs: Vec<RunPoint>,
    /// Set when there were too few runs to look for a change: how many
    /// there are and how many it takes (2 × the minimum segment).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) too_short: Option<(usize, usize)>,
    /// Set when the runs fall into two speeds that take turns
    /// (`stats::run_modes`): change points were looked for within each.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) modes: Option<crate::stats::speeds::Speeds>,
    pub(crate) changes: Vec<Change>,
}

/// One run of a series.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RunPoint {
    pub(crate) run: RunRef,
    /// Median of the clean samples.
    pub(crate) median: f64,
    /// 95 % interval of the median (None with fewer than 6 clean samples).
    pub(crate) ci: Option<(f64, f64)>,
    pub(crate) n: usize,
}

/// A run as the history names it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct RunRef {
    pub(crate) id: i64,
    pub(crate) started: String,
    pub(crate) label: Option<String>,
    /// What the user attached to the run (`--meta commit=abc123`).
    #[serde(skip_serializing_if = "RunMeta::is_empty")]
    pub(crate) meta: RunMeta,
}

/// A change point of a series.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Change {
    /// Position in the series of the first run after the change.
    pub(crate) index: usize,
    pub(crate) last_before: RunRef,
    pub(crate) first_after: RunRef,
    pub(crate) q: f64,
    pub(crate) p: f64,
    #[serde(flatten)]
    pub(crate) step: Step,
}

impl Change {
    pub(crate) fn of(cp: &ChangePoint, runs: &[RunPoint], step: Step) -> Change {
        Change {
            index: cp.index,
            last_before: runs[cp.index - 1].run.clone(),
            first_after: runs[cp.index].run.clone(),
            q: cp.q,
            p: cp.p,
            step,
        }
    }

    /// Whether the change is for the better, given the figure's direction.
    pub(super) fn verdict(&self, better: Better) -> &'static str {
        match (self.step.change_pct > 0.0, better) {
            (true, Better::Higher) | (false, Better::Lower) => "better",
            _ => "worse",
        }
    }
}

/// The one-line refusal of a format `history` and a study's tables do not
/// write (AsciiDoc, Org mode: those are for a run's tables).
pub(crate) fn unsupported(format: Format) -> anyhow::Error {
    crate::error::bad_input(format!(
        "--format {}: this command writes text, markdown, csv or json (asciidoc and orgmode are for run, show, \
         export and compare)",
        format.name()
    ))
}

/// `history` in `format`.
pub(crate) fn render(h: &History, format: Format) -> Result<String> {
    Ok(match format {
        Format::Text => text(h),
        Format::Markdown => markdown(h),
        Format::Csv => csv(h),
        Format::Json => serde_json::to_string_pretty(h)? + "\n",
        Format::Asciidoc | Format::Orgmode => return Err(unsupported(format)),
    })
}

fn run_name(r: &RunRef) -> String {
    let meta = if r.meta.is_empty() { String::new() } else { format!(", {}", r.meta.compact()) };
    match &r.label {
        Some(l) => format!("run {} ({}, {l}{meta})", r.id, r.started),
        None => format!("run {} ({}{meta})", r.id, r.started),
    }
}

pub(super) fn title(s: &Series) -> String {
    let params = s.params.display_set(&crate::bench::option_defaults(&s.benchmark));
    let sep = if params.is_empty() { "" } else { "  " };
    format!("{}{sep}{params}  config {}  host {}  ({}, {} is better)", s.benchmark, s.config, s.host, s.unit, better(s))
}

pub(super) fn better(s: &Series) -> &'static str {
    match s.better {
        Better::Lower => "lower",
        Better::Higher => "higher",
    }
}

pub(super) fn interval(ci: Option<(f64, f64)>) -> String {
    ci.map(|(lo, hi)| format!("{} .. {}", fmt_num(lo), fmt_num(hi))).unwrap_or_else(|| "-".into())
}

/// The line that says what the search found in a series, or why it did not look.
pub(super) fn outcome(h: &History, s: &Series) -> String {
    let found = found(h, s);
    match &s.modes {
        Some(m) => format!(
            "runs in two speeds, taking turns ({}): searched speed by speed; {found}",
            m.describe(|x| format!("{} {}", fmt_num(x), s.unit)).replace("workers", "runs")
        ),
        None => found,
    }
}

fn found(h: &History, s: &Series) -> String {
    match s.too_short {
        Some((len, needed)) => format!(
            "too few runs to look for a change point: {len}, it takes {needed} (2 x --min-segment {})",
            h.min_segment
        ),
        None if s.changes.is_empty() => format!(
            "no change point (alpha {}, min segment {}, {} permutations, seed {})",
            h.alpha, h.min_segment, h.permutations, h.seed
        ),
        None => format!("{} change point(s):", s.changes.len()),
    }
}

fn change_line(c: &Change, s: &Series) -> String {
    let ci = c.step.ci_pct.map(|(lo, hi)| format!(" [{lo:+.1}%, {hi:+.1}%]")).unwrap_or_default();
    let agree = match c.step.samples_p {
        Some(p) if c.step.samples_agree => format!("samples agree (p {})", fmt_p(p)),
        Some(p) => format!("samples do not agree (p {})", fmt_p(p)),
        None => "samples too few to test".into(),
    };
    format!(
        "between {} and {}: {} -> {} {}, {}{ci} ({}); p {}; {agree}",
        run_name(&c.last_before),
        run_name(&c.first_after),
        fmt_num(c.step.before),
        fmt_num(c.step.after),
        s.unit,
        super::fmt_pct(c.step.change_pct),
        c.verdict(s.better),
        fmt_p(c.p),
    )
}

pub(super) fn fmt_p(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".into()
    } else {
        format!("{p:.3}")
    }
}

fn text(h: &History) -> String {
    let mut out = String::new();
    for s in &h.series {
        let _ = writeln!(out, "{}", title(s));
        let _ = writeln!(
            out,
            "  {:>6}  {:<20}  {:<16}  {:>12}  {:<24}  meta",
            "run", "started", "label", "median", "95% interval"
        );
        for (i, r) in s.runs.iter().enumerate() {
            if s.changes.iter().any(|c| c.index == i) {
                let _ = writeln!(out, "  {:-<6}  change point", "");
            }
            let _ = writeln!(
                out,
                "  {:>6}  {:<20}  {:<16}  {:>12}  {:<24}  {}",
                r.run.id,
                r.run.started,
                r.run.label.as_deref().unwrap_or(""),
                fmt_num(r.median),
                interval(r.ci),
                r.run.meta.compact()
            );
        }
        let _ = writeln!(out, "  {}", outcome(h, s));
        for c in &s.changes {
            let _ = writeln!(out, "    {}", change_line(c, s));
        }
        out.push('\n');
    }
    out
}

fn markdown(h: &History) -> String {
    use super::markdown::esc;
    let mut out = String::new();
    for s in &h.series {
        let _ = writeln!(out, "### {}\n", esc(&title(s)));
        out.push_str("| run | started | label | median | 95% interval | meta |\n|---:|---|---|---:|---|---|\n");
        for (i, r) in s.runs.iter().enumerate() {
            let mark = if s.changes.iter().any(|c| c.index == i) { " ▲" } else { "" };
            let _ = writeln!(
                out,
                "| {}{mark} | {} | {} | {} | {} | {} |",
                r.run.id,
                r.run.started,
                esc(r.run.label.as_deref().unwrap_or("")),
                fmt_num(r.median),
                interval(r.ci),
                esc(&r.run.meta.compact())
            );
        }
        let _ = writeln!(out, "\n{}", esc(&outcome(h, s)));
        for c in &s.changes {
            let _ = writeln!(out, "- {}", esc(&change_line(c, s)));
        }
        out.push('\n');
    }
    out
}

/// One line per run; the change columns are filled on the first run after
/// a change point, `segment` counts the change points before the run (empty
/// when the series was too short to look).
fn csv(h: &History) -> String {
    use super::csv::{num, q};
    let mut out = String::from(
        "benchmark,params,config,host,unit,better,run,started,label,median,ci_low,ci_high,n,segment,\
         change_pct,change_ci_low,change_ci_high,p,samples_p,samples_agree,meta\n",
    );
    for s in &h.series {
        for (i, r) in s.runs.iter().enumerate() {
            let segment = s.changes.iter().filter(|c| c.index <= i).count();
            let change = s.changes.iter().find(|c| c.index == i);
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                q(&s.benchmark),
                q(&s.params.display()),
                q(&s.config),
                q(&s.host),
                q(&s.unit),
                better(s),
                r.run.id,
                q(&r.run.started),
                q(r.run.label.as_deref().unwrap_or("")),
                r.median,
                num(r.ci.map(|c| c.0)),
                num(r.ci.map(|c| c.1)),
                r.n,
                if s.too_short.is_some() { String::new() } else { segment.to_string() },
                num(change.map(|c| c.step.change_pct)),
                num(change.and_then(|c| c.step.ci_pct.map(|x| x.0))),
                num(change.and_then(|c| c.step.ci_pct.map(|x| x.1))),
                num(change.map(|c| c.p)),
                num(change.and_then(|c| c.step.samples_p)),
                change.map(|c| c.step.samples_agree.to_string()).unwrap_or_default(),
                q(&r.run.meta.compact()),
            );
        }
    }
    out
}
