//! From results to comparison tables.

use crate::model::record::{ResultRecord, RunRecord, Status};
use crate::model::{Better, Params};
use crate::stats::trust::PlacementGroup;
use crate::stats::{self, CompareOptions, Comparison, Warning};
use serde::Serialize;

/// One column of a table: a configuration of a run, or a whole run.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Column {
    /// `up`, or `run 12 (baseline)`.
    pub(crate) name: String,
    /// The CPU set the configuration resolved to.
    pub(crate) cpus: String,
    #[serde(skip)]
    pub(crate) results: Vec<ResultRecord>,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Cell {
    pub(crate) status: Status,
    pub(crate) median: Option<f64>,
    pub(crate) cv: Option<f64>,
    pub(crate) n: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
    /// Warnings and notes, as text.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) remarks: Vec<String>,
    /// A net figure below resolution: shown as `< X`, never as its median.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) below_resolution: Option<f64>,
    /// Fewer clean samples than wanted.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) noisy: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) placement: Vec<PlacementGroup>,
    #[serde(skip)]
    pub(crate) warnings: Vec<Warning>,
    #[serde(skip)]
    pub(crate) notes: Vec<String>,
    #[serde(skip)]
    pub(crate) disturbed: usize,
    #[serde(skip)]
    pub(crate) retaken: usize,
    #[serde(skip)]
    pub(crate) wanted: usize,
    /// Clean samples (`n` counts every sample when none was clean).
    #[serde(skip)]
    pub(crate) clean: usize,
    /// The 99th percentile of the clean samples (the median is the 50th).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) p99: Option<f64>,
    /// Under a CPU limit (`+cpu.max=`): how much the worker's cgroup was throttled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) throttling: Option<Throttled>,
}

/// A result's throttling, over the samples its figure uses.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Throttled {
    /// Samples in which the cgroup was throttled at least once, of `of`.
    pub(crate) samples: usize,
    pub(crate) of: usize,
    /// Periods throttled, and seconds held off the CPU in all of them (each
    /// sample's at most its wall time).
    pub(crate) periods: u64,
    pub(crate) secs: f64,
    /// `secs` as a share of those samples' wall time, 0..1.
    pub(crate) share: f64,
}

/// [`Throttled`] of a result whose samples recorded throttling.
fn throttled(r: &ResultRecord) -> Option<Throttled> {
    let used = crate::model::sample::used(&r.samples_meta, r.samples.len());
    let metas: Vec<&crate::model::sample::SampleMeta> =
        r.samples_meta.iter().zip(&used).filter(|(_, u)| **u).map(|(m, _)| m).collect();
    let ts: Vec<_> = metas.iter().filter_map(|m| m.throttling).collect();
    if ts.is_empty() {
        return None;
    }
    let wall: f64 = metas.iter().filter(|m| m.throttling.is_some()).map(|m| m.wall_s).sum();
    // Each sample's held-off time within its own wall time (`cpu.stat` adds
    // a throttled stretch when it ends, maybe after the sample began).
    let secs: f64 = metas.iter().filter_map(|m| m.throttling.map(|t| t.secs.min(m.wall_s))).sum();
    Some(Throttled {
        samples: ts.iter().filter(|t| t.periods > 0).count(),
        of: ts.len(),
        periods: ts.iter().map(|t| t.periods).sum(),
        secs,
        share: if wall > 0.0 { secs / wall } else { 0.0 },
    })
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Row {
    pub(crate) family: String,
    pub(crate) benchmark: String,
    pub(crate) params: Params,
    pub(crate) unit: String,
    pub(crate) better: Better,
    /// One per column.
    pub(crate) cells: Vec<Option<Cell>>,
    /// Column i (i >= 1) against column 0; `None` where either failed.
    pub(crate) changes: Vec<Option<Comparison>>,
    /// The perf event a derived counter row counts (`report::counters`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) counter: Option<String>,
}

/// Geometric means of one family: of each column's medians (when the family
/// has one unit) and of the speedups against column 0, lower-is-better ratios
/// inverted first.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct GeoRow {
    pub(crate) family: String,
    pub(crate) unit: Option<String>,
    pub(crate) values: Vec<Option<f64>>,
    /// (speedup - 1) x 100 per column i >= 1.
    pub(crate) change_pct: Vec<Option<f64>>,
    /// Rows used: those with a figure in every column, none below resolution.
    pub(crate) rows: usize,
    /// Rows of the family in the table.
    pub(crate) of: usize,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Table {
    pub(crate) columns: Vec<Column>,
    pub(crate) rows: Vec<Row>,
    pub(crate) geomeans: Vec<GeoRow>,
    /// A CPU limit is compared (a result recorded throttling): the 99th
    /// percentile is shown beside each median, since a quota moves the tail first.
    pub(crate) tail: bool,
}

/// Everything a command prints.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Report {
    pub(crate) runs: Vec<RunRecord>,
    /// All results of the runs shown, as stored.
    pub(crate) results: Vec<ResultRecord>,
    /// Comparison tables (empty when there is a single column).
    pub(crate) tables: Vec<Table>,
    /// Run-level remarks (busy machine, incomplete run, unavailable configs).
    pub(crate) remarks: Vec<String>,
    /// Family summaries (e.g. mem's speedups per cache regime).
    pub(crate) summaries: Vec<String>,
    /// What the runs say of their own sampling (`--runs auto`).
    pub(crate) notes: Vec<String>,
    /// Under starred rows: what the counters (and profiles) say changed
    /// with the figure (`report::why`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) why: Vec<String>,
    #[serde(skip)]
    pub(crate) threshold_pct: f64,
    /// List every warning instead of one line per kind.
    #[serde(skip)]
    pub(crate) verbose: bool,
}

