//! cgroup limits as configurations and `--isolate`, on the real binary: runs
//! against fake cgroup v1 and v2 trees (below `KDELTA_SYSFS_ROOT`), bad
//! input refused before anything runs, and on the live machine (root, a cpu
//! controller) nothing of kdelta's left in `/sys/fs/cgroup` after a run, nor
//! after `kill -9` (its guard puts it back, without `kdelta restore`).

use crate::common;
use crate::common::sysfs_cmd as cmd;
use crate::common::{assert_ok, spawn_long_run, Env};
use kdelta::testing::fake;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn put(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A 2-CPU machine with cgroup v1 cpu, cpuset and memory hierarchies.
fn fake_v1(root: &Path) {
    fake::two_cpus(root);
    fake::cgroup_v1(root);
}

/// The same with one cgroup v2 hierarchy.
fn fake_v2(root: &Path) {
    fake::two_cpus(root);
    fake::cgroup_v2(root);
}

/// Every `kdelta-*` directory below `dir`.
fn ours(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with("kdelta-") {
                    found.push(e.path());
                }
                // The live tree is large: kdelta's cgroups are at most two deep.
                if d.components().count() < dir.components().count() + 2 {
                    stack.push(e.path());
                }
            }
        }
    }
    found
}

/// Each fake cgroup tree (`v1`, `v2`) by name, in a fresh env below `root`.
fn fake_trees() -> impl Iterator<Item = (&'static str, Env, PathBuf)> {
    [("v1", fake_v1 as fn(&Path)), ("v2", fake_v2)].into_iter().map(|(name, make)| {
        let e = Env::new();
        let root = e.dir.path().join("root");
        make(&root);
        (name, e, root)
    })
}

const QUOTA: &str = "up,up+cpu.max=50000/100000+memory.max=64M";

