//! The store refuses hostile files without changing them, reads older
//! schemas read-only, migrates them when writing, and tells a dead run from
//! a live one by process id and start time.

use super::Sqlite as Store;
use super::*;
use crate::model::record::RunRecord;

const KDLT: i32 = APPLICATION_ID;

/// Entries in `dir` other than `keep`.
fn siblings(dir: &Path, keep: &str) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != keep)
        .collect()
}

/// Both ways of opening refuse `path` with a message containing `says`,
/// and the file is byte-identical with nothing created beside it.
fn refused_untouched(path: &Path, says: &str, writing_too: bool) {
    let before = std::fs::read(path).unwrap();
    let mut errors = vec![Store::open_read_only(path).err().expect("read-only open refused")];
    if writing_too {
        errors.push(Store::open(path).err().expect("open for writing refused"));
    }
    for e in errors {
        let msg = e.to_string();
        assert!(crate::error::is_bad_input(&e), "{msg}");
        assert!(msg.contains(says) && msg.contains("left untouched") && !msg.contains('\n'), "{msg}");
    }
    assert_eq!(std::fs::read(path).unwrap(), before, "file changed");
    assert_eq!(siblings(path.parent().unwrap(), "db"), Vec::<String>::new(), "files created beside it");
}

/// A database made by another program (`sql` run on a fresh file), closed.
fn sqlite_file(path: &Path, sql: &str) {
    let c = Connection::open(path).unwrap();
    c.execute_batch(sql).unwrap();
}

fn a_run() -> RunRecord {
    RunRecord::begin(Some("t".into()), "kdelta run t".into(), vec![], serde_json::json!({}), Default::default())
}

/// A kind of hostile file: its name, how to make it, what its refusal says.
type Case = (&'static str, Box<dyn Fn(&Path)>, &'static str);

#[test]
fn hostile_files_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let cases: Vec<Case> = vec![
        (
            "random bytes",
            Box::new(|p| std::fs::write(p, (0..5000u32).map(|i| (i * 31 % 253) as u8).collect::<Vec<_>>()).unwrap()),
            "not a kdelta database",
        ),
        (
            "a short SQLite magic",
            Box::new(|p| std::fs::write(p, b"SQLite format 3\0").unwrap()),
            "not a kdelta database",
        ),
        (
            "a foreign table",
            Box::new(|p| sqlite_file(p, "CREATE TABLE mine (x); INSERT INTO mine VALUES (1);")),
            "table mine",
        ),
        ("only a view", Box::new(|p| sqlite_file(p, "CREATE VIEW v AS SELECT 1;")), "view v"),
        (
            "another application id",
            Box::new(|p| sqlite_file(p, "PRAGMA application_id = 42; CREATE TABLE t (x);")),
            "application_id 0x2a",
        ),
        (
            "kdelta's id without tables",
            Box::new(|p| sqlite_file(p, &format!("PRAGMA application_id = {KDLT};"))),
            "damaged",
        ),
        (
            "kdelta's id and version without tables",
            Box::new(|p| sqlite_file(p, &format!("PRAGMA application_id = {KDLT}; PRAGMA user_version = 2;"))),
            "no tables",
        ),
        (
            "a newer schema",
            Box::new(|p| {
                sqlite_file(
                    p,
                    &format!("PRAGMA application_id = {KDLT}; PRAGMA user_version = 99; CREATE TABLE runs (id);"),
                )
            }),
            "schema 99",
        ),
        (
            "a missing column",
            Box::new(|p| {
                sqlite_file(p, &format!("PRAGMA application_id = {KDLT}; PRAGMA user_version = 1; CREATE TABLE runs (id); CREATE TABLE results (id);"))
            }),
            "without column runs.label",
        ),
        (
            "a WAL-mode foreign file",
            Box::new(|p| sqlite_file(p, "PRAGMA journal_mode = WAL; CREATE TABLE w (x); INSERT INTO w VALUES (1);")),
            "table w",
        ),
    ];
    for (what, make, says) in cases {
        let _ = std::fs::remove_file(&db);
        make(&db);
        if what.contains("WAL") {
            assert_eq!(std::fs::read(&db).unwrap()[18..20], [2, 2], "the fixture is in WAL mode");
        }
        eprintln!("case: {what}");
        refused_untouched(&db, says, true);
    }
}

