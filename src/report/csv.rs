//! CSV: with comparison tables, one line per row and column pair; otherwise one
//! line per result. Figures at full precision. `n` and the summary are of the
//! clean samples; `taken` counts every sample, `disturbed` the ones left out.
//! A net figure below resolution has no median, only its bound. A run's
//! metadata (`--meta`) is the last column (`meta`; `a_meta`, `b_meta` of
//! the compared sides), as a JSON object, empty when the run has none.
//! Before it, one column per parameter that names a point (`param.NAME`,
//! empty where a result has none), and for `cmd` commands the text each ran
//! (`command`; `a_command`, `b_command`), so no cell holds `k=v k=v`
//! to split.

use super::model::{Cell, GeoRow, Report, Row, Table};
use super::Renderer;
use anyhow::Result;

pub(super) fn q(s: &str) -> String {
    // Control characters (a command's stderr in a reason) shown, not raw.
    let s = crate::model::text::printable(s);
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub(super) fn num(v: Option<f64>) -> String {
    v.map(|x| format!("{x}")).unwrap_or_default()
}

/// One line per result, or per row and column pair of the comparison tables.
pub(crate) struct Csv;

impl Renderer for Csv {
    fn render(&self, reports: &[Report]) -> Result<String> {
        let rep = super::single(reports, "CSV")?;
        Ok(if rep.tables.is_empty() { results(rep) } else { comparisons(rep) })
    }
}

const RESULTS_HEADER: &str = "run,benchmark,family,params,config,cpus,unit,better,status,reason,n,median,mean,min,max,stddev,cv,samples,taken,disturbed,noisy,below_resolution";

const COMPARISON_HEADER: &str =
    "benchmark,params,unit,better,a,a_cpus,a_median,a_cv,b,b_cpus,b_median,b_cv,change_pct,p_welch,ci_low,ci_high,significant,\
     a_noisy,a_below_resolution,b_noisy,b_below_resolution,withheld,p_mann_whitney,rounds,rounds_held,p_rounds";

/// The metadata cell of a run: its JSON object, empty when it has none.
fn meta(run: Option<&crate::model::RunRecord>) -> String {
    run.filter(|r| !r.meta.is_empty()).map(|r| q(&r.meta.to_json())).unwrap_or_default()
}

/// The metadata of the run behind column `i` of a table: the one run, or
/// with two runs compared, the `i`th.
fn column_meta(rep: &Report, i: usize) -> String {
    meta(if rep.runs.len() > 1 { rep.runs.get(i) } else { rep.runs.first() })
}

/// A run with a single configuration: its results as stored.
fn results(rep: &Report) -> String {
    let keys = param_keys(rep.results.iter().map(|r| &r.params));
    let commands = rep.results.iter().any(|r| command(&r.params).is_some());
    let mut out = RESULTS_HEADER.to_string();
    out.push_str(&extra_header(&keys, if commands { &["command", "meta"] } else { &["meta"] }));
    let run = rep.runs.first().map(|r| r.id).unwrap_or(0);
    let run_meta = meta(rep.runs.first());
    for r in &rep.results {
        let s = r.summary.as_ref();
        let samples = r.samples.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(";");
        out.push_str(&format!(
            "{run},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            q(&r.benchmark),
            q(&r.family),
            q(&r.params.display()),
            q(&r.config),
            q(&r.cpus),
            q(&r.unit),
            r.better.as_str(),
            r.status.as_str(),
            q(r.reason.as_deref().unwrap_or("")),
            s.map(|s| s.n).unwrap_or(0),
            num(s.map(|s| s.median).filter(|_| r.below_resolution.is_none())),
            num(s.map(|s| s.mean)),
            num(s.map(|s| s.min)),
            num(s.map(|s| s.max)),
            num(s.map(|s| s.stddev)),
            num(s.map(|s| s.cv)),
            q(&samples),
            r.samples.len(),
            r.quality.as_ref().map(|q| q.disturbed).unwrap_or(0),
            r.is_noisy(),
            num(r.below_resolution)
        ));
        out.push_str(&param_cells(&keys, &r.params));
        if commands {
            out.push_str(&format!(",{}", q(&command(&r.params).unwrap_or_default())));
        }
        out.push_str(&format!(",{run_meta}\n"));
    }
    out
}

/// Every parameter that names a point, in name order.
fn param_keys<'a>(ps: impl Iterator<Item = &'a crate::model::Params>) -> Vec<String> {
    let mut keys: Vec<String> = ps.flat_map(|p| p.shown().map(|(k, _)| k.clone())).collect();
    keys.sort();
    keys.dedup();
    keys
}

/// The header's tail: `,param.K` for each key, then the `extra` names, and the line's end.
fn extra_header(keys: &[String], extra: &[&str]) -> String {
    let names = keys.iter().map(|k| q(&format!("param.{k}"))).chain(extra.iter().map(|e| e.to_string()));
    names.map(|n| format!(",{n}")).collect::<String>() + "\n"
}

