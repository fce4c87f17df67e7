//! `kdelta study` at the door: the list, and bad input (exit 2, one line,
//! nothing run). The plans, tables and resume logic are unit-tested in
//! `src/study/tests.rs`; the studies themselves take minutes.

use crate::common::{assert_ok, Env};
use std::time::Duration;

#[test]
fn study_list_names_every_study_with_its_needs_and_estimates() {
    let e = Env::new();
    let out = e.cmd().args(["study", "list"]).timeout(Duration::from_secs(60)).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_ok(&out);
    for name in ["ht-2003", "threads-2004", "sched-2002", "tuning-2001"] {
        assert!(text.lines().any(|l| l == name), "{name} missing:\n{text}");
    }
    assert_eq!(text.matches("  --quick ").count(), 4, "{text}");
    assert_eq!(text.matches("(estimated from the plan)").count(), 8, "{text}");
    assert!(text.contains("preempt-on"), "{text}");
    assert!(!e.db().exists(), "study list created the database");
}

#[test]
fn bad_study_input_is_refused_with_one_line() {
    let e = Env::new();
    for (args, want) in [
        (&["study", "ht-2099"][..], "ht-2099"),
        (&["study", "ht-2003", "--variant", "half"][..], "half"),
        (&["study", "ht-2003", "--format", "yaml"][..], "yaml"),
    ] {
        let out = e.cmd().args(args).timeout(Duration::from_secs(30)).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want) && !err.contains("panicked"), "{args:?}: {err}");
    }
    // --resume with nothing to resume: one line, exit 2, nothing run.
    let out =
        e.cmd().args(["study", "sched-2002", "--quick", "--resume"]).timeout(Duration::from_secs(30)).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let last = err.trim_end().lines().last().unwrap_or("");
    assert!(last.contains("--resume: no incomplete run of study sched-2002 --quick"), "{err}");
}
