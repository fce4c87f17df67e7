//! The journal of kernel settings kdelta changed: before each change, the
//! file and the value it held are appended and fsynced, so whatever ends
//! kdelta the machine can be put back. The run replays it (writes every
//! original back, newest change first, unmounts a debugfs it mounted) and
//! removes it when it ends, is interrupted or a worker fails; `kdelta
//! restore` replays one left by a kdelta that was killed (`--discard`
//! removes one without replaying it), and every command warns while one
//! exists. A replay holds an exclusive `flock` on the file until it is
//! removed, so a killed run's guard and `kdelta restore` racing for one
//! journal put the settings back once and both succeed.
//!
//! `kdelta doctor --apply` writes a journal marked `tuned` and leaves it on
//! purpose: its settings hold until the next run adopts the journal
//! ([`adopt`]: it becomes that run's, whose end restores everything), or
//! `kdelta doctor --reset` or `kdelta restore` replays it. While it waits,
//! commands note it instead of warning, and a run may change settings.
//!
//! One file per root (`ROOT/run/kdelta/knobs.journal`: `/run` is emptied at
//! boot, as the kernel settings are reset), or `$KDELTA_JOURNAL`. JSON
//! lines: the owner (format version, pid and start time) first, then
//! `wrote` and `mounted` entries. A torn last line (killed while appending)
//! describes a change not yet made and is ignored.
//!
//! Restoring writes as root, so nothing in the journal is trusted:
//! - the file must be one only its owner could have written: a regular file
//!   (opened with `O_NOFOLLOW`, never a FIFO or device), owned by root or
//!   this euid, mode 0600, in a directory owned by root or this euid that
//!   group and others cannot write; it is read up to [`MAX_BYTES`];
//! - it must begin with kdelta's owner line of format [`FORMAT`], and every
//!   other complete line must be an entry;
//! - every `wrote` path passes the same check as `+sysfs=` (below `/sys` or
//!   `/proc/sys` of the root, no `.` or `..`, links resolved and checked
//!   again: [`crate::config::knobs::confined`]), before anything is written
//!   and again as each file is written; a `mounted` entry must name
//!   `ROOT/sys/kernel/debug`, and is unmounted only on the live machine when
//!   debugfs is mounted there.
//!
//! A journal that fails any of these is refused whole (bad input) and left
//! in place; nothing of it is written.

use crate::config::knobs as ck;
use crate::error::bad_input;
use crate::measure::owned::Owner;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

mod on_disk;
pub(crate) use on_disk::*;

/// The format version of the owner line; a journal of another is refused.
/// (1: the unversioned journals of kdelta before the third hardening pass.)
pub(crate) const FORMAT: u32 = 2;

/// The most of a journal that is read: a real one holds one line (under
/// 5 KiB) per file changed.
pub const MAX_BYTES: u64 = 1 << 20;

/// The longest original value kept: a sysfs attribute holds one page.
pub const MAX_VALUE: usize = 4096;

/// The longest path an entry may name (PATH_MAX).
const MAX_PATH: usize = 4096;

/// Where the journal of kernel settings below `root` lives.
pub(crate) fn path(root: &Path) -> PathBuf {
    match std::env::var_os("KDELTA_JOURNAL") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => root.join("run/kdelta/knobs.journal"),
    }
}

/// Where the journal of the cgroups kdelta makes below `root` lives: beside
/// the kernel settings' (`cgroups.journal`), or `$KDELTA_JOURNAL.cgroups`.
/// A file of its own, so that switching kernel settings back between
/// workers (which replays and removes their journal) never touches the cgroups.
pub(crate) fn cgroups_path(root: &Path) -> PathBuf {
    match std::env::var_os("KDELTA_JOURNAL") {
        Some(p) if !p.is_empty() => {
            let mut p = p;
            p.push(".cgroups");
            PathBuf::from(p)
        }
        _ => root.join("run/kdelta/cgroups.journal"),
    }
}