#[test]
fn a_truncated_kdelta_file_is_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    {
        let mut s = Store::open(&db).unwrap();
        let id = s.begin_run(&a_run()).unwrap();
        s.conn.execute("UPDATE runs SET command = ?2 WHERE id = ?1", params![id, "x".repeat(20_000)]).unwrap();
    }
    let bytes = std::fs::read(&db).unwrap();
    assert_eq!(&bytes[68..72], &KDLT.to_be_bytes());
    let page = check_header(&bytes, bytes.len() as u64).unwrap().page_size as usize;
    std::fs::write(&db, &bytes[..bytes.len() / page / 2 * page]).unwrap();
    refused_untouched(&db, "truncated", true);
    std::fs::write(&db, &bytes[..bytes.len() - 100]).unwrap();
    refused_untouched(&db, "damaged", true);
}

#[test]
fn an_empty_file_is_refused_for_reading_and_made_a_store_for_writing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    std::fs::write(&db, b"").unwrap();
    refused_untouched(&db, "an empty file", false);
    sqlite_file(&db, "PRAGMA user_version = 0;");
    refused_untouched(&db, "empty SQLite database", false);
    Store::open(&db).unwrap();
    assert_eq!(Store::open_read_only(&db).unwrap().runs(10).unwrap().len(), 0);
}

#[test]
fn header_check_reads_the_fields() {
    assert!(matches!(check_header(b"", 0), Err(Refusal::NotKdelta(_))));
    let mut h = vec![0u8; 4096];
    h[..16].copy_from_slice(b"SQLite format 3\0");
    h[16..18].copy_from_slice(&4096u16.to_be_bytes());
    h[18] = 2;
    h[19] = 2;
    h[21..24].copy_from_slice(&[64, 32, 32]);
    h[28..32].copy_from_slice(&1u32.to_be_bytes());
    let ok = check_header(&h, 4096).unwrap();
    assert!(ok.wal && ok.page_size == 4096 && ok.application_id == 0);
    assert!(matches!(check_header(&h, 4000), Err(Refusal::NotKdelta(_))));
    h[68..72].copy_from_slice(&KDLT.to_be_bytes());
    assert!(matches!(check_header(&h, 4000), Err(Refusal::Damaged(_))));
    h[60..64].copy_from_slice(&(SCHEMA_VERSION + 1).to_be_bytes());
    assert_eq!(check_header(&h, 4096), Err(Refusal::Newer(SCHEMA_VERSION as i64 + 1)));
    h[60..64].copy_from_slice(&SCHEMA_VERSION.to_be_bytes());
    h[40..44].copy_from_slice(&7u32.to_be_bytes());
    assert_eq!(check_header(&h, 4096).unwrap().user_version, SCHEMA_VERSION);
    h[28..32].copy_from_slice(&3u32.to_be_bytes());
    assert!(matches!(check_header(&h, 8192), Err(Refusal::Damaged(m)) if m.contains("truncated")));
    h[19] = 3;
    assert!(matches!(check_header(&h, 4096), Err(Refusal::Damaged(_))));
}

/// A file of an older schema, alone in its directory: `read` reads it as
/// it is through a read-only store, which leaves it byte-identical with
/// nothing beside it; opened to write, it is migrated to the current
/// version. That store.
#[track_caller]
fn read_as_it_is_then_migrated(db: &Path, read: impl FnOnce(&Store)) -> Store {
    let before = std::fs::read(db).unwrap();
    read(&Store::open_read_only(db).unwrap());
    assert_eq!(std::fs::read(db).unwrap(), before, "read-only, the file changed");
    let beside = siblings(db.parent().unwrap(), db.file_name().unwrap().to_str().unwrap());
    assert!(beside.is_empty(), "read-only, files beside it: {beside:?}");
    let s = Store::open(db).unwrap();
    assert_eq!(s.conn.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0)).unwrap(), SCHEMA_VERSION as i64);
    s
}

