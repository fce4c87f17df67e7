use super::*;

fn file(d: &Path, name: &str, text: &str) -> PathBuf {
    let p = d.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn replays_newest_first_and_removes_itself() {
    let d = tempfile::tempdir().unwrap();
    let a = file(d.path(), "enabled", "always [madvise] never\n");
    let b = file(d.path(), "swappiness", "60\n");
    let jp = d.path().join("run/kdelta/knobs.journal");
    let mut j = Journal::create(&jp).unwrap();
    j.will_write(&a, "madvise").unwrap();
    crate::sys::knobs::write_text(&a, "never").unwrap();
    j.will_write(&b, "60").unwrap();
    crate::sys::knobs::write_text(&b, "10").unwrap();
    // A second change of one file keeps the first original.
    j.will_write(&a, "never").unwrap();
    crate::sys::knobs::write_text(&a, "always").unwrap();
    assert_eq!(j.original(&a), Some("madvise"));
    let done = j.replay().unwrap();
    assert_eq!(done.len(), 2, "{done:?}");
    assert!(done[0].contains("swappiness restored to 60"), "{done:?}");
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "madvise");
    assert_eq!(std::fs::read_to_string(&b).unwrap(), "60");
    assert!(!jp.exists());
}

#[test]
fn a_killed_owners_journal_is_replayed_by_restore() {
    let d = tempfile::tempdir().unwrap();
    let a = file(d.path(), "enabled", "always madvise [never]\n");
    let jp = d.path().join("knobs.journal");
    // What a kdelta killed after its change left: a dead owner, one entry,
    // and a torn last line (the change it announced was never made).
    let dead = r#"{"kind":"owner","pid":2147483000,"start":1}"#;
    let wrote = serde_json::json!({"kind": "wrote", "path": a, "original": "madvise"}).to_string();
    std::fs::write(&jp, format!("{dead}\n{wrote}\n{{\"kind\":\"wro")).unwrap();
    let e = read(&jp).unwrap().unwrap();
    assert_eq!(e.wrote, vec![(a.clone(), "madvise".to_string())]);
    assert!(e.owner.is_some_and(|o| !o.alive()));
    preflight_at(&jp).unwrap_err();
    let done = replay(&jp).unwrap();
    assert_eq!(done, vec![format!("{} restored to madvise", a.display())]);
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "madvise");
    assert!(!jp.exists());
    assert!(replay(&jp).unwrap().is_empty(), "nothing left to do");
}

#[test]
fn a_live_owners_journal_is_left_alone() {
    let d = tempfile::tempdir().unwrap();
    let a = file(d.path(), "x", "1\n");
    let jp = d.path().join("knobs.journal");
    // Our parent (the test harness) lives: its journal is not ours to replay.
    let parent =
        Owner { pid: std::os::unix::process::parent_id() as i32, start: crate::sys::task::start_time(std::os::unix::process::parent_id() as i32).unwrap() };
    let wrote = serde_json::json!({"kind": "wrote", "path": a, "original": "0"}).to_string();
    std::fs::write(&jp, format!("{{\"kind\":\"owner\",\"pid\":{},\"start\":{}}}\n{wrote}\n", parent.pid, parent.start)).unwrap();
    let e = replay(&jp).unwrap_err().to_string();
    assert!(e.contains("is running"), "{e}");
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "1\n");
    assert!(jp.exists());
}

#[test]
fn a_failed_restore_keeps_the_journal() {
    let d = tempfile::tempdir().unwrap();
    let jp = d.path().join("knobs.journal");
    let mut j = Journal::create(&jp).unwrap();
    j.will_write(&d.path().join("gone/file"), "1").unwrap();
    let e = j.replay().unwrap_err().to_string();
    assert!(e.contains("could not be restored") && e.contains("is kept"), "{e}");
    assert!(jp.exists());
    assert!(Journal::create(&jp).is_err(), "one journal at a time");
}

/// [`preflight`] for a journal at an explicit path.
fn preflight_at(jp: &Path) -> Result<()> {
    match read(jp)? {
        Some(_) => bail!("exists"),
        None => Ok(()),
    }
}