pub(crate) fn cell_of(r: &ResultRecord) -> Cell {
    let mut remarks: Vec<String> = r.warnings.iter().map(|w| w.to_string()).collect();
    remarks.extend(r.notes.iter().cloned());
    let q = r.quality.clone().unwrap_or_default();
    Cell {
        status: r.status,
        median: r.summary.as_ref().map(|s| s.median).filter(|_| r.status == Status::Ok),
        cv: r.summary.as_ref().map(|s| s.cv).filter(|_| r.status == Status::Ok),
        n: r.summary.as_ref().map(|s| s.n).or(r.quality.as_ref().map(|q| q.clean)).unwrap_or(r.samples.len()),
        // A stored reason (a command's stderr) shown, never obeyed.
        reason: r.reason.as_deref().map(|r| crate::model::text::printable(r).into_owned()),
        remarks,
        below_resolution: r.below_resolution,
        noisy: q.noisy && r.status == Status::Ok,
        placement: r.placement.clone(),
        warnings: r.warnings.clone(),
        notes: r.notes.clone(),
        disturbed: q.disturbed,
        retaken: q.retaken,
        wanted: q.wanted,
        clean: r.quality.as_ref().map_or(r.samples.len(), |q| q.clean),
        p99: r.summary.as_ref().map(|s| s.p99).filter(|_| r.status == Status::Ok),
        throttling: throttled(r),
    }
}

/// The extra key by which a result names the parameter whose values are
/// compared with each other as configurations are (a benchmark whose values
/// are alternatives the user gave, not points on a scale).
pub(crate) const COMPARED_ON: &str = "compared_on";

/// For each configuration whose results name a compared parameter
/// ([`COMPARED_ON`]) with two values or more, a table with a column per value
/// (the first the base), rows matched on the other parameters; with one
/// value, the same by the first parameter that varies (a swept placeholder:
/// each value against the first, as hyperfine's parameter scans). A result
/// that failed carries no extras: it takes its benchmark's compared
/// parameter from the results of that configuration that name one, so a
/// failed alternative is a failed column, never a missing one.
fn alternatives_tables(results: &[ResultRecord], opt: &CompareOptions) -> Vec<Table> {
    fn own(r: &ResultRecord) -> Option<&str> {
        r.extras.get(COMPARED_ON).and_then(|v| v.as_str())
    }
    let named: Vec<(&ResultRecord, &str)> = results
        .iter()
        .filter_map(|r| {
            let p = own(r).or_else(|| {
                results.iter().filter(|o| o.benchmark == r.benchmark && o.config == r.config).find_map(own)
            })?;
            Some((r, p))
        })
        .filter(|(r, p)| r.params.0.contains_key(*p))
        .collect();
    let mut groups: Vec<(&str, &str)> = Vec::new();
    for (r, p) in &named {
        if !groups.contains(&(r.config.as_str(), p)) {
            groups.push((r.config.as_str(), p));
        }
    }
    let mut tables = Vec::new();
    for (config, param) in groups {
        let mine: Vec<&ResultRecord> =
            named.iter().filter(|(r, p)| r.config == config && *p == param).map(|(r, _)| *r).collect();
        let values_of = |param: &str| {
            let mut values: Vec<&str> = Vec::new();
            for r in &mine {
                let v = r.params.0.get(param).map_or("", String::as_str);
                if !values.contains(&v) {
                    values.push(v);
                }
            }
            values
        };
        let mut values = values_of(param);
        let mut param = param;
        if values.len() < 2 {
            // One alternative, swept over another parameter (a placeholder
            // of `cmd`, `--param level=1..9`): each value against the first.
            let Some(swept) = mine[0].params.0.keys().find(|k| values_of(k).len() > 1) else { continue };
            param = swept.as_str();
            values = values_of(param);
            if !mine.iter().all(|r| r.params.0.contains_key(param)) {
                continue;
            }
        }
        let columns = values
            .iter()
            .map(|v| Column {
                name: format!("{param}={}", crate::model::params::one_line(v)),
                cpus: mine[0].cpus.clone(),
                results: mine
                    .iter()
                    .filter(|r| r.params.0[param] == *v)
                    .map(|r| {
                        let mut r = (*r).clone();
                        r.params.0.remove(param);
                        r.config = config.to_string();
                        r
                    })
                    .collect(),
            })
            .collect();
        tables.push(Table::build(columns, opt));
    }
    tables
}

