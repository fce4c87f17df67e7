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

/// A figure for people: about four significant digits, thousands grouped.
pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    if a >= 10_000.0 {
        group_thousands(v.round() as i64)
    } else if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else if a >= 1.0 {
        format!("{v:.3}")
    } else if a == 0.0 {
        "0".into()
    } else {
        // Four significant digits for small figures (0.04213).
        let digits = (3 - a.log10().floor() as i32).clamp(0, 12) as usize;
        format!("{v:.digits$}")
    }
}

fn group_thousands(v: i64) -> String {
    let s = v.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0 {
        format!("-{out}")
    } else {
        out
    }
}

pub fn fmt_pct(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v.abs() >= 100.0 {
        format!("{v:+.0}%")
    } else {
        format!("{v:+.1}%")
    }
}

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
