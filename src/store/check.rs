//! Deciding whether a file is a healthy kdelta database without changing it:
//! first its 100-byte SQLite header, read as plain bytes before SQLite ever
//! opens the file, then its schema through a connection that can neither
//! write nor create a sibling file (`immutable=1`, or `mode=ro` when a live
//! `-wal` and `-shm` already exist), and its pages with `PRAGMA
//! quick_check` (always before writing; before reading, only up to
//! [`READ_CHECK_MAX`]: reading cannot damage a file, and SQLite refuses a
//! damaged page when a query reaches it). Each way of refusing a file is
//! one [`Refusal`], one line, exit 2.

use super::schema::{self, APPLICATION_ID, SCHEMA_VERSION};
use rusqlite::{Connection, OpenFlags};
use std::path::Path;

/// Why the store will not use a file. The file is left as it was.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// Not SQLite, or SQLite that is not kdelta's.
    NotKdelta(String),
    /// Claims to be kdelta's but is truncated, inconsistent or lacks its schema.
    Damaged(String),
    /// Written by a newer kdelta (its schema version).
    Newer(i64),
    /// Cannot be written (the file, its directory or the filesystem).
    ReadOnly(String),
    /// The filesystem is full.
    NoSpace(String),
    /// Cannot be opened or read at all.
    CannotOpen(String),
}

impl Refusal {
    /// The one-line message for the file at `path`.
    pub fn message(&self, path: &Path) -> String {
        let p = path.display();
        let untouched = "the file was left untouched";
        match self {
            Refusal::NotKdelta(why) => format!("{p} is not a kdelta database ({why}); {untouched}: choose another path with --db"),
            Refusal::Damaged(why) => format!("{p} is a damaged kdelta database ({why}); {untouched}: move it aside or choose another path with --db"),
            Refusal::Newer(v) => format!(
                "{p} was written by a newer kdelta (schema {v}, this one reads up to {SCHEMA_VERSION}); {untouched}: use a newer kdelta or choose another path with --db"
            ),
            Refusal::ReadOnly(why) => format!(
                "database {p} is read-only ({why}): `runs`, `show`, `compare`, `export` and `chart` can read it, storing a run cannot; choose another path with --db"
            ),
            Refusal::NoSpace(why) => {
                let kept = if wal_pending(path) {
                    let wal = sibling(path, "-wal");
                    format!("; its newest runs wait in {} (keep it: the next kdelta command with room folds it in and removes it)", wal.display())
                } else {
                    String::new()
                };
                format!("no space left to write database {p} ({why}){kept}: free some space or choose another path with --db")
            }
            Refusal::CannotOpen(why) => format!("cannot open database {p} ({why}); choose another path with --db"),
        }
    }

    /// As an error with exit status 2.
    pub fn error(&self, path: &Path) -> anyhow::Error {
        crate::error::bad_input(self.message(path))
    }
}

/// What the 100-byte SQLite header says (sqlite.org/fileformat.html, 1.3).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Header {
    pub page_size: u32,
    /// Write and read versions (offsets 18 and 19) are 2: WAL mode.
    pub(crate) wal: bool,
    /// Offset 40: changes with every schema change; 0 if there never was one.
    pub(crate) schema_cookie: u32,
    /// Offset 60 (`PRAGMA user_version`): kdelta's schema version.
    pub user_version: i32,
    /// Offset 68 (`PRAGMA application_id`).
    pub application_id: i32,
}

const MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// Judge a file from its first bytes (`bytes`, at least the first 100 if it
/// has them) and its length. Pure, so it can be fuzzed.
pub fn check_header(bytes: &[u8], file_len: u64) -> Result<Header, Refusal> {
    check_header_beside(bytes, file_len, false)
}

