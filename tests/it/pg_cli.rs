//! The shared store from the command line: `--db` URLs (refused schemes make
//! nothing), two kdelta processes writing one PostgreSQL database at once,
//! `compare` across them and `push` of a local file, twice. The PostgreSQL
//! cases need `$KDELTA_TEST_PG` (set by `.ci/run`, which starts a throwaway
//! cluster); without it they print "SKIPPED: ..." and pass.

use crate::common::assert_ok;
use crate::common::PgDb as Db;
use assert_cmd::Command;
use std::path::Path;

fn kdelta(cwd: &Path) -> Command {
    let mut c = Command::cargo_bin("kdelta").unwrap();
    c.current_dir(cwd).env_remove("KDELTA_DB").env("TMPDIR", cwd);
    c
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

#[test]
fn urls_are_never_taken_as_paths() {
    let dir = tempfile::tempdir().unwrap();
    for db in [
        "mysql://kd@127.0.0.1:3306/kdelta",
        "sqlite:///tmp/x.db",
        "postgresql://kd@127.0.0.1:1/kdelta?connect_timeout=2",
    ] {
        for args in [&["runs"][..], &["run", "lat.syscall", "--runs", "1", "--sample-time", "1ms"][..]] {
            let out = kdelta(dir.path()).arg("--db").arg(db).args(args).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{db} {args:?}: {err}");
            assert_eq!(err.trim().lines().count(), 1, "{err}");
            assert!(err.contains("not supported") || err.contains("cannot open database"), "{err}");
        }
    }
    assert_eq!(listing(dir.path()), Vec::<String>::new(), "a path was made from a URL");
}

fn runs_json(cwd: &Path, db: &str) -> Vec<serde_json::Value> {
    let out = kdelta(cwd).args(["--db", db, "runs", "--limit", "1000", "--json"]).output().unwrap();
    assert_ok(&out);
    serde_json::from_slice::<Vec<serde_json::Value>>(&out.stdout).unwrap()
}

#[test]
fn two_writers_one_database_then_compare() {
    let Some(db) = Db::new("two_writers_one_database_then_compare") else { return };
    let dir = tempfile::tempdir().unwrap();
    let writers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|w| {
            let (url, cwd) = (db.url.clone(), dir.path().to_path_buf());
            std::thread::spawn(move || {
                for _ in 0..3 {
                    let out = kdelta(&cwd)
                        .args(["--db", &url, "run", "lat.syscall", "--runs", "1", "--sample-time", "1ms", "--label", w])
                        .output()
                        .unwrap();
                    assert_ok(&out);
                }
            })
        })
        .collect();
    writers.into_iter().for_each(|t| t.join().unwrap());
    let runs = runs_json(dir.path(), &db.url);
    assert_eq!(runs.len(), 6);
    for r in &runs {
        assert_eq!((r["status"].as_str(), r["results"].as_u64()), (Some("complete"), Some(1)), "{r}");
    }
    let filtered = kdelta(dir.path()).args(["--db", &db.url, "runs", "--label", "a", "--json"]).output().unwrap();
    assert_eq!(serde_json::from_slice::<Vec<serde_json::Value>>(&filtered.stdout).unwrap().len(), 3);
    let out = kdelta(dir.path()).args(["--db", &db.url, "compare", "a", "b"]).output().unwrap();
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("lat.syscall"));
    // Same machine: no warning about different machines.
    assert!(!String::from_utf8_lossy(&out.stderr).contains("different machines"));
}

