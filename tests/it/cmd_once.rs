//! `--setup-once` and `--cleanup-once`: hyperfine's once-per-benchmark
//! `--setup`/`--cleanup`, run by kdelta's parent once per command (per
//! point of the sweep), every set-up before the first timed run and every
//! clean-up after the last worker, also when the run fails or is
//! interrupted; a failing set-up stops the run before anything is stored.

use crate::common::{Env, NO_QUIET_WAIT};
use std::time::{Duration, Instant};

/// `kdelta run cmd` with tiny counts and the arguments given.
fn run(e: &Env, args: &[&str]) -> std::process::Output {
    let mut all = vec!["run", "cmd", "--config", "up", "--format", "json"];
    all.extend_from_slice(&NO_QUIET_WAIT);
    all.extend_from_slice(args);
    e.cmd().args(&all).output().unwrap()
}

fn lines(log: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(log).unwrap_or_default().lines().map(str::to_string).collect()
}

#[test]
fn setup_once_and_cleanup_once_run_once_per_command_around_every_worker() {
    let e = Env::new();
    let log = e.dir.path().join("log");
    let l = log.to_str().unwrap();
    // Each command reads the line its own set-up wrote: run before it.
    let cmd = format!("grep -q 'setup {{t}}' {l}");
    let (setup_once, cleanup_once, setup) =
        (format!("echo setup {{t}} >> {l}"), format!("echo cleanup {{t}} >> {l}"), format!("echo worker >> {l}"));
    let args = [
        "--cmd",
        &cmd,
        "--param",
        "t=1,2",
        "--interleave",
        "workers",
        "--runs",
        "3",
        "--setup-once",
        &setup_once,
        "--cleanup-once",
        &cleanup_once,
        "--setup",
        &setup,
    ];
    let out = run(&e, &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for r in v["results"].as_array().unwrap() {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["params"]["setup_once"], setup_once, "{r}");
    }
    let got = lines(&log);
    let workers = got.iter().filter(|x| *x == "worker").count();
    assert!(workers >= 2, "several workers ran: {got:?}");
    // hyperfine's order would be setup 1, runs of 1, cleanup 1, setup 2...:
    // interleaved, every set-up comes first and every clean-up last.
    assert_eq!(got[..2], ["setup 1", "setup 2"], "{got:?}");
    assert_eq!(got[got.len() - 2..], ["cleanup 1", "cleanup 2"], "{got:?}");
    assert_eq!(got.len(), workers + 4, "{got:?}");
}

#[test]
fn a_failing_setup_once_stops_the_run_before_anything_is_stored() {
    let e = Env::new();
    let log = e.dir.path().join("log");
    let l = log.to_str().unwrap();
    let setup_once = format!("echo setup {{t}} >> {l}; test {{t}} = 1 || {{ echo no room >&2; exit 3; }}");
    let (cleanup_once, setup) = (format!("echo cleanup {{t}} >> {l}"), format!("echo worker >> {l}"));
    let args = [
        "--cmd",
        "true {t}",
        "--param",
        "t=1,2",
        "--runs",
        "1",
        "--setup-once",
        &setup_once,
        "--cleanup-once",
        &cleanup_once,
        "--setup",
        &setup,
    ];
    let out = run(&e, &args);
    let err = String::from_utf8_lossy(&out.stderr);
    // As a failing --setup fails its result: exit 1, here for the whole run.
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--setup-once") && err.contains("cmd=") && err.contains("exit status 3; stderr ends: no room"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    // Nothing measured, nothing stored; the command set up is put back.
    assert_eq!(lines(&log), ["setup 1", "setup 2", "cleanup 1"]);
    let runs = e.cmd().args(["runs", "--json"]).output().unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&runs.stdout).unwrap_or(serde_json::Value::Null);
    assert!(listed.as_array().is_none_or(|a| a.is_empty()), "{listed}");
}

#[test]
fn cleanup_once_runs_when_the_run_fails_or_is_interrupted() {
    let e = Env::new();
    let log = e.dir.path().join("log");
    let l = log.to_str().unwrap();
    let cleanup_once = format!("echo cleanup >> {l}");
    // A command that fails: its result fails, the clean-up still runs.
    let out = run(&e, &["--cmd", "exit 4", "--runs", "1", "--cleanup-once", &cleanup_once]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(lines(&log), ["cleanup"]);
    // Ctrl-C in the middle of the run.
    std::fs::remove_file(&log).unwrap();
    let setup = format!("echo worker >> {l}");
    let mut k = e
        .spawnable()
        .args(["run", "cmd", "--config", "up", "--runs", "50", "--cmd", "sleep 0.2"])
        .args(NO_QUIET_WAIT)
        .args(["--setup", &setup, "--cleanup-once", &cleanup_once])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !lines(&log).contains(&"worker".to_string()) && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(k.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    assert_eq!(k.wait().unwrap().code(), Some(130));
    assert_eq!(lines(&log).last().map(String::as_str), Some("cleanup"), "{:?}", lines(&log));
    assert_eq!(lines(&log).iter().filter(|x| *x == "cleanup").count(), 1);
}
