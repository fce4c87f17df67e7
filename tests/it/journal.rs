//! The kernel-settings journal as an attacker or an unlucky user leaves it,
//! on fake trees (`KDELTA_SYSFS_ROOT`, `KDELTA_JOURNAL` in a temporary
//! directory): `kdelta restore` writes only kernel files below the root's
//! `/sys` and `/proc/sys` and undoes only kdelta's own mount, of a journal
//! only its owner could have written; every command looks at the journal
//! without hanging or growing; a refused journal is kept, one line, exit 2,
//! and `restore --discard` clears it. No real system file is touched.

use crate::common::{assert_ok, fake_knobs, fake_sysfs, knob_value, Env, TINY_SLEEP};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

const THP: &str = "sys/kernel/mm/transparent_hugepage/enabled";
const PASSWD: &str = "root:x:0:0:root:/root:/bin/sh\n";

struct Fake {
    e: Env,
    root: PathBuf,
}

impl Fake {
    /// A fake tree with every knob and a fake `etc/passwd` beside its `sys`.
    fn new() -> Fake {
        let e = Env::new();
        let root = e.dir.path().join("sysfs");
        fake_sysfs(&root, &[&[0], &[1]]);
        fake_knobs(&root);
        std::fs::create_dir_all(root.join("etc")).unwrap();
        std::fs::write(root.join("etc/passwd"), PASSWD).unwrap();
        Fake { e, root }
    }
    fn journal(&self) -> PathBuf {
        self.root.join("run/kdelta/knobs.journal")
    }
    /// kdelta on this tree, bounded in time and address space whatever the
    /// journal is (a FIFO or `/dev/zero` made the old reader hang or grow).
    fn cmd(&self) -> assert_cmd::Command {
        let mut s = std::process::Command::new(assert_cmd::cargo::cargo_bin("kdelta"));
        use std::os::unix::process::CommandExt;
        // SAFETY: only setrlimit(2) between fork and exec.
        unsafe {
            s.pre_exec(|| {
                let gib = 2 << 30;
                nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_AS, gib, gib)
                    .map_err(std::io::Error::from)
            });
        }
        let mut c = assert_cmd::Command::from_std(s);
        c.env("KDELTA_DB", self.e.db())
            .env("TMPDIR", self.e.tmp())
            .env("KDELTA_TEST_BENCHES", "1")
            .env("NO_COLOR", "1")
            .env("KDELTA_SYSFS_ROOT", &self.root)
            .env_remove("KDELTA_JOURNAL")
            .timeout(Duration::from_secs(20));
        c
    }
    /// A journal at the default place, made as kdelta makes one (directory
    /// 0700, file 0600) with a dead owner of this format, then `lines`.
    fn plant(&self, lines: &[serde_json::Value]) {
        plant(&self.journal(), lines);
    }
    fn passwd(&self) -> String {
        std::fs::read_to_string(self.root.join("etc/passwd")).unwrap()
    }
}

fn plant(jp: &Path, lines: &[serde_json::Value]) {
    let mut text = String::from("{\"kind\":\"owner\",\"version\":2,\"pid\":2147483000,\"start\":1}\n");
    for l in lines {
        text.push_str(&format!("{l}\n"));
    }
    plant_bytes(jp, text.as_bytes());
}

