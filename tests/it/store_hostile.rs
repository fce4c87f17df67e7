//! The real binary against databases it must refuse or may only read: every
//! refusal is exit 2 and one line, and leaves the file byte-identical with no
//! `-wal`, `-shm` or `-journal` beside it; the reading commands work on a
//! database that cannot be written. Read-only is made with `chattr +i` (the
//! tests run as root, whom permission bits do not stop) and skipped, saying
//! so, where chattr is refused.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::Output;

/// Entries beside the database (the env's own `tmp` aside).
fn siblings(e: &Env) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(e.dir.path())
        .unwrap()
        .map(|x| x.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "tmp" && n != "results.db")
        .collect();
    v.sort();
    v
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `kdelta ARGS` exits 2 with one line saying `says`, the file unchanged.
fn refuses(e: &Env, args: &[&str], says: &str) {
    let before = std::fs::read(e.db()).unwrap();
    let out = e.cmd().args(args).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(says), "{args:?}: {err}");
    assert_eq!(std::fs::read(e.db()).unwrap(), before, "{args:?} changed the file");
    assert_eq!(siblings(e), Vec::<String>::new(), "{args:?} left files beside it");
}

const RUN: &[&str] = &["run", "test.sleep", "--runs", "1", "--sample-time", "1ms"];

fn sqlite(path: &Path, sql: &str) {
    rusqlite::Connection::open(path).unwrap().execute_batch(sql).unwrap();
}

/// A healthy database with one complete run.
fn stored(e: &Env) -> Vec<u8> {
    e.cmd().args(RUN).args(["--format", "json"]).assert().success();
    assert!(siblings(e).is_empty(), "a closed store leaves no -wal: {:?}", siblings(e));
    std::fs::read(e.db()).unwrap()
}

/// A kind of hostile file: its name, how to make it, what its refusal says.
type Case = (&'static str, Box<dyn Fn(&Env)>, &'static str);

#[test]
fn every_kind_of_hostile_file_is_refused_untouched() {
    let kdlt = 0x6b64_6c74;
    let cases: Vec<Case> = vec![
        (
            "random bytes",
            Box::new(|e| {
                std::fs::write(e.db(), (0..9000u32).map(|i| (i * 13 % 241) as u8).collect::<Vec<_>>()).unwrap()
            }),
            "not a kdelta database",
        ),
        (
            "a foreign table",
            Box::new(|e| sqlite(&e.db(), "CREATE TABLE mine (x); INSERT INTO mine VALUES (42);")),
            "table mine",
        ),
        ("a foreign view", Box::new(|e| sqlite(&e.db(), "CREATE VIEW only_view AS SELECT 1;")), "view only_view"),
        (
            "kdelta's id, no tables",
            Box::new(move |e| sqlite(&e.db(), &format!("PRAGMA application_id = {kdlt};"))),
            "damaged kdelta database",
        ),
        (
            "a newer schema",
            Box::new(move |e| sqlite(&e.db(), &format!("PRAGMA application_id = {kdlt}; PRAGMA user_version = 77;"))),
            "newer kdelta (schema 77",
        ),
        (
            "a WAL-mode foreign file",
            Box::new(|e| sqlite(&e.db(), "PRAGMA journal_mode = WAL; CREATE TABLE w (x);")),
            "table w",
        ),
        (
            "a truncated kdelta file",
            Box::new(|e| {
                let good = stored(e);
                std::fs::write(e.db(), &good[..good.len() / 2 / 4096 * 4096]).unwrap();
            }),
            "damaged kdelta database",
        ),
    ];
    for (what, make, says) in cases {
        let e = Env::new();
        make(&e);
        eprintln!("case: {what}");
        refuses(&e, &["runs"], says);
        refuses(&e, &["show", "1"], says);
        refuses(&e, RUN, says);
    }
    let e = Env::new();
    std::fs::write(e.db(), b"").unwrap();
    refuses(&e, &["runs"], "not a kdelta database (an empty file)");
}

/// `chattr +i` on `path` until dropped; `None` where chattr is refused.
struct Immutable(PathBuf);

impl Immutable {
    fn set(path: &Path) -> Option<Immutable> {
        let ok = std::process::Command::new("chattr")
            .arg("+i")
            .arg(path)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!(
                "SKIPPED: chattr +i {} refused (not root, or the filesystem lacks the attribute)",
                path.display()
            );
        }
        ok.then(|| Immutable(path.to_path_buf()))
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr").arg("-i").arg(&self.0).status();
    }
}

/// The reading commands work; storing a run is refused as read-only.
fn reads_but_refuses_writing(e: &Env, before: &[u8]) {
    for args in
        [&["runs"][..], &["runs", "--json"], &["show", "1"], &["export", "1", "--format", "csv"], &["compare", "1"]]
    {
        let out = e.cmd().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert!(!out.stdout.is_empty(), "{args:?}");
    }
    let out = e.cmd().args(["runs", "--json"]).output().unwrap();
    assert_eq!(json(&out.stdout)[0]["status"], "complete");
    refuses(e, RUN, "is read-only");
    assert_eq!(std::fs::read(e.db()).unwrap(), before);
}

