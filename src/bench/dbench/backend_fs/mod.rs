//! dbench's file backend: replay loadfile operations on a local filesystem.
//!
//! Client N works in `BASE/clients/clientN` (see [`super::loadfile`] for the
//! path mapping). Every operation does what dbench 4's `fileio.c` does, with
//! the differences marked *kdelta*:
//!
//! | operation | system calls |
//! |---|---|
//! | name lookup (before every path operation) | `stat`; when that fails, read the parent directory comparing names without ASCII case, as dbench's `strcasecmp` (dbench's `resolve_name`, which imitates Samba's case-insensitive lookup) |
//! | `NTCreateX` | directory option (0x1): `mkdir 0700` then `open O_RDONLY\|O_DIRECTORY` (*kdelta*: no `mkdir` for disposition 1, open-only). Otherwise `open O_RDWR`, plus `O_CREAT` for dispositions 2 (create) and 3 (open-if, *kdelta*: dbench omits it), `O_CREAT\|O_TRUNC` for 0 (supersede, *kdelta*), 4 and 5; `EISDIR` retries as a directory. The handle is kept only when success was expected, as dbench does, and then `fstat`ed as dbench does |
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
//! dbench against 2.53, 3.02, 2.27 for kdelta (before confinement, below);
//! one `fsync` per `Flush`, one `statfs` per `QUERY_FS_INFORMATION`, one
//! `utimensat` per `SET_FILE_INFORMATION` in both.
//!
//! **Confinement** (*kdelta*; dbench uses path names and follows links). The
//! tree is made with an unpredictable name (mkdtemp(3), mode 0700) and every
//! name is resolved relative to a directory descriptor held for it, never
//! through a symbolic link: each path operation first opens the name's
//! parent directory with openat2(2) `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`
//! (or, on a kernel without openat2, one `openat O_NOFOLLOW` per component),
//! then does its work on the last component relative to that descriptor:
//! lookup `fstatat(AT_SYMLINK_NOFOLLOW)` and `getdents64` on the same
//! descriptor (dbench opens the parent again for its scan); `NTCreateX`
//! `mkdirat` and `openat(O_NOFOLLOW)`; `Rename` `renameat` (one parent opened
//! when both names share it); `Unlink` `unlinkat`; `Rmdir` `unlinkat
//! AT_REMOVEDIR`; `Mkdir` `mkdirat`; `Deltree` `openat(O_DIRECTORY |
//! O_NOFOLLOW)`, `getdents64` and `unlinkat` down the tree (a link in it is
//! removed, never entered); `FIND_FIRST` `getdents64` on the parent's
//! descriptor; `QUERY_FS_INFORMATION` `fstatvfs` of the tree's descriptor.
//! So a path operation costs one `openat2` and one `close` more than
//! dbench's (measured: per `NTCreateX` of the generated loadfile, 2.45
//! `openat2`, 1.18 `openat`, 3.05 `getdents64`, 3.32 `close`). A link met on the way (`ELOOP`, `EXDEV`), planted by someone
//! who can write in the tree, makes the operation fail, which the loadfile's
//! expected status judges, and is counted (`refused_links`).
//!
//! Bytes counted for the throughput, as dbench: `size` of every `ReadX` and
//! `WriteX` that the kernel accepted.
//!
//! The outcome (success or failure) is compared with the expected status by
//! the caller. No space, quota, I/O, read-only filesystem, out of memory or
//! out of file descriptors are not outcomes but errors that end the run.

mod at;
mod ops;

use super::loadfile::{Op, OpKind, SharePath};
use super::runner::{Backend, Outcome};
use anyhow::{anyhow, Context, Result};
use at::*;
use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

struct Handle {
    file: File,
}

/// One client's view of the filesystem.
pub(crate) struct FsClient {
    n: usize,
    /// The tree's root (`BASE`), every name resolved beneath it.
    root: OwnedFd,
    handles: HashMap<u32, Handle>,
    zeros: Vec<u8>,
    buf: Vec<u8>,
    /// Operations refused because a symbolic link was in the way.
    refused: u64,
}

/// Errors that end the run instead of being an operation's outcome.
fn is_fatal(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOSPC | libc::EDQUOT | libc::EIO | libc::EROFS | libc::ENOMEM | libc::EMFILE | libc::ENFILE)
    )
}

/// A symbolic link (or an escape) in the way: `RESOLVE_NO_SYMLINKS` and
/// `O_NOFOLLOW` say `ELOOP`, `RESOLVE_BENEATH` `EXDEV`.
fn is_link(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ELOOP | libc::EXDEV))
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