impl Table {
    /// Rows keyed on (benchmark, parameters), in first-seen order.
    pub(crate) fn build(columns: Vec<Column>, opt: &CompareOptions) -> Table {
        let mut keys: Vec<(String, Params)> = Vec::new();
        for c in &columns {
            for r in &c.results {
                let k = r.point_key();
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
        }
        let rows: Vec<Row> = keys.iter().map(|k| Row::build(&columns, k, opt)).collect();
        let mut families: Vec<String> = Vec::new();
        for r in &rows {
            if !families.contains(&r.family) {
                families.push(r.family.clone());
            }
        }
        let geomeans = families.into_iter().filter_map(|fam| GeoRow::build(&rows, fam, columns.len())).collect();
        let tail = rows.iter().any(|r| r.cells.iter().flatten().any(|c| c.throttling.is_some()));
        Table { columns, rows, geomeans, tail }
    }
}

impl Row {
    /// The row of point `k`: each column's result there, and each column
    /// against column 0.
    fn build(columns: &[Column], k: &(String, Params), opt: &CompareOptions) -> Row {
        let found: Vec<Option<&ResultRecord>> =
            columns.iter().map(|c| c.results.iter().find(|r| &r.point_key() == k)).collect();
        let any = found.iter().flatten().next().expect("key came from some column");
        let base = found[0].filter(|r| r.status == Status::Ok);
        let changes = found
            .iter()
            .skip(1)
            .map(|f| match (base, f.filter(|r| r.status == Status::Ok)) {
                // A figure below resolution has no ratio worth printing.
                (Some(a), Some(b)) if a.below_resolution.is_none() && b.below_resolution.is_none() => {
                    stats::compare::compare_results(a, b, opt)
                }
                _ => None,
            })
            .collect();
        Row {
            family: any.family.clone(),
            benchmark: any.benchmark.clone(),
            params: any.params.clone(),
            unit: any.unit.clone(),
            better: any.better,
            cells: found.iter().map(|f| f.map(cell_of)).collect(),
            changes,
            counter: any.extras.get(super::counters::COUNTER).and_then(|v| v.as_str()).map(str::to_string),
        }
    }
}

impl GeoRow {
    /// The geometric means of family `fam` over its rows with a figure in
    /// every column; none with fewer than two such rows.
    fn build(rows: &[Row], fam: String, ncol: usize) -> Option<GeoRow> {
        // Counter rows are not figures of the family.
        let of = rows.iter().filter(|r| r.family == fam && r.counter.is_none()).count();
        let fr: Vec<&Row> = rows
            .iter()
            .filter(|r| {
                r.family == fam
                    && r.counter.is_none()
                    && r.cells
                        .iter()
                        .all(|c| c.as_ref().is_some_and(|c| c.median.is_some() && c.below_resolution.is_none()))
            })
            .collect();
        if fr.len() < 2 {
            return None;
        }
        let median = |r: &Row, i: usize| r.cells[i].as_ref().unwrap().median.unwrap();
        let one_unit = fr.iter().all(|r| r.unit == fr[0].unit);
        let values = (0..ncol)
            .map(|i| if one_unit { stats::geomean(&fr.iter().map(|r| median(r, i)).collect::<Vec<_>>()) } else { None })
            .collect();
        let change_pct = (1..ncol)
            .map(|i| {
                let sp: Vec<f64> =
                    fr.iter().map(|r| stats::compare::speedup_of(median(r, 0), median(r, i), r.better)).collect();
                stats::geomean(&sp).map(|g| (g - 1.0) * 100.0)
            })
            .collect();
        Some(GeoRow {
            family: fam,
            unit: if one_unit { Some(fr[0].unit.clone()) } else { None },
            values,
            change_pct,
            rows: fr.len(),
            of,
        })
    }
}

impl Report {
    /// Two runs side by side ([`Report::for_two_runs`]) rather than one run.
    pub(crate) fn compares_runs(&self) -> bool {
        self.runs.len() > 1
    }

