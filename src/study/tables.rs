//! A study's tables in its own shape: per row the published A, B and change
//! beside the A, B and change measured here, and whether the direction is
//! the same. Absolute published figures are context only: what is compared
//! is the direction of the change (better, worse, no clear change).

use super::published::{self, Direction, Figure, Published, Row};
use super::{Def, Meta};
use crate::model::fmt::{fmt_num, fmt_pct};
use crate::model::record::{ResultRecord, Status};
use crate::model::Better;
use crate::report::extra::ExtraTable;
use crate::stats::{self, CompareOptions, Side};
use anyhow::Result;

/// The column headings of every study table.
pub(crate) const HEADER: [&str; 8] =
    ["row", "published A", "published B", "published change", "here A", "here B", "here change", "same direction?"];

/// One side of a row as measured (or simulated) here.
#[derive(Debug, Clone)]
pub(crate) struct Measured {
    pub(crate) samples: Vec<f64>,
    pub(crate) side: Side,
    pub(crate) median: f64,
    pub(crate) unit: String,
    pub(crate) better: Better,
    /// A net figure whose interval reaches zero: below this bound, never compared.
    pub(crate) below: Option<f64>,
    /// What the benchmark said of the result (no SMT to avoid, ...), shown under the table.
    pub(crate) notes: Vec<String>,
}

/// Why a side of a row has no figure (shown as `unavailable: ROW: WHY`).
#[derive(Debug, thiserror::Error)]
pub(crate) enum NoFigure {
    /// The stored result failed or was skipped: its reason, or its status.
    #[error("{0}")]
    NotOk(String),
    #[error("no clean sample")]
    NoCleanSample,
    #[error("{bench} stored no {name} per sample in this run ({key} is missing or does not line up with the samples)")]
    NoPerSample { bench: String, name: String, key: String },
    #[error(transparent)]
    Simulation(#[from] super::sched2002::NoSimulation),
    #[error("the simulation gave no figure")]
    NoSimulatedFigure,
    /// The row cannot be measured here (the study's reason).
    #[error("{0}")]
    Unmeasurable(String),
    #[error("the study has no configuration role {0:?}")]
    NoRole(String),
    #[error("{wanted} is not available: {why}")]
    NotAvailable { wanted: String, why: String },
    #[error("not in the tiny plan of the tests")]
    NotInTinyPlan,
    #[error("not in the --quick plan")]
    NotInQuickPlan,
    #[error("not measured in this run (interrupted? `--resume` runs the missing points)")]
    NotMeasured,
}

impl Measured {
    /// A result's figure as the row asks: its median, the mean of its clean
    /// samples, or the mean of a raw figure stored beside each sample.
    fn of(r: &ResultRecord, figure: &Figure) -> Result<Measured, NoFigure> {
        if r.status != Status::Ok {
            return Err(NoFigure::NotOk(r.reason.clone().unwrap_or_else(|| r.status.as_str().to_string())));
        }
        let clean = r.clean_with_meta();
        let (_, side) = Side::of(r);
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let (samples, median) = match figure {
            Figure::Median => (
                clean.iter().map(|(v, _)| *v).collect(),
                r.summary.as_ref().map(|s| s.median).ok_or(NoFigure::NoCleanSample)?,
            ),
            Figure::Mean => {
                let v: Vec<f64> = clean.iter().map(|(v, _)| *v).collect();
                if v.is_empty() {
                    return Err(NoFigure::NoCleanSample);
                }
                let m = mean(&v);
                (v, m)
            }
            Figure::PartMean(name) => {
                let key = crate::model::extras::part_key(name);
                let all = r.extras.part_samples(name).unwrap_or_default();
                if all.len() != r.samples.len() || all.is_empty() {
                    return Err(NoFigure::NoPerSample { bench: r.benchmark.clone(), name: name.clone(), key });
                }
                let used = crate::model::sample::used(&r.samples_meta, r.samples.len());
                let v: Vec<f64> = all.iter().zip(&used).filter(|(_, u)| **u).map(|(x, _)| *x).collect();
                let m = mean(&v);
                (v, m)
            }
        };
        // A raw figure is never net of an overhead: below-resolution is the median's.
        let below = if *figure == Figure::Median { r.below_resolution } else { None };
        Ok(Measured { samples, side, median, unit: r.unit.clone(), better: r.better, below, notes: r.notes.clone() })
    }

