//! Runs pooled by a group (a kernel release or a host): one column per
//! group, the same benchmarks row by row. Each cell is the median of every
//! clean sample of the group's runs; the significance logic takes the
//! run, not the sample, as the unit: a change is marked only when the
//! per-run medians of both groups differ by Welch's test (p < 0.05, at least
//! two runs a side) and by at least the threshold, so two boots of one
//! kernel that differ from each other are not taken for a kernel change.

use crate::model::record::ResultRecord;
use crate::model::Better;
use crate::stats::compare::{speedup_of, welch_p};
use crate::stats::summary::median;
use std::collections::BTreeMap;

/// One run of a group: its results.
pub(crate) struct PooledRun {
    pub(crate) group: String,
    pub(crate) results: Vec<ResultRecord>,
}

/// One row: per group, the per-run medians and the pooled clean samples.
struct Row {
    unit: String,
    better: Better,
    per_group: BTreeMap<usize, (Vec<f64>, Vec<f64>)>,
}

/// The pooled table as text; `by` names the grouping (`kernel`, `host`).
pub(crate) fn render(runs: &[PooledRun], by: &str, threshold_pct: f64) -> String {
    let mut groups: Vec<&str> = Vec::new();
    for r in runs {
        if !groups.contains(&r.group.as_str()) {
            groups.push(&r.group);
        }
    }
    let mut rows: Vec<((String, String, String), Row)> = Vec::new();
    for r in runs {
        let g = groups.iter().position(|x| *x == r.group).unwrap();
        for res in r.results.iter().filter(|x| x.status == crate::model::record::Status::Ok) {
            let clean = res.clean_samples();
            if clean.is_empty() {
                continue;
            }
            let key = (res.benchmark.clone(), res.params.display(), res.config.clone());
            let idx = match rows.iter().position(|(k, _)| *k == key) {
                Some(i) => i,
                None => {
                    rows.push((key, Row { unit: res.unit.clone(), better: res.better, per_group: BTreeMap::new() }));
                    rows.len() - 1
                }
            };
            let cell = rows[idx].1.per_group.entry(g).or_default();
            cell.0.push(median(&clean));
            cell.1.extend(clean);
        }
    }
    let mut head = vec!["benchmark".to_string(), "params".into(), "config".into(), "unit".into()];
    for (i, g) in groups.iter().enumerate() {
        head.push(format!("{by} {g}"));
        if i > 0 {
            head.push("change".into());
        }
    }
    let mut table = vec![head];
    for ((bench, params, config), row) in &rows {
        let mut line = vec![bench.clone(), params.clone(), config.clone(), row.unit.clone()];
        let base = row.per_group.get(&0);
        for i in 0..groups.len() {
            let cell = row.per_group.get(&i);
            line.push(match cell {
                Some((runs, samples)) => format!(
                    "{} ({} run{}, {} samples)",
                    crate::model::fmt::fmt_num(median(samples)),
                    runs.len(),
                    if runs.len() == 1 { "" } else { "s" },
                    samples.len()
                ),
                None => "-".into(),
            });
            if i == 0 {
                continue;
            }
            line.push(match (base, cell) {
                (Some((ra, sa)), Some((rb, sb))) => {
                    let change = (speedup_of(median(sa), median(sb), row.better) - 1.0) * 100.0;
                    let star = welch_p(ra, rb).is_some_and(|p| p < 0.05) && change.abs() >= threshold_pct;
                    format!("{change:+.1}%{}", if star { "*" } else { "" })
                }
                _ => "-".into(),
            });
        }
        table.push(line);
    }
    let widths: Vec<usize> =
        (0..table[0].len()).map(|c| table.iter().map(|l| l[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for l in &table {
        let cells: Vec<String> = l.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out.push_str(&format!(
        "cells: the median of every clean sample of the {by}'s runs; change: + means better than {by} {}; * significant: the per-run medians differ (Welch p < 0.05, at least 2 runs a side) by at least {threshold_pct}%: runs, not samples, are the unit\n",
        groups.first().copied().unwrap_or("-")
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(samples: &[f64]) -> ResultRecord {
        ResultRecord { summary: None, ..crate::testing::stored::ok_result("lat.x", samples) }
    }

    fn run(group: &str, level: f64) -> PooledRun {
        PooledRun {
            group: group.into(),
            results: vec![res(&[level, level * 1.001, level * 0.999, level, level * 1.002])],
        }
    }

    /// Two boots of one kernel 10% apart, and another kernel in between:
    /// thousands of samples would call it significant, the runs do not.
    #[test]
    fn runs_not_samples_decide() {
        let runs = [run("6.1", 10.0), run("6.1", 11.0), run("6.18", 10.4), run("6.18", 10.6)];
        let t = render(&runs, "kernel", 1.0);
        let row = t.lines().nth(1).unwrap();
        assert!(row.contains("(2 runs, 10 samples)") && !row.contains('*'), "{t}");
        // Consistent runs that differ are marked.
        let runs = [run("6.1", 10.0), run("6.1", 10.01), run("6.18", 12.0), run("6.18", 12.01)];
        let t = render(&runs, "kernel", 1.0);
        assert!(t.lines().nth(1).unwrap().contains('*'), "{t}");
        // One run a side: never marked.
        let t = render(&[run("a", 10.0), run("b", 20.0)], "host", 1.0);
        assert!(!t.lines().nth(1).unwrap().contains('*'), "{t}");
        assert!(t.starts_with("benchmark") && t.contains("host a") && t.contains("host b"), "{t}");
    }
}
