//! AIM9's data file tests: `disk_rr`, `disk_rw`, `disk_rd`, `disk_wrt`,
//! `disk_cp`, `sync_disk_rw`, `sync_disk_wrt`, `sync_disk_cp` (the metadata
//! tests are in `meta.rs`).
//!
//! Each call makes the system calls AIM9's function makes (disk1.c), in the
//! same order and sizes; see
//! docs/fidelity.md for the per-test table and strace counts. All files live
//! in the test's work directory (a fresh subdirectory of `--param dir`,
//! removed afterwards by the runner). The common work file (AIM9's
//! `tmpa.common`) is `filesize` bytes of 'a', written once at set-up; the
//! other data tests make, fill and unlink a new temporary file in every call
//! as AIM9 does. Every transfer is 1 KB; the factor is the file size in KB
//! (half of it for the O_SYNC tests, which move half the file). Random
//! offsets are whole 1 KB blocks from a fixed seed.
//!
//! With `sync=true` (a kdelta addition; AIM9 has no such switch) the plain
//! data tests call `fdatasync` before closing a file they wrote, and drop the
//! read file's cached pages (`posix_fadvise DONTNEED`) before reading it.

use super::runner::{Ctx, Work};
use anyhow::{bail, Context, Result};
use rand::{Rng, SeedableRng};
use std::ffi::CString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

const BLOCK: usize = 1024;

pub(super) fn cpath(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes()).context("path with a NUL byte")
}

pub(super) fn last_err(what: &str, p: &Path) -> anyhow::Error {
    anyhow::anyhow!("{what} {}: {}", p.display(), std::io::Error::last_os_error())
}

pub(super) fn os_err(what: &str) -> anyhow::Error {
    anyhow::anyhow!("{what}: {}", std::io::Error::last_os_error())
}

// ---------------------------------------------------------------- raw calls

/// The raw descriptor calls, checked. AIM9 calls them one by one (lseek then
/// read, not pread), so kdelta does too.
pub(super) mod sys {
    use super::os_err;
    use anyhow::{bail, Result};
    use std::ffi::CString;

    pub(crate) fn open(p: &CString, flags: i32) -> Result<i32> {
        // SAFETY: open on a valid C path; the mode is used only with O_CREAT.
        let fd = unsafe { libc::open(p.as_ptr(), flags | libc::O_CLOEXEC, 0o644) };
        if fd < 0 {
            return Err(os_err(&format!("open {p:?}")));
        }
        Ok(fd)
    }
    /// creat(2), as AIM9 calls it (no close-on-exec flag: the descriptor
    /// lives only within one call).
    pub(crate) fn creat(p: &CString) -> Result<i32> {
        // SAFETY: creat on a valid C path.
        let fd = unsafe { libc::creat(p.as_ptr(), 0o644) };
        if fd < 0 {
            return Err(os_err(&format!("creat {p:?}")));
        }
        Ok(fd)
    }
    pub(crate) fn close(fd: i32) {
        // SAFETY: closing a descriptor this module opened, once.
        unsafe { libc::close(fd) };
    }
    pub(crate) fn unlink(p: &CString) -> Result<()> {
        // SAFETY: unlink of a valid C path in our own directory.
        if unsafe { libc::unlink(p.as_ptr()) } != 0 {
            return Err(os_err(&format!("unlink {p:?}")));
        }
        Ok(())
    }
    pub(crate) fn seek(fd: i32, off: u64) -> Result<()> {
        // SAFETY: lseek on our own descriptor.
        if unsafe { libc::lseek(fd, off as libc::off_t, libc::SEEK_SET) } < 0 {
            return Err(os_err("lseek"));
        }
        Ok(())
    }
    pub(crate) fn read(fd: i32, buf: &mut [u8]) -> Result<()> {
        // SAFETY: read into a buffer of buf.len() bytes.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n != buf.len() as isize {
            bail!("read returned {n} of {} bytes: {}", buf.len(), std::io::Error::last_os_error());
        }
        Ok(())
    }
    pub(crate) fn write(fd: i32, buf: &[u8]) -> Result<()> {
        // SAFETY: write from a buffer of buf.len() bytes.
        let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        if n != buf.len() as isize {
            bail!("write returned {n} of {} bytes: {}", buf.len(), std::io::Error::last_os_error());
        }
        Ok(())
    }
    pub(crate) fn datasync(fd: i32) -> Result<()> {
        // SAFETY: fdatasync on our own descriptor.
        if unsafe { libc::fdatasync(fd) } != 0 {
            return Err(os_err("fdatasync"));
        }
        Ok(())
    }
    pub(crate) fn drop_cache(fd: i32) {
        // SAFETY: an advisory call on our own open descriptor.
        unsafe { libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_DONTNEED) };
    }
}

/// Closes the descriptors it holds when dropped (error paths included).
pub(super) struct Fds(pub(super) Vec<i32>);

impl Drop for Fds {
    fn drop(&mut self) {
        for &fd in &self.0 {
            sys::close(fd);
        }
    }
}

