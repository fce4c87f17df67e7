//! dbench's file backend: replay loadfile operations on a local filesystem.
//!
//! Client N works in `BASE/clients/clientN` (see [`super::loadfile`] for the
//! path mapping). Every operation does what dbench 4's `fileio.c` does, with
//! the differences marked *kdelta*:
//!
//! | operation | system calls |
//! |---|---|
//! | name lookup (before every path operation) | `stat`; when that fails, read the parent directory comparing names without ASCII case, as dbench's `strcasecmp` (dbench's `resolve_name`, which imitates Samba's case-insensitive lookup) |
//! | `NTCreateX` | directory option (0x1): `mkdir 0700` then `open O_RDONLY\|O_DIRECTORY` (*kdelta*: no `mkdir` for disposition 1, open-only). Otherwise `open O_RDWR`, plus `O_CREAT` for dispositions 2 (create) and 3 (open-if, *kdelta*: dbench omits it), `O_CREAT\|O_TRUNC` for 0 (supersede, *kdelta*), 4 and 5; `EISDIR` retries as a directory. The handle is kept only when success was expected, as dbench does |
//! | `Close` | `close` |
//! | `Rename` | `rename` |
//! | `Unlink` | `unlink` |
//! | `Deltree` | remove the tree (*kdelta*: directories too, dbench leaves empty ones; the state at the start of every pass then matches the trace) |
//! | `Rmdir` | `rmdir` |
//! | `Mkdir` | `mkdir 0777`; an existing directory is success |
//! | `QUERY_PATH_INFORMATION` | the lookup alone |
//! | `QUERY_FILE_INFORMATION` | `fstat` |
//! | `QUERY_FS_INFORMATION` | `statvfs` of the base directory |
//! | `SET_FILE_INFORMATION` | `fstat`, then set access time 10 s and modification time 12 s back (*kdelta*: `futimens` on the handle; dbench uses `utime` on the name) |
//! | `FIND_FIRST` | the lookup; with a wildcard (`* ? < > "`), read the directory and match names without case (`.` and `..` included, as SMB lists them) |
//! | `WriteX` | `pwrite` of `size` zero bytes at `offset` |
//! | `ReadX` | `pread` of `size` bytes at `offset` |
//! | `LockX` / `UnlockX` | `fcntl` write lock / unlock of `offset, size` (*kdelta*: `F_SETLK`, never waits; each client's files are its own so dbench's `F_SETLKW` never waits either) |
//! | `Flush` | `fsync` |
//!
//! Checked against Debian's dbench 4.0 on client.txt with `strace -f -c`:
//! per `NTCreateX`, 2.48 `openat`, 2.95 `getdents64`, 2.23 `close` for
//! dbench against 2.53, 3.02, 2.27 for kdelta; one `fsync` per `Flush`, one
//! `statfs` per `QUERY_FS_INFORMATION`, one `utimensat` per
//! `SET_FILE_INFORMATION` in both.
//!
//! Bytes counted for the throughput, as dbench: `size` of every `ReadX` and
//! `WriteX` that the kernel accepted.
//!
//! The outcome (success or failure) is compared with the expected status by
//! the caller. No space, quota, I/O, read-only filesystem, out of memory or
//! out of file descriptors are not outcomes but errors that end the run.

use super::loadfile::{Op, OpKind, SharePath};
use super::runner::{Backend, Outcome};
use anyhow::{anyhow, Result};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

struct Handle {
    file: File,
}

/// One client's view of the filesystem.
pub struct FsClient {
    n: usize,
    base: PathBuf,
    handles: HashMap<u32, Handle>,
    zeros: Vec<u8>,
    buf: Vec<u8>,
}

/// Errors that end the run instead of being an operation's outcome.
fn is_fatal(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT | libc::EIO | libc::EROFS | libc::ENOMEM | libc::EMFILE | libc::ENFILE))
}

fn fail(why: impl Into<String>) -> Outcome {
    Outcome { ok: false, bytes: 0, why: Some(why.into()) }
}

const OK: Outcome = Outcome { ok: true, bytes: 0, why: None };

