//! `kdelta report --history` on the real binary: a store filled with runs
//! (written straight through `kdelta::testing::stored`, each with a commit
//! in its metadata) where one benchmark steps up, drawn as a page whose
//! chart and tables show the change point; hostile stored text shown as
//! text; bad input refused on one line with nothing written.

use crate::common::Env;
use crate::common::{assert_ok, samples};
use kdelta::testing::stored::{store_run_with_meta, StoredResult, StoredRun};

/// `n` runs labelled `label` on host `host`, run `i` carrying
/// `commit=c{i}`: `lat.syscall` (under `config`) steps up by 5 % at run
/// `step`, `lat.pipe` stays flat.
fn fill(e: &Env, n: usize, step: usize, label: &str, host: &str, config: &str) -> Vec<i64> {
    (0..n)
        .map(|i| {
            let level = if i >= step { 105.0 } else { 100.0 };
            let (a, b) = (samples(level, i), samples(50.0, i + 100));
            let started = format!("2024-05-{:02}T10:{:02}:00Z", i / 60 + 1, i % 60);
            let run = StoredRun { label: Some(label), started: &started, hostname: host, kernel: "6.1.0" };
            let results = [
                StoredResult { benchmark: "lat.syscall", params: &[("size", "0")], config, samples: &a },
                StoredResult { benchmark: "lat.pipe", params: &[], config, samples: &b },
            ];
            let commit = format!("c{i:02}");
            store_run_with_meta(&e.db(), &run, &[("commit", &commit)], &results).unwrap()
        })
        .collect()
}

/// `kdelta report --history ARGS -o page.html`: its output and the page.
fn report(e: &Env, args: &[&str]) -> (std::process::Output, Option<String>) {
    let page = e.dir.path().join("page.html");
    let _ = std::fs::remove_file(&page);
    let out = e.cmd().args(["report", "--history"]).args(args).arg("-o").arg(&page).output().unwrap();
    (out, std::fs::read_to_string(&page).ok())
}

fn count(s: &str, pat: &str) -> usize {
    s.matches(pat).count()
}

#[test]
fn the_page_shows_the_step_where_it_is() {
    let e = Env::new();
    let ids = fill(&e, 24, 12, "nightly", "alpha", "up");
    let (out, page) = report(&e, &["lat", "--label", "nightly", "--seed", "3"]);
    assert_ok(&out);
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("2 series, 1 change point(s)"), "{err}");
    let h = page.unwrap();
    assert!(h.starts_with("<!DOCTYPE html>") && h.contains("<title>kdelta history: lat</title>"));
    let charts: Vec<&str> = h.split("<svg ").skip(1).map(|s| s.split("</svg>").next().unwrap()).collect();
    assert_eq!(charts.len(), 2, "a chart per series");
    let sys = charts.iter().find(|c| c.contains("lat.syscall")).unwrap();
    assert_eq!(count(sys, "<circle class=\"run\""), 24);
    assert_eq!(count(sys, "<line class=\"change\""), 1);
    assert_eq!(count(sys, "<line class=\"segment\""), 2);
    // The change, about +5 %, written on the chart with its interval.
    let label = sys.split("class=\"change-label\"").nth(1).unwrap().split('>').nth(1).unwrap();
    assert!(label.starts_with("1: +") && label.contains("% [+") && label.contains("worse"), "{label}");
    // The runs either side, named with their commits under the plot.
    assert!(sys.contains(&format!(">run {} · commit=c11 · ", ids[11])), "{sys}");
    assert!(sys.contains(&format!(">run {} · commit=c12 · ", ids[12])));
    let pipe = charts.iter().find(|c| c.contains("lat.pipe")).unwrap();
    assert_eq!(count(pipe, "<line class=\"change\""), 0);
    // The tables: the change point and every run with its metadata.
    let changes = h.split("<table class=\"changes\">").nth(1).unwrap().split("</table>").next().unwrap();
    assert!(changes.contains(&format!("run {} (2024-05-01T10:11:00Z, nightly) commit=c11", ids[11])));
    assert!(changes.contains(&format!("run {} (2024-05-01T10:12:00Z, nightly) commit=c12", ids[12])));
    assert!(changes.contains("agree (p"));
    for i in 0..24 {
        assert!(h.contains(&format!("<td class=\"meta\">commit=c{i:02}</td>")), "run {i} in the table");
    }
    assert!(!h.contains("<script"));
}

#[test]
fn hostile_stored_text_is_shown_as_text() {
    let e = Env::new();
    let mark = "<script>alert(1)</script>\"><svg onload=alert(2)>";
    let label = format!("l{mark}");
    let host = format!("h{mark}");
    let config = format!("up{mark}");
    for i in 0..4 {
        let s = samples(100.0, i);
        let run = StoredRun { label: Some(&label), started: "2024-05-01T00:00:00Z", hostname: &host, kernel: "6.1" };
        let r = [StoredResult { benchmark: "lat.syscall", params: &[("size", mark)], config: &config, samples: &s }];
        store_run_with_meta(&e.db(), &run, &[("commit", mark)], &r).unwrap();
    }
    let (out, page) = report(&e, &["lat.syscall", "--title", "hostile"]);
    assert_ok(&out);
    let h = page.unwrap();
    assert_eq!(count(&h, "<svg "), 1, "the one chart, no element from the stored text");
    assert!(!h.contains("<script") && !h.contains("<svg onload"), "live markup in the page");
    let shown = "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;svg onload=alert(2)&gt;";
    for text in [format!("l{shown}"), format!("h{shown}"), format!("up{shown}"), format!("commit={shown}")] {
        assert!(h.contains(&text), "{text} is not shown");
    }
    assert!(h.contains("too few runs to look for a change point: 4, it takes 10"));
}

#[test]
fn bad_input_is_one_line_exit_2_and_no_page() {
    let e = Env::new();
    fill(&e, 3, 1, "nightly", "alpha", "up");
    for (args, said) in [
        (&["lat", "--label", "nope"][..], "unknown label \"nope\": no stored run has it; stored: nightly"),
        (&["lat", "--host", "gamma"], "unknown host \"gamma\": no stored run has it; stored: alpha"),
        (&["nosuch"], "unknown benchmark \"nosuch\""),
        (&["lat", "--config", "smp2"], "no stored result of lat matches --config \"smp2\""),
        (&["lat", "--alpha", "1.5"], "--alpha 1.5 is out of range"),
    ] {
        let (out, page) = report(&e, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(said), "{args:?}: {err}");
        assert!(page.is_none(), "{args:?}: a page was written");
    }
    // The search settings belong to --history.
    let out = e.cmd().args(["report", "1", "--alpha", "0.1", "-o"]).arg(e.dir.path().join("x.html")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--alpha") && err.contains("cannot be used with"), "{err}");
    // Runs and --history are one or the other.
    let out =
        e.cmd().args(["report", "1", "--history", "lat", "-o"]).arg(e.dir.path().join("x.html")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    // An output that is a directory is refused before the store is read.
    let out = e.cmd().args(["report", "--history", "lat", "-o"]).arg(e.dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is a directory"));
}
