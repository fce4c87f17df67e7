use super::*;

/// A kernel file below the fake root `d`.
fn file(d: &Path, name: &str, text: &str) -> PathBuf {
    let p = d.join("sys/kernel/mm").join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    p
}

/// A journal at `jp` holding `text`, made as kdelta makes one: its
/// directory 0700, the file 0600.
fn plant(jp: &Path, text: &[u8]) {
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(jp.parent().unwrap()).unwrap();
    std::fs::write(jp, text).unwrap();
    std::fs::set_permissions(jp, std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn owner_line(pid: i32, start: u64) -> String {
    format!("{{\"kind\":\"owner\",\"version\":{FORMAT},\"pid\":{pid},\"start\":{start}}}\n")
}

const DEAD: (i32, u64) = (2147483000, 1);

/// The journal a kdelta killed after switching `a` from `madvise` left: a
/// dead owner and one entry.
fn killed_journal(a: &Path) -> String {
    let wrote = serde_json::json!({"kind": "wrote", "path": a, "original": "madvise"});
    format!("{}{wrote}\n", owner_line(DEAD.0, DEAD.1))
}

#[test]
fn replays_newest_first_and_removes_itself() {
    let d = tempfile::tempdir().unwrap();
    let a = file(d.path(), "enabled", "always [madvise] never\n");
    let b = file(d.path(), "swappiness", "60\n");
    let jp = d.path().join("run/kdelta/knobs.journal");
    let mut j = Journal::create(&jp, d.path()).unwrap();
    let md = std::fs::metadata(&jp).unwrap();
    assert_eq!(md.mode() & 0o7777, 0o600);
    assert_eq!(std::fs::metadata(jp.parent().unwrap()).unwrap().mode() & 0o7777, 0o700);
    j.will_write(&a, "madvise").unwrap();
    crate::sys::knobs::write_text(&a, "never").unwrap();
    j.will_write(&b, "60").unwrap();
    crate::sys::knobs::write_text(&b, "10").unwrap();
    // A second change of one file keeps the first original.
    j.will_write(&a, "never").unwrap();
    crate::sys::knobs::write_text(&a, "always").unwrap();
    assert_eq!(j.original(&a), Some("madvise"));
    // What it wrote is what the reader accepts.
    assert_eq!(read(&jp).unwrap().unwrap(), j.entries);
    let done = j.replay().unwrap();
    assert_eq!(done.len(), 2, "{done:?}");
    assert!(done[0].contains("swappiness restored to 60"), "{done:?}");
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "madvise");
    assert_eq!(std::fs::read_to_string(&b).unwrap(), "60");
    assert!(!jp.exists());
    // Its directory, kdelta's own and now empty, goes with it: left as found.
    assert!(!jp.parent().unwrap().exists());
    assert!(d.path().join("run").exists());
}

/// The journals' directory stays while another journal is in it, and is
/// made again by the next journal.
#[test]
fn the_journal_directory_goes_only_when_empty() {
    let d = tempfile::tempdir().unwrap();
    let knobs = d.path().join("run/kdelta/knobs.journal");
    let cgroups = d.path().join("run/kdelta/cgroups.journal");
    let a = Journal::create(&knobs, d.path()).unwrap();
    let _b = Journal::create(&cgroups, d.path()).unwrap();
    a.replay().unwrap();
    assert!(!knobs.exists() && cgroups.exists());
    std::fs::remove_file(&cgroups).unwrap();
    let c = Journal::create(&knobs, d.path()).unwrap();
    c.replay().unwrap();
    assert!(!knobs.parent().unwrap().exists());
}

#[test]
fn a_killed_owners_journal_is_replayed_by_restore() {
    let d = tempfile::tempdir().unwrap();
    let a = file(d.path(), "enabled", "always madvise [never]\n");
    let jp = d.path().join("j/knobs.journal");
    // What a kdelta killed after its change left: a dead owner, one entry,
    // and a torn last line (the change it announced was never made).
    plant(&jp, format!("{}{{\"kind\":\"wro", killed_journal(&a)).as_bytes());
    let e = read(&jp).unwrap().unwrap();
    assert_eq!(e.wrote, vec![(a.clone(), "madvise".to_string())]);
    assert!(e.owner.is_some_and(|o| !o.alive()));
    let done = replay(&jp, d.path()).unwrap().unwrap();
    assert_eq!(done, vec![format!("{} restored to madvise", a.display())]);
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "madvise");
    assert!(!jp.exists());
    assert!(replay(&jp, d.path()).unwrap().is_none(), "nothing left to do");
}

