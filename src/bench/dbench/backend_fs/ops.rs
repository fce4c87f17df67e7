//! One method of [`FsClient`] per loadfile operation but `NTCreateX` and
//! `FIND_FIRST` (in `mod.rs`): the system calls of the table in `mod.rs`,
//! each returning the operation's outcome. They are `#[inline]` so that
//! [`Backend::exec`](super::super::runner::Backend::exec), the replay's hot
//! path, dispatches to them without an extra call.

use super::*;

/// The parent of a path opened beneath the tree, or return the operation's
/// outcome (a refused link, a missing parent) from the calling method.
macro_rules! at {
    ($client:expr, $op:expr, $p:expr) => {
        match $client.at_or($op, $p)? {
            Ok(a) => a,
            Err(o) => return Ok(o),
        }
    };
}

impl FsClient {
    #[inline]
    pub(super) fn close(&mut self, handle: u32) -> Outcome {
        match self.handles.remove(&handle) {
            Some(_) => OK,
            None => fail(format!("handle {handle} is not open")),
        }
    }

    #[inline]
    pub(super) fn rename(&mut self, op: &Op, old: &SharePath, new: &SharePath) -> Result<Outcome> {
        let mut a = at!(self, op, old);
        a.resolve();
        // One parent opened when both names share it (most renames).
        let same =
            old.relative(self.n).rsplit_once('/').map(|x| x.0) == new.relative(self.n).rsplit_once('/').map(|x| x.0);
        let mut b = if same { None } else { Some(at!(self, op, new)) };
        let (bfd, bname) = match &mut b {
            Some(b) => {
                b.resolve();
                (b.fd(), b.name.clone())
            }
            None => {
                let name = cstr(new.relative(self.n).rsplit('/').next().unwrap_or("."))?;
                resolve_in(a.fd(), &name);
                (a.fd(), name)
            }
        };
        // SAFETY: NUL-terminated names.
        let r = cvt(unsafe { libc::renameat(a.fd(), a.name.as_ptr(), bfd, bname.as_ptr()) });
        self.finish(op, "rename", r)
    }

    #[inline]
    pub(super) fn unlink(&mut self, op: &Op, path: &SharePath) -> Result<Outcome> {
        let mut a = at!(self, op, path);
        a.resolve();
        // SAFETY: a NUL-terminated name.
        let r = cvt(unsafe { libc::unlinkat(a.fd(), a.name.as_ptr(), 0) });
        self.finish(op, "unlink", r)
    }

    /// Like dbench, Deltree always succeeds unless the disk fails.
    #[inline]
    pub(super) fn deltree(&mut self, op: &Op, path: &SharePath) -> Result<Outcome> {
        let a = match self.at(path) {
            Ok(a) => a,
            Err(e) if is_link(&e) => return Ok(self.refuse()),
            Err(_) => return Ok(OK),
        };
        let r = match remove_tree_at(a.fd(), &a.name) {
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(()),
            r => r,
        };
        Ok(match outcome(op, "remove tree", r)? {
            Ok(()) | Err(_) => OK,
        })
    }

    #[inline]
    pub(super) fn rmdir(&mut self, op: &Op, path: &SharePath) -> Result<Outcome> {
        let mut a = at!(self, op, path);
        a.resolve();
        // SAFETY: a NUL-terminated name.
        let r = cvt(unsafe { libc::unlinkat(a.fd(), a.name.as_ptr(), libc::AT_REMOVEDIR) });
        self.finish(op, "rmdir", r)
    }

    /// An existing directory is success.
    #[inline]
    pub(super) fn mkdir(&mut self, op: &Op, path: &SharePath) -> Result<Outcome> {
        let mut a = at!(self, op, path);
        a.resolve();
        // SAFETY: a NUL-terminated name.
        match cvt(unsafe { libc::mkdirat(a.fd(), a.name.as_ptr(), 0o777) }) {
            Err(e)
                if e.raw_os_error() == Some(libc::EEXIST) && lstat_at(a.fd(), &a.name).is_ok_and(|st| is_dir(&st)) =>
            {
                Ok(OK)
            }
            r => self.finish(op, "mkdir", r),
        }
    }

    /// The lookup alone.
    #[inline]
    pub(super) fn query_path_info(&mut self, op: &Op, path: &SharePath) -> Result<Outcome> {
        let mut a = at!(self, op, path);
        Ok(if a.resolve() { OK } else { fail("not found") })
    }

    #[inline]
    pub(super) fn query_file_info(&self, op: &Op, handle: u32) -> Result<Outcome> {
        Ok(match self.handle(handle) {
            Ok(h) => match outcome(op, "fstat", fstat_fd(h.file.as_raw_fd()))? {
                Ok(_) => OK,
                Err(o) => o,
            },
            Err(o) => o,
        })
    }

