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

/// `run` with the arguments given, then `--setup-once SETUP_ONCE`, a
/// `--cleanup-once` that logs `cleanup {t}` and a `--setup` that logs `worker`.
fn run_logged(e: &Env, log: &Log, setup_once: &str, args: &[&str]) -> std::process::Output {
    let (cleanup_once, setup) = (log.echo("cleanup {t}"), log.echo("worker"));
    run(e, &[args, &["--setup-once", setup_once, "--cleanup-once", &cleanup_once, "--setup", &setup]].concat())
}

/// A file in the env's directory that the hooks append lines to.
struct Log(std::path::PathBuf);

impl Log {
    fn new(e: &Env) -> Log {
        Log(e.dir.path().join("log"))
    }
    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
    /// The shell command that appends `line` to the log.
    fn echo(&self, line: &str) -> String {
        format!("echo {line} >> {}", self.path())
    }
    fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.0).unwrap_or_default().lines().map(str::to_string).collect()
    }
}

#[test]
fn setup_once_and_cleanup_once_run_once_per_command_around_every_worker() {
    let e = Env::new();
    let log = Log::new(&e);
    // Each command reads the line its own set-up wrote: run before it.
    let cmd = format!("grep -q 'setup {{t}}' {}", log.path());
    let setup_once = log.echo("setup {t}");
    let args = ["--cmd", &cmd, "--param", "t=1,2", "--interleave", "workers", "--runs", "3"];
    let out = run_logged(&e, &log, &setup_once, &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for r in v["results"].as_array().unwrap() {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["params"]["setup_once"], setup_once, "{r}");
    }
    let got = log.lines();
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
    let log = Log::new(&e);
    let setup_once = format!("{}; test {{t}} = 1 || {{ echo no room >&2; exit 3; }}", log.echo("setup {t}"));
    let out = run_logged(&e, &log, &setup_once, &["--cmd", "true {t}", "--param", "t=1,2", "--runs", "1"]);
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
    assert_eq!(log.lines(), ["setup 1", "setup 2", "cleanup 1"]);
    let runs = e.cmd().args(["runs", "--json"]).output().unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&runs.stdout).unwrap_or(serde_json::Value::Null);
    assert!(listed.as_array().is_none_or(|a| a.is_empty()), "{listed}");
}

#[test]
fn cleanup_once_runs_when_the_run_fails_or_is_interrupted() {
    let e = Env::new();
    let log = Log::new(&e);
    let cleanup_once = log.echo("cleanup");
    // A command that fails: its result fails, the clean-up still runs.
    let out = run(&e, &["--cmd", "exit 4", "--runs", "1", "--cleanup-once", &cleanup_once]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(log.lines(), ["cleanup"]);
    // Ctrl-C in the middle of the run.
    std::fs::remove_file(&log.0).unwrap();
    let setup = log.echo("worker");
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
    while !log.lines().contains(&"worker".to_string()) && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(k.id() as i32), nix::sys::signal::Signal::SIGINT).unwrap();
    assert_eq!(k.wait().unwrap().code(), Some(130));
    assert_eq!(log.lines().last().map(String::as_str), Some("cleanup"), "{:?}", log.lines());
    assert_eq!(log.lines().iter().filter(|x| *x == "cleanup").count(), 1);
}
