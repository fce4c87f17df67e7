//! The binary end to end, with tiny sample counts.

use crate::common::*;
use predicates::prelude::*;

#[test]
fn help_and_list() {
    let e = Env::new();
    e.cmd().arg("--help").assert().success().stdout(predicate::str::contains("Exit status"));
    let out = e.cmd().args(["list", "--json"]).output().unwrap();
    assert!(out.status.success());
    let v = json(&out.stdout);
    let names: Vec<&str> = v.as_array().unwrap().iter().map(|b| b["name"].as_str().unwrap()).collect();
    for n in [
        "lat.syscall",
        "lat.read",
        "lat.write",
        "lat.stat",
        "lat.fstat",
        "lat.open",
        "lat.select.file",
        "lat.select.tcp",
        "lat.sig.install",
        "lat.sig.catch",
        "lat.pipe",
        "lat.proc.fork",
        "lat.proc.exec",
        "lat.proc.shell",
        "lat.unix",
        "lat.tcp",
        "bw.mem.cp",
        "bw.mem.rd",
        "bw.mem.wr",
    ] {
        assert!(names.contains(&n), "{n} missing from list");
    }
    let sys = v.as_array().unwrap().iter().find(|b| b["name"] == "lat.syscall").unwrap();
    assert_eq!(sys["unit"], "us");
    assert_eq!(sys["better"], "lower");
    e.cmd().arg("list").assert().success().stdout(predicate::str::contains("lower is better"));
}

#[test]
fn run_json_shape() {
    let e = Env::new();
    let v = ok_json(
        &e,
        &["run", "lat.syscall", "--runs", "2", "--sample-time", "1ms", "--label", "shape", "--format", "json"],
    );
    assert!(v["run"]["id"].as_i64().unwrap() >= 1);
    assert_eq!(v["run"]["label"], "shape");
    assert!(v["run"]["host"].is_object());
    let r = &v["results"][0];
    assert_eq!(r["benchmark"], "lat.syscall");
    assert_eq!(r["config"], "all");
    assert_eq!(r["unit"], "us");
    assert_eq!(r["better"], "lower");
    assert_eq!(r["status"], "ok");
    assert!(!r["cpus"].as_str().unwrap().is_empty());
    assert!(r["params"].is_object());
    // Two clean samples; disturbed ones are kept beside them, each with its record.
    let n = r["samples"].as_array().unwrap().len();
    assert!(n >= 2, "{n}");
    assert_eq!(r["samples_meta"].as_array().unwrap().len(), n);
    assert_eq!(r["n"], r["quality"]["clean"]);
    for k in ["median", "mean", "min", "max", "stddev", "cv"] {
        let x = r[k].as_f64().unwrap_or_else(|| panic!("{k} missing"));
        assert!(x.is_finite() && x >= 0.0, "{k} = {x}");
    }
    assert!(r["median"].as_f64().unwrap() > 0.0);
    assert!(e.tmp_leftovers().is_empty(), "left behind: {:?}", e.tmp_leftovers());
}

#[test]
fn every_lat_benchmark_gives_a_positive_figure() {
    let e = Env::new();
    let v = ok_json(&e, &["run", "lat", "--quick", "--runs", "1", "--sample-time", "1ms", "--format", "json"]);
    let results = v["results"].as_array().unwrap();
    assert!(results.len() >= 16, "{}", results.len());
    for r in results {
        assert_eq!(r["status"], "ok", "{r}");
        let m = r["median"].as_f64().unwrap();
        assert!(m.is_finite() && m > 0.0, "{}: {m}", r["benchmark"]);
    }
}

#[test]
fn every_bw_benchmark_gives_a_positive_figure() {
    let e = Env::new();
    let v =
        ok_json(&e, &["run", "bw", "--runs", "1", "--sample-time", "1ms", "--param", "bw:size=1M", "--format", "json"]);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    for r in results {
        assert_eq!(r["unit"], "MB/s");
        assert_eq!(r["better"], "higher");
        assert!(r["median"].as_f64().unwrap() > 0.0);
    }
}

