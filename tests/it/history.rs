//! `kdelta history` on the real binary: a store filled with a series of
//! runs (written straight through `kdelta::testing::stored`), the step found
//! where it is, every format, and bad input refused on one line.

use crate::common::{assert_ok, json, Env};
use crate::common::{nightly_series, samples};
use kdelta::testing::stored::{store_run, StoredResult, StoredRun};
use predicates::prelude::*;

fn history(e: &Env, args: &[&str]) -> std::process::Output {
    e.cmd().arg("history").args(args).output().unwrap()
}

fn ok_json(e: &Env, args: &[&str]) -> serde_json::Value {
    let mut a = args.to_vec();
    a.extend(["--format", "json"]);
    let out = history(e, &a);
    assert_ok(&out);
    json(&out.stdout)
}

#[test]
fn the_step_is_found_where_it_is() {
    let e = Env::new();
    let ids = nightly_series(&e, 24, 12);
    let v = ok_json(&e, &["lat"]);
    assert_eq!(v["alpha"], 0.05);
    assert_eq!(v["min_segment"], 5);
    let series = v["series"].as_array().unwrap();
    assert_eq!(series.len(), 2);
    let sys = series.iter().find(|s| s["benchmark"] == "lat.syscall").unwrap();
    assert_eq!(sys["host"], "alpha");
    assert_eq!(sys["runs"].as_array().unwrap().len(), 24);
    let changes = sys["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    let c = &changes[0];
    assert_eq!(c["index"], 12);
    assert_eq!(c["last_before"]["id"], ids[11]);
    assert_eq!(c["first_after"]["id"], ids[12]);
    assert_eq!(c["first_after"]["label"], "nightly");
    let pct = c["change_pct"].as_f64().unwrap();
    assert!((pct - 5.0).abs() < 1.0, "{pct}");
    let ci = c["ci_pct"].as_array().unwrap();
    assert!(ci[0].as_f64().unwrap() < pct && pct < ci[1].as_f64().unwrap());
    assert_eq!(c["samples_agree"], true);
    let pipe = series.iter().find(|s| s["benchmark"] == "lat.pipe").unwrap();
    assert!(pipe["changes"].as_array().unwrap().is_empty());
    // Each run's median carries its interval (8 samples).
    assert!(sys["runs"][0]["ci"].is_array());
}

#[test]
fn every_format_shows_the_change() {
    let e = Env::new();
    let ids = nightly_series(&e, 20, 10);
    let before = format!("run {}", ids[9]);
    let after = format!("run {}", ids[10]);
    let text = history(&e, &["lat.syscall"]);
    assert!(text.status.success());
    let t = String::from_utf8(text.stdout).unwrap();
    assert!(t.contains("lat.syscall  size=0  config up  host alpha"), "{t}");
    assert!(t.contains("1 change point(s)") && t.contains(&before) && t.contains(&after), "{t}");
    assert!(t.contains("worse") && t.contains("samples agree"), "{t}");
    let md = history(&e, &["lat.syscall", "--format", "markdown"]);
    let m = String::from_utf8(md.stdout).unwrap();
    assert!(m.starts_with("### lat.syscall") && m.contains("| run | started |") && m.contains(&after), "{m}");
    let csv = history(&e, &["lat.syscall", "--format", "csv"]);
    let c = String::from_utf8(csv.stdout).unwrap();
    let lines: Vec<&str> = c.lines().collect();
    assert_eq!(lines.len(), 21, "{c}");
    assert!(lines[0].starts_with("benchmark,params,config,host,unit,better,run,"));
    // The first run after the change starts segment 1 and carries the change.
    let first_after = lines[11].split(',').collect::<Vec<_>>();
    assert_eq!(first_after[6], ids[10].to_string());
    assert_eq!(first_after[13], "1");
    assert!(first_after[14].parse::<f64>().unwrap() > 3.0);
    assert_eq!(lines[10].split(',').nth(13), Some("0"));
}

#[test]
fn filters_and_the_same_seed() {
    let e = Env::new();
    nightly_series(&e, 12, 6);
    let other = StoredRun { label: Some("other"), started: "2024-06-01T00:00:00Z", hostname: "beta", kernel: "6.8.0" };
    let s = samples(100.0, 0);
    let r = [StoredResult { benchmark: "lat.syscall", params: &[("size", "0")], config: "up", samples: &s }];
    store_run(&e.db(), &other, &r).unwrap();
    // Two hosts: two series of lat.syscall, one run on beta.
    let v = ok_json(&e, &["lat.syscall"]);
    assert_eq!(v["series"].as_array().unwrap().len(), 2);
    let v = ok_json(&e, &["lat.syscall", "--host", "beta"]);
    assert_eq!(v["series"][0]["runs"].as_array().unwrap().len(), 1);
    assert_eq!(v["series"][0]["too_short"], serde_json::json!([1, 10]));
    let v = ok_json(&e, &["lat.syscall", "--label", "nightly", "--since", "2024-05-04", "--param", "size=0"]);
    assert_eq!(v["series"][0]["runs"].as_array().unwrap().len(), 9);
    let v = ok_json(&e, &["lat.syscall", "--kernel", "6.1.0", "--config", "up", "--min-segment", "3"]);
    assert_eq!(v["series"][0]["runs"].as_array().unwrap().len(), 12);
    // The same seed gives the same answer.
    let a = history(&e, &["lat", "--host", "alpha", "--seed", "7", "--permutations", "99"]).stdout;
    let b = history(&e, &["lat", "--host", "alpha", "--seed", "7", "--permutations", "99"]).stdout;
    assert_eq!(a, b);
}

#[test]
fn too_few_runs_are_said() {
    let e = Env::new();
    nightly_series(&e, 6, 3);
    let out = history(&e, &["lat.syscall"]);
    assert!(out.status.success());
    let t = String::from_utf8(out.stdout).unwrap();
    assert!(t.contains("too few runs to look for a change point: 6, it takes 10 (2 x --min-segment 5)"), "{t}");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let e = Env::new();
    nightly_series(&e, 3, 1);
    for (args, said) in [
        (&["lat", "--label", "nope"][..], "unknown label \"nope\": no stored run has it; stored: nightly"),
        (&["lat", "--host", "gamma"], "unknown host \"gamma\": no stored run has it; stored: alpha"),
        (&["lat", "--kernel", "2.6"], "unknown kernel \"2.6\""),
        (&["nosuch"], "unknown benchmark \"nosuch\""),
        (&["lat", "--since", "2030-01-01"], "no complete run"),
        (&["lat", "--config", "smp2"], "no stored result of lat matches --config \"smp2\""),
        (&["lat", "--since", "May"], "--since \"May\" is not a date"),
        (&["lat", "--alpha", "1.5"], "--alpha 1.5 is out of range"),
        (&["lat", "--min-segment", "0"], "--min-segment 0 is out of range"),
    ] {
        let out = history(&e, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(said), "{args:?}: {err}");
        assert!(out.stdout.is_empty());
    }
    // No database at all.
    let empty = Env::new();
    empty.cmd().args(["history", "lat"]).assert().code(2).stderr(predicate::str::contains("no results database"));
}

#[test]
fn runs_are_chosen_by_their_metadata() {
    let e = Env::new();
    for commit in ["a", "b", "b"] {
        let out = e
            .cmd()
            .args(["run", "test.sleep", "--runs", "2", "--sample-time", "1ms", "--warmup", "0s", "--meta"])
            .arg(format!("commit={commit}"))
            .output()
            .unwrap();
        assert_ok(&out);
    }
    let v = ok_json(&e, &["test.sleep", "--min-segment", "1", "--meta", "commit=b"]);
    let runs = v["series"][0]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{v}");
    let out = history(&e, &["test.sleep", "--meta", "commit=zzz"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.trim().lines().count() == 1 && err.contains("--meta commit=zzz"), "{err}");
}

/// Thirty runs in two speeds that take turns (near 30 and near 55), with a
/// 7 % step in both from run 16: searched speed by speed, the step is found
/// (the series as one is as wide as the gap) and the speeds are named.
#[test]
fn runs_in_two_alternating_speeds_are_searched_speed_by_speed() {
    let e = Env::new();
    let slow_at = [1, 2, 5, 7, 8, 11, 13, 14, 17, 19, 20, 22, 25, 26, 28];
    for i in 0..30 {
        let base = if slow_at.contains(&i) { 55.0 } else { 30.0 };
        let level = if i >= 16 { base * 1.07 } else { base };
        let a = samples(level, i);
        let started = format!("2024-06-{:02}T{:02}:00:00Z", i / 24 + 1, i % 24);
        let run = StoredRun { label: Some("nightly"), started: &started, hostname: "alpha", kernel: "6.1.0" };
        let results = [StoredResult { benchmark: "lat.syscall", params: &[], config: "up", samples: &a }];
        store_run(&e.db(), &run, &results).unwrap();
    }
    let v = ok_json(&e, &["lat.syscall"]);
    let s = &v["series"][0];
    assert_eq!(s["modes"]["low"]["workers"], 15, "{s}");
    let changes = s["changes"].as_array().unwrap();
    assert!(!changes.is_empty(), "{s}");
    for c in changes {
        let i = c["index"].as_u64().unwrap();
        assert!((16..=17).contains(&i), "{c}");
        let pct = c["change_pct"].as_f64().unwrap();
        assert!((pct - 7.0).abs() < 2.0, "{c}");
    }
    let out = history(&e, &["lat.syscall"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("runs in two speeds, taking turns (15 of 30 runs at"), "{text}");
}