    #[inline]
    pub(super) fn query_fs_info(&self, op: &Op) -> Result<Outcome> {
        Ok(match outcome(op, "fstatvfs", nix::sys::statvfs::fstatvfs(&self.root).map_err(io::Error::from))? {
            Ok(_) => OK,
            Err(o) => o,
        })
    }

    /// Access time 10 s and modification time 12 s back from the file's own.
    #[inline]
    pub(super) fn set_file_info(&self, op: &Op, handle: u32) -> Result<Outcome> {
        use std::os::unix::fs::MetadataExt;
        let h = match self.handle(handle) {
            Ok(h) => h,
            Err(o) => return Ok(o),
        };
        let m = match outcome(op, "fstat", h.file.metadata())? {
            Ok(m) => m,
            Err(o) => return Ok(o),
        };
        let at = nix::sys::time::TimeSpec::new(m.atime() - 10, 0);
        let mt = nix::sys::time::TimeSpec::new(m.mtime() - 12, 0);
        let r = nix::sys::stat::futimens(h.file.as_raw_fd(), &at, &mt).map_err(io::Error::from);
        Ok(match outcome(op, "futimens", r)? {
            Ok(()) => OK,
            Err(o) => o,
        })
    }

    /// `size` zero bytes at `offset`; the zeros are kept for the next write.
    #[inline]
    pub(super) fn write_x(&mut self, op: &Op, handle: u32, offset: u64, size: u32, ret_size: u32) -> Result<Outcome> {
        let size = size as usize;
        if self.zeros.len() < size {
            self.zeros.resize(size, 0);
        }
        let Some(h) = self.handles.get(&handle) else { return Ok(not_open(handle)) };
        Ok(moved(outcome(op, "pwrite", h.file.write_at(&self.zeros[..size], offset))?, size, ret_size, "wrote"))
    }

    /// `size` bytes at `offset` into a buffer kept for the next read.
    #[inline]
    pub(super) fn read_x(&mut self, op: &Op, handle: u32, offset: u64, size: u32, ret_size: u32) -> Result<Outcome> {
        let size = size as usize;
        if self.buf.len() < size {
            self.buf.resize(size, 0);
        }
        let Some(h) = self.handles.get(&handle) else { return Ok(not_open(handle)) };
        Ok(moved(outcome(op, "pread", h.file.read_at(&mut self.buf[..size], offset))?, size, ret_size, "read"))
    }

    /// A write lock (`lock`) or an unlock of `size` bytes at `offset`, never
    /// waiting (`F_SETLK`).
    #[inline]
    pub(super) fn lock_x(&self, op: &Op, handle: u32, offset: u64, size: u64, lock: bool) -> Result<Outcome> {
        let h = match self.handle(handle) {
            Ok(h) => h,
            Err(o) => return Ok(o),
        };
        // SAFETY: flock is a plain C struct; all-zero is a valid value.
        let mut fl: libc::flock = unsafe { std::mem::zeroed() };
        fl.l_type = if lock { libc::F_WRLCK } else { libc::F_UNLCK } as libc::c_short;
        fl.l_whence = libc::SEEK_SET as libc::c_short;
        fl.l_start = offset as libc::off_t;
        fl.l_len = size as libc::off_t;
        let r = nix::fcntl::fcntl(h.file.as_raw_fd(), nix::fcntl::FcntlArg::F_SETLK(&fl)).map_err(io::Error::from);
        Ok(match outcome(op, if lock { "lock" } else { "unlock" }, r)? {
            Ok(_) => OK,
            Err(o) => o,
        })
    }

    #[inline]
    pub(super) fn flush(&self, op: &Op, handle: u32) -> Result<Outcome> {
        Ok(match self.handle(handle) {
            Ok(h) => match outcome(op, "fsync", h.file.sync_all())? {
                Ok(()) => OK,
                Err(o) => o,
            },
            Err(o) => o,
        })
    }
}

pub(super) fn not_open(handle: u32) -> Outcome {
    fail(format!("handle {handle} is not open"))
}

/// A read or write of `size` bytes that moved `n` (`verb`: "read" or
/// "wrote") where the trace moved `ret_size`.
#[inline]
fn moved(r: std::result::Result<usize, Outcome>, size: usize, ret_size: u32, verb: &str) -> Outcome {
    match r {
        Ok(n) if n == ret_size as usize => Outcome { ok: true, bytes: size as u64, why: None },
        Ok(n) => Outcome {
            ok: false,
            bytes: size as u64,
            why: Some(format!("{verb} {n} bytes, the trace {verb} {ret_size}")),
        },
        Err(o) => o,
    }
}