/// Turn a result into an outcome, or an error for the fatal kinds.
fn outcome<T>(op: &Op, what: &str, r: io::Result<T>) -> Result<std::result::Result<T, Outcome>> {
    match r {
        Ok(v) => Ok(Ok(v)),
        Err(e) if is_fatal(&e) => Err(anyhow!("line {}: {} {what}: {e}", op.line, op.kind.name())),
        Err(e) => Ok(Err(fail(format!("{what}: {e}")))),
    }
}

/// DOS-style wildcard match without case: `*` and `<` any run, `?` and `>`
/// one character, `"` a dot.
pub fn wild_match(pat: &str, name: &str) -> bool {
    wild_match_bytes(pat.as_bytes(), name.as_bytes())
}

/// [`wild_match`] on raw names, folding ASCII case only (as dbench's
/// `strcasecmp`), without allocating: it runs for every directory entry of
/// every `FIND_FIRST`, so its cost shows in a CPU-bound run.
fn wild_match_bytes(p: &[u8], n: &[u8]) -> bool {
    // Iterative matcher with one backtrack point (classic glob).
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == b'*' || p[pi] == b'<') {
            star = Some((pi, ni));
            pi += 1;
        } else if pi < p.len() && (p[pi] == b'?' || p[pi] == b'>' || p[pi].eq_ignore_ascii_case(&n[ni]) || (p[pi] == b'"' && n[ni] == b'.')) {
            pi += 1;
            ni += 1;
        } else if let Some((sp, sn)) = star {
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    while pi < p.len() && (p[pi] == b'*' || p[pi] == b'<') {
        pi += 1;
    }
    pi == p.len()
}

fn has_wildcard(s: &str) -> bool {
    s.contains(['*', '?', '<', '>', '"'])
}

impl FsClient {
    /// Client `n` (1-based) under `base` (which holds `clients/`).
    pub fn new(n: usize, base: &Path) -> FsClient {
        FsClient { n, base: base.to_path_buf(), handles: HashMap::new(), zeros: Vec::new(), buf: Vec::new() }
    }

    fn real(&self, p: &SharePath) -> PathBuf {
        let r = p.relative(self.n);
        if r.is_empty() {
            self.base.clone()
        } else {
            self.base.join(r)
        }
    }

    /// dbench's `resolve_name`: `stat`, else a case-insensitive scan of the
    /// parent directory. True when the name exists (either way).
    fn resolve(&self, path: &Path) -> bool {
        if std::fs::metadata(path).is_ok() {
            return true;
        }
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return false;
        };
        let Ok(rd) = std::fs::read_dir(parent) else {
            return false;
        };
        // strcasecmp as dbench: ASCII case folding, no allocation per entry.
        let want = name.as_bytes();
        rd.flatten().any(|e| e.file_name().as_bytes().eq_ignore_ascii_case(want))
    }

    fn handle(&self, h: u32) -> std::result::Result<&Handle, Outcome> {
        self.handles.get(&h).ok_or_else(|| fail(format!("handle {h} is not open")))
    }

    fn create(&mut self, op: &Op, path: &SharePath, options: u32, disposition: u32, h: u32) -> Result<Outcome> {
        let real = self.real(path);
        self.resolve(&real);
        let dir = options & 1 != 0;
        if dir && disposition != 1 {
            match std::fs::DirBuilder::new().mode(0o700).create(&real) {
                Err(e) if is_fatal(&e) => return Err(anyhow!("line {}: mkdir {}: {e}", op.line, real.display())),
                _ => {}
            }
        }
        let open_dir = |p: &Path| OpenOptions::new().read(true).custom_flags(libc::O_DIRECTORY).open(p);
        let r = if dir {
            open_dir(&real)
        } else {
            let (create, trunc) = match disposition {
                0 | 4 | 5 => (true, true),
                2 | 3 => (true, false),
                _ => (false, false),
            };
            match OpenOptions::new().read(true).write(true).create(create).truncate(trunc).mode(0o600).open(&real) {
                Err(e) if e.raw_os_error() == Some(libc::EISDIR) => open_dir(&real),
                r => r,
            }
        };
        let file = match outcome(op, "open", r)? {
            Ok(f) => f,
            Err(o) => return Ok(o),
        };
        if op.status.matches(true) {
            self.handles.insert(h, Handle { file });
        }
        Ok(OK)
    }

    fn find(&self, pattern: &SharePath, maxcnt: u32) -> Outcome {
        let real = self.real(pattern);
        let found = self.resolve(&real);
        let last = pattern.last().unwrap_or("");
        if !has_wildcard(last) {
            return if found { OK } else { fail("no such file") };
        }
        let Some(parent) = real.parent() else {
            return fail("no parent directory");
        };
        let Ok(rd) = std::fs::read_dir(parent) else {
            return fail("directory not found");
        };
        let mut matches = [".", ".."].iter().filter(|n| wild_match(last, n)).count() as u64;
        for e in rd.flatten() {
            if matches >= maxcnt.max(1) as u64 {
                break;
            }
            if wild_match_bytes(last.as_bytes(), e.file_name().as_bytes()) {
                matches += 1;
            }
        }
        if matches > 0 {
            OK
        } else {
            fail("no file matches")
        }
    }
}

