//! Aligned plain-text tables for terminals; colour only when asked (a terminal
//! without NO_COLOR).

use super::grid::{self, Col, Grid};
use super::header::{meta_line, push_lines, push_notes, run_line, Emphasis};
use super::model::Report;
use super::Renderer;
use anyhow::Result;

const GREEN: &str = "\x1b[32m";
const RED: &str = "\x1b[31m";
const DIM: &str = "\x1b[2m";
const RESET: &str = "\x1b[0m";

/// Aligned tables; significant changes in green or red and the notes
/// dimmed when `color`.
pub(crate) struct Text {
    pub(crate) color: bool,
}

impl Renderer for Text {
    fn render(&self, reports: &[Report]) -> Result<String> {
        Ok(render(super::single(reports, "text")?, self.color))
    }
}

const RUN_LINE: Emphasis = Emphasis { strong: "", separator: ":" };

fn render(rep: &Report, color: bool) -> String {
    let mut out = String::new();
    for run in &rep.runs {
        out.push_str(&run_line(run, &RUN_LINE));
        out.push('\n');
        if let Some(m) = meta_line(run) {
            out.push_str(&format!("  {m}\n"));
        }
    }
    out.push('\n');
    if rep.tables.is_empty() {
        draw(&mut out, &grid::results(rep, rep.verbose), color);
        out.push('\n');
    }
    for t in &rep.tables {
        draw(&mut out, &grid::comparison(t, rep.threshold_pct, rep.verbose), color);
        out.push('\n');
    }
    for w in &rep.why {
        out.push_str(&format!("{w}\n"));
    }
    if !rep.summaries.is_empty() {
        if !out.ends_with("\n\n") {
            out.push('\n');
        }
        push_lines(&mut out, "", &rep.summaries);
    }
    push_notes(&mut out, &rep.notes, &rep.remarks, "");
    out
}

fn draw(out: &mut String, g: &Grid, color: bool) {
    let ncol = g.header.len();
    let mut w = vec![0usize; ncol];
    for row in std::iter::once(&g.header).chain(g.rows.iter()) {
        for (i, c) in row.iter().enumerate().take(ncol) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |cells: &Vec<String>, marks: Option<&Vec<Option<bool>>>| -> String {
        let mut s = String::new();
        let mut change_idx = 0;
        for (i, c) in cells.iter().enumerate().take(ncol) {
            if i > 0 {
                s.push_str("  ");
            }
            let pad = w[i].saturating_sub(c.chars().count());
            let is_change = g.cols[i] == Col::Change;
            let mark = if is_change {
                let m = marks.and_then(|m| m.get(change_idx).copied().flatten());
                change_idx += 1;
                m
            } else {
                None
            };
            let (pre, post) = match (color, mark) {
                (true, Some(true)) => (GREEN, RESET),
                (true, Some(false)) => (RED, RESET),
                _ => ("", ""),
            };
            if g.cols[i].right() {
                s.push_str(&" ".repeat(pad));
                s.push_str(&format!("{pre}{c}{post}"));
            } else {
                s.push_str(&format!("{pre}{c}{post}"));
                if i + 1 < ncol {
                    s.push_str(&" ".repeat(pad));
                }
            }
        }
        s.trim_end().to_string() + "\n"
    };
    out.push_str(&line(&g.header, None));
    let total: usize = w.iter().sum::<usize>() + 2 * (ncol - 1);
    out.push_str(&format!("{}\n", "-".repeat(total)));
    for (i, row) in g.rows.iter().enumerate() {
        if i == g.geo_from && i > 0 {
            out.push_str(&format!("{}\n", "-".repeat(total)));
        }
        out.push_str(&line(row, g.marks.get(i)));
    }
    for n in &g.notes {
        if color {
            out.push_str(&format!("{DIM}{n}{RESET}\n"));
        } else {
            out.push_str(&format!("{n}\n"));
        }
    }
}

/// Every remark of every result, one line each, then the run's own
/// (`kdelta show RUN --warnings`).
pub(crate) fn warnings(rep: &Report) -> String {
    let mut out = String::new();
    for r in &rep.results {
        let params = r.params.display_set(&crate::bench::option_defaults(&r.benchmark));
        let shown = if params.is_empty() { r.benchmark.clone() } else { format!("{} {params}", r.benchmark) };
        let cell = super::model::cell_of(r);
        let e = super::remarks::Entry { who: format!("{shown} [{}]", r.config), unit: &r.unit, cell: &cell };
        for l in super::remarks::full(&e) {
            out.push_str(&l);
            out.push('\n');
        }
    }
    for r in &rep.remarks {
        out.push_str(&format!("warning: {r}\n"));
    }
    if out.is_empty() {
        out.push_str("no warnings\n");
    }
    out
}
