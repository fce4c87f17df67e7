//! `kdelta report` on the real binary: a page of two real (tiny) runs with
//! every section, and its bad inputs refused with exit status 2, nothing
//! written. The page's rendering in a browser is tested in
//! `src/report/html/browser.rs`.

use crate::common::{assert_ok, Env, ONE_SAMPLE};

fn two_runs(e: &Env) {
    e.cmd()
        .args([
            "run",
            "test.sleep",
            "--param",
            "us=10,40",
            "--config",
            "up,noht",
            "--runs",
            "2",
            "--sample-time",
            "1ms",
            "--label",
            "swept",
        ])
        .assert()
        .success();
    e.cmd()
        .args(["run", "test.sleep", "--config", "up", "--runs", "1", "--sample-time", "1ms", "--label", "flat"])
        .assert()
        .success();
}

#[test]
fn a_page_of_two_runs_has_every_section() {
    let e = Env::new();
    two_runs(&e);
    let page = e.dir.path().join("r.html");
    let out = e.cmd().args(["report", "swept", "flat", "swept", "-o"]).arg(&page).output().unwrap();
    assert_ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("wrote") && err.contains("2 run(s)"), "{err}");
    let h = std::fs::read_to_string(&page).unwrap();
    assert!(h.starts_with("<!DOCTYPE html>") && h.ends_with("</html>\n"));
    for part in ["command", "tables", "charts", "host", "warnings"] {
        assert_eq!(h.matches(&format!("-{part}\">")).count(), 2, "{part} once per run");
    }
    // The exact command, quoted as a shell would take it back.
    assert!(
        h.contains(" run test.sleep --param us=10,40 --config up,noht --runs 2 --sample-time 1ms --label swept</pre>"),
        "command not shown"
    );
    assert!(
        h.contains("data-kind=\"lines\"") && h.contains("data-kind=\"speedup\"") && h.contains("data-kind=\"bars\"")
    );
    assert!(h.contains("test.sleep over us") && h.contains("lower is better"));
    assert!(h.contains("id=\"compare\"") && h.contains("against run"));
    assert!(h.contains("<th>kernel</th>") && h.contains("<th>preemption</th>") && h.contains("<th>C library</th>"));
    assert!(!h.contains("<script") && !h.contains("http"));
    assert_eq!(
        std::fs::read_dir(e.dir.path())
            .unwrap()
            .filter(|d| d.as_ref().unwrap().file_name().to_string_lossy().starts_with(".kdelta-report-"))
            .count(),
        0
    );
}

#[test]
fn bad_inputs_are_refused_and_nothing_is_written() {
    let e = Env::new();
    // No database yet.
    let page = e.dir.path().join("r.html");
    let out = e.cmd().args(["report", "1", "-o"]).arg(&page).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no results database"));
    e.cmd().args(["run", "test.sleep", "--config", "up", "--runs", "1", "--sample-time", "1ms"]).assert().success();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["nosuch".into(), "-o".into(), page.display().to_string()], "no run \"nosuch\""),
        (vec!["1".into(), "-o".into(), e.dir.path().join("missing/r.html").display().to_string()], "does not exist"),
        (vec!["1".into(), "-o".into(), e.dir.path().display().to_string()], "is a directory"),
    ];
    for (args, says) in cases {
        let out = e.cmd().arg("report").args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says) && err.lines().count() == 1, "{args:?}: {err}");
    }
    assert!(!page.exists());
    // -o is required, and at least one run.
    assert_eq!(e.cmd().args(["report", "1"]).output().unwrap().status.code(), Some(2));
    assert_eq!(e.cmd().args(["report", "-o"]).arg(&page).output().unwrap().status.code(), Some(2));
}

#[test]
fn selections_add_every_finished_run_they_pick() {
    let e = Env::new();
    for _ in 0..2 {
        e.cmd()
            .args(["run", "test.sleep", "--config", "up", "--runs", "1", "--sample-time", "1ms", "--label", "nightly"])
            .assert()
            .success();
    }
    e.cmd()
        .args(["run", "test.sleep", "--config", "up", "--runs", "1", "--sample-time", "1ms", "--label", "other"])
        .assert()
        .success();
    let page = e.dir.path().join("r.html");
    // A label as a selection takes both of its runs (as a name, only the newest).
    let out = e.cmd().args(["report", "--label", "nightly", "-o"]).arg(&page).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("2 run(s)"), "{err}");
    let h = std::fs::read_to_string(&page).unwrap();
    assert!(h.contains("run 1 (nightly)") && h.contains("run 2 (nightly)") && !h.contains("(other)"));
    // The host this machine has, with a run named as well.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap().trim().to_string();
    let out = e.cmd().args(["report", "3", "--host", &host, "-o"]).arg(&page).output().unwrap();
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stderr).contains("3 run(s)"));
    // A selection that picks nothing is bad input.
    let out = e.cmd().args(["report", "--kernel", "0.0-none", "-o"]).arg(&page).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no finished run matches"));
}