#[test]
fn a_version_1_file_is_read_as_it_is_and_migrated_when_written() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    sqlite_file(
        &db,
        &format!(
            "{} PRAGMA application_id = {KDLT}; PRAGMA user_version = 1;
             INSERT INTO runs (started, status, kdelta_version, command, pid, configs, host) VALUES ('2020-01-01T00:00:00Z', 'complete', '0.1', 'run', 1, '[]', '{{}}');
             INSERT INTO results (run_id, seq, benchmark, family, params, config, cpus, unit, better, status, samples, summary)
                 VALUES (1, 0, 'lat.x', 'lat', '{{}}', 'up', '0', 'us', 'lower', 'ok', '[1.0]', 'null');",
            schema::V1
        ),
    );
    let s = read_as_it_is_then_migrated(&db, |s| {
        assert_eq!(s.runs(10).unwrap().len(), 1);
        let r = s.results(1).unwrap();
        assert_eq!(r[0].samples, vec![1.0]);
        assert!(r[0].samples_meta.is_empty());
    });
    assert_eq!(s.find_run("1").unwrap().status, RunStatus::Complete);
}

#[test]
fn a_running_run_is_alive_only_while_its_process_is() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("db")).unwrap();
    let id = s.begin_run(&a_run()).unwrap();
    let status = |s: &Store| s.find_run(&id.to_string()).unwrap().status;
    assert_eq!(status(&s), RunStatus::Running);
    let start: i64 = s.conn.query_row("SELECT pid_start FROM runs WHERE id = ?1", [id], |r| r.get(0)).unwrap();
    assert_eq!(Some(start as u64), crate::sys::task::start_time(std::process::id() as i32));
    // The id now names a process that started at another time: reused.
    s.conn.execute("UPDATE runs SET pid_start = pid_start + 1 WHERE id = ?1", [id]).unwrap();
    assert_eq!(status(&s), RunStatus::Incomplete);
    assert_eq!(s.runs(5).unwrap()[0].0.status, RunStatus::Incomplete);
    // A run stored before schema 3 has no start time: the id alone decides.
    s.conn.execute("UPDATE runs SET pid_start = NULL WHERE id = ?1", [id]).unwrap();
    assert_eq!(status(&s), RunStatus::Running);
    // No process has this id (above any pid_max).
    s.conn.execute("UPDATE runs SET pid = 2147483000 WHERE id = ?1", [id]).unwrap();
    assert_eq!(status(&s), RunStatus::Incomplete);
}

#[test]
fn write_failures_name_their_kind() {
    let io = |n| check::io_refusal(&std::io::Error::from_raw_os_error(n));
    assert!(matches!(io(libc::ENOSPC), Refusal::NoSpace(_)));
    assert!(matches!(io(libc::EROFS), Refusal::ReadOnly(_)));
    assert!(matches!(io(libc::ENOENT), Refusal::CannotOpen(_)));
    let sql = |code| rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None);
    assert!(matches!(
        check::write_refusal(&sql(rusqlite::ffi::SQLITE_FULL), Path::new("/")),
        Some(Refusal::NoSpace(_))
    ));
    assert!(matches!(
        check::write_refusal(&sql(rusqlite::ffi::SQLITE_READONLY), Path::new("/")),
        Some(Refusal::ReadOnly(_))
    ));
    assert!(check::write_refusal(&sql(rusqlite::ffi::SQLITE_BUSY), Path::new("/")).is_none());
    let p = Path::new("/x/db");
    for r in [Refusal::NoSpace("e".into()), Refusal::ReadOnly("e".into()), Refusal::CannotOpen("e".into())] {
        let m = r.message(p);
        assert!(m.contains("/x/db") && !m.contains('\n'), "{m}");
    }
    assert!(Refusal::NoSpace("e".into()).message(p).starts_with("no space left"));
}

