//! `git bisect run kdelta check ...` finds the commit that made a program
//! slower: a small repository whose fifth of eight commits triples the
//! time of `work.sh`, a baseline measured at the first, and git driving
//! `kdelta check` through the history by its exit statuses. Input check
//! refuses (a typo in the label, another machine's baseline, a changed
//! command) stops the bisection instead of naming a commit.

use crate::common;
use crate::common::Env;
use kdelta::testing::stored::{write_run, Result as Stored};
use serde_json::json;
use std::path::Path;
use std::process::Command;

const COMMITS: usize = 8;
/// The commit (1-based) that makes `work.sh` slower.
const BAD: usize = 5;
const RUNS: &str = "6";

/// git in `repo`, with an identity and no configuration of the machine's.
fn git(e: &Env, repo: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(repo)
        .env("GIT_AUTHOR_NAME", "kdelta test")
        .env("GIT_AUTHOR_EMAIL", "test@kdelta.invalid")
        .env("GIT_COMMITTER_NAME", "kdelta test")
        .env("GIT_COMMITTER_EMAIL", "test@kdelta.invalid")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("HOME", e.dir.path())
        // What `git bisect run` starts is kdelta, with this env's store.
        .env("KDELTA_DB", e.db())
        .env("TMPDIR", e.tmp())
        .env("NO_COLOR", "1")
        .env_remove("KDELTA_SYSFS_ROOT");
    c
}