/// Both journals below `root`: kernel settings, then cgroups.
pub(crate) fn paths(root: &Path) -> [PathBuf; 2] {
    [path(root), cgroups_path(root)]
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Line {
    Owner {
        version: u32,
        pid: i32,
        start: u64,
        /// Written by `kdelta doctor --apply`, to outlive its owner.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        tuned: bool,
    },
    Wrote {
        path: PathBuf,
        original: String,
    },
    Mounted {
        path: PathBuf,
    },
    /// A cgroup kdelta made (`harness::cgroups`): removed on replay, what
    /// is left in it moved to its parent first.
    Made {
        path: PathBuf,
    },
    /// A controller kdelta enabled in a v2 `cgroup.subtree_control`.
    Enabled {
        path: PathBuf,
        controller: String,
    },
}

/// A journal as read from its file.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Entries {
    /// `None` only for a journal cut before its owner line was whole (it
    /// then lists nothing).
    pub owner: Option<Owner>,
    /// (file, original value), oldest first, one per file.
    pub wrote: Vec<(PathBuf, String)>,
    /// debugfs mount points kdelta mounted.
    pub mounted: Vec<PathBuf>,
    /// cgroups kdelta made, oldest first, one per directory.
    pub cgroups: Vec<PathBuf>,
    /// (`cgroup.subtree_control`, controller) kdelta enabled, oldest first.
    pub enabled: Vec<(PathBuf, String)>,
    /// Made by `kdelta doctor --apply`: left in place on purpose.
    pub tuned: bool,
}

/// A path for a one-line message: quoted, control and bidirectional
/// characters escaped, a long one cut to its start and its length.
fn shown(p: &Path) -> String {
    let s = p.to_string_lossy();
    if s.len() <= 256 {
        return format!("{s:?}");
    }
    let cut: String = s.chars().take(64).collect();
    format!("{cut:?}... ({} bytes)", s.len())
}

/// The start of every owner line kdelta writes, for judging a torn one.
fn owner_prefix() -> String {
    format!("{{\"kind\":\"owner\",\"version\":{FORMAT},\"pid\":")
}

/// Is `tail` (a last line without its newline) what a kdelta killed while
/// appending leaves: the start of one of its lines?
fn torn_line(tail: &[u8], first: bool) -> bool {
    let start = if first { owner_prefix() } else { "{\"kind\":\"".to_string() };
    let n = tail.len().min(start.len());
    tail[..n] == start.as_bytes()[..n] && !tail.contains(&0)
}

/// An absolute path without `.` or `..`, of a sane length.
fn plain_path(p: &Path) -> bool {
    let s = p.as_os_str();
    !s.is_empty()
        && s.len() <= MAX_PATH
        && p.is_absolute()
        && !s.as_encoded_bytes().windows(2).any(|w| w == b"//")
        && p.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_)))
        && !s.as_encoded_bytes().split(|&b| b == b'/').any(|c| c == b"." || c == b"..")
}

impl Entries {
    /// Parse a journal's bytes. `Err`: why it is not a journal kdelta
    /// wrote, on one line. Never panics; at most [`MAX_BYTES`] are looked at.
    pub fn parse(bytes: &[u8]) -> std::result::Result<Entries, String> {
        if bytes.len() as u64 > MAX_BYTES {
            return Err(format!("it is larger than {MAX_BYTES} bytes"));
        }
        // Complete lines; what follows the last newline is a torn line.
        let (whole, tail) = match bytes.iter().rposition(|&b| b == b'\n') {
            Some(i) => (&bytes[..i], &bytes[i + 1..]),
            None => (&bytes[..0], bytes),
        };
        let none_whole = bytes.iter().all(|&b| b != b'\n');
        if !torn_line(tail, none_whole) {
            return Err(if none_whole {
                format!("it does not begin with kdelta's owner line (format version {FORMAT})")
            } else {
                "its last line is not the start of a journal entry".to_string()
            });
        }
        let mut e = Entries::default();
        if none_whole {
            return Ok(e);
        }
        let mut wrote: Vec<(PathBuf, String)> = Vec::new();
        for (i, l) in whole.split(|&b| b == b'\n').enumerate() {
            let n = i + 1;
            let text = std::str::from_utf8(l).map_err(|_| format!("line {n} is not text"))?;
            let line: Line = serde_json::from_str(text).map_err(|_| {
                if n == 1 {
                    format!("it does not begin with kdelta's owner line (format version {FORMAT})")
                } else {
                    format!("line {n} is not a journal entry")
                }
            })?;
            if let Some(why) = e.take(n, line, &mut wrote) {
                return Err(why);
            }
        }
        // One per file, the first original kept (later ones are kdelta's own values).
        let mut seen: HashSet<&Path> = HashSet::new();
        for (p, o) in &wrote {
            if seen.insert(p) {
                e.wrote.push((p.clone(), o.clone()));
            }
        }
        Ok(e)
    }

