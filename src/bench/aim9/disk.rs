//! AIM9's file tests: `creat-clo`, `link_test`, `disk_rr`, `disk_rw`,
//! `disk_rd`, `disk_wrt`, `disk_cp`, `sync_disk_rw`, `sync_disk_wrt`,
//! `sync_disk_cp`, `disk_src`, `dir_rtns_1`.
//!
//! All files live in the test's work directory (a fresh subdirectory of
//! `--param dir`, removed afterwards by the runner). The work file is
//! `filesize` bytes (5 MB by default, AIM9's stock workfile), written once at
//! set-up. The data tests move 1 KB per system call and count KB, so their
//! factor is the file size in KB (half of it for the O_SYNC tests, which
//! write half the file per call). Random offsets are whole 1 KB blocks from
//! a fixed seed.
//!
//! With `sync=true` the plain data tests (not the sync_* ones, which sync
//! every write already) call `fdatasync` at the end of each call that wrote,
//! and drop the file's cached pages (`posix_fadvise DONTNEED`) before each
//! call that reads, so the figures reach the device.

use super::runner::{Ctx, Work};
use anyhow::{bail, Context, Result};
use rand::{Rng, SeedableRng};
use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

const BLOCK: usize = 1024;

fn cpath(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes()).context("path with a NUL byte")
}

fn last_err(what: &str, p: &Path) -> anyhow::Error {
    anyhow::anyhow!("{what} {}: {}", p.display(), std::io::Error::last_os_error())
}

// ---------------------------------------------------------------- data tests

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    RandRead,
    RandWrite,
    SeqRead,
    SeqWrite,
    Copy,
}

struct Data {
    kind: Kind,
    f: File,
    dst: Option<File>,
    buf: Vec<u8>,
    offsets: Vec<u64>,
    /// 1 KB transfers per call.
    n: usize,
    /// fdatasync / drop cache per call (sync=true on a plain test).
    sync: bool,
    count: usize,
}

fn drop_cache(f: &File) {
    // SAFETY: an advisory call on our own open descriptor.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
}

impl Work for Data {
    fn call(&mut self) -> Result<()> {
        let mut n = 0;
        match self.kind {
            Kind::RandRead => {
                if self.sync {
                    drop_cache(&self.f);
                }
                for &o in &self.offsets[..self.n] {
                    self.f.read_exact_at(&mut self.buf, o * BLOCK as u64)?;
                    n += 1;
                }
            }
            Kind::RandWrite => {
                for &o in &self.offsets[..self.n] {
                    self.f.write_all_at(&self.buf, o * BLOCK as u64)?;
                    n += 1;
                }
            }
            Kind::SeqRead => {
                if self.sync {
                    drop_cache(&self.f);
                }
                self.f.seek(SeekFrom::Start(0))?;
                for _ in 0..self.n {
                    self.f.read_exact(&mut self.buf)?;
                    n += 1;
                }
            }
            Kind::SeqWrite => {
                self.f.seek(SeekFrom::Start(0))?;
                for _ in 0..self.n {
                    self.f.write_all(&self.buf)?;
                    n += 1;
                }
            }
            Kind::Copy => {
                if self.sync {
                    drop_cache(&self.f);
                }
                let dst = self.dst.as_mut().context("copy without a destination")?;
                self.f.seek(SeekFrom::Start(0))?;
                dst.seek(SeekFrom::Start(0))?;
                for _ in 0..self.n {
                    self.f.read_exact(&mut self.buf)?;
                    dst.write_all(&self.buf)?;
                    n += 1;
                }
            }
        }
        if self.sync {
            match self.kind {
                Kind::RandWrite | Kind::SeqWrite => self.f.sync_data()?,
                Kind::Copy => self.dst.as_ref().map(|d| d.sync_data()).transpose().map(|_| ())?,
                _ => {}
            }
        }
        self.count = n;
        Ok(())
    }
    fn done(&self) -> f64 {
        self.count as f64
    }
}

/// Write the work file: `blocks` KB of a byte pattern.
fn work_file(c: &Ctx, name: &str) -> Result<File> {
    let p = c.dir.join(name);
    // A new file, never through a link (O_CREAT|O_EXCL refuses one), though
    // the work directory is a fresh 0700 one of kdelta's.
    let mut f = OpenOptions::new().read(true).write(true).create_new(true).open(&p).with_context(|| format!("creating {}", p.display()))?;
    let chunk: Vec<u8> = (0..64 * BLOCK).map(|i| (i % 251) as u8).collect();
    let mut left = c.blocks() as usize * BLOCK;
    while left > 0 {
        let k = left.min(chunk.len());
        f.write_all(&chunk[..k]).with_context(|| format!("writing {}", p.display()))?;
        left -= k;
    }
    f.sync_all().with_context(|| format!("syncing {}", p.display()))?;
    Ok(f)
}

