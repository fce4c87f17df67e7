//! Faults: killed and hung workers, bad databases, concurrent writers, Ctrl-C.

use crate::common::*;
use predicates::prelude::*;
use std::time::Duration;

#[test]
fn a_killed_worker_fails_alone() {
    let e = Env::new();
    let out = e
        .cmd()
        .args(["run", "test.crash", "test.sleep", "test.fail", "--format", "json"])
        .args(ONE_SAMPLE)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json(&out.stdout);
    let by = |n: &str| v["results"].as_array().unwrap().iter().find(|r| r["benchmark"] == n).unwrap().clone();
    assert_eq!(by("test.crash")["status"], "failed");
    assert!(by("test.crash")["reason"].as_str().unwrap().contains("SIGKILL"));
    assert_eq!(by("test.fail")["status"], "failed");
    assert!(by("test.fail")["reason"].as_str().unwrap().contains("deliberate failure"));
    assert_eq!(by("test.sleep")["status"], "ok");
    // All three were stored.
    let out = e.cmd().args(["export", "1", "--format", "json"]).output().unwrap();
    assert_eq!(json(&out.stdout)["results"].as_array().unwrap().len(), 3);
    assert!(e.tmp_leftovers().is_empty());
}

#[test]
fn a_hung_worker_is_killed_at_its_limit() {
    let e = Env::new();
    let t = std::time::Instant::now();
    let out = e.cmd().args(["run", "test.hang", "--runs", "1", "--format", "json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(t.elapsed() < Duration::from_secs(30));
    let v = json(&out.stdout);
    assert!(v["results"][0]["reason"].as_str().unwrap().contains("timed out"));
}

#[test]
fn two_writers_at_once_both_succeed() {
    let e = Env::new();
    let spawn = |label: &str| {
        std::process::Command::new(assert_cmd::cargo::cargo_bin("kdelta"))
            .env("KDELTA_DB", e.db())
            .env("TMPDIR", e.tmp())
            .env("KDELTA_TEST_BENCHES", "1")
            .args([
                "run",
                "test.sleep",
                "--param",
                "us=20,40,60",
                "--runs",
                "2",
                "--sample-time",
                "1ms",
                "--label",
                label,
            ])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let (mut a, mut b) = (spawn("a"), spawn("b"));
    assert!(a.wait().unwrap().success());
    assert!(b.wait().unwrap().success());
    let out = e.cmd().args(["runs", "--json"]).output().unwrap();
    let v = json(&out.stdout);
    let runs = v.as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        assert_eq!(r["status"], "complete");
        assert_eq!(r["results"], 3);
    }
}

#[test]
fn ctrl_c_marks_the_run_incomplete_and_cleans_up() {
    let e = Env::new();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("kdelta"))
        .env("KDELTA_DB", e.db())
        .env("TMPDIR", e.tmp())
        .env("KDELTA_TEST_BENCHES", "1")
        .args(["run", "test.sleep", "--param", "us=1000", "--runs", "1000", "--sample-time", "20ms"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let v = json(&e.cmd().args(["runs", "--json"]).output().unwrap().stdout);
    assert_eq!(v[0]["status"], "incomplete");
    assert!(e.tmp_leftovers().is_empty(), "left behind: {:?}", e.tmp_leftovers());
    // No worker survives: none of our processes has the test TMPDIR.
    std::thread::sleep(Duration::from_millis(200));
    let strays = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|d| d.ok())
        .filter(|d| {
            std::fs::read(d.path().join("environ"))
                .map(|env| String::from_utf8_lossy(&env).contains(&*e.tmp().to_string_lossy()))
                .unwrap_or(false)
        })
        .count();
    assert_eq!(strays, 0, "worker processes left behind");
    // An incomplete run is never taken as the latest for compare.
    e.cmd().arg("compare").assert().code(2).stderr(predicate::str::contains("no complete run"));
}

#[test]
fn a_corrupt_results_file_fails_its_point_alone_with_the_reason() {
    let e = Env::new();
    let out = e
        .cmd()
        .args(["run", "test.garble", "test.sleep", "--param", "file=garbage,truncated", "--format", "json"])
        .args(ONE_SAMPLE)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // The usual status of a run with a failed result, not an error.
    assert_eq!(out.status.code(), Some(1), "{err}");
    let check = |v: &serde_json::Value| {
        let results = v["results"].as_array().unwrap();
        assert_eq!(results.len(), 3, "{v}");
        for r in results.iter().filter(|r| r["benchmark"] == "test.garble") {
            assert_eq!(r["status"], "failed", "{r}");
            assert!(r["reason"].as_str().unwrap().starts_with("worker results file unreadable: "), "{r}");
        }
        let sleep = results.iter().find(|r| r["benchmark"] == "test.sleep").unwrap();
        assert_eq!(sleep["status"], "ok", "{sleep}");
    };
    check(&json(&out.stdout));
    // Stored so, and the run closed normally.
    check(&json(&e.cmd().args(["export", "1", "--format", "json"]).output().unwrap().stdout));
    assert_eq!(json(&e.cmd().args(["runs", "--json"]).output().unwrap().stdout)[0]["status"], "complete");
    assert!(e.tmp_leftovers().is_empty(), "{:?}", e.tmp_leftovers());
}
