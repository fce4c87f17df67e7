//! `kdelta study` interrupted and resumed through the binary: a tiny plan
//! (the hidden `--tiny-plan-for-tests`: ht-2003's first three latencies,
//! three samples each, in the study's two configurations) is stopped with
//! SIGINT once some of its points are stored (the test polls the database,
//! never sleeps a fixed time), then `--resume` runs only the missing points
//! and the final tables have every row of the tiny plan.

use crate::common::{assert_ok, Env};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The tiny plan's rows in Table 1 of ht-2003.
const ROWS: [&str; 3] = ["simple syscall", "simple read", "simple write"];
const POINTS: i64 = 6;

fn kdelta(e: &Env) -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("kdelta"));
    c.env("KDELTA_DB", e.db()).env("TMPDIR", e.tmp()).env_remove("KDELTA_SYSFS_ROOT").env("NO_COLOR", "1");
    // One benchmark a window (`harness/passes.rs`): the tiny plan is
    // stored benchmark by benchmark, so a signal can land between them.
    c.env("KDELTA_TEST_PASS_WINDOW_MS", "0");
    c
}

/// (results stored, of them complete ones) in the database, or (0, 0) before it exists.
fn stored(e: &Env) -> (i64, i64) {
    let Ok(db) = rusqlite::Connection::open_with_flags(e.db(), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY) else {
        return (0, 0);
    };
    let n = db.query_row("SELECT count(*) FROM results", [], |r| r.get(0)).unwrap_or(0);
    let ok = db.query_row("SELECT count(*) FROM results WHERE status = 'ok'", [], |r| r.get(0)).unwrap_or(0);
    (n, ok)
}

/// Whether this process may use two CPUs, as ht-2003's configurations
/// need; if not, it says the test is skipped.
fn two_cpus() -> bool {
    let usable = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    if usable < 2 {
        println!("SKIPPED: ht-2003's configurations need two CPUs; this process may use {usable}");
    }
    usable >= 2
}

fn status(e: &Env) -> String {
    let db = rusqlite::Connection::open(e.db()).unwrap();
    db.query_row("SELECT status FROM runs ORDER BY id DESC LIMIT 1", [], |r| r.get(0)).unwrap()
}

#[test]
fn a_study_interrupted_resumes_only_its_missing_points() {
    if !two_cpus() {
        return;
    }
    let args = ["study", "ht-2003", "--quick", "--tiny-plan-for-tests", "--label", "resume-test"];
    // Interrupt once the first benchmark's points are stored. Should the
    // rest finish before the signal lands (a stalled test on a busy
    // machine), start over: the outcome checked is the same every time.
    let mut attempt = 0;
    let (e, before) = loop {
        attempt += 1;
        assert!(attempt <= 5, "the tiny study finished before SIGINT in 5 attempts");
        let e = Env::new();
        let mut child = kdelta(&e).args(args).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        let t0 = Instant::now();
        while stored(&e).0 < 1 {
            assert!(t0.elapsed() < Duration::from_secs(300), "no point stored in 300 s");
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGINT).ok();
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        if out.status.code() == Some(0) {
            continue;
        }
        assert_eq!(out.status.code(), Some(130), "{err}");
        assert!(err.contains("--resume` runs only the missing points"), "{err}");
        assert_eq!(status(&e), "incomplete");
        let s = stored(&e);
        break (e, s);
    };
    assert!(before.1 >= 1 && before.1 < POINTS, "{before:?}");

    let out = kdelta(&e).args(args).arg("--resume").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // Only the missing points ran: each stored once more, none twice.
    let done = err.lines().find_map(|l| {
        l.split(" points are stored, ")
            .nth(1)
            .map(|r| (l.to_string(), r.split(' ').next().unwrap().parse::<i64>().unwrap()))
    });
    let (line, missing) = done.unwrap_or_else(|| panic!("no resume line: {err}"));
    let already: i64 =
        line.split("run 1: ").nth(1).and_then(|r| r.split(' ').next()).and_then(|n| n.parse().ok()).unwrap_or(-1);
    assert_eq!(already + missing, POINTS, "{line}");
    assert!(already >= 1 && missing >= 1, "{line}");
    let after = stored(&e);
    assert_eq!(after.0 - before.0, missing, "resume stored exactly the missing points ({line})");
    assert!(err.contains(&format!("resumed run 1: {missing} points ran now")), "{err}");
    assert_eq!(status(&e), "complete");
    // The final tables: every row of the tiny plan measured on both sides.
    for row in ROWS {
        let l = text.lines().find(|l| l.starts_with(row)).unwrap_or_else(|| panic!("{row}:\n{text}"));
        assert!(!l.contains("unavailable"), "{l}");
        assert!(l.matches(" us").count() >= 2, "{l}");
    }
    assert!(!text.contains("not measured in this run"), "{text}");
    assert!(text.contains("not in the tiny plan of the tests"), "{text}");
    assert!(e.tmp_leftovers().is_empty(), "{:?}", e.tmp_leftovers());
}