/// [`check_header`] of a file with frames in its `-wal` (`wal_pending`):
/// the page count of the file's own header is then not the database's
/// length. A checkpoint that ran out of space (a full disk) writes the first
/// page, with the new count, and not the pages after it; the `-wal` still
/// holds them all, and reading through it gives every run. Such a file is
/// not truncated: a writer finishes the checkpoint (see
/// `Sqlite::open` in `sqlite.rs`).
pub(super) fn check_header_beside(bytes: &[u8], file_len: u64, wal_pending: bool) -> Result<Header, Refusal> {
    if file_len < 100 || bytes.len() < 100 {
        return Err(Refusal::NotKdelta(format!("{file_len} bytes, too short for an SQLite header")));
    }
    if &bytes[..16] != MAGIC {
        return Err(Refusal::NotKdelta("no SQLite header".into()));
    }
    let u16_at = |o: usize| u16::from_be_bytes([bytes[o], bytes[o + 1]]);
    let u32_at = |o: usize| u32::from_be_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]]);
    let page_size = match u16_at(16) {
        1 => 65536,
        n => n as u32,
    };
    let ours = u32_at(68) as i32 == APPLICATION_ID;
    // What is wrong with a header: damage if the file says it is kdelta's.
    let bad = |why: String| {
        if ours {
            Refusal::Damaged(why)
        } else {
            Refusal::NotKdelta(format!("an SQLite file with {why}"))
        }
    };
    if !page_size.is_power_of_two() || !(512..=65536).contains(&page_size) {
        return Err(bad(format!("page size {page_size}")));
    }
    let (write, read) = (bytes[18], bytes[19]);
    if !(1..=2).contains(&write) || !(1..=2).contains(&read) {
        return Err(bad(format!("file format versions {write}/{read}")));
    }
    if bytes[21..24] != [64, 32, 32] {
        return Err(bad("bad payload fractions".into()));
    }
    if file_len % page_size as u64 != 0 {
        return Err(bad(format!("{file_len} bytes, not a whole number of {page_size}-byte pages")));
    }
    // The page count is valid when the change counter matches offset 92.
    let pages = u32_at(28) as u64;
    if pages > 0 && u32_at(24) == u32_at(92) && pages * page_size as u64 > file_len && !wal_pending {
        return Err(bad(format!("truncated: {file_len} of {} bytes", pages * page_size as u64)));
    }
    let h = Header {
        page_size,
        wal: write == 2 && read == 2,
        schema_cookie: u32_at(40),
        user_version: u32_at(60) as i32,
        application_id: u32_at(68) as i32,
    };
    if ours {
        if h.user_version as i64 > SCHEMA_VERSION as i64 {
            return Err(Refusal::Newer(h.user_version as i64));
        }
        if h.user_version <= 0 || h.schema_cookie == 0 {
            return Err(Refusal::Damaged(format!(
                "kdelta's application id but no tables (schema version {})",
                h.user_version
            )));
        }
    } else if h.application_id != 0 {
        return Err(Refusal::NotKdelta(format!(
            "an SQLite database that is not kdelta's, application_id {:#x}",
            h.application_id
        )));
    }
    Ok(h)
}

/// The largest file a reading command checks page by page when it opens
/// it. `quick_check` reads the whole file (about a second per GB from the
/// page cache, far more from disk), so a store of many hosts' runs opened
/// by `history` or `runs` has its header and schema checked and leaves its
/// pages to SQLite's own checks as a query reads them; a writer checks
/// every page of any file.
pub(super) const READ_CHECK_MAX: u64 = 128 << 20;

/// What an existing file holds, once judged acceptable.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Found {
    /// An SQLite database with nothing in it: a writer may make it kdelta's.
    EmptySqlite,
    /// A kdelta database of this schema version.
    Kdelta(i64),
}

/// `path` as an SQLite URI (`file:` with every byte but the plain ones escaped).
fn uri(path: &Path, query: &str) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut s = String::from("file:");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s + "?" + query
}

/// `path` with `ext` appended (`results.db-wal`).
pub(super) fn sibling(path: &Path, ext: &str) -> std::path::PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(ext);
    std::path::PathBuf::from(s)
}

/// Whether the `-wal` beside `path` holds frames (more than its 32-byte
/// header): pages newer than the file's own, which only a connection
/// reading through the `-wal` sees.
pub(super) fn wal_pending(path: &Path) -> bool {
    std::fs::symlink_metadata(sibling(path, "-wal")).is_ok_and(|m| m.is_file() && m.len() > 32)
}

/// A connection that reads `path` and can neither change it nor create a file
/// beside it. With a live `-wal` and `-shm` (another process has the database
/// open), or a `-wal` holding frames no checkpoint has copied (a writer that
/// ran out of space), it reads through them (`mode=ro`; SQLite then makes the
/// `-shm` index if it is missing); otherwise it opens the file as
/// `immutable`: no locks, no `-shm`, no `-wal`, no `-journal`.
pub(super) fn reader(path: &Path) -> Result<Connection, Refusal> {
    let sibling = |ext: &str| sibling(path, ext).exists();
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let open = |q: &str| Connection::open_with_flags(uri(path, q), flags);
    if (sibling("-wal") && sibling("-shm")) || wal_pending(path) {
        if let Ok(c) = open("mode=ro") {
            let _ = c.busy_timeout(std::time::Duration::from_secs(30));
            if c.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0)).is_ok() {
                return Ok(c);
            }
        }
    }
    open("immutable=1").map_err(|e| Refusal::CannotOpen(e.to_string()))
}