    /// Simulated samples (seconds, lower is better).
    pub(crate) fn simulated(samples: Vec<f64>) -> Result<Measured, NoFigure> {
        let median = stats::summary::median(&samples);
        if samples.is_empty() || !median.is_finite() {
            return Err(NoFigure::NoSimulatedFigure);
        }
        Ok(Measured {
            samples,
            side: Side::default(),
            median,
            unit: "s".into(),
            better: Better::Lower,
            below: None,
            notes: Vec::new(),
        })
    }
}

/// One side of a row: its result in `results` (the newest matching one),
/// the simulation for `sim.*` rows, or why there is none.
pub(crate) fn side(row: &Row, b: bool, meta: &Meta, results: &[ResultRecord]) -> Result<Measured, NoFigure> {
    if let Some(why) = &row.unmeasurable {
        return Err(NoFigure::Unmeasurable(why.clone()));
    }
    let params = row.side_params(b);
    if row.bench.starts_with("sim.") {
        return Measured::simulated(super::sched2002::simulated(&row.bench, &params, b)?);
    }
    let role = if b { row.role_b() } else { row.role_a() };
    let use_ = meta.role(role).ok_or_else(|| NoFigure::NoRole(role.to_string()))?;
    let Some(config) = &use_.config else {
        return Err(NoFigure::NotAvailable {
            wanted: use_.wanted.to_string(),
            why: use_.unavailable.as_deref().unwrap_or("no reason recorded").to_string(),
        });
    };
    let hit = results
        .iter()
        .rev()
        .find(|r| {
            r.benchmark == row.bench && r.config == *config && params.iter().all(|(k, v)| r.params.0.get(k) == Some(v))
        })
        .ok_or_else(|| {
            let parts =
                super::def_by_id(&meta.name).map(|d| super::run::parts(d, meta.quick, meta.tiny)).unwrap_or_default();
            if meta.tiny && !in_plan(&parts, &row.bench, &params) {
                NoFigure::NotInTinyPlan
            } else if meta.quick && !in_plan(&parts, &row.bench, &params) {
                NoFigure::NotInQuickPlan
            } else {
                NoFigure::NotMeasured
            }
        })?;
    Measured::of(hit, &row.figure())
}

/// Whether a plan's parts include this point: a part runs the benchmark,
/// and every parameter the row names that the part sets for the benchmark
/// (`BENCH:NAME` or a glob) is among the part's values.
pub(crate) fn in_plan(
    parts: &[super::Parts],
    bench: &str,
    params: &std::collections::BTreeMap<String, String>,
) -> bool {
    parts.iter().filter(|p| p.selects(bench)).any(|part| {
        params.iter().all(|(k, v)| {
            part.overrides.iter().all(|(key, list)| match key.split_once(':') {
                Some((sel, name)) if name == k && glob::Pattern::new(sel).is_ok_and(|p| p.matches(bench)) => {
                    list.split(',').any(|x| x == v)
                }
                _ => true,
            })
        })
    })
}

/// The direction measured: the sign of a significant change; no clear
/// change when the change is within the noise threshold or does not hold
/// across the run's rounds; unknown (the reason) when a side was too noisy or busy, or a
/// larger change is not significant (too few samples to tell, as with
/// `--quick`).
pub(crate) fn measured_direction(c: &stats::Comparison, threshold_pct: f64) -> Result<Direction, &'static str> {
    if c.significant {
        return Ok(Direction::of_change(c.change_pct, 0.0));
    }
    match c.withheld {
        Some(stats::Withheld::NotInRounds | stats::Withheld::SpeedMix | stats::Withheld::WorkersOverlap) => {
            Ok(Direction::Same)
        }
        Some(w) => Err(w.describe()),
        None if c.change_pct.abs() <= threshold_pct => Ok(Direction::Same),
        None => Err("not significant (too few samples to tell)"),
    }
}