/// A killed run's guard and `kdelta restore` may replay one journal at the
/// same moment: both succeed, the settings are put back once, and neither
/// fails for want of the file the other removed.
#[test]
fn two_replayers_at_once_both_succeed() {
    let d = tempfile::tempdir().unwrap();
    let a = file(d.path(), "enabled", "always madvise [never]\n");
    let jp = d.path().join("run/kdelta/knobs.journal");
    for _ in 0..30 {
        std::fs::write(&a, "never").unwrap();
        plant(&jp, killed_journal(&a).as_bytes());
        let go = std::sync::Barrier::new(2);
        let results: Vec<_> = std::thread::scope(|s| {
            let t: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        go.wait();
                        replay(&jp, d.path())
                    })
                })
                .collect();
            t.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for r in &results {
            assert!(r.is_ok(), "{r:?}");
        }
        assert!(results.iter().any(|r| r.as_ref().unwrap().is_some()));
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "madvise");
        assert!(!jp.exists());
    }
}

#[test]
fn a_live_owners_journal_is_left_alone() {
    let d = tempfile::tempdir().unwrap();
    let a = file(d.path(), "x", "1\n");
    let jp = d.path().join("j/knobs.journal");
    // Our parent (the test harness) lives: its journal is not ours to replay.
    let ppid = std::os::unix::process::parent_id() as i32;
    let wrote = serde_json::json!({"kind": "wrote", "path": a, "original": "0"}).to_string();
    plant(&jp, format!("{}{wrote}\n", owner_line(ppid, crate::sys::task::start_time(ppid).unwrap())).as_bytes());
    let e = replay(&jp, d.path()).unwrap_err().to_string();
    assert!(e.contains("is running"), "{e}");
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "1\n");
    assert!(jp.exists());
    let e = discard(&jp).unwrap_err().to_string();
    assert!(e.contains("is running") && jp.exists(), "{e}");
}

#[test]
fn a_failed_restore_keeps_the_journal() {
    let d = tempfile::tempdir().unwrap();
    let jp = d.path().join("run/knobs.journal");
    let mut j = Journal::create(&jp, d.path()).unwrap();
    j.will_write(&d.path().join("sys/gone/file"), "1").unwrap();
    let e = j.replay().unwrap_err().to_string();
    assert!(e.contains("not restored") && e.contains("is kept"), "{e}");
    assert!(jp.exists());
    assert!(Journal::create(&jp, d.path()).is_err(), "one journal at a time");
}

