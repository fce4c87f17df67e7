//! The published figures of a study, as data: one JSON file per study in
//! `published/`, transcribed from the texts in `../shared/studies/`. Each
//! row names the table and row of the study it comes from, what kdelta
//! measures for it (a benchmark, its parameters, and the two sides
//! compared), and either the published figures or, where the study gave
//! only a claim, the claim as a direction and a magnitude.

use serde::Deserialize;
use std::collections::BTreeMap;

/// A study's published figures.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Published {
    pub(crate) study: String,
    pub(crate) title: String,
    pub(crate) source: String,
    /// The machine the study measured, for context.
    pub(crate) machine: String,
    /// What the study's A and B columns are ("2419s-noht (HT off)").
    pub(crate) a: String,
    pub(crate) b: String,
    pub(crate) tables: Vec<TableDef>,
    pub(crate) rows: Vec<Row>,
}

/// One table of the study.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TableDef {
    pub(crate) id: String,
    pub(crate) title: String,
    /// The table's published geometric-mean row, when it had one.
    pub(crate) geomean: Option<Figures>,
}

/// Published A, B and change (percent, + when B is better, as the study printed it).
#[derive(Debug, Clone, Copy, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct Figures {
    pub(crate) a: f64,
    pub(crate) b: f64,
    pub(crate) change_pct: f64,
}

/// One row: a published figure or claim and the measurement that answers it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Row {
    /// The table id it belongs to.
    pub(crate) table: String,
    /// The row as the study named it.
    pub(crate) row: String,
    /// The kdelta benchmark that measures it.
    pub(crate) bench: String,
    /// Parameters both sides share.
    #[serde(default)]
    pub(crate) params: BTreeMap<String, String>,
    #[serde(default)]
    pub(crate) a_side: Side,
    #[serde(default)]
    pub(crate) b_side: Side,
    pub(crate) a: Option<f64>,
    pub(crate) b: Option<f64>,
    pub(crate) change_pct: Option<f64>,
    pub(crate) claim: Option<Claim>,
    /// Why kdelta cannot measure this row at all.
    pub(crate) unmeasurable: Option<String>,
    /// What of a result the row shows: `median` (the default), `mean` (of
    /// the clean samples, where the study printed means), or `mean:NAME`,
    /// the mean over the clean samples of a raw figure the benchmark stores
    /// beside each sample (`mean:user_s`, a build's user time).
    pub(crate) figure: Option<String>,
}

/// What of a result a row shows ([`Row::figure`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Figure {
    Median,
    Mean,
    /// The mean of the per-sample raw figure `NAME` (the result's extra `NAME_samples`).
    PartMean(String),
}

/// A row's `figure` that is none of the allowed ones.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("figure {0:?}: allowed are median, mean and mean:NAME (NAME a raw figure stored per sample, such as user_s)")]
pub(crate) struct BadFigure(String);

impl Figure {
    pub(crate) fn parse(s: Option<&str>) -> Result<Figure, BadFigure> {
        match s {
            None | Some("median") => Ok(Figure::Median),
            Some("mean") => Ok(Figure::Mean),
            Some(x) => match x.strip_prefix("mean:") {
                Some(name) if !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') => {
                    Ok(Figure::PartMean(name.to_string()))
                }
                _ => Err(BadFigure(x.to_string())),
            },
        }
    }
}

/// One side of a row: parameters of its own and the role of its configuration.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Side {
    #[serde(default)]
    pub(crate) params: BTreeMap<String, String>,
    /// A configuration role the study resolves (`A`, `B`, `up`, `smp`, ...);
    /// none: `A` for the A side, `B` for the B side.
    pub(crate) role: Option<String>,
}

/// What a study said without a figure.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Claim {
    pub(crate) direction: Direction,
    /// "about 6x", "within 1%".
    pub(crate) magnitude: String,
    /// The study's own words, for a reader of the data file; the tables quote the figure.
    #[serde(rename = "text")]
    pub(crate) _text: String,
}