/// Agreement over rows: (agreeing, compared, the rows that differ).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Tally {
    pub(crate) agree: usize,
    pub(crate) of: usize,
    pub(crate) differ: Vec<String>,
    /// Rows with a published direction whose measured one is unknown.
    pub(crate) unclear: usize,
}

impl Tally {
    pub(crate) fn line(&self) -> String {
        let differ = if self.differ.is_empty() { "none".to_string() } else { self.differ.join(", ") };
        let unclear = if self.unclear > 0 { format!("; unclear here in {} more", self.unclear) } else { String::new() };
        format!("direction agrees in {} of {} rows; differs in: {differ}{unclear}", self.agree, self.of)
    }
    fn add(&mut self, other: &Tally) {
        self.agree += other.agree;
        self.of += other.of;
        self.unclear += other.unclear;
        self.differ.extend(other.differ.iter().cloned());
    }
}

fn with_unit(v: f64, unit: &str) -> String {
    format!("{} {unit}", fmt_num(v))
}

/// A side's figure: its median, or `< X` below resolution.
fn show(m: &Measured) -> String {
    match m.below {
        Some(b) => format!("< {}", with_unit(b, &m.unit)),
        None => with_unit(m.median, &m.unit),
    }
}

/// Every table of a study run, in the study's order; the study's first
/// lines (source, machines, substitutes) before the first, the study's
/// direction summary after the last.
pub(crate) fn build(d: &Def, meta: &Meta, results: &[ResultRecord]) -> Result<Vec<ExtraTable>> {
    let p = published::parse(d.published)?;
    let opt = CompareOptions::default();
    let mut out = Vec::new();
    let mut total = Tally::default();
    for t in &p.tables {
        let rows: Vec<&Row> = p.rows.iter().filter(|r| r.table == t.id).collect();
        let mut building = Building::default();
        let mut table = ExtraTable {
            title: t.title.clone(),
            before: roles_line(&rows, meta),
            header: HEADER.iter().map(|s| s.to_string()).collect(),
            rows: rows.iter().map(|row| building.row(row, meta, results, &opt)).collect(),
            after: Vec::new(),
        };
        table.rows.push(geomean_row(t, &building.geo));
        table.after.push(building.tally.line());
        table.after.extend(building.notes.into_iter().map(|(n, rows)| format!("note ({}): {n}", rows.join("; "))));
        table.after.extend(building.unavailable);
        total.add(&building.tally);
        out.push(table);
    }
    if let Some(first) = out.first_mut() {
        let mut head = study_lines(&p, meta);
        head.append(&mut first.before);
        first.before = head;
    }
    if let Some(last) = out.last_mut() {
        last.after.push(format!("{}: {}", p.study, total.line()));
    }
    Ok(out)
}

/// What a table's rows gather for the lines under it and its
/// geometric-mean row, row by row.
#[derive(Default)]
struct Building {
    tally: Tally,
    /// `unavailable: ROW: why`, per row with a side missing.
    unavailable: Vec<String>,
    /// Each note once, with the rows it is about.
    notes: Vec<(String, Vec<String>)>,
    geo: Geo,
}

/// The figures of the rows compared on both sides, for the geometric-mean
/// row: each side's median, the speedup, the unit.
#[derive(Default)]
struct Geo {
    a: Vec<f64>,
    b: Vec<f64>,
    speedups: Vec<f64>,
    units: Vec<String>,
}