    /// Line `n` of a journal, checked, into what it records (`wrote` in
    /// order, to be made one per file); why it is refused, if it is.
    fn take(&mut self, n: usize, line: Line, wrote: &mut Vec<(PathBuf, String)>) -> Option<String> {
        let e = self;
        let not_plain = |path: &Path| {
            (!plain_path(path)).then(|| format!("line {n} names {}, not an absolute path without . or ..", shown(path)))
        };
        match line {
            Line::Owner { version, pid, start, tuned } if n == 1 => {
                if version != FORMAT {
                    return Some(format!(
                        "its owner line has format version {version}; this kdelta reads version {FORMAT}"
                    ));
                }
                if pid <= 0 {
                    return Some(format!("its owner line names process {pid}"));
                }
                e.owner = Some(Owner { pid, start });
                e.tuned = tuned;
            }
            _ if n == 1 => {
                return Some(format!("it does not begin with kdelta's owner line (format version {FORMAT})"))
            }
            Line::Owner { .. } => return Some(format!("line {n} is a second owner line")),
            Line::Wrote { path, original } => {
                if let Some(why) = not_plain(&path) {
                    return Some(why);
                }
                if original.len() > MAX_VALUE || original.contains('\0') {
                    return Some(format!(
                        "line {n} holds an original value of {} bytes or with a NUL (at most {MAX_VALUE})",
                        original.len()
                    ));
                }
                wrote.push((path, original));
            }
            Line::Made { path } => {
                if let Some(why) = not_plain(&path) {
                    return Some(why);
                }
                if !e.cgroups.contains(&path) {
                    e.cgroups.push(path);
                }
            }
            Line::Enabled { path, controller } => {
                if !plain_path(&path) || !matches!(controller.as_str(), "cpu" | "cpuset" | "memory") {
                    return Some(format!(
                        "line {n} names {} {controller:?}, not a cgroup controller kdelta enables",
                        shown(&path)
                    ));
                }
                if !e.enabled.iter().any(|(p, c)| *p == path && *c == controller) {
                    e.enabled.push((path, controller));
                }
            }
            Line::Mounted { path } => {
                if let Some(why) = not_plain(&path) {
                    return Some(why);
                }
                if !e.mounted.contains(&path) {
                    e.mounted.push(path);
                }
            }
        }
        None
    }

    /// What would be restored, on one line.
    pub fn describe(&self) -> String {
        let mut v: Vec<String> = self.wrote.iter().map(|(p, o)| format!("{} was {o:?}", p.display())).collect();
        v.extend(self.mounted.iter().map(|m| format!("debugfs mounted at {}", m.display())));
        v.extend(self.cgroups.iter().map(|c| format!("cgroup {} made", c.display())));
        v.extend(self.enabled.iter().map(|(p, c)| format!("{c} enabled in {}", p.display())));
        v.join(", ")
    }

    /// Nothing to undo.
    pub fn is_empty(&self) -> bool {
        self.wrote.is_empty() && self.mounted.is_empty() && self.cgroups.is_empty() && self.enabled.is_empty()
    }

    /// May these entries be undone below `root`? Every file the same as a
    /// `+sysfs=` path (confined below `/sys` or `/proc/sys`), every mount
    /// point the debugfs kdelta mounts. `Err`: the first that may not.
    pub fn check(&self, root: &Path) -> std::result::Result<(), String> {
        for (p, _) in &self.wrote {
            ck::confined(root, p).map_err(|why| format!("it names {}: {why}", shown(p)))?;
        }
        for c in &self.cgroups {
            cgroup_confined(root, c).map_err(|why| format!("it names {}: {why}", shown(c)))?;
        }
        for (p, _) in &self.enabled {
            if p.file_name() != Some(std::ffi::OsStr::new("cgroup.subtree_control"))
                || !p.starts_with(crate::sys::cgroup::cgroup_dir(root))
            {
                return Err(format!(
                    "it names {}, not a cgroup.subtree_control below {}",
                    shown(p),
                    crate::sys::cgroup::cgroup_dir(root).display()
                ));
            }
        }
        let debugfs = root.join(crate::sys::knobs::DEBUGFS);
        for m in &self.mounted {
            if *m != debugfs {
                return Err(format!(
                    "it names a mount at {}: kdelta mounts only debugfs, at {}",
                    shown(m),
                    debugfs.display()
                ));
            }
        }
        Ok(())
    }
}

