//! The database file's neighbours: what a failed open or a failed creation
//! leaves beside it is removed (only what kdelta made, never a file with
//! anything in it), and a failed write is told as the refusal it is.

use super::*;

/// After a new database at `path` could not be made (a full disk, most
/// often), remove what the attempt left: its `-wal`, `-shm` and `-journal`,
/// and the file itself, still empty, when this attempt created it (`made`).
/// A file with anything in it is left alone with its siblings: another
/// process made the database meanwhile (a database in WAL mode has its
/// header in the file itself).
pub(super) fn remove_unmade(path: &Path, made: bool) {
    if !path.metadata().is_ok_and(|m| m.is_file() && m.len() == 0) {
        return;
    }
    if made {
        let _ = std::fs::remove_file(path);
    }
    for ext in ["-wal", "-shm", "-journal"] {
        let mut s = path.as_os_str().to_owned();
        s.push(ext);
        let _ = std::fs::remove_file(PathBuf::from(s));
    }
}

/// Free bytes below which an existing database is not opened for writing:
/// the `-shm` index alone takes 32 KiB.
pub(super) const MIN_FREE: u64 = 64 * 1024;

/// After an existing database at `path` could not be opened for writing,
/// remove the `-wal` and `-shm` this attempt made (`had`: whether each was
/// there before), when the `-wal` holds no frame: nothing was written
/// through them.
pub(super) fn remove_unused_siblings(path: &Path, had: [bool; 2]) {
    let wal = check::sibling(path, "-wal");
    if had[0] || std::fs::symlink_metadata(&wal).is_ok_and(|m| m.len() > 32) {
        return;
    }
    let _ = std::fs::remove_file(&wal);
    if !had[1] {
        let _ = std::fs::remove_file(check::sibling(path, "-shm"));
    }
}

/// A failed write as the refusal it is (full disk, read-only), else as it was.
pub(super) fn refused(path: &Path, e: anyhow::Error) -> anyhow::Error {
    match e.downcast_ref::<rusqlite::Error>().and_then(|s| check::write_refusal(s, path)) {
        Some(r) => r.error(path),
        None => e,
    }
}