impl Building {
    /// One row's cells: its label, the published figures, and the figures,
    /// change and agreement here.
    fn row(&mut self, row: &Row, meta: &Meta, results: &[ResultRecord], opt: &CompareOptions) -> Vec<String> {
        let (pa, pb, pc) = match (row.figures(), &row.claim) {
            (Some(f), _) => (fmt_num(f.a), fmt_num(f.b), fmt_pct(f.change_pct)),
            (None, Some(c)) => ("-".into(), "-".into(), format!("{}: {}", c.direction.as_str(), c.magnitude)),
            (None, None) => ("-".into(), "-".into(), "-".into()),
        };
        let (a, b) = (side(row, false, meta, results), side(row, true, meta, results));
        let cells = match (&a, &b) {
            (Ok(a), Ok(b)) if a.below.is_some() || b.below.is_some() => {
                [show(a), show(b), "-".into(), "unclear: below resolution".into()]
            }
            (Ok(a), Ok(b)) => self.compared(row, a, b, opt),
            _ => {
                let why = [&a, &b]
                    .iter()
                    .filter_map(|s| s.as_ref().err())
                    .map(ToString::to_string)
                    .next()
                    .unwrap_or_default();
                self.unavailable.push(format!("unavailable: {}: {why}", row.row));
                let cell =
                    |s: &Result<Measured, NoFigure>| s.as_ref().map(show).unwrap_or_else(|_| "unavailable".into());
                [cell(&a), cell(&b), "-".into(), "-".into()]
            }
        };
        let mut label = row.row.clone();
        // What the benchmark says of the row itself: the notes both sides
        // carry (a side's own remarks, such as an overshoot, stay with its
        // result: `kdelta show RUN --warnings`, the HTML report).
        let said: Vec<&String> = match (&a, &b) {
            (Ok(a), Ok(b)) => a.notes.iter().filter(|n| b.notes.contains(n)).collect(),
            _ => Vec::new(),
        };
        if !said.is_empty() {
            label.push_str(" (note)");
            for n in said {
                match self.notes.iter_mut().find(|(text, _)| text == n) {
                    Some((_, rows)) if rows.contains(&row.row) => {}
                    Some((_, rows)) => rows.push(row.row.clone()),
                    None => self.notes.push((n.clone(), vec![row.row.clone()])),
                }
            }
        }
        let mut r = vec![label, pa, pb, pc];
        r.extend(cells);
        r
    }

    /// The cells here of a row measured on both sides: A, B, the change
    /// (starred when significant) and whether its direction is the
    /// published one.
    fn compared(&mut self, row: &Row, a: &Measured, b: &Measured, opt: &CompareOptions) -> [String; 4] {
        let mut c = stats::compare_sides(&a.samples, &a.side, &b.samples, &b.side, &[], a.better, opt);
        // A row of means shows the change of the means it shows;
        // its significance stays the tests' on the samples.
        if row.figure() != Figure::Median {
            if let Some(c) = c.as_mut() {
                let s = stats::compare::speedup_of(a.median, b.median, a.better);
                if s.is_finite() && s > 0.0 {
                    c.speedup = s;
                    c.change_pct = (s - 1.0) * 100.0;
                }
            }
        }
        let Some(c) = c else { return [show(a), show(b), "-".into(), "-".into()] };
        let star = if c.significant { "*" } else { "" };
        // Not significant with a noisy or busy side: the samples
        // were disturbed, more of them would not have told.
        let dir = match measured_direction(&c, opt.threshold_pct) {
            Err(_) if !c.significant && (a.side.noisy || b.side.noisy) => Err(crate::stats::Withheld::Noisy.describe()),
            Err(_) if !c.significant && (a.side.busy || b.side.busy) => Err(crate::stats::Withheld::Busy.describe()),
            d => d,
        };
        let same = self.tally.judge(row, dir);
        self.geo.a.push(a.median);
        self.geo.b.push(b.median);
        self.geo.speedups.push(c.speedup);
        self.geo.units.push(a.unit.clone());
        [show(a), show(b), format!("{}{star}", fmt_pct(c.change_pct)), same]
    }
}

