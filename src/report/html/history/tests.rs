//! The history page on hand-built series: one mark per run and per change
//! point, segment medians, the runs named under the plot, the tables, a
//! series too short to search, hostile text shown as text, and the run
//! labels' placement.

use super::super::super::history::{Change, History, RunPoint, RunRef, Series};
use super::{page, place, Anchor};
use crate::model::meta::RunMeta;
use crate::model::{Better, Params};
use crate::stats::changepoint::Step;
use proptest::prelude::*;

fn run_ref(id: i64, label: Option<&str>, meta: &[(&str, &str)]) -> RunRef {
    RunRef {
        id,
        started: format!("2024-05-{:02}T10:00:00Z", id % 28 + 1),
        label: label.map(str::to_string),
        meta: RunMeta(meta.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
    }
}

/// `n` runs (ids from 100) whose medians step from 100 to 105 at each of
/// `steps`; every run has an interval but the third.
fn series(benchmark: &str, config: &str, host: &str, n: usize, steps: &[usize]) -> Series {
    let runs: Vec<RunPoint> = (0..n)
        .map(|i| {
            let level = 100.0 + 5.0 * steps.iter().filter(|s| **s <= i).count() as f64;
            let m = level + (i % 3) as f64 * 0.2;
            let commit = format!("c{i:02}");
            RunPoint {
                run: run_ref(100 + i as i64, Some("nightly"), &[("commit", &commit)]),
                median: m,
                ci: (i != 2).then_some((m - 0.5, m + 0.5)),
                n: 8,
            }
        })
        .collect();
    let changes = steps
        .iter()
        .map(|&i| Change {
            index: i,
            last_before: runs[i - 1].run.clone(),
            first_after: runs[i].run.clone(),
            q: 12.0,
            p: 0.005,
            step: Step {
                before: 100.0,
                after: 105.0,
                change_pct: 5.0,
                ci_pct: Some((4.0, 6.0)),
                samples_p: Some(0.0001),
                samples_agree: true,
            },
        })
        .collect();
    let mut params = Params::default();
    params.set("size", "0");
    Series {
        benchmark: benchmark.into(),
        params,
        config: config.into(),
        host: host.into(),
        unit: "us".into(),
        better: Better::Lower,
        runs,
        too_short: None,
        modes: None,
        changes,
    }
}

fn history(series: Vec<Series>) -> History {
    History { alpha: 0.05, min_segment: 5, permutations: 199, seed: 0, series }
}

fn count(s: &str, pat: &str) -> usize {
    s.matches(pat).count()
}

/// The `<svg>` of each series, in order.
fn charts(h: &str) -> Vec<&str> {
    h.split("<svg ").skip(1).map(|s| s.split("</svg>").next().unwrap()).collect()
}

#[test]
fn one_mark_per_run_and_per_change_point() {
    let h = page(&history(vec![series("lat.syscall", "up", "alpha", 12, &[6])]), "t");
    let c = charts(&h);
    assert_eq!(c.len(), 1);
    let c = c[0];
    assert!(c.contains("data-kind=\"history\""));
    assert_eq!(count(c, "<circle class=\"run\""), 12, "a dot per run");
    assert_eq!(count(c, "<line class=\"ci\""), 11, "a bar per run with an interval");
    assert_eq!(count(c, "<line class=\"change\""), 1, "a line per change point");
    assert_eq!(count(c, "<text class=\"change-label\""), 1);
    assert!(c.contains(">1: +5.0% [+4.0%, +6.0%] worse</text>"), "the change and its interval are written");
    assert_eq!(count(c, "<line class=\"segment\""), 2, "a median per segment");
    assert_eq!(count(c, "<title>"), 1, "the chart's name only: nothing hides behind a hover");
    // The dashed line sits between the last run before and the first after.
    let x_of = |pat: &str, attr: &str| -> Vec<f64> {
        c.split(pat)
            .skip(1)
            .map(|t| t.split(&format!("{attr}=\"")).nth(1).unwrap().split('"').next().unwrap().parse().unwrap())
            .collect()
    };
    let dots = x_of("<circle class=\"run\"", "cx");
    let line = x_of("<line class=\"change\"", "x1")[0];
    assert!(dots[5] < line && line < dots[6], "{} < {line} < {}", dots[5], dots[6]);
}

#[test]
fn runs_at_change_points_and_the_ends_are_named_on_the_chart() {
    let h = page(&history(vec![series("lat.syscall", "up", "alpha", 12, &[6])]), "t");
    let c = charts(&h)[0];
    let named: Vec<&str> = c.split("data-run=\"").skip(1).map(|t| t.split('"').next().unwrap()).collect();
    assert_eq!(named, ["100", "105", "106", "111"]);
    assert!(c.contains("run 105 · commit=c05 · 2024-05-22 · nightly</text>"), "{c}");
    assert!(c.contains("run 106 · commit=c06 · 2024-05-23 · nightly</text>"));
    assert_eq!(count(c, "<line class=\"leader\""), 4);
}

#[test]
fn tables_give_every_run_and_the_change_points() {
    let h = page(&history(vec![series("lat.syscall", "up", "alpha", 12, &[6])]), "kdelta history: lat");
    assert!(h.starts_with("<!DOCTYPE html>") && h.ends_with("</body></html>\n"));
    assert!(h.contains("<h2>lat.syscall  size=0  config up  host alpha  (us, lower is better)</h2>"));
    assert!(h.contains("<p class=\"outcome\">1 change point(s):</p>"));
    assert!(h.contains("Change points (1)") && h.contains("Runs (12)"));
    let changes = h.split("<table class=\"changes\">").nth(1).unwrap().split("</table>").next().unwrap();
    assert!(changes.contains("<td>run 105 (2024-05-22T10:00:00Z, nightly) commit=c05</td>"));
    assert!(changes.contains("<td>run 106 (2024-05-23T10:00:00Z, nightly) commit=c06</td>"));
    assert!(changes.contains(">+5.0%</td><td class=\"num\">+4.0% .. +6.0%</td><td class=\"worse\">worse</td>"));
    assert!(changes.contains("<td class=\"num\">0.005</td><td>agree (p &lt; 0.001)</td>"));
    let runs = h.split("<table class=\"runs\">").nth(1).unwrap().split("</table>").next().unwrap();
    assert_eq!(count(runs, "<tr>"), 1 + 12, "the heading and a row per run");
    assert_eq!(count(runs, "<tr class=\"cp\">"), 1);
    assert!(runs.contains("<td class=\"meta\">commit=c11</td>"));
    assert!(runs.contains("<td class=\"num\">102</td><td>2024-05-19T10:00:00Z</td><td>nightly</td>"));
    for (o, c) in [("<section", "</section>"), ("<table", "</table>"), ("<svg", "</svg>"), ("<tr", "</tr>")] {
        assert_eq!(count(&h, o), count(&h, c), "{o} unbalanced");
    }
    for bad in ["<script", "http:", "https:", "src=", "<link", "url("] {
        assert!(!h.contains(bad), "found {bad}");
    }
}

#[test]
fn a_series_too_short_to_search_says_so() {
    let mut s = series("lat.pipe", "up", "alpha", 3, &[]);
    s.too_short = Some((3, 10));
    let h = page(&history(vec![s, series("lat.syscall", "up", "alpha", 10, &[])]), "t");
    assert!(h.contains("too few runs to look for a change point: 3, it takes 10 (2 x --min-segment 5)"));
    let c = charts(&h);
    assert_eq!(count(c[0], "<circle class=\"run\""), 3);
    assert_eq!(count(c[0], "<line class=\"segment\""), 0, "no segments where nothing was searched");
    assert_eq!(count(c[1], "<line class=\"segment\""), 1, "one segment where nothing changed");
    assert!(h.contains("no change point (alpha 0.05, min segment 5, 199 permutations, seed 0)"));
    assert!(!h.contains("Change points ("));
}

#[test]
fn many_runs_keep_few_labels() {
    let h = page(&history(vec![series("lat.syscall", "up", "alpha", 400, &[100, 101, 250])]), "t");
    let c = charts(&h)[0];
    assert_eq!(count(c, "<circle class=\"run\""), 400);
    assert_eq!(count(c, "<line class=\"change\""), 3);
    assert_eq!(count(c, "class=\"run-label\""), 2 + 5, "the ends and the runs either side, each once");
}

/// What a user (or an attacker) might put in a label, a configuration
/// name, a host name or metadata.
const MARK: &str = "<script>alert(1)</script>\"><svg onload=alert(2)>&amp;&\u{202e}'x";

#[test]
fn hostile_text_is_shown_as_text() {
    let mut s = series(&format!("lat.x{MARK}"), &format!("up{MARK}"), &format!("host{MARK}"), 12, &[6]);
    s.unit = format!("us{MARK}");
    s.params.set(&format!("k{MARK}"), format!("v{MARK}"));
    for (i, p) in s.runs.iter_mut().enumerate() {
        p.run.label = Some(format!("label{MARK}"));
        p.run.started = format!("2024{MARK}");
        p.run.meta = RunMeta([(format!("commit{i}"), format!("v{MARK}"))].into_iter().collect());
    }
    for c in s.changes.iter_mut() {
        c.last_before = s.runs[c.index - 1].run.clone();
        c.first_after = s.runs[c.index].run.clone();
    }
    let h = page(&history(vec![s]), &format!("title{MARK}"));
    assert_eq!(count(&h, "<svg "), 1, "no element from the marker");
    crate::report::html::tests::assert_clean(&h, &["<script", "<svg onload", "\"><svg", "'x"]);
    let shown = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;svg onload=alert(2)&gt;";
    assert!(h.contains(&format!("up{shown}")), "the configuration name is shown, escaped");
    assert!(h.contains(&format!("<td>label{shown}")), "the label is shown, escaped");
    assert!(h.contains(&format!("commit0=v{shown}")), "the metadata is shown, escaped");
    assert!(h.contains(&format!("host{shown}")));
    let c = charts(&h)[0];
    assert!(c.contains(">run 105 · commit5=v&lt;script&gt;"), "on the chart too");
}

proptest! {
    /// However many labels and wherever they are, no two in one row touch,
    /// each stays on its run's side, and placing is repeatable.
    #[test]
    fn run_labels_never_overlap(
        labels in prop::collection::vec((0.0f64..800.0, 1usize..61, any::<bool>()), 0..30)
    ) {
        let labels: Vec<(f64, usize, Anchor)> = labels
            .into_iter()
            .map(|(x, n, start)| (x + 30.0, n, if start { Anchor::Start } else { Anchor::End }))
            .collect();
        let placed = place(&labels, 4.0, 856.0);
        prop_assert_eq!(placed.len(), labels.len());
        prop_assert_eq!(&placed, &place(&labels, 4.0, 856.0));
        for (i, a) in placed.iter().enumerate() {
            prop_assert!(a.from <= a.x && a.x <= a.to);
            let w = labels[i].1 as f64 * super::CHAR_W;
            prop_assert!((a.to - a.from - w - 2.0).abs() < 1e-9);
            prop_assert!(a.row <= i, "a new row only when every earlier one is taken");
            for b in &placed[..i] {
                if a.row == b.row {
                    prop_assert!(a.to < b.from || b.to < a.from, "{:?} and {:?} overlap", a, b);
                }
            }
        }
    }
}
