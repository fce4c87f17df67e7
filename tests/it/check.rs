//! `kdelta check` on the real binary: every exit status, from stored runs
//! written as test data (deterministic) and from runs it measures itself.

use crate::common::{Env, NO_QUIET_WAIT};
use kdelta::testing::stored::{write_run, Result as Stored};
use serde_json::json;

/// Ten samples around `m`, spread by 1 %.
fn around(m: f64) -> Vec<f64> {
    (0..10).map(|i| m * (1.0 + (i as f64 - 4.5) / 450.0)).collect()
}

fn time(m: f64) -> Stored {
    Stored { benchmark: "demo.time".into(), samples: around(m), ..Default::default() }
}

fn rate(m: f64) -> Stored {
    Stored { benchmark: "demo.rate".into(), higher_is_better: true, samples: around(m), ..Default::default() }
}

/// `kdelta ARGS`: exit status, stdout, stderr. A command that measures
/// (`run cmd`, `check cmd`) does so without quiet waits (`NO_QUIET_WAIT`).
fn kdelta(e: &Env, args: &[&str]) -> (i32, String, String) {
    let mut c = e.cmd();
    c.args(args);
    if args.get(1) == Some(&"cmd") {
        c.args(NO_QUIET_WAIT);
    }
    let out = c.output().unwrap();
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), s(&out.stdout), s(&out.stderr))
}

/// Two stored runs on the same (unknown) host; `check --run B --against A`.
fn judged(a: &[Stored], b: &[Stored], extra: &[&str]) -> (i32, String, String) {
    let e = Env::new();
    write_run(&e.db(), Some("base"), json!({}), a).unwrap();
    let id = write_run(&e.db(), Some("new"), json!({}), b).unwrap().to_string();
    let mut args = vec!["check", "--run", &id, "--against", "base"];
    args.extend_from_slice(extra);
    kdelta(&e, &args)
}

