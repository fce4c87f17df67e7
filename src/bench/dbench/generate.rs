//! kdelta's own NetBench-like loadfile, generated deterministically from a seed.
//!
//! It models one Windows client of a file server working in
//! `\clients\client1\~dmtmp`: eight application directories, files opened,
//! read and written in varied sizes, looked up, listed, renamed, deleted,
//! locked and flushed. The generator keeps a model of the directory tree, so
//! every expected status is what the operation really returns when the file
//! is replayed from its first line (which wipes the client's directory), pass
//! after pass.
//!
//! Each step picks an operation by weight (the weights are a little off the
//! target where other steps also produce that operation: a read with no file
//! open opens one), giving a mix close to the NetBench trace dbench ships
//! (`client.txt`):
//!
//! | operation | weight % | client.txt % | what it does here |
//! |---|---|---|---|
//! | ReadX | 29 | 27.1 | read within an open file, sequentially; sizes: 5% up to 512 B, 75% 1-4 KiB, 6% 8-16 KiB, 14% 32-64 KiB (mean about 12 KB) |
//! | NTCreateX | 15.5 | 17.3 | 50% open an existing file, 27% open a missing one (fails, `OBJECT_NAME_NOT_FOUND`), 18% create a new file, 5% open a directory |
//! | QUERY_PATH_INFORMATION | 15.5 + 0.1 | 15.7 | 60% an existing name, 40% a missing one |
//! | Close | 12.7 | 12.7 | close an open handle (follows from the successful opens) |
//! | WriteX | 8.5 | 8.6 | write to an open file, appending or rewriting; sizes: 22% up to 512 B, 30% 1-4 KiB, 9% 8-16 KiB, 7% 32-60 KiB, 32% 64 KiB (mean about 26 KB) |
//! | FIND_FIRST | 6.2 | 6.1 | 50% `dir\*` (success), 50% a pattern that matches nothing (`NO_SUCH_FILE`) |
//! | Unlink | 3.5 | 3.5 | delete a closed file |
//! | QUERY_FS_INFORMATION | 2.9 | 2.9 | |
//! | QUERY_FILE_INFORMATION | 2.7 | 2.7 | on an open handle |
//! | SET_FILE_INFORMATION | 1.4 | 1.4 | on an open handle |
//! | Flush | 1.2 | 1.2 | on an open handle |
//! | Rename | 0.7 | 0.7 | a closed file to a free name |
//! | LockX + UnlockX | 0.12 | 0.12 | a lock and its unlock on an open handle |
//!
//! An operation that needs an open handle when none is open opens a file
//! instead; at most 8 handles are open at once; a client's files stay under
//! about 20 MB (writes past that rewrite from offset 0). The file begins with
//! the same set-up as client.txt (`Deltree`, `Mkdir \clients`, the client's
//! directory and `~dmtmp`) and ends by closing every handle. The observed mix
//! of a generated file is checked by a test.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::fmt::Write;

const DIRS: [&str; 8] = ["ACCESS", "COREL", "EXCEL", "PARADOX", "PM", "PWRPNT", "WORD", "WORDPRO"];
const STEMS: [&str; 12] =
    ["REPORT", "SALES", "BUDGET", "CHAP1", "CHAP2", "NOTES", "GRAPH", "INVOICE", "TIPS", "MINUTES", "LETTER", "TABLE"];
const EXTS: [&str; 6] = ["DOC", "XLS", "PPT", "DB", "TMP", "PRN"];
const MAX_OPEN: usize = 8;
const BUDGET: u64 = 20_000_000;
const FILE_CAP: u64 = 2 << 20;
/// The fewest operations a generated file can have (set-up and a little work).
pub(crate) const MIN_OPS: usize = 24;

struct OpenFile {
    handle: u32,
    path: String,
    is_dir: bool,
    read_pos: u64,
    written: bool,
}

struct Gen {
    rng: ChaCha8Rng,
    out: String,
    n: usize,
    /// Existing files: path -> size.
    files: BTreeMap<String, u64>,
    open: Vec<OpenFile>,
    next_handle: u32,
    total: u64,
}

fn client(rel: &str) -> String {
    if rel.is_empty() {
        "\"\\clients\\client1\"".to_string()
    } else {
        format!("\"\\clients\\client1\\{rel}\"")
    }
}

impl Gen {
    fn emit(&mut self, line: std::fmt::Arguments) {
        let _ = self.out.write_fmt(line);
        self.out.push('\n');
        self.n += 1;
    }

    fn handle(&mut self) -> u32 {
        self.next_handle += 1;
        self.next_handle
    }

