//! Trustworthy comparisons, end to end on the real binary: per-sample
//! records, the interleaved schedule, retakes, figures below resolution,
//! summarised warnings.

use crate::common::{assert_ok, json, output_json, Env};
use predicates::prelude::*;

fn run_json(e: &Env, args: &[&str]) -> serde_json::Value {
    let mut a = vec!["run", "--sample-time", "2ms", "--warmup", "0s", "--format", "json"];
    a.extend_from_slice(args);
    output_json(e.cmd().args(&a))
}

#[test]
fn every_result_carries_samples_meta() {
    let e = Env::new();
    let v = run_json(&e, &["lat.syscall", "lat.pipe", "test.sleep", "--runs", "3", "--config", "up"]);
    for r in v["results"].as_array().unwrap() {
        let samples = r["samples"].as_array().unwrap();
        let meta = r["samples_meta"].as_array().unwrap();
        assert_eq!(meta.len(), samples.len(), "{}", r["benchmark"]);
        for m in meta {
            assert!(m["t"].as_f64().unwrap() > 1e9);
            assert!(m["wall_s"].as_f64().unwrap() > 0.0);
            assert!(m["cpu_s"].as_f64().unwrap() >= 0.0);
            assert!(m["round"].as_u64().unwrap() >= 1 && m["job"].as_u64().unwrap() >= 1);
            assert!(m["disturbed"].is_boolean());
            // `up` is CPU 0: every task of every sample ran there.
            assert!(m["cpus_start"].as_array().unwrap().iter().all(|c| c == 0), "{m}");
        }
        let q = &r["quality"];
        assert_eq!(q["wanted"], 3);
        assert_eq!(q["clean"].as_u64().unwrap() + q["disturbed"].as_u64().unwrap(), samples.len() as u64);
        let kind = match r["benchmark"].as_str().unwrap() {
            "lat.syscall" => "solo",
            _ => "waits",
        };
        assert_eq!(q["kind"], kind, "{}", r["benchmark"]);
    }
    // The echo process of lat.pipe is a peer: two CPUs per sample.
    let pipe = v["results"].as_array().unwrap().iter().find(|r| r["benchmark"] == "lat.pipe").unwrap();
    assert_eq!(pipe["samples_meta"][0]["cpus_start"].as_array().unwrap().len(), 2);
}

/// The run's stored schedule: (result number, round) per point of each
/// worker, in the order they ran.
fn schedule(v: &serde_json::Value) -> Vec<(u64, u64)> {
    v["run"]["environment"]["schedule"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_u64().unwrap(), p[1].as_u64().unwrap()))
        .collect()
}

#[test]
fn parameter_values_are_interleaved_and_the_schedule_stored() {
    let e = Env::new();
    let v = run_json(&e, &["test.sleep", "--param", "us=50,100", "--runs", "3", "--config", "up"]);
    let rs = v["results"].as_array().unwrap();
    assert_eq!(rs.len(), 2);
    // Round by round, each value is sampled once before either is sampled again.
    let sched = schedule(&v);
    assert!(sched.len() >= 6, "{sched:?}");
    assert_eq!(&sched[..6], &[(0, 1), (1, 1), (1, 2), (0, 2), (0, 3), (1, 3)], "A B, B A, A B");
    // The stored start times say the same: the first sample of each round.
    let start = |r: &serde_json::Value, round: u64| -> f64 {
        r["samples_meta"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["round"] == round)
            .map(|m| m["t"].as_f64().unwrap())
            .fold(f64::INFINITY, f64::min)
    };
    let (a, b) = (&rs[0], &rs[1]);
    let order = [start(a, 1), start(b, 1), start(b, 2), start(a, 2), start(a, 3), start(b, 3)];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
}

/// A run's benchmarks take their rounds in passes: round 1 of each, then
/// round 2 of each, so a benchmark's rounds spread over the whole run.
#[test]
fn the_benchmarks_of_a_run_take_their_rounds_in_passes() {
    let e = Env::new();
    let v = run_json(&e, &["test.sleep", "test.work", "--runs", "3", "--config", "up"]);
    let rs = v["results"].as_array().unwrap();
    let names: Vec<&str> = rs.iter().map(|r| r["benchmark"].as_str().unwrap()).collect();
    assert_eq!(names, ["test.sleep", "test.work"], "stored in plan order");
    let sched = schedule(&v);
    assert!(sched.len() >= 6, "{sched:?}");
    assert_eq!(&sched[..6], &[(0, 1), (1, 1), (0, 2), (1, 2), (0, 3), (1, 3)], "pass by pass");
}