impl FsClient {
    /// Client `n` (1-based) under `base` (which holds `clients/`).
    pub(crate) fn new(n: usize, base: &Path) -> Result<FsClient> {
        let root = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(base)
            .with_context(|| format!("opening the dbench tree {}", base.display()))?;
        Ok(FsClient { n, root: root.into(), handles: HashMap::new(), zeros: Vec::new(), buf: Vec::new(), refused: 0 })
    }

    /// The parent of `p`, open beneath the tree, and its last component.
    fn at(&self, p: &SharePath) -> io::Result<At> {
        let rel = p.relative(self.n);
        let (parent, name) = match rel.rsplit_once('/') {
            Some((d, n)) => (d, n),
            None if rel.is_empty() => ("", "."),
            None => ("", rel.as_str()),
        };
        let fd = open_beneath(self.root.as_fd(), parent, libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
        Ok(At { dir: fd, name: cstr(name)? })
    }

    /// [`Self::at`] as an outcome: a link in the way is refused and counted;
    /// `missing` is the outcome when the parent does not exist.
    fn at_or(&mut self, op: &Op, p: &SharePath) -> Result<std::result::Result<At, Outcome>> {
        match self.at(p) {
            Ok(a) => Ok(Ok(a)),
            Err(e) if is_link(&e) => Ok(Err(self.refuse())),
            Err(e) => outcome(op, "open the parent directory", Err(e)),
        }
    }

    fn refuse(&mut self) -> Outcome {
        self.refused += 1;
        fail("refused: a symbolic link in the path (kdelta follows none in its tree)")
    }

    /// An outcome from a call on the last component; a link there is refused.
    fn finish<T>(&mut self, op: &Op, what: &str, r: io::Result<T>) -> Result<Outcome> {
        match r {
            Err(e) if is_link(&e) => Ok(self.refuse()),
            r => Ok(match outcome(op, what, r)? {
                Ok(_) => OK,
                Err(o) => o,
            }),
        }
    }

    fn handle(&self, h: u32) -> std::result::Result<&Handle, Outcome> {
        self.handles.get(&h).ok_or_else(|| ops::not_open(h))
    }

    fn create(&mut self, op: &Op, path: &SharePath, options: u32, disposition: u32, h: u32) -> Result<Outcome> {
        let mut at = match self.at_or(op, path)? {
            Ok(a) => a,
            Err(o) => return Ok(o),
        };
        at.resolve();
        let dir = options & 1 != 0;
        if dir && disposition != 1 {
            // SAFETY: a NUL-terminated name.
            let r = cvt(unsafe { libc::mkdirat(at.fd(), at.name.as_ptr(), 0o700) });
            match r {
                Err(e) if is_fatal(&e) => {
                    return Err(anyhow!("line {}: mkdir {}: {e}", op.line, path.relative(self.n)))
                }
                _ => {}
            }
        }
        let open = |flags: libc::c_int| -> io::Result<File> {
            openat_nofollow(at.fd(), &at.name, flags, 0o600).map(File::from)
        };
        let open_dir = || open(libc::O_RDONLY | libc::O_DIRECTORY);
        let r = if dir {
            open_dir()
        } else {
            let extra = match disposition {
                0 | 4 | 5 => libc::O_CREAT | libc::O_TRUNC,
                2 | 3 => libc::O_CREAT,
                _ => 0,
            };
            match open(libc::O_RDWR | extra) {
                Err(e) if e.raw_os_error() == Some(libc::EISDIR) => open_dir(),
                r => r,
            }
        };
        let file = match r {
            Err(e) if is_link(&e) => return Ok(self.refuse()),
            r => match outcome(op, "open", r)? {
                Ok(f) => f,
                Err(o) => return Ok(o),
            },
        };
        if op.status.matches(true) {
            // dbench's nb_createx stats every handle it keeps (to choose its
            // xattr hook); the same call, its result unused here too.
            let _ = fstat_fd(file.as_raw_fd());
            self.handles.insert(h, Handle { file });
        }
        Ok(OK)
    }

    fn find(&mut self, op: &Op, pattern: &SharePath, maxcnt: u32) -> Result<Outcome> {
        let mut at = match self.at_or(op, pattern)? {
            Ok(a) => a,
            // A missing directory is "not found", as dbench's opendir failing.
            Err(o) => return Ok(o),
        };
        let found = at.resolve();
        let last = pattern.last().unwrap_or("");
        if !has_wildcard(last) {
            return Ok(if found { OK } else { fail("no such file") });
        }
        let mut matches = [".", ".."].iter().filter(|n| wild_match(last, n)).count() as u64;
        // The lookup may have read the directory: from its start again
        // (dbench opens it again).
        // SAFETY: lseek on a descriptor we hold.
        unsafe { libc::lseek(at.fd(), 0, libc::SEEK_SET) };
        let max = maxcnt.max(1) as u64;
        if matches < max {
            scan(at.fd(), |name| {
                if wild_match_bytes(last.as_bytes(), name) {
                    matches += 1;
                }
                matches >= max
            });
        }
        Ok(if matches > 0 { OK } else { fail("no file matches") })
    }
}

impl Backend for FsClient {
    fn reset(&mut self) {
        self.handles.clear();
    }

