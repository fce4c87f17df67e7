//! Kernel settings as configuration modifiers, on fake trees: each knob
//! applied and restored around a real run, refusals with the machine's
//! reason, the journal of a killed kdelta replayed by `kdelta restore`.
//! Nothing here touches the real machine's settings.

use crate::common::knobs_journal as journal;
use crate::common::sysfs_cmd as cmd;
use crate::common::{
    assert_ok, fake_knobs, fake_sysfs, json, knob_value, output_json, spawn_long_run, statuses, Env, ONE_SAMPLE,
};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const THP: &str = "sys/kernel/mm/transparent_hugepage/enabled";

fn setup() -> (Env, PathBuf) {
    let e = Env::new();
    let root = e.dir.path().join("sysfs");
    fake_sysfs(&root, &[&[0], &[1]]);
    fake_knobs(&root);
    (e, root)
}

/// Every knob's value in force, for before-and-after comparisons.
fn values(root: &Path) -> Vec<String> {
    [
        "sys/kernel/debug/sched/preempt",
        "sys/devices/system/cpu/smt/control",
        "sys/devices/system/cpu/cpufreq/policy0/scaling_governor",
        "sys/devices/system/cpu/cpufreq/policy1/scaling_governor",
        "sys/devices/system/cpu/cpufreq/boost",
        THP,
        "proc/sys/kernel/sched_autogroup_enabled",
    ]
    .iter()
    .map(|f| knob_value(root, f))
    .collect()
}