impl Tally {
    /// Whether the direction measured for `row` is the published one, as
    /// its cell shows it, counted.
    fn judge(&mut self, row: &Row, measured: Result<Direction, &str>) -> String {
        match (row.direction(), measured) {
            (Some(p), Ok(m)) => {
                self.of += 1;
                if p == m {
                    self.agree += 1;
                    "yes".to_string()
                } else {
                    self.differ.push(format!("{} (published {}, here {})", row.row, p.as_str(), m.as_str()));
                    "no".to_string()
                }
            }
            (None, Ok(m)) => format!("- (here {})", m.as_str()),
            (p, Err(why)) => {
                self.unclear += usize::from(p.is_some());
                format!("unclear: {why}")
            }
        }
    }
}

/// The geometric-mean row: the published one when the study printed it,
/// and here the geometric means of the medians (one unit only) and of the
/// speedups of the rows measured on both sides.
fn geomean_row(t: &published::TableDef, geo: &Geo) -> Vec<String> {
    let Geo { a, b, speedups, units } = geo;
    let (pa, pb, pc) = match t.geomean {
        Some(g) => (fmt_num(g.a), fmt_num(g.b), fmt_pct(g.change_pct)),
        None => ("-".into(), "-".into(), "-".into()),
    };
    let one_unit = units.windows(2).all(|w| w[0] == w[1]) && !units.is_empty();
    let value = |v: &[f64]| match stats::geomean(v) {
        Some(g) if one_unit => with_unit(g, &units[0]),
        _ => "-".into(),
    };
    let change = stats::geomean(speedups)
        .map(|s| format!("{} ({} rows)", fmt_pct((s - 1.0) * 100.0), speedups.len()))
        .unwrap_or_else(|| "-".into());
    vec!["geometric mean".into(), pa, pb, pc, value(a), value(b), change, "-".into()]
}

/// What A and B are here, for the roles this table's rows use, with the
/// substitute named on every table that uses one.
fn roles_line(rows: &[&Row], meta: &Meta) -> Vec<String> {
    let mut roles: Vec<&str> = Vec::new();
    for r in rows {
        if r.unmeasurable.is_none() && !r.bench.starts_with("sim.") {
            for role in [r.role_a(), r.role_b()] {
                if !roles.contains(&role) {
                    roles.push(role);
                }
            }
        }
    }
    if roles.is_empty() {
        return if rows.iter().any(|r| r.bench.starts_with("sim.")) {
            vec!["here: simulated (kdelta simulate, 2x1x2, seeded): A = stock-2002, B = ht-aware-2002".into()]
        } else {
            Vec::new()
        };
    }
    let mut lines = vec![format!(
        "here: {}",
        roles
            .iter()
            .map(|r| format!("{r} = {}", meta.role(r).map(|u| u.describe()).unwrap_or_else(|| "unavailable".into())))
            .collect::<Vec<_>>()
            .join(", ")
    )];
    let mut subs: Vec<String> = Vec::new();
    for r in &roles {
        if let Some(s) = meta.role(r).and_then(|u| u.substitute.clone()) {
            if !subs.contains(&s) {
                subs.push(s);
            }
        }
    }
    lines.extend(subs.into_iter().map(|s| format!("SUBSTITUTE: {s}")));
    lines
}

fn study_lines(p: &Published, meta: &Meta) -> Vec<String> {
    let mut v = vec![
        format!("study {}{}: {}", p.study, if meta.quick { " (--quick)" } else { "" }, p.title),
        format!("source: {}", p.source),
        format!("published on: {}; A = {}, B = {}", p.machine, p.a, p.b),
    ];
    let mut seen: Vec<&str> = Vec::new();
    for r in &meta.roles {
        if let Some(s) = &r.substitute {
            if !seen.contains(&s.as_str()) {
                seen.push(s);
                v.push(format!("this machine: {s}"));
            }
        } else if let Some(u) = &r.unavailable {
            v.push(format!("this machine: {} ({}) is not available: {u}", r.role, r.wanted));
        }
    }
    v.push("published absolute figures are for context only (other machines, other decades); what is compared is each change's direction (* = significant here)".into());
    v
}