/// May a journal's cgroup `c` be removed below `root`? It must be below
/// `ROOT/sys/fs/cgroup` (links resolved, when it still exists) and be or lie
/// in a cgroup named `kdelta-...`, as every cgroup kdelta makes does.
pub(crate) fn cgroup_confined(root: &Path, c: &Path) -> std::result::Result<(), String> {
    let dir = crate::sys::cgroup::cgroup_dir(root);
    let rel = c.strip_prefix(&dir).map_err(|_| format!("it is not below {}", dir.display()))?;
    if !rel.components().any(|p| p.as_os_str().to_string_lossy().starts_with("kdelta-")) {
        return Err("it is not a cgroup kdelta makes (kdelta-...)".into());
    }
    if let (Ok(real), Ok(d)) = (c.canonicalize(), dir.canonicalize()) {
        if !real.starts_with(&d) {
            return Err(format!("it leads to {}, outside {}", real.display(), dir.display()));
        }
    }
    Ok(())
}

/// Start the guard of this process's journals (`kdelta __guard`): a child
/// in a process group of its own, without a parent-death signal, that puts
/// back what the journals below `root` list once this process is gone
/// ([`guard_main`]). Stopped (SIGKILL) when the returned child is dropped.
pub(crate) fn start_guard() -> Result<super::watch::Sentinel> {
    let me = Owner::me();
    let exe = std::env::current_exe().context("finding kdelta's own executable")?;
    let mut c = std::process::Command::new(exe);
    c.arg("__guard").arg(me.pid.to_string()).arg(me.start.to_string());
    super::watch::spawn_sentinel(c, "the guard of the kernel-settings journals")
}

