//! `run --profile` and `kdelta profile`: stacks sampled in extra samples
//! apart from the measured ones, stored per result, drawn as flame graphs;
//! and the refusals.

use crate::common::*;

/// Why profiles cannot be taken here, if they cannot: no perf(1), or no
/// permission to sample kernel stacks.
fn cannot_profile() -> Option<String> {
    let perf = std::process::Command::new("perf").arg("--version").output();
    if !perf.map(|o| o.status.success()).unwrap_or(false) {
        return Some("perf(1) is not installed (.ci/run installs linux-perf)".into());
    }
    let root = nix::unistd::geteuid().is_root();
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(3);
    if !root && paranoid > 1 {
        return Some(format!("not root and kernel.perf_event_paranoid is {paranoid}"));
    }
    None
}

/// Says SKIPPED and why when profiles cannot be taken here.
fn skipped_without_perf() -> bool {
    let why = cannot_profile();
    if let Some(why) = &why {
        println!("SKIPPED: perf events cannot be opened here: {why}");
    }
    why.is_some()
}

#[test]
fn a_profiled_run_keeps_stacks_apart_from_the_figures_and_draws_them() {
    if skipped_without_perf() {
        return;
    }
    let e = Env::new();
    e.cmd()
        .args([
            "run",
            "lat.pipe",
            "--config",
            "up",
            "--runs",
            "2",
            "--sample-time",
            "1ms",
            "--warmup",
            "1ms",
            "--profile",
        ])
        .assert()
        .success();
    let out = e.cmd().args(["show", "1", "--format", "json"]).output().unwrap();
    let v = json(&out.stdout);
    let r = &v["reports"][0]["results"][0];
    let r = if r.is_null() { &v["results"][0] } else { r };
    let p = &r["profile"];
    assert!(p.is_object(), "a profile is stored: {r}");
    let samples = p["samples"].as_u64().unwrap();
    assert!(samples > 0, "{p}");
    let stacks = p["stacks"].as_object().unwrap();
    assert_eq!(stacks.values().map(|n| n.as_u64().unwrap()).sum::<u64>(), samples, "the widths add up to the samples");
    assert!(
        stacks.keys().any(|s| s.contains("_[k]")),
        "kernel frames: {:?}",
        stacks.keys().take(5).collect::<Vec<_>>()
    );
    assert_eq!(
        p["event"],
        if std::path::Path::new("/sys/bus/event_source/devices/cpu/events/cpu-cycles").exists() {
            "cycles"
        } else {
            "cpu-clock"
        }
    );
    // The profiled samples' figures are kept apart: never among the samples.
    let profiled = p["figures"].as_array().unwrap().len();
    assert!(profiled >= 1);
    let taken = r["samples"].as_array().unwrap().len();
    let q = &r["quality"];
    assert_eq!(taken, q["clean"].as_u64().unwrap() as usize + q["disturbed"].as_u64().unwrap() as usize);
    assert!(e.tmp_leftovers().is_empty(), "perf's files are removed: {:?}", e.tmp_leftovers());

    // One configuration's graph as a file.
    let svg = e.dir.path().join("pipe.svg");
    e.cmd().args(["profile", "1", "lat.pipe", "-o"]).arg(&svg).assert().success();
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.contains("<svg") && s.contains("lat.pipe [up]") && s.contains(&format!("total_samples=\"{samples}\"")));

    // The report draws it inline, without script.
    let page = e.dir.path().join("r.html");
    e.cmd().args(["report", "1", "-o"]).arg(&page).assert().success();
    let h = std::fs::read_to_string(&page).unwrap();
    assert_eq!(h.matches("<svg class=\"flame\"").count(), 1, "one configuration, one graph");
    assert!(!h.contains("<script"));
}

#[test]
fn profile_refuses_bad_inputs_with_one_line() {
    let e = Env::new();
    let svg = e.dir.path().join("p.svg");
    let out = e.cmd().args(["profile", "1", "lat.pipe", "-o"]).arg(&svg).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "no database");
    e.cmd().args(["run", "test.sleep", "--config", "up", "--runs", "1", "--sample-time", "1ms"]).assert().success();
    let s = svg.display().to_string();
    let dir = e.dir.path().display().to_string();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["9", "test.sleep", "-o", &s], "no run \"9\""),
        (vec!["1", "lat.nosuch", "-o", &s], "has no result of lat.nosuch: it holds test.sleep"),
        (vec!["1", "test.sleep", "-o", &s], "measured without --profile"),
        (vec!["1", "test.sleep", "-o", &dir], "is a directory"),
    ];
    for (args, says) in cases {
        let out = e.cmd().arg("profile").args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says) && err.lines().count() == 1, "{args:?}: {err}");
    }
    // --against needs --config; -o is required.
    let out = e.cmd().args(["profile", "1", "test.sleep", "--against", "up", "-o", &s]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(e.cmd().args(["profile", "1", "test.sleep"]).output().unwrap().status.code(), Some(2));
    assert!(!svg.exists());
}

