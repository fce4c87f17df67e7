//! Issue 52's last items: `history` goes on past a damaged or forged row
//! (one warning naming it), a profile row over the size a profile may take
//! is neither pushed nor read whole (SQLite and PostgreSQL), and a dbench
//! loadfile whose timestamps run past the run is refused before it runs.

use crate::common::{assert_ok, json, ok_json, Env, PgDb};

fn sqlite(path: &std::path::Path, sql: &str) {
    rusqlite::Connection::open(path).unwrap().execute_batch(sql).unwrap();
}

/// `n` runs of `lat.syscall` (a 5 % step at run `n / 2`) and `lat.pipe`.
fn fill(e: &Env, n: usize) -> Vec<i64> {
    crate::common::nightly_series(e, n, n / 2)
}

#[test]
fn history_leaves_out_a_damaged_row_and_garbage_with_a_warning() {
    let e = Env::new();
    let ids = fill(&e, 24);
    let (damaged, dateless, negative) = (ids[3], ids[5], ids[17]);
    sqlite(
        &e.db(),
        &format!(
            "UPDATE results SET samples = '[1,2' WHERE run_id = {damaged} AND benchmark = 'lat.syscall';
             UPDATE runs SET started = 'not a date' WHERE id = {dateless};
             UPDATE results SET samples = '[-5, 1e300, 3]' WHERE run_id = {negative} AND benchmark = 'lat.pipe';"
        ),
    );
    let out = e.cmd().args(["history", "lat", "--format", "json"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(lines.iter().all(|l| l.starts_with("kdelta: warning: ") && l.ends_with("left out of the history")));
    assert!(err.contains(&format!("result lat.syscall of run {damaged} is damaged in the store: its samples column")));
    assert!(err.contains(&format!("run {dateless} has a start time that is not a date (\"not a date\")")), "{err}");
    assert!(err.contains(&format!("result lat.pipe of run {negative} holds the sample -5")), "{err}");
    let v = json(&out.stdout);
    let runs_of = |b: &str| -> Vec<i64> {
        let s = v["series"].as_array().unwrap().iter().find(|s| s["benchmark"] == b).unwrap();
        s["runs"].as_array().unwrap().iter().map(|r| r["run"]["id"].as_i64().unwrap()).collect()
    };
    let sys = runs_of("lat.syscall");
    let pipe = runs_of("lat.pipe");
    assert_eq!(sys.len(), 22, "{sys:?}");
    assert_eq!(pipe.len(), 22, "{pipe:?}");
    assert!(!sys.contains(&damaged) && !sys.contains(&dateless) && sys.contains(&negative));
    assert!(!pipe.contains(&negative) && !pipe.contains(&dateless) && pipe.contains(&damaged));
    // The step is still found, and the page is drawn.
    let s = v["series"].as_array().unwrap().iter().find(|s| s["benchmark"] == "lat.syscall").unwrap();
    assert_eq!(s["changes"].as_array().unwrap().len(), 1, "{s}");
    let html = e.dir.path().join("h.html");
    let out = e.cmd().args(["report", "--history", "lat", "-o", html.to_str().unwrap()]).output().unwrap();
    assert_ok(&out);
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().filter(|l| l.contains("warning")).count(), 3);
    // Elsewhere the damaged row is still refused: one line, exit 2.
    let out = e.cmd().args(["show", &damaged.to_string()]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
}

/// A profile's JSON with `n` distinct stacks of about 100 bytes each.
fn profile_json(n: usize) -> String {
    let stacks: serde_json::Map<String, serde_json::Value> =
        (0..n).map(|i| (format!("main;{};leaf_{i:08}", "f".repeat(80)), serde_json::json!(1 + i % 7))).collect();
    let samples: u64 = (0..n).map(|i| 1 + (i % 7) as u64).sum();
    serde_json::json!({"event": "cpu-clock", "hz": 1999, "stacks": stacks, "samples": samples, "workers": 1})
        .to_string()
}

/// An env whose database holds two runs of `lat.syscall` (ids 1 and 2), and
/// the database's path.
fn two_stored_runs() -> (Env, String) {
    let e = Env::new();
    let db = e.db().to_str().unwrap().to_string();
    for _ in 0..2 {
        let out = e
            .cmd()
            .args(["--db", &db, "run", "lat.syscall", "--runs", "1", "--sample-time", "1ms", "--quick"])
            .output()
            .unwrap();
        assert_ok(&out);
    }
    (e, db)
}

/// Forges the stored profiles of runs 1 and 2 in the SQLite file.
fn forge_profiles(e: &Env, first: &str, second: &str) {
    sqlite(&e.db(), &format!("UPDATE results SET profile = '{first}' WHERE run_id = 1"));
    sqlite(&e.db(), &format!("UPDATE results SET profile = '{second}' WHERE run_id = 2"));
}

fn exported_profile(e: &Env, db: &str, run: &str) -> (serde_json::Value, String) {
    let v = ok_json(e, &["--db", db, "export", run, "--format", "json"]);
    let r = &v["results"][0];
    (r["profile"].clone(), r["notes"].to_string())
}

/// A forged profile over the read cap (4 x 256 KiB of JSON) is not read: the
/// result reads without it and says so; one under the cap but over what a
/// profile keeps is read bounded (its rarest stacks merged into `[cut]`).
#[test]
fn an_oversized_profile_is_never_read_whole_from_sqlite() {
    let (e, db) = two_stored_runs();
    let db = db.as_str();
    let (huge, big) = (profile_json(20_000), profile_json(5_000));
    assert!(huge.len() > 4 * 256 * 1024 && big.len() > 256 * 1024 && big.len() < 4 * 256 * 1024);
    forge_profiles(&e, &huge, &big);
    let (p, notes) = exported_profile(&e, db, "1");
    assert!(p.is_null(), "{p}");
    assert!(notes.contains("its stored profile (") && notes.contains("not read"), "{notes}");
    let (p, _) = exported_profile(&e, db, "2");
    let stacks = p["stacks"].as_object().unwrap();
    assert!(stacks.len() < 5_000 && stacks.contains_key("[cut]"), "{}", stacks.len());
    let sum: u64 = stacks.values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(sum, p["samples"].as_u64().unwrap(), "the widths still add up");
}

/// The peak resident memory of `cmd`'s process, in KiB, from `wait4`. A
/// child's peak starts from this process's (fork copies it), so this
/// process's is first reset to what it holds now (`clear_refs` 5).
#[allow(clippy::zombie_processes)] // reaped by wait4, which also gives its usage
fn peak_kib(mut cmd: std::process::Command) -> i64 {
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let child = cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
    let (mut status, mut ru) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut ru) };
    assert_eq!(pid, child.id() as libc::pid_t);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "{:?} failed", cmd.get_args());
    ru.ru_maxrss
}