#[test]
fn metadata_and_host_keys_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("db")).unwrap();
    let mut run = a_run();
    run.host = serde_json::json!({"hostname": "box", "kernel_release": "6.18.0"});
    let pairs = [("commit".to_string(), "abc123".to_string()), ("branch".to_string(), "main".to_string())];
    run.meta = crate::model::meta::RunMeta::from_pairs(&pairs).unwrap();
    let id = s.begin_run(&run).unwrap();
    let plain = s.begin_run(&a_run()).unwrap();
    assert_eq!(s.find_run(&id.to_string()).unwrap().meta, run.meta);
    assert!(s.find_run(&plain.to_string()).unwrap().meta.is_empty());
    assert_eq!(s.runs(5).unwrap()[1].0.meta.get("commit"), Some("abc123"));
    let keys: (Option<String>, Option<String>, String) = s
        .conn
        .query_row("SELECT hostname, kernel, meta FROM runs WHERE id = ?1", [id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert_eq!(keys, (Some("box".into()), Some("6.18.0".into()), r#"{"branch":"main","commit":"abc123"}"#.into()));
}

/// A version-3 file reads as it is (every run without metadata), and once
/// written is at the current version with the host columns filled from
/// each run's snapshot and the history indexes made.
#[test]
fn a_version_3_file_migrates_with_empty_metadata_and_filled_host_keys() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    sqlite_file(
        &db,
        &format!(
            "{} {} {} PRAGMA application_id = {KDLT}; PRAGMA user_version = 3;
             INSERT INTO runs (started, status, kdelta_version, command, pid, configs, host) VALUES
                 ('2020-01-01T00:00:00Z', 'complete', '0.1', 'run', 1, '[]', '{{\"hostname\": \"old\", \"kernel_release\": \"5.10\"}}'),
                 ('2020-01-02T00:00:00Z', 'complete', '0.1', 'run', 1, '[]', 'not json');
             INSERT INTO results (run_id, seq, benchmark, family, params, config, cpus, unit, better, status, samples, summary)
                 VALUES (1, 0, 'lat.x', 'lat', '{{}}', 'up', '0', 'us', 'lower', 'ok', '[1.0]', 'null');",
            schema::V1,
            schema::V2,
            schema::V3
        ),
    );
    let s = read_as_it_is_then_migrated(&db, |s| {
        let runs = s.runs(10).unwrap();
        assert_eq!(runs.len(), 2);
        assert!(runs.iter().all(|(r, _)| r.meta.is_empty()));
        assert_eq!(runs[1].1, 1, "the result count is read past the new column");
    });
    let keys: Vec<(Option<String>, Option<String>, Option<String>)> = s
        .conn
        .prepare("SELECT hostname, kernel, meta FROM runs ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(keys, [(Some("old".into()), Some("5.10".into()), None), (None, None, None)]);
    assert!(s.find_run("1").unwrap().meta.is_empty());
    assert_eq!(s.results(1).unwrap()[0].samples, vec![1.0]);
    for index in ["runs_host_started", "runs_started", "results_benchmark_run", "results_run_benchmark"] {
        let n: i64 = s
            .conn
            .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?1", [index], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1, "{index}");
    }
    // Opened again: nothing left to migrate, and a healthy version-4 file.
    drop(s);
    Store::open_read_only(&db).unwrap();
    Store::open(&db).unwrap();
}

/// The query a benchmark's history makes, "the results of benchmark B on
/// host H in the order the runs started", goes through the indexes: no
/// scan of either table, no sort.
#[test]
fn a_benchmarks_history_on_a_host_is_found_through_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("db")).unwrap();
    let plan: Vec<String> = s
        .conn
        .prepare(
            "EXPLAIN QUERY PLAN
             SELECT runs.id, runs.started, results.params, results.config, results.summary
             FROM runs JOIN results ON results.run_id = runs.id
             WHERE runs.hostname = ?1 AND results.benchmark = ?2 AND runs.started >= ?3
             ORDER BY runs.started, runs.id, results.seq",
        )
        .unwrap()
        .query_map(["h", "lat.syscall", "2020-01-01T00:00:00Z"], |r| r.get::<_, String>(3))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    let text = plan.join("\n");
    assert!(text.contains("runs_host_started") && text.contains("results_benchmark_run"), "{text}");
    assert!(!text.contains("SCAN runs") && !text.contains("SCAN results"), "{text}");
}

/// `EXPLAIN QUERY PLAN` of `sql` with `values` bound, one line per step.
fn plan_of(s: &Store, sql: &str, values: &[&str]) -> String {
    let mut st = s.conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let rows = st.query_map(rusqlite::params_from_iter(values), |r| r.get::<_, String>(3)).unwrap();
    rows.collect::<rusqlite::Result<Vec<_>>>().unwrap().join("\n")
}

/// The statements `kdelta history` makes, as the store makes them: a
/// host's runs in start order from the index on host and start time (no
/// scan, no sort), the benchmarks they hold from an index alone, and only
/// the wanted results' rows read.
#[test]
fn the_history_statements_go_through_the_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&dir.path().join("db")).unwrap();
    let q = super::super::HistoryQuery { hostname: Some("h17".into()), ..Default::default() };
    let (sql, values) = s.history_runs_sql(&q);
    assert_eq!(values, ["h17"]);
    let text = plan_of(&s, &sql, &values);
    assert!(text.contains("runs_host_started (hostname=?)"), "{text}");
    assert!(!text.contains("SCAN") && !text.contains("B-TREE"), "{text}");
    let q = super::super::HistoryQuery { label: Some("nightly".into()), ..q };
    let (sql, values) = s.history_runs_sql(&q);
    assert_eq!(values, ["nightly", "h17"]);
    assert!(!plan_of(&s, &sql, &values).contains("SCAN runs"), "{sql}");
    let text = plan_of(&s, RESULT_NAMES_SQL, &["[1, 2]"]);
    assert!(text.contains("COVERING INDEX results_run_benchmark (run_id=?)"), "{text}");
    let text = plan_of(&s, &s.history_results_sql(), &["1", "[\"lat.syscall\"]"]);
    assert!(text.contains("results_run_benchmark (run_id=?"), "{text}");
    assert!(!text.contains("SCAN results") && !text.contains("INDEX results_run ("), "{text}");
    assert_eq!(text.matches("results_run_benchmark (run_id=?").count(), 2, "{text}");
}