    fn dir(&mut self) -> &'static str {
        DIRS[self.rng.gen_range(0..DIRS.len())]
    }

    fn name(&mut self) -> String {
        let d = self.dir();
        let s = STEMS[self.rng.gen_range(0..STEMS.len())];
        let e = EXTS[self.rng.gen_range(0..EXTS.len())];
        format!("~dmtmp\\{d}\\{s}.{e}")
    }

    fn is_open(&self, path: &str) -> bool {
        self.open.iter().any(|o| o.path == path)
    }

    /// A name that exists and is not open, if there is one.
    fn closed_existing(&mut self) -> Option<String> {
        let cands: Vec<&String> = self.files.keys().filter(|p| !self.is_open(p)).collect();
        if cands.is_empty() {
            return None;
        }
        Some(cands[self.rng.gen_range(0..cands.len())].clone())
    }

    fn missing_name(&mut self) -> Option<String> {
        for _ in 0..16 {
            let n = self.name();
            if !self.files.contains_key(&n) {
                return Some(n);
            }
        }
        None
    }

    fn read_size(&mut self) -> u64 {
        let r: f64 = self.rng.gen();
        if r < 0.05 {
            self.rng.gen_range(16..=512)
        } else if r < 0.80 {
            [1024, 2048, 3072, 4096, 4096, 4096][self.rng.gen_range(0..6)]
        } else if r < 0.86 {
            self.rng.gen_range(2..=4) * 4096
        } else {
            self.rng.gen_range(8..=16) * 4096 - if self.rng.gen_bool(0.5) { 0 } else { 1024 }
        }
    }

    fn write_size(&mut self) -> u64 {
        let r: f64 = self.rng.gen();
        if r < 0.22 {
            self.rng.gen_range(1..=512)
        } else if r < 0.52 {
            self.rng.gen_range(1..=4) * 1024
        } else if r < 0.61 {
            self.rng.gen_range(2..=4) * 4096
        } else if r < 0.68 {
            self.rng.gen_range(8..=15) * 4096
        } else {
            65536
        }
    }

    /// Open (or create) a file; true when a handle was added.
    fn open_something(&mut self) -> bool {
        if self.open.len() >= MAX_OPEN {
            self.close_one();
            return false;
        }
        let r: f64 = self.rng.gen();
        if r < 0.50 {
            if let Some(p) = self.closed_existing() {
                let h = self.handle();
                self.emit(format_args!("NTCreateX {} 0x40 0x1 {h} NT_STATUS_OK", client(&p)));
                self.open.push(OpenFile { handle: h, path: p, is_dir: false, read_pos: 0, written: false });
                return true;
            }
            return self.create_new();
        }
        if r < 0.77 {
            if let Some(p) = self.missing_name() {
                let h = self.handle();
                self.emit(format_args!("NTCreateX {} 0x40 0x1 {h} NT_STATUS_OBJECT_NAME_NOT_FOUND", client(&p)));
                return false;
            }
        }
        if r < 0.95 {
            return self.create_new();
        }
        let d = format!("~dmtmp\\{}", self.dir());
        let h = self.handle();
        self.emit(format_args!("NTCreateX {} 0x0 0x1 {h} NT_STATUS_OK", client(&d)));
        self.open.push(OpenFile { handle: h, path: d, is_dir: true, read_pos: 0, written: false });
        true
    }

    fn create_new(&mut self) -> bool {
        // Overwrite-if on an existing closed file now and then (truncates).
        if self.rng.gen_bool(0.1) {
            if let Some(p) = self.closed_existing() {
                let h = self.handle();
                self.emit(format_args!("NTCreateX {} 0x40 0x5 {h} NT_STATUS_OK", client(&p)));
                let old = self.files.insert(p.clone(), 0).unwrap_or(0);
                self.total -= old;
                self.open.push(OpenFile { handle: h, path: p, is_dir: false, read_pos: 0, written: false });
                return true;
            }
        }
        let Some(p) = self.missing_name() else {
            return false;
        };
        let h = self.handle();
        self.emit(format_args!("NTCreateX {} 0x40 0x2 {h} NT_STATUS_OK", client(&p)));
        self.files.insert(p.clone(), 0);
        self.open.push(OpenFile { handle: h, path: p, is_dir: false, read_pos: 0, written: false });
        true
    }

    fn close_one(&mut self) {
        if self.open.is_empty() {
            return;
        }
        let i = self.rng.gen_range(0..self.open.len());
        let o = self.open.swap_remove(i);
        self.emit(format_args!("Close {} NT_STATUS_OK", o.handle));
    }

    /// An open regular file, index into `open`.
    fn pick_file(&mut self, want: impl Fn(&OpenFile, u64) -> bool) -> Option<usize> {
        let c: Vec<usize> = (0..self.open.len())
            .filter(|&i| !self.open[i].is_dir && want(&self.open[i], self.files[&self.open[i].path]))
            .collect();
        if c.is_empty() {
            None
        } else {
            Some(c[self.rng.gen_range(0..c.len())])
        }
    }

    fn read(&mut self) {
        let Some(i) = self.pick_file(|_, size| size > 0) else {
            // Nothing readable: open an existing file, or write one first.
            if !self.open_something() {
                self.write();
            }
            return;
        };
        let size = self.files[&self.open[i].path];
        let want = self.read_size().min(size);
        let mut pos = self.open[i].read_pos;
        if pos + want > size {
            pos = 0;
        }
        self.open[i].read_pos = pos + want;
        let h = self.open[i].handle;
        self.emit(format_args!("ReadX {h} {pos} {want} {want} NT_STATUS_OK"));
    }

    fn write(&mut self) {
        let Some(i) = self.pick_file(|_, _| true) else {
            if !self.create_new() {
                self.open_something();
            }
            return;
        };
        let path = self.open[i].path.clone();
        let size = self.files[&path];
        let mut len = self.write_size();
        let append = self.rng.gen_bool(0.8);
        let mut off = if append {
            size
        } else if size > 0 {
            self.rng.gen_range(0..size) / 512 * 512
        } else {
            0
        };
        if off + len > FILE_CAP || (off + len > size && self.total + (off + len - size) > BUDGET) {
            off = 0;
            if len > size && self.total + (len - size) > BUDGET {
                len = len.min(size.max(512));
            }
        }
        let new_size = size.max(off + len);
        self.total += new_size - size;
        self.files.insert(path, new_size);
        self.open[i].written = true;
        let h = self.open[i].handle;
        self.emit(format_args!("WriteX {h} {off} {len} {len} NT_STATUS_OK"));
    }

    fn qpath(&mut self) {
        let level = if self.rng.gen_bool(0.6) { 1004 } else { 1035 };
        if self.rng.gen_bool(0.6) {
            if let Some(p) = self.files.keys().nth(self.rng.gen_range(0..self.files.len().max(1))).cloned() {
                self.emit(format_args!("QUERY_PATH_INFORMATION {} {level} NT_STATUS_OK", client(&p)));
                return;
            }
        }
        if let Some(p) = self.missing_name() {
            self.emit(format_args!("QUERY_PATH_INFORMATION {} 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND", client(&p)));
        }
    }

    fn find(&mut self) {
        let d = self.dir();
        if self.rng.gen_bool(0.5) {
            let count = 2 + self.files.keys().filter(|p| p.starts_with(&format!("~dmtmp\\{d}\\"))).count();
            self.emit(format_args!("FIND_FIRST {} 260 1366 {count} NT_STATUS_OK", client(&format!("~dmtmp\\{d}\\*"))));
        } else {
            self.emit(format_args!(
                "FIND_FIRST {} 260 1366 0 NT_STATUS_NO_SUCH_FILE",
                client(&format!("~dmtmp\\{d}\\<.JNK"))
            ));
        }
    }

    fn unlink(&mut self) {
        if let Some(p) = self.closed_existing() {
            self.emit(format_args!("Unlink {} 0x6 NT_STATUS_OK", client(&p)));
            let size = self.files.remove(&p).unwrap_or(0);
            self.total -= size;
        } else {
            self.qpath();
        }
    }

    fn rename(&mut self) {
        let (Some(a), Some(b)) = (self.closed_existing(), self.missing_name()) else {
            self.qpath();
            return;
        };
        self.emit(format_args!("Rename {} {} NT_STATUS_OK", client(&a), client(&b)));
        let size = self.files.remove(&a).unwrap_or(0);
        self.files.insert(b, size);
    }

    /// An operation on any open handle (files and directories).
    /// True when `f`'s line was written (else a file was opened instead).
    fn on_handle(&mut self, f: impl Fn(u32) -> String, files_only: bool) -> bool {
        let c: Vec<usize> = (0..self.open.len()).filter(|&i| !files_only || !self.open[i].is_dir).collect();
        if c.is_empty() {
            self.open_something();
            return false;
        }
        let h = self.open[c[self.rng.gen_range(0..c.len())]].handle;
        let line = f(h);
        self.emit(format_args!("{line}"));
        true
    }

    fn step(&mut self) {
        let r: f64 = self.rng.gen::<f64>() * 100.0;
        let mut acc = 0.0;
        let mut pick = |w: f64| {
            acc += w;
            r < acc
        };
        if pick(29.0) {
            self.read()
        } else if pick(15.5) {
            self.open_something();
        } else if pick(15.5) {
            self.qpath()
        } else if pick(12.7) {
            if self.open.is_empty() {
                self.open_something();
            } else {
                self.close_one()
            }
        } else if pick(8.5) {
            self.write()
        } else if pick(6.2) {
            self.find()
        } else if pick(3.5) {
            self.unlink()
        } else if pick(2.9) {
            self.emit(format_args!("QUERY_FS_INFORMATION 1 NT_STATUS_OK"))
        } else if pick(2.7) {
            let level = [258, 1004, 1005][self.rng.gen_range(0..3)];
            self.on_handle(|h| format!("QUERY_FILE_INFORMATION {h} {level} NT_STATUS_OK"), false);
        } else if pick(1.4) {
            self.on_handle(|h| format!("SET_FILE_INFORMATION {h} 1004 NT_STATUS_OK"), true);
        } else if pick(1.2) {
            self.on_handle(|h| format!("Flush {h} NT_STATUS_OK"), true);
        } else if pick(0.7) {
            self.rename()
        } else if pick(0.12) {
            if self.on_handle(
                |h| format!("LockX {h} 2147483538 1 NT_STATUS_OK\nUnlockX {h} 2147483538 1 NT_STATUS_OK"),
                true,
            ) {
                // Two lines were written.
                self.n += 1;
            }
        } else {
            self.qpath()
        }
    }
}