/// A line's `param.K` cells.
fn param_cells(keys: &[String], p: &crate::model::Params) -> String {
    keys.iter().map(|k| format!(",{}", q(p.0.get(k).map_or("", String::as_str)))).collect()
}

/// The command a `cmd` point ran.
fn command(p: &crate::model::Params) -> Option<String> {
    crate::bench::cmd::command_text(p)
}

/// Every table: each row against column 0, then the geometric means; each
/// line ends with the two sides' metadata.
fn comparisons(rep: &Report) -> String {
    let keys = param_keys(rep.tables.iter().flat_map(|t| t.rows.iter().map(|r| &r.params)));
    let ran_any = |t: &Table, r: &Row| (0..t.columns.len()).any(|i| ran(t, r, i).is_some());
    let commands = rep.tables.iter().any(|t| t.rows.iter().any(|r| ran_any(t, r)));
    let mut out = COMPARISON_HEADER.to_string();
    let tail: &[&str] = if commands { &["a_command", "b_command", "a_meta", "b_meta"] } else { &["a_meta", "b_meta"] };
    out.push_str(&extra_header(&keys, tail));
    let metas = |i: usize| format!(",{},{}\n", column_meta(rep, 0), column_meta(rep, i));
    for t in &rep.tables {
        for r in &t.rows {
            for i in 1..t.columns.len() {
                out.push_str(&pair_line(t, r, i));
                out.push_str(&param_cells(&keys, &r.params));
                if commands {
                    let c = |i| q(&ran(t, r, i).unwrap_or_default());
                    out.push_str(&format!(",{},{}", c(0), c(i)));
                }
                out.push_str(&metas(i));
            }
        }
        for g in &t.geomeans {
            for i in 1..t.columns.len() {
                out.push_str(&geomean_line(t, g, i));
                out.push_str(&",".repeat(keys.len() + if commands { 2 } else { 0 }));
                out.push_str(&metas(i));
            }
        }
    }
    out
}

/// Column `i`'s command: the one its result ran at the row's point (a
/// failed result keeps none: then the text its point names, the column's
/// `cmd=NAME` put back into the row's parameters).
fn ran(t: &Table, r: &Row, i: usize) -> Option<String> {
    let key = (r.benchmark.clone(), r.params.clone());
    let col = &t.columns[i];
    let kept = col.results.iter().find(|x| x.point_key() == key).and_then(|x| x.extras.command.as_deref());
    if let Some(c) = kept {
        return Some(c.to_string());
    }
    let mut p = r.params.clone();
    if let Some((k, v)) = col.name.split_once('=').filter(|(k, _)| !p.0.contains_key(*k)) {
        p.set(k, v);
    }
    command(&p)
}

/// A median unless the figure is below resolution.
fn median(c: Option<&Cell>) -> String {
    num(c.filter(|c| c.below_resolution.is_none()).and_then(|c| c.median))
}

/// Row `r`, column 0 against column `i`.
fn pair_line(t: &Table, r: &Row, i: usize) -> String {
    let (a, b) = (&t.columns[0], &t.columns[i]);
    let ca = r.cells[0].as_ref();
    let cb = r.cells[i].as_ref();
    let cmp = r.changes[i - 1].as_ref();
    let rounds = cmp.and_then(|c| c.rounds.as_ref());
    format!(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
        q(&r.benchmark),
        q(&r.params.display()),
        q(&r.unit),
        r.better.as_str(),
        q(&a.name),
        q(&a.cpus),
        median(ca),
        num(ca.and_then(|c| c.cv)),
        q(&b.name),
        q(&b.cpus),
        median(cb),
        num(cb.and_then(|c| c.cv)),
        num(cmp.map(|c| c.change_pct)),
        num(cmp.and_then(|c| c.p_welch)),
        num(cmp.and_then(|c| c.ci_low)),
        num(cmp.and_then(|c| c.ci_high)),
        cmp.map(|c| c.significant.to_string()).unwrap_or_default(),
        ca.is_some_and(|c| c.noisy),
        num(ca.and_then(|c| c.below_resolution)),
        cb.is_some_and(|c| c.noisy),
        num(cb.and_then(|c| c.below_resolution)),
        cmp.and_then(|c| c.withheld).map(|w| w.describe()).unwrap_or(""),
        num(cmp.and_then(|c| c.p_mann_whitney)),
        rounds.map(|r| r.rounds.to_string()).unwrap_or_default(),
        rounds.map(|r| r.held.to_string()).unwrap_or_default(),
        num(rounds.map(|r| r.p)),
    )
}

/// A family's geometric means, column 0 against column `i`.
fn geomean_line(t: &Table, g: &GeoRow, i: usize) -> String {
    let (a, b) = (&t.columns[0], &t.columns[i]);
    format!(
        "{},,{},,{},{},{},,{},{},{},,{},,,,,,,,,,,,",
        q(&format!("geomean {}", g.family)),
        q(g.unit.as_deref().unwrap_or("")),
        q(&a.name),
        q(&a.cpus),
        num(g.values[0]),
        q(&b.name),
        q(&b.cpus),
        num(g.values[i]),
        num(g.change_pct[i - 1])
    )
}