/// Which way B went from A: better, worse, or no clear change.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Direction {
    Better,
    Worse,
    Same,
}

impl Direction {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Direction::Better => "better",
            Direction::Worse => "worse",
            Direction::Same => "same",
        }
    }

    /// The direction of a change in percent (+ is better): within
    /// `same_pct` either way is no clear change.
    pub(crate) fn of_change(change_pct: f64, same_pct: f64) -> Direction {
        if change_pct > same_pct {
            Direction::Better
        } else if change_pct < -same_pct {
            Direction::Worse
        } else {
            Direction::Same
        }
    }
}

/// A published change within this is "no clear change": the studies print
/// whole percents, and 1 % is within their run-to-run spread.
pub(crate) const PUBLISHED_SAME_PCT: f64 = 1.0;

impl Row {
    /// The published figures of this row, if it has numbers.
    pub(crate) fn figures(&self) -> Option<Figures> {
        match (self.a, self.b, self.change_pct) {
            (Some(a), Some(b), Some(c)) => Some(Figures { a, b, change_pct: c }),
            _ => None,
        }
    }

    /// The published direction: from the figures, else from the claim.
    pub(crate) fn direction(&self) -> Option<Direction> {
        self.figures()
            .map(|f| Direction::of_change(f.change_pct, PUBLISHED_SAME_PCT))
            .or(self.claim.as_ref().map(|c| c.direction))
    }

    pub(crate) fn role_a(&self) -> &str {
        self.a_side.role.as_deref().unwrap_or("A")
    }

    pub(crate) fn role_b(&self) -> &str {
        self.b_side.role.as_deref().unwrap_or("B")
    }

    /// What of a result this row shows (checked when the file is parsed).
    pub(crate) fn figure(&self) -> Figure {
        Figure::parse(self.figure.as_deref()).unwrap_or(Figure::Median)
    }

    /// The parameters a side's result must have (shared ones, then its own).
    pub(crate) fn side_params(&self, b: bool) -> BTreeMap<String, String> {
        let mut p = self.params.clone();
        let own = if b { &self.b_side.params } else { &self.a_side.params };
        p.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
        p
    }
}

/// Parse one published-figure file, and check that every row names a
/// table of the file and every table has a row.
pub(crate) fn parse(text: &str) -> anyhow::Result<Published> {
    let p: Published = serde_json::from_str(text)?;
    for r in &p.rows {
        if !p.tables.iter().any(|t| t.id == r.table) {
            anyhow::bail!("{}: row {:?} names table {:?}, which the file does not define", p.study, r.row, r.table);
        }
        if let Err(e) = Figure::parse(r.figure.as_deref()) {
            anyhow::bail!("{}: row {:?}: {e}", p.study, r.row);
        }
        if r.figures().is_none() && (r.a.is_some() || r.b.is_some() || r.change_pct.is_some()) {
            anyhow::bail!("{}: row {:?} has some of a, b and change_pct but not all three", p.study, r.row);
        }
    }
    for t in &p.tables {
        if !p.rows.iter().any(|r| r.table == t.id) {
            anyhow::bail!("{}: table {:?} has no row", p.study, t.id);
        }
    }
    Ok(p)
}

