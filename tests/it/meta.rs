//! Run metadata end to end: `run --meta` stores it, `runs` shows and
//! filters by it, `show` and `export` carry it, and a bad pair is refused
//! with one line and exit 2 before anything is stored.

use crate::common::*;
use predicates::prelude::*;

/// A tiny run of `test.sleep` with these extra arguments.
fn tiny_run(e: &Env, extra: &[&str]) -> assert_cmd::assert::Assert {
    let mut c = e.cmd();
    c.args(TINY_SLEEP).args(extra);
    c.assert()
}

#[test]
fn metadata_is_stored_shown_filtered_and_exported() {
    let e = Env::new();
    tiny_run(&e, &["--meta", "commit=abc123", "--meta", "branch=main", "--meta", "kernel_build=CONFIG_X=y"]).success();
    tiny_run(&e, &["--meta", "commit=def456"]).success();
    tiny_run(&e, &["--label", "plain"]).success();

    let runs = e.cmd().arg("runs").output().unwrap();
    let text = String::from_utf8_lossy(&runs.stdout);
    assert!(text.lines().next().unwrap().contains("meta"), "{text}");
    assert!(text.contains("branch=main commit=abc123 kernel_build=CONFIG_X=y"), "{text}");

    let ids = |args: &[&str]| -> Vec<i64> {
        let out = e.cmd().args(["runs", "--json"]).args(args).output().unwrap();
        assert_ok(&out);
        json(&out.stdout).as_array().unwrap().iter().map(|r| r["id"].as_i64().unwrap()).collect()
    };
    assert_eq!(ids(&[]), [3, 2, 1]);
    assert_eq!(ids(&["--meta", "commit=abc123"]), [1]);
    assert_eq!(ids(&["--meta", "commit"]), [2, 1]);
    assert_eq!(ids(&["--meta", "commit", "--meta", "branch=main"]), [1]);
    assert_eq!(ids(&["--meta", "commit=nope"]), Vec::<i64>::new());
    let listed = e.cmd().args(["runs", "--json", "--meta", "branch"]).output().unwrap();
    assert_eq!(json(&listed.stdout)[0]["meta"]["kernel_build"], "CONFIG_X=y");

    let show = e.cmd().args(["show", "1"]).output().unwrap();
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(text.contains("\n  meta: branch=main commit=abc123 kernel_build=CONFIG_X=y\n"), "{text}");
    let plain = e.cmd().args(["show", "plain"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&plain.stdout).contains("meta:"));

    let export = e.cmd().args(["export", "1", "--format", "json"]).output().unwrap();
    let v = json(&export.stdout);
    assert_eq!(
        v["run"]["meta"],
        serde_json::json!({"branch": "main", "commit": "abc123", "kernel_build": "CONFIG_X=y"})
    );
    let export = e.cmd().args(["export", "plain", "--format", "json"]).output().unwrap();
    assert!(json(&export.stdout)["run"].get("meta").is_none());
    let csv = e.cmd().args(["export", "2", "--format", "csv"]).output().unwrap();
    let csv = String::from_utf8_lossy(&csv.stdout);
    assert!(csv.lines().next().unwrap().ends_with(",meta"), "{csv}");
    assert!(csv.lines().nth(1).unwrap().ends_with(r#","{""commit"":""def456""}""#), "{csv}");
}

#[test]
fn run_json_output_carries_the_metadata() {
    let e = Env::new();
    let out = tiny_run(&e, &["--meta", "commit=abc", "--format", "json"]).success();
    let v = json(&out.get_output().stdout);
    assert_eq!(v["run"]["meta"]["commit"], "abc");
}

#[test]
fn bad_metadata_is_refused_before_anything_is_stored() {
    let e = Env::new();
    for (args, says) in [
        (vec!["--meta", "com/mit=abc"], "a key is 1 to 64 of letters, digits, '_', '-' and '.'"),
        (vec!["--meta", "=abc"], "empty key"),
        (vec!["--meta", "commit"], "expected KEY=VALUE"),
        (vec!["--meta", "commit=a", "--meta", "commit=b"], "--meta commit given twice"),
    ] {
        let out = tiny_run(&e, &args).code(2).stderr(predicate::str::contains(says)).get_output().clone();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    let long = format!("note={}", "x".repeat(1025));
    tiny_run(&e, &["--meta", &long]).code(2).stderr(predicate::str::contains("at most 1024 bytes"));
    let many: Vec<String> = (0..65).map(|i| format!("--meta=k{i}=v")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    tiny_run(&e, &many).code(2).stderr(predicate::str::contains("at most 64 keys"));
    assert!(!e.db().exists(), "nothing stored: the database was not even made");
    // A filter with a bad key is refused the same way.
    tiny_run(&e, &[]).success();
    e.cmd().args(["runs", "--meta", "a b"]).assert().code(2).stderr(predicate::str::contains("--meta key"));
}