#[test]
fn push_stores_each_run_once() {
    let Some(db) = Db::new("push_stores_each_run_once_") else { return };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("local.db");
    let file = file.to_str().unwrap();
    for i in 0..2 {
        let out = kdelta(dir.path())
            .args(["--db", file, "run", "lat.syscall", "--runs", "1", "--sample-time", "1ms"])
            .arg(format!("--meta=commit=c{i}"))
            .output()
            .unwrap();
        assert_ok(&out);
    }
    let push = || kdelta(dir.path()).args(["--db", file, "push", "--to", &db.url]).output().unwrap();
    let first = push();
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    assert!(
        String::from_utf8_lossy(&first.stderr).contains("pushed 2 run(s)"),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let second = push();
    assert!(
        String::from_utf8_lossy(&second.stderr).contains("pushed 0 run(s) (0 results)")
            && String::from_utf8_lossy(&second.stderr).contains("2 already there")
    );
    let shared = runs_json(dir.path(), &db.url);
    let local = runs_json(dir.path(), file);
    assert_eq!(shared.len(), 2);
    // The metadata goes with each run.
    let metas = |v: &[serde_json::Value]| v.iter().map(|r| r["meta"]["commit"].clone()).collect::<Vec<_>>();
    assert_eq!(metas(&shared), metas(&local));
    assert_eq!(metas(&shared), [serde_json::json!("c1"), serde_json::json!("c0")]);
    // Raw samples and all: the pushed run exports as the local one does.
    let export = |db: &str, id: &str| {
        let out = kdelta(dir.path()).args(["--db", db, "export", id, "--format", "json"]).output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (v["results"].clone(), v["run"]["host"].clone())
    };
    let oldest = |v: &[serde_json::Value]| v.last().unwrap()["id"].to_string();
    assert_eq!(export(file, &oldest(&local)), export(&db.url, &oldest(&shared)));
    // Pushing to a file is refused.
    let out = kdelta(dir.path()).args(["--db", file, "push", "--to", "other.db"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Every command's output and every message, stdout and stderr together.
fn all_output(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn a_password_is_never_stored_or_printed() {
    // A password holding `/`, `?` and an escaped `@`: the test server
    // trusts local connections, so it connects whatever the password.
    const SECRET: &str = "SeKr1t/x?y%40z";
    let dir = tempfile::tempdir().unwrap();
    let leaks = |what: &str, text: &str| {
        for part in ["SeKr1t", "x?y", "y%40z", "y@z"] {
            assert!(!text.contains(part), "{what} shows the password ({part}): {text}");
        }
    };
    // Refused and failing URLs: the messages never hold it.
    for db in [
        format!("postgresql://kd:{SECRET}@127.0.0.1:1/kdelta?connect_timeout=2"),
        format!("postgresql://kd@127.0.0.1:1/kdelta?password={SECRET}&connect_timeout=2"),
        "postgresql://kd:SeKr1t@x?y@z@127.0.0.1:1/kdelta?connect_timeout=2".to_string(),
        format!("mysql://kd:{SECRET}@127.0.0.1/kdelta"),
    ] {
        for args in [&["runs"][..], &["run", "lat.syscall", "--runs", "1", "--quick"][..]] {
            let out = kdelta(dir.path()).arg("--db").arg(&db).args(args).output().unwrap();
            assert_eq!(out.status.code(), Some(2), "{}", all_output(&out));
            leaks(&format!("{args:?} on a bad URL"), &all_output(&out));
        }
        let out = kdelta(dir.path()).args(["push", "--to", &db]).output().unwrap();
        leaks("push --to", &all_output(&out));
    }
    let Some(db) = Db::new("a_password_is_never_stored_or_printed") else { return };
    let (scheme, rest) = db.url.split_once("://").unwrap();
    let (user, rest) = rest.split_once('@').unwrap();
    let url = format!("{scheme}://{user}:{SECRET}@{rest}");
    for arg in [vec!["--db".to_string(), url.clone()], vec![format!("--db={url}")]] {
        let out =
            kdelta(dir.path()).args(&arg).args(["run", "lat.syscall", "--runs", "1", "--quick"]).output().unwrap();
        assert!(out.status.success(), "{}", all_output(&out));
        leaks("run", &all_output(&out));
    }
    let html = dir.path().join("r.html");
    for args in [
        vec!["runs"],
        vec!["runs", "--json"],
        vec!["show", "1"],
        vec!["show", "2", "--format", "json"],
        vec!["export", "1", "--format", "json"],
        vec!["export", "2", "--format", "csv"],
        vec!["report", "1", "2", "-o", html.to_str().unwrap()],
    ] {
        let out = kdelta(dir.path()).args(["--db", &url]).args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", all_output(&out));
        leaks(&format!("{args:?}"), &all_output(&out));
    }
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("postgresql://postgres:***@"), "the report shows the command, without the password");
    leaks("the HTML report", &page);
    // And the table itself keeps no password.
    let mut c = postgres::Client::connect(&db.url, postgres::NoTls).unwrap();
    let schema: String = c
        .query_one("SELECT table_schema::text FROM information_schema.tables WHERE table_name = 'runs'", &[])
        .unwrap()
        .get(0);
    for row in c.query(&format!("SELECT command FROM {schema}.runs"), &[]).unwrap() {
        let command: String = row.get(0);
        leaks("the stored command", &command);
    }
}

#[test]
fn an_unresponsive_server_is_given_up_within_the_connect_timeout() {
    // A server that accepts and never answers, for a bounded time.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let holder = std::thread::spawn(move || {
        let (mut held, t0) = (Vec::new(), std::time::Instant::now());
        while t0.elapsed() < std::time::Duration::from_secs(30) {
            match listener.accept() {
                Ok((c, _)) => held.push(c),
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
            }
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let db = format!("postgresql://kd@127.0.0.1:{port}/kdelta?connect_timeout=2");
    for args in [&["runs"][..], &["run", "lat.syscall", "--runs", "1", "--quick"][..]] {
        let t0 = std::time::Instant::now();
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("kdelta"))
            .current_dir(dir.path())
            .env_remove("KDELTA_DB")
            .env("TMPDIR", dir.path())
            .arg("--db")
            .arg(&db)
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if t0.elapsed() > std::time::Duration::from_secs(15) {
                child.kill().unwrap();
                child.wait().unwrap();
                panic!("{args:?}: kdelta still waits for an unresponsive server after 15 s");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let took = t0.elapsed();
        let err = String::from_utf8_lossy(&child.wait_with_output().unwrap().stderr).into_owned();
        assert_eq!(status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("no answer from the server within 2 s"), "{err}");
        assert!(took < std::time::Duration::from_secs(6), "{args:?} took {took:?} with connect_timeout=2");
    }
    drop(holder);
}

/// The relations outside the system schemas, and whether a schema kdelta exists.
fn relations(url: &str) -> (Vec<String>, bool) {
    let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let rels = c
        .query(
            "SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%' ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let schema: bool = c.query_one("SELECT to_regnamespace('kdelta') IS NOT NULL", &[]).unwrap().get(0);
    (rels, schema)
}

#[test]
fn another_applications_database_is_refused_untouched() {
    let Some(db) = Db::new("another_applications_database_is_refused_untouched") else { return };
    let dir = tempfile::tempdir().unwrap();
    postgres::Client::connect(&db.url, postgres::NoTls)
        .unwrap()
        .batch_execute("CREATE TABLE customers (id int)")
        .unwrap();
    let before = relations(&db.url);
    for args in [&["run", "lat.syscall", "--runs", "1", "--quick"][..], &["runs"][..]] {
        let out = kdelta(dir.path()).args(["--db", &db.url]).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert_eq!(relations(&db.url), before, "{args:?} changed another application's database");
    }
    let out =
        kdelta(dir.path()).args(["--db", &db.url, "run", "lat.syscall", "--runs", "1", "--quick"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("not a kdelta database: it holds other tables (public.customers)"));
    // Asked to, kdelta keeps its tables in a schema of their own.
    let out = kdelta(dir.path())
        .args(["--db", &db.url, "--init-schema", "run", "lat.syscall", "--runs", "1", "--quick"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", all_output(&out));
    let (rels, schema) = relations(&db.url);
    assert!(
        schema && rels.contains(&"public.customers".to_string()) && rels.contains(&"kdelta.runs".to_string()),
        "{rels:?}"
    );
    assert!(rels.iter().all(|r| r == "public.customers" || r.starts_with("kdelta.")), "{rels:?}");
    assert_eq!(runs_json(dir.path(), &db.url).len(), 1);
}

#[test]
fn a_role_without_rights_is_one_line() {
    let Some(db) = Db::new("a_role_without_rights_is_one_line") else { return };
    let dir = tempfile::tempdir().unwrap();
    let role = format!("kdelta_ro_{}", std::process::id());
    let mut admin = postgres::Client::connect(&db.url, postgres::NoTls).unwrap();
    admin.batch_execute(&format!("DROP ROLE IF EXISTS {role}; CREATE ROLE {role} LOGIN")).unwrap();
    struct DropRole(String, String);
    impl Drop for DropRole {
        fn drop(&mut self) {
            if let Ok(mut c) = postgres::Client::connect(&self.0, postgres::NoTls) {
                let _ = c.batch_execute(&format!("DROP OWNED BY {0}; DROP ROLE IF EXISTS {0}", self.1));
            }
        }
    }
    let _guard = DropRole(db.url.clone(), role.clone());
    let (scheme, rest) = db.url.split_once("://").unwrap();
    let as_role = format!("{scheme}://{role}@{}", rest.split_once('@').unwrap().1);
    let run = |url: &str| {
        kdelta(dir.path()).args(["--db", url, "run", "lat.syscall", "--runs", "1", "--quick"]).output().unwrap()
    };
    // An empty database the role may not create a schema in.
    let out = run(&as_role);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!((out.status.code(), err.trim().lines().count()), (Some(2), 1), "{err}");
    assert!(err.contains("permission denied"), "{err}");
    // A kdelta database the role may read but not write.
    assert!(run(&db.url).status.success());
    admin
        .batch_execute(&format!(
            "GRANT USAGE ON SCHEMA kdelta TO {role}; GRANT SELECT ON ALL TABLES IN SCHEMA kdelta TO {role}"
        ))
        .unwrap();
    let out = run(&as_role);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!((out.status.code(), err.trim().lines().count()), (Some(2), 1), "{err}");
    assert!(err.contains("may read") && err.contains("but not store runs"), "{err}");
    assert_eq!(runs_json(dir.path(), &as_role).len(), 1, "reading is allowed");
}

/// `history` reads a shared store as it reads a file: the step found at its
/// run, and an unknown host refused on one line.
#[test]
fn history_on_a_shared_store() {
    use kdelta::testing::stored::{store_run, StoredResult, StoredRun};
    let Some(db) = Db::new("history_on_a_shared_store") else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut ids = Vec::new();
    for i in 0..12 {
        let level = if i >= 6 { 110.0 } else { 100.0 };
        let samples: Vec<f64> = (0..8).map(|j| level + ((i * 3 + j * 5) % 7) as f64 * 0.1).collect();
        let started = format!("2024-05-{:02}T10:00:00Z", i + 1);
        let run = StoredRun { label: Some("nightly"), started: &started, hostname: "alpha", kernel: "6.1" };
        let r = [StoredResult { benchmark: "lat.syscall", params: &[], config: "up", samples: &samples }];
        ids.push(store_run(Path::new(&db.url), &run, &r).unwrap());
    }
    let out = kdelta(dir.path())
        .args(["--db", &db.url, "history", "lat", "--host", "alpha", "--format", "json"])
        .output()
        .unwrap();
    assert_ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &v["series"][0]["changes"];
    assert_eq!(c.as_array().unwrap().len(), 1, "{c}");
    assert_eq!(c[0]["first_after"]["id"], ids[6]);
    let out = kdelta(dir.path()).args(["--db", &db.url, "history", "lat", "--host", "gamma"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown host \"gamma\""));
}
