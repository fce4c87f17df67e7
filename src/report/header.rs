//! How a run is named: the line above a report's tables (text and Markdown
//! alike, each with its own emphasis) and the short name a heading or a
//! table column uses; and the plain lines below the tables (notes, then
//! warnings) that text and Markdown set alike.

use crate::model::record::RunRecord;

/// How a renderer sets the run line: the marks around `run N`, and what
/// separates that name from the rest of the line.
pub(crate) struct Emphasis {
    pub(crate) strong: &'static str,
    pub(crate) separator: &'static str,
}

/// `run 12 "baseline": 2024-05-01T10:00:00Z (complete), kdelta 0.1.0`, without a newline.
pub(crate) fn run_line(run: &RunRecord, e: &Emphasis) -> String {
    format!(
        "{s}run {}{s}{}{} {} ({}), kdelta {}",
        run.id,
        run.label.as_ref().map(|l| format!(" \"{l}\"")).unwrap_or_default(),
        e.separator,
        run.started,
        run.status.as_str(),
        run.kdelta_version,
        s = e.strong,
    )
}

/// `meta: branch=main commit=abc123`, the line under a run's when it has metadata.
pub(crate) fn meta_line(run: &RunRecord) -> Option<String> {
    (!run.meta.is_empty()).then(|| format!("meta: {}", run.meta.compact()))
}

/// `run 12 (baseline)`, or `run 12` when the run has no label.
pub(crate) fn run_name(r: &RunRecord) -> String {
    match &r.label {
        Some(l) => format!("run {} ({l})", r.id),
        None => format!("run {}", r.id),
    }
}

/// `lines`, one a line, each after `before`.
pub(crate) fn push_lines(out: &mut String, before: &str, lines: &[String]) {
    for l in lines {
        out.push_str(before);
        out.push_str(l);
        out.push('\n');
    }
}

/// A report's closing lines, each after `bullet`: its notes, then its
/// warnings (`warning: ...`).
pub(crate) fn push_notes(out: &mut String, notes: &[String], warnings: &[String], bullet: &str) {
    push_lines(out, bullet, notes);
    push_lines(out, &format!("{bullet}warning: "), warnings);
}