/// A NetBench-like loadfile of exactly `ops` operations (at least
/// [`MIN_OPS`]), the same for the same `seed`.
pub(crate) fn generate(ops: usize, seed: u64) -> String {
    let ops = ops.max(MIN_OPS);
    let mut g = Gen {
        rng: ChaCha8Rng::seed_from_u64(seed),
        out: String::new(),
        n: 0,
        files: BTreeMap::new(),
        open: Vec::new(),
        next_handle: 10000,
        total: 0,
    };
    let _ = writeln!(g.out, "# kdelta NetBench-like loadfile: {ops} operations, seed {seed}");
    let _ = writeln!(g.out, "# Generated by `kdelta loadfile generate`; dbench 3.x/4.x format, paths for client 1.");
    g.emit(format_args!("Deltree {} NT_STATUS_OK", client("")));
    g.emit(format_args!("Mkdir \"\\clients\" NT_STATUS_OK"));
    for d in std::iter::once(String::new())
        .chain(std::iter::once("~dmtmp".to_string()))
        .chain(DIRS.iter().map(|d| format!("~dmtmp\\{d}")))
    {
        let h = g.handle();
        g.emit(format_args!("NTCreateX {} 0x1 0x2 {h} NT_STATUS_OK", client(&d)));
        g.emit(format_args!("Close {h} NT_STATUS_OK"));
    }
    // Leave room to close every handle, and for a two-line lock step.
    while g.n + g.open.len() + 2 < ops {
        g.step();
    }
    while g.n + g.open.len() < ops {
        g.emit(format_args!("QUERY_FS_INFORMATION 1 NT_STATUS_OK"));
    }
    while !g.open.is_empty() {
        g.close_one();
    }
    g.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::dbench::loadfile::{parse, OP_NAMES};

    #[test]
    fn deterministic_exact_and_valid() {
        let a = generate(5000, 7);
        assert_eq!(a, generate(5000, 7));
        assert_ne!(a, generate(5000, 8));
        let lf = parse("gen", &a).unwrap();
        assert_eq!(lf.ops.len(), 5000);
        for n in [MIN_OPS, 25, 100, 101] {
            assert_eq!(parse("gen", &generate(n, 1)).unwrap().ops.len(), n);
        }
        assert_eq!(parse("gen", &generate(0, 1)).unwrap().ops.len(), MIN_OPS);
    }

    #[test]
    fn mix_close_to_netbench() {
        let lf = parse("gen", &generate(50_000, 1)).unwrap();
        let mut c = [0usize; 17];
        for op in &lf.ops {
            c[op.kind.index()] += 1;
        }
        let pct =
            |name: &str| 100.0 * c[OP_NAMES.iter().position(|n| *n == name).unwrap()] as f64 / lf.ops.len() as f64;
        for (name, want, tol) in [
            ("ReadX", 27.1, 3.0),
            ("NTCreateX", 17.3, 3.0),
            ("QUERY_PATH_INFORMATION", 15.7, 3.0),
            ("Close", 12.7, 3.0),
            ("WriteX", 8.6, 2.0),
            ("FIND_FIRST", 6.1, 1.5),
            ("Unlink", 3.5, 1.5),
            ("QUERY_FS_INFORMATION", 2.9, 1.0),
            ("Flush", 1.2, 0.6),
            ("Rename", 0.7, 0.4),
        ] {
            let got = pct(name);
            assert!((got - want).abs() <= tol, "{name}: {got:.2}% (want {want}% +-{tol})");
        }
        assert!(pct("LockX") > 0.0 && pct("UnlockX") > 0.0);
    }
}