/// Markers an attacker or an unlucky user might plant: none may come out of
/// the page unescaped (or, for the bidi control, at all).
const MARKERS: [&str; 4] = ["<script", "\"><img", "<img", "\u{202e}"];

/// `kdelta run test.sleep --quick` with one sample under `configs` and the
/// options `run`, then run 1 written as a page with the options `report`:
/// the page.
fn one_run_page(e: &Env, configs: &str, run: &[&str], report: &[&str]) -> String {
    let out = e
        .cmd()
        .args(["run", "test.sleep", "--config", configs, "--quick"])
        .args(run)
        .args(ONE_SAMPLE)
        .output()
        .unwrap();
    assert_ok(&out);
    let page = e.dir.path().join("x.html");
    let out = e.cmd().args(["report", "1"]).args(report).arg("-o").arg(&page).output().unwrap();
    assert_ok(&out);
    std::fs::read_to_string(&page).unwrap()
}

fn assert_no_marker(h: &str) {
    for m in MARKERS {
        assert!(
            !h.contains(m),
            "the page holds {m:?} unescaped: {}",
            &h[h.find(m).unwrap().saturating_sub(200)..][..300.min(h.len() - h.find(m).unwrap().saturating_sub(200))]
        );
    }
    // Every & starts an entity.
    for (i, _) in h.match_indices('&') {
        let rest = &h[i..];
        let end = rest.find(';').unwrap_or(0);
        assert!(
            end > 1 && end < 10 && rest[1..end].chars().all(|c| c.is_ascii_alphanumeric() || c == '#'),
            "a bare & at {}",
            &rest[..20.min(rest.len())]
        );
    }
}

/// Finding 1: a configuration name went into the bar chart's SVG unescaped,
/// so `up+env=Q=<script>alert(1)</script>` ran a script in the page.
#[test]
fn a_configuration_name_cannot_script_the_page() {
    let e = Env::new();
    let cfg = "up+env=Q=<script>alert(1)</script>";
    let h = one_run_page(&e, cfg, &[], &[]);
    assert!(h.contains("data-kind=\"bars\""), "the run has a bar chart");
    assert!(h.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "the name is shown, escaped");
    assert_no_marker(&h);
}

/// Markers in every field a user gives on the command line (configuration
/// name, label, title, the command itself, an environment value with `&`,
/// quotes and a right-to-left override) reach no page unescaped.
#[test]
fn markers_in_every_given_field_come_out_escaped() {
    let e = Env::new();
    let cfg = "up+env=Q=\"><img src=x onerror=alert(1)>&amp\u{202e}x";
    let label = "l\"><img src=x>&\u{202e}<script>";
    let title = "t\"><img src=x>&\u{202e}<script>";
    let h = one_run_page(&e, &format!("up,{cfg}"), &["--label", label], &["--title", title]);
    assert!(h.contains("data-kind=\"bars\"") && h.contains("data-kind=\"speedup\""));
    assert!(h.contains("[U+202E]"), "the bidi control is shown as a visible placeholder");
    assert_no_marker(&h);
    // `kdelta chart` (plotters) escapes the markup and neutralises the bidi control too.
    let svg = e.dir.path().join("x.svg");
    let out = e.cmd().args(["chart", "1", "-o"]).arg(&svg).output().unwrap();
    assert_ok(&out);
    let c = std::fs::read_to_string(&svg).unwrap();
    assert!(c.contains("[U+202E]"), "the chart names the configuration");
    assert_no_marker(&c);
}

/// Finding 7: a right-to-left override in a label reordered the text shown
/// after it, in the page and in `kdelta runs` and `show`.
#[test]
fn bidi_controls_are_neutralised_in_everything_shown() {
    let e = Env::new();
    let label = "fast\u{202e}wols\u{2066}x\u{200f}";
    let h = one_run_page(&e, "up", &["--label", label], &[]);
    let bidi = |s: &str| {
        s.chars().any(
            |c| matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}'),
        )
    };
    assert!(!bidi(&h), "the page holds a bidi control");
    assert!(h.contains("fast[U+202E]wols[U+2066]x[U+200F]"));
    for args in [vec!["runs"], vec!["show", "1"], vec!["show", "1", "--format", "markdown"]] {
        let out = e.cmd().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let s = String::from_utf8_lossy(&out.stdout);
        assert!(!bidi(&s), "{args:?} prints a bidi control: {s}");
    }
}
