//! Where a PostgreSQL password comes from when the URL has none, as libpq
//! takes it (the `postgres` crate reads neither): `$PGPASSWORD`, else the
//! first matching line of the password file (`$PGPASSFILE`, else
//! `~/.pgpass`), `hostname:port:database:username:password` with `*` for
//! any value and `\:` / `\\` escapes. As libpq, a file that group or others
//! may read is ignored with a warning; so is one that is not a regular file
//! or is larger than [`MAX_BYTES`]. Passwords never go into a URL kdelta
//! stores or prints.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::PathBuf;

/// A password file larger than this is not read.
pub(super) const MAX_BYTES: u64 = 1 << 20;

/// Where the connection goes, as the password file's first four fields
/// name it.
pub(super) struct Target<'a> {
    /// The host name, or the Unix socket's directory.
    pub(crate) host: &'a str,
    /// Whether `host` is a Unix socket directory (also matched by `localhost`).
    pub(crate) unix: bool,
    pub(crate) port: u16,
    pub(crate) dbname: &'a str,
    pub(crate) user: &'a str,
}

/// The password for `t`: `$PGPASSWORD`, else the password file's.
pub(super) fn password(t: &Target) -> Option<String> {
    if let Some(p) = std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty()) {
        return Some(p);
    }
    let file = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pgpass")))?;
    let text = match read(&file) {
        Ok(Some(t)) => t,
        Ok(None) => return None,
        Err(why) => {
            eprintln!("kdelta: warning: password file {} ignored: {why}", file.display());
            return None;
        }
    };
    lookup(&text, t)
}

/// Why a password file is ignored.
#[derive(Debug, thiserror::Error)]
enum PassFileError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("not a regular file")]
    NotRegular,
    #[error("group or others may read it (mode {0:04o}); chmod 0600 it")]
    Readable(u32),
    #[error("larger than {MAX_BYTES} bytes")]
    TooLarge,
}

/// The file's text; `None` when it does not exist.
fn read(file: &std::path::Path) -> Result<Option<String>, PassFileError> {
    // Non-blocking, so a FIFO in its place cannot hang the open.
    let f = match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(file) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(PassFileError::NotRegular);
    }
    if meta.mode() & 0o077 != 0 {
        return Err(PassFileError::Readable(meta.mode() & 0o7777));
    }
    if meta.len() > MAX_BYTES {
        return Err(PassFileError::TooLarge);
    }
    let mut text = String::new();
    f.take(MAX_BYTES).read_to_string(&mut text)?;
    Ok(Some(text))
}

/// The password of the first line of `text` that matches `t`.
fn lookup(text: &str, t: &Target) -> Option<String> {
    let port = t.port.to_string();
    text.lines().filter(|l| !l.starts_with('#')).find_map(|line| {
        let f = fields(line)?;
        let host_ok = f[0] == "*" || f[0] == t.host || (t.unix && f[0] == "localhost");
        let ok = |pat: &str, v: &str| pat == "*" || pat == v;
        (host_ok && ok(&f[1], &port) && ok(&f[2], t.dbname) && ok(&f[3], t.user)).then(|| f[4].clone())
    })
}

/// A line's five fields, unescaped; `None` for a line with fewer.
fn fields(line: &str) -> Option<[String; 5]> {
    let mut out: Vec<String> = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.last_mut()?.extend(chars.next()),
            ':' if out.len() < 5 => out.push(String::new()),
            c => out.last_mut()?.push(c),
        }
    }
    out.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target<'a>(host: &'a str, unix: bool) -> Target<'a> {
        Target { host, unix, port: 5432, dbname: "kd", user: "u" }
    }

    #[test]
    fn lines_match_as_libpq_matches_them() {
        let text =
            "# comment\nother:5432:kd:u:no\nh\\:x:*:kd:u:escaped\\:colon\nh:5432:*:u:pw:with:colons\n*:*:*:*:any\n";
        assert_eq!(lookup(text, &target("h", false)).as_deref(), Some("pw:with:colons"));
        assert_eq!(lookup(text, &target("h:x", false)).as_deref(), Some("escaped:colon"));
        assert_eq!(lookup(text, &target("elsewhere", false)).as_deref(), Some("any"));
        assert_eq!(lookup("localhost:5432:kd:u:sock\n", &target("/run/postgresql", true)).as_deref(), Some("sock"));
        assert_eq!(lookup("localhost:5432:kd:u:sock\n", &target("db.example", false)), None);
        assert_eq!(lookup("h:5433:kd:u:x\nh:5432:kd:v:y\nshort:line\n", &target("h", false)), None);
    }

    #[test]
    fn a_file_others_may_read_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("pgpass");
        std::fs::write(&f, "*:*:*:*:pw\n").unwrap();
        std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        assert!(read(&f).unwrap_err().to_string().contains("chmod 0600"));
        std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        assert_eq!(read(&f).unwrap().as_deref(), Some("*:*:*:*:pw\n"));
        assert_eq!(read(&dir.path().join("absent")).unwrap(), None);
        assert!(read(dir.path()).unwrap_err().to_string().contains("not a regular file"));
    }
}