#[test]
fn every_knob_applied_between_rounds_and_restored() {
    let (e, root) = setup();
    let before = values(&root);
    let configs = "up+preempt=none+governor=performance+boost=off+thp=never+sysctl=kernel.sched_autogroup_enabled=0,up+thp=always,noht+smt=off+sysfs=/sys/kernel/mm/transparent_hugepage/enabled=never";
    let out = cmd(&e, &root)
        .args([
            "run",
            "test.sleep",
            "test.crash",
            "--config",
            configs,
            "--runs",
            "2",
            "--sample-time",
            "1ms",
            "--warmup",
            "0s",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "test.crash fails its points, the rest runs: {err}");
    assert_eq!(values(&root), before, "every setting back as found");
    assert!(!journal(&root).exists(), "journal removed");
    let v = json(&out.stdout);
    let read = |cfg: &str| {
        let r = v["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["benchmark"] == "test.sleep" && r["config"] == cfg)
            .unwrap_or_else(|| panic!("{cfg}: {v}"));
        assert_eq!(r["status"], "ok", "{r}");
        r["extras"]["kernel_settings_read_back"].clone()
    };
    assert_eq!(
        read("up+preempt=none+governor=performance+boost=off+thp=never+sysctl=kernel.sched_autogroup_enabled=0"),
        serde_json::json!([
            "preempt=none",
            "governor=performance",
            "boost=off",
            "thp=never",
            "sysctl=kernel.sched_autogroup_enabled=0"
        ])
    );
    assert_eq!(read("up+thp=always"), serde_json::json!(["thp=always"]));
    assert_eq!(
        read("noht+smt=off+sysfs=/sys/kernel/mm/transparent_hugepage/enabled=never"),
        serde_json::json!(["smt=off", "sysfs=/sys/kernel/mm/transparent_hugepage/enabled=never"])
    );
    let crash = v["results"].as_array().unwrap().iter().find(|r| r["benchmark"] == "test.crash").unwrap();
    assert_eq!(crash["status"], "failed");
}

#[test]
fn refusals_say_why_in_one_line() {
    let (e, root) = setup();
    // As on the VM this was written on: SMT not supported, the preemption
    // file there but not writable.
    std::fs::write(root.join("sys/devices/system/cpu/smt/control"), "notsupported\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(root.join("sys/kernel/debug/sched/preempt"), std::fs::Permissions::from_mode(0o444))
        .unwrap();
    // topo lists every knob with its state.
    let out = cmd(&e, &root).arg("topo").output().unwrap();
    let t = String::from_utf8_lossy(&out.stdout);
    for line in [
        "  preempt   full (offers none, voluntary, full, lazy); cannot change:",
        "  smt       notsupported; cannot change:",
        "  thp       madvise (offers always, madvise, never); can change",
    ] {
        assert!(t.contains(line), "{line}\n{t}");
    }
    let before = values(&root);
    for (config, says) in [
        ("up+smt=off", "smt/control reads notsupported: this CPU has no SMT to switch"),
        ("up+preempt=none", "sched/preempt is read-only (mode 444)"),
        ("up+preempt=rt", "unknown preempt value \"rt\": allowed: none, voluntary, full, lazy"),
        ("up+governor=ondemand", "this kernel offers performance, powersave, schedutil"),
        ("up+sysfs=/etc/passwd=x", "sysfs path \"/etc/passwd\" not allowed"),
        ("up+sysctl=kernel.nope=1", "no such sysctl"),
        ("up+thp=never+thp=always", "conflicting modifiers"),
    ] {
        let out = cmd(&e, &root).args(["run", "test.sleep", "--config", config, "--runs", "1"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{config}: {err}");
        assert!(err.contains(says), "{config}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{config}: {err}");
    }
    // --skip-unavailable records it and runs the rest.
    let v = output_json(
        cmd(&e, &root)
            .args([
                "run",
                "test.sleep",
                "--config",
                "up+smt=off,up+thp=never",
                "--skip-unavailable",
                "--format",
                "json",
            ])
            .args(ONE_SAMPLE),
    );
    assert_eq!(statuses(&v), ["unavailable", "ok"]);
    assert_eq!(values(&root), before);
}

#[test]
fn journal_of_a_killed_kdelta_is_replayed_by_restore() {
    let (e, root) = setup();
    // What a kdelta killed after its change left: the file changed, the
    // journal naming its original and a dead owner.
    std::fs::write(root.join(THP), "always madvise [never]\n").unwrap();
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(journal(&root).parent().unwrap()).unwrap();
    let wrote = serde_json::json!({"kind": "wrote", "path": root.join(THP), "original": "madvise"});
    std::fs::write(
        journal(&root),
        format!("{{\"kind\":\"owner\",\"version\":2,\"pid\":2147483000,\"start\":1}}\n{wrote}\n"),
    )
    .unwrap();
    std::fs::set_permissions(journal(&root), std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = cmd(&e, &root).arg("topo").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("run `kdelta restore`"), "every command warns");
    let out = cmd(&e, &root).args(["run", "test.sleep", "--config", "up+thp=always", "--runs", "1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("run `kdelta restore` first"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = cmd(&e, &root).arg("restore").output().unwrap();
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("restored to madvise"));
    assert_eq!(knob_value(&root, THP), "madvise");
    assert!(!journal(&root).exists());
    let out = cmd(&e, &root).arg("topo").output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("restore"));
}

#[test]
fn kill_9_then_restore() {
    let (e, root) = setup();
    let mut c = e.spawnable();
    c.env("KDELTA_SYSFS_ROOT", &root).env_remove("KDELTA_JOURNAL");
    let mut child = spawn_long_run(&mut c, "up+thp=never,up", &[]);
    let t0 = Instant::now();
    while knob_value(&root, THP) != "never" && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(journal(&root).exists(), "the journal is written before the change");
    child.kill().unwrap();
    child.wait().unwrap();
    // Its guard wakes now and replays the journal, perhaps at the very
    // moment this restore does: either way it ends restored, and the
    // restore does not fail for want of the file the guard removed.
    let out = cmd(&e, &root).arg("restore").output().unwrap();
    assert_ok(&out);
    assert_eq!(knob_value(&root, THP), "madvise");
    assert!(!journal(&root).exists());
}