#[test]
fn two_configs_print_a_comparison_with_a_geomean() {
    let e = Env::new();
    let out = e
        .cmd()
        .args(["run", "lat.syscall", "lat.read", "--config", "up,noht", "--runs", "2", "--sample-time", "1ms"])
        .output()
        .unwrap();
    assert_ok(&out);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("change"), "{s}");
    assert!(s.contains("geomean lat (2 rows)"), "{s}");
    assert!(s.contains("up: cpus"), "{s}");
    for fmt in ["markdown", "csv", "json"] {
        e.cmd().args(["compare", "--format", fmt]).assert().success().stdout(predicate::str::contains("lat.syscall"));
    }
}

#[test]
fn compare_two_stored_runs() {
    let e = Env::new();
    for l in ["base", "new"] {
        e.cmd()
            .args(["run", "lat.syscall", "--config", "up", "--runs", "2", "--sample-time", "1ms", "--label", l])
            .assert()
            .success();
    }
    let v = ok_json(&e, &["compare", "base", "new", "--format", "json"]);
    let t = &v["comparisons"][0];
    assert_eq!(t["rows"][0]["benchmark"], "lat.syscall");
    assert!(t["rows"][0]["changes"][0]["change_pct"].as_f64().unwrap().is_finite());
    e.cmd()
        .args(["runs"])
        .assert()
        .success()
        .stdout(predicate::str::contains("base").and(predicate::str::contains("complete")));
    e.cmd().args(["show", "new"]).assert().success().stdout(predicate::str::contains("lat.syscall"));
    let csv = e.cmd().args(["export", "base", "--format", "csv"]).output().unwrap();
    let text = String::from_utf8_lossy(&csv.stdout);
    assert!(text.starts_with("run,benchmark"), "{text}");
    assert_eq!(text.lines().count(), 2);
    e.cmd().args(["show", "nosuchlabel"]).assert().code(2).stderr(predicate::str::contains("nosuchlabel"));
}

/// One spelling per idea, the old ones still taken: `model=thread` runs
/// and is stored as `model=threads`; `chat` is the benchmark `chat.rooms`;
/// a value outside the enum is refused on one line naming the allowed ones.
#[test]
fn old_spellings_are_accepted_and_stored_canonical() {
    let e = Env::new();
    let out = e.cmd().args(["list", "--json"]).output().unwrap();
    let v = json(&out.stdout);
    let find = |n: &str| v.as_array().unwrap().iter().find(|b| b["name"] == n).cloned();
    let chat = find("chat.rooms").expect("chat.rooms listed");
    assert_eq!(chat["family"], "chat");
    assert!(find("chat").is_none(), "the old name is an alias, not a second benchmark");
    let ctx = find("thread.ctx").unwrap();
    let model = ctx["params"].as_array().unwrap().iter().find(|p| p["name"] == "model").unwrap().clone();
    assert_eq!(model["kind"], "threads|processes");
    let tb = find("tbench.throughput").unwrap();
    assert_eq!(tb["params"].as_array().unwrap().iter().find(|p| p["name"] == "server").unwrap()["default"], "local");

    let out = e.cmd().args(["run", "thread.ctx", "--param", "model=thread,fiber"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"fiber\"") && err.contains("threads|processes") && err.trim_end().lines().count() == 1,
        "{err}"
    );

    let args = [
        "run",
        "thread.ctx",
        "--runs",
        "1",
        "--sample-time",
        "1ms",
        "--param",
        "model=thread",
        "--param",
        "threads=2",
        "--param",
        "size=0",
        "--format",
        "json",
    ];
    let v = ok_json(&e, &args);
    assert_eq!(v["results"][0]["params"]["model"], "threads");
}