/// `kdelta __guard PID START`: while process `PID` (started at `START`) is
/// this process's parent, sleep ([`super::watch::sleep_until_parent_gone`]);
/// once it is gone (kill -9), replay the
/// journals below `root` that it owns, cgroups first, as `kdelta restore`
/// would: `--isolate`'s confinement of every other task, its cgroups and
/// kernel settings are undone without a person. A replay that cannot be
/// done yet (the owner not yet reaped, a worker still in a cgroup for the
/// moments its watchdog takes) is tried again, for up to 4 s.
pub(crate) fn guard_main(root: &Path, pid: i32, start: u64) -> u8 {
    let owner = Owner { pid, start };
    super::watch::sleep_until_parent_gone(pid, None);
    let t0 = std::time::Instant::now();
    let mut left: Vec<PathBuf> = paths(root).into_iter().rev().collect();
    while !left.is_empty() && t0.elapsed() < std::time::Duration::from_secs(4) {
        left.retain(|p| match read(p) {
            Ok(Some(e)) if e.owner == Some(owner) => replay(p, root).is_err(),
            _ => false,
        });
        if !left.is_empty() {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
    u8::from(!left.is_empty())
}

/// The journal this process writes, made when its first change is due.
pub(crate) struct Journal {
    path: PathBuf,
    root: PathBuf,
    file: std::fs::File,
    pub(crate) entries: Entries,
}

impl Journal {
    /// Make the journal of the settings below `root` (it must not exist)
    /// with its owner line, fsynced with its directory: the directory made
    /// 0700 if missing and refused if group or others can write it, the file
    /// made 0600 with `O_EXCL` (no link followed), as [`read`] wants them.
    pub(crate) fn create(path: &Path, root: &Path) -> Result<Journal> {
        Journal::create_as(path, root, false)
    }

    /// [`Journal::create`] for `kdelta doctor --apply`: marked `tuned`, to be
    /// left in place when this process ends.
    pub(crate) fn create_tuned(path: &Path, root: &Path) -> Result<Journal> {
        Journal::create_as(path, root, true)
    }

    fn create_as(path: &Path, root: &Path, tuned: bool) -> Result<Journal> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        // Another kdelta removing its own journal removes the directory
        // when it is left empty (`on_disk::remove`): made again if it went
        // between the two steps.
        let mut tries = 0;
        let file = loop {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .with_context(|| format!("making {}", dir.display()))?;
            check_dir(dir).map_err(|why| {
                anyhow::anyhow!("the kernel-settings journal {} cannot be made: {why}", path.display())
            })?;
            match open_new(path) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && tries < 3 => tries += 1,
                opened => {
                    break opened.with_context(|| format!("creating the kernel-settings journal {}", path.display()))?
                }
            }
        };
        let j = Journal::begin(path, root, file, tuned)?;
        std::fs::File::open(dir).and_then(|d| d.sync_all()).with_context(|| format!("syncing {}", dir.display()))?;
        Ok(j)
    }

    /// Take over the journal `kdelta doctor --apply` left at `path` (marked
    /// `tuned`, its owner gone): rewritten, atomically, as this process's
    /// own unmarked journal with the same entries, so a `kdelta restore`
    /// meanwhile refuses it and a killed run leaves an ordinary journal.
    /// `None` when there is no such journal (none, or an ordinary one).
    pub(crate) fn adopt(path: &Path, root: &Path) -> Result<Option<Journal>> {
        let Some(e) = read(path)? else { return Ok(None) };
        if !e.tuned || e.owner.is_some_and(|o| o != Owner::me() && o.alive()) {
            return Ok(None);
        }
        e.check(root)
            .map_err(|why| bad_input(format!("the kernel-settings journal {} is refused: {why}", path.display())))?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        check_dir(dir).map_err(|why| {
            anyhow::anyhow!("the kernel-settings journal {} cannot be adopted: {why}", path.display())
        })?;
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(".adopt");
        let tmp = dir.join(name);
        if std::fs::symlink_metadata(&tmp).is_ok_and(|m| !m.is_dir()) {
            std::fs::remove_file(&tmp).with_context(|| format!("removing {}", tmp.display()))?;
        }
        let file = open_new(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
        let mut j = Journal::begin(&tmp, root, file, false)?;
        for (p, o) in &e.wrote {
            j.will_write(p, o)?;
        }
        for m in &e.mounted {
            j.will_mount(m)?;
        }
        std::fs::rename(&tmp, path).with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))?;
        std::fs::File::open(dir).and_then(|d| d.sync_all()).with_context(|| format!("syncing {}", dir.display()))?;
        j.path = path.to_path_buf();
        Ok(Some(j))
    }

    /// A journal in the new, empty `file` at `path`: made 0600 whatever the
    /// umask took away, its first line naming this process as owner.
    fn begin(path: &Path, root: &Path, file: std::fs::File, tuned: bool) -> Result<Journal> {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("chmod 600 {}", path.display()))?;
        let me = Owner::me();
        let mut j = Journal {
            path: path.to_path_buf(),
            root: root.to_path_buf(),
            file,
            entries: Entries { owner: Some(me), tuned, ..Entries::default() },
        };
        j.append(&Line::Owner { version: FORMAT, pid: me.pid, start: me.start, tuned })?;
        Ok(j)
    }

    fn append(&mut self, l: &Line) -> Result<()> {
        let mut s = serde_json::to_string(l)?;
        s.push('\n');
        self.file
            .write_all(s.as_bytes())
            .and_then(|_| self.file.sync_all())
            .with_context(|| format!("writing the kernel-settings journal {}", self.path.display()))
    }

    /// Record `path`'s original value before its first change (later
    /// changes of the same file keep the first original).
    pub(crate) fn will_write(&mut self, path: &Path, original: &str) -> Result<()> {
        if self.entries.wrote.iter().any(|(p, _)| p == path) {
            return Ok(());
        }
        self.append(&Line::Wrote { path: path.to_path_buf(), original: original.to_string() })?;
        self.entries.wrote.push((path.to_path_buf(), original.to_string()));
        Ok(())
    }

    /// Record a cgroup before making it.
    pub(crate) fn will_make(&mut self, dir: &Path) -> Result<()> {
        if self.entries.cgroups.iter().any(|c| c == dir) {
            return Ok(());
        }
        self.append(&Line::Made { path: dir.to_path_buf() })?;
        self.entries.cgroups.push(dir.to_path_buf());
        Ok(())
    }

    /// Record a controller before enabling it in `subtree_control`.
    pub(crate) fn will_enable(&mut self, subtree_control: &Path, controller: &str) -> Result<()> {
        self.append(&Line::Enabled { path: subtree_control.to_path_buf(), controller: controller.to_string() })?;
        self.entries.enabled.push((subtree_control.to_path_buf(), controller.to_string()));
        Ok(())
    }

    /// Record a mount before making it.
    pub(crate) fn will_mount(&mut self, at: &Path) -> Result<()> {
        self.append(&Line::Mounted { path: at.to_path_buf() })?;
        self.entries.mounted.push(at.to_path_buf());
        Ok(())
    }

    /// The original of a file this journal changed.
    #[cfg(test)]
    pub(crate) fn original(&self, path: &Path) -> Option<&str> {
        self.entries.wrote.iter().find(|(p, _)| p == path).map(|(_, o)| o.as_str())
    }

    /// Put everything back and remove the file; on failure the file stays
    /// for `kdelta restore`.
    pub(crate) fn replay(self) -> Result<Vec<String>> {
        match undo(&self.entries, &self.root) {
            Ok(done) => {
                remove(&self.path)?;
                Ok(done)
            }
            Err(failed) => bail!(
                "{}; the journal {} is kept: run `kdelta restore` once fixed",
                failed.join("; "),
                self.path.display()
            ),
        }
    }
}

#[cfg(test)]
#[path = "journal_tests.rs"]
mod tests;
