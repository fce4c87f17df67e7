//! Org-mode tables (hyperfine's `--export-orgmode`): the tables Markdown
//! draws, as Org tables Emacs aligns and computes on.

use super::extra_render::unicode_width_lite::width;
use super::grid::{self, Grid};
use super::header::{meta_line, push_lines, push_notes, run_line, Emphasis};
use super::model::Report;
use super::Renderer;
use anyhow::Result;

/// Org tables padded to their columns' width, a rule under the header and
/// above the geometric means (in bold), notes as a list.
pub(crate) struct Orgmode;

impl Renderer for Orgmode {
    fn render(&self, reports: &[Report]) -> Result<String> {
        Ok(render(super::single(reports, "Org-mode")?))
    }
}

/// `*run 12*`: no space after the star, so Org reads bold, not a heading.
const RUN_LINE: Emphasis = Emphasis { strong: "*", separator: " —" };

fn render(rep: &Report) -> String {
    let mut out = String::new();
    for run in &rep.runs {
        out.push_str(&esc(&run_line(run, &RUN_LINE)));
        out.push_str("\n\n");
        if let Some(m) = meta_line(run) {
            out.push_str(&format!("{}\n\n", esc(&m)));
        }
    }
    if rep.tables.is_empty() {
        draw(&mut out, &grid::results(rep, rep.verbose));
    }
    for t in &rep.tables {
        draw(&mut out, &grid::comparison(t, rep.threshold_pct, rep.verbose));
    }
    let why: Vec<String> = rep.why.iter().map(|w| esc(w)).collect();
    push_lines(&mut out, "- ", &why);
    if !why.is_empty() {
        out.push('\n');
    }
    if !rep.summaries.is_empty() {
        out.push_str("#+begin_example\n");
        push_lines(&mut out, "", &rep.summaries);
        out.push_str("#+end_example\n\n");
    }
    let notes: Vec<String> = rep.notes.iter().map(|n| esc(n)).collect();
    let remarks: Vec<String> = rep.remarks.iter().map(|n| esc(n)).collect();
    push_notes(&mut out, &notes, &remarks, "- ");
    out
}

/// A cell or line as Org text: control characters shown, not obeyed, and
/// `|`, which would end a cell, written as Org's `\vert{}`.
fn esc(s: &str) -> String {
    crate::model::text::printable(s).replace('|', "\\vert{}")
}

fn draw(out: &mut String, g: &Grid) {
    let mut rows: Vec<Vec<String>> = vec![g.header.iter().map(|h| esc(h)).collect()];
    for (i, row) in g.rows.iter().enumerate() {
        rows.push(
            row.iter()
                .map(|c| {
                    let c = esc(c.trim());
                    if i >= g.geo_from && !c.is_empty() {
                        format!("*{c}*")
                    } else {
                        c
                    }
                })
                .collect(),
        );
    }
    let n = g.header.len();
    let mut w = vec![1; n];
    for r in &rows {
        for (j, c) in r.iter().enumerate().take(n) {
            w[j] = w[j].max(width(c));
        }
    }
    let rule = format!("|{}|\n", w.iter().map(|&x| "-".repeat(x + 2)).collect::<Vec<_>>().join("+"));
    for (i, r) in rows.iter().enumerate() {
        if i == 1 || (g.geo_from > 0 && i == g.geo_from + 1) {
            out.push_str(&rule);
        }
        let cells: Vec<String> = (0..n)
            .map(|j| {
                let c = r.get(j).map(String::as_str).unwrap_or("");
                let pad = " ".repeat(w[j] - width(c));
                if g.cols.get(j).is_some_and(|c| c.right()) && i > 0 {
                    format!("{pad}{c}")
                } else {
                    format!("{c}{pad}")
                }
            })
            .collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out.push('\n');
    for n in &g.notes {
        out.push_str(&format!("- {}\n", esc(n)));
    }
    out.push('\n');
}
