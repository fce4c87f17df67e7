//! Org-mode tables (hyperfine's `--export-orgmode`): the tables Markdown
//! draws, as Org tables Emacs aligns and computes on.

use super::extra_render::unicode_width_lite::width;
use super::grid::Grid;
use super::markup::{document, Markup};
use super::model::Report;
use super::Renderer;
use anyhow::Result;

/// Org tables padded to their columns' width, a rule under the header and
/// above the geometric means (in bold), notes as a list.
pub(crate) struct Orgmode;

impl Renderer for Orgmode {
    fn render(&self, reports: &[Report]) -> Result<String> {
        Ok(document(super::single(reports, "Org-mode")?, self))
    }
}

impl Markup for Orgmode {
    /// `|`, which would end a cell, written as Org's `\vert{}`.
    fn esc(&self, s: &str) -> String {
        crate::model::text::printable(s).replace('|', "\\vert{}")
    }

    fn draw(&self, out: &mut String, g: &Grid) {
        let mut rows: Vec<Vec<String>> = vec![g.header.iter().map(|h| self.esc(h)).collect()];
        for (i, row) in g.rows.iter().enumerate() {
            rows.push(row.iter().map(|c| self.cell(c, i >= g.geo_from)).collect());
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
    }

    const BULLET: &'static str = "- ";

    const LITERAL: (&'static str, &'static str) = ("#+begin_example", "#+end_example");
}
