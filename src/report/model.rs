//! From results to comparison tables.

use crate::model::record::{ResultRecord, RunRecord};
use crate::stats::{CompareOptions, Comparison};
use serde::Serialize;

use super::counters;
pub(crate) use super::table::{cell_of, Cell, Column, GeoRow, Row, Table};

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
        r.extras.compared_on.as_deref()
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

impl Report {
    /// Two runs whose machine changed between them: every change (log)
    /// within `bar` is unknown, its star withheld
    /// ([`crate::stats::Comparison::withhold_within`]).
    pub(crate) fn withhold_within(&mut self, bar: f64) {
        for row in self.tables.iter_mut().flat_map(|t| t.rows.iter_mut()) {
            row.changes.iter_mut().flatten().for_each(|c| c.withhold_within(bar));
        }
    }

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
    // Before the comparisons are read: which of them compare nothing placed.
    v.extend(crate::model::config::same_placement(&run.configs));
    if env.runs == Some(crate::model::RunsAsked::Auto) {
        let met = env.auto_met.unwrap_or(0);
        let capped: &[String] = env.auto_capped.as_deref().unwrap_or_default();
        let target = env.ci_target_pct.unwrap_or(f64::NAN);
        let mut line = format!(
            "runs auto: {met} of {} results settled (comparisons different or same, other medians within +-{target}%)",
            met as usize + capped.len()
        );
        if !capped.is_empty() {
            // Runs stored before named commands were left out of a point's name.
            let shown: Vec<String> = capped.iter().take(3).map(|s| crate::model::params::without_carried(s)).collect();
            let more = if capped.len() > 3 { format!(" and {} more", capped.len() - 3) } else { String::new() };
            line.push_str(&format!(
                "; {} still unknown when sampling stopped (at the cap of 3x the planned time or the budget, or where the cap's samples could not settle them): {}{more}",
                capped.len(),
                shown.join(", ")
            ));
        }
        v.push(line);
    }
    if let Some(mode) = &env.interleave {
        match &env.interleave_why {
            Some(why) => v.push(format!("interleave: {mode} ({why})")),
            None => v.push(format!("interleave: {mode}")),
        }
    }
    if !env.duet.is_empty() {
        v.push(format!(
            "duet: compared values sampled at the same moment, the CPUs swapping each pair: {}",
            env.duet.join(", ")
        ));
    }
    if !env.duet_fell_back.is_empty() {
        v.push(format!(
            "duet: too few CPUs for every compared value, so they took turns: {}",
            env.duet_fell_back.join(", ")
        ));
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

impl Report {
    /// `--counters`: every result followed by its counters per operation,
    /// in the results and in every table, and a line for the events that
    /// could not be counted.
    pub(crate) fn add_counters(&mut self, opt: &CompareOptions) {
        self.results = counters::expand(&self.results);
        for t in &mut self.tables {
            let cols: Vec<Column> =
                t.columns.iter().map(|c| Column { results: counters::expand(&c.results), ..c.clone() }).collect();
            *t = Table::build(cols, opt);
        }
        let lines = counters::uncounted(&self.results);
        if lines.is_empty() && !self.results.iter().any(|r| r.extras.counter.is_some()) {
            self.notes.push("no counters were taken in this run: run it with --counters".into());
        }
        self.notes.extend(lines);
    }
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
            r.extras.compared_on = Some("cmd".into());
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