#[test]
fn only_kdeltas_own_lines_are_read() {
    let own = owner_line(DEAD.0, DEAD.1);
    let w = r#"{"kind":"wrote","path":"/sys/a","original":"1"}"#;
    for (text, why) in [
        (format!("{w}\n"), "does not begin with kdelta's owner line"),
        ("{\"kind\":\"owner\",\"pid\":5,\"start\":1}\n".to_string(), "does not begin with kdelta's owner line"),
        ("{\"kind\":\"owner\",\"version\":1,\"pid\":5,\"start\":1}\n".to_string(), "format version 1"),
        ("{\"kind\":\"owner\",\"version\":2,\"pid\":-1,\"start\":1}\n".to_string(), "names process -1"),
        (format!("{own}{own}"), "line 2 is a second owner line"),
        (format!("{own}garbage\n{w}\n"), "line 2 is not a journal entry"),
        (format!("{own}{w}\n\u{0}\u{1}"), "last line is not the start"),
        (
            format!("{own}{}\n", r#"{"kind":"wrote","path":"/sys/../etc/passwd","original":"x"}"#),
            "not an absolute path without . or ..",
        ),
        (format!("{own}{}\n", r#"{"kind":"wrote","path":"sys/a","original":"x"}"#), "not an absolute path"),
        (format!("{own}{}\n", r#"{"kind":"mounted","path":"/a/./b"}"#), "not an absolute path"),
        (
            format!("{own}{{\"kind\":\"wrote\",\"path\":\"/sys/a\",\"original\":\"{}\"}}\n", "x".repeat(MAX_VALUE + 1)),
            "original value of 4097 bytes",
        ),
        (String::from_utf8_lossy(&[0xff, 0xfe, b'\n', 0]).into_owned(), "not"),
    ] {
        let e = Entries::parse(text.as_bytes()).unwrap_err();
        assert!(e.contains(why), "{text:?}: {e}");
        assert!(!e.contains('\n'), "{e}");
    }
    assert!(Entries::parse(&[0xff, 0, 0x80]).is_err());
    assert!(Entries::parse(&vec![b' '; MAX_BYTES as usize + 1]).unwrap_err().contains("larger than"));
    // Cut while the owner line was written: nothing was changed yet.
    assert_eq!(Entries::parse(b""), Ok(Entries::default()));
    assert_eq!(Entries::parse(&own.as_bytes()[..20]), Ok(Entries::default()));
    // One entry per file, its first original.
    let e = Entries::parse(format!("{own}{w}\n{}\n", r#"{"kind":"wrote","path":"/sys/a","original":"2"}"#).as_bytes())
        .unwrap();
    assert_eq!(e.wrote, vec![(PathBuf::from("/sys/a"), "1".to_string())]);
}

#[test]
fn entries_outside_sys_or_another_mount_are_refused_whole() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    let a = file(root, "enabled", "never\n");
    std::fs::create_dir_all(root.join("proc/sys/vm")).unwrap();
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::write(root.join("etc/passwd"), "root:x:0:0\n").unwrap();
    std::os::unix::fs::symlink(root.join("etc/passwd"), root.join("sys/kernel/mm/escape")).unwrap();
    std::os::unix::fs::symlink("../../../etc", root.join("proc/sys/vm/up")).unwrap();
    let with = |p: &Path| Entries {
        owner: None,
        wrote: vec![(a.clone(), "x".into()), (p.to_path_buf(), "x".into())],
        mounted: vec![],
        ..Entries::default()
    };
    for (p, why) in [
        (root.join("etc/passwd"), "not allowed"),
        (PathBuf::from("/etc/passwd"), "not below the sysfs root"),
        (root.join("sys/../etc/passwd"), "not allowed"),
        (root.join("sys/kernel/mm/escape"), "outside /sys and /proc/sys"),
        (root.join("proc/sys/vm/up/passwd"), "outside /sys and /proc/sys"),
    ] {
        let e = with(&p).check(root).unwrap_err();
        assert!(e.contains(why), "{}: {e}", p.display());
    }
    let m = Entries { owner: None, wrote: vec![], mounted: vec![root.join("mnt")], ..Entries::default() };
    assert!(m.check(root).unwrap_err().contains("kdelta mounts only debugfs"));
    let m = Entries {
        owner: None,
        wrote: vec![],
        mounted: vec![root.join(crate::sys::knobs::DEBUGFS)],
        ..Entries::default()
    };
    m.check(root).unwrap();
    // In a fake root a mount is never undone.
    assert!(undo(&m, root).unwrap()[0].contains("left alone"));
    assert_eq!(std::fs::read_to_string(root.join("etc/passwd")).unwrap(), "root:x:0:0\n");
}

#[test]
fn only_a_private_regular_file_is_read() {
    let d = tempfile::tempdir().unwrap();
    let jp = d.path().join("j/knobs.journal");
    plant(&jp, owner_line(DEAD.0, DEAD.1).as_bytes());
    read(&jp).unwrap().unwrap();
    std::fs::set_permissions(&jp, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(read(&jp).unwrap_err().to_string().contains("its mode is 644, not 600"));
    std::fs::set_permissions(&jp, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::set_permissions(jp.parent().unwrap(), std::fs::Permissions::from_mode(0o777)).unwrap();
    assert!(read(&jp).unwrap_err().to_string().contains("writable by group or others"));
    std::fs::set_permissions(jp.parent().unwrap(), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::remove_file(&jp).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &jp).unwrap();
    let e = read(&jp).unwrap_err();
    assert!(crate::error::is_bad_input(&e) && e.to_string().contains("a symbolic link"), "{e}");
    std::fs::remove_file(&jp).unwrap();
    nix::unistd::mkfifo(&jp, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    assert!(read(&jp).unwrap_err().to_string().contains("a FIFO"));
    assert!(warning_at(&jp).contains("unusable"));
    assert!(discard(&jp).unwrap().contains("removed without restoring anything"));
    assert!(!jp.exists());
    // A directory is never removed.
    std::fs::create_dir(&jp).unwrap();
    assert!(discard(&jp).is_err() && jp.is_dir());
}

/// [`warning`] for a journal at an explicit path.
fn warning_at(jp: &Path) -> String {
    match read(jp) {
        Err(e) => e.to_string(),
        Ok(_) => String::new(),
    }
}