    /// The report of one run: its results, and a table comparing its
    /// configurations when it has more than one.
    pub(crate) fn for_run(run: RunRecord, results: Vec<ResultRecord>, opt: &CompareOptions) -> Report {
        let mut configs: Vec<(String, String)> = Vec::new();
        for r in &results {
            if !configs.iter().any(|(n, _)| n == &r.config) {
                configs.push((r.config.clone(), r.cpus.clone()));
            }
        }
        // CPU sets come from the run's resolved configurations when a result lacks them.
        for (n, cpus) in configs.iter_mut() {
            if cpus.is_empty() {
                if let Some(c) = run.configs.iter().find(|c| &c.name == n) {
                    *cpus = c.cpus.to_string();
                }
            }
        }
        let mut tables = Vec::new();
        if configs.len() > 1 {
            let cols = configs
                .iter()
                .map(|(n, cpus)| Column {
                    name: n.clone(),
                    cpus: cpus.clone(),
                    results: results.iter().filter(|r| &r.config == n).cloned().collect(),
                })
                .collect();
            tables.push(Table::build(cols, opt));
        }
        tables.extend(alternatives_tables(&results, opt));
        let mut remarks = run_remarks(&run);
        remarks.dedup();
        // Families add their own lines (the caller fills `summaries`).
        let summaries = Vec::new();
        let mut notes = run_notes(&run);
        notes.extend(answers_line(&tables));
        let why = super::why::lines(&tables, opt);
        Report {
            runs: vec![run],
            results,
            tables,
            remarks,
            summaries,
            notes,
            why,
            threshold_pct: opt.threshold_pct,
            verbose: false,
        }
    }