#[test]
fn a_read_only_file_can_be_read_and_is_not_written() {
    let e = Env::new();
    let before = stored(&e);
    std::fs::set_permissions(e.db(), std::os::unix::fs::PermissionsExt::from_mode(0o444)).unwrap();
    e.cmd().args(["runs"]).assert().success();
    let Some(_guard) = Immutable::set(&e.db()) else { return };
    reads_but_refuses_writing(&e, &before);
}

#[test]
fn a_database_in_a_read_only_directory_can_be_read() {
    let e = Env::new();
    let before = stored(&e);
    let Some(_guard) = Immutable::set(e.dir.path()) else { return };
    reads_but_refuses_writing(&e, &before);
}

/// A small tmpfs mounted under a test's directory until dropped; `None`
/// (saying so) where mounting is not allowed.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: PathBuf, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(&at).unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "kdelta-test"])
            .arg(&at)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("SKIPPED: cannot mount a tmpfs on {} (not root?)", at.display());
        }
        ok.then_some(Tmpfs(at))
    }
    fn remount_read_only(&self) {
        assert!(std::process::Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&self.0)
            .status()
            .unwrap()
            .success());
    }
    /// `results.db` on it, holding one run made by `kdelta run`.
    fn with_a_run(&self, e: &Env) -> PathBuf {
        let db = self.0.join("results.db");
        e.cmd().env("KDELTA_DB", &db).args(RUN).assert().success();
        db
    }
    /// Fills it with a file `filler` until no byte more fits.
    fn fill(&self) {
        let mut filler = std::fs::File::create(self.0.join("filler")).unwrap();
        while std::io::Write::write_all(&mut filler, &[0u8; 4096]).is_ok() {}
    }
    fn entries(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|x| x.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// `kdelta run` storing in `db` on a full disk: exit 2 and one line saying
/// so; that line.
#[track_caller]
fn refused_for_no_space(e: &Env, db: &Path) -> String {
    let out = e.cmd().env("KDELTA_DB", db).args(RUN).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{}: {err}", db.display());
    assert!(err.contains("no space left") && err.lines().count() == 1, "{}: {err}", db.display());
    err
}

#[test]
fn a_database_on_a_read_only_filesystem_can_be_read() {
    let e = Env::new();
    let Some(fs) = Tmpfs::mount(e.dir.path().join("ro"), "4m") else { return };
    let db = fs.with_a_run(&e);
    let before = std::fs::read(&db).unwrap();
    fs.remount_read_only();
    for args in [&["runs"][..], &["show", "1"], &["export", "1", "--format", "json"]] {
        let out = e.cmd().env("KDELTA_DB", &db).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    }
    let out = e.cmd().env("KDELTA_DB", &db).args(RUN).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("is read-only") && stderr(&out).lines().count() == 1, "{}", stderr(&out));
    assert_eq!(std::fs::read(&db).unwrap(), before);
    assert_eq!(fs.entries(), ["results.db"]);
}

#[test]
fn a_full_disk_is_called_so() {
    let e = Env::new();
    let Some(fs) = Tmpfs::mount(e.dir.path().join("full"), "1m") else { return };
    let db = fs.with_a_run(&e);
    let before = std::fs::read(&db).unwrap();
    fs.fill();
    for path in [db.clone(), fs.0.join("new.db")] {
        refused_for_no_space(&e, &path);
    }
    assert_eq!(std::fs::read(&db).unwrap(), before);
    assert_eq!(fs.entries(), ["filler", "results.db"], "no -wal or -shm left beside it");
}

/// The disk fills while a writer's newest pages are only in its `-wal`: its
/// checkpoint writes the file's first page (with the new page count) and
/// no more, so the file is shorter than its header says. That database is
/// not damaged: every command reads every run through the `-wal`, a writer
/// is refused as on a full disk (naming the `-wal` to keep) while there is
/// no room, and once there is, the next command, even a reading one,
/// finishes the checkpoint and removes the `-wal` and `-shm`. Nothing is
/// moved aside or lost.
#[test]
fn a_checkpoint_cut_short_by_a_full_disk_loses_no_run() {
    let e = Env::new();
    let Some(fs) = Tmpfs::mount(e.dir.path().join("full"), "8m") else { return };
    let db = fs.with_a_run(&e);
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch(
        "PRAGMA wal_autocheckpoint = 0; \
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300) \
         INSERT INTO runs (label, started, status, kdelta_version, command, configs, host) \
         SELECT 'copy' || i, started, 'complete', kdelta_version, command, configs, host FROM runs, n;",
    )
    .unwrap();
    fs.fill();
    let _ = c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get::<_, i64>(0));
    drop(c);
    let head = std::fs::read(&db).unwrap();
    let pages = |h: &[u8]| u32::from_be_bytes(h[28..32].try_into().unwrap()) as usize;
    let page = u16::from_be_bytes([head[16], head[17]]) as usize;
    assert!(pages(&head) * page > head.len(), "the setup: a file shorter than its header's {} pages", pages(&head));
    let runs = |want: usize| {
        let out = e.cmd().env("KDELTA_DB", &db).args(["runs", "--json", "--limit", "1000"]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(json(&out.stdout).as_array().unwrap().len(), want);
    };
    runs(301);
    let err = refused_for_no_space(&e, &db);
    assert!(err.contains("results.db-wal (keep it"), "says where the newest runs wait: {err}");
    runs(301);
    assert_eq!(fs.entries(), ["filler", "results.db", "results.db-shm", "results.db-wal"]);
    std::fs::remove_file(fs.0.join("filler")).unwrap();
    // Room again: the next command, a reading one, folds the -wal in and
    // leaves nothing beside the file.
    runs(301);
    assert_eq!(fs.entries(), ["results.db"], "no -wal or -shm left once there is room");
    e.cmd().env("KDELTA_DB", &db).args(RUN).assert().success();
    runs(302);
    assert_eq!(fs.entries(), ["results.db"], "checkpointed, nothing moved aside");
    let head = std::fs::read(&db).unwrap();
    assert!(pages(&head) * page <= head.len());
}