fn data(c: &Ctx, kind: Kind, osync: bool) -> Result<Box<dyn Work>> {
    let blocks = c.blocks() as usize;
    let n = if osync { blocks / 2 } else { blocks };
    if n == 0 {
        bail!("filesize {} B leaves no 1 KB block to move", c.filesize);
    }
    let sync_flag = if osync { libc::O_SYNC } else { 0 };
    let f = if kind == Kind::RandWrite || kind == Kind::SeqWrite {
        drop(work_file(c, "work")?);
        let p = c.dir.join("work");
        OpenOptions::new().read(true).write(true).custom_flags(sync_flag | libc::O_NOFOLLOW).open(&p).with_context(|| format!("opening {}", p.display()))?
    } else {
        work_file(c, "work")?
    };
    let dst = if kind == Kind::Copy {
        let p = c.dir.join("copy");
        Some(OpenOptions::new().write(true).create_new(true).custom_flags(sync_flag).open(&p).with_context(|| format!("creating {}", p.display()))?)
    } else {
        None
    };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let offsets = (0..blocks).map(|_| rng.gen_range(0..blocks as u64)).collect();
    Ok(Box::new(Data { kind, f, dst, buf: vec![0x5a; BLOCK], offsets, n, sync: c.sync && !osync, count: 0 }))
}

pub fn disk_rr(c: &Ctx) -> Result<Box<dyn Work>> {
    data(c, Kind::RandRead, false)
}
pub fn disk_rw(c: &Ctx) -> Result<Box<dyn Work>> {
    data(c, Kind::RandWrite, false)
}
pub fn disk_rd(c: &Ctx) -> Result<Box<dyn Work>> {
    data(c, Kind::SeqRead, false)
}
pub fn disk_wrt(c: &Ctx) -> Result<Box<dyn Work>> {
    data(c, Kind::SeqWrite, false)
}
pub fn disk_cp(c: &Ctx) -> Result<Box<dyn Work>> {
    data(c, Kind::Copy, false)
}
pub fn sync_disk_rw(c: &Ctx) -> Result<Box<dyn Work>> {
    data(c, Kind::RandWrite, true)
}
pub fn sync_disk_wrt(c: &Ctx) -> Result<Box<dyn Work>> {
    data(c, Kind::SeqWrite, true)
}
pub fn sync_disk_cp(c: &Ctx) -> Result<Box<dyn Work>> {
    data(c, Kind::Copy, true)
}

// ---------------------------------------------------------------- creat-clo, link_test

/// creat + close pairs per call.
pub const CREATS: usize = 1000;
/// link + unlink pairs per call.
pub const LINKS: usize = 100;

struct Creat {
    path: CString,
    count: usize,
}

impl Work for Creat {
    fn call(&mut self) -> Result<()> {
        let mut n = 0;
        for _ in 0..CREATS {
            // SAFETY: creat on a valid C path; the descriptor is closed at once.
            let fd = unsafe { libc::creat(self.path.as_ptr(), 0o644) };
            if fd < 0 {
                bail!("creat: {}", std::io::Error::last_os_error());
            }
            // SAFETY: closing the descriptor just opened.
            unsafe { libc::close(fd) };
            n += 1;
        }
        self.count = n;
        Ok(())
    }
    fn done(&self) -> f64 {
        self.count as f64
    }
}

pub fn creat_clo(c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Creat { path: cpath(&c.dir.join("creat"))?, count: 0 }))
}

struct Link {
    from: CString,
    to: CString,
    count: usize,
}

impl Work for Link {
    fn call(&mut self) -> Result<()> {
        let mut n = 0;
        for _ in 0..LINKS {
            // SAFETY: link/unlink on valid C paths in our own directory.
            unsafe {
                if libc::link(self.from.as_ptr(), self.to.as_ptr()) != 0 {
                    bail!("link: {}", std::io::Error::last_os_error());
                }
                if libc::unlink(self.to.as_ptr()) != 0 {
                    bail!("unlink: {}", std::io::Error::last_os_error());
                }
            }
            n += 1;
        }
        self.count = n;
        Ok(())
    }
    fn done(&self) -> f64 {
        self.count as f64
    }
}