/// The files, compiled in.
pub(crate) const HT_2003: &str = include_str!("published/ht-2003.json");
pub(crate) const THREADS_2004: &str = include_str!("published/threads-2004.json");
pub(crate) const SCHED_2002: &str = include_str!("published/sched-2002.json");
pub(crate) const TUNING_2001: &str = include_str!("published/tuning-2001.json");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_parses_and_every_row_has_a_table() {
        for (name, text) in [
            ("ht-2003", HT_2003),
            ("threads-2004", THREADS_2004),
            ("sched-2002", SCHED_2002),
            ("tuning-2001", TUNING_2001),
        ] {
            let p = parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(p.study, name);
            for r in &p.rows {
                assert!(!r.bench.is_empty() && !r.row.is_empty(), "{name}: {:?}", r.row);
            }
        }
    }

    #[test]
    fn ht_2003_has_the_articles_tables() {
        let p = parse(HT_2003).unwrap();
        let count = |t: &str| p.rows.iter().filter(|r| r.table == t).count();
        assert_eq!(count("1"), 14);
        assert_eq!(count("2"), 60, "59 AIM9 rows and new_raph");
        assert_eq!(count("4"), 4);
        assert_eq!(count("5"), 5);
        assert_eq!(count("6"), 5);
        // Spot checks against the article's text.
        let row =
            |t: &str, r: &str| p.rows.iter().find(|x| x.table == t && x.row == r).and_then(|x| x.figures()).unwrap();
        assert_eq!(row("1", "process fork+exit"), Figures { a: 190.75, b: 198.84, change_pct: -4.0 });
        assert_eq!(row("2", "sieve"), Figures { a: 15.0, b: 24.0, change_pct: 60.0 });
        assert_eq!(row("6", "120 clients"), Figures { a: 37.85, b: 47.92, change_pct: 27.0 });
        assert_eq!(
            p.tables.iter().find(|t| t.id == "4").unwrap().geomean,
            Some(Figures { a: 144167.0, b: 178589.0, change_pct: 24.0 })
        );
    }

    #[test]
    fn a_row_without_its_table_is_refused() {
        let bad = r#"{"study":"x","title":"t","source":"s","machine":"m","a":"a","b":"b","tables":[{"id":"1","title":"T","geomean":null}],
                     "rows":[{"table":"2","row":"r","bench":"lat.syscall"}]}"#;
        assert!(parse(bad).unwrap_err().to_string().contains("names table \"2\""));
    }

    proptest::proptest! {
        /// Any text, and any file with one byte changed, is parsed or refused, never a panic.
        #[test]
        fn parsing_never_panics(text in ".{0,200}", at in 0usize..4000, byte in 0u8..128) {
            let _ = parse(&text);
            let mut b = SCHED_2002.as_bytes().to_vec();
            let i = at % b.len();
            b[i] = byte;
            if let Ok(t) = std::str::from_utf8(&b) {
                let _ = parse(t);
            }
        }
    }

    #[test]
    fn figures_a_row_can_show() {
        assert_eq!(Figure::parse(None), Ok(Figure::Median));
        assert_eq!(Figure::parse(Some("mean")), Ok(Figure::Mean));
        assert_eq!(Figure::parse(Some("mean:sys_s")), Ok(Figure::PartMean("sys_s".into())));
        for bad in ["max", "mean:", "mean:a b", "Mean"] {
            assert!(
                Figure::parse(Some(bad)).unwrap_err().to_string().contains("allowed are median, mean and mean:NAME"),
                "{bad}"
            );
        }
        let bad = r#"{"study":"x","title":"t","source":"s","machine":"m","a":"a","b":"b","tables":[{"id":"1","title":"T","geomean":null}],
                     "rows":[{"table":"1","row":"r","bench":"build.make","figure":"p99"}]}"#;
        assert!(parse(bad).unwrap_err().to_string().contains("figure \"p99\""));
    }

    proptest::proptest! {
        /// Any figure text is parsed or refused with the allowed list, never a panic.
        #[test]
        fn figure_parsing_never_panics(text in ".{0,40}") {
            if let Err(e) = Figure::parse(Some(&text)) {
                proptest::prop_assert!(e.to_string().contains("allowed are"));
            }
        }
    }

    #[test]
    fn directions() {
        assert_eq!(Direction::of_change(0.5, 1.0), Direction::Same);
        assert_eq!(Direction::of_change(-4.0, 1.0), Direction::Worse);
        assert_eq!(Direction::of_change(24.0, 1.0), Direction::Better);
    }
}