// ---------------------------------------------------------------- data tests

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    RandRead,
    RandWrite,
    SeqRead,
    SeqWrite,
    Copy,
    SyncRandWrite,
    SyncSeqWrite,
    SyncCopy,
}

struct Data {
    kind: Kind,
    /// The common work file (AIM9's tmpa.common), filesize bytes.
    common: CString,
    /// The per-call temporary file (AIM9's tmpb.XXXXXXXXXX).
    tmp: CString,
    buf: Vec<u8>,
    rng: rand_chacha::ChaCha8Rng,
    /// Blocks in the file (AIM9's disk_iteration_count).
    blocks: u64,
    sync: bool,
}

impl Data {
    /// Fill `fd` with `n` blocks, 1 KB per write.
    fn fill(&self, fd: i32, n: u64) -> Result<()> {
        for _ in 0..n {
            sys::write(fd, &self.buf)?;
        }
        Ok(())
    }
    /// `n` random block seeks in `0..range`, each followed by one transfer.
    fn random(&mut self, fd: i32, n: u64, range: u64, write: bool) -> Result<()> {
        for _ in 0..n {
            let b = self.rng.gen_range(0..range);
            sys::seek(fd, b * BLOCK as u64)?;
            if write {
                sys::write(fd, &self.buf)?;
            } else {
                sys::read(fd, &mut self.buf)?;
            }
        }
        Ok(())
    }
    /// `n` 1 KB reads from `src`, each written to `dst`.
    fn copy(&mut self, src: i32, dst: i32, n: u64) -> Result<()> {
        for _ in 0..n {
            sys::read(src, &mut self.buf)?;
            sys::write(dst, &self.buf)?;
        }
        Ok(())
    }
    fn datasync(&self, fd: i32) -> Result<()> {
        if self.sync {
            sys::datasync(fd)?;
        }
        Ok(())
    }
    fn drop_cache(&self, fd: i32) {
        if self.sync {
            sys::drop_cache(fd);
        }
    }
}

/// One call of each test, in AIM9's system calls; each returns the blocks
/// it transferred (AIM9's count for the call).
impl Data {
    /// creat, fill, close, reopen, unlink, n x (lseek, 1 KB read or write
    /// at a random block), close.
    #[inline]
    fn rand_rw(&mut self, tmp: &CString, n: u64, write: bool) -> Result<u64> {
        let fd = Fds(vec![sys::creat(tmp)?]);
        self.fill(fd.0[0], n)?;
        self.datasync(fd.0[0])?;
        drop(fd);
        let fd = Fds(vec![sys::open(tmp, if write { libc::O_WRONLY } else { libc::O_RDONLY })?]);
        sys::unlink(tmp)?;
        self.drop_cache(fd.0[0]);
        self.random(fd.0[0], n, n, write)?;
        if write {
            self.datasync(fd.0[0])?;
        }
        Ok(n)
    }
    /// open the common file, lseek 0, n reads, close.
    #[inline]
    fn seq_read(&mut self, n: u64) -> Result<u64> {
        let fd = Fds(vec![sys::open(&self.common, libc::O_RDONLY)?]);
        self.drop_cache(fd.0[0]);
        sys::seek(fd.0[0], 0)?;
        for _ in 0..n {
            sys::read(fd.0[0], &mut self.buf)?;
        }
        Ok(n)
    }
    /// creat, unlink, n writes, close.
    #[inline]
    fn seq_write(&mut self, tmp: &CString, n: u64) -> Result<u64> {
        let fd = Fds(vec![sys::creat(tmp)?]);
        sys::unlink(tmp)?;
        self.fill(fd.0[0], n)?;
        self.datasync(fd.0[0])?;
        Ok(n)
    }
    /// open the common file, creat the copy, unlink it, lseek 0,
    /// n x (read, write), close both.
    #[inline]
    fn copy_file(&mut self, tmp: &CString, n: u64) -> Result<u64> {
        let mut fd = Fds(vec![sys::open(&self.common, libc::O_RDONLY)?]);
        fd.0.push(sys::creat(tmp)?);
        sys::unlink(tmp)?;
        self.drop_cache(fd.0[0]);
        sys::seek(fd.0[0], 0)?;
        self.copy(fd.0[0], fd.0[1], n)?;
        self.datasync(fd.0[1])?;
        Ok(n)
    }
    /// create, fill half the file, close, reopen O_SYNC, n/2 x
    /// (lseek, write) at random blocks of that half, unlink, close.
    #[inline]
    fn sync_rand_write(&mut self, tmp: &CString, half: u64) -> Result<u64> {
        let fd = Fds(vec![sys::creat(tmp)?]);
        self.fill(fd.0[0], half)?;
        drop(fd);
        let fd = Fds(vec![sys::open(tmp, libc::O_WRONLY | libc::O_SYNC)?]);
        let r = self.random(fd.0[0], half, half, true);
        sys::unlink(tmp)?;
        r?;
        Ok(half)
    }
    /// create O_SYNC, n/2 writes, unlink, close.
    #[inline]
    fn sync_seq_write(&mut self, tmp: &CString, half: u64) -> Result<u64> {
        let fd = Fds(vec![sys::open(tmp, libc::O_SYNC | libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC)?]);
        let r = self.fill(fd.0[0], half);
        sys::unlink(tmp)?;
        r?;
        Ok(half)
    }
    /// open the common file, create the copy O_SYNC, lseek 0,
    /// n/2 x (read, write), unlink, close both.
    #[inline]
    fn sync_copy(&mut self, tmp: &CString, half: u64) -> Result<u64> {
        let mut fd = Fds(vec![sys::open(&self.common, libc::O_RDONLY)?]);
        fd.0.push(sys::open(tmp, libc::O_SYNC | libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC)?);
        sys::seek(fd.0[0], 0)?;
        let r = self.copy(fd.0[0], fd.0[1], half);
        sys::unlink(tmp)?;
        r?;
        Ok(half)
    }
}

