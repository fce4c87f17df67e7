//! `kdelta report` on the real binary: a page of two real (tiny) runs with
//! every section, and its bad inputs refused with exit status 2, nothing
//! written. The page's rendering in a browser is tested in
//! `src/report/html/browser.rs`.

mod common;
use common::Env;

fn two_runs(e: &Env) {
    e.cmd()
        .args(["run", "test.sleep", "--param", "us=10,40", "--config", "up,noht", "--runs", "2", "--sample-time", "1ms", "--label", "swept"])
        .assert()
        .success();
    e.cmd().args(["run", "test.sleep", "--config", "up", "--runs", "1", "--sample-time", "1ms", "--label", "flat"]).assert().success();
}

#[test]
fn a_page_of_two_runs_has_every_section() {
    let e = Env::new();
    two_runs(&e);
    let page = e.dir.path().join("r.html");
    let out = e.cmd().args(["report", "swept", "flat", "swept", "-o"]).arg(&page).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("wrote") && err.contains("2 run(s)"), "{err}");
    let h = std::fs::read_to_string(&page).unwrap();
    assert!(h.starts_with("<!DOCTYPE html>") && h.ends_with("</html>\n"));
    for part in ["command", "tables", "charts", "host", "warnings"] {
        assert_eq!(h.matches(&format!("-{part}\">")).count(), 2, "{part} once per run");
    }
    // The exact command, quoted as a shell would take it back.
    assert!(h.contains(" run test.sleep --param us=10,40 --config up,noht --runs 2 --sample-time 1ms --label swept</pre>"), "command not shown");
    assert!(h.contains("data-kind=\"lines\"") && h.contains("data-kind=\"speedup\"") && h.contains("data-kind=\"bars\""));
    assert!(h.contains("test.sleep over us") && h.contains("lower is better"));
    assert!(h.contains("id=\"compare\"") && h.contains("against run"));
    assert!(h.contains("<th>kernel</th>") && h.contains("<th>preemption</th>") && h.contains("<th>C library</th>"));
    assert!(!h.contains("<script") && !h.contains("http"));
    assert_eq!(std::fs::read_dir(e.dir.path()).unwrap().filter(|d| d.as_ref().unwrap().file_name().to_string_lossy().starts_with(".kdelta-report-")).count(), 0);
}

#[test]
fn bad_inputs_are_refused_and_nothing_is_written() {
    let e = Env::new();
    // No database yet.
    let page = e.dir.path().join("r.html");
    let out = e.cmd().args(["report", "1", "-o"]).arg(&page).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no results database"));
    e.cmd().args(["run", "test.sleep", "--config", "up", "--runs", "1", "--sample-time", "1ms"]).assert().success();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["nosuch".into(), "-o".into(), page.display().to_string()], "no run \"nosuch\""),
        (vec!["1".into(), "-o".into(), e.dir.path().join("missing/r.html").display().to_string()], "does not exist"),
        (vec!["1".into(), "-o".into(), e.dir.path().display().to_string()], "is a directory"),
    ];
    for (args, says) in cases {
        let out = e.cmd().arg("report").args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says) && err.lines().count() == 1, "{args:?}: {err}");
    }
    assert!(!page.exists());
    // -o is required, and at least one run.
    assert_eq!(e.cmd().args(["report", "1"]).output().unwrap().status.code(), Some(2));
    assert_eq!(e.cmd().args(["report", "-o"]).arg(&page).output().unwrap().status.code(), Some(2));
}

#[test]
fn selections_add_every_finished_run_they_pick() {
    let e = Env::new();
    for _ in 0..2 {
        e.cmd().args(["run", "test.sleep", "--config", "up", "--runs", "1", "--sample-time", "1ms", "--label", "nightly"]).assert().success();
    }
    e.cmd().args(["run", "test.sleep", "--config", "up", "--runs", "1", "--sample-time", "1ms", "--label", "other"]).assert().success();
    let page = e.dir.path().join("r.html");
    // A label as a selection takes both of its runs (as a name, only the newest).
    let out = e.cmd().args(["report", "--label", "nightly", "-o"]).arg(&page).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("2 run(s)"), "{err}");
    let h = std::fs::read_to_string(&page).unwrap();
    assert!(h.contains("run 1 (nightly)") && h.contains("run 2 (nightly)") && !h.contains("(other)"));
    // The host this machine has, with a run named as well.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string();
    let out = e.cmd().args(["report", "3", "--host", &host, "-o"]).arg(&page).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("3 run(s)"));
    // A selection that picks nothing is bad input.
    let out = e.cmd().args(["report", "--kernel", "0.0-none", "-o"]).arg(&page).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no finished run matches"));
}
