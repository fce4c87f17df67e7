//! Shared helpers for the integration tests: a kdelta command with its own
//! database and temporary directory, and fake sysfs trees.
#![allow(dead_code)]

use assert_cmd::Command;
use std::path::{Path, PathBuf};

pub struct Env {
    pub dir: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tmp")).unwrap();
        Env { dir }
    }
    pub fn db(&self) -> PathBuf {
        self.dir.path().join("results.db")
    }
    pub fn tmp(&self) -> PathBuf {
        self.dir.path().join("tmp")
    }
    /// Its own state directory (`$XDG_STATE_HOME`): no record `kdelta
    /// doctor` made on this machine reaches a test unless the test writes it.
    pub fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }
    /// `kdelta` with this env's database, its own TMPDIR and the test family.
    pub fn cmd(&self) -> Command {
        Command::from_std(self.spawnable())
    }
    /// The same as a `std::process::Command`, to spawn and kill.
    pub fn spawnable(&self) -> std::process::Command {
        let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("kdelta"));
        c.env("KDELTA_DB", self.db())
            .env("TMPDIR", self.tmp())
            .env("KDELTA_TEST_BENCHES", "1")
            .env_remove("KDELTA_SYSFS_ROOT")
            .env("XDG_STATE_HOME", self.state())
            .env("NO_COLOR", "1");
        c
    }
    /// Entries left in the private TMPDIR (kdelta must leave none).
    pub fn tmp_leftovers(&self) -> Vec<String> {
        std::fs::read_dir(self.tmp()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
    }
}

/// For a test that measures a whole-run benchmark (`run cmd`, `check cmd`)
/// and accepts "cannot tell" from a busy machine: no waiting for quiet CPUs
/// after a disturbed sample (`--quiet-wait`, 3 s by default). On a busy
/// machine those waits made one such command take a minute instead of
/// seconds; the verdicts asserted are the same with or without them.
pub const NO_QUIET_WAIT: [&str; 2] = ["--quiet-wait", "0"];

/// The fake machines, one copy with the unit tests' (`kdelta::testing::fake`).
pub use kdelta::testing::fake::{knob_value, knobs as fake_knobs, sysfs as fake_sysfs};

pub fn json(out: &[u8]) -> serde_json::Value {
    serde_json::from_slice(out).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(out)))
}

/// `kdelta ARGS` with this env, which must exit 0: its output, as JSON.
#[track_caller]
pub fn ok_json(e: &Env, args: &[&str]) -> serde_json::Value {
    output_json(e.cmd().args(args))
}

/// `c` run, which must exit 0: its output, as JSON.
#[track_caller]
pub fn output_json(c: &mut Command) -> serde_json::Value {
    let out = c.output().unwrap();
    assert_ok(&out);
    json(&out.stdout)
}

/// The status of each result of a run's JSON (`ok`, `failed`, `unavailable`...).
pub fn statuses(v: &serde_json::Value) -> Vec<&str> {
    v["results"].as_array().unwrap().iter().map(|r| r["status"].as_str().unwrap()).collect()
}

/// `kdelta` with this env, reading the fake machine below `root`
/// (`KDELTA_SYSFS_ROOT`) and no outside journal.
pub fn sysfs_cmd(e: &Env, root: &Path) -> Command {
    let mut c = e.cmd();
    c.env("KDELTA_SYSFS_ROOT", root).env_remove("KDELTA_JOURNAL");
    c
}

/// The kernel settings' journal of the fake machine below `root`.
pub fn knobs_journal(root: &Path) -> PathBuf {
    root.join("run/kdelta/knobs.journal")
}

/// A deterministic wobble of about ±1 % around 1, different for each `i`.
pub fn wobble(i: usize, j: usize) -> f64 {
    let x = ((i * 7919 + j * 104_729) % 1000) as f64 / 1000.0;
    1.0 + (x - 0.5) * 0.02
}

/// Eight samples around `level`.
pub fn samples(level: f64, i: usize) -> Vec<f64> {
    (0..8).map(|j| level * wobble(i, j) * wobble(j + 3, i)).collect()
}

/// A fresh database on the test server (`KDELTA_TEST_PG`), dropped at the
/// end; `None` (the test skips) without a server, unless `KDELTA_REQUIRE_PG`
/// says one must be there: the unit tests' one (`kdelta::testing::TestDb`).
pub use kdelta::testing::TestDb as PgDb;

/// `n` runs labelled `nightly` on host `alpha`: `lat.syscall` steps up by 5 %
/// at run `step` (0-based), `lat.pipe` stays flat.
pub fn nightly_series(e: &Env, n: usize, step: usize) -> Vec<i64> {
    use kdelta::testing::stored::{store_run, StoredResult, StoredRun};
    (0..n)
        .map(|i| {
            let level = if i >= step { 105.0 } else { 100.0 };
            let (a, b) = (samples(level, i), samples(50.0, i + 100));
            let started = format!("2024-05-{:02}T10:00:00Z", i % 28 + 1);
            let run = StoredRun { label: Some("nightly"), started: &started, hostname: "alpha", kernel: "6.1.0" };
            let results = [
                StoredResult { benchmark: "lat.syscall", params: &[("size", "0")], config: "up", samples: &a },
                StoredResult { benchmark: "lat.pipe", params: &[], config: "up", samples: &b },
            ];
            store_run(&e.db(), &run, &results).unwrap()
        })
        .collect()
}

/// The smallest real run: one clean sample per result, each 1 ms long.
pub const ONE_SAMPLE: [&str; 4] = ["--runs", "1", "--sample-time", "1ms"];

/// The smallest run of `test.sleep`: one sample of 1 ms and no warm-up
/// (the configurations and the rest follow).
pub const TINY_SLEEP: [&str; 8] = ["run", "test.sleep", "--runs", "1", "--sample-time", "1ms", "--warmup", "0s"];

/// `c` spawned as `kdelta run test.sleep --config CONFIGS --param us=2000`
/// with 50 samples of 20 ms and the options `more`: a run long enough to be
/// interrupted while it holds what it changed; its output is dropped.
pub fn spawn_long_run(c: &mut std::process::Command, configs: &str, more: &[&str]) -> std::process::Child {
    c.args(["run", "test.sleep", "--config", configs, "--param", "us=2000"])
        .args(["--runs", "50", "--sample-time", "20ms"])
        .args(more)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// `out` exited 0; else the test fails showing its stderr.
#[track_caller]
pub fn assert_ok(out: &std::process::Output) {
    assert!(out.status.success(), "exit {:?}: {}", out.status.code(), String::from_utf8_lossy(&out.stderr));
}
