//! The cells of a table as strings, shared by the text, Markdown and HTML renderers.

use super::model::{GeoRow, Report, Row, Table};
use super::remarks::{self, Entry};
use super::{fmt_factor, fmt_num, fmt_pct};
use crate::model::record::Status;
use crate::stats::modes::ModeChange;
use crate::stats::rounds::Rounds;

pub(super) struct Grid {
    pub(crate) header: Vec<String>,
    pub(crate) rows: Vec<Vec<String>>,
    /// What each column holds.
    pub(crate) cols: Vec<Col>,
    /// Rows that are geometric-mean rows (drawn after a rule).
    pub(crate) geo_from: usize,
    /// Lines printed under the table: CPU sets, legend, remarks.
    pub(crate) notes: Vec<String>,
    /// Per row, per change column: Some(true) significant and better, Some(false) significant and worse.
    pub(crate) marks: Vec<Vec<Option<bool>>>,
}

/// What a column holds, which decides its alignment and colouring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Col {
    /// Names and words, left-aligned.
    Text,
    /// Figures, right-aligned.
    Figure,
    /// A change between two columns, right-aligned; coloured by `marks`.
    Change,
}

impl Col {
    pub(super) fn right(self) -> bool {
        self != Col::Text
    }
}

/// Per benchmark, the parameters whose value differs between its rows (shown
/// in the table) and the ones that do not (said once, under the table).
pub(super) struct ParamView {
    varying: std::collections::BTreeMap<String, Vec<String>>,
    /// (benchmark, its constant parameters as `k=v k=v`).
    constant: Vec<(String, String)>,
    /// What the names of carried parameters stand for (`commands: fast = gzip -1`).
    legend: Option<String>,
}

impl ParamView {
    pub(super) fn new<'a>(rows: impl Iterator<Item = (&'a str, &'a crate::model::Params)> + Clone) -> ParamView {
        let mut varying = std::collections::BTreeMap::new();
        let mut constant = Vec::new();
        let mut names: Vec<&str> = Vec::new();
        for (b, _) in rows.clone() {
            if !names.contains(&b) {
                names.push(b);
            }
        }
        for b in names {
            let ps: Vec<&crate::model::Params> = rows.clone().filter(|(x, _)| *x == b).map(|(_, p)| p).collect();
            let keys: Vec<String> = ps[0].shown().map(|(k, _)| k.clone()).collect();
            let (var, mut cons): (Vec<String>, Vec<String>) =
                keys.into_iter().partition(|k| ps.iter().any(|p| p.0.get(k) != ps[0].0.get(k)));
            // An option left at its default is not said (`cmd.run`'s `shell=sh`).
            let defaults = crate::bench::option_defaults(b);
            cons.retain(|k| !ps[0].unsaid(k, &defaults));
            if !cons.is_empty() {
                constant.push((
                    b.to_string(),
                    cons.iter()
                        .map(|k| format!("{k}={}", crate::model::params::one_line(&ps[0].0[k])))
                        .collect::<Vec<_>>()
                        .join(" "),
                ));
            }
            varying.insert(b.to_string(), var);
        }
        let legend = crate::model::params::legend(rows.map(|(_, p)| p));
        ParamView { varying, constant, legend }
    }
    /// The varying parameters of one row, `procs=2 size=0`.
    pub(super) fn show(&self, bench: &str, p: &crate::model::Params) -> String {
        let keys = self.varying.get(bench).cloned().unwrap_or_default();
        keys.iter()
            .filter_map(|k| p.0.get(k).map(|v| format!("{k}={}", crate::model::params::one_line(v))))
            .collect::<Vec<_>>()
            .join(" ")
    }
    pub(super) fn any(&self) -> bool {
        self.varying.values().any(|v| !v.is_empty())
    }
    /// One line per distinct set of constant parameters, naming the
    /// benchmarks that share it (`parameters of bench.a, ... : period=1s`).
    pub(super) fn constant_lines(&self) -> Vec<String> {
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for (b, c) in &self.constant {
            match groups.iter_mut().find(|g| &g.0 == c) {
                Some(g) => g.1.push(b.clone()),
                None => groups.push((c.clone(), vec![b.clone()])),
            }
        }
        groups
            .into_iter()
            .map(|(c, bs)| {
                if bs.len() > 4 {
                    format!("parameters of {} benchmarks ({}, ...): {c}", bs.len(), bs[0])
                } else {
                    format!("parameters of {}: {c}", bs.join(", "))
                }
            })
            .chain(self.legend.clone())
            .collect()
    }
}