#[test]
fn profile_choices_of_configuration_are_checked() {
    if skipped_without_perf() {
        return;
    }
    let e = Env::new();
    e.cmd()
        .args(["run", "lat.syscall", "--config", "up", "--warmup", "1ms", "--profile"])
        .args(ONE_SAMPLE)
        .assert()
        .success();
    let s = e.dir.path().join("p.svg").display().to_string();
    for (args, says) in [
        (
            vec!["1", "lat.syscall", "-c", "smp9", "-o", &s],
            "--config smp9: run 1 has no profile of lat.syscall under smp9; it has: up",
        ),
        (vec!["1", "lat.syscall", "-c", "up", "--against", "up", "-o", &s], "--against up is --config itself"),
        (vec!["1", "lat.syscall", "-c", "up", "--against", "noht", "-o", &s], "--against noht: run 1 has no profile"),
    ] {
        let out = e.cmd().arg("profile").args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// A user who may not sample kernel stacks is refused before the run, with
/// the reason and the sysctl that allows it. Needs root (to become another
/// user) and a paranoid level that refuses that user.
#[test]
fn profile_without_permission_is_refused_before_the_run() {
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(-1);
    let setpriv = std::process::Command::new("setpriv").arg("--version").output().is_ok_and(|o| o.status.success());
    if !nix::unistd::geteuid().is_root() || paranoid < 2 || !setpriv {
        println!("SKIPPED: needs root, setpriv and kernel.perf_event_paranoid >= 2 (it is {paranoid})");
        return;
    }
    let e = Env::new();
    let bin = assert_cmd::cargo::cargo_bin("kdelta");
    let db = e.dir.path().join("never.db");
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&bin)
        .arg("--db")
        .arg(&db)
        .args(["run", "lat.syscall", "--config", "up", "--runs", "1", "--profile"])
        .env("TMPDIR", "/tmp")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("Permission denied") && !err.contains("perf_event_paranoid") {
        println!("SKIPPED: user 65534 cannot run {}: {err}", bin.display());
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{err}");
    // One line says why and what allows it (another user may also be
    // warned that the kernel-settings journal is not theirs).
    let line = err.lines().find(|l| l.contains("--profile")).unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains(&format!("kernel.perf_event_paranoid is {paranoid}")), "{err}");
    assert!(line.contains("sysctl -w kernel.perf_event_paranoid=1"), "{err}");
    assert!(!db.exists(), "nothing stored");
}

/// `run cmd --profile` profiles each command's whole process tree (the
/// shell and what it runs, not kdelta's harness thread), and `kdelta
/// profile` picks a command by name: a flame graph, folded stacks and the
/// tables. No perf process or file is left behind.
#[test]
fn each_command_of_cmd_is_profiled_and_drawn() {
    if skipped_without_perf() {
        return;
    }
    let e = Env::new();
    let spin = "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done";
    // perf keeps a copy of every binary it sampled in $HOME/.debug unless
    // told not to: a profiled run must leave none there.
    let home = e.dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let out = e
        .cmd()
        .env("HOME", &home)
        // Both commands at the same moment on two CPUs (`duet`, the default
        // on this machine): one command's `perf script` ran while the other
        // thread ended what its command left, which killed it ("not
        // profiled: perf script failed") and counted it as left behind.
        .args(["run", "cmd", "--config", "cpus=0-1", "--interleave", "duet", "--runs", "1"])
        .args(["--cmd", &format!("a={spin}"), "--cmd", &format!("b={spin}; {spin}"), "--profile"])
        // No waiting for quiet CPUs after a disturbed sample: the stacks are
        // what is asserted here, and on a busy machine the waits took a minute.
        .args(NO_QUIET_WAIT)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let all = format!("{}{err}", String::from_utf8_lossy(&out.stdout));
    assert!(!all.contains("not profiled") && !all.contains("the command left"), "{all}");
    let v = json(&e.cmd().args(["show", "1", "--format", "json"]).output().unwrap().stdout);
    let results = v["results"].as_array().or_else(|| v["reports"][0]["results"].as_array()).unwrap().clone();
    assert_eq!(results.len(), 2);
    for r in &results {
        let p = &r["profile"];
        assert!(p["samples"].as_u64().unwrap_or(0) > 0, "a profile of each command: {r}");
        let stacks = p["stacks"].as_object().unwrap();
        assert!(stacks.keys().any(|s| !s.starts_with("kdelta;")), "the command's own stacks: {stacks:?}");
        assert!(
            !stacks.keys().any(|s| s.contains("wait_draining")),
            "no harness frames: the waiting thread is left out"
        );
    }
    let svg = e.dir.path().join("d.svg");
    e.cmd().args(["profile", "1", "cmd.run", "--config", "b", "--against", "a", "-o"]).arg(&svg).assert().success();
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.contains("cmd.run: cmd=a [cpus=0-1] -&gt; cmd=b [cpus=0-1]"), "{}", &s[..s.len().min(3000)]);
    // Folded stacks to stdout, as FlameGraph reads them.
    let out = e.cmd().args(["profile", "1", "cmd.run", "-c", "cmd=a", "--format", "folded"]).output().unwrap();
    assert!(out.status.success());
    let folded = String::from_utf8_lossy(&out.stdout);
    assert!(!folded.is_empty());
    for l in folded.lines() {
        let (stack, n) = l.rsplit_once(' ').unwrap();
        assert!(!stack.is_empty() && n.parse::<u64>().is_ok(), "{l}");
    }
    // The tables: top functions of each side and the change.
    let out =
        e.cmd().args(["profile", "1", "cmd.run", "-c", "b", "--against", "a", "--format", "text"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("self %") && text.contains("change of each function's total share"), "{text}");
    // Nothing of perf's is left: no process, no file, no build-id cache.
    assert!(e.tmp_leftovers().is_empty(), "{:?}", e.tmp_leftovers());
    assert_eq!(std::fs::read_dir(&home).unwrap().count(), 0, "perf's build-id cache in $HOME/.debug");
    let perf_left = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|d| std::fs::read_to_string(d.path().join("cmdline")).ok())
        .filter(|c| c.contains(&e.dir.path().display().to_string()) && c.starts_with("perf"))
        .count();
    assert_eq!(perf_left, 0);
}
