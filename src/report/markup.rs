//! What the lightweight markups (AsciiDoc, Org) share: a report as run
//! lines, tables, `why` lines, the summaries as a literal block and the
//! notes as a list. Each markup says how it escapes text, draws a table and
//! writes a list item and a literal block ([`Markup`]).

use super::grid::{self, Grid};
use super::header::{meta_line, push_lines, push_notes, run_line, Emphasis};
use super::model::Report;

/// One markup's syntax.
pub(crate) trait Markup {
    /// A cell or line as the markup's text (control characters shown, not
    /// obeyed; what would end a cell escaped).
    fn esc(&self, s: &str) -> String;
    /// One table (`document` writes its notes after it).
    fn draw(&self, out: &mut String, g: &Grid);
    /// What starts a list item (`* `, `- `).
    const BULLET: &'static str;
    /// The lines that open and close a literal block.
    const LITERAL: (&'static str, &'static str);
    /// A cell of a table: escaped, and in bold from the geometric means on.
    fn cell(&self, c: &str, geomean: bool) -> String {
        let c = self.esc(c.trim());
        if geomean && !c.is_empty() {
            format!("*{c}*")
        } else {
            c
        }
    }
}

/// `*run 12* —`: the run lines' emphasis (bold in both markups; in Org no
/// space after the star, so it reads bold, not a heading).
const RUN_LINE: Emphasis = Emphasis { strong: "*", separator: " —" };

/// The whole report in markup `m`.
pub(crate) fn document<M: Markup>(rep: &Report, m: &M) -> String {
    let mut out = String::new();
    for run in &rep.runs {
        out.push_str(&m.esc(&run_line(run, &RUN_LINE)));
        out.push_str("\n\n");
        if let Some(line) = meta_line(run) {
            out.push_str(&format!("{}\n\n", m.esc(&line)));
        }
    }
    let grids = if rep.tables.is_empty() {
        vec![grid::results(rep, rep.verbose)]
    } else {
        rep.tables.iter().map(|t| grid::comparison(t, rep.threshold_pct, rep.verbose)).collect()
    };
    for g in &grids {
        m.draw(&mut out, g);
        push_table_notes(&mut out, g, m);
    }
    let why: Vec<String> = rep.why.iter().map(|w| m.esc(w)).collect();
    push_lines(&mut out, M::BULLET, &why);
    if !why.is_empty() {
        out.push('\n');
    }
    if !rep.summaries.is_empty() {
        let (open, close) = M::LITERAL;
        out.push_str(&format!("{open}\n"));
        push_lines(&mut out, "", &rep.summaries);
        out.push_str(&format!("{close}\n\n"));
    }
    let notes: Vec<String> = rep.notes.iter().map(|n| m.esc(n)).collect();
    let remarks: Vec<String> = rep.remarks.iter().map(|n| m.esc(n)).collect();
    push_notes(&mut out, &notes, &remarks, M::BULLET);
    out
}

/// A table's notes as list items, then a blank line.
fn push_table_notes<M: Markup>(out: &mut String, g: &Grid, m: &M) {
    for n in &g.notes {
        out.push_str(&format!("{}{}\n", M::BULLET, m.esc(n)));
    }
    out.push('\n');
}