    fn refused(&self) -> u64 {
        self.refused
    }

    fn exec(&mut self, op: &Op) -> Result<Outcome> {
        match &op.kind {
            OpKind::NtCreateX { path, options, disposition, handle } => {
                self.create(op, path, *options, *disposition, *handle)
            }
            OpKind::Close { handle } => Ok(self.close(*handle)),
            OpKind::Rename { old, new } => self.rename(op, old, new),
            OpKind::Unlink { path, .. } => self.unlink(op, path),
            OpKind::Deltree { path } => self.deltree(op, path),
            OpKind::Rmdir { path } => self.rmdir(op, path),
            OpKind::Mkdir { path } => self.mkdir(op, path),
            OpKind::QueryPathInfo { path, .. } => self.query_path_info(op, path),
            OpKind::QueryFileInfo { handle, .. } => self.query_file_info(op, *handle),
            OpKind::QueryFsInfo { .. } => self.query_fs_info(op),
            OpKind::SetFileInfo { handle, .. } => self.set_file_info(op, *handle),
            OpKind::FindFirst { pattern, maxcnt, .. } => self.find(op, pattern, *maxcnt),
            OpKind::WriteX { handle, offset, size, ret_size } => self.write_x(op, *handle, *offset, *size, *ret_size),
            OpKind::ReadX { handle, offset, size, ret_size } => self.read_x(op, *handle, *offset, *size, *ret_size),
            OpKind::LockX { handle, offset, size } => self.lock_x(op, *handle, *offset, *size, true),
            OpKind::UnlockX { handle, offset, size } => self.lock_x(op, *handle, *offset, *size, false),
            OpKind::Flush { handle } => self.flush(op, *handle),
        }
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

    /// Scans share one buffer per thread: each still reads its own
    /// directory from its descriptor's offset, and a name one directory
    /// has is not found in the next.
    #[test]
    fn scans_reuse_the_buffer() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        for i in 0..300 {
            std::fs::write(a.path().join(format!("file-with-a-long-name-{i:04}")), b"").unwrap();
        }
        std::fs::write(b.path().join("Only-In-B"), b"").unwrap();
        let fa = File::open(a.path()).unwrap();
        let fb = File::open(b.path()).unwrap();
        let mut n = 0;
        assert!(!scan(fa.as_raw_fd(), |_| {
            n += 1;
            false
        }));
        assert_eq!(n, 300);
        assert!(scan(fb.as_raw_fd(), |name| name.eq_ignore_ascii_case(b"only-in-b")));
        let fb2 = File::open(b.path()).unwrap();
        assert!(!scan(fb2.as_raw_fd(), |name| name.starts_with(b"file-with")));
        // A scan reads from the descriptor's offset: a fresh one for the lookup.
        let fb3 = File::open(b.path()).unwrap();
        assert!(resolve_in(fb3.as_raw_fd(), &cstr("ONLY-IN-B").unwrap()));
        let fa2 = File::open(a.path()).unwrap();
        assert!(!resolve_in(fa2.as_raw_fd(), &cstr("Only-In-B").unwrap()));
    }
}

#[cfg(test)]
mod confinement_tests {
    use super::*;

    /// The walk used where the kernel lacks openat2 refuses the same things.
    #[test]
    fn the_component_walk_follows_no_link() {
        let dir = tempfile::tempdir().unwrap();
        let victim = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::os::unix::fs::symlink(victim.path(), dir.path().join("a/link")).unwrap();
        std::os::unix::fs::symlink(victim.path().join("f"), dir.path().join("a/b/f")).unwrap();
        let root: OwnedFd = File::open(dir.path()).unwrap().into();
        let ro = libc::O_RDONLY | libc::O_DIRECTORY;
        let create = libc::O_RDWR | libc::O_CREAT;
        for open in [open_beneath, open_walk] {
            assert!(open(root.as_fd(), "a/b", ro, 0).is_ok());
            assert!(open(root.as_fd(), "", ro, 0).is_ok());
            assert!(open(root.as_fd(), "a/b/new", create, 0o600).is_ok());
            for (rel, flags) in [("a/link", ro), ("a/link/x", create), ("a/b/f", create), ("a/../..", ro)] {
                let e = open(root.as_fd(), rel, flags, 0o600).unwrap_err();
                assert!(is_link(&e), "{rel}: {e}");
            }
        }
        assert_eq!(std::fs::read_dir(victim.path()).unwrap().count(), 0);
    }
}
