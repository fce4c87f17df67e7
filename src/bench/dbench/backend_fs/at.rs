//! Names resolved beneath a held directory descriptor, never through a
//! symbolic link (openat2(2) `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`, or an
//! `O_NOFOLLOW` walk), the `*at` calls the backend makes on them, directory
//! scans and dbench's wildcard match.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

pub(super) fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

pub(super) fn cstr(s: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// Open `rel` (a relative name without `..`, `""` for `at` itself) beneath
/// `at`, following no symbolic link on the way or at the end: openat2(2)
/// with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`, or where the kernel lacks it
/// one `openat(O_NOFOLLOW)` per component. `mode` only with `O_CREAT`.
pub(super) fn open_beneath(at: BorrowedFd, rel: &str, flags: libc::c_int, mode: libc::mode_t) -> io::Result<OwnedFd> {
    let rel = if rel.is_empty() { "." } else { rel };
    let name = cstr(rel)?;
    let flags = flags | libc::O_CLOEXEC;
    // SAFETY: open_how is plain data; all-zero is valid (and what the kernel
    // wants in fields kdelta does not set).
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = flags as u64;
    how.mode = if flags & libc::O_CREAT != 0 { mode as u64 } else { 0 };
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS;
    // SAFETY: the pointers are to a NUL-terminated name and an open_how of
    // the size given, both alive for the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            at.as_raw_fd(),
            name.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if r >= 0 {
        // SAFETY: a new descriptor, owned by nobody else.
        return Ok(unsafe { OwnedFd::from_raw_fd(r as RawFd) });
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() != Some(libc::ENOSYS) {
        return Err(e);
    }
    open_walk(at, rel, flags, mode)
}

/// [`open_beneath`] without openat2: component by component, `O_NOFOLLOW`.
pub(super) fn open_walk(at: BorrowedFd, rel: &str, flags: libc::c_int, mode: libc::mode_t) -> io::Result<OwnedFd> {
    let parts: Vec<&str> = rel.split('/').filter(|c| !c.is_empty() && *c != ".").collect();
    if parts.contains(&"..") {
        return Err(io::Error::from_raw_os_error(libc::EXDEV));
    }
    let open = |dir: RawFd, name: &str, fl: libc::c_int| openat_nofollow(dir, &cstr(name)?, fl, mode);
    let Some((last, dirs)) = parts.split_last() else {
        return open(at.as_raw_fd(), ".", flags);
    };
    let mut cur: Option<OwnedFd> = None;
    for d in dirs {
        let fd = cur.as_ref().map(|f| f.as_raw_fd()).unwrap_or(at.as_raw_fd());
        cur = Some(open(fd, d, libc::O_PATH | libc::O_DIRECTORY)?);
    }
    open(cur.as_ref().map(|f| f.as_raw_fd()).unwrap_or(at.as_raw_fd()), last, flags)
}

/// `openat(dir, name, flags | O_NOFOLLOW)`. A link there fails with `ELOOP`,
/// or with `O_DIRECTORY` (and `O_PATH`) with `ENOTDIR`, which is then told
/// apart from a plain file by `fstatat` and reported as `ELOOP` too.
pub(super) fn openat_nofollow(dir: RawFd, name: &CStr, flags: libc::c_int, mode: libc::mode_t) -> io::Result<OwnedFd> {
    // SAFETY: a NUL-terminated name; the result is a new descriptor.
    match cvt(unsafe {
        libc::openat(dir, name.as_ptr(), flags | libc::O_NOFOLLOW | libc::O_CLOEXEC, mode as libc::c_uint)
    }) {
        // SAFETY: owned by nobody else.
        Ok(fd) => Ok(unsafe { OwnedFd::from_raw_fd(fd) }),
        Err(e)
            if e.raw_os_error() == Some(libc::ENOTDIR)
                && lstat_at(dir, name).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFLNK) =>
        {
            Err(io::Error::from_raw_os_error(libc::ELOOP))
        }
        Err(e) => Err(e),
    }
}

/// `fstat(fd)` through the C library, as dbench calls it (glibc makes it
/// `newfstatat(fd, "", AT_EMPTY_PATH)`; std's `File::metadata` would make a
/// `statx`, a different call).
pub(super) fn fstat_fd(fd: RawFd) -> io::Result<libc::stat> {
    // SAFETY: stat is plain data, filled by the call.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a descriptor and a stat to fill.
    cvt(unsafe { libc::fstat(fd, &mut st) })?;
    Ok(st)
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: the entry itself, never what a link names.
pub(super) fn lstat_at(dir: RawFd, name: &CStr) -> io::Result<libc::stat> {
    // SAFETY: stat is plain data, filled by the call.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated name and a stat to fill.
    cvt(unsafe { libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) })?;
    Ok(st)
}

pub(super) fn is_dir(st: &libc::stat) -> bool {
    st.st_mode & libc::S_IFMT == libc::S_IFDIR
}

/// Remove `name` in `dir` and, if it is a directory (not a link to one),
/// everything under it first, entering nothing through a link.
pub(super) fn remove_tree_at(dir: RawFd, name: &CStr) -> io::Result<()> {
    let st = lstat_at(dir, name)?;
    if !is_dir(&st) {
        // SAFETY: a NUL-terminated name.
        return cvt(unsafe { libc::unlinkat(dir, name.as_ptr(), 0) }).map(drop);
    }
    {
        // SAFETY: a NUL-terminated name; the result is a new descriptor.
        let fd = cvt(unsafe {
            libc::openat(dir, name.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        })?;
        let mut d = nix::dir::Dir::from_fd(fd).map_err(io::Error::from)?;
        let names: Vec<CString> = d
            .iter()
            .flatten()
            .map(|e| e.file_name().to_owned())
            .filter(|n| n.as_bytes() != b"." && n.as_bytes() != b"..")
            .collect();
        let sub = d.as_raw_fd();
        for n in names {
            remove_tree_at(sub, &n)?;
        }
    }
    // SAFETY: a NUL-terminated name.
    cvt(unsafe { libc::unlinkat(dir, name.as_ptr(), libc::AT_REMOVEDIR) }).map(drop)
}

/// A name's parent directory, open beneath the tree, and its last component.
pub(super) struct At {
    pub(super) dir: OwnedFd,
    pub(super) name: CString,
}

impl At {
    pub(super) fn fd(&self) -> RawFd {
        self.dir.as_raw_fd()
    }
    /// dbench's `resolve_name` for the last component.
    pub(super) fn resolve(&mut self) -> bool {
        resolve_in(self.fd(), &self.name)
    }
}

/// dbench's `resolve_name`: `stat`, else a case-insensitive scan of the
/// directory. True when the name exists (either way).
pub(super) fn resolve_in(dir: RawFd, name: &CStr) -> bool {
    if lstat_at(dir, name).is_ok() {
        return true;
    }
    // strcasecmp as dbench: ASCII case folding, no allocation per entry.
    let want = name.to_bytes();
    scan(dir, |n| n.eq_ignore_ascii_case(want))
}

/// Read directory `dir` from its offset (0 for a fresh descriptor) with
/// getdents64(2) on the descriptor itself (no `fdopendir`, whose `fcntl` and
/// `fstat` dbench's scans do not make either), calling `hit` with every name
/// but `.` and `..` until it returns true. True if it did.
pub(super) fn scan(dir: RawFd, hit: impl FnMut(&[u8]) -> bool) -> bool {
    thread_local! {
        /// The getdents64 buffer, made once per client: a fresh zeroed 32 KiB
        /// for every scan cost a `memset` per lookup miss and `FIND_FIRST`
        /// (about 2% of a CPU-bound run's samples), work dbench does not do
        /// (its `opendir` buffer is not cleared).
        static BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0u8; 32 << 10]);
    }
    BUF.with_borrow_mut(|buf| scan_with(dir, buf, hit))
}

