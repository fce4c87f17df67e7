//! AsciiDoc tables (hyperfine's `--export-asciidoc`): the tables Markdown
//! draws, as `|===` blocks, for a document built with Asciidoctor.

use super::grid::{self, Grid};
use super::header::{meta_line, push_lines, push_notes, run_line, Emphasis};
use super::model::Report;
use super::Renderer;
use anyhow::Result;

/// `|===` tables with a header row, geometric means in bold, notes as a list.
pub(crate) struct Asciidoc;

impl Renderer for Asciidoc {
    fn render(&self, reports: &[Report]) -> Result<String> {
        Ok(render(super::single(reports, "AsciiDoc")?))
    }
}

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
    push_lines(&mut out, "* ", &why);
    if !why.is_empty() {
        out.push('\n');
    }
    if !rep.summaries.is_empty() {
        // A literal block: the lines as they are, in a fixed-width font.
        out.push_str("....\n");
        push_lines(&mut out, "", &rep.summaries);
        out.push_str("....\n\n");
    }
    let notes: Vec<String> = rep.notes.iter().map(|n| esc(n)).collect();
    let remarks: Vec<String> = rep.remarks.iter().map(|n| esc(n)).collect();
    push_notes(&mut out, &notes, &remarks, "* ");
    out
}

/// A cell or line as AsciiDoc text: control characters shown, not obeyed,
/// and `|`, which would end a cell, escaped.
fn esc(s: &str) -> String {
    crate::model::text::printable(s).replace('|', "\\|")
}

fn draw(out: &mut String, g: &Grid) {
    let cols: Vec<&str> = g.cols.iter().map(|c| if c.right() { ">" } else { "<" }).collect();
    out.push_str(&format!("[cols=\"{}\",options=\"header\"]\n|===\n", cols.join(",")));
    out.push_str(&format!("|{}\n", g.header.iter().map(|h| esc(h)).collect::<Vec<_>>().join(" |")));
    for (i, row) in g.rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .map(|c| {
                let c = esc(c.trim());
                if i >= g.geo_from && !c.is_empty() {
                    format!("*{c}*")
                } else {
                    c
                }
            })
            .collect();
        out.push_str(&format!("|{}\n", cells.join(" |")));
    }
    out.push_str("|===\n\n");
    for n in &g.notes {
        out.push_str(&format!("* {}\n", esc(n)));
    }
    out.push('\n');
}