impl Work for Data {
    fn call(&mut self) -> Result<f64> {
        let (n, half) = (self.blocks, self.blocks / 2);
        let tmp = self.tmp.clone();
        let done = match self.kind {
            Kind::RandRead => self.rand_rw(&tmp, n, false)?,
            Kind::RandWrite => self.rand_rw(&tmp, n, true)?,
            Kind::SeqRead => self.seq_read(n)?,
            Kind::SeqWrite => self.seq_write(&tmp, n)?,
            Kind::Copy => self.copy_file(&tmp, n)?,
            Kind::SyncRandWrite => self.sync_rand_write(&tmp, half)?,
            Kind::SyncSeqWrite => self.sync_seq_write(&tmp, half)?,
            Kind::SyncCopy => self.sync_copy(&tmp, half)?,
        };
        Ok(done as f64)
    }
}

impl Drop for Data {
    fn drop(&mut self) {
        // A call that failed half-way can leave the temporary file.
        // SAFETY: unlink of a valid C path; failure (no file) is ignored.
        unsafe { libc::unlink(self.tmp.as_ptr()) };
    }
}

/// Write the common work file: `blocks` KB of 'a' (as AIM9 builds it).
fn work_file(c: &Ctx, name: &str) -> Result<()> {
    let p = c.dir.join(name);
    // A new file, never through a link (O_CREAT|O_EXCL refuses one), though
    // the work directory is a fresh 0700 one of kdelta's.
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&p)
        .with_context(|| format!("creating {}", p.display()))?;
    let chunk = vec![b'a'; 64 * BLOCK];
    let mut left = c.blocks() as usize * BLOCK;
    while left > 0 {
        let k = left.min(chunk.len());
        f.write_all(&chunk[..k]).with_context(|| format!("writing {}", p.display()))?;
        left -= k;
    }
    f.sync_all().with_context(|| format!("syncing {}", p.display()))?;
    Ok(())
}

fn data(c: &Ctx, kind: Kind) -> Result<Box<dyn Work>> {
    let blocks = c.blocks();
    let osync = matches!(kind, Kind::SyncRandWrite | Kind::SyncSeqWrite | Kind::SyncCopy);
    if (if osync { blocks / 2 } else { blocks }) == 0 {
        bail!("filesize {} B leaves no 1 KB block to move", c.filesize);
    }
    work_file(c, "tmpa.common")?;
    let rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    Ok(Box::new(Data {
        kind,
        common: cpath(&c.dir.join("tmpa.common"))?,
        tmp: cpath(&c.dir.join("tmpb.data"))?,
        buf: vec![b'a'; BLOCK],
        rng,
        blocks,
        sync: c.sync && !osync,
    }))
}

pub(crate) fn disk_rr(c: &Ctx) -> Result<Box<dyn Work>> {
    data(c, Kind::RandRead)
}
pub(crate) fn disk_rw(c: &Ctx) -> Result<Box<dyn Work>> {
    data(c, Kind::RandWrite)
}
pub(crate) fn disk_rd(c: &Ctx) -> Result<Box<dyn Work>> {
    data(c, Kind::SeqRead)
}
pub(crate) fn disk_wrt(c: &Ctx) -> Result<Box<dyn Work>> {
    data(c, Kind::SeqWrite)
}
pub(crate) fn disk_cp(c: &Ctx) -> Result<Box<dyn Work>> {
    data(c, Kind::Copy)
}
pub(crate) fn sync_disk_rw(c: &Ctx) -> Result<Box<dyn Work>> {
    data(c, Kind::SyncRandWrite)
}
pub(crate) fn sync_disk_wrt(c: &Ctx) -> Result<Box<dyn Work>> {
    data(c, Kind::SyncSeqWrite)
}
pub(crate) fn sync_disk_cp(c: &Ctx) -> Result<Box<dyn Work>> {
    data(c, Kind::SyncCopy)
}