#[test]
fn a_live_writer_s_uncheckpointed_runs_are_read() {
    let e = Env::new();
    stored(&e);
    // Another process holds the database open with a run only in its -wal.
    let c = rusqlite::Connection::open(e.db()).unwrap();
    c.execute_batch("PRAGMA wal_autocheckpoint = 0; INSERT INTO runs (label, started, status, kdelta_version, command, configs, host) SELECT 'walonly', started, 'complete', kdelta_version, command, configs, host FROM runs;").unwrap();
    assert!(siblings(&e).contains(&"results.db-wal".to_string()));
    let out = e.cmd().args(["runs", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json(&out.stdout)[0]["label"], "walonly");
    e.cmd().args(RUN).assert().success();
}

/// Root passes access(2) whatever the mode says; a database made 0444 (or
/// in a 0555 directory) is read-only on purpose and is not written, by root
/// either: the reading commands work, storing a run is refused untouched.
#[test]
fn a_file_without_write_bits_is_read_only_for_root_too() {
    use std::os::unix::fs::PermissionsExt;
    let e = Env::new();
    let before = stored(&e);
    std::fs::set_permissions(e.db(), std::fs::Permissions::from_mode(0o444)).unwrap();
    reads_but_refuses_writing(&e, &before);
    let out = e.cmd().args(RUN).output().unwrap();
    assert!(stderr(&out).contains("mode 0444"), "{}", stderr(&out));
    std::fs::set_permissions(e.db(), std::fs::Permissions::from_mode(0o644)).unwrap();
    // Its directory without write bits: SQLite would make its -wal there.
    std::fs::set_permissions(e.dir.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
    reads_but_refuses_writing(&e, &before);
    std::fs::set_permissions(e.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A new database that cannot be made for lack of space leaves nothing
/// behind: no empty file, no `-wal`, no `-shm`.
#[test]
fn a_new_database_on_a_full_disk_leaves_nothing_beside_it() {
    let e = Env::new();
    let Some(fs) = Tmpfs::mount(e.dir.path().join("full"), "1m") else { return };
    fs.fill();
    for name in ["new.db", "sub/dir/new.db"] {
        refused_for_no_space(&e, &fs.0.join(name));
        let mut left: Vec<String> = walk(&fs.0).into_iter().filter(|p| !p.starts_with("sub")).collect();
        left.sort();
        assert_eq!(left, ["filler"], "{name}");
        if let Ok(d) = std::fs::read_dir(fs.0.join("sub/dir")) {
            assert_eq!(d.count(), 0, "{name}: files left in sub/dir");
        }
    }
}

/// Every file below `dir`, as paths relative to it.
fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&e.path()).into_iter().map(|p| format!("{name}/{p}")));
        } else {
            out.push(name);
        }
    }
    out
}

/// A results row damaged in the file (a column that does not parse) is bad
/// input in every command that reads it: one line naming the run, the
/// result and the column, exit 2, the file unchanged. (`history` leaves
/// such a row out with a warning and goes on: `hardening4.rs`.)
#[test]
fn a_damaged_results_row_is_one_line_exit_2_everywhere() {
    for (column, value) in [("samples", "[1,2"), ("params", "{\"a\":"), ("samples_meta", "7")] {
        let e = Env::new();
        stored(&e);
        let html = e.dir.path().join("r.html");
        let svg = e.dir.path().join("c.svg");
        sqlite(&e.db(), &format!("UPDATE results SET {column} = '{value}'"));
        let before = std::fs::read(e.db()).unwrap();
        for args in [
            &["show", "1"][..],
            &["compare", "1", "1"],
            &["export", "1", "--format", "csv"],
            &["report", "1", "-o", html.to_str().unwrap()],
            &["chart", "1", "-o", svg.to_str().unwrap()],
        ] {
            let out = e.cmd().args(args).output().unwrap();
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{column}: {args:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{column}: {args:?}: {err}");
            assert!(
                err.contains(&format!("result test.sleep of run 1 is damaged in the store: its {column} column")),
                "{err}"
            );
        }
        assert_eq!(std::fs::read(e.db()).unwrap(), before, "{column}: the file was changed");
    }
}