#[test]
fn smt_configuration_refused_without_siblings() {
    let e = Env::new();
    let root = e.dir.path().join("sysfs");
    fake_sysfs(&root, &[&[0], &[1]]);
    let out = e.cmd().env("KDELTA_SYSFS_ROOT", &root).args(["run", "lat.syscall", "--config", "ht"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("SMT siblings"), "{err}");
    // With --skip-unavailable the run goes on and records it.
    let v = output_json(
        e.cmd()
            .env("KDELTA_SYSFS_ROOT", &root)
            .args(["run", "lat.syscall", "--config", "up,ht", "--skip-unavailable", "--format", "json"])
            .args(ONE_SAMPLE),
    );
    let statuses = statuses(&v);
    assert!(statuses.contains(&"unavailable") && statuses.contains(&"ok"), "{statuses:?}");
}

#[test]
fn topo_describes_fake_smt_machine() {
    let e = Env::new();
    let root = e.dir.path().join("sysfs");
    fake_sysfs(&root, &[&[0, 2], &[1, 3]]);
    let v = output_json(e.cmd().env("KDELTA_SYSFS_ROOT", &root).args(["topo", "--json"]));
    assert_eq!(v["topology"]["cores"].as_array().unwrap().len(), 2);
    let out = e.cmd().env("KDELTA_SYSFS_ROOT", &root).arg("topo").output().unwrap();
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("ht1") && s.contains("0,2"), "{s}");
}

#[test]
fn chart_writes_an_svg() {
    let e = Env::new();
    e.cmd()
        .args(["run", "test.sleep", "--param", "us=10,40", "--config", "up,noht"])
        .args(ONE_SAMPLE)
        .assert()
        .success();
    let svg = e.dir.path().join("c.svg");
    e.cmd().args(["chart", "-o"]).arg(&svg).assert().success();
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("<svg") && text.contains("test.sleep"), "{}", &text[..200.min(text.len())]);
    // A run with nothing to draw says so.
    e.cmd().args(["run", "test.sleep", "--runs", "1", "--sample-time", "1ms", "--label", "flat"]).assert().success();
    e.cmd()
        .args(["chart", "flat", "-o"])
        .arg(e.dir.path().join("d.svg"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("nothing to chart"));
}

#[test]
fn simulate_and_place_are_wired() {
    let e = Env::new();
    let out = e.cmd().args(["simulate", "--iterations", "5", "--format", "json"]).output().unwrap();
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\"simulated\": true") || text.contains("\"simulated\":true"), "{text}");
    e.cmd().args(["simulate", "--topology", "2x1"]).assert().code(2);
    e.cmd().args(["place", "--help"]).assert().success();
}

#[test]
fn simulations_are_stored_marked_and_comparable() {
    let e = Env::new();
    e.cmd().args(["simulate", "--iterations", "30", "--store", "--label", "sim"]).assert().success();
    let v = json(&e.cmd().args(["show", "sim", "--format", "json"]).output().unwrap().stdout);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    for r in results {
        assert_eq!(r["simulated"], true);
        assert_eq!(r["benchmark"], "sim.loops");
        assert_eq!(r["samples"].as_array().unwrap().len(), 60);
    }
    let stock = results.iter().find(|r| r["config"] == "stock-2002").unwrap();
    assert!(stock["warnings"].to_string().contains("two_clusters"), "{}", stock["warnings"]);
    e.cmd().args(["compare", "sim"]).assert().success().stdout(predicates::str::contains("ht-aware-2002"));
}

/// `kdelta loadfile` is the dbench family's own subcommand, joined to the
/// top-level parser from its `Family` description.
#[test]
fn a_family_subcommand_runs_and_refuses_bad_input() {
    let e = Env::new();
    e.cmd().arg("--help").assert().success().stdout(predicate::str::contains("loadfile"));
    let out = e.cmd().args(["loadfile", "generate", "--ops", "30", "--seed", "2"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("# kdelta NetBench-like loadfile: 30 operations, seed 2"), "{text}");
    e.cmd()
        .args(["loadfile", "generate", "--ops", "1"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--ops 1 is not allowed"));
    e.cmd().args(["loadfile", "generate", "--bogus"]).assert().code(2);
}
