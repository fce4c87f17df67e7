//! AIM9's file metadata tests: `creat-clo`, `link_test` (creat-clo.c),
//! `disk_src` (disk_src.c) and `dir_rtns_1` (num_fcns.c).
//!
//! Each call makes the system calls AIM9's function makes, in the same
//! order; see docs/fidelity.md for the per-test table and strace counts.
//! All files live in the test's work directory (a fresh subdirectory of
//! `--param dir`, removed afterwards by the runner), except that dir_rtns_1
//! reads /bin as AIM9 does.

use super::disk::{cpath, last_err, os_err, sys, Fds};
use super::runner::{Ctx, Work};
use anyhow::{bail, Context, Result};
use rand::{Rng, SeedableRng};
use std::ffi::CString;
use std::fs::File;
use std::path::Path;

// ---------------------------------------------------------------- creat-clo, link_test

/// creat + close pairs per call.
pub(crate) const CREATS: usize = 1000;
/// Names in link_test: one file and 7 links to it (POSIX's smallest LINK_MAX is 8).
const LINK_NAMES: usize = 8;
/// Rounds of unlinking and relinking the 7 links.
const LINK_LOOP: usize = 9;
/// unlink + link pairs per call: 9 rounds x 7 links = 63.
pub(crate) const LINKS: usize = LINK_LOOP * (LINK_NAMES - 1);

struct Creat {
    path: CString,
}

impl Work for Creat {
    /// creat the same new file 1000 times (the first creates it, the rest
    /// truncate it), closing each descriptor, then unlink it.
    fn call(&mut self) -> Result<f64> {
        let mut n = 0;
        for _ in 0..CREATS {
            let fd = sys::creat(&self.path)?;
            sys::close(fd);
            n += 1;
        }
        sys::unlink(&self.path)?;
        Ok(n as f64)
    }
}

pub(crate) fn creat_clo(c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Creat { path: cpath(&c.dir.join("tmpb.creat"))? }))
}

struct Link {
    names: Vec<CString>,
}

impl Work for Link {
    /// creat a file, link 7 names to it, 9 rounds of (unlink, link) over the
    /// 7 names, unlink all 8, close.
    fn call(&mut self) -> Result<f64> {
        let link = |to: &CString| -> Result<()> {
            // SAFETY: link between valid C paths in our own directory.
            if unsafe { libc::link(self.names[0].as_ptr(), to.as_ptr()) } != 0 {
                return Err(os_err(&format!("link {to:?}")));
            }
            Ok(())
        };
        let fd = Fds(vec![sys::creat(&self.names[0])?]);
        let mut n = 0;
        for to in &self.names[1..] {
            link(to)?;
        }
        for _ in 0..LINK_LOOP {
            for to in &self.names[1..] {
                sys::unlink(to)?;
                link(to)?;
                n += 1;
            }
        }
        for p in &self.names {
            sys::unlink(p)?;
        }
        drop(fd);
        Ok(n as f64)
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        for p in &self.names {
            // SAFETY: unlink of a valid C path; a missing name is ignored.
            unsafe { libc::unlink(p.as_ptr()) };
        }
    }
}

pub(crate) fn link_test(c: &Ctx) -> Result<Box<dyn Work>> {
    let names = (0..LINK_NAMES).map(|i| cpath(&c.dir.join(format!("link{i}")))).collect::<Result<_>>()?;
    Ok(Box::new(Link { names }))
}

// ---------------------------------------------------------------- disk_src

/// AIM9's factor for disk_src: the 75 slots of its list, though one call
/// makes 100 look-ups (57 stats + 43 creates).
pub(crate) const SEARCHES: usize = 75;
/// Existing files stat'ed per call, by depth below the tree's top (AIM9's
/// fakeh/dirlist: 57 names, 8 at the top, 6 one level down...).
const STAT_DEPTHS: [(usize, usize); 6] = [(0, 8), (1, 6), (2, 7), (4, 7), (5, 22), (6, 7)];
/// New names created, closed and unlinked per call, by depth (43 names).
const CREAT_DEPTHS: [(usize, usize); 5] = [(1, 7), (2, 5), (4, 6), (5, 19), (6, 6)];
/// Files per directory of the tree (fakeh: 321 files in 24 directories).
const FILES_PER_DIR: usize = 13;

struct Src {
    root: std::path::PathBuf,
    list: std::path::PathBuf,
    stats: Vec<CString>,
    creats: Vec<CString>,
    rng: rand_chacha::ChaCha8Rng,
}