impl Backend for FsClient {
    fn reset(&mut self) {
        self.handles.clear();
    }

    fn exec(&mut self, op: &Op) -> Result<Outcome> {
        Ok(match &op.kind {
            OpKind::NtCreateX { path, options, disposition, handle } => return self.create(op, path, *options, *disposition, *handle),
            OpKind::Close { handle } => match self.handles.remove(handle) {
                Some(_) => OK,
                None => fail(format!("handle {handle} is not open")),
            },
            OpKind::Rename { old, new } => {
                let (a, b) = (self.real(old), self.real(new));
                self.resolve(&a);
                self.resolve(&b);
                match outcome(op, "rename", std::fs::rename(&a, &b))? {
                    Ok(()) => OK,
                    Err(o) => o,
                }
            }
            OpKind::Unlink { path, .. } => {
                let p = self.real(path);
                self.resolve(&p);
                match outcome(op, "unlink", std::fs::remove_file(&p))? {
                    Ok(()) => OK,
                    Err(o) => o,
                }
            }
            OpKind::Deltree { path } => {
                let p = self.real(path);
                let r = match std::fs::symlink_metadata(&p) {
                    Ok(m) if m.is_dir() => std::fs::remove_dir_all(&p),
                    Ok(_) => std::fs::remove_file(&p),
                    Err(_) => Ok(()),
                };
                // Like dbench, Deltree always succeeds unless the disk fails.
                match outcome(op, "remove tree", r)? {
                    Ok(()) | Err(_) => OK,
                }
            }
            OpKind::Rmdir { path } => {
                let p = self.real(path);
                self.resolve(&p);
                match outcome(op, "rmdir", std::fs::remove_dir(&p))? {
                    Ok(()) => OK,
                    Err(o) => o,
                }
            }
            OpKind::Mkdir { path } => {
                let p = self.real(path);
                self.resolve(&p);
                match std::fs::DirBuilder::new().mode(0o777).create(&p) {
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists && p.is_dir() => OK,
                    r => match outcome(op, "mkdir", r)? {
                        Ok(()) => OK,
                        Err(o) => o,
                    },
                }
            }
            OpKind::QueryPathInfo { path, .. } => {
                if self.resolve(&self.real(path)) {
                    OK
                } else {
                    fail("not found")
                }
            }
            OpKind::QueryFileInfo { handle, .. } => match self.handle(*handle) {
                Ok(h) => match outcome(op, "fstat", h.file.metadata())? {
                    Ok(_) => OK,
                    Err(o) => o,
                },
                Err(o) => o,
            },
            OpKind::QueryFsInfo { .. } => match outcome(op, "statvfs", nix::sys::statvfs::statvfs(&self.base).map_err(io::Error::from))? {
                Ok(_) => OK,
                Err(o) => o,
            },
            OpKind::SetFileInfo { handle, .. } => match self.handle(*handle) {
                Ok(h) => {
                    use std::os::unix::fs::MetadataExt;
                    let m = match outcome(op, "fstat", h.file.metadata())? {
                        Ok(m) => m,
                        Err(o) => return Ok(o),
                    };
                    let at = nix::sys::time::TimeSpec::new(m.atime() - 10, 0);
                    let mt = nix::sys::time::TimeSpec::new(m.mtime() - 12, 0);
                    match outcome(op, "futimens", nix::sys::stat::futimens(h.file.as_raw_fd(), &at, &mt).map_err(io::Error::from))? {
                        Ok(()) => OK,
                        Err(o) => o,
                    }
                }
                Err(o) => o,
            },
            OpKind::FindFirst { pattern, maxcnt, .. } => self.find(pattern, *maxcnt),
            OpKind::WriteX { handle, offset, size, ret_size } => {
                let size = *size as usize;
                if self.zeros.len() < size {
                    self.zeros.resize(size, 0);
                }
                let h = match self.handles.get(handle) {
                    Some(h) => h,
                    None => return Ok(fail(format!("handle {handle} is not open"))),
                };
                match outcome(op, "pwrite", h.file.write_at(&self.zeros[..size], *offset))? {
                    Ok(n) if n == *ret_size as usize => Outcome { ok: true, bytes: size as u64, why: None },
                    Ok(n) => Outcome { ok: false, bytes: size as u64, why: Some(format!("wrote {n} bytes, the trace wrote {ret_size}")) },
                    Err(o) => o,
                }
            }
            OpKind::ReadX { handle, offset, size, ret_size } => {
                let size = *size as usize;
                if self.buf.len() < size {
                    self.buf.resize(size, 0);
                }
                let h = match self.handles.get(handle) {
                    Some(h) => h,
                    None => return Ok(fail(format!("handle {handle} is not open"))),
                };
                match outcome(op, "pread", h.file.read_at(&mut self.buf[..size], *offset))? {
                    Ok(n) if n == *ret_size as usize => Outcome { ok: true, bytes: size as u64, why: None },
                    Ok(n) => Outcome { ok: false, bytes: size as u64, why: Some(format!("read {n} bytes, the trace read {ret_size}")) },
                    Err(o) => o,
                }
            }
            OpKind::LockX { handle, offset, size } | OpKind::UnlockX { handle, offset, size } => {
                let h = match self.handle(*handle) {
                    Ok(h) => h,
                    Err(o) => return Ok(o),
                };
                let lock = matches!(op.kind, OpKind::LockX { .. });
                // SAFETY: flock is a plain C struct; all-zero is a valid value.
                let mut fl: libc::flock = unsafe { std::mem::zeroed() };
                fl.l_type = if lock { libc::F_WRLCK } else { libc::F_UNLCK } as libc::c_short;
                fl.l_whence = libc::SEEK_SET as libc::c_short;
                fl.l_start = *offset as libc::off_t;
                fl.l_len = *size as libc::off_t;
                let r = nix::fcntl::fcntl(h.file.as_raw_fd(), nix::fcntl::FcntlArg::F_SETLK(&fl)).map_err(io::Error::from);
                match outcome(op, if lock { "lock" } else { "unlock" }, r)? {
                    Ok(_) => OK,
                    Err(o) => o,
                }
            }
            OpKind::Flush { handle } => match self.handle(*handle) {
                Ok(h) => match outcome(op, "fsync", h.file.sync_all())? {
                    Ok(()) => OK,
                    Err(o) => o,
                },
                Err(o) => o,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards() {
        assert!(wild_match("*", "anything"));
        assert!(wild_match("*", "."));
        assert!(!wild_match("<.JNK", "."));
        assert!(wild_match("<.JNK", "a.jnk"));
        assert!(wild_match("FILLER.*", "filler.000"));
        assert!(!wild_match("FILLER.*", "filler"));
        assert!(wild_match("a?c", "ABC"));
        assert!(wild_match("x\"y", "x.y"));
        assert!(!wild_match("abc", "abcd"));
    }
}