#[test]
fn limits_on_fake_v1_and_v2_trees_are_applied_recorded_and_removed() {
    for (name, e, root) in fake_trees() {
        let out = cmd(&e, &root)
            .args(["run", "test.sleep", "--config", QUOTA, "--runs", "2", "--sample-time", "2ms", "--format", "json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let v = common::json(&out.stdout);
        let results = v["results"].as_array().unwrap();
        let limited = results.iter().find(|r| r["config"].as_str().unwrap().contains("cpu.max")).unwrap();
        assert_eq!(limited["config"], "up+cpu.max=50000/100000+memory.max=67108864", "{name}");
        assert!(
            limited["samples_meta"].as_array().unwrap().iter().all(|m| m["throttling"]["periods"] == 0),
            "{name}: throttling recorded per sample: {}",
            limited["samples_meta"]
        );
        let plain = results.iter().find(|r| r["config"] == "up").unwrap();
        assert!(plain["samples_meta"][0].get("throttling").is_none(), "{name}: no limit, no throttling");
        let t = &v["comparisons"][0];
        assert_eq!(t["tail"], true, "{name}: a CPU limit compared shows the tail");
        assert!(t["rows"][0]["cells"][1]["p99"].is_number(), "{name}: {}", t["rows"][0]["cells"][1]);
        let cg = root.join("sys/fs/cgroup");
        assert!(ours(&cg).is_empty(), "{name}: left {:?}", ours(&cg));
        assert!(!root.join("run/kdelta/cgroups.journal").exists(), "{name}");
        assert!(e.tmp_leftovers().is_empty(), "{name}: {:?}", e.tmp_leftovers());
        // The same as text: p99 beside each median, throttling said.
        let out = cmd(&e, &root)
            .args(["run", "test.sleep", "--config", QUOTA, "--runs", "2", "--sample-time", "2ms"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("p99") && text.contains("not throttled: 1 results"), "{name}: {text}");
    }
}

#[test]
fn isolate_on_fake_v1_and_v2_trees() {
    for (name, e, root) in fake_trees() {
        let out = cmd(&e, &root)
            .args(["run", "test.sleep", "--config", "cpus=1", "--isolate", "--runs", "2", "--sample-time", "2ms"])
            .args(["--format", "json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let v = common::json(&out.stdout);
        let how = v["run"]["environment"]["isolated"].as_str().unwrap_or_default().to_string();
        assert!(how.contains("CPUs 1"), "{name}: {how}");
        assert!(ours(&root.join("sys/fs/cgroup")).is_empty(), "{name}");
        // Every CPU measured: none left for the rest.
        let out = cmd(&e, &root).args(["run", "test.sleep", "--config", "all", "--isolate"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("needs a CPU left") && err.lines().count() == 1, "{name}: {err}");
    }
}

/// `kill -9` of kdelta during `--isolate`: its guard undoes the isolation
/// (every other task's cpuset, kdelta's cgroups, the journal) without a
/// person, on fake v1 and v2 trees.
#[test]
fn a_killed_isolating_run_is_undone_by_its_guard() {
    for (name, e, root) in fake_trees() {
        let cg = root.join("sys/fs/cgroup");
        let journal = root.join("run/kdelta/cgroups.journal");
        let mut c = e.spawnable();
        c.env("KDELTA_SYSFS_ROOT", &root).env_remove("KDELTA_JOURNAL");
        let mut child = spawn_long_run(&mut c, "cpus=1", &["--isolate"]);
        let t0 = Instant::now();
        while (!journal.exists() || ours(&cg).is_empty()) && t0.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(journal.exists() && !ours(&cg).is_empty(), "{name}: the run isolated");
        child.kill().unwrap();
        child.wait().unwrap();
        let t0 = Instant::now();
        while (journal.exists() || !ours(&cg).is_empty()) && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(!journal.exists(), "{name}: the journal is replayed");
        assert!(ours(&cg).is_empty(), "{name}: left {:?}", ours(&cg));
        // Nothing for a person to do, nothing to warn about.
        let out = cmd(&e, &root).arg("list").output().unwrap();
        assert!(!String::from_utf8_lossy(&out.stderr).contains("journal"), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn limits_the_machine_cannot_apply_are_refused_before_the_run() {
    let e = Env::new();
    let root = e.dir.path().join("root");
    common::fake_sysfs(&root, &[&[0], &[1]]);
    let run = |cfg: &str, extra: &[&str]| {
        let out = cmd(&e, &root)
            .args(["run", "test.sleep", "--config", cfg, "--runs", "2", "--sample-time", "2ms"])
            .args(extra)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, err, _) = run("up+cpu.max=50000/100000", &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("cpu controller, which is not mounted") && err.contains("--skip-unavailable"), "{err}");
    let (code, err, out) = run("up,up+cpu.max=50000/100000", &["--skip-unavailable"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("unavailable") || err.contains("unavailable"), "{out}{err}");
    for (bad, says) in [
        ("up+cpu.max=50000/10", "the period 1000..=1000000"),
        ("up+cpuset=5", "CPU 5 not usable"),
        ("up+cpus=9", "cpus=9"),
        ("up+memory.max=1K", "at least 16M"),
    ] {
        let (code, err, _) = run(bad, &[]);
        assert_eq!(code, Some(2), "{bad}: {err}");
        assert!(err.contains(says) && err.trim().lines().count() == 1, "{bad}: {err}");
    }
    let (code, err, _) = run("cpus=1", &["--isolate"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("cpuset controller"), "{err}");
    // cgroup v2 with kdelta in a cgroup that holds processes: the controller
    // cannot be enabled for its children, so refused before the run rather
    // than failing every point.
    fake_v2(&root);
    let cg = root.join("sys/fs/cgroup");
    put(&root.join("proc/self/cgroup"), "0::/session\n");
    put(&cg.join("session/cgroup.controllers"), "cpu memory\n");
    put(&cg.join("session/cgroup.subtree_control"), "");
    put(&cg.join("session/cgroup.procs"), "4242\n");
    let (code, err, _) = run("up+cpu.max=50000/100000", &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("holds 1 process,") && err.trim().lines().count() == 1, "{err}");
    assert!(ours(&cg).is_empty());
}

/// On the live machine (root, a cgroup cpu controller): a run with a quota
/// leaves nothing in /sys/fs/cgroup, nor does a kdelta killed mid-run once
/// `kdelta restore` ran. Its journals live in the test's own directory.
#[test]
fn live_quota_leaves_nothing_after_a_run_nor_after_kill_9_and_restore() {
    let cg = Path::new("/sys/fs/cgroup");
    let has_cpu = cg.join("cpu/cpu.cfs_quota_us").is_file()
        || std::fs::read_to_string(cg.join("cgroup.controllers"))
            .is_ok_and(|t| t.split_whitespace().any(|w| w == "cpu"));
    if !nix::unistd::geteuid().is_root() || !has_cpu {
        println!("SKIPPED: needs root and a cgroup cpu controller");
        return;
    }
    let e = Env::new();
    let journal = e.dir.path().join("j");
    std::fs::create_dir_all(&journal).unwrap();
    let jpath = journal.join("knobs.journal");
    let out = e
        .cmd()
        .env("KDELTA_JOURNAL", &jpath)
        .args(["run", "test.sleep", "--config", "up,up+cpu.max=50000/100000", "--runs", "2", "--sample-time", "2ms"])
        .output()
        .unwrap();
    assert_ok(&out);
    let mut c = e.spawnable();
    c.env("KDELTA_JOURNAL", &jpath);
    let mut child = spawn_long_run(&mut c, "up+cpu.max=50000/100000", &[]);
    let mine = format!("kdelta-{}", child.id());
    let t0 = Instant::now();
    let made = || ours(cg).into_iter().any(|p| p.file_name().unwrap().to_string_lossy() == mine);
    while !made() && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(made(), "the run made its cgroup");
    child.kill().unwrap();
    child.wait().unwrap();
    // Killed: its guard removes what it made, without `kdelta restore`.
    let t0 = Instant::now();
    while made() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!made(), "left after kill -9: {:?}", ours(cg));
    assert!(!journal.join("knobs.journal.cgroups").exists(), "the journal is replayed and removed");
    let out = e.cmd().env("KDELTA_JOURNAL", &jpath).arg("restore").output().unwrap();
    assert_ok(&out);
}