/// A forged 96 MB profile is not even loaded by SQLite to be measured:
/// `show` and `export` of its run peak within 40 MB of the same commands
/// on a run beside it (a length taken with `length(CAST(profile AS BLOB))`
/// loaded the whole text: 60-130 MB more).
#[test]
fn an_oversized_profile_is_not_loaded_to_be_measured() {
    let (e, db) = two_stored_runs();
    let db = db.as_str();
    sqlite(&e.db(), "UPDATE results SET profile = '\"' || hex(randomblob(48000000)) || '\"' WHERE run_id = 1");
    for args in [["show", "--warnings"], ["export", "--format=json"]] {
        let peak = |run: &str| {
            let mut cmd = e.spawnable();
            cmd.args(["--db", db]).args(args).arg(run);
            peak_kib(cmd)
        };
        let (forged, beside) = (peak("1"), peak("2"));
        assert!(
            forged < beside + 40 * 1024,
            "{args:?}: {forged} KiB with a 96 MB profile in the row, {beside} without"
        );
    }
}

/// The same through `push` and from PostgreSQL: nothing over the cap goes
/// in, and a row forged there is not read whole.
#[test]
fn an_oversized_profile_is_neither_pushed_nor_read_whole_from_postgresql() {
    let Some(pg) = PgDb::new("an_oversized_profile_is_neither_pushed_nor_read_whole") else { return };
    let (e, db) = two_stored_runs();
    let db = db.as_str();
    let (huge, big) = (profile_json(20_000), profile_json(5_000));
    forge_profiles(&e, &huge, &big);
    let out = e.cmd().args(["--db", db, "push", "--to", &pg.url]).output().unwrap();
    assert_ok(&out);
    let mut c = pg.sql();
    let longest: Option<i32> = c.query_one("SELECT max(octet_length(profile)) FROM results", &[]).unwrap().get(0);
    let longest = longest.unwrap_or(0) as usize;
    assert!(longest > 0 && longest <= 300 * 1024, "a pushed profile has {longest} bytes");
    // Forged in PostgreSQL itself.
    c.execute("UPDATE results SET profile = $1", &[&huge]).unwrap();
    let ids: Vec<i64> = c.query("SELECT id FROM runs ORDER BY id", &[]).unwrap().iter().map(|r| r.get(0)).collect();
    for id in ids {
        let (p, notes) = exported_profile(&e, &pg.url, &id.to_string());
        assert!(p.is_null(), "{p}");
        assert!(notes.contains("not read"), "{notes}");
        let out = e.cmd().args(["--db", &pg.url, "show", &id.to_string()]).output().unwrap();
        assert!(out.status.success() && out.stdout.len() < 64 * 1024, "{}", String::from_utf8_lossy(&out.stderr));
    }
}