fn ok(e: &Env, repo: &Path, args: &[&str]) -> String {
    let out = git(e, repo).args(args).output().expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The repository and its commits' ids, oldest first.
fn history(e: &Env) -> (std::path::PathBuf, Vec<String>) {
    let repo = e.dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    ok(e, &repo, &["init", "-q"]);
    let mut ids = Vec::new();
    for i in 1..=COMMITS {
        let sleep = if i >= BAD { "0.06" } else { "0.02" };
        std::fs::write(repo.join("work.sh"), format!("# step {i}\nsleep {sleep}\n")).unwrap();
        std::fs::write(repo.join("notes.txt"), format!("step {i}\n")).unwrap();
        ok(e, &repo, &["add", "-A"]);
        ok(e, &repo, &["commit", "-q", "-m", &format!("step {i}")]);
        ids.push(ok(e, &repo, &["rev-parse", "HEAD"]));
    }
    (repo, ids)
}

/// One bisection: the first bad commit git names, or `None` when the
/// commits check could not tell about (exit 125) leave it undecided.
fn bisect(e: &Env, repo: &Path, good: &str, bad: &str, cmd: &str) -> Option<String> {
    ok(e, repo, &["bisect", "start", bad, good]);
    let kdelta = assert_cmd::cargo::cargo_bin("kdelta");
    let out = git(e, repo)
        .args(["bisect", "run"])
        .arg(&kdelta)
        .args(["check", "cmd", "--cmd", cmd, "--against", "base", "--runs", RUNS])
        .args(common::NO_QUIET_WAIT)
        .output()
        .expect("git bisect run");
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    // What git and check said, shown when the test fails (or with --nocapture).
    eprintln!("{text}");
    ok(e, repo, &["bisect", "reset"]);
    if let Some(line) = text.lines().find(|l| l.ends_with(" is the first bad commit")) {
        return Some(line.split_whitespace().next().unwrap().to_string());
    }
    assert!(text.contains("skip"), "git bisect run neither named a commit nor skipped: {text}");
    None
}

#[test]
fn git_bisect_run_finds_the_commit_that_made_the_program_slower() {
    let e = Env::new();
    let (repo, ids) = history(&e);
    let cmd = format!("sh {}", repo.join("work.sh").display());
    ok(&e, &repo, &["checkout", "-q", &ids[0]]);
    let base = common::Env::cmd(&e)
        .args(["run", "cmd", "--cmd", &cmd, "--runs", RUNS, "--label", "base"])
        .args(common::NO_QUIET_WAIT)
        .output()
        .unwrap();
    assert!(base.status.success(), "{}", String::from_utf8_lossy(&base.stderr));
    ok(&e, &repo, &["checkout", "-q", &ids[COMMITS - 1]]);
    // A busy machine disturbs samples, and check then says it cannot tell
    // (git skips the commit) rather than guess; a second try usually finds
    // the machine quieter. Whatever git names must be the bad commit.
    for attempt in 1..=2 {
        if let Some(found) = bisect(&e, &repo, &ids[0], &ids[COMMITS - 1], &cmd) {
            assert_eq!(found, ids[BAD - 1], "git named step {:?}", ids.iter().position(|i| *i == found));
            return;
        }
        eprintln!("attempt {attempt}: the machine was too busy for check to judge every commit");
    }
    eprintln!("the machine stayed too busy to bisect: nothing wrong was named, nothing proven");
}

/// `git bisect run sh -c SCRIPT` from `good` to `bad`, as the README's
/// one-liner runs it: whether git succeeded, and all it printed.
fn bisect_script(e: &Env, repo: &Path, good: &str, bad: &str, script: &str) -> (bool, String) {
    ok(e, repo, &["bisect", "start", bad, good]);
    let out = git(e, repo).args(["bisect", "run", "sh", "-c", script]).output().expect("git bisect run");
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    eprintln!("{text}");
    ok(e, repo, &["bisect", "reset"]);
    (out.status.success(), text)
}

/// Each refusal of check stops `git bisect run` at its first step: git says
/// the script failed and names no commit, whatever the history holds.
#[test]
fn a_refused_check_stops_git_bisect_run() {
    let e = Env::new();
    let (repo, ids) = history(&e);
    let kdelta = assert_cmd::cargo::cargo_bin("kdelta");
    let work = repo.join("work.sh");
    // The baseline: measured at the first commit, and one from another machine.
    let cmd = format!("sh {}", work.display());
    let base = common::Env::cmd(&e)
        .args(["run", "cmd", "--cmd", &cmd, "--runs", "3", "--label", "base"])
        .args(common::NO_QUIET_WAIT)
        .output()
        .unwrap();
    assert!(base.status.success(), "{}", String::from_utf8_lossy(&base.stderr));
    let other = json!({"cpu_model": "Imaginary CPU 9000", "topology": {"packages": [0], "cores": [{}], "cpus": [{}]}});
    let samples = vec![20.0, 20.1, 19.9];
    write_run(
        &e.db(),
        Some("elsewhere"),
        other,
        &[Stored { benchmark: "cmd.run".into(), samples, ..Default::default() }],
    )
    .unwrap();
    let runs_before = stored_runs(&e);
    let k = kdelta.display();
    let w = work.display();
    for (what, check) in [
        ("a typo in the label", format!("{k} check cmd --cmd 'sh {w}' --runs 3 --against bsae")),
        ("another machine's baseline", format!("{k} check cmd --cmd 'sh {w}' --runs 3 --against elsewhere")),
        ("a changed command text", format!("{k} check cmd --cmd 'sh  {w}' --runs 3 --against base")),
        ("a malformed flag", format!("{k} check cmd --cmd 'sh {w}' --runs three --against base")),
    ] {
        let script = format!("true >/dev/null || exit 125; {check}");
        let (success, text) = bisect_script(&e, &repo, &ids[0], &ids[COMMITS - 1], &script);
        assert!(!success, "{what}: git bisect run succeeded: {text}");
        assert!(!text.contains("is the first bad commit"), "{what}: a commit was blamed: {text}");
        assert!(text.contains("bisect run failed"), "{what}: {text}");
        assert!(text.contains("exit code 128"), "{what}: {text}");
    }
    assert_eq!(stored_runs(&e), runs_before, "a refused check stores nothing");
}

fn stored_runs(e: &Env) -> usize {
    let out = common::Env::cmd(e).args(["runs", "--json"]).output().unwrap();
    common::json(&out.stdout).as_array().unwrap().len()
}
