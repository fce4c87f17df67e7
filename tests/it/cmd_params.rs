//! `cmd`'s parameters typed in every output: a row is keyed by a command's
//! name (`cmd=fast`), the texts are said once (a legend, a JSON field, CSV
//! columns), the CSV parses into columns (RFC 4180, and Python's csv module
//! where python3 is installed), runs stored with the joined `commands`
//! blob read back the same way, and `history --order-by` orders by a
//! metadata key.

use crate::common::{json, Env, NO_QUIET_WAIT};
use kdelta::testing::stored::{store_run_with_meta, StoredResult, StoredRun};

/// Commands with spaces, commas, both quotes and a `;`, cheap to run.
const FAST: &str = r#"fast=printf '%s' "a, b" > /dev/null"#;
const BEST: &str = r#"best=echo "x,y" 'q "z"' >/dev/null; true"#;

/// RFC 4180: fields split at commas outside quotes, `""` a quote inside
/// them; records end at a newline outside quotes. Panics on a malformed one.
fn parse_csv(s: &str) -> Vec<Vec<String>> {
    let (mut rows, mut row, mut field) = (Vec::new(), Vec::new(), String::new());
    let (mut quoted, mut it) = (false, s.chars().peekable());
    while let Some(c) = it.next() {
        match (quoted, c) {
            (true, '"') if it.peek() == Some(&'"') => {
                it.next();
                field.push('"');
            }
            (true, '"') => {
                quoted = false;
                assert!(matches!(it.peek(), None | Some(',') | Some('\n')), "text after a closing quote in {s}");
            }
            (true, x) => field.push(x),
            (false, '"') => {
                assert!(field.is_empty(), "a quote inside an unquoted field in {s}");
                quoted = true;
            }
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, x) => field.push(x),
        }
    }
    assert!(!quoted && field.is_empty() && row.is_empty(), "unterminated record in {s}");
    rows
}

/// The CSV as `(header, records)`, every record as long as the header.
fn table(s: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut rows = parse_csv(s);
    let header = rows.remove(0);
    for r in &rows {
        assert_eq!(r.len(), header.len(), "{r:?}\n{header:?}");
        assert!(r.iter().all(|f| !f.contains('\n')), "{r:?}");
    }
    (header, rows)
}

fn cell<'a>(header: &[String], row: &'a [String], name: &str) -> &'a str {
    let i = header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}: {header:?}"));
    &row[i]
}

/// Python's csv module reads the same records, when python3 is here.
fn python_agrees(csv: &str, records: usize, columns: usize) {
    let script = "import csv,sys\nrows=list(csv.reader(sys.stdin))\nprint(len(rows)-1, {len(r) for r in rows})";
    let Ok(mut child) = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
    else {
        return;
    };
    use std::io::Write;
    child.stdin.take().unwrap().write_all(csv.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("{records} {{{columns}}}"));
}