/// `bench.a procs=2 size=0`, or just the name when there are no parameters.
fn label(bench: &str, shown: &str) -> String {
    if shown.is_empty() {
        bench.to_string()
    } else {
        format!("{bench} {shown}")
    }
}

fn status_word(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Failed => "failed",
        Status::Unavailable => "n/a",
    }
}

/// A cell's figure: its median, `< X` below resolution, `?` when noisy.
fn figure(c: &super::model::Cell) -> String {
    if let Some(b) = c.below_resolution {
        return format!("< {}", fmt_num(b));
    }
    let m = c.median.map(fmt_num).unwrap_or_else(|| "-".into());
    if c.noisy {
        format!("{m} ?")
    } else {
        m
    }
}

/// A change beyond the threshold not starred: who, why, the change, and
/// its rounds.
type Held = (String, crate::stats::Withheld, f64, Option<Rounds>);

/// What the rows of a comparison say beyond their cells, for the notes.
struct Said<'a> {
    entries: Vec<Entry<'a>>,
    withheld: Vec<Held>,
    by_mode: Vec<String>,
}

/// `benchmark | params | unit | A | cv | B | cv | change | ...`
pub(super) fn comparison(t: &Table, threshold: f64, verbose: bool) -> Grid {
    let pv = ParamView::new(t.rows.iter().map(|r| (r.benchmark.as_str(), &r.params)));
    let (header, cols) = comparison_header(t, pv.any());
    let mut said = Said { entries: Vec::new(), withheld: Vec::new(), by_mode: Vec::new() };
    let (mut rows, mut marks) = (Vec::new(), Vec::new());
    for r in &t.rows {
        let (row, m) = comparison_row(t, r, &pv, &mut said);
        rows.push(row);
        marks.push(m);
    }
    let geo_from = rows.len();
    for g in &t.geomeans {
        let (row, m) = geomean_row(g, pv.any(), t.tail);
        rows.push(row);
        marks.push(m);
    }
    let notes = comparison_notes(t, threshold, verbose, &pv, &said);
    Grid { header, rows, cols, geo_from, notes, marks }
}

fn comparison_header(t: &Table, with_params: bool) -> (Vec<String>, Vec<Col>) {
    let mut header = vec!["benchmark".to_string()];
    let mut cols = vec![Col::Text];
    if with_params {
        header.push("params".into());
        cols.push(Col::Text);
    }
    header.push("unit".into());
    cols.push(Col::Text);
    for (i, c) in t.columns.iter().enumerate() {
        header.push(c.name.clone());
        header.push("cv".into());
        cols.extend([Col::Figure, Col::Figure]);
        if t.tail {
            header.push("p99".into());
            cols.push(Col::Figure);
        }
        if i > 0 {
            header.push("change".into());
            cols.push(Col::Change);
        }
    }
    (header, cols)
}

/// One row's cells: name, parameters, unit, then per column its figure and
/// cv and, after the first, the change against the first; and the marks of
/// its changes. Its remarks go to `said`.
fn comparison_row<'a>(t: &Table, r: &'a Row, pv: &ParamView, said: &mut Said<'a>) -> (Vec<String>, Vec<Option<bool>>) {
    // A counter row shares its result's samples: what they say is said
    // once, under the result's own row.
    let mut unsaid = Said { entries: Vec::new(), withheld: Vec::new(), by_mode: Vec::new() };
    let said = if r.counter.is_some() { &mut unsaid } else { said };
    let name = label(&r.benchmark, &pv.show(&r.benchmark, &r.params));
    let mut row = vec![r.benchmark.clone()];
    if pv.any() {
        row.push(pv.show(&r.benchmark, &r.params));
    }
    row.push(r.unit.clone());
    let mut marks = Vec::new();
    for (i, c) in r.cells.iter().enumerate() {
        row.extend(figure_cells(c.as_ref()));
        if t.tail {
            row.push(c.as_ref().and_then(|c| c.p99).map(fmt_num).unwrap_or_else(|| "-".into()));
        }
        if let Some(c) = c {
            said.entries.push(Entry { who: format!("{name} [{}]", t.columns[i].name), unit: &r.unit, cell: c });
        }
        if i > 0 {
            let (cell, mark) = change_cell(t, r, i, &name, said);
            row.push(cell);
            marks.push(mark);
        }
    }
    (row, marks)
}

