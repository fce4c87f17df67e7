//! The `cmd` family on the real binary: a user's command timed per run,
//! several compared, placeholders filled, and every way a command can
//! misbehave refused before the run or failed alone, saying why.

use crate::common::{Env, NO_QUIET_WAIT};
use std::time::{Duration, Instant};

/// `kdelta run cmd ARGS --config up --runs 3 --format json`, its status,
/// stdout as JSON (when it is JSON) and stderr. No waiting for quiet CPUs
/// (`NO_QUIET_WAIT`): no test here asserts a timing, and on a busy machine
/// those waits made the file take minutes (`trust.rs` tests the waits).
fn run(e: &Env, args: &[&str]) -> (i32, serde_json::Value, String) {
    let mut all = vec!["run", "cmd", "--config", "up", "--runs", "3", "--format", "json"];
    all.extend_from_slice(&NO_QUIET_WAIT);
    all.extend_from_slice(args);
    let out = e.cmd().args(&all).output().unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code().unwrap_or(-1), v, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// `run`, which must exit 0: its stdout as JSON.
#[track_caller]
fn ok_run(e: &Env, args: &[&str]) -> serde_json::Value {
    let (code, v, err) = run(e, args);
    assert_eq!(code, 0, "{args:?}: {err}");
    v
}

/// Refused before the run: exit 2, one line naming `what`, nothing stored.
fn refused(e: &Env, args: &[&str], what: &str) {
    let (code, _, err) = run(e, args);
    assert_eq!(code, 2, "{args:?}: {err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains(what), "{args:?}: {err}");
    assert!(!e.db().exists(), "{args:?} stored something");
}

#[test]
fn a_command_is_timed_with_its_costs_stored_per_run() {
    let e = Env::new();
    let v = ok_run(&e, &["--cmd", "sleep 0.02"]);
    let r = &v["results"][0];
    assert_eq!(
        (r["benchmark"].as_str(), r["status"].as_str(), r["unit"].as_str()),
        (Some("cmd.run"), Some("ok"), Some("ms"))
    );
    let median = r["median"].as_f64().unwrap();
    assert!((19.0..200.0).contains(&median), "{median}");
    let n = r["samples"].as_array().unwrap().len();
    for part in ["wall_s", "user_s", "sys_s", "max_rss_kb", "minor_faults", "major_faults", "voluntary_switches"] {
        let xs = r["extras"][format!("{part}_samples")].as_array().unwrap_or_else(|| panic!("{part}: {r}"));
        assert_eq!(xs.len(), n, "{part}");
    }
    assert!(r["extras"]["max_rss_kb"].as_f64().unwrap() > 0.0);
    assert!(r["extras"]["shell_wall_s"].as_f64().unwrap() > 0.0);
    assert!(e.tmp_leftovers().is_empty(), "{:?}", e.tmp_leftovers());
}

#[test]
fn the_shell_start_up_is_subtracted_from_every_run() {
    // Not a timing bound (the machine may be loaded): each sample is its
    // run's wall time less the shell cost its worker measured, floored at 0,
    // and the run lies within the sample's own span (`samples_meta.wall_s`).
    let e = Env::new();
    let v = ok_run(&e, &["--cmd", "true"]);
    let r = &v["results"][0];
    let samples = r["samples"].as_array().unwrap();
    let shell = r["extras"]["shell_wall_s_samples"].as_array().unwrap();
    let meta = r["samples_meta"].as_array().unwrap();
    assert_eq!((shell.len(), meta.len()), (samples.len(), samples.len()), "{r}");
    for ((x, sh), m) in samples.iter().zip(shell).zip(meta) {
        let (x, sh, gross) = (x.as_f64().unwrap(), sh.as_f64().unwrap(), m["wall_s"].as_f64().unwrap());
        assert!(sh > 0.0, "{r}");
        let net_ms = (gross - sh).max(0.0) * 1e3;
        assert!(
            x >= 0.0 && x <= net_ms + 1e-6,
            "sample {x} ms: its span {gross} s less the shell's {sh} s is {net_ms} ms"
        );
    }
}

#[test]
fn named_commands_are_compared_and_placeholders_swept() {
    let e = Env::new();
    let v = ok_run(&e, &["--cmd", "short=sleep 0.01", "--cmd", "long=sleep 0.05"]);
    let names: Vec<&str> =
        v["results"].as_array().unwrap().iter().map(|r| r["params"]["cmd"].as_str().unwrap()).collect();
    assert_eq!(names, ["short", "long"]);
    let m: Vec<f64> = v["results"].as_array().unwrap().iter().map(|r| r["median"].as_f64().unwrap()).collect();
    assert!(m[1] > m[0] + 20.0, "{m:?}");
    // A table compares the commands as configurations are compared.
    let t = &v["comparisons"][0];
    assert_eq!(t["columns"][1]["name"], "cmd=long", "{t}");
    assert!(t["rows"][0]["changes"][0]["change_pct"].as_f64().unwrap() < -50.0, "{t}");

    let v = ok_run(&e, &["--cmd", "sleep 0.0{t}", "--param", "t=1,4"]);
    let rs = v["results"].as_array().unwrap();
    assert_eq!(rs.len(), 2);
    assert_eq!(rs[1]["params"]["t"], "4");
    assert_eq!(rs[1]["extras"]["command"], "sleep 0.04");
    assert!(rs[1]["median"].as_f64().unwrap() > rs[0]["median"].as_f64().unwrap() + 15.0);
}

#[test]
fn setup_prepare_cleanup_and_input_run_where_hyperfine_runs_them() {
    let e = Env::new();
    let d = e.dir.path();
    let log = d.join("log");
    std::fs::write(d.join("in"), "needle\n").unwrap();
    let l = log.to_str().unwrap();
    let (setup, prepare, cleanup) =
        (format!("echo setup >> {l}"), format!("echo prepare >> {l}"), format!("echo cleanup >> {l}"));
    let input = d.join("in");
    let args = [
        "--cmd",
        "grep -q needle",
        "--input",
        input.to_str().unwrap(),
        "--setup",
        &setup,
        "--prepare",
        &prepare,
        "--cleanup",
        &cleanup,
    ];
    let v = ok_run(&e, &args);
    assert_eq!(v["results"][0]["status"], "ok");
    let text = std::fs::read_to_string(&log).unwrap();
    let count = |w: &str| text.lines().filter(|x| *x == w).count();
    let runs = v["results"][0]["samples"].as_array().unwrap().len();
    assert_eq!(count("prepare"), runs, "{text}");
    assert_eq!(count("setup"), count("cleanup"));
    assert!(count("setup") >= 1 && text.starts_with("setup") && text.ends_with("cleanup\n"), "{text}");
}

#[test]
fn bad_commands_are_refused_before_the_run() {
    let e = Env::new();
    refused(&e, &["--cmd", ""], "empty");
    refused(&e, &["--cmd", "fast=   "], "empty");
    refused(&e, &["--cmd", "kdelta-no-such-program --flag"], "kdelta-no-such-program: command not found");
    refused(&e, &["--cmd", "kdelta-no-such-program", "--shell", "none"], "kdelta-no-such-program: command not found");
    refused(&e, &["--cmd", "echo 'unclosed"], "echo 'unclosed");
    refused(&e, &["--cmd", "true", "--prepare", "kdelta-no-prep"], "kdelta-no-prep: command not found");
    refused(&e, &["--cmd", "true", "--input", "/nonexistent/kdelta-in"], "/nonexistent/kdelta-in");
    // A FIFO would block every run until the worker's limit: refused at once.
    let fifo = e.dir.path().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    let f = fifo.to_str().unwrap();
    refused(&e, &["--cmd", "true", "--output", f], "a FIFO: the output must be a regular file");
    refused(&e, &["--cmd", "true", "--input", f], "a FIFO: the input must be a regular file, /dev/null or null");
    refused(&e, &["--cmd", "true", "--cmd", "true"], "given twice");
    refused(&e, &["--cmd", "true", "--figure", "joules"], "joules");
    // A shell assignment first reads as NAME=COMMAND; the error says how to
    // run it as written, and that way it runs.
    let loop_ = "i=0; while [ $i -lt 3 ]; do i=$((i+1)); done";
    refused(&e, &["--cmd", loop_], "start it with `=` to run `i=0; while");
    ok_run(&e, &["--cmd", &format!("={loop_}")]);
    // /dev/null, the documented default, may be named.
    ok_run(&e, &["--cmd", "true", "--input", "/dev/null"]);
}

#[test]
fn a_failing_command_fails_alone_quoting_its_stderr() {
    let e = Env::new();
    let (code, v, _) = run(&e, &["--cmd", "bad=echo first >&2; echo boom >&2; exit 4", "--cmd", "good=true"]);
    assert_eq!(code, 1);
    let rs = v["results"].as_array().unwrap();
    assert_eq!(rs[0]["status"], "failed");
    let why = rs[0]["reason"].as_str().unwrap();
    assert!(why.contains("exit status 4") && why.contains("boom"), "{why}");
    assert_eq!(rs[1]["status"], "ok");
    let v = ok_run(&e, &["--cmd", "exit 4", "--ignore-failure"]);
    assert_eq!(v["results"][0]["status"], "ok");
}

/// Processes whose command line holds `marker`.
fn running(marker: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|d| std::fs::read(d.path().join("cmdline")).ok())
        .filter(|c| String::from_utf8_lossy(c).contains(marker))
        .count()
}

/// A moment after the run, no process whose command line holds `marker`.
#[track_caller]
fn none_left_after_a_moment(marker: &str) {
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(running(marker), 0, "processes of {marker:?} left running");
}

#[test]
fn a_hanging_command_is_killed_with_its_group_at_the_timeout() {
    let e = Env::new();
    let t0 = Instant::now();
    let (code, v, _) = run(&e, &["--cmd", "sleep 41.25 & sleep 41.25", "--param", "timeout=300ms"]);
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
    assert_eq!(code, 1);
    let why = v["results"][0]["reason"].as_str().unwrap();
    assert!(why.contains("timed out") && why.contains("process group"), "{why}");
    none_left_after_a_moment("41.25");
}

#[test]
fn daemons_left_behind_are_killed_and_counted() {
    let e = Env::new();
    let v = ok_run(&e, &["--cmd", "sleep 42.75 & sleep 42.75 & true"]);
    let r = &v["results"][0];
    assert_eq!(r["status"], "ok");
    let left = r["extras"]["left_processes_samples"].as_array().unwrap();
    assert!(!left.is_empty() && left.iter().all(|n| n.as_f64() == Some(2.0)), "{}", r["extras"]);
    let notes = r["notes"].to_string();
    assert!(notes.contains("left") && notes.contains("killed"), "{notes}");
    none_left_after_a_moment("42.75");
}

#[test]
fn figure_picks_the_compared_cost_and_its_unit() {
    let e = Env::new();
    let v = ok_run(&e, &["--cmd", "head -c 30000000 /dev/zero | cat >/dev/null", "--figure", "rss"]);
    let r = &v["results"][0];
    assert_eq!(r["unit"], "KB");
    assert_eq!(r["median"].as_f64(), r["extras"]["max_rss_kb"].as_f64(), "{r}");
    let v = ok_run(&e, &["--cmd", "true", "--figure", "faults"]);
    assert_eq!(v["results"][0]["unit"], "faults");
    assert!(v["results"][0]["median"].as_f64().unwrap() >= 1.0);
    let (code, _, err) = run(&e, &["--cmd", "true", "--figure", "bogus"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bogus") && err.contains("rss"), "{err}");
}

#[test]
fn a_daemon_in_a_session_of_its_own_is_still_found_and_killed() {
    let e = Env::new();
    // setsid forks when it leads a process group: the daemon leaves the
    // command's group and session, and its parent ends at once.
    let v = ok_run(&e, &["--cmd", "setsid sleep 43.25 & true"]);
    let left = v["results"][0]["extras"]["left_processes_samples"].as_array().unwrap().clone();
    assert!(left.iter().all(|n| n.as_f64() >= Some(1.0)), "{left:?}");
    none_left_after_a_moment("43.25");
}

#[test]
fn warmup_n_runs_the_command_n_times_first_in_each_worker() {
    let e = Env::new();
    let log = e.tmp().join("runs.log");
    let cmd = format!("echo run >> {}", log.display());
    for (warmup, extra) in [("0", 0), ("2", 2)] {
        let _ = std::fs::remove_file(&log);
        let v = ok_run(&e, &["--cmd", &cmd, "--warmup", warmup]);
        // Every sample (disturbed ones too) is one run; each worker adds its warm-up.
        let samples = v["results"][0]["samples"].as_array().unwrap().len();
        let lines = std::fs::read_to_string(&log).unwrap().lines().count();
        let warm = lines - samples;
        assert!(
            if extra == 0 { warm == 0 } else { warm >= extra && warm % extra == 0 },
            "--warmup {warmup}: {lines} runs, {samples} samples"
        );
        // The parameter every output shows is the count that ran.
        assert_eq!(v["results"][0]["params"]["warmup"], warmup, "{}", v["results"][0]["params"]);
    }
    // The text report's parameter line says it too.
    let out = e
        .cmd()
        .args(["run", "cmd", "--cmd", "true", "--runs", "3", "--warmup", "1"])
        .args(NO_QUIET_WAIT)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("warmup=1") && !text.contains("warmup=0"), "{text}");
}

#[test]
fn a_hang_ends_inside_the_worker_limit_as_the_command_s_own_failure() {
    let e = Env::new();
    let t0 = Instant::now();
    let (code, v, err) = run(&e, &["--cmd", "sleep 44.25", "--timeout", "2s"]);
    assert_eq!(code, 1, "{err}");
    let why = v["results"][0]["reason"].as_str().unwrap_or_default().to_string();
    assert!(why.contains("timed out after"), "{why}");
    assert!(t0.elapsed() < Duration::from_secs(30));
    assert_eq!(running("44.25"), 0);
}

#[test]
fn a_killed_kdelta_leaves_no_command_running() {
    let e = Env::new();
    let mut k = e
        .spawnable()
        .args(["run", "cmd", "--config", "up", "--runs", "1", "--cmd", "sleep 45.25 & sleep 45.25"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while running("45.25") < 2 && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(running("45.25") >= 2, "the command never started");
    k.kill().unwrap();
    k.wait().unwrap();
    let t0 = Instant::now();
    while running("45.25") > 0 && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(running("45.25"), 0);
}

/// Whatever ends kdelta (kill -9, SIGTERM, Ctrl-C, or the command killing
/// kdelta itself), a daemon the command started in a session of its own
/// (`setsid`, out of the worker's process group) is killed with it.
#[test]
fn a_setsid_daemon_never_outlives_kdelta() {
    use nix::sys::signal::Signal;
    // The daemon itself: `sleep MARKER` (kdelta's and the shell's command
    // lines hold the marker too).
    let daemons = |marker: &str| {
        let want = format!("sleep\0{marker}\0");
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|d| std::fs::read(d.path().join("cmdline")).is_ok_and(|c| c == want.as_bytes()))
            .count()
    };
    let e = Env::new();
    let kdelta_of_worker = "kill -9 $(cut -d' ' -f4 /proc/$PPID/stat)";
    for (marker, sig, then) in [
        ("46.25", Some(Signal::SIGKILL), "sleep 30"),
        ("47.25", Some(Signal::SIGTERM), "sleep 30"),
        ("48.25", Some(Signal::SIGINT), "sleep 30"),
        ("49.25", None, kdelta_of_worker),
    ] {
        let cmd = format!("setsid sleep {marker} & sleep 1; {then}");
        let mut k = e
            .spawnable()
            .args(["run", "cmd", "--config", "up", "--runs", "1", "--cmd", &cmd])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while daemons(marker) < 1 && t0.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(daemons(marker) >= 1, "{marker}: the daemon never started");
        if let Some(sig) = sig {
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(k.id() as i32), sig).unwrap();
        }
        k.wait().unwrap();
        let t0 = Instant::now();
        while daemons(marker) > 0 && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(daemons(marker), 0, "{marker} ({sig:?}): the setsid daemon outlived kdelta");
    }
}

#[test]
fn endless_output_costs_no_memory() {
    let e = Env::new();
    for output in ["null", "pipe"] {
        let (code, v, err) = run(&e, &["--cmd", "yes kdelta", "--output", output, "--param", "timeout=500ms"]);
        assert_eq!(code, 1, "{err}");
        assert!(v["results"][0]["reason"].as_str().unwrap().contains("timed out"));
    }
    // A lot of output through the pipe: read and thrown away as it comes.
    let v = ok_run(&e, &["--cmd", "head -c 300000000 /dev/zero", "--output", "pipe"]);
    assert_eq!(v["results"][0]["status"], "ok");
}

/// Compared commands take turns in one worker, run by run (`lockstep`), so
/// both see the same moments of the machine; `--interleave workers` gives
/// each its own workers instead.
#[test]
fn compared_commands_take_turns_in_one_worker() {
    let e = Env::new();
    let jobs = |v: &serde_json::Value, i: usize| -> std::collections::BTreeSet<u64> {
        v["results"][i]["samples_meta"].as_array().unwrap().iter().map(|m| m["job"].as_u64().unwrap()).collect()
    };
    let v = ok_run(&e, &["--cmd", "a=sleep 0.01", "--cmd", "b=sleep 0.02"]);
    assert_eq!(jobs(&v, 0), jobs(&v, 1));
    let v = ok_run(&e, &["--cmd", "a=sleep 0.01", "--cmd", "b=sleep 0.02", "--interleave", "workers"]);
    assert!(jobs(&v, 0).is_disjoint(&jobs(&v, 1)));
}

/// A run that does not say how to interleave takes the way `kdelta doctor`
/// found tighter on this machine, and says so; `--interleave` overrides it,
/// and a record made on another machine is ignored.
#[test]
fn the_doctor_s_record_chooses_the_default_interleave() {
    let e = Env::new();
    let text = |p: &str| std::fs::read_to_string(p).unwrap_or_default().trim().to_string();
    let mut models: Vec<String> = Vec::new();
    for line in text("/proc/cpuinfo").lines() {
        if let Some((k, v)) = line.split_once(':') {
            let v = v.split_whitespace().collect::<Vec<_>>().join(" ");
            if k.trim() == "model name" && !v.is_empty() && !models.contains(&v) {
                models.push(v);
            }
        }
    }
    if models.is_empty() {
        eprintln!("skipped: no `model name` in /proc/cpuinfo");
        return;
    }
    let record = |host: &str| {
        serde_json::json!({
            "machine": {"host": host, "cpu_model": models.join(" + "), "cpus": text("/sys/devices/system/cpu/possible")},
            "measured_at": 1.0, "limit": 0.05, "pairs": [],
            "pairing": {"cpus": [0, 1], "alternating_pct": 9.0, "duet_pct": 3.0, "pairs": 60, "best": "duet"}
        })
    };
    let dir = e.state().join("kdelta");
    std::fs::create_dir_all(&dir).unwrap();
    let write = |v: serde_json::Value| std::fs::write(dir.join("interference.json"), v.to_string()).unwrap();
    write(record(&text("/proc/sys/kernel/hostname")));
    let two = ["--cmd", "a=true", "--cmd", "b=true"];
    let v = ok_run(&e, &two);
    assert_eq!(v["run"]["environment"]["interleave"], "duet", "{v}");
    let why = v["run"]["environment"]["interleave_why"].as_str().unwrap_or_default();
    assert!(why.contains("chosen by kdelta doctor") && why.contains("3.0 % at the same moment"), "{why}");
    let v = ok_run(&e, &[&two[..], &["--interleave", "samples"]].concat());
    assert!(v["run"]["environment"]["interleave"].is_null(), "{v}");
    write(record("another-host"));
    let v = ok_run(&e, &two);
    assert!(v["run"]["environment"]["interleave"].is_null(), "{v}");
}

/// A name with capitals is a name (`Fast=`); one in capitals only is an
/// environment assignment, and when that leaves no command to run, the
/// refusal says how to name it.
#[test]
fn a_mixed_case_name_names_the_command() {
    let e = Env::new();
    let v = ok_run(&e, &["--cmd", "Fast=true", "--cmd", "Slow=true"]);
    let names: Vec<&str> =
        v["results"].as_array().unwrap().iter().filter_map(|r| r["params"]["cmd"].as_str()).collect();
    assert_eq!(names, ["Fast", "Slow"], "{v}");
    let e = Env::new();
    refused(&e, &["--cmd", "FAST=gzip -1 -c /dev/null"], "spell FAST with a lower-case letter");
}

/// A command where a benchmark goes, or `--cmd` without the family: one
/// line saying what to type, exit 2, nothing run.
#[test]
fn a_command_without_the_cmd_family_says_what_to_type() {
    let e = Env::new();
    for args in [&["run", "gzip -1 f"][..], &["run", "true"], &["run", "--cmd", "gzip -1 f"], &["run", "--cmd=true"]] {
        let out = e.cmd().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(" cmd --cmd '"), "{args:?}: {err}");
    }
    assert!(!e.db().exists());
}

/// A sweep of a placeholder is compared against its first value, with the
/// change as a factor; a change too few samples can star says why.
#[test]
fn a_sweep_is_compared_against_its_first_value_and_an_unstarred_change_says_why() {
    let e = Env::new();
    let out = e
        .cmd()
        .args(["run", "cmd", "--cmd", "sleep {t}", "--param", "t=0.01,0.05", "--runs", "3", "--config", "up"])
        .args(NO_QUIET_WAIT)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("t=0.05") && text.contains("x slower)"), "{text}");
    let starred = text.lines().any(|l| l.starts_with("cmd.run") && l.trim_end().ends_with('*'));
    assert!(starred || text.contains("not marked significant although beyond the threshold: 1 change ("), "{text}");
    let out = e.cmd().args(["compare", "1"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("nothing to compare"), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("x slower)"));
}

/// `--output inherit` shows what the command writes, on kdelta's stdout and
/// stderr (hyperfine's `--show-output`), piped or not.
#[test]
fn output_inherit_shows_the_commands_output() {
    let e = Env::new();
    let cmd = "echo kdelta-said-out; echo kdelta-said-err >&2";
    let out = e
        .cmd()
        .args(["run", "cmd", "--config", "up", "--runs", "2", "--cmd", cmd, "--output", "inherit"])
        .args(NO_QUIET_WAIT)
        .output()
        .unwrap();
    let (so, se) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{se}");
    // Whole lines: the command's text is also in the parameters line.
    assert!(so.lines().any(|l| l == "kdelta-said-out"), "stdout: {so}");
    assert!(se.lines().any(|l| l == "kdelta-said-err"), "stderr: {se}");
    // Without it, nothing of the command's is shown.
    let out = e
        .cmd()
        .args(["run", "cmd", "--config", "up", "--runs", "2", "--cmd", cmd])
        .args(NO_QUIET_WAIT)
        .output()
        .unwrap();
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{all}");
    assert!(!all.lines().any(|l| l == "kdelta-said-out" || l == "kdelta-said-err"), "{all}");
}

/// hyperfine's `--time-unit` and `--sort` change how times are shown (text
/// and markdown), never what is stored; the table keeps the first command
/// as the base of its change column, whatever the order of the lines.
#[test]
fn time_unit_and_sort_change_what_is_shown_not_what_is_stored() {
    let e = Env::new();
    let two = ["run", "cmd", "--config", "up", "--runs", "3", "--cmd", "slow=sleep 0.03", "--cmd", "fast=sleep 0.01"];
    let shown = |extra: &[&str]| {
        // No waiting for quiet CPUs: nothing here is a timing.
        let out = e.cmd().args(two).args(NO_QUIET_WAIT).args(extra).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{extra:?}: {text}{}", String::from_utf8_lossy(&out.stderr));
        let lines: Vec<String> =
            text.lines().filter(|l| l.starts_with("cmd=") && l.contains("(σ)")).map(String::from).collect();
        (text, lines)
    };
    let (text, lines) = shown(&["--time-unit", "second", "--sort", "mean-time"]);
    let row = text.lines().find(|l| l.starts_with("cmd.run")).unwrap_or_else(|| panic!("{text}"));
    assert_eq!(row.split_whitespace().nth(1), Some("s"), "{text}");
    let head = text.lines().find(|l| l.starts_with("benchmark")).unwrap();
    assert!(head.find("cmd=slow") < head.find("cmd=fast"), "the first command stays the base: {text}");
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].starts_with("cmd=fast") && lines[1].starts_with("cmd=slow"), "{lines:?}");
    assert!(lines.iter().all(|l| l.contains(" s (σ)") && l.contains(" s, sys ")), "{lines:?}");
    // The default order is the order given; `us` is hyperfine's microsecond.
    let (_, lines) = shown(&["-u", "us"]);
    assert!(lines[0].starts_with("cmd=slow") && lines[0].contains(" us (σ)"), "{lines:?}");
    // Stored as measured: milliseconds (hyperfine's JSON keeps its unit too).
    let out = e.cmd().args(["export", "1", "--format", "json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &v["results"][0];
    assert_eq!(r["unit"], "ms", "{r}");
    assert!(r["median"].as_f64().unwrap() > 5.0, "{r}");
    let (code, v, err) = run(&e, &["--cmd", "sleep 0.01", "--time-unit", "s"]);
    assert_eq!((code, v["results"][0]["unit"].as_str()), (0, Some("ms")), "{err}");

    // check takes the unit; it prints one line per row, so --sort is
    // refused there (128, as every refusal of check) before anything runs.
    let runs = |e: &Env| e.cmd().args(["runs", "--json"]).output().unwrap().stdout;
    let before = runs(&e);
    let check =
        ["check", "cmd", "--within", "--config", "up", "--runs", "3", "--cmd", "a=sleep 0.01", "--cmd", "b=sleep 0.02"];
    let out = e.cmd().args(check).args(["--time-unit", "us"]).args(NO_QUIET_WAIT).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(" us ("), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let before_refusals = runs(&e);
    assert_ne!(before, before_refusals);
    for bad in [&["--sort", "mean-time"][..], &["--time-unit", "minute"], &["--sort", "fastest"]] {
        let out = e.cmd().args(check).args(bad).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(128), "{bad:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{bad:?}: {err}");
        assert!(err.contains(bad[0]), "{bad:?}: {err}");
    }
    assert_eq!(runs(&e), before_refusals, "a refusal stored a run");
}