/// `/proc/self/stat` field 22: when this process started, as the store keeps it.
fn my_start_time() -> i64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    stat.rsplit_once(')').unwrap().1.split_whitespace().nth(19).unwrap().parse().unwrap()
}

#[test]
fn resume_refuses_a_live_writer_s_run_and_another_machine_s() {
    if !two_cpus() {
        return;
    }
    let args = ["study", "ht-2003", "--quick", "--tiny-plan-for-tests", "--label", "refuse-test"];
    let e = Env::new();
    let out = kdelta(&e).args(args).output().unwrap();
    assert_ok(&out);
    // The run as an interrupted one: its last point missing, marked incomplete.
    let db = rusqlite::Connection::open(e.db()).unwrap();
    db.execute_batch(
        "DELETE FROM results WHERE id = (SELECT max(id) FROM results); UPDATE runs SET status = 'incomplete';",
    )
    .unwrap();
    let host: String = db.query_row("SELECT host FROM runs", [], |r| r.get(0)).unwrap();
    let snapshot =
        || (stored(&e), db.query_row("SELECT status || pid || host FROM runs", [], |r| r.get::<_, String>(0)).unwrap());
    let refused = |what: &str, says: &[&str]| {
        let before = snapshot();
        let out = kdelta(&e).args(args).arg("--resume").output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        let line = err.lines().last().unwrap_or("");
        assert!(line.starts_with("kdelta: --resume: run 1 of study ht-2003 --quick"), "{what}: {err}");
        for s in says {
            assert!(line.contains(s), "{what}: no {s:?} in {err}");
        }
        assert!(!err.contains("resuming"), "{what}: {err}");
        assert_eq!(snapshot(), before, "{what}: the run was changed");
    };
    let with_host = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut h: serde_json::Value = serde_json::from_str(&host).unwrap();
        f(&mut h);
        db.execute("UPDATE runs SET host = ?1", [h.to_string()]).unwrap();
    };
    // Its writer alive: this test process, by id and start time.
    db.execute(
        "UPDATE runs SET status = 'running', pid = ?1, pid_start = ?2",
        [std::process::id() as i64, my_start_time()],
    )
    .unwrap();
    refused("a live writer", &["still being written by a live kdelta", &format!("process {}", std::process::id())]);
    db.execute_batch("UPDATE runs SET status = 'incomplete';").unwrap();
    // Another machine.
    with_host(&|h| h["cpu_model"] = "Pentium 4 2.8 GHz (Northwood)".into());
    refused("another CPU model", &["another machine or CPU set", "CPU model: Pentium 4 2.8 GHz (Northwood) vs"]);
    with_host(&|h| h["hostname"] = "elsewhere".into());
    refused("another host name", &["host name: elsewhere vs"]);
    // Another CPU set: the run was restricted to CPU 0 (taskset, a cgroup).
    with_host(&|h| h["topology"]["restriction"] = serde_json::json!({"cpus": "0", "source": "affinity 0"}));
    refused("another CPU set", &["usable CPUs: 0 vs"]);
    // Put back as it was, it resumes.
    with_host(&|_| {});
    let out = kdelta(&e).args(args).arg("--resume").output().unwrap();
    assert_ok(&out);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("resumed run 1: "),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(status(&e), "complete");
}