/// A column's figure and cv, or the word for a result without one.
fn figure_cells(c: Option<&super::model::Cell>) -> [String; 2] {
    match c {
        Some(c) if c.status == Status::Ok => [
            figure(c),
            c.cv.filter(|_| c.n > 1 && c.below_resolution.is_none())
                .map(|v| format!("{:.1}%", v * 100.0))
                .unwrap_or_else(|| "-".into()),
        ],
        Some(c) => [status_word(c.status).into(), String::new()],
        None => ["-".into(), String::new()],
    }
}

/// Column `i` against column 0 in row `r`: `+4.0% *` and its mark; its split
/// by placement and a withheld star go to `said`.
fn change_cell(t: &Table, r: &Row, i: usize, name: &str, said: &mut Said) -> (String, Option<bool>) {
    let Some(cmp) = &r.changes[i - 1] else {
        return ("-  ".into(), None);
    };
    let who = format!("{name} [{}]", t.columns[i].name);
    if !cmp.modes.is_empty() {
        said.by_mode.push(modes_line(&who, &cmp.modes, (&t.columns[0].name, &t.columns[i].name), &r.unit));
    }
    if cmp.speeds_a.is_some() || cmp.speeds_b.is_some() {
        said.by_mode.push(speeds_line(&who, cmp, (&t.columns[0].name, &t.columns[i].name), &r.unit));
    }
    if let Some(w) = cmp.withheld {
        said.withheld.push((who, w, cmp.change_pct, cmp.rounds.clone()));
    }
    let star = if cmp.significant { " *" } else { "  " };
    let mark = if cmp.significant { Some(cmp.change_pct > 0.0) } else { None };
    (format!("{}{star}", change_text(cmp.change_pct, &r.unit)), mark)
}

/// `-82.6% (5.75x slower)`: a change in percent and as a factor, since a
/// slowdown's percent never passes -100 %.
fn change_text(change_pct: f64, unit: &str) -> String {
    format!("{} ({})", fmt_pct(change_pct), fmt_factor(1.0 + change_pct / 100.0, unit))
}

/// `geomean lat (2 of 4 rows)`, its unit, each column's mean and the changes.
fn geomean_row(g: &GeoRow, with_params: bool, tail: bool) -> (Vec<String>, Vec<Option<bool>>) {
    let used = if g.rows == g.of { format!("{} rows", g.rows) } else { format!("{} of {} rows", g.rows, g.of) };
    let mut row = vec![format!("geomean {} ({used})", g.family)];
    if with_params {
        row.push(String::new());
    }
    row.push(g.unit.clone().unwrap_or_default());
    let mut marks = Vec::new();
    for (i, v) in g.values.iter().enumerate() {
        row.push(v.map(fmt_num).unwrap_or_else(|| "-".into()));
        row.push(String::new());
        if tail {
            row.push(String::new());
        }
        if i > 0 {
            let unit = g.unit.as_deref().unwrap_or_default();
            row.push(
                g.change_pct[i - 1].map(|c| format!("{}  ", change_text(c, unit))).unwrap_or_else(|| "-  ".into()),
            );
            marks.push(None);
        }
    }
    (row, marks)
}

/// The lines under a comparison: CPU sets, the legend, constant parameters,
/// remarks, splits by placement, withheld stars, the hint.
fn comparison_notes(t: &Table, threshold: f64, verbose: bool, pv: &ParamView, said: &Said) -> Vec<String> {
    let mut notes: Vec<String> = t
        .columns
        .iter()
        .map(|c| format!("{}: cpus {}", c.name, if c.cpus.is_empty() { "-" } else { &c.cpus }))
        .collect();
    notes.push(format!(
        "change: + means {} is better (speedup - 1; in brackets as a factor); * different: where the two sides took turns in one worker, the 99.5% interval \
         of the adjacent pairs' change lies beyond +-{threshold}%; otherwise |change| >= {threshold}% on the log scale (a slowdown and a speedup \
         of one factor alike), Mann-Whitney p < 0.05, the change holds across rounds (sign test over the rounds whose ratio passes {threshold}% \
         its way, p < 0.05: 9 of 10 suffice; with 3-5 rounds every round, a t-test on the log ratios and no overlap between the sides' workers), and neither side is noisy nor busy \
         unless the change is 2x or more or beyond twice what disturbance did to that side; no star: same (the interval within +-{threshold}%) or unknown, counted on the answers line; \
         cv: coefficient of variation of the clean samples; geomean rows invert lower-is-better ratios first",
        t.columns.get(1).map(|c| c.name.as_str()).unwrap_or("B")
    ));
    if t.tail {
        notes.push(
            "p99: 99th percentile of the clean samples (the median is the 50th), shown because a CPU limit is compared: a quota moves the tail first; \
             throttling by the limit is the effect measured, recorded per sample and never counted as disturbance"
                .to_string(),
        );
        notes.extend(throttle_lines(t, verbose));
    }
    if t.rows.iter().any(|r| r.cells.iter().flatten().any(|c| c.noisy)) {
        notes.push("?: noisy, fewer clean samples than wanted even after retakes".to_string());
    }
    notes.extend(pv.constant_lines());
    notes.extend(remarks::lines(&said.entries, verbose));
    notes.extend(said.by_mode.iter().cloned());
    notes.extend(withheld_lines(&said.withheld, verbose));
    notes.extend(remarks::hint(&said.entries, verbose));
    notes
}

