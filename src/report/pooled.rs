//! Runs pooled by a group (a kernel release or a host): one column per
//! group, the same benchmarks row by row. Each cell is the median of every
//! clean sample of the group's runs. The star is the one rule
//! (`stats::compare::compare_sides`), with each run of a group in the place
//! a round takes in `compare RUN_A RUN_B`: the change must pass the
//! threshold, the rank test on the pooled samples, and the rank test on the
//! per-run medians of the two groups (rule 3 for rounds not taken
//! together). Runs, not samples, are the unit, so two boots of one kernel
//! that differ from each other are not taken for a kernel change; the rank
//! test over runs needs 4 runs a side (3 against 5) to reach p < 0.05.

use crate::model::record::ResultRecord;
use crate::model::Better;
use crate::stats::compare::{compare_sides, CompareOptions, Side};
use crate::stats::summary::median;
use std::collections::BTreeMap;

/// One run of a group: its results.
pub(crate) struct PooledRun {
    pub(crate) group: String,
    pub(crate) results: Vec<ResultRecord>,
}

/// One group's side of a row: the pooled clean samples, each with the
/// number (from 1) of the group's run it came from.
#[derive(Default)]
struct Pool {
    values: Vec<f64>,
    runs: Vec<u32>,
}

impl Pool {
    fn run_count(&self) -> usize {
        self.runs.last().copied().unwrap_or(0) as usize
    }

    fn side(&self) -> Side {
        Side { rounds: self.runs.clone(), ..Side::default() }
    }
}

/// One row: per group, its pool.
struct Row {
    unit: String,
    better: Better,
    per_group: BTreeMap<usize, Pool>,
}

/// The options of the pooled star: the caller's threshold, the groups'
/// runs not paired, no bootstrap (the table shows no interval).
fn options(threshold_pct: f64) -> CompareOptions {
    CompareOptions { threshold_pct, bootstrap: 0, rounds_paired: false, ..CompareOptions::default() }
}

/// The change of B's pool against A's, as `+3.1%`, starred by the one rule.
fn change(a: &Pool, b: &Pool, better: Better, opt: &CompareOptions) -> String {
    match compare_sides(&a.values, &a.side(), &b.values, &b.side(), &[], better, opt) {
        Some(c) => format!("{:+.1}%{}", c.change_pct, if c.significant { "*" } else { "" }),
        None => "-".into(),
    }
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
            let pool = rows[idx].1.per_group.entry(g).or_default();
            let run = pool.run_count() as u32 + 1;
            pool.runs.extend(std::iter::repeat_n(run, clean.len()));
            pool.values.extend(clean);
        }
    }
    let mut head = vec!["benchmark".to_string(), "params".into(), "config".into(), "unit".into()];
    for (i, g) in groups.iter().enumerate() {
        head.push(format!("{by} {g}"));
        if i > 0 {
            head.push("change".into());
        }
    }
    let opt = options(threshold_pct);
    let mut table = vec![head];
    for ((bench, params, config), row) in &rows {
        let mut line = vec![bench.clone(), params.clone(), config.clone(), row.unit.clone()];
        let base = row.per_group.get(&0);
        for i in 0..groups.len() {
            let cell = row.per_group.get(&i);
            line.push(match cell {
                Some(p) => format!(
                    "{} ({} run{}, {} samples)",
                    crate::model::fmt::fmt_num(median(&p.values)),
                    p.run_count(),
                    if p.run_count() == 1 { "" } else { "s" },
                    p.values.len()
                ),
                None => "-".into(),
            });
            if i == 0 {
                continue;
            }
            line.push(match (base, cell) {
                (Some(a), Some(b)) => change(a, b, row.better, &opt),
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
        "cells: the median of every clean sample of the {by}'s runs; change: + means better than {by} {}; * significant by the rule of `compare RUN_A RUN_B` with each run in the place of a round: at least {threshold_pct}% (log scale), the samples' rank test, and the per-run medians' rank test at p < {} (4 runs a side or more): runs, not samples, are the unit\n",
        groups.first().copied().unwrap_or("-"),
        opt.alpha
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

    fn starred(runs: &[PooledRun]) -> bool {
        let t = render(runs, "kernel", 1.0);
        t.lines().nth(1).unwrap().contains('*')
    }

    /// Two boots of one kernel 10% apart, and another kernel in between:
    /// thousands of samples would call it significant, the runs do not.
    #[test]
    fn runs_not_samples_decide() {
        let runs = [run("6.1", 10.0), run("6.1", 11.0), run("6.18", 10.4), run("6.18", 10.6)];
        let t = render(&runs, "kernel", 1.0);
        let row = t.lines().nth(1).unwrap();
        assert!(row.contains("(2 runs, 10 samples)") && !row.contains('*'), "{t}");
        // Consistent runs that differ are marked, given 4 runs a side.
        let runs: Vec<PooledRun> =
            (0..4).flat_map(|i| [run("6.1", 10.0 + 0.01 * i as f64), run("6.18", 12.0 + 0.01 * i as f64)]).collect();
        let t = render(&runs, "kernel", 1.0);
        assert!(t.lines().nth(1).unwrap().contains("(4 runs, 20 samples)"), "{t}");
        assert!(starred(&runs), "{t}");
        // One run a side: never marked.
        let t = render(&[run("a", 10.0), run("b", 20.0)], "host", 1.0);
        assert!(!t.lines().nth(1).unwrap().contains('*'), "{t}");
        assert!(t.starts_with("benchmark") && t.contains("host a") && t.contains("host b"), "{t}");
    }

    /// The rule is `compare_sides`'s: three runs a side cannot pass the
    /// rank test over runs, however consistent; a change within the
    /// threshold is never marked.
    #[test]
    fn the_one_rule_decides() {
        let three: Vec<PooledRun> =
            (0..3).flat_map(|i| [run("6.1", 10.0 + 0.01 * i as f64), run("6.18", 12.0 + 0.01 * i as f64)]).collect();
        assert!(!starred(&three));
        let small: Vec<PooledRun> =
            (0..6).flat_map(|i| [run("6.1", 10.0 + 0.001 * i as f64), run("6.18", 10.05 + 0.001 * i as f64)]).collect();
        assert!(!starred(&small), "0.5 % is within the 1 % threshold");
        // A slowdown counts as a speedup of the same factor does (log scale).
        let slower: Vec<PooledRun> =
            (0..4).flat_map(|i| [run("6.1", 12.0 + 0.01 * i as f64), run("6.18", 10.0 + 0.01 * i as f64)]).collect();
        assert!(starred(&slower));
    }
}