fn plant_bytes(jp: &Path, bytes: &[u8]) {
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(jp.parent().unwrap()).unwrap();
    std::fs::write(jp, bytes).unwrap();
    std::fs::set_permissions(jp, std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn wrote(p: &Path, original: &str) -> serde_json::Value {
    serde_json::json!({"kind": "wrote", "path": p, "original": original})
}

/// `kdelta restore` refuses: exit 2, one line saying `says`, nothing
/// written, the journal at `jp` kept; then `--discard` clears it.
fn refused_then_discarded(f: &Fake, jp: &Path, says: &str) {
    let before = (f.passwd(), knob_value(&f.root, THP));
    let out = f.cmd().arg("restore").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(says) && err.contains("left in place"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert_eq!((f.passwd(), knob_value(&f.root, THP)), before, "nothing written");
    assert!(jp.symlink_metadata().is_ok(), "kept");
    let out = f.cmd().args(["restore", "--discard"]).output().unwrap();
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("removed without restoring anything"));
    assert!(jp.symlink_metadata().is_err(), "discarded");
    assert_eq!((f.passwd(), knob_value(&f.root, THP)), before);
}

#[test]
fn restore_writes_no_file_outside_sys() {
    let f = Fake::new();
    // The file the journal names is the fake tree's etc/passwd; a real THP
    // entry first, so a journal is refused whole.
    std::fs::write(f.root.join(THP), "always madvise [never]\n").unwrap();
    f.plant(&[wrote(&f.root.join(THP), "madvise"), wrote(&f.root.join("etc/passwd"), "pwned")]);
    refused_then_discarded(&f, &f.journal(), "sysfs path \"/etc/passwd\" not allowed");
    // Through $KDELTA_JOURNAL alike.
    let jp = f.e.dir.path().join("elsewhere/j");
    plant(&jp, &[wrote(&f.root.join("etc/passwd"), "pwned")]);
    let out = f.cmd().env("KDELTA_JOURNAL", &jp).arg("restore").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(f.passwd(), PASSWD);
    assert!(jp.exists());
}

#[test]
fn restore_refuses_dot_dot() {
    let f = Fake::new();
    f.plant(&[wrote(&f.root.join("sys/../etc/passwd"), "pwned")]);
    refused_then_discarded(&f, &f.journal(), "not an absolute path without . or ..");
}

#[test]
fn restore_refuses_a_link_out_of_sys() {
    let f = Fake::new();
    let link = f.root.join("sys/kernel/mm/transparent_hugepage/escape");
    std::os::unix::fs::symlink("../../../../etc/passwd", &link).unwrap();
    f.plant(&[wrote(&link, "pwned")]);
    refused_then_discarded(&f, &f.journal(), "outside /sys and /proc/sys");
}

#[test]
fn restore_unmounts_only_kdeltas_debugfs() {
    let f = Fake::new();
    // The old reader unmounted /sys/kernel/debug whatever a mounted line named.
    f.plant(&[serde_json::json!({"kind": "mounted", "path": f.root.join("mnt")})]);
    refused_then_discarded(&f, &f.journal(), "kdelta mounts only debugfs");
}

/// Every command, with the journal's path holding something unusable, runs
/// at once with one warning line.
fn warns_only(f: &Fake, env_journal: Option<&Path>) {
    for args in [&["list"][..], &["topo"][..]] {
        let mut c = f.cmd();
        if let Some(j) = env_journal {
            c.env("KDELTA_JOURNAL", j);
        }
        let t = std::time::Instant::now();
        let out = c.args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {err}");
        assert!(t.elapsed() < Duration::from_secs(15), "{args:?}");
        let warn: Vec<&str> = err.lines().filter(|l| l.contains("journal")).collect();
        assert_eq!(warn.len(), 1, "{err}");
        assert!(warn[0].contains("unusable"), "{err}");
    }
}

#[test]
fn a_journal_linked_to_dev_zero_is_warned_about_and_refused() {
    let f = Fake::new();
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(f.journal().parent().unwrap()).unwrap();
    std::os::unix::fs::symlink("/dev/zero", f.journal()).unwrap();
    warns_only(&f, None);
    refused_then_discarded(&f, &f.journal(), "a symbolic link");
    assert!(Path::new("/dev/zero").exists());
    // $KDELTA_JOURNAL naming the device itself: warned about, never removed.
    warns_only(&f, Some(Path::new("/dev/zero")));
    let out = f.cmd().env("KDELTA_JOURNAL", "/dev/zero").args(["restore", "--discard"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(Path::new("/dev/zero").exists());
}

#[test]
fn a_fifo_journal_never_hangs_a_command() {
    let f = Fake::new();
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(f.journal().parent().unwrap()).unwrap();
    nix::unistd::mkfifo(&f.journal(), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    warns_only(&f, None);
    refused_then_discarded(&f, &f.journal(), "a FIFO");
}

#[test]
fn a_garbage_or_foreign_journal_is_refused_and_can_be_discarded() {
    let f = Fake::new();
    let garbage: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
    plant_bytes(&f.journal(), &garbage);
    warns_only(&f, None);
    refused_then_discarded(&f, &f.journal(), "unusable");
    // A journal of another format (the unversioned one) is not replayed.
    std::fs::write(f.root.join(THP), "always madvise [never]\n").unwrap();
    let old =
        format!("{{\"kind\":\"owner\",\"pid\":2147483000,\"start\":1}}\n{}\n", wrote(&f.root.join(THP), "madvise"));
    plant_bytes(&f.journal(), old.as_bytes());
    refused_then_discarded(&f, &f.journal(), "owner line");
}

#[test]
fn a_journal_others_could_write_is_refused() {
    let f = Fake::new();
    std::fs::write(f.root.join(THP), "always madvise [never]\n").unwrap();
    let jp = f.journal();
    let dir = jp.parent().unwrap().to_path_buf();
    let mode = |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    f.plant(&[wrote(&f.root.join(THP), "madvise")]);
    mode(&jp, 0o666);
    refused_then_discarded(&f, &jp, "its mode is 666, not 600");
    f.plant(&[wrote(&f.root.join(THP), "madvise")]);
    mode(&dir, 0o777);
    refused_then_discarded(&f, &jp, "writable by group or others");
    // Discarded with its journal: kdelta's own directory, left empty.
    assert!(!dir.exists());
    if nix::unistd::geteuid().is_root() {
        f.plant(&[wrote(&f.root.join(THP), "madvise")]);
        nix::unistd::chown(&jp, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
        refused_then_discarded(&f, &jp, "belongs to uid 65534");
    }
    assert_eq!(knob_value(&f.root, THP), "never");
    // Its own journal, once right, is replayed.
    f.plant(&[wrote(&f.root.join(THP), "madvise")]);
    let out = f.cmd().arg("restore").output().unwrap();
    assert_ok(&out);
    assert_eq!(knob_value(&f.root, THP), "madvise");
    assert!(!jp.exists());
}

#[test]
fn sysfs_and_sysctl_naming_one_file_conflict() {
    let f = Fake::new();
    let before = (knob_value(&f.root, THP), knob_value(&f.root, "proc/sys/kernel/sched_autogroup_enabled"));
    for config in [
        "up+sysctl=kernel.sched_autogroup_enabled=0+sysfs=/proc/sys/kernel/sched_autogroup_enabled=1",
        "up+thp=never+sysfs=/sys/kernel/mm/transparent_hugepage/enabled=always",
    ] {
        let out = f.cmd().args(TINY_SLEEP).args(["--config", config]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{config}: {err}");
        assert!(err.contains("conflicting modifiers") && err.contains("give each kernel file once"), "{config}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{config}: {err}");
    }
    assert_eq!((knob_value(&f.root, THP), knob_value(&f.root, "proc/sys/kernel/sched_autogroup_enabled")), before);
    assert!(!f.journal().exists());
}

/// A run that switches no kernel setting needs no journal and no privilege:
/// a user who may not look into root's journal directory (root's `doctor
/// --apply` and a killed run's cgroups journalled there) runs, exit 0, and
/// no command of theirs warns about a journal that is not theirs.
#[test]
fn another_users_run_that_switches_nothing_ignores_roots_journals() {
    if !nix::unistd::geteuid().is_root() {
        return;
    }
    let f = Fake::new();
    let tuned = "{\"kind\":\"owner\",\"version\":2,\"pid\":2147483000,\"start\":1,\"tuned\":true}\n";
    plant_bytes(&f.journal(), format!("{tuned}{}\n", wrote(&f.root.join(THP), "madvise")).as_bytes());
    plant(&f.journal().with_file_name("cgroups.journal"), &[]);
    let mode = |p: &Path, m: u32| std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    mode(f.e.dir.path(), 0o755);
    let home = f.e.dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let nobody = Some(nix::unistd::Uid::from_raw(65534));
    let nogroup = Some(nix::unistd::Gid::from_raw(65534));
    for d in [&home, &f.e.tmp()] {
        nix::unistd::chown(d.as_path(), nobody, nogroup).unwrap();
    }
    let as_nobody = |args: &[&str]| {
        use std::os::unix::process::CommandExt;
        let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("kdelta"));
        c.uid(65534)
            .gid(65534)
            .env("KDELTA_DB", home.join("results.db"))
            .env("TMPDIR", f.e.tmp())
            .env("KDELTA_TEST_BENCHES", "1")
            .env("NO_COLOR", "1")
            .env("KDELTA_SYSFS_ROOT", &f.root)
            .env_remove("KDELTA_JOURNAL")
            .args(args);
        let out = assert_cmd::Command::from_std(c).timeout(Duration::from_secs(60)).output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, err) = as_nobody(&[&TINY_SLEEP[..], &["--config", "up", "--format", "json"]].concat());
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("journal") && !err.contains("warning"), "{err}");
    let (code, err) = as_nobody(&["runs"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("journal") && !err.contains("warning"), "{err}");
    // Root's journals are untouched, and root is still told about them.
    assert!(std::fs::read_to_string(f.journal()).unwrap().starts_with(tuned));
    let out = f.cmd().arg("list").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("tuned by `kdelta doctor --apply`"), "{err}");
}

/// A closed stderr never makes a command panic: the warning every command
/// prints (a journal's) is dropped, and the command does its work (`kdelta
/// study ... 2>&1 | head` once panicked with exit 101, its run incomplete).
#[test]
fn a_closed_stderr_is_not_a_panic() {
    let f = Fake::new();
    plant_bytes(&f.journal(), b"garbage\n");
    let (r, w) = nix::unistd::pipe().unwrap();
    drop(r);
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("kdelta"))
        .env("KDELTA_DB", f.e.db())
        .env("TMPDIR", f.e.tmp())
        .env("KDELTA_TEST_BENCHES", "1")
        .env("KDELTA_SYSFS_ROOT", &f.root)
        .env_remove("KDELTA_JOURNAL")
        .arg("list")
        .stderr(std::process::Stdio::from(w))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("lat.syscall"));
}