    /// Two runs side by side: for each configuration they share (or their
    /// single configurations when each has one), a table of run A against run B.
    pub(crate) fn for_two_runs(
        a: (RunRecord, Vec<ResultRecord>),
        b: (RunRecord, Vec<ResultRecord>),
        opt: &CompareOptions,
    ) -> Report {
        // The two runs' rounds were not taken together: not paired by number.
        let opt = &CompareOptions { rounds_paired: false, ..*opt };
        let label = super::header::run_name;
        let cfgs = |rs: &[ResultRecord]| {
            let mut v: Vec<String> = Vec::new();
            for r in rs {
                if !v.contains(&r.config) {
                    v.push(r.config.clone());
                }
            }
            v
        };
        let (ca, cb) = (cfgs(&a.1), cfgs(&b.1));
        let mut pairs: Vec<(String, String)> =
            ca.iter().filter(|c| cb.contains(c)).map(|c| (c.clone(), c.clone())).collect();
        if pairs.is_empty() && ca.len() == 1 && cb.len() == 1 {
            pairs.push((ca[0].clone(), cb[0].clone()));
        }
        let mut tables = Vec::new();
        for (x, y) in &pairs {
            let pick = |rs: &[ResultRecord], c: &str| rs.iter().filter(|r| r.config == c).cloned().collect::<Vec<_>>();
            let (ra, rb) = (pick(&a.1, x), pick(&b.1, y));
            let cpus = |rs: &[ResultRecord]| rs.first().map(|r| r.cpus.clone()).unwrap_or_default();
            let cols = vec![
                Column { name: format!("{} {x}", label(&a.0)), cpus: cpus(&ra), results: ra },
                Column { name: format!("{} {y}", label(&b.0)), cpus: cpus(&rb), results: rb },
            ];
            tables.push(Table::build(cols, opt));
        }
        // Two runs: every run-level line says which run it is about.
        let mut remarks = Vec::new();
        for r in [&a.0, &b.0] {
            remarks.extend(run_remarks(r).into_iter().map(|w| {
                if w.starts_with("run ") {
                    w
                } else {
                    format!("run {}: {w}", r.id)
                }
            }));
        }
        if pairs.is_empty() {
            remarks.push(format!(
                "the runs share no configuration ({} has {}; {} has {})",
                label(&a.0),
                ca.join(", "),
                label(&b.0),
                cb.join(", ")
            ));
        }
        let mut results = a.1;
        results.extend(b.1);
        let notes = [&a.0, &b.0]
            .iter()
            .flat_map(|r| run_notes(r).into_iter().map(move |n| format!("run {}: {n}", r.id)))
            .collect();
        let why = super::why::lines(&tables, opt);
        Report {
            runs: vec![a.0, b.0],
            results,
            tables,
            remarks,
            summaries: Vec::new(),
            notes,
            why,
            threshold_pct: opt.threshold_pct,
            verbose: false,
        }
    }
}

fn run_remarks(run: &RunRecord) -> Vec<String> {
    let mut v = Vec::new();
    if run.status != crate::model::record::RunStatus::Complete {
        v.push(format!("run {} is {}: it was interrupted, so its results are partial", run.id, run.status.as_str()));
    }
    v.extend(run_warnings(run));
    v
}

/// What a run says of its own sampling (the outcome of `--runs auto`).
fn run_notes(run: &RunRecord) -> Vec<String> {
    let mut v = Vec::new();
    let env = &run.environment;
    if env.runs == Some(crate::model::RunsAsked::Auto) {
        let met = env.auto_met.unwrap_or(0);
        let capped: &[String] = env.auto_capped.as_deref().unwrap_or_default();
        let target = env.ci_target_pct.unwrap_or(f64::NAN);
        let mut line = format!(
            "runs auto: {met} of {} results have a median known to +-{target}% (95% interval)",
            met as usize + capped.len()
        );
        if !capped.is_empty() {
            let shown: Vec<&str> = capped.iter().take(3).map(|s| s.as_str()).collect();
            let more = if capped.len() > 3 { format!(" and {} more", capped.len() - 3) } else { String::new() };
            line.push_str(&format!(
                "; {} stopped at the cap (3x the samples, or the time budget): {}{more}",
                capped.len(),
                shown.join(", ")
            ));
        }
        v.push(line);
    }
    v
}

/// `answers: 12 different (*), 20 same, 4 unknown (8 judged on adjacent
/// pairs)`: how the run's comparisons came out (`stats::verdict`), counter
/// rows left out; `None` without a comparison.
fn answers_line(tables: &[Table]) -> Option<String> {
    use crate::stats::verdict::Answer;
    let changes: Vec<&Comparison> = tables
        .iter()
        .flat_map(|t| &t.rows)
        .filter(|r| r.counter.is_none())
        .flat_map(|r| r.changes.iter().flatten())
        .collect();
    if changes.is_empty() {
        return None;
    }
    let count = |a: Answer| changes.iter().filter(|c| c.answer == a).count();
    let paired = changes.iter().filter(|c| c.paired.is_some()).count();
    let parts: Vec<String> = [Answer::Different, Answer::Same, Answer::Unknown]
        .into_iter()
        .map(|a| format!("{} {}{}", count(a), a.as_str(), if a == Answer::Different { " (*)" } else { "" }))
        .collect();
    let paired = if paired > 0 { format!(" ({paired} judged on adjacent pairs)") } else { String::new() };
    Some(format!("answers: {}{paired}", parts.join(", ")))
}

fn run_warnings(run: &RunRecord) -> Vec<String> {
    run.environment.warnings.iter().map(|w| w.to_string()).collect()
}

#[cfg(test)]
mod alternatives_tests {
    use super::*;
    use crate::model::record::Status;

    /// `cmd.run` of command `name`: ok (with the extra naming the compared
    /// parameter, as the benchmark writes it) or failed (no extras).
    fn command(name: &str, ok: bool) -> ResultRecord {
        let mut r = crate::testing::stored::ok_result("cmd.run", &[1.0, 1.1, 0.9]);
        r.params.set("cmd", name);
        if ok {
            r.extras.insert(COMPARED_ON.into(), "cmd".into());
        } else {
            r.status = Status::Failed;
            r.reason = Some("exit status 1".into());
            r.samples.clear();
            r.summary = None;
        }
        r
    }

    #[test]
    fn a_failed_alternative_is_a_failed_column_not_a_missing_one() {
        let opt = CompareOptions::default();
        let t = alternatives_tables(&[command("base", true), command("new", false), command("new2", true)], &opt);
        assert_eq!(t.len(), 1);
        let names: Vec<&str> = t[0].columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["cmd=base", "cmd=new", "cmd=new2"]);
        let cells = &t[0].rows[0].cells;
        assert_eq!(cells[1].as_ref().map(|c| c.status), Some(Status::Failed));
        // A failed baseline stays the first column.
        let t = alternatives_tables(&[command("base", false), command("new", true)], &opt);
        assert_eq!(t[0].columns[0].name, "cmd=base");
        assert_eq!(t[0].rows[0].cells[0].as_ref().map(|c| c.status), Some(Status::Failed));
    }
}