#[test]
fn disturbed_samples_are_retaken_and_summarised() {
    let e = Env::new();
    let v = run_json(&e, &["test.disturbed", "--runs", "3"]);
    let r = &v["results"][0];
    let meta = r["samples_meta"].as_array().unwrap();
    let disturbed = meta.iter().filter(|m| m["disturbed"] == true).count();
    assert!(disturbed >= 1, "a sleep inside the timed loop must be seen");
    assert!(r["quality"]["retaken"].as_u64().unwrap() >= 1);
    // The summary uses clean samples only.
    assert_eq!(r["n"], r["quality"]["clean"]);
    assert!(v["run"]["environment"]["retaken"].as_u64().unwrap() >= 1);

    let out = e
        .cmd()
        .args(["run", "test.disturbed", "--runs", "3", "--sample-time", "2ms", "--warmup", "0s"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("disturbed samples (other work on the CPU; kept, not used) in 1 of 1 results"), "{text}");
    assert!(text.contains("--verbose"), "{text}");
    let id = e.cmd().args(["runs", "--json"]).output().unwrap();
    let id = json(&id.stdout)[0]["id"].as_i64().unwrap().to_string();
    e.cmd()
        .args(["show", &id, "--warnings"])
        .assert()
        .success()
        .stdout(predicate::str::contains("test.disturbed [all]: ").and(predicate::str::contains("retaken")));
    e.cmd()
        .args(["show", &id, "--verbose"])
        .assert()
        .success()
        .stdout(predicate::str::contains("samples disturbed by other work"));
}

#[test]
fn a_net_figure_straddling_zero_is_below_resolution_and_left_out_of_the_geomean() {
    let e = Env::new();
    let out = e
        .cmd()
        .args([
            "run",
            "test.net",
            "test.sleep",
            "--param",
            "test.sleep:us=20,40",
            "--config",
            "up,cpus=0",
            "--runs",
            "6",
            "--sample-time",
            "1ms",
            "--warmup",
            "0s",
        ])
        .output()
        .unwrap();
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text.lines().find(|l| l.starts_with("test.net")).unwrap();
    assert!(row.contains("< 0.1000"), "{row}");
    assert!(!row.contains("-0.1"), "never a negative median: {row}");
    assert!(text.contains("geomean test (2 of 3 rows)"), "{text}");
    assert!(text.contains("below resolution"), "{text}");
    let v = run_json(&e, &["test.net", "--runs", "6"]);
    let r = &v["results"][0];
    assert_eq!(r["status"], "ok");
    assert!((r["below_resolution"].as_f64().unwrap() - 0.1).abs() < 1e-9);
    assert!(r["samples"].as_array().unwrap().len() >= 6, "the raw figures are kept");
}

#[test]
fn runs_takes_a_count_or_auto() {
    let e = Env::new();
    for bad in ["0", "x", "10001"] {
        e.cmd()
            .args(["run", "lat.syscall", "--runs", bad])
            .assert()
            .code(2)
            .stderr(predicate::str::contains("expected auto or a whole number"));
    }
    e.cmd()
        .args(["run", "lat.syscall", "--ci-target", "0"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--ci-target"));
    let v = run_json(&e, &["test.sleep", "--runs", "auto", "--ci-target", "50", "--param", "us=20"]);
    let env = &v["run"]["environment"];
    assert_eq!(env["runs"], "auto");
    assert_eq!(env["ci_target_pct"], 50.0);
    let q = &v["results"][0]["quality"];
    assert!(q["ci_target_met"].is_boolean(), "{q}");
    // At least the benchmark's own count (10) taken, at most three times
    // that clean: on a loaded machine disturbed samples are kept beside
    // their retakes, and the retakes' time is bounded, so fewer than 10 may
    // be clean.
    let meta = v["results"][0]["samples_meta"].as_array().unwrap();
    let clean = meta.iter().filter(|m| m["disturbed"] != true).count();
    assert!(meta.len() >= 10 && clean <= 30, "{clean} clean of {}", meta.len());
}

/// For each job a result took samples in: the time and result of each.
fn samples_by_job(rs: &[serde_json::Value]) -> std::collections::BTreeMap<u64, Vec<(f64, usize)>> {
    let mut by = std::collections::BTreeMap::<u64, Vec<(f64, usize)>>::new();
    for (k, r) in rs.iter().enumerate() {
        for m in r["samples_meta"].as_array().unwrap() {
            by.entry(m["job"].as_u64().unwrap()).or_default().push((m["t"].as_f64().unwrap(), k));
        }
    }
    by
}

#[test]
fn compared_values_take_turns_sample_by_sample_in_one_worker() {
    let e = Env::new();
    let v = run_json(&e, &["test.turns", "--param", "us=20,60", "--runs", "6"]);
    let rs = v["results"].as_array().unwrap();
    assert_eq!(rs.len(), 2);
    let by = samples_by_job(rs);
    for (job, mut s) in by {
        // Both values in every worker, one turn each per cycle while both
        // sample: each cycle's order is drawn at random, so two samples of
        // one value may meet across a cycle's end, but neither value ever
        // gets ahead of the other by more than one sample.
        s.sort_by(|a, b| a.0.total_cmp(&b.0));
        let each = [0, 1].map(|k| s.iter().filter(|x| x.1 == k).count());
        assert!(each[0] > 0 && each[1] > 0, "job {job}: {s:?}");
        let both = 2 * each[0].min(each[1]);
        let mut lead = 0i64;
        for x in &s[..both] {
            lead += if x.1 == 0 { 1 } else { -1 };
            assert!(lead.abs() <= 1, "job {job}: {s:?}");
        }
    }
    // The figures are each point's own.
    let med = |r: &serde_json::Value| r["median"].as_f64().unwrap();
    assert!(med(&rs[1]) > 1.5 * med(&rs[0]), "{} {}", med(&rs[0]), med(&rs[1]));
}

#[test]
fn a_choice_is_compared_before_a_scale_with_as_many_values() {
    // impl and size both have two values: the impls take turns at each
    // size, not the sizes at each impl.
    let e = Env::new();
    let v = run_json(
        &e,
        &["mem.strlen", "--param", "size=64,128", "--param", "impl=libc,tuned", "--param", "cache=warm", "--runs", "2"],
    );
    let rs = v["results"].as_array().unwrap();
    assert_eq!(rs.len(), 4);
    for (job, s) in samples_by_job(rs) {
        let points: std::collections::BTreeSet<usize> = s.iter().map(|x| x.1).collect();
        let sizes: std::collections::BTreeSet<&str> =
            points.iter().map(|&k| rs[k]["params"]["size"].as_str().unwrap()).collect();
        let impls: std::collections::BTreeSet<&str> =
            points.iter().map(|&k| rs[k]["params"]["impl"].as_str().unwrap()).collect();
        assert_eq!((sizes.len(), impls.len()), (1, 2), "job {job} measured {sizes:?} x {impls:?}");
    }
}

#[test]
fn interleave_workers_gives_each_value_workers_of_its_own() {
    let e = Env::new();
    let v = run_json(&e, &["test.turns", "--param", "us=20,60", "--runs", "4", "--interleave", "workers"]);
    let rs = v["results"].as_array().unwrap();
    for (job, s) in samples_by_job(rs) {
        assert!(s.iter().all(|x| x.1 == s[0].1), "job {job} measured both values: {s:?}");
    }
    // Not a benchmark that takes turns: workers of their own too.
    let v = run_json(&e, &["test.sleep", "--param", "us=50,100", "--runs", "2", "--config", "up"]);
    for (job, s) in samples_by_job(v["results"].as_array().unwrap()) {
        assert!(s.iter().all(|x| x.1 == s[0].1), "job {job}: {s:?}");
    }
}

#[test]
fn a_duet_samples_compared_values_together_on_swapping_cpus() {
    let e = Env::new();
    let v = run_json(
        &e,
        &["test.turns", "--param", "us=200,600", "--runs", "6", "--interleave", "duet", "--config", "noht"],
    );
    let env = &v["run"]["environment"];
    assert_eq!(env["interleave"], "duet");
    if env["duet"].is_null() {
        // One CPU here: the values took turns, and the run says so.
        assert!(env["duet_fell_back"][0].as_str().unwrap().ends_with("[noht]"), "{env}");
        return;
    }
    let rs = v["results"].as_array().unwrap();
    // Per job, each value's samples in order: after the set-up cycle, the
    // i-th of each ran on a CPU of its own (the swapping is unit-tested).
    let mut met = 0;
    for job in samples_by_job(rs).keys() {
        let cpus = |k: usize| -> Vec<u64> {
            rs[k]["samples_meta"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["job"].as_u64() == Some(*job))
                .map(|m| m["cpus_start"][0].as_u64().unwrap())
                .collect()
        };
        let (a, b) = (cpus(0), cpus(1));
        for i in 1..a.len().min(b.len()) {
            assert_ne!(a[i], b[i], "job {job}: {a:?} {b:?}");
        }
        met += a.len().min(b.len()).saturating_sub(1);
    }
    assert!(met > 0, "{rs:?}");
    let out = e.cmd().args(["show", "1"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("duet: compared values sampled at the same moment"), "{text}");
}

#[test]
fn a_point_failing_in_a_tie_leaves_the_other_measured() {
    let e = Env::new();
    let out = e
        .cmd()
        .args([
            "run",
            "--sample-time",
            "2ms",
            "--warmup",
            "0s",
            "--format",
            "json",
            "test.turns",
            "--param",
            "fail=false,true",
            "--runs",
            "3",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let v = json(&out.stdout);
    let rs = v["results"].as_array().unwrap();
    let ok = rs.iter().find(|r| r["params"]["fail"] == "false").unwrap();
    let bad = rs.iter().find(|r| r["params"]["fail"] == "true").unwrap();
    assert_eq!(ok["status"], "ok", "{ok}");
    assert!(ok["samples"].as_array().unwrap().len() >= 3);
    assert_eq!(bad["status"], "failed", "{bad}");
    assert!(bad.to_string().contains("deliberate failure"), "{bad}");
}

/// A CPU-bound loop pinned to CPU 0 in a process group of its own, killed
/// and reaped on drop.
struct Hog(std::process::Child);

impl Hog {
    fn on_cpu0() -> Hog {
        use std::os::unix::process::CommandExt;
        let mut c = std::process::Command::new("sh");
        c.args(["-c", "while :; do :; done"]).process_group(0);
        // SAFETY: sched_setaffinity is async-signal-safe.
        unsafe {
            c.pre_exec(|| {
                let mut set = nix::sched::CpuSet::new();
                set.set(0).map_err(std::io::Error::from)?;
                nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).map_err(std::io::Error::from)
            });
        }
        Hog(c.spawn().unwrap())
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A command that keeps its CPU busy: beside the hog it waits in the run
/// queue for about half its time, which the whole-run rule sees (a `sleep`
/// that the scheduler wakes ahead of the hog would not be disturbed).
const SPIN: &str = "=i=0; while [ $i -lt 40000 ]; do i=$((i+1)); done";

/// `--quiet-wait`: after a disturbed whole-run sample, and before a
/// retake's first, the worker waits for its CPUs to go quiet; a worker that
/// waited in vain once waits no more, and how long it all took is stored.
#[test]
fn whole_run_samples_wait_for_quiet_cpus_once_per_worker_and_say_how_long() {
    let e = Env::new();
    let _hog = Hog::on_cpu0();
    let run = |wait: &str| {
        let v = run_json(
            &e,
            &["cmd", "--cmd", SPIN, "--config", "up", "--runs", "2", "--quiet-wait", wait, "--timeout", "60s"],
        );
        v["results"][0].clone()
    };
    let r = run("300ms");
    let q = &r["quality"];
    assert!(q["disturbed"].as_u64().unwrap() >= 2, "the hog shares CPU 0 with every run: {q}");
    let workers: std::collections::BTreeSet<u64> =
        r["samples_meta"].as_array().unwrap().iter().map(|m| m["job"].as_u64().unwrap()).collect();
    // Every worker but the first waited once, in vain, before its first
    // sample (one sample each: the rounds take turns); none waited again.
    let waits = workers.len() as u64 - 1;
    assert_eq!(r["extras"]["quiet_in_vain"].as_u64(), Some(waits), "{}", r["extras"]);
    let waited = r["extras"]["quiet_waited_s"].as_f64().unwrap();
    assert!(waited >= 0.3 * waits as f64 && waited < 0.3 * waits as f64 + 2.0, "{waited}");
    let r = run("0");
    assert!(r["quality"]["disturbed"].as_u64().unwrap() >= 2);
    assert_eq!(r["extras"].get("quiet_waited_s"), None, "{}", r["extras"]);
}
