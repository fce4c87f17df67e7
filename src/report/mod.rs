//! Reports: what a run or a comparison prints, in text, Markdown, AsciiDoc,
//! Org mode, CSV, JSON, an SVG chart or an HTML page.
//!
//! [`model`] turns stored results into tables (one column per configuration
//! or per run, rows per benchmark and parameter point, a geometric-mean row
//! per family); one module per format renders them, each through the
//! [`Renderer`] trait. `grid` turns a table into the cells the text,
//! Markdown and HTML renderers draw; [`header`] names the runs. Nothing here
//! measures or stores anything.

pub(crate) mod asciidoc;
pub(crate) mod chart;
pub(crate) mod counters;
pub(crate) mod csv;
pub(crate) mod extra;
pub(crate) mod extra_render;
pub(crate) mod fingerprint;
pub(crate) mod flame;
mod grid;
pub(crate) mod header;
pub(crate) mod history;
pub(crate) mod html;
pub(crate) mod json;
pub(crate) mod markdown;
mod markup;
pub(crate) mod model;
pub(crate) mod orgmode;
pub(crate) mod pooled;
pub(crate) mod profile_tables;
pub(crate) mod remarks;
mod sweep;
pub(crate) mod table;
pub(crate) mod text;
pub(crate) mod why;

pub(crate) use model::Report;

use anyhow::{anyhow, Result};
use clap::ValueEnum;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    Text,
    Json,
    Markdown,
    Csv,
    /// hyperfine's `--export-asciidoc`: Markdown's tables as AsciiDoc.
    Asciidoc,
    /// hyperfine's `--export-orgmode`: Markdown's tables as Org-mode tables.
    Orgmode,
}

impl Format {
    /// Its name on the command line (`--format NAME`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Markdown => "markdown",
            Format::Csv => "csv",
            Format::Asciidoc => "asciidoc",
            Format::Orgmode => "orgmode",
        }
    }

    /// A format of tables a person reads (where `--time-unit` applies).
    pub(crate) fn for_people(self) -> bool {
        matches!(self, Format::Text | Format::Markdown | Format::Asciidoc | Format::Orgmode)
    }
}

/// One output format. Every renderer takes the same input, the reports to
/// show, and returns the whole output or the error that prevented it.
///
/// A report is one run, or two runs compared ([`Report::compares_runs`]).
/// Every format but the HTML page draws exactly one report; the page shows
/// several: each run, then the first run against each later one.
pub(crate) trait Renderer {
    fn render(&self, reports: &[Report]) -> Result<String>;
}

/// The renderer of a `--format` choice; `color` applies to text only.
pub(crate) fn renderer(format: Format, color: bool) -> Box<dyn Renderer> {
    match format {
        Format::Text => Box::new(text::Text { color }),
        Format::Markdown => Box::new(markdown::Markdown),
        Format::Csv => Box::new(csv::Csv),
        Format::Json => Box::new(json::Json),
        Format::Asciidoc => Box::new(asciidoc::Asciidoc),
        Format::Orgmode => Box::new(orgmode::Orgmode),
    }
}

/// One report in `format`: what `kdelta run`, `show` and `compare` print.
pub(crate) fn render(report: &Report, format: Format, color: bool) -> Result<String> {
    renderer(format, color).render(std::slice::from_ref(report))
}

/// The report of a format that draws one.
fn single<'a>(reports: &'a [Report], format: &str) -> Result<&'a Report> {
    match reports {
        [one] => Ok(one),
        _ => Err(anyhow!("the {format} format draws one report, not {}", reports.len())),
    }
}

pub(crate) use crate::model::fmt::{fmt_factor, fmt_num, fmt_pct};

#[cfg(test)]
mod tests;
