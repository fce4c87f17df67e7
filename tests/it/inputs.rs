//! Inputs refused at the door (exit 2, one line, nothing run or stored), the
//! `--config` list syntax, and configurations bounded by a restricted cpuset.

use crate::common;
use crate::common::{fake_sysfs, Env, TINY_SLEEP};
use std::time::{Duration, Instant};

/// Run kdelta with `args`; it must exit 2 within seconds, with one line on
/// stderr and no panic: that line (`case` names the case in a failure).
#[track_caller]
fn refused_in_one_line(e: &Env, args: &[&str], case: &str) -> String {
    let t = Instant::now();
    let out = e.cmd().args(args).timeout(Duration::from_secs(20)).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{case}: {err}");
    assert!(t.elapsed() < Duration::from_secs(10), "{case} took {:?}", t.elapsed());
    assert_eq!(err.trim_end().lines().count(), 1, "{case}: {err}");
    assert!(!err.contains("panicked"), "{case}: {err}");
    err
}

/// Run kdelta with `args`; it must be refused in one line
/// (`refused_in_one_line`) that contains `want`, and store nothing.
#[track_caller]
fn refused(e: &Env, args: &[&str], want: &str) {
    let err = refused_in_one_line(e, args, &format!("{args:?}"));
    assert!(err.contains(want), "{args:?}: {err}");
    assert!(!e.db().exists(), "{args:?} created the database");
}

/// The results database a bad-input case meets.
#[derive(Clone, Copy, Debug)]
enum Db {
    /// None: the refusal must not create one.
    Absent,
    /// 10,000 bytes of junk where the database should be.
    Corrupt,
    /// Another program's SQLite database (one table `mine`).
    Foreign,
}

