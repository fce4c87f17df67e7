//! Reports: what a run or a comparison prints, in text, Markdown, CSV or JSON.
//!
//! [`model`] turns stored results into tables (one column per configuration
//! or per run, rows per benchmark and parameter point, a geometric-mean row
//! per family); one module per format renders them. Nothing here measures or
//! stores anything.

pub mod chart;
pub mod csv;
mod grid;
pub mod remarks;
pub mod json;
pub mod markdown;
pub mod model;
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
        Format::Json => json::render(report),
    }
}

pub use crate::model::fmt::{fmt_num, fmt_pct};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(fmt_num(164071.2), "164,071");
        assert_eq!(fmt_num(3051.28), "3051");
        assert_eq!(fmt_num(190.75), "190.8");
        assert_eq!(fmt_num(11.16), "11.16");
        assert_eq!(fmt_num(1.1), "1.100");
        assert_eq!(fmt_num(0.042134), "0.04213");
        assert_eq!(fmt_num(f64::NAN), "-");
        assert_eq!(fmt_pct(-1.3333), "-1.3%");
        assert_eq!(fmt_pct(250.0), "+250%");
    }
}