/// What the CPU limits' throttling was: a line per throttled result (the
/// first few unless `verbose`), and how many under a limit were never throttled.
fn throttle_lines(t: &Table, verbose: bool) -> Vec<String> {
    let mut hit = Vec::new();
    let mut never = 0;
    for r in &t.rows {
        for (i, c) in r.cells.iter().enumerate() {
            let Some(th) = c.as_ref().and_then(|c| c.throttling) else { continue };
            if th.periods == 0 {
                never += 1;
                continue;
            }
            hit.push(format!(
                "throttled: {} [{}]: in {} of {} samples, {} periods, {:.1} ms held off the CPU ({:.1}% of their time)",
                label(&r.benchmark, &r.params.display_set(&crate::bench::option_defaults(&r.benchmark))),
                t.columns[i].name,
                th.samples,
                th.of,
                th.periods,
                th.secs * 1e3,
                th.share * 100.0
            ));
        }
    }
    let more = if verbose { 0 } else { hit.len().saturating_sub(5) };
    hit.truncate(hit.len() - more);
    if more > 0 {
        hit.push(format!("throttled: ... and {more} more results (--verbose lists them)"));
    }
    if never > 0 {
        hit.push(format!("not throttled: {never} results under a CPU limit never ran out of quota"));
    }
    hit
}

/// Why changes beyond the threshold are not starred (a withheld star, or
/// too few samples or pairs to judge): one line each (`verbose`), or one
/// line naming them by kind.
fn withheld_lines(withheld: &[Held], verbose: bool) -> Vec<String> {
    let held = |r: &Option<Rounds>| r.as_ref().map(|r| r.describe()).unwrap_or_default();
    if verbose {
        return withheld
            .iter()
            .map(|(who, w, pct, r)| {
                let detail = r
                    .as_ref()
                    .map(|r| {
                        format!(
                            " ({}; per round {} to {})",
                            r.describe(),
                            fmt_pct((r.low - 1.0) * 100.0),
                            fmt_pct((r.high - 1.0) * 100.0)
                        )
                    })
                    .unwrap_or_default();
                format!("{who}: change {} not marked significant: {}{detail}", fmt_pct(*pct), w.describe())
            })
            .collect();
    }
    if withheld.is_empty() {
        return Vec::new();
    }
    let mut kinds: Vec<(crate::stats::Withheld, Vec<String>)> = Vec::new();
    for (who, w, _, r) in withheld {
        let name = if *w == crate::stats::Withheld::NotInRounds { format!("{who} {}", held(r)) } else { who.clone() };
        match kinds.iter_mut().find(|k| k.0 == *w) {
            Some(k) => k.1.push(name),
            None => kinds.push((*w, vec![name])),
        }
    }
    let parts: Vec<String> = kinds
        .iter()
        .map(|(w, names)| {
            let shown = names.iter().take(4).cloned().collect::<Vec<_>>().join(", ");
            let more = if names.len() > 4 { format!(" and {} more", names.len() - 4) } else { String::new() };
            format!("{} {}: {shown}{more}", names.len(), w.describe())
        })
        .collect();
    let changes = if withheld.len() == 1 { "change" } else { "changes" };
    vec![format!(
        "not marked significant although beyond the threshold: {} {changes} ({})",
        withheld.len(),
        parts.join("; ")
    )]
}

