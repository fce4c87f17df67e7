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

/// Fold a `-wal` left beside the database at `path` into it and remove it
/// and its `-shm`, when nothing else has the database open; `conn` is the
/// reading connection just opened, returned as it was (or opened again).
///
/// A writer that ran out of space leaves its newest pages in the `-wal`
/// (SQLite cannot copy them into the file, so they must stay). Once the
/// disk has room again, the next command, reading or writing, finishes
/// that checkpoint and closes: SQLite removes both files when its last
/// connection closes, so a process still connected (a live writer or
/// reader) keeps them and removes them itself. Not done where the file or
/// its directory cannot be written, or with less room than the `-wal`'s
/// pages and [`MIN_FREE`] more: the reader goes on through the `-wal`.
pub(super) fn fold_left_wal(path: &Path, conn: Connection) -> std::result::Result<Connection, check::Refusal> {
    let wal = check::sibling(path, "-wal");
    let Ok(len) = std::fs::symlink_metadata(&wal).map(|m| m.len()) else { return Ok(conn) };
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let room = crate::sys::free_bytes(dir).is_some_and(|b| b >= len.saturating_add(MIN_FREE));
    if !room || crate::sys::can_write(path).is_err() || crate::sys::can_write(dir).is_err() {
        return Ok(conn);
    }
    // This process's own reading connection would count as another one.
    drop(conn);
    if let Ok(w) =
        Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)
    {
        // Never wait: a busy database is a live one, whose last close does it.
        let _ = w.busy_timeout(Duration::ZERO);
        let _ = w.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get::<_, i64>(0));
        let _ = w.close();
    }
    check::reader(path)
}
