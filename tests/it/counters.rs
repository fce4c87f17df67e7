//! `--counters` end to end on the real binary: counts stored with every
//! sample, shown per operation under each result by run, show and compare,
//! compared as figures are, events the machine cannot count said
//! unavailable with the reason (never a zero), and `+counters=off`.

use crate::common::{assert_ok, json, output_json, Env};

/// Whether this process may open perf events of its own tasks at all.
fn perf_usable(e: &Env) -> bool {
    let out = e
        .cmd()
        .args(["run", "lat.syscall", "--runs", "1", "--sample-time", "1ms", "--warmup", "0s", "--config", "up"])
        .args(["--counters", "--format", "json"])
        .output()
        .unwrap();
    assert_ok(&out);
    let v = json(&out.stdout);
    let r = &v["results"][0];
    let counted = r["samples_meta"][0].get("counters").is_some_and(|c| c.get("task-clock").is_some());
    // Skipped only where the kernel refused, and said why: counting that
    // silently took nothing is a failure.
    let refused = r["extras"]["counters_unavailable"].get("task-clock").is_some();
    assert!(counted || refused, "--counters took no counts and gave no reason: {r}");
    if !counted {
        eprintln!("skipped: no perf event could be opened here: {}", r["extras"]);
    }
    counted
}

fn run(e: &Env, args: &[&str]) -> serde_json::Value {
    let mut a = vec!["run", "--sample-time", "2ms", "--warmup", "0s", "--runs", "3", "--format", "json"];
    a.extend_from_slice(args);
    output_json(e.cmd().args(&a))
}

#[test]
fn every_sample_carries_its_counts_and_rows_show_them_per_operation() {
    let e = Env::new();
    if !perf_usable(&e) {
        return;
    }
    let v = run(&e, &["lat.syscall", "lat.pipe", "--config", "up,cpus=0-1", "--counters"]);
    let results = v["results"].as_array().unwrap();
    let pipe: Vec<&serde_json::Value> =
        results.iter().filter(|r| r["benchmark"] == "lat.pipe" && r["extras"].get("counter").is_none()).collect();
    assert_eq!(pipe.len(), 2);
    for r in &pipe {
        for m in r["samples_meta"].as_array().unwrap() {
            let c = &m["counters"];
            // A pipe round trip switches at least twice (each side waits once).
            let ops = m.get("iterations").unwrap_or(&r["iterations"]).as_f64().unwrap();
            let per_op = c["context-switches"].as_f64().unwrap() / ops;
            assert!(per_op >= 1.5, "{m}");
            assert!(c["task-clock"].as_u64().unwrap() > 0);
        }
    }
    // Derived rows follow their result, one per counted event.
    let names: Vec<&str> = results.iter().map(|r| r["benchmark"].as_str().unwrap()).collect();
    let at = names.iter().position(|n| *n == "lat.pipe").unwrap();
    assert_eq!(names[at + 1], "lat.pipe ctx-switches", "{names:?}");
    let row = v["comparisons"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["benchmark"] == "lat.pipe ctx-switches")
        .unwrap()
        .clone();
    assert_eq!(row["counter"], "context-switches");
    assert_eq!(row["unit"], "/op");
    assert!(row["cells"][0]["median"].as_f64().unwrap() >= 1.5);
    // The family's geometric mean is of its figures only.
    let geo = &v["comparisons"][0]["geomeans"][0];
    assert_eq!(geo["of"], 2, "{geo}");
    // Hardware events are counted, or said unavailable with the reason: never a zero.
    let syscall = results.iter().find(|r| r["benchmark"] == "lat.syscall").unwrap();
    let counted = syscall["samples_meta"][0]["counters"].as_object().unwrap();
    let missing =
        syscall["extras"].get("counters_unavailable").and_then(|m| m.as_object()).cloned().unwrap_or_default();
    for ev in ["cycles", "instructions"] {
        assert!(counted.contains_key(ev) != missing.contains_key(ev), "{ev}: {counted:?} {missing:?}");
    }
    if let Some(why) = missing.get("cycles") {
        assert!(why.as_str().unwrap().contains("perf_event_open"), "{why}");
        let notes = v["notes"].as_array().unwrap();
        assert_eq!(notes.iter().filter(|n| n.as_str().unwrap().contains("cycles")).count(), 1, "said once: {notes:?}");
    }
}

#[test]
fn show_and_compare_add_counter_rows_only_when_asked() {
    let e = Env::new();
    if !perf_usable(&e) {
        return;
    }
    let v = run(&e, &["lat.syscall", "--config", "up,up+counters=off", "--counters"]);
    // Counting on and off take turns in the same workers (what counting
    // costs is then read between neighbouring samples of one process).
    let jobs = |v: &serde_json::Value, cfg: &str| -> std::collections::BTreeSet<u64> {
        let r = v["results"].as_array().unwrap().iter().find(|r| r["config"] == cfg).unwrap();
        r["samples_meta"].as_array().unwrap().iter().map(|m| m["job"].as_u64().unwrap()).collect()
    };
    assert!(!jobs(&v, "up").is_empty());
    assert_eq!(jobs(&v, "up"), jobs(&v, "up+counters=off"));
    // Not when the user asks for a worker per point.
    let apart = run(&e, &["lat.syscall", "--config", "up,up+counters=off", "--counters", "--interleave", "workers"]);
    assert!(jobs(&apart, "up").is_disjoint(&jobs(&apart, "up+counters=off")));
    let text = |args: &[&str]| {
        let out = e.cmd().args(args).output().unwrap();
        assert_ok(&out);
        String::from_utf8(out.stdout).unwrap()
    };
    let plain = text(&["show", "2"]);
    assert!(!plain.contains("lat.syscall task-clock"), "{plain}");
    let shown = text(&["show", "2", "--counters"]);
    assert!(shown.contains("lat.syscall task-clock"), "{shown}");
    let compared = text(&["compare", "2", "--counters"]);
    assert!(compared.contains("lat.syscall task-clock"), "{compared}");
    // `+counters=off` took none in its configuration, so its counter cells are empty.
    let out = e.cmd().args(["show", "2", "--counters", "--format", "json"]).output().unwrap();
    let v = json(&out.stdout);
    let off: Vec<&serde_json::Value> =
        v["results"].as_array().unwrap().iter().filter(|r| r["config"] == "up+counters=off").collect();
    assert_eq!(off.len(), 1, "only the figure, no counter rows: {off:?}");
    assert!(off[0]["samples_meta"].as_array().unwrap().iter().all(|m| m.get("counters").is_none()));
}

#[test]
fn a_bad_counters_value_is_refused_before_the_run() {
    let e = Env::new();
    let out = e.cmd().args(["run", "lat.syscall", "--config", "up+counters=maybe"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("\"maybe\"") && err.contains("on, off"), "{err}");
    assert!(!e.db().exists() || e.cmd().args(["runs"]).output().unwrap().stdout.is_empty());
}