/// `bench.a [noht] by where its tasks ran: on one CPU 7.10 -> 7.32 us (+3.1%);
/// across CPUs only in noht, 91.5 us (38% of samples); moved: across CPUs`.
/// `lat.x [noht]: workers in two speeds: up 6 of 10 workers at 1.02 us, 4
/// at 1.31 us; noht one speed`: where whole workers settled (`stats::speeds`).
fn speeds_line(who: &str, c: &crate::stats::Comparison, names: (&str, &str), unit: &str) -> String {
    let side = |name: &str, s: &Option<crate::stats::speeds::Speeds>| match s {
        Some(s) => format!("{name} {}", s.describe(|x| format!("{} {unit}", fmt_num(x)))),
        None => format!("{name} one speed"),
    };
    format!("{who}: workers in two speeds: {}; {}", side(names.0, &c.speeds_a), side(names.1, &c.speeds_b))
}

pub(super) fn modes_line(who: &str, modes: &[ModeChange], names: (&str, &str), unit: &str) -> String {
    let parts: Vec<String> = modes
        .iter()
        .map(|m| {
            let place = m.placement.describe();
            match (&m.a, &m.b) {
                (Some(a), Some(b)) => {
                    let star = if m.significant { " *" } else { "" };
                    let pct = m.change_pct.map(|c| format!(" ({}{star})", fmt_pct(c))).unwrap_or_default();
                    format!("{place} {} -> {} {unit}{pct}", fmt_num(a.median), fmt_num(b.median))
                }
                (Some(a), None) => format!(
                    "{place} only in {}, {} {unit} ({:.0}% of samples)",
                    names.0,
                    fmt_num(a.median),
                    a.share * 100.0
                ),
                (None, Some(b)) => format!(
                    "{place} only in {}, {} {unit} ({:.0}% of samples)",
                    names.1,
                    fmt_num(b.median),
                    b.share * 100.0
                ),
                (None, None) => String::new(),
            }
        })
        .collect();
    let moved: Vec<&str> = modes.iter().filter(|m| m.moved()).map(|m| m.placement.describe()).collect();
    let verdict = if moved.is_empty() { "no mode moved".to_string() } else { format!("moved: {}", moved.join(", ")) };
    format!("{who} by where its tasks ran: {}; {verdict}", parts.join("; "))
}

/// One row per result, for a run with a single configuration.
pub(super) fn results(rep: &Report, verbose: bool) -> Grid {
    let pv = ParamView::new(rep.results.iter().map(|r| (r.benchmark.as_str(), &r.params)));
    let with_params = pv.any();
    let mut header: Vec<String> = vec!["benchmark".into()];
    if with_params {
        header.push("params".into());
    }
    for h in ["config", "cpus", "median", "unit", "cv", "min", "max", "n"] {
        header.push(h.into());
    }
    let first_num = header.len() - 6;
    let cols: Vec<Col> =
        (0..header.len()).map(|i| if i >= first_num && i != first_num + 1 { Col::Figure } else { Col::Text }).collect();
    let mut rows = Vec::new();
    let cells: Vec<super::model::Cell> = rep.results.iter().map(super::model::cell_of).collect();
    let mut entries = Vec::new();
    for (r, cell) in rep.results.iter().zip(&cells) {
        let mut row = vec![r.benchmark.clone()];
        if with_params {
            row.push(pv.show(&r.benchmark, &r.params));
        }
        row.push(r.config.clone());
        row.push(r.cpus.clone());
        match (&r.summary, r.status) {
            (Some(s), Status::Ok) => {
                row.extend([
                    figure(cell),
                    r.unit.clone(),
                    if s.n > 1 && cell.below_resolution.is_none() {
                        format!("{:.1}%", s.cv * 100.0)
                    } else {
                        "-".into()
                    },
                    fmt_num(s.min),
                    fmt_num(s.max),
                    s.n.to_string(),
                ]);
            }
            _ => {
                row.extend([
                    status_word(r.status).to_string(),
                    r.unit.clone(),
                    String::new(),
                    String::new(),
                    String::new(),
                    r.samples.len().to_string(),
                ]);
            }
        }
        entries.push(Entry {
            who: format!("{} [{}]", label(&r.benchmark, &pv.show(&r.benchmark, &r.params)), r.config),
            unit: &r.unit,
            cell,
        });
        rows.push(row);
    }
    let geo_from = rows.len();
    let marks = vec![Vec::new(); rows.len()];
    let mut all_notes: Vec<String> = pv.constant_lines();
    if cells.iter().any(|c| c.noisy) {
        all_notes.push("?: noisy, fewer clean samples than wanted even after retakes".to_string());
    }
    all_notes.extend(remarks::lines(&entries, verbose));
    all_notes.extend(remarks::hint(&entries, verbose));
    Grid { header, rows, cols, geo_from, notes: all_notes, marks }
}