/// An escape sequence given on the command line never reaches a terminal
/// raw: in a configuration's name (shown in every table and stored) it is
/// refused before anything runs, as in a label; in a command's text (a
/// printf of one is ordinary) it is shown as `\x1b`.
#[test]
fn an_escape_sequence_in_a_config_or_a_command_is_never_printed_raw() {
    let e = Env::new();
    let out = e.cmd().args(["run", "lat.syscall", "--quick", "--config", "up+env=X=a\x1b[2J"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("U+001B") && err.lines().count() == 1 && !err.contains('\x1b'), "{err}");
    assert!(!e.db().exists(), "refused before anything ran");
    let out = e
        .cmd()
        .args(["run", "cmd", "--cmd", "printf '\x1b[2J' >/dev/null", "--runs", "2", "--quiet-wait", "0"])
        .output()
        .unwrap();
    assert_ok(&out);
    for shown in [out.stdout.clone(), e.cmd().args(["show", "1"]).output().unwrap().stdout] {
        let text = String::from_utf8_lossy(&shown);
        assert!(!text.contains('\x1b') && text.contains("printf '\\x1b[2J'"), "{text}");
    }
}

/// A store forged to hold escape sequences where kdelta never writes one
/// (a label, a configuration, a benchmark's name, a note): every listing
/// shows them as visible escapes, none reaches the terminal raw.
#[test]
fn escapes_forged_into_the_store_are_never_printed_raw() {
    let e = Env::new();
    let out = e
        .cmd()
        .args(["run", "cmd", "--cmd", "true", "--runs", "2", "--label", "x", "--quiet-wait", "0"])
        .output()
        .unwrap();
    assert_ok(&out);
    sqlite(
        &e.db(),
        "UPDATE runs SET label = 'a' || char(27) || ']0;pwned' || char(7);
         UPDATE results SET config = 'up' || char(27) || '[2J', notes = '[\"n\\u001b[31m\"]',
                            benchmark = 'cmd.run' || char(27) || '[1m';",
    );
    for args in [&["runs"][..], &["show", "1"], &["show", "1", "--format", "markdown"], &["show", "1", "--warnings"]] {
        let out = e.cmd().args(args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!text.contains('\x1b') && !text.contains('\x07'), "{args:?}: {text}");
        assert!(text.contains("\\x1b"), "{args:?} shows the escape visibly: {text}");
    }
}