fn scan_with(dir: RawFd, buf: &mut [u8], mut hit: impl FnMut(&[u8]) -> bool) -> bool {
    loop {
        // SAFETY: the kernel writes at most buf.len() bytes into buf.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len()) };
        if n <= 0 {
            return false;
        }
        let mut off = 0usize;
        while off < n as usize {
            // struct linux_dirent64: u64 d_ino, i64 d_off, u16 d_reclen, u8 d_type, char d_name[].
            let reclen = u16::from_ne_bytes([buf[off + 16], buf[off + 17]]) as usize;
            let raw = &buf[off + 19..off + reclen];
            let name = &raw[..raw.iter().position(|&b| b == 0).unwrap_or(raw.len())];
            if name != b"." && name != b".." && hit(name) {
                return true;
            }
            off += reclen;
        }
    }
}

/// DOS-style wildcard match without case: `*` and `<` any run, `?` and `>`
/// one character, `"` a dot.
pub(super) fn wild_match(pat: &str, name: &str) -> bool {
    wild_match_bytes(pat.as_bytes(), name.as_bytes())
}

/// [`wild_match`] on raw names, folding ASCII case only (as dbench's
/// `strcasecmp`), without allocating: it runs for every directory entry of
/// every `FIND_FIRST`, so its cost shows in a CPU-bound run.
pub(super) fn wild_match_bytes(p: &[u8], n: &[u8]) -> bool {
    // Iterative matcher with one backtrack point (classic glob).
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == b'*' || p[pi] == b'<') {
            star = Some((pi, ni));
            pi += 1;
        } else if pi < p.len()
            && (p[pi] == b'?'
                || p[pi] == b'>'
                || p[pi].eq_ignore_ascii_case(&n[ni])
                || (p[pi] == b'"' && n[ni] == b'.'))
        {
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

pub(super) fn has_wildcard(s: &str) -> bool {
    s.contains(['*', '?', '<', '>', '"'])
}