/// A command that measures (`run cmd`, `check cmd`) does so without quiet
/// waits (`NO_QUIET_WAIT`): nothing here is a timing, and on a busy machine
/// the waits made one test take half a minute.
fn ok(e: &Env, args: &[&str]) -> String {
    let mut c = e.cmd();
    c.args(args);
    if args.get(1) == Some(&"cmd") {
        c.args(NO_QUIET_WAIT);
    }
    let out = c.output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// No line of a text report holds the joined blob; the legend says each text once.
fn shows_names_not_the_blob(text: &str) {
    assert!(!text.contains("commands="), "{text}");
    assert!(!text.contains("\\n"), "{text}");
    let legend: Vec<&str> = text.lines().filter(|l| l.starts_with("commands: ")).collect();
    assert_eq!(
        legend,
        [r#"commands: fast = `printf '%s' "a, b" > /dev/null`; best = `echo "x,y" 'q "z"' >/dev/null; true`"#]
    );
}

#[test]
fn two_named_commands_export_as_columns_and_show_as_names() {
    let e = Env::new();
    let text = ok(&e, &["run", "cmd", "--cmd", FAST, "--cmd", BEST, "--config", "up", "--runs", "3"]);
    assert!(text.contains("cmd=fast") && text.contains("cmd=best"), "{text}");
    shows_names_not_the_blob(&text);
    shows_names_not_the_blob(&ok(&e, &["show", "1"]));

    let csv = ok(&e, &["export", "1", "--format", "csv"]);
    let (h, rows) = table(&csv);
    python_agrees(&csv, rows.len(), h.len());
    // One line per compared pair: fast against best, each with its text.
    assert_eq!(rows.len(), 1, "{csv}");
    let r = &rows[0];
    assert_eq!((cell(&h, r, "a"), cell(&h, r, "b")), ("cmd=fast", "cmd=best"));
    assert_eq!(cell(&h, r, "a_command"), r#"printf '%s' "a, b" > /dev/null"#);
    assert_eq!(cell(&h, r, "b_command"), r#"echo "x,y" 'q "z"' >/dev/null; true"#);
    assert_eq!(cell(&h, r, "param.shell"), "sh");
    assert!(!cell(&h, r, "params").contains("commands"), "{csv}");
    assert!(!h.iter().any(|c| c == "param.commands"), "{h:?}");

    let v = json(ok(&e, &["export", "1", "--format", "json"]).as_bytes());
    let named = v["commands"].as_array().unwrap();
    assert_eq!(named.len(), 2, "{v}");
    assert_eq!((named[0]["name"].as_str(), named[0]["text"].as_str()), (Some("fast"), Some(&FAST[5..])));
    assert_eq!((named[1]["name"].as_str(), named[1]["text"].as_str()), (Some("best"), Some(&BEST[5..])));
}

#[test]
fn one_command_exports_a_line_per_result_with_its_text() {
    let e = Env::new();
    ok(&e, &["run", "cmd", "--cmd", r#"printf '%s' "{t}, x" >/dev/null"#, "--config", "up", "--runs", "3"]);
    // `{t}` never given: the text as written. One result, no comparison.
    let csv = ok(&e, &["export", "1", "--format", "csv"]);
    let (h, rows) = table(&csv);
    python_agrees(&csv, rows.len(), h.len());
    assert_eq!(rows.len(), 1, "{csv}");
    assert_eq!(cell(&h, &rows[0], "param.cmd"), r#"printf '%s' "{t}, x" >/dev/null"#);
    assert_eq!(cell(&h, &rows[0], "command"), r#"printf '%s' "{t}, x" >/dev/null"#);
    assert_eq!(cell(&h, &rows[0], "benchmark"), "cmd.run");
}

/// A run as kdelta stored it before: each point's parameters hold the
/// joined `commands` blob.
fn store_blob_run(e: &Env, started: &str, meta: &[(&str, &str)], level: f64) -> i64 {
    let blob = "fast=gzip -1 -c f\nbest=gzip -9 -c \"a, b\"";
    let common = [("cleanup", "none"), ("commands", blob), ("figure", "wall"), ("shell", "sh")];
    let with = |name: &'static str| {
        let mut p = common.to_vec();
        p.push(("cmd", name));
        p
    };
    let (fast, best) = (with("fast"), with("best"));
    let xs: Vec<f64> = (0..8).map(|i| level + i as f64 * 0.01).collect();
    let ys: Vec<f64> = xs.iter().map(|x| x * 2.0).collect();
    let run = StoredRun { label: None, started, hostname: "alpha", kernel: "6.1.0" };
    let results = [
        StoredResult { benchmark: "cmd.run", params: &fast, config: "up", samples: &xs },
        StoredResult { benchmark: "cmd.run", params: &best, config: "up", samples: &ys },
    ];
    store_run_with_meta(&e.db(), &run, meta, &results).unwrap()
}

#[test]
fn runs_stored_with_the_joined_blob_read_back_as_names() {
    let e = Env::new();
    let id = store_blob_run(&e, "2024-05-01T10:00:00Z", &[], 10.0).to_string();
    let text = ok(&e, &["show", &id]);
    assert!(!text.contains("commands=") && !text.contains("\\n"), "{text}");
    assert!(text.contains(r#"commands: fast = `gzip -1 -c f`; best = `gzip -9 -c "a, b"`"#), "{text}");
    let csv = ok(&e, &["export", &id, "--format", "csv"]);
    let (h, rows) = table(&csv);
    python_agrees(&csv, rows.len(), h.len());
    // Stored without the worker's extras (nothing says the commands are
    // compared): a line per result, each with the text its name stands for.
    assert_eq!(rows.len(), 2, "{csv}");
    let got: Vec<(&str, &str, &str)> =
        rows.iter().map(|r| (cell(&h, r, "param.cmd"), cell(&h, r, "command"), cell(&h, r, "params"))).collect();
    assert_eq!(
        got,
        [
            // `conclude`, `setup_once` and `cleanup_once` came later: what
            // those runs ran under is filled in.
            (
                "fast",
                "gzip -1 -c f",
                "cleanup=none cleanup_once=none cmd=fast conclude=none figure=wall setup_once=none shell=sh"
            ),
            (
                "best",
                r#"gzip -9 -c "a, b""#,
                "cleanup=none cleanup_once=none cmd=best conclude=none figure=wall setup_once=none shell=sh"
            )
        ]
    );
    // History titles name the point, not the blob, nor the options left
    // at their defaults (CSV's `params` above keeps them).
    let hist = ok(&e, &["history", "cmd.run"]);
    assert!(!hist.contains("commands=") && hist.contains("cmd.run  cmd=best  config up"), "{hist}");
    // Nor the table under `show`; an option set away from its default is said.
    assert!(!text.contains("shell=sh") && !text.contains("figure=wall"), "{text}");
}

#[test]
fn history_orders_a_series_by_a_metadata_key() {
    let e = Env::new();
    // Backfilled: started in one order, positioned by `pos` in another;
    // one run without `pos` is left out.
    let a = store_blob_run(&e, "2024-05-01T10:00:00Z", &[("pos", "10")], 10.0);
    let b = store_blob_run(&e, "2024-05-02T10:00:00Z", &[("pos", "2")], 11.0);
    let c = store_blob_run(&e, "2024-05-03T10:00:00Z", &[("pos", "9")], 12.0);
    store_blob_run(&e, "2024-05-04T10:00:00Z", &[], 13.0);
    let ids = |args: &[&str]| {
        let mut all = vec!["history", "cmd.run", "--param", "cmd=fast", "--min-segment", "1", "--format", "json"];
        all.extend_from_slice(args);
        let v = json(ok(&e, &all).as_bytes());
        let runs = v["series"][0]["runs"].as_array().unwrap().clone();
        runs.iter().map(|r| r["run"]["id"].as_i64().unwrap()).collect::<Vec<_>>()
    };
    assert_eq!(ids(&[]).len(), 4);
    // Numerically: 2 < 9 < 10 (as text, "10" would come first).
    assert_eq!(ids(&["--order-by", "pos"]), [b, c, a]);
    let out = e.cmd().args(["history", "cmd.run", "--order-by", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.trim().lines().count() == 1 && err.contains("--order-by nope"), "{err}");
    let out = e.cmd().args(["history", "cmd.run", "--order-by", "a b"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

/// hyperfine's habits: `-n` names the commands in order, `-r`, `-w` and `-i`
/// mean what they mean there, `--conclude` runs after every timed run, and
/// the mean ± σ, range and user/system time are printed under the table.
#[test]
fn hyperfine_s_short_flags_conclude_and_figures() {
    let e = Env::new();
    let log = e.dir.path().join("concluded");
    let conclude = format!("echo x >> {}", log.display());
    let text = ok(
        &e,
        &[
            "run",
            "cmd",
            "--cmd",
            "true",
            "--cmd",
            ":",
            "-n",
            "yes",
            "-n",
            "colon",
            "-r",
            "3",
            "-w",
            "1",
            "-i",
            "--conclude",
            &conclude,
            "--config",
            "up",
        ],
    );
    assert!(text.contains("cmd=yes") && text.contains("cmd=colon"), "{text}");
    assert!(text.contains("commands: yes = `true`; colon = `:`"), "{text}");
    let params = text.lines().find(|l| l.starts_with("parameters of cmd.run")).unwrap();
    assert!(params.contains("warmup=1") && params.contains("ignore_failure=true"), "{params}");
    for name in ["cmd=yes [up]: mean ", "cmd=colon [up]: mean "] {
        let line = text.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("{name}: {text}"));
        assert!(line.contains(" ± ") && line.contains(", min ") && line.contains("; user "), "{line}");
    }
    // After every run, warm-up and timed (disturbed ones retaken included).
    let runs = std::fs::read_to_string(&log).unwrap().lines().count();
    assert!(runs >= 2 * (3 + 1), "{runs}");
    let v = json(ok(&e, &["export", "1", "--format", "json"]).as_bytes());
    assert_eq!(v["commands"][0]["name"].as_str(), Some("yes"), "{v}");
}

/// `-p` and `-c` are kdelta's --param and --config: hyperfine's meaning
/// (a command) is refused before anything runs, saying how to spell it.
#[test]
fn hyperfine_s_p_and_c_say_how_kdelta_spells_them() {
    let e = Env::new();
    for (flag, value, says) in [("-p", "make clean", "--prepare"), ("-c", "rm -f out", "--cleanup")] {
        let out = e.cmd().args(["run", "cmd", "--cmd", "true", flag, value]).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.trim().lines().count() == 1 && err.contains(says) && err.contains(value), "{err}");
    }
    let out = e.cmd().args(["run", "cmd", "--cmd", "true", "-n", "a", "-n", "b"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!e.db().exists());
}

/// hyperfine's `--parameter-scan t 0 0.002 -D 0.001`: a decimal range.
#[test]
fn a_decimal_range_is_swept() {
    let e = Env::new();
    let text = ok(&e, &["run", "cmd", "--cmd", "true {t}", "-p", "t=0..0.002:0.001", "-r", "3", "--config", "up"]);
    for t in ["t=0.000", "t=0.001", "t=0.002"] {
        assert!(text.contains(t), "{t}: {text}");
    }
}

/// A run stored before `conclude` existed keeps its rows: `check` against it
/// measures (it is not refused as "no row in common").
#[test]
fn a_baseline_from_before_conclude_still_shares_its_rows() {
    let e = Env::new();
    ok(&e, &["run", "cmd", "--cmd", "true", "-r", "3", "--config", "up", "--label", "old"]);
    let c = rusqlite::Connection::open(e.db()).unwrap();
    let n = c.execute("UPDATE results SET params = json_remove(params, '$.conclude')", []).unwrap();
    assert_eq!(n, 1);
    drop(c);
    let mut check = e.cmd();
    check.args(["check", "cmd", "--cmd", "true", "-r", "3", "--config", "up", "--against", "old"]).args(NO_QUIET_WAIT);
    let out = check.output().unwrap();
    assert_ne!(out.status.code(), Some(128), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("stored as run 2"));
}