/// A file larger than a reader checks whole opens for reading with a
/// damaged page in it; the query that reaches the page is refused as
/// damaged, one line. A writer, and a reader of a smaller file, refuse it
/// when opening.
#[test]
fn a_damaged_page_of_a_large_file_is_refused_when_read() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let id = {
        let mut s = Store::open(&db).unwrap();
        let id = s.begin_run(&a_run()).unwrap();
        let samples: Vec<f64> = (0..20_000).map(|i| 1.0 + i as f64 / 3.0).collect();
        s.add_result(id, 0, &crate::testing::stored::ok_result("lat.syscall", &samples)).unwrap();
        id
    };
    let mut bytes = std::fs::read(&db).unwrap();
    let page = check_header(&bytes, bytes.len() as u64).unwrap().page_size as usize;
    // The middle page of the file: one of the samples' overflow pages.
    let middle = bytes.len() / page / 2 * page;
    bytes[middle..middle + page].fill(0xff);
    std::fs::write(&db, &bytes).unwrap();
    refused_untouched(&db, "damaged", true);
    let s = Store::open_read_only_checking(&db, 0).unwrap();
    assert_eq!(s.find_run(&id.to_string()).unwrap().id, id);
    let e = s.history_results(&[id], &["lat.syscall".to_string()]).expect_err("the damaged page is refused");
    let msg = e.to_string();
    assert!(crate::error::is_bad_input(&e) && msg.contains("damaged") && !msg.contains('\n'), "{msg}");
    assert_eq!(std::fs::read(&db).unwrap(), bytes, "file changed");
}
