//! `kdelta doctor` on a fake sysfs/proc root: what it names, `--json`,
//! `--apply` followed by `--reset` (every file as it was, byte for byte),
//! the next run restoring what `--apply` changed, and bad input.
//! Nothing here touches the real machine's settings.

use crate::common::knobs_journal as journal;
use crate::common::sysfs_cmd as cmd;
use crate::common::{assert_ok, json, Env, TINY_SLEEP};

use kdelta::testing::fake::{self, snapshot, write as w};

/// The fake virtual machine below the env's directory: its root.
fn vm(e: &Env) -> std::path::PathBuf {
    let root = e.dir.path().join("vm");
    fake::vm(&root);
    root
}

#[test]
fn names_haltpoll_cpufreq_thp_and_steal_in_text_and_json() {
    let e = Env::new();
    let root = vm(&e);
    // A guest that polls before it halts: the doctor names the time.
    w(&root, fake::HALT_POLL, "200000");
    let out = cmd(&e, &root).args(["doctor"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
    for s in [
        "[change] cpuidle: driver haltpoll",
        "guest_halt_poll_ns (200000 here)",
        "[note] cpufreq driver: none",
        "[change] transparent huge pages (enabled): always",
        "--apply sets: thp=madvise",
        "steal time: unknown",
        "[note] virtual machine: yes",
    ] {
        assert!(text.contains(s), "{s:?} missing:\n{text}");
    }
    let out = cmd(&e, &root).args(["doctor", "--json", "--cpus", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let j = json(&out.stdout);
    assert_eq!(j["measured_cpus"], "0");
    let f = j["findings"].as_array().unwrap();
    let idle = f.iter().find(|x| x["setting"] == "cpuidle").unwrap();
    assert_eq!(idle["verdict"], "note", "CPU 1's deep state is not measured: {idle}");
    assert!(f.iter().any(|x| x["setting"] == "steal time"));
}

#[test]
fn apply_then_reset_leaves_every_file_as_it_was() {
    let e = Env::new();
    let root = vm(&e);
    let before = snapshot(&root);
    let out = cmd(&e, &root).args(["doctor", "--apply"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("applied thp=madvise (was always)"), "{text}");
    assert!(text.contains("applied sysfs=/sys/devices/system/cpu/cpu1/cpuidle/state2/disable=1 (was 0)"), "{text}");
    assert_ne!(snapshot(&root), before);
    assert!(journal(&root).exists());
    // Other commands note it (not the warning of a killed kdelta).
    let out = cmd(&e, &root).args(["topo"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("tuned by `kdelta doctor --apply`") && !err.contains("killed"), "{err}");
    // A second --apply is refused: one line, exit 2, nothing changed.
    let mid = snapshot(&root);
    let out = cmd(&e, &root).args(["doctor", "--apply"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--reset"), "{err}");
    assert_eq!(snapshot(&root), mid);
    let out = cmd(&e, &root).args(["doctor", "--reset"]).output().unwrap();
    assert_ok(&out);
    assert_eq!(snapshot(&root), before, "every file as it was");
    assert!(!journal(&root).exists());
}

#[test]
fn the_next_run_restores_what_apply_changed_and_restore_does_too() {
    let e = Env::new();
    let root = vm(&e);
    let before = snapshot(&root);
    assert_eq!(cmd(&e, &root).args(["doctor", "--apply"]).output().unwrap().status.code(), Some(0));
    let out = cmd(&e, &root).args(TINY_SLEEP).output().unwrap();
    assert_ok(&out);
    assert_eq!(snapshot(&root), before, "restored at the run's end");
    assert!(!journal(&root).exists());
    // `kdelta restore` replays it as well.
    assert_eq!(cmd(&e, &root).args(["doctor", "--apply"]).output().unwrap().status.code(), Some(0));
    let out = cmd(&e, &root).args(["restore"]).output().unwrap();
    assert_ok(&out);
    assert_eq!(snapshot(&root), before);
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let e = Env::new();
    let root = vm(&e);
    for args in [&["doctor", "--cpus", "7"][..], &["doctor", "--cpus", "x-"], &["doctor", "--apply", "--reset"]] {
        let out = cmd(&e, &root).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let out = cmd(&e, &root).args(["doctor", "--cpus", "7"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--cpus 7") && err.contains("allowed: 0-1"), "{err}");
}