/// Every kind of bad input in one table, refused the same way: exit 2
/// within seconds, one line on stderr naming the value, no panic, and the
/// database as it was (none created; a corrupt or foreign one untouched).
#[test]
fn bad_input_is_refused_in_one_line_with_exit_2() {
    let long_label = "x".repeat(300);
    let cases: &[(&[&str], Db, &[&str])] = &[
        // Unknown names.
        (&["run", "lat.nonesuch"], Db::Absent, &["lat.nonesuch"]),
        (&["run", "lat.sycall"], Db::Absent, &["\"lat.sycall\" (did you mean lat.syscall?)"]),
        (&["run", "lat.syscall", "--config", "warp"], Db::Absent, &["warp"]),
        (&["run", "lat.syscall", "--config", "up+sched=warp"], Db::Absent, &["warp"]),
        (&["run", "lat.syscall", "--param", "bogus=1"], Db::Absent, &["bogus"]),
        // Values out of range or malformed.
        (&["run", "lat.select.file", "--param", "fds=0"], Db::Absent, &["fds"]),
        (&["run", "lat.syscall", "--sample-time", "forever"], Db::Absent, &["forever"]),
        // hyperfine's --time-unit and --sort (cmd): their names, or refused naming the allowed ones.
        (&["run", "cmd", "--cmd", "true", "--time-unit", "minute"], Db::Absent, &["\"minute\"", "microsecond (us)"]),
        (&["run", "cmd", "--cmd", "true", "-u", "ns"], Db::Absent, &["--time-unit \"ns\"", "second (s)"]),
        (&["run", "cmd", "--cmd", "true", "--sort", "median"], Db::Absent, &["--sort \"median\"", "mean-time"]),
        // hyperfine's own options: refused naming kdelta's spelling.
        (&["run", "cmd", "--cmd", "true", "-N"], Db::Absent, &["-N is hyperfine's", "--shell none"]),
        (&["run", "cmd", "--cmd", "true", "--export-json", "x.json"], Db::Absent, &["--format json"]),
        (&["run", "cmd", "--cmd", "sleep {n}", "-P", "n", "1", "3"], Db::Absent, &["--param NAME=MIN..MAX"]),
        (&["run", "cmd", "--cmd", "true", "--min-runs=3"], Db::Absent, &["--min-runs is hyperfine's", "--runs auto"]),
        (&["run", "cmd", "--cmd", "true", "--show-output"], Db::Absent, &["--output inherit"]),
        // Labels: printable and bounded.
        (&["run", "test.sleep", "--label", "a\u{7}b"], Db::Absent, &["--label", "control character"]),
        (&["run", "test.sleep", "--label", &long_label], Db::Absent, &["--label", "at most 256 bytes"]),
        // CPU lists: malformed, or CPUs this machine does not have online.
        (&["run", "lat.syscall", "--config", "cpus=0-4095"], Db::Absent, &["not online"]),
        (&["run", "test.sleep", "--config", "cpus=9-"], Db::Absent, &["invalid CPU list \"9-\""]),
        // A corrupt or foreign database: refused and left as it was.
        (&["run", "test.sleep", "--runs", "1"], Db::Corrupt, &["not a kdelta database", "untouched"]),
        (&["runs"], Db::Corrupt, &["not a kdelta database", "untouched"]),
        (&["compare"], Db::Corrupt, &["not a kdelta database", "untouched"]),
        (&["run", "test.sleep", "--runs", "1"], Db::Foreign, &["not kdelta's", "mine"]),
    ];
    for &(args, db, wants) in cases {
        let e = Env::new();
        match db {
            Db::Absent => {}
            Db::Corrupt => {
                std::fs::write(e.db(), (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect::<Vec<_>>()).unwrap()
            }
            Db::Foreign => rusqlite::Connection::open(e.db())
                .unwrap()
                .execute_batch("CREATE TABLE mine (x INTEGER); INSERT INTO mine VALUES (42);")
                .unwrap(),
        }
        let before = std::fs::read(e.db()).ok();
        let err = refused_in_one_line(&e, args, &format!("{args:?} ({db:?})"));
        for want in wants {
            assert!(err.contains(want), "{args:?} ({db:?}): {want:?} missing: {err}");
        }
        assert_eq!(std::fs::read(e.db()).ok(), before, "{args:?} ({db:?}): the database changed");
    }
}

#[test]
fn oversized_buffers_are_refused_before_anything_runs() {
    let e = Env::new();
    refused(&e, &["run", "bw.mem.rd", "--param", "size=999T"], "allowed at most");
    refused(&e, &["run", "mem.memset", "--param", "size=16G", "--param", "impl=libc"], "MemTotal");
    // Past the parameter's own range: bad input, not a point this machine lacks.
    refused(&e, &["run", "mem.memcpy", "--param", "size=20G"], "size=21474836480 is not allowed for mem.memcpy");
    // A sweep is bounded before it is built: no billion points in memory.
    let mut sweep = vec!["run", "cmd", "--cmd", "echo {a}{b}{c}"];
    for p in ["a=1..1000", "b=1..1000", "c=1..1000"] {
        sweep.extend(["--param", p]);
    }
    refused(&e, &sweep, "has 1000000000 points");
    // `kdelta runs` has nothing to list.
    let out = e.cmd().args(["runs"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).trim().is_empty(), "{out:?}");
}

#[test]
fn zero_durations_and_conflicting_modifiers_are_refused() {
    let e = Env::new();
    refused(&e, &["run", "lat.syscall", "--timeout", "0s"], "--timeout 0s");
    refused(&e, &["run", "dbench.throughput", "--param", "time=0s"], "time=0s");
    refused(
        &e,
        &["run", "lat.syscall", "--config", "sched=fifo+sched=rr"],
        "conflicting modifiers sched=fifo and sched=rr",
    );
    refused(&e, &["run", "lat.syscall", "--config", "up+env=A=1+env=A=2"], "conflicting modifiers");
}

#[test]
fn loadfiles_must_be_bounded_regular_files() {
    let e = Env::new();
    refused(&e, &["run", "dbench.throughput", "--param", "loadfile=/dev/zero"], "a device");
    let fifo = e.dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let arg = format!("loadfile={}", fifo.display());
    refused(&e, &["run", "dbench.throughput", "--param", &arg], "a FIFO");
    let big = e.dir.path().join("big.txt");
    std::fs::File::create(&big).unwrap().set_len((64 << 20) + 1).unwrap();
    let arg = format!("loadfile={}", big.display());
    refused(&e, &["run", "dbench.throughput", "--param", &arg], "at most 64 MiB");
}

#[test]
fn cpu_lists_inside_a_config_list() {
    let e = Env::new();
    let out = e.cmd().args(TINY_SLEEP).args(["--config", "cpus=0,1", "--format", "json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let j = common::json(&out.stdout);
    assert!(j.to_string().contains("cpus=0-1") || j.to_string().contains("cpus=0,1"), "{j}");
    // A list where a CPU list sits between other configurations.
    let e = Env::new();
    let out = e.cmd().args(TINY_SLEEP).args(["--config", "up,cpus=0,1,all", "--format", "csv"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("up") && text.contains("cpus=") && text.contains("all"), "{text}");
}

#[test]
fn a_non_utf8_db_path_does_not_panic() {
    use std::os::unix::ffi::OsStrExt;
    let e = Env::new();
    let mut db = e.dir.path().as_os_str().to_owned();
    db.push(std::ffi::OsStr::from_bytes(b"/r\xffs.db"));
    let out = e
        .cmd()
        .arg("--db")
        .arg(&db)
        .args(["run", "test.sleep", "--runs", "1", "--sample-time", "1ms", "--warmup", "0s"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0) | Some(2)), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let out = e.cmd().arg("--db").arg(&db).args(["runs"]).output().unwrap();
    assert!(matches!(out.status.code(), Some(0) | Some(2)), "{out:?}");
}

#[test]
fn configurations_stay_within_a_restricted_cpuset() {
    let e = Env::new();
    let root = e.dir.path().join("root");
    fake_sysfs(&root, &[&[0, 1], &[2, 3], &[4, 5]]);
    let cg = root.join("sys/fs/cgroup");
    std::fs::create_dir_all(&cg).unwrap();
    std::fs::write(cg.join("cpuset.cpus.effective"), "2-5\n").unwrap();
    let out = e.cmd().env("KDELTA_SYSFS_ROOT", &root).args(["topo"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("usable      CPUs 2-5 only, by cgroup v2 cpuset 2-5"), "{text}");
    let line = |name: &str| {
        text.lines().find(|l| l.trim_start().starts_with(name)).unwrap_or_else(|| panic!("{name}: {text}")).to_string()
    };
    assert!(line("all ").contains("2-5"), "{text}");
    assert!(line("up ").contains('2'), "{text}");
    assert!(line("noht ").contains("2,4"), "{text}");
    assert!(line("ht1 ").contains("2-3"), "{text}");
    let out = e.cmd().env("KDELTA_SYSFS_ROOT", &root).args(["topo", "--json"]).output().unwrap();
    let j = common::json(&out.stdout);
    assert_eq!(j["topology"]["restriction"]["cpus"], "2-5", "{j}");
    let out =
        e.cmd().env("KDELTA_SYSFS_ROOT", &root).args(["run", "test.sleep", "--config", "cpus=0"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("kdelta may use CPUs 2-5"), "{err}");
}

/// Finding 7: a loadfile line of millions of tokens cost gigabytes before it
/// was refused; now the tokens stop at 16, with one line naming the bound.
#[test]
fn a_loadfile_line_of_many_tokens_is_refused_at_the_token_bound() {
    let e = Env::new();
    let lf = e.dir.path().join("tokens.txt");
    // 4 MB, two million tokens: enough to tell, nowhere near gigabytes.
    std::fs::write(&lf, format!("NTCreateX {}\n", "a ".repeat(2_000_000))).unwrap();
    let arg = format!("loadfile={}", lf.display());
    refused(
        &e,
        &["run", "dbench.throughput", "--param", &arg, "--quick", "--runs", "1"],
        "line 1: more than 16 tokens",
    );
}

/// Finding 7: `--label` of 100 KB was stored; labels (and the report's
/// title) are bounded and printable, refused with one line.
#[test]
fn free_text_options_are_bounded() {
    let e = Env::new();
    let long = "x".repeat(100_000);
    refused(&e, &["run", "test.sleep", "--quick", "--runs", "1", "--label", &long], "at most 256 bytes");
    refused(&e, &["run", "test.sleep", "--quick", "--runs", "1", "--label", "a\nb"], "control character");
    refused(&e, &["study", "ht-2003", "--quick", "--label", &long], "at most 256 bytes");
    // 256 bytes is allowed.
    let ok = "y".repeat(256);
    let out = e
        .cmd()
        .args(["run", "test.sleep", "--quick", "--runs", "1", "--sample-time", "1ms", "--label", &ok])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let page = e.dir.path().join("r.html");
    let out = e.cmd().args(["report", "1", "--title"]).arg("t".repeat(5000)).arg("-o").arg(&page).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--title") && err.contains("at most 1024 bytes") && err.trim_end().lines().count() == 1,
        "{err}"
    );
    assert!(!page.exists());
}

/// Finding 7: `loadfile generate -o FIFO` hung for ever; every path opened
/// for writing (`report -o`, `chart -o`, `loadfile generate -o`) refuses a
/// FIFO or a device with one line, exit 2, without opening it.
#[test]
fn outputs_refuse_a_fifo_or_a_device() {
    let e = Env::new();
    let fifo = e.dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let link = e.dir.path().join("link.svg");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    let f = fifo.to_str().unwrap();
    refused(&e, &["loadfile", "generate", "--ops", "100", "-o", f], "a FIFO");
    refused(&e, &["loadfile", "generate", "--ops", "100", "-o", "/dev/null"], "a device");
    // Two configurations: a run that has a chart to draw.
    let out = e
        .cmd()
        .args(["run", "test.sleep", "--config", "up,noht", "--quick", "--runs", "1", "--sample-time", "1ms"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    for args in [
        vec!["report", "1", "-o", f],
        vec!["chart", "1", "-o", f],
        vec!["chart", "1", "-o", link.to_str().unwrap()],
        vec!["report", "1", "-o", "/dev/null"],
    ] {
        let err = refused_in_one_line(&e, &args, &format!("{args:?}"));
        assert!(err.contains("a FIFO") || err.contains("a device"), "{args:?}: {err}");
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO is left as it was");
}

/// Values the command line's own parsers refuse: before anything runs, on
/// one line that names the flag, the value and what is allowed.
#[test]
fn values_are_refused_at_the_door() {
    let e = Env::new();
    let pct = "is out of range: allowed 0 .. 1000 (percent)";
    refused(&e, &["run", "lat.syscall", "--threshold", "5000"], &format!("--threshold 5000 {pct}"));
    refused(&e, &["compare", "--threshold", "1000"], &format!("--threshold 1000 {pct}"));
    refused(&e, &["compare", "--by", "host", "--threshold", "NaN"], &format!("--threshold NaN {pct}"));
    refused(
        &e,
        &["run", "lat.syscall", "--ci-target", "0"],
        "--ci-target 0 is out of range: allowed above 0 up to 100",
    );
    refused(
        &e,
        &["run", "lat.syscall", "--sample-time", "1us"],
        "--sample-time 1us is out of range: allowed 100us .. 60s",
    );
    refused(&e, &["run", "lat.syscall", "--warmup", "2m"], "--warmup 2m is out of range: allowed 0 .. 60s");
    refused(&e, &["run", "lat.syscall", "--warmup", "soon"], "--warmup: bad duration \"soon\"");
    refused(&e, &["run", "lat.syscall", "--param", "size"], "malformed --param \"size\": expected NAME=VALUE");
    refused(&e, &["run", "lat.syscall", "-p", "a=1", "-p", "a=2"], "--param a given twice");
    refused(&e, &["serve", "chat", "--idle-timeout", "0s"], "the timeouts must be above zero");
    refused(&e, &["serve", "chat", "--max-conns", "0"], "--max-conns, --max-runs and the timeouts must be above zero");
    refused(&e, &["serve", "chat", "--write-timeout", "x"], "--write-timeout: bad duration \"x\"");
    refused(&e, &["push", "--to", "elsewhere.db"], "--to \"elsewhere.db\" is not a shared store");
    refused(
        &e,
        &["report", "1", "-o", "r.html", "--title", "a\u{7}b"],
        "--title \"a\\u{7}b\" holds the control character",
    );
    refused(&e, &["simulate", "--store", "--label", "a\nb"], "control character");
}
