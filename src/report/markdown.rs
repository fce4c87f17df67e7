//! Markdown tables, ready to paste into a mailing-list post or an issue.

use super::grid::{self, Grid};
use super::header::{meta_line, push_lines, push_notes, run_line, Emphasis};
use super::model::Report;
use super::Renderer;
use anyhow::Result;

/// Pipe tables, geometric means in bold, notes as a list.
pub(crate) struct Markdown;

impl Renderer for Markdown {
    fn render(&self, reports: &[Report]) -> Result<String> {
        Ok(render(super::single(reports, "Markdown")?))
    }
}

const RUN_LINE: Emphasis = Emphasis { strong: "**", separator: " —" };

fn render(rep: &Report) -> String {
    let mut out = String::new();
    for run in &rep.runs {
        out.push_str(&run_line(run, &RUN_LINE));
        out.push_str("\n\n");
        if let Some(m) = meta_line(run) {
            out.push_str(&format!("{m}\n\n"));
        }
    }
    if rep.tables.is_empty() {
        draw(&mut out, &grid::results(rep, rep.verbose));
    }
    for t in &rep.tables {
        draw(&mut out, &grid::comparison(t, rep.threshold_pct, rep.verbose));
    }
    for w in &rep.why {
        out.push_str(&format!("- {}\n", esc(w)));
    }
    if !rep.why.is_empty() {
        out.push('\n');
    }
    if !rep.summaries.is_empty() {
        out.push_str("```\n");
        push_lines(&mut out, "", &rep.summaries);
        out.push_str("```\n\n");
    }
    push_notes(&mut out, &rep.notes, &rep.remarks, "- ");
    out
}

pub(super) fn esc(s: &str) -> String {
    crate::model::text::printable(s).replace('|', "\\|")
}

fn draw(out: &mut String, g: &Grid) {
    out.push_str(&format!("| {} |\n", g.header.iter().map(|h| esc(h)).collect::<Vec<_>>().join(" | ")));
    out.push_str(&format!(
        "|{}|\n",
        g.cols.iter().map(|c| if c.right() { "---:" } else { ":---" }).collect::<Vec<_>>().join("|")
    ));
    for (i, row) in g.rows.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .map(|c| {
                let c = esc(c.trim_end());
                if i >= g.geo_from && !c.is_empty() {
                    format!("**{c}**")
                } else {
                    c
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
