//! What the filesystem under a dbench directory is, where that changes what
//! the figures mean.
//!
//! ext4 without a journal allocates a new inode by scanning its block group's
//! bitmap from the start and skipping every free inode deleted in the last
//! 60 s, or 360 s while its inode-table block is still dirty
//! (`recently_deleted()` in `fs/ext4/ialloc.c`; with a journal the check is
//! off). dbench creates and deletes thousands of files, so a run pays, in CPU
//! time inside `open(O_CREAT)`, for the deletions of the runs just before it,
//! whichever tool ran them (figures in `docs/fidelity.md`). kdelta says so
//! with the result.

use std::path::Path;

/// The block device behind `major:minor` when it holds an ext4 filesystem
/// mounted without a journal, read from the sysfs tree at `sys`: its name
/// from the `dev/block/MAJ:MIN` link, then `fs/ext4/NAME/journal_task`, which
/// the kernel writes as `<none>` when there is no journal.
pub(crate) fn ext4_without_journal(sys: &Path, major: u64, minor: u64) -> Option<String> {
    let link = std::fs::read_link(sys.join(format!("dev/block/{major}:{minor}"))).ok()?;
    let name = link.file_name()?.to_str()?.to_string();
    let task = std::fs::read_to_string(sys.join("fs/ext4").join(&name).join("journal_task")).ok()?;
    (task.trim() == "<none>").then_some(name)
}

/// The note for a run working in `dir`, if its filesystem makes consecutive
/// runs depend on each other.
pub(crate) fn history_note(dir: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).ok()?.dev();
    let name = ext4_without_journal(Path::new("/sys"), libc::major(dev) as u64, libc::minor(dev) as u64)?;
    // The same text for every round (whose directories differ), so the
    // result carries it once.
    Some(format!(
        "the clients' filesystem ({name}) is ext4 without a journal: creating a file skips the inodes deleted in the last 60-360 s, \
         so each run pays for the deletions of the runs before it and consecutive runs can differ 2-3x; \
         compare interleaved rounds, or give every run a fresh filesystem (scripts/dbench-vs-kdelta.sh -f)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(journal: &str) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("dev/block")).unwrap();
        std::fs::create_dir_all(t.path().join("devices/virtual/block/vda")).unwrap();
        std::os::unix::fs::symlink("../../devices/virtual/block/vda", t.path().join("dev/block/254:0")).unwrap();
        std::fs::create_dir_all(t.path().join("fs/ext4/vda")).unwrap();
        std::fs::write(t.path().join("fs/ext4/vda/journal_task"), journal).unwrap();
        t
    }

    #[test]
    fn no_journal_is_named() {
        let t = fake("<none>\n");
        assert_eq!(ext4_without_journal(t.path(), 254, 0).as_deref(), Some("vda"));
    }

    #[test]
    fn a_journal_or_another_device_says_nothing() {
        let t = fake("152\n");
        assert_eq!(ext4_without_journal(t.path(), 254, 0), None);
        let t = fake("<none>\n");
        assert_eq!(ext4_without_journal(t.path(), 254, 1), None);
        std::fs::remove_dir_all(t.path().join("fs/ext4/vda")).unwrap();
        assert_eq!(ext4_without_journal(t.path(), 254, 0), None);
    }
}