pub fn link_test(c: &Ctx) -> Result<Box<dyn Work>> {
    let from = c.dir.join("link-from");
    File::create(&from).with_context(|| format!("creating {}", from.display()))?;
    Ok(Box::new(Link { from: cpath(&from)?, to: cpath(&c.dir.join("link-to"))?, count: 0 }))
}

// ---------------------------------------------------------------- disk_src

const TREE: usize = 10;
const STATS: usize = 20;
const NEWS: usize = 5;
/// Directory searches per call: 20 stats + 5 creates of new names.
pub const SEARCHES: usize = STATS + NEWS;

struct Src {
    existing: Vec<CString>,
    new: Vec<CString>,
    count: usize,
}

impl Work for Src {
    fn call(&mut self) -> Result<()> {
        let mut n = 0;
        // SAFETY: zeroed stat is a valid out-buffer; all paths are valid C
        // strings inside our work directory; descriptors closed at once.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            for p in &self.existing {
                if libc::stat(p.as_ptr(), &mut st) != 0 {
                    bail!("stat {:?}: {}", p, std::io::Error::last_os_error());
                }
                n += 1;
            }
            for p in &self.new {
                let fd = libc::open(p.as_ptr(), libc::O_CREAT | libc::O_EXCL | libc::O_WRONLY | libc::O_CLOEXEC, 0o644);
                if fd < 0 {
                    bail!("create {:?}: {}", p, std::io::Error::last_os_error());
                }
                libc::close(fd);
                if libc::unlink(p.as_ptr()) != 0 {
                    bail!("unlink {:?}: {}", p, std::io::Error::last_os_error());
                }
                n += 1;
            }
        }
        self.count = n;
        Ok(())
    }
    fn done(&self) -> f64 {
        self.count as f64
    }
}

pub fn disk_src(c: &Ctx) -> Result<Box<dyn Work>> {
    let root = c.dir.join("tree");
    for d in 0..TREE {
        let dd = root.join(format!("d{d}"));
        std::fs::create_dir_all(&dd).with_context(|| format!("creating {}", dd.display()))?;
        for f in 0..TREE {
            let p = dd.join(format!("f{f}"));
            File::create(&p).with_context(|| format!("creating {}", p.display()))?;
        }
    }
    let existing = (0..STATS).map(|i| {
        let x = (i * 37 + 11) % (TREE * TREE);
        cpath(&root.join(format!("d{}/f{}", x / TREE, x % TREE)))
    });
    let new = (0..NEWS).map(|i| cpath(&root.join(format!("d{}/new{i}", (i * 3) % TREE))));
    Ok(Box::new(Src { existing: existing.collect::<Result<_>>()?, new: new.collect::<Result<_>>()?, count: 0 }))
}

// ---------------------------------------------------------------- dir_rtns_1

const DIR_FILES: usize = 100;
/// readdir results per call: the files plus `.` and `..`.
pub const DIR_ENTRIES: usize = DIR_FILES + 2;

struct Dir {
    dir: *mut libc::DIR,
    count: usize,
}

impl Work for Dir {
    fn call(&mut self) -> Result<()> {
        let mut n = 0;
        // SAFETY: dir is an open DIR stream owned by us.
        unsafe {
            while !libc::readdir(self.dir).is_null() {
                n += 1;
            }
            libc::rewinddir(self.dir);
        }
        if n != DIR_ENTRIES {
            bail!("readdir returned {n} entries, expected {DIR_ENTRIES}");
        }
        self.count = n;
        Ok(())
    }
    fn done(&self) -> f64 {
        self.count as f64
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        // SAFETY: closing the stream we opened, once.
        unsafe { libc::closedir(self.dir) };
    }
}

pub fn dir_rtns_1(c: &Ctx) -> Result<Box<dyn Work>> {
    let d = c.dir.join("dir");
    std::fs::create_dir(&d).with_context(|| format!("creating {}", d.display()))?;
    for i in 0..DIR_FILES {
        let p = d.join(format!("entry{i:03}"));
        File::create(&p).with_context(|| format!("creating {}", p.display()))?;
    }
    let cp = cpath(&d)?;
    // SAFETY: opendir on a valid C path; null is checked.
    let dir = unsafe { libc::opendir(cp.as_ptr()) };
    if dir.is_null() {
        return Err(last_err("opendir", &d));
    }
    Ok(Box::new(Dir { dir, count: 0 }))
}
