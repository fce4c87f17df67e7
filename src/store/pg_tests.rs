//! The PostgreSQL backend against a real server: `$KDELTA_TEST_PG` names a
//! database the tests may connect to and create databases from (`.ci/run`
//! starts a throwaway cluster and sets it); without it each test prints
//! "SKIPPED: ..." and passes. Every test makes and drops its own database.

use super::super::Store;
use super::*;
use crate::model::record::RunRecord;
use crate::model::Params;
use crate::store::pg_testdb::TestDb;

fn result(bench: &str, samples: &[f64]) -> ResultRecord {
    let mut params = Params::default();
    params.set("size", "1");
    ResultRecord {
        params,
        iterations: Some(7),
        notes: vec!["n".into()],
        ..crate::testing::stored::ok_result(bench, samples)
    }
}

fn a_run(label: &str) -> RunRecord {
    RunRecord::begin(
        Some(label.into()),
        "kdelta run t".into(),
        vec![],
        serde_json::json!({"hostname": "h"}),
        Default::default(),
    )
}

#[test]
fn runs_and_results_round_trip() {
    let Some(db) = TestDb::new("runs_and_results_round_trip") else { return };
    let mut s = Store::open(Path::new(&db.url)).unwrap();
    assert!(s.is_shared());
    let id = s.begin_run(&a_run("x")).unwrap();
    let r = result("lat.t", &[1.0, 2.0, 3.0]);
    s.add_result(id, 0, &r).unwrap();
    assert_eq!(s.find_run("x").unwrap().status, RunStatus::Running);
    s.finish_run(id, RunStatus::Complete, &Default::default()).unwrap();
    let again = Store::open_read_only(Path::new(&db.url)).unwrap();
    assert_eq!(again.latest_complete().unwrap().unwrap().id, id);
    assert_eq!(again.results(id).unwrap(), vec![r]);
    assert_eq!(again.runs(5).unwrap()[0].1, 1);
    let e = again.find_run("nope").unwrap_err();
    assert!(crate::error::is_bad_input(&e), "{e}");
    // A second open finds the schema made: nothing to migrate.
    drop(Store::open(Path::new(&db.url)).unwrap());
}

