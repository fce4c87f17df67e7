//! AsciiDoc tables (hyperfine's `--export-asciidoc`): the tables Markdown
//! draws, as `|===` blocks, for a document built with Asciidoctor.

use super::grid::Grid;
use super::markup::{document, Markup};
use super::model::Report;
use super::Renderer;
use anyhow::Result;

/// `|===` tables with a header row, geometric means in bold, notes as a list.
pub(crate) struct Asciidoc;

impl Renderer for Asciidoc {
    fn render(&self, reports: &[Report]) -> Result<String> {
        Ok(document(super::single(reports, "AsciiDoc")?, self))
    }
}

impl Markup for Asciidoc {
    /// `|`, which would end a cell, escaped.
    fn esc(&self, s: &str) -> String {
        crate::model::text::printable(s).replace('|', "\\|")
    }

    fn draw(&self, out: &mut String, g: &Grid) {
        let cols: Vec<&str> = g.cols.iter().map(|c| if c.right() { ">" } else { "<" }).collect();
        out.push_str(&format!("[cols=\"{}\",options=\"header\"]\n|===\n", cols.join(",")));
        out.push_str(&format!("|{}\n", g.header.iter().map(|h| self.esc(h)).collect::<Vec<_>>().join(" |")));
        for (i, row) in g.rows.iter().enumerate() {
            let cells: Vec<String> = row.iter().map(|c| self.cell(c, i >= g.geo_from)).collect();
            out.push_str(&format!("|{}\n", cells.join(" |")));
        }
        out.push_str("|===\n\n");
    }

    const BULLET: &'static str = "* ";

    /// A literal block: the lines as they are, in a fixed-width font.
    const LITERAL: (&'static str, &'static str) = ("....", "....");
}