#[test]
fn nothing_worse_exits_0_and_prints_a_line_per_row() {
    let (code, out, err) = judged(&[time(10.0), rate(10.0)], &[time(10.0), rate(10.0)], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(lines[0].starts_with("demo.time [up]: 10") && lines[0].ends_with(": ok (same)"), "{out}");
    assert!(lines[2].starts_with("ok: 2 row(s), none regressed beyond 3%"), "{out}");
    // Better in both directions: improved, still 0.
    let (code, out, _) = judged(&[time(10.0), rate(10.0)], &[time(5.0), rate(20.0)], &[]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.matches(": improved").count(), 2, "{out}");
}

#[test]
fn a_regression_in_either_direction_exits_1_naming_it() {
    let (code, out, err) = judged(&[time(10.0), rate(10.0)], &[time(20.0), rate(10.0)], &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("demo.time [up]: 10.00 -> 20.00 ms (+100.0%, 2.00x slower, worse): regressed"), "{out}");
    assert!(out.lines().last().unwrap().starts_with("regressed: demo.time [up] (run 2 (new) against run 1 (base)"));
    // A rate halved is worse too.
    let (code, out, _) = judged(&[time(10.0), rate(10.0)], &[time(10.0), rate(5.0)], &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("demo.rate [up]: 10.00 -> 5.000 ms (-50.0%, 2.00x slower, worse): regressed"), "{out}");
    // Within --max-regression: ok.
    let (code, out, _) = judged(&[time(10.0)], &[time(20.0)], &["--max-regression", "150"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn a_row_that_cannot_be_told_exits_125() {
    let failed = Stored { failed: Some("exit status 3".into()), ..time(10.0) };
    let (code, out, err) = judged(&[failed], &[time(10.0)], &[]);
    assert_eq!(code, 125, "{out}{err}");
    assert!(out.contains("cannot tell (the baseline's result failed: exit status 3)"), "{out}");
    let noisy = Stored { noisy: true, ..time(20.0) };
    let (code, out, _) = judged(&[time(10.0)], &[noisy], &[]);
    assert_eq!(code, 125, "{out}");
    assert!(out.contains("cannot tell (a side is noisy; interval"), "{out}");
    // A regression elsewhere wins: 1.
    let noisy = Stored { noisy: true, ..time(20.0) };
    let (code, out, _) = judged(&[time(10.0), rate(10.0)], &[noisy, rate(5.0)], &[]);
    assert_eq!(code, 1, "{out}");
}

#[test]
fn bad_input_exits_128_with_one_line() {
    let one_line = |(code, out, err): (i32, String, String)| {
        assert_eq!(code, 128, "{out}{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        err
    };
    let err = one_line(judged(&[time(10.0)], &[time(10.0)], &["lat"]));
    assert!(err.contains("selector \"lat\" matches nothing in run 1 (base): it has demo.time"), "{err}");
    let err = one_line(judged(&[time(10.0)], &[time(10.0)], &["--runs", "3"]));
    assert!(err.contains("--run judges a stored run"), "{err}");
    let err = one_line(judged(&[time(10.0)], &[time(10.0)], &["--format", "json"]));
    assert!(err.contains("--format and --verbose are for `kdelta run`"), "{err}");
    let err = one_line(judged(&[time(10.0)], &[rate(10.0)], &[]));
    assert!(err.contains("run 2 (new) has no row run 1 (base) has"), "{err}");
    let e = Env::new();
    write_run(&e.db(), Some("base"), json!({}), &[time(10.0)]).unwrap();
    let err = one_line(kdelta(&e, &["check", "--run", "1", "--against", "nope"]));
    assert!(err.contains("no run \"nope\""), "{err}");
    let err = one_line(kdelta(&e, &["check", "--against", "base"]));
    assert!(err.contains("no benchmark given"), "{err}");
    // A hyperfine habit, --cmd without the family, is told what to type; a
    // check that names the family but no baseline is told it lacks one.
    let err = one_line(kdelta(&e, &["check", "--cmd", "true", "--within"]));
    assert!(err.contains("kdelta check cmd --cmd 'COMMAND'"), "{err}");
    let (code, _, err) = kdelta(&e, &["check", "cmd", "--cmd", "true"]);
    assert_eq!(code, 128, "{err}");
    assert!(err.contains("--against <RUN|LABEL>") && !err.contains("named first"), "{err}");
    // hyperfine's -N stops a bisection too, naming kdelta's spelling.
    let err = one_line(kdelta(&e, &["check", "cmd", "--cmd", "true", "--within", "-N"]));
    assert!(err.contains("-N is hyperfine's; kdelta spells it --shell none"), "{err}");
    let err = one_line(kdelta(&e, &["check", "--run", "1", "--against", "base", "--drift", "500"]));
    assert!(err.contains("--drift 500 is out of range: allowed 0 .. 100"), "{err}");
    let (code, _, err) = kdelta(&e, &["check", "--run", "1", "--within", "--drift", "1"]);
    assert_eq!(code, 128, "{err}");
    assert!(err.contains("'--within' cannot be used with '--drift <PCT>'"), "{err}");
}

fn host(model: &str) -> serde_json::Value {
    json!({"cpu_model": model, "kernel_release": "6.1.0", "topology": {"packages": [0], "cores": [{}], "cpus": [{}]}})
}

#[test]
fn a_baseline_from_another_machine_is_refused_unless_any_host() {
    let e = Env::new();
    write_run(&e.db(), Some("base"), host("Imaginary CPU 9000"), &[time(10.0)]).unwrap();
    write_run(&e.db(), Some("new"), host("Other CPU 1"), &[time(10.0)]).unwrap();
    let (code, _, err) = kdelta(&e, &["check", "--run", "new", "--against", "base"]);
    assert_eq!(code, 128, "{err}");
    assert!(err.contains("run 1 (base) was measured on another machine (CPU model: Imaginary CPU 9000 vs Other CPU 1)"));
    assert!(err.contains("--any-host"), "{err}");
    let (code, out, err) = kdelta(&e, &["check", "--run", "new", "--against", "base", "--any-host"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("the baseline comes from another machine"), "{err}");

    // Running: refused before anything runs or is stored.
    let cmd = Stored { benchmark: "cmd.run".into(), ..time(10.0) };
    write_run(&e.db(), Some("cmd-base"), host("Imaginary CPU 9000"), &[cmd]).unwrap();
    let (code, _, err) = kdelta(&e, &["check", "cmd", "--cmd", "true", "--runs", "3", "--against", "cmd-base"]);
    assert_eq!(code, 128, "{err}");
    assert!(err.contains("run 3 (cmd-base) was measured on another machine (CPU model: Imaginary CPU 9000 vs "));
    let (_, runs, _) = kdelta(&e, &["runs", "--json"]);
    assert_eq!(serde_json::from_str::<serde_json::Value>(&runs).unwrap().as_array().unwrap().len(), 3);
}

/// A script the tests rewrite between runs: the command's text, and so the
/// row, stays the same.
fn script(e: &Env, body: &str) -> String {
    let p = e.dir.path().join("work.sh");
    std::fs::write(&p, body).unwrap();
    format!("sh {}", p.display())
}

/// `kdelta run cmd --cmd CMD --runs RUNS --label base`, which must exit
/// with `code`.
#[track_caller]
fn measured_base(e: &Env, cmd: &str, runs: &str, code: i32) {
    let (got, _, err) = kdelta(e, &["run", "cmd", "--cmd", cmd, "--runs", runs, "--label", "base"]);
    assert_eq!(got, code, "{err}");
}

/// A script doing `before` measured as the baseline (`run cmd`, which
/// must exit with `base_code`), then rewritten to do `after` and checked
/// against it (`check cmd`), each with `runs` runs: what check says.
#[track_caller]
fn checked_after_a_change(before: &str, base_code: i32, after: &str, runs: &str) -> (i32, String, String) {
    let e = Env::new();
    let cmd = script(&e, before);
    measured_base(&e, &cmd, runs, base_code);
    script(&e, after);
    kdelta(&e, &["check", "cmd", "--cmd", &cmd, "--runs", runs, "--against", "base"])
}

#[test]
fn a_measured_run_against_itself_exits_0_and_is_stored() {
    let e = Env::new();
    let cmd = script(&e, "sleep 0.02\n");
    measured_base(&e, &cmd, "4", 0);
    // Only a tripling could call it regressed: the machine's noise cannot.
    // A machine so busy that a side keeps too few clean samples leaves it
    // unknown (125), never regressed.
    let args = ["check", "cmd", "--cmd", &cmd, "--runs", "4", "--against", "base", "--max-regression", "200"];
    let (code, out, err) = kdelta(&e, &[&args[..], &["--label", "after"]].concat());
    assert!(code == 0 || (code == 125 && out.contains("cannot tell")), "exit {code}: {out}{err}");
    assert!(out.starts_with("cmd.run [all]: "), "{out}");
    assert!(err.contains("kdelta: stored as run 2 (after)"), "{err}");
    let (_, runs, _) = kdelta(&e, &["runs", "--json"]);
    let runs: serde_json::Value = serde_json::from_str(&runs).unwrap();
    assert_eq!(runs[0]["label"], "after", "{runs}");
}

#[test]
fn a_measured_slowdown_exits_1_or_125_on_a_busy_machine() {
    let (code, out, err) = checked_after_a_change("sleep 0.02\n", 0, "sleep 0.06\n", "6");
    // Three times slower: regressed, unless a side's samples were disturbed
    // by other work, when check must say it cannot tell rather than guess.
    match code {
        1 => assert!(out.contains("worse): regressed"), "{out}"),
        125 => {
            // Disturbed samples are kept but not used: a side may be left too
            // noisy, busy, or with too few clean samples to judge.
            assert!(
                out.contains("noisy")
                    || out.contains("busy")
                    || out.contains("too few clean samples")
                    || out.contains("too few rounds"),
                "{out}{err}"
            );
            eprintln!("the machine was busy: check could not tell, as it must ({out})");
        }
        _ => panic!("exit {code}: {out}{err}"),
    }
}

#[test]
fn a_baseline_whose_command_failed_exits_125() {
    let (code, out, err) = checked_after_a_change("exit 3\n", 1, "true\n", "3");
    assert_eq!(code, 125, "{out}{err}");
    assert!(out.contains("cannot tell (the baseline's result failed"), "{out}");
}

/// `--within`: the run's own comparison, each against the first `--cmd`,
/// measured interleaved; no stored baseline needed.
#[test]
fn within_judges_each_command_against_the_first() {
    let e = Env::new();
    let within = |base: &str, new: &str| {
        let b = format!("base={base}");
        let n = format!("new={new}");
        kdelta(&e, &["check", "cmd", "--cmd", &b, "--cmd", &n, "--runs", "6", "--within"])
    };
    let (code, out, err) = within("sleep 0.01", "sleep 0.05");
    // Five times slower: regressed, unless other work disturbed a side.
    match code {
        1 => {
            assert!(out.contains("cmd.run [cmd=new vs cmd=base]: "), "{out}");
            assert!(out.contains("worse): regressed"), "{out}");
            assert!(
                out.lines().last().unwrap().starts_with("regressed: cmd.run [cmd=new vs cmd=base] (run 1"),
                "{out}"
            );
        }
        125 => assert!(out.contains("cannot tell"), "{out}{err}"),
        _ => panic!("exit {code}: {out}{err}"),
    }
    assert!(err.contains("kdelta: stored as run 1"), "{err}");
    // Faster than the first: never a regression (unknown at most, when other
    // work left a side too few clean samples).
    let (code, out, err) = within("sleep 0.05", "sleep 0.01");
    match code {
        0 => assert!(out.contains("better): improved") || out.contains("better): ok"), "{out}"),
        125 => assert!(out.contains("cannot tell"), "{out}{err}"),
        _ => panic!("exit {code}: {out}{err}"),
    }
    // A stored run judged the same way.
    let (code2, out, _) = kdelta(&e, &["check", "--run", "2", "--within"]);
    assert_eq!(code2, code, "{out}");
    assert!(out.lines().last().unwrap().ends_with("(run 2, each against the first it compares)"), "{out}");
}

/// `--within` never passes a command that fails: a failing new side, a
/// failing baseline, or both, with two commands or three, is a row that
/// cannot be told (125), never 0, never a refusal of the run.
#[test]
fn within_never_passes_a_failing_command() {
    let e = Env::new();
    let within = |cmds: &[&str]| {
        let mut args = vec!["check", "cmd", "--runs", "3", "--within"];
        for c in cmds {
            args.extend(["--cmd", c]);
        }
        kdelta(&e, &args)
    };
    for (cmds, says) in [
        (&["base=true", "new=false", "new2=true"][..], "cmd.run [cmd=new vs cmd=base]: "),
        (&["base=true", "new=false"][..], "cmd.run [cmd=new vs cmd=base]: "),
        (&["base=false", "new=true"][..], "cannot tell (the baseline's result failed"),
        (&["base=false", "new=false"][..], "cannot tell (result failed"),
    ] {
        let (code, out, err) = within(cmds);
        assert_eq!(code, 125, "{cmds:?}: {out}{err}");
        assert!(out.contains(says), "{cmds:?}: {out}");
        assert!(out.lines().last().unwrap().starts_with("cannot tell: "), "{cmds:?}: {out}");
    }
}

#[test]
fn within_refuses_a_run_that_compares_nothing() {
    let e = Env::new();
    let (code, out, err) = kdelta(&e, &["check", "cmd", "--cmd", "sleep 0.01", "--runs", "3", "--within"]);
    assert_eq!(code, 128, "{out}{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("--within judges what one run compares"), "{err}");
    assert!(!e.db().exists(), "nothing runs, nothing is stored");
    // A stored run of one command: the same refusal, naming the run.
    let (code, _, err) = kdelta(&e, &["run", "cmd", "--cmd", "true", "--runs", "3"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = kdelta(&e, &["check", "--run", "1", "--within"]);
    assert_eq!(code, 128, "{err}");
    assert!(err.contains("run 1: --within judges"), "{err}");
    // With a baseline as well: one or the other.
    let (code, _, err) = kdelta(&e, &["check", "cmd", "--cmd", "true", "--within", "--against", "1"]);
    assert_eq!(code, 128, "{err}");
    assert!(err.contains("'--within' cannot be used with '--against"), "{err}");
}

fn stored_runs(e: &Env) -> usize {
    let (_, runs, _) = kdelta(e, &["runs", "--json"]);
    serde_json::from_str::<serde_json::Value>(&runs).map_or(0, |v| v.as_array().map_or(0, Vec::len))
}

/// Every refusal comes before anything runs or is stored: the store's run
/// count is the same after each, and the status stops `git bisect run`.
#[test]
fn every_refusal_comes_before_anything_runs_or_is_stored() {
    let e = Env::new();
    let cmd = script(&e, "true\n");
    measured_base(&e, &cmd, "3", 0);
    let spaced = cmd.replacen(' ', "  ", 1);
    for (args, says) in [
        (
            vec!["--cmd", &spaced, "--against", "base"],
            format!("cmd.run cmd is {spaced:?} here, {cmd:?} in the baseline"),
        ),
        (vec!["--cmd", &cmd, "--warmup", "1", "--against", "base"], "warmup is \"1\" here, \"0\"".to_string()),
        (vec!["--cmd", &cmd, "--against", "bsae"], "no run \"bsae\"".to_string()),
        (vec!["--cmd", &cmd, "--max-regression", "lots", "--against", "base"], "lots".to_string()),
        (vec!["--cmd", &cmd, "--within"], "--within judges what one run compares".to_string()),
        (
            vec!["--against", "base", "--baseline-cmd", "true"],
            "--baseline-cmd measures the baseline's build".to_string(),
        ),
        (vec!["--cmd", &cmd, "--against", "base", "--baseline-cmd", " "], "the command is empty".to_string()),
    ] {
        let args = [&["check", "cmd", "--runs", "3"][..], &args].concat();
        let (code, out, err) = kdelta(&e, &args);
        assert_eq!(code, 128, "{args:?}: {out}{err}");
        assert!(err.contains(&says), "{args:?}: {err}");
        assert_eq!(stored_runs(&e), 1, "{args:?} stored a run");
    }
}

/// `--within` judges a swept placeholder of one `cmd` command, each value
/// against the first, live and on the stored run.
#[test]
fn within_judges_a_swept_placeholder() {
    let e = Env::new();
    let args = ["check", "cmd", "--cmd", "sleep {t}", "--param", "t=0.01,0.05", "--runs", "3", "--within"];
    for args in [&args[..], &["check", "--run", "1", "--within"]] {
        let (code, out, err) = kdelta(&e, args);
        assert!(code == 1 || code == 125, "{args:?}: exit {code}: {out}{err}");
        assert!(out.starts_with("cmd.run [t=0.05 vs t=0.01]: "), "{out}");
        assert!(out.contains("x slower, worse)"), "{out}");
    }
    assert_eq!(stored_runs(&e), 1);
}

/// A stored baseline measured when the machine ran at another speed (its
/// reference loops moved beyond the limit): nothing is judged against it,
/// not "regressed" and not "ok" either, since a faster machine hides a
/// slower build: 125, naming the loop, unless the change is beyond the
/// limit plus twice the move. Where the loops agree, the row is judged as
/// usual.
#[test]
fn a_baseline_the_machine_has_moved_away_from_is_not_judged() {
    let e = Env::new();
    write_run(&e.db(), Some("base"), json!({}), &[time(10.0)]).unwrap();
    let id = write_run(&e.db(), Some("new"), json!({}), &[time(10.0)]).unwrap().to_string();
    let set = |run: i64, ns: f64| {
        let env = json!({
            "reference_before": {"kinds": [{"name": "multiply chain", "ns": ns}]},
            "reference_after": {"kinds": [{"name": "multiply chain", "ns": ns}]}
        });
        let c = rusqlite::Connection::open(e.db()).unwrap();
        c.execute("UPDATE runs SET environment = ?1 WHERE id = ?2", rusqlite::params![env.to_string(), run]).unwrap();
    };
    set(1, 1.0);
    set(2, 1.0);
    let (code, out, err) = kdelta(&e, &["check", "--run", &id, "--against", "base"]);
    assert_eq!(code, 0, "{out}{err}");
    set(2, 0.85);
    let (code, out, err) = kdelta(&e, &["check", "--run", &id, "--against", "base"]);
    assert_eq!(code, 125, "{out}{err}");
    assert!(err.contains("the machine's speed changed since the baseline: its reference multiply chain runs"), "{err}");
    assert!(out.contains("cannot tell (the machine's speed changed"), "{out}");
    // A change far beyond what the move could explain (3x against 15 %)
    // is still judged.
    let id3 = write_run(&e.db(), Some("new"), json!({}), &[time(30.0)]).unwrap();
    set(id3, 0.85);
    let (code, out, err) = kdelta(&e, &["check", "--run", &id3.to_string(), "--against", "base"]);
    assert_eq!(code, 1, "{out}{err}");
}

/// Against a stored run an unchanged command drifts: on a VM it read up
/// to 1.7 % slower than a baseline of minutes before, the reference loops
/// steady (docs/verdicts.md). A change within --max-regression plus
/// --drift (2 % by default) is ok, not regressed; `--drift 0` judges the
/// stored run as if it were measured now. A run whose own reference loops
/// disagree (the machine changed speed while it ran) judges nothing below
/// 2x against it.
#[test]
fn a_small_change_against_a_stored_run_is_within_its_drift() {
    let e = Env::new();
    write_run(&e.db(), Some("base"), json!({}), &[time(10.0)]).unwrap();
    let check = |id: i64, extra: &[&str]| {
        let id = id.to_string();
        let mut args = vec!["check", "--run", &id, "--against", "base"];
        args.extend_from_slice(extra);
        kdelta(&e, &args)
    };
    let small = write_run(&e.db(), Some("new"), json!({}), &[time(10.15)]).unwrap();
    let (code, out, err) = check(small, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("ok (worse, within --max-regression 1% + --drift 2%)"), "{out}");
    assert!(out.lines().last().unwrap().starts_with("ok: 1 row(s), none regressed beyond 3%"), "{out}");
    let (code, out, err) = check(small, &["--drift", "0"]);
    assert_eq!(code, 1, "{out}{err}");
    let larger = write_run(&e.db(), Some("new"), json!({}), &[time(10.5)]).unwrap();
    let (code, out, err) = check(larger, &[]);
    assert_eq!(code, 1, "{out}{err}");
    // The table loop ran 5 % slower after the run than before it.
    let unsteady = |ms: f64| {
        let id = write_run(&e.db(), Some("new"), json!({}), &[time(ms)]).unwrap();
        let refs = |ns: f64| json!({ "kinds": [{ "name": "table loop", "ns": ns }] });
        let env = json!({ "reference_before": refs(4.0), "reference_after": refs(4.2) }).to_string();
        let c = rusqlite::Connection::open(e.db()).unwrap();
        c.execute("UPDATE runs SET environment = ?1 WHERE id = ?2", rusqlite::params![env, id]).unwrap();
        id
    };
    let (code, out, err) = check(unsteady(10.5), &[]);
    assert_eq!(code, 125, "{out}{err}");
    assert!(
        out.contains("cannot tell (the machine's speed changed during run 4 (new): its reference table loop"),
        "{out}"
    );
    let (code, out, err) = check(unsteady(30.0), &[]);
    assert_eq!(code, 1, "3x is beyond what the machine's move could explain: {out}{err}");
}

/// `compare RUN_A RUN_B` judges two runs as `check --against` does: where
/// the machine changed speed during one, a 10 % change is not starred (the
/// reason on stderr, the row unknown), a 3x one is; steady runs star 10 %.
#[test]
fn compare_withholds_a_star_where_the_machine_changed_between_runs() {
    let e = Env::new();
    let refs = |ns: f64| json!({ "kinds": [{ "name": "table loop", "ns": ns }] });
    let stored = |ms: f64, after: f64| {
        let id = write_run(&e.db(), None, json!({}), &[time(ms)]).unwrap();
        let env = json!({ "reference_before": refs(4.0), "reference_after": refs(after) }).to_string();
        let c = rusqlite::Connection::open(e.db()).unwrap();
        c.execute("UPDATE runs SET environment = ?1 WHERE id = ?2", rusqlite::params![env, id]).unwrap();
        id.to_string()
    };
    let compare = |a: &str, b: &str| {
        let (code, out, err) = kdelta(&e, &["compare", a, b]);
        assert_eq!(code, 0, "{err}");
        let row = out.lines().find(|l| l.starts_with("demo.time")).unwrap_or_default().to_string();
        (row, out, err)
    };
    let base = stored(10.0, 4.0);
    let (row, out, err) = compare(&base, &stored(11.0, 4.0));
    assert!(row.ends_with('*'), "steady runs, 10 %: {out}{err}");
    let (row, out, err) = compare(&base, &stored(11.0, 4.4));
    assert!(!row.ends_with('*'), "{out}");
    assert!(
        err.contains("the machine's speed changed during run 3")
            && err.contains("of less than 2x between runs 1 and 3"),
        "{err}"
    );
    assert!(out.contains("the machine changed between the runs"), "{out}");
    let (row, out, _) = compare(&base, &stored(30.0, 4.4));
    assert!(row.ends_with('*'), "3x is beyond what the machine's change explains: {out}");
}

/// A baseline measured while the machine was quiet, checked by a run with
/// other work beside it (a loop on the other vCPU slows a compiled loop
/// here by 2-13 %, every sample clean on its own CPU): no regression below
/// 2x is believed, and no "ok" either. Alike loads judge as usual.
#[test]
fn a_run_beside_other_work_is_not_judged_against_a_quiet_baseline() {
    let e = Env::new();
    let set = |run: i64, others: f64| {
        let c = rusqlite::Connection::open(e.db()).unwrap();
        let env = json!({ "others_cpus": others }).to_string();
        c.execute("UPDATE runs SET environment = ?1 WHERE id = ?2", rusqlite::params![env, run]).unwrap();
    };
    write_run(&e.db(), Some("base"), json!({}), &[time(10.0)]).unwrap();
    set(1, 0.11);
    let check = |id: i64| kdelta(&e, &["check", "--run", &id.to_string(), "--against", "base"]);
    for (ms, others, want) in [(11.0, 0.6, 125), (10.0, 0.6, 125), (30.0, 0.6, 1), (11.0, 0.2, 1), (10.0, 0.2, 0)] {
        let id = write_run(&e.db(), Some("new"), json!({}), &[time(ms)]).unwrap();
        set(id, others);
        let (code, out, err) = check(id);
        assert_eq!(code, want, "{ms} ms beside {others} CPUs of other work: {out}{err}");
        if want == 125 {
            assert!(out.contains("cannot tell (other processes kept 0.60 CPUs busy during this run and 0.11"), "{out}");
        }
    }
    // The machine also moved, by 3 %: 1.3x is beyond that rule's bar (the
    // limit and twice the move) but not the busier one's (2x), and the
    // stricter stands, with both reasons.
    let refs = |ns: f64| json!({ "kinds": [{ "name": "multiply chain", "ns": ns }] });
    let set_env = |run: i64, others: f64, ns: f64| {
        let c = rusqlite::Connection::open(e.db()).unwrap();
        let env = json!({ "others_cpus": others, "reference_before": refs(ns), "reference_after": refs(ns) });
        c.execute("UPDATE runs SET environment = ?1 WHERE id = ?2", rusqlite::params![env.to_string(), run]).unwrap();
    };
    set_env(1, 0.11, 1.0);
    let id = write_run(&e.db(), Some("new"), json!({}), &[time(13.0)]).unwrap();
    set_env(id, 0.6, 1.03);
    let (code, out, err) = check(id);
    assert_eq!(code, 125, "{out}{err}");
    assert!(err.contains("the machine's speed changed") && err.contains("other processes kept 0.60 CPUs"), "{err}");
}

/// `--baseline-cmd`: against a baseline the machine has moved away from,
/// the baseline's build is measured again beside the new one, interleaved,
/// and judged as `--within` judges it, rather than answered 125.
#[test]
fn a_moved_machine_measures_the_baseline_s_build_again() {
    let e = Env::new();
    // The build at the baseline, kept beside the one checked out later.
    let old = e.dir.path().join("old.sh");
    std::fs::write(&old, "sleep 0.01\n").unwrap();
    let bench = format!("bench={}", script(&e, "sleep 0.01\n"));
    measured_base(&e, &bench, "3", 0);
    script(&e, "sleep 0.05\n");
    // The baseline's reference loops forged a thousand times faster than
    // any machine runs them: this one has moved away from it.
    let c = rusqlite::Connection::open(e.db()).unwrap();
    let env: String = c.query_row("SELECT environment FROM runs WHERE id = 1", [], |r| r.get(0)).unwrap();
    let mut env: serde_json::Value = serde_json::from_str(&env).unwrap();
    for side in ["reference_before", "reference_after"] {
        for kind in env[side]["kinds"].as_array_mut().expect("reference loops stored") {
            kind["ns"] = json!(kind["ns"].as_f64().unwrap() / 1000.0);
        }
    }
    c.execute("UPDATE runs SET environment = ?1 WHERE id = 1", [env.to_string()]).unwrap();
    let check = ["check", "cmd", "--cmd", &bench, "--runs", "6", "--against", "base"];
    let old = format!("sh {}", old.display());
    let (code, out, err) = kdelta(&e, &[&check[..], &["--baseline-cmd", &old]].concat());
    assert!(err.contains("the machine's speed changed since the baseline"), "{err}");
    assert!(err.contains("measuring the baseline's build (--baseline-cmd) again"), "{err}");
    assert!(out.contains("cmd.run [cmd=bench vs cmd=baseline]: "), "{out}");
    // Five times slower, measured beside the old build: regressed, unless
    // other work left a side too few clean samples to judge.
    match code {
        1 => assert!(out.contains("worse): regressed"), "{out}"),
        125 => assert!(out.contains("cannot tell") && !out.contains("speed changed"), "{out}{err}"),
        _ => panic!("exit {code}: {out}{err}"),
    }
    assert_eq!(stored_runs(&e), 3, "the new run, then both builds in one");
    // Without it: the moved machine is all check can say. On a machine busy
    // enough that the new run's reference loops found no quiet CPU (no
    // reference, so no move to see), the three-run baseline still leaves
    // the change unjudged: 125 either way, never a verdict.
    let (code, out, err) = kdelta(&e, &check);
    assert_eq!(code, 125, "{out}{err}");
    assert!(out.contains("cannot tell ("), "{out}");
}

/// A label whose runs fall into two speeds that take turns (a VM running
/// whole runs at one of two speeds): each row is judged against the newest
/// baseline run in the new run's own speed, with a note naming the speeds.
#[test]
fn a_baseline_series_in_two_speeds_is_judged_within_the_new_run_s_speed() {
    for (last, new, want, way) in [(55.0, 33.0, 1, "regressed"), (30.0, 54.8, 0, "same")] {
        let e = Env::new();
        for m in [30.0, 55.0, 30.2, 29.9, 55.3, 54.8, 30.1, last] {
            write_run(&e.db(), Some("base"), json!({}), &[time(m)]).unwrap();
        }
        let id = write_run(&e.db(), Some("new"), json!({}), &[time(new)]).unwrap().to_string();
        let (code, out, err) = kdelta(&e, &["check", "--run", &id, "--against", "base"]);
        assert_eq!(code, want, "newest {last}, new {new}: {out}{err}");
        assert!(out.contains(way), "{out}");
        assert!(err.contains("the runs labelled base fall into two speeds that take turns"), "{err}");
        // Against the newest run alone (by id), the mix decides.
        let (code, out, err) = kdelta(&e, &["check", "--run", &id, "--against", "8"]);
        assert_eq!(code, 1 - want, "{out}{err}");
        assert!(!err.contains("two speeds"), "{err}");
    }
}