#[test]
fn concurrent_writers_never_collide() {
    let Some(db) = TestDb::new("concurrent_writers_never_collide") else { return };
    let threads: Vec<_> = (0..2)
        .map(|t| {
            let url = db.url.clone();
            std::thread::spawn(move || {
                let mut s = Store::open(Path::new(&url)).unwrap();
                (0..10)
                    .map(|i| {
                        let id = s.begin_run(&a_run(&format!("w{t}"))).unwrap();
                        s.add_result(id, 0, &result("lat.t", &[t as f64, i as f64])).unwrap();
                        s.finish_run(id, RunStatus::Complete, &Default::default()).unwrap();
                        id
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let ids: Vec<i64> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    let s = Store::open_read_only(Path::new(&db.url)).unwrap();
    let runs = s.runs(100).unwrap();
    assert_eq!(runs.len(), 20);
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 20);
    for (r, n) in runs {
        assert_eq!((r.status, n), (RunStatus::Complete, 1));
        let t: f64 = r.label.unwrap()[1..].parse().unwrap();
        assert_eq!(s.results(r.id).unwrap()[0].samples[0], t, "a result under another writer's run");
    }
}

#[test]
fn a_lost_connection_fails_its_run_and_keeps_the_rest() {
    let Some(db) = TestDb::new("a_lost_connection_fails_its_run_and_keeps_the_rest") else { return };
    let mut writer = Store::open(Path::new(&db.url)).unwrap();
    let id = writer.begin_run(&a_run("lost")).unwrap();
    writer.add_result(id, 0, &result("lat.t", &[1.0])).unwrap();
    let reader = Store::open(Path::new(&db.url)).unwrap();
    // Alive: its writer holds the run's lock.
    assert_eq!(reader.find_run("lost").unwrap().status, RunStatus::Running);
    let mut admin = postgres::Client::connect(&db.url, NoTls).unwrap();
    admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'kdelta' AND pid <> pg_backend_pid() AND datname = current_database()", &[]).unwrap();
    let e = writer.add_result(id, 1, &result("lat.t", &[2.0])).unwrap_err();
    assert!(!e.to_string().contains('\n'), "{e}");
    let reader = Store::open(Path::new(&db.url)).unwrap();
    assert_eq!(reader.find_run("lost").unwrap().status, RunStatus::Incomplete);
    assert_eq!(reader.results(id).unwrap().len(), 1, "what was committed stays");
    // Marked in the table, not only in what this reader saw.
    let stored: String = admin.query_one("SELECT status FROM kdelta.runs WHERE id = $1", &[&id]).unwrap().get(0);
    assert_eq!(stored, "incomplete");
}

#[test]
fn imports_are_stored_once() {
    let Some(db) = TestDb::new("imports_are_stored_once") else { return };
    let mut s = Store::open(Path::new(&db.url)).unwrap();
    let mut run = a_run("pushed");
    run.status = RunStatus::Complete;
    run.finished = Some("2024-01-01T00:00:00Z".into());
    let rs = vec![result("lat.a", &[1.0]), result("lat.b", &[2.0])];
    let id = s.import_run("h/1", &run, &rs).unwrap().expect("stored");
    assert_eq!(s.import_run("h/1", &run, &rs).unwrap(), None);
    assert_eq!(s.runs(10).unwrap().len(), 1);
    assert_eq!(s.results(id).unwrap(), rs);
    assert_eq!(s.find_run("pushed").unwrap().status, RunStatus::Complete);
}

#[test]
fn foreign_and_newer_databases_are_refused_untouched() {
    let Some(db) = TestDb::new("foreign_and_newer_databases_are_refused_untouched") else { return };
    let mut c = postgres::Client::connect(&db.url, NoTls).unwrap();
    c.batch_execute("CREATE TABLE runs (x int)").unwrap();
    let e = Store::open(Path::new(&db.url)).err().unwrap();
    assert!(crate::error::is_bad_input(&e) && e.to_string().contains("not a kdelta database"), "{e}");
    let e = Store::open_read_only(Path::new(&db.url)).err().unwrap();
    assert!(crate::error::is_bad_input(&e) && e.to_string().contains("no kdelta results"), "{e}");
    c.batch_execute("DROP TABLE runs").unwrap();
    drop(Store::open(Path::new(&db.url)).unwrap());
    c.batch_execute("UPDATE kdelta.kdelta_schema SET version = 99").unwrap();
    for e in [Store::open(Path::new(&db.url)).err().unwrap(), Store::open_read_only(Path::new(&db.url)).err().unwrap()]
    {
        assert!(crate::error::is_bad_input(&e) && e.to_string().contains("newer kdelta"), "{e}");
    }
}

#[test]
fn an_unreachable_server_is_one_line() {
    // Port 1 on loopback: nothing listens there.
    let e = Store::open(Path::new("postgresql://kd@127.0.0.1:1/kdelta?connect_timeout=2")).err().unwrap();
    let m = e.to_string();
    assert!(
        crate::error::is_bad_input(&e)
            && m.starts_with("cannot open database postgresql://kd@127.0.0.1:1/kdelta")
            && !m.contains('\n'),
        "{m}"
    );
}

#[test]
fn statements_have_a_time_limit() {
    let Some(db) = TestDb::new("statements_have_a_time_limit") else { return };
    let s = Pg::open(&db.url).unwrap();
    let t: String = s.client.borrow_mut().query_one("SHOW statement_timeout", &[]).unwrap().get(0);
    assert_eq!(t, "1min");
    // The URL's own setting is kept.
    let url = format!("{}&options=-c%20statement_timeout%3D5s", db.url);
    let s = Pg::open(&url).unwrap();
    let t: String = s.client.borrow_mut().query_one("SHOW statement_timeout", &[]).unwrap().get(0);
    assert_eq!(t, "5s");
}

#[test]
fn tables_an_earlier_kdelta_made_in_public_are_used_there() {
    let Some(db) = TestDb::new("tables_an_earlier_kdelta_made_in_public_are_used_there") else { return };
    let mut c = postgres::Client::connect(&db.url, NoTls).unwrap();
    c.batch_execute("CREATE TABLE kdelta_schema (version INTEGER NOT NULL); INSERT INTO kdelta_schema VALUES (1);")
        .unwrap();
    c.batch_execute(STEPS[0].1).unwrap();
    let mut s = Store::open(Path::new(&db.url)).unwrap();
    let id = s.begin_run(&a_run("old")).unwrap();
    s.finish_run(id, RunStatus::Complete, &Default::default()).unwrap();
    assert_eq!(Store::open_read_only(Path::new(&db.url)).unwrap().find_run("old").unwrap().id, id);
    let n: i64 = c.query_one("SELECT COUNT(*) FROM public.runs", &[]).unwrap().get(0);
    assert_eq!(n, 1);
    let own: bool = c.query_one("SELECT to_regnamespace('kdelta') IS NOT NULL", &[]).unwrap().get(0);
    assert!(!own, "no second set of tables beside the first");
}

#[test]
fn metadata_round_trips_and_is_carried_by_an_import() {
    let Some(db) = TestDb::new("metadata_round_trips_and_is_carried_by_an_import") else { return };
    let mut s = Store::open(Path::new(&db.url)).unwrap();
    let pairs = [("commit".to_string(), "abc123".to_string()), ("branch".to_string(), "main".to_string())];
    let mut run = a_run("m");
    run.host = serde_json::json!({"hostname": "box", "kernel_release": "6.18.0"});
    run.meta = crate::model::meta::RunMeta::from_pairs(&pairs).unwrap();
    let id = s.begin_run(&run).unwrap();
    assert_eq!(s.find_run("m").unwrap().meta, run.meta);
    let plain = s.begin_run(&a_run("plain")).unwrap();
    assert!(s.find_run(&plain.to_string()).unwrap().meta.is_empty());
    run.status = RunStatus::Complete;
    let pushed = s.import_run("elsewhere/1", &run, &[result("lat.a", &[1.0])]).unwrap().unwrap();
    assert_eq!(s.find_run(&pushed.to_string()).unwrap().meta, run.meta);
    assert_eq!(s.runs(10).unwrap().iter().filter(|(r, _)| r.meta.get("commit") == Some("abc123")).count(), 2);
    let mut c = postgres::Client::connect(&db.url, NoTls).unwrap();
    let row = c.query_one("SELECT hostname, kernel FROM kdelta.runs WHERE id = $1", &[&id]).unwrap();
    assert_eq!((row.get::<_, String>(0), row.get::<_, String>(1)), ("box".into(), "6.18.0".into()));
}

/// A version-1 database (an older kdelta's) is migrated to version 2 on
/// the next write: its runs read back without metadata, their host name
/// and kernel copied into the new columns, the history indexes made.
#[test]
fn a_version_1_database_migrates_with_filled_host_keys() {
    let Some(db) = TestDb::new("a_version_1_database_migrates_with_filled_host_keys") else { return };
    let mut c = postgres::Client::connect(&db.url, NoTls).unwrap();
    c.batch_execute(&format!(
        "CREATE SCHEMA kdelta; SET search_path TO kdelta;
         CREATE TABLE kdelta_schema (version INTEGER NOT NULL); INSERT INTO kdelta_schema VALUES (1); {}
         INSERT INTO runs (started, status, kdelta_version, command, configs, host) VALUES
             ('2020-01-01T00:00:00Z', 'complete', '0.1', 'run', '[]', '{{\"hostname\": \"old\", \"kernel_release\": \"5.10\"}}'),
             ('2020-01-02T00:00:00Z', 'complete', '0.1', 'run', '[]', 'not json');",
        STEPS[0].1
    ))
    .unwrap();
    let runs = Store::open_read_only(Path::new(&db.url)).unwrap().runs(10).unwrap();
    assert!(runs.len() == 2 && runs.iter().all(|(r, _)| r.meta.is_empty()));
    let s = Store::open(Path::new(&db.url)).unwrap();
    assert!(s.find_run("1").unwrap().meta.is_empty());
    let v: i32 = c.query_one("SELECT version FROM kdelta.kdelta_schema", &[]).unwrap().get(0);
    assert_eq!(v, PG_VERSION);
    let keys: Vec<(Option<String>, Option<String>)> = c
        .query("SELECT hostname, kernel FROM kdelta.runs ORDER BY id", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(keys, [(Some("old".into()), Some("5.10".into())), (None, None)]);
    let indexes: i64 = c
        .query_one(
            "SELECT COUNT(*) FROM pg_indexes WHERE schemaname = 'kdelta'
             AND indexname IN ('runs_host_started', 'runs_started', 'results_benchmark_run', 'results_run_benchmark')",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(indexes, 4);
}

#[test]
fn history_selects_runs_in_postgresql() {
    let Some(db) = TestDb::new("history_selects_runs_in_postgresql") else { return };
    crate::store::history_tests::check(&mut Store::open(Path::new(&db.url)).unwrap());
}