impl Work for Src {
    /// Read the name list, shuffle it, then for each of the 75 slots stat
    /// the slot's existing name (if any) and creat, close and unlink its new
    /// name (if any); AIM9 chdirs into the tree, kdelta names the same
    /// relative paths from the tree's directory (see fidelity.md).
    fn call(&mut self) -> Result<f64> {
        let list = std::fs::read(&self.list).with_context(|| format!("reading {}", self.list.display()))?;
        std::hint::black_box(list.len());
        for v in [&mut self.stats, &mut self.creats] {
            for _ in 0..5 {
                for i in 0..v.len() {
                    let j = self.rng.gen_range(0..v.len());
                    v.swap(i, j);
                }
            }
        }
        let mut n = 0;
        // SAFETY: zeroed stat is a valid out-buffer; all paths are valid C
        // strings inside our work directory; descriptors closed at once.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            for slot in 0..SEARCHES {
                if let Some(p) = self.stats.get(slot) {
                    if libc::stat(p.as_ptr(), &mut st) != 0 {
                        return Err(last_err("stat", &self.root.join(p.to_string_lossy().as_ref())));
                    }
                }
                if let Some(p) = self.creats.get(slot) {
                    let fd = sys::creat(p)?;
                    sys::close(fd);
                    sys::unlink(p)?;
                }
                n += 1;
            }
        }
        Ok(n as f64)
    }
}

/// The tree: a chain d1/d2/.../d6 below `root`, each level holding
/// FILES_PER_DIR files, plus side directories so the tree has fakeh's 24
/// directories and about its 321 files.
pub(crate) fn disk_src(c: &Ctx) -> Result<Box<dyn Work>> {
    let root = c.dir.join("fakeh");
    let mut chain = vec![root.clone()];
    for d in 1..=6 {
        chain.push(chain[d - 1].join(format!("d{d}")));
    }
    let mut dirs = chain.clone();
    for k in 0..17 {
        dirs.push(chain[k % 5].join(format!("side{k}")));
    }
    for d in &dirs {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        for f in 0..FILES_PER_DIR {
            let p = d.join(format!("fake{f:02}"));
            File::create(&p).with_context(|| format!("creating {}", p.display()))?;
        }
    }
    let mut list = String::new();
    let mut stats = Vec::new();
    let mut creats = Vec::new();
    for &(depth, k) in &STAT_DEPTHS {
        for i in 0..k {
            let p = chain[depth].join(format!("fake{:02}", i % FILES_PER_DIR));
            list += &format!("s {}\n", p.display());
            stats.push(cpath(&p)?);
        }
    }
    for &(depth, k) in &CREAT_DEPTHS {
        for i in 0..k {
            let p = chain[depth].join(format!("notexist{i}"));
            list += &format!("c {}\n", p.display());
            creats.push(cpath(&p)?);
        }
    }
    let lp = root.join("dirlist");
    std::fs::write(&lp, list).with_context(|| format!("writing {}", lp.display()))?;
    let rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
    Ok(Box::new(Src { root, list: lp, stats, creats, rng }))
}

// ---------------------------------------------------------------- dir_rtns_1

/// The directory AIM9 reads.
pub(crate) const DIR: &str = "/bin";
/// readdir calls per call (AIM9: 100 x 100); at the end of the directory
/// the stream is rewound.
pub(crate) const DIR_ENTRIES: usize = 10_000;

struct Dir {
    path: CString,
}

impl Work for Dir {
    /// opendir /bin, 10,000 readdir calls (rewinddir at each end), closedir.
    fn call(&mut self) -> Result<f64> {
        // SAFETY: opendir on a valid C path, null checked; the stream is
        // used only here and closed once.
        unsafe {
            let dir = libc::opendir(self.path.as_ptr());
            if dir.is_null() {
                return Err(last_err("opendir", Path::new(DIR)));
            }
            let mut ends = 0;
            for _ in 0..DIR_ENTRIES {
                if libc::readdir(dir).is_null() {
                    ends += 1;
                    libc::rewinddir(dir);
                }
            }
            libc::closedir(dir);
            if ends == DIR_ENTRIES {
                bail!("{DIR} gave no entries");
            }
        }
        Ok(DIR_ENTRIES as f64)
    }
}

pub(crate) fn dir_rtns_1(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Dir { path: CString::new(DIR)? }))
}