/// Judge an existing, non-empty regular file: its header read directly, then
/// its schema through [`reader`], and its pages when it is at most
/// `pages_up_to` bytes long. Writes nothing, creates nothing.
pub(super) fn existing(path: &Path, pages_up_to: u64) -> Result<(Found, Connection), Refusal> {
    use std::io::Read;
    let io = |e: std::io::Error| Refusal::CannotOpen(e.to_string());
    let mut f = std::fs::File::open(path).map_err(io)?;
    let len = f.metadata().map_err(io)?.len();
    let mut head = Vec::with_capacity(100);
    f.by_ref().take(100).read_to_end(&mut head).map_err(io)?;
    drop(f);
    let h = check_header_beside(&head, len, wal_pending(path))?;
    let conn = reader(path)?;
    let found = verify_schema(&conn, &h, len <= pages_up_to)?;
    Ok((found, conn))
}

/// The tables and views of a database, as `table x, view y`.
fn objects(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut st = conn.prepare("SELECT type, name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' ORDER BY type, name")?;
    let rows = st.query_map([], |r| Ok(format!("{} {}", r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
    rows.collect()
}

/// The schema behind an accepted header: nothing at all (an empty SQLite
/// database), or kdelta's tables with every column its version has, and
/// with `pages` every page sound.
fn verify_schema(conn: &Connection, h: &Header, pages: bool) -> Result<Found, Refusal> {
    // Read through the connection, not the header: with a live `-wal` the
    // file's header may predate the transaction that made it kdelta's.
    let app: i64 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(|e| Refusal::NotKdelta(format!("unreadable: {e}")))?;
    let ours = app == APPLICATION_ID as i64 || h.application_id == APPLICATION_ID;
    if !ours && app != 0 {
        return Err(Refusal::NotKdelta(format!("an SQLite database that is not kdelta's, application_id {app:#x}")));
    }
    let damaged = |e: rusqlite::Error| {
        if ours {
            Refusal::Damaged(e.to_string())
        } else {
            Refusal::NotKdelta(format!("unreadable: {e}"))
        }
    };
    let names = objects(conn).map_err(damaged)?;
    let any: i64 = conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0)).map_err(damaged)?;
    if !ours {
        if any == 0 {
            return Ok(Found::EmptySqlite);
        }
        let what = if names.is_empty() { "indexes or triggers only".to_string() } else { names.join(", ") };
        return Err(Refusal::NotKdelta(format!("an SQLite database that is not kdelta's, holding {what}")));
    }
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(damaged)?;
    if version > SCHEMA_VERSION as i64 {
        return Err(Refusal::Newer(version));
    }
    for (table, cols) in schema::columns(version) {
        let mut st = conn.prepare("SELECT name FROM pragma_table_info(?1)").map_err(damaged)?;
        let have: Vec<String> = st.query_map([table], |r| r.get(0)).and_then(|r| r.collect()).map_err(damaged)?;
        if have.is_empty() {
            return Err(Refusal::Damaged(format!("schema {version} without table {table}")));
        }
        if let Some(c) = cols.iter().find(|c| !have.iter().any(|h| h == *c)) {
            return Err(Refusal::Damaged(format!("schema {version} without column {table}.{c}")));
        }
    }
    if !pages {
        return Ok(Found::Kdelta(version));
    }
    let check: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0)).map_err(damaged)?;
    if check != "ok" {
        return Err(Refusal::Damaged(format!("integrity check: {}", check.lines().next().unwrap_or(""))));
    }
    Ok(Found::Kdelta(version))
}

/// A failed write, open or read of the database at `path` as a refusal
/// where it is one (full, read-only, cannot open, a damaged page), else
/// `None`. An I/O error on a
/// filesystem with almost no room left counts as full: SQLite reports a
/// `-shm` it cannot grow as an I/O error, not as `SQLITE_FULL`.
pub(super) fn write_refusal(e: &rusqlite::Error, path: &Path) -> Option<Refusal> {
    use rusqlite::ErrorCode::*;
    let rusqlite::Error::SqliteFailure(f, _) = e else { return None };
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    match f.code {
        DiskFull => Some(Refusal::NoSpace(e.to_string())),
        SystemIoFailure if crate::sys::free_bytes(dir).is_some_and(|b| b < 64 * 1024) => {
            Some(Refusal::NoSpace(e.to_string()))
        }
        ReadOnly => Some(Refusal::ReadOnly(e.to_string())),
        DatabaseCorrupt | NotADatabase => Some(Refusal::Damaged(e.to_string())),
        CannotOpen | PermissionDenied => Some(Refusal::CannotOpen(e.to_string())),
        _ => None,
    }
}

/// An I/O error on the way to writing, as a refusal.
pub(super) fn io_refusal(e: &std::io::Error) -> Refusal {
    match e.raw_os_error() {
        Some(libc::ENOSPC) | Some(libc::EDQUOT) => Refusal::NoSpace(e.to_string()),
        Some(libc::EROFS) | Some(libc::EACCES) | Some(libc::EPERM) => Refusal::ReadOnly(e.to_string()),
        _ => Refusal::CannotOpen(e.to_string()),
    }
}
