//! Reports: what a run or a comparison prints, in text, Markdown, CSV or JSON.
//!
//! [`model`] turns stored results into tables (one column per configuration
//! or per run, rows per benchmark and parameter point, a geometric-mean row
//! per family); one module per format renders them. Nothing here measures or
//! stores anything.

pub mod chart;
pub mod csv;
pub mod extra;
pub mod extra_render;
pub mod fingerprint;
mod grid;
pub mod html;
pub mod json;
pub mod markdown;
pub mod model;
pub mod pooled;
pub mod remarks;
mod sweep;
pub mod text;

pub use model::{Column, Report, Table};

use clap::ValueEnum;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
    Markdown,
    Csv,
}

pub fn render(report: &Report, format: Format, color: bool) -> String {
    match format {
        Format::Text => text::render(report, color),
        Format::Markdown => markdown::render(report),
        Format::Csv => csv::render(report),
        Format::Json => crate::model::text::json_escape_bidi(&json::render(report)).into_owned(),
    }
}

pub use crate::model::fmt::{fmt_num, fmt_pct};

#[cfg(test)]
mod tests;
