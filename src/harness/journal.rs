//! The journal of kernel settings kdelta changed: before each change, the
//! file and the value it held are appended and fsynced, so whatever ends
//! kdelta the machine can be put back. The run replays it (writes every
//! original back, newest change first, unmounts a debugfs it mounted) and
//! removes it when it ends, is interrupted or a worker fails; `kdelta
//! restore` replays one left by a kdelta that was killed, and every command
//! warns while one exists.
//!
//! One file per root (`ROOT/run/kdelta/knobs.journal`: `/run` is emptied at
//! boot, as the kernel settings are reset), or `$KDELTA_JOURNAL`. JSON
//! lines: the owner (pid and start time) first, then `wrote` and `mounted`
//! entries. A torn last line (killed while appending) describes a change
//! not yet made and is ignored.

use crate::measure::owned::Owner;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Where the journal of kernel settings below `root` lives.
pub fn path(root: &Path) -> PathBuf {
    match std::env::var_os("KDELTA_JOURNAL") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => root.join("run/kdelta/knobs.journal"),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Line {
    Owner { pid: i32, start: u64 },
    Wrote { path: PathBuf, original: String },
    Mounted { path: PathBuf },
}

/// A journal as read from its file.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Entries {
    pub owner: Option<Owner>,
    /// (file, original value), oldest first, one per file.
    pub wrote: Vec<(PathBuf, String)>,
    /// debugfs mount points kdelta mounted.
    pub mounted: Vec<PathBuf>,
}

impl Entries {
    fn parse(text: &str) -> Entries {
        let mut e = Entries::default();
        for l in text.lines() {
            match serde_json::from_str::<Line>(l) {
                Ok(Line::Owner { pid, start }) => e.owner = Some(Owner { pid, start }),
                Ok(Line::Wrote { path, original }) => {
                    if !e.wrote.iter().any(|(p, _)| *p == path) {
                        e.wrote.push((path, original));
                    }
                }
                Ok(Line::Mounted { path }) => e.mounted.push(path),
                // A torn line: the change it announced was not made.
                Err(_) => {}
            }
        }
        e
    }

    /// What would be restored, on one line.
    pub fn describe(&self) -> String {
        let mut v: Vec<String> = self.wrote.iter().map(|(p, o)| format!("{} was {o:?}", p.display())).collect();
        v.extend(self.mounted.iter().map(|m| format!("debugfs mounted at {}", m.display())));
        v.join(", ")
    }
}

/// Read the journal at `path`; `None` when there is none.
pub fn read(path: &Path) -> Result<Option<Entries>> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(Entries::parse(&t))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading the kernel-settings journal {}", path.display())),
    }
}

/// Put back what `e` lists: originals newest first, then unmount. Returns
/// one line per action; the failures, if any, as the error (the journal is
/// then kept).
pub fn undo(e: &Entries) -> std::result::Result<Vec<String>, Vec<String>> {
    let mut done = Vec::new();
    let mut failed = Vec::new();
    for (p, orig) in e.wrote.iter().rev() {
        let now = crate::sys::knobs::current_value(p).ok();
        if now.as_deref() == Some(orig.as_str()) {
            done.push(format!("{} already {orig}", p.display()));
            continue;
        }
        match crate::sys::knobs::write_text(p, orig) {
            Ok(()) => {
                crate::sys::knobs::settle(p, orig);
                done.push(format!("{} restored to {orig}", p.display()));
            }
            Err(err) => failed.push(format!("{} could not be restored to {orig:?}: {err}", p.display())),
        }
    }
    for m in &e.mounted {
        match crate::sys::knobs::umount_debugfs() {
            Ok(()) => done.push(format!("{} unmounted", m.display())),
            Err(err) => failed.push(format!("{} could not be unmounted: {err}", m.display())),
        }
    }
    if failed.is_empty() {
        Ok(done)
    } else {
        Err(failed)
    }
}

/// Replay and remove the journal at `path` (for `kdelta restore` and the
/// run's own end). Refuses one whose owner still runs, unless it is us.
pub fn replay(path: &Path) -> Result<Vec<String>> {
    let Some(e) = read(path)? else { return Ok(Vec::new()) };
    if let Some(o) = e.owner {
        if o != Owner::me() && o.alive() {
            bail!("kdelta {} is running and holds the kernel-settings journal {}: it restores them itself when it ends", o.pid, path.display());
        }
    }
    match undo(&e) {
        Ok(done) => {
            remove(path)?;
            Ok(done)
        }
        Err(failed) => bail!("{}; the journal {} is kept: fix and run `kdelta restore` again", failed.join("; "), path.display()),
    }
}

fn remove(path: &Path) -> Result<()> {
    std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
    if let Some(d) = path.parent() {
        if let Ok(f) = std::fs::File::open(d) {
            let _ = f.sync_all();
        }
    }
    Ok(())
}

/// The warning every command prints while a journal of a killed kdelta
/// exists; `None` when there is none or its owner still runs.
pub fn warning(root: &Path) -> Option<String> {
    let p = path(root);
    let e = read(&p).ok()??;
    if e.owner.is_some_and(|o| o.alive()) {
        return None;
    }
    Some(format!(
        "kdelta: warning: a kdelta that was killed left kernel settings changed ({}; journal {}): run `kdelta restore`",
        if e.wrote.is_empty() && e.mounted.is_empty() { "nothing changed yet".to_string() } else { e.describe() },
        p.display()
    ))
}

/// Refuse to change kernel settings while another journal exists: its
/// originals would be lost.
pub fn preflight(root: &Path) -> Result<()> {
    let p = path(root);
    if let Some(e) = read(&p)? {
        let who = match e.owner {
            Some(o) if o.alive() => format!("kdelta {} is changing kernel settings now", o.pid),
            _ => "a kdelta that was killed left kernel settings changed: run `kdelta restore` first".to_string(),
        };
        return Err(crate::error::bad_input(format!("{who} (journal {})", p.display())));
    }
    Ok(())
}

/// The journal this process writes, made when its first change is due.
pub struct Journal {
    path: PathBuf,
    file: std::fs::File,
    pub entries: Entries,
}

impl Journal {
    /// Make the journal (it must not exist) with its owner line, fsynced
    /// with its directory.
    pub fn create(path: &Path) -> Result<Journal> {
        let dir = path.parent().unwrap_or(Path::new("/"));
        std::fs::create_dir_all(dir).with_context(|| format!("making {}", dir.display()))?;
        let file = std::fs::OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(path)
            .with_context(|| format!("creating the kernel-settings journal {}", path.display()))?;
        let me = Owner::me();
        let mut j = Journal { path: path.to_path_buf(), file, entries: Entries { owner: Some(me), ..Entries::default() } };
        j.append(&Line::Owner { pid: me.pid, start: me.start })?;
        std::fs::File::open(dir).and_then(|d| d.sync_all()).with_context(|| format!("syncing {}", dir.display()))?;
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
    pub fn will_write(&mut self, path: &Path, original: &str) -> Result<()> {
        if self.entries.wrote.iter().any(|(p, _)| p == path) {
            return Ok(());
        }
        self.append(&Line::Wrote { path: path.to_path_buf(), original: original.to_string() })?;
        self.entries.wrote.push((path.to_path_buf(), original.to_string()));
        Ok(())
    }

    /// Record a mount before making it.
    pub fn will_mount(&mut self, at: &Path) -> Result<()> {
        self.append(&Line::Mounted { path: at.to_path_buf() })?;
        self.entries.mounted.push(at.to_path_buf());
        Ok(())
    }

    /// The original of a file this journal changed.
    pub fn original(&self, path: &Path) -> Option<&str> {
        self.entries.wrote.iter().find(|(p, _)| p == path).map(|(_, o)| o.as_str())
    }

    /// Put everything back and remove the file; on failure the file stays
    /// for `kdelta restore`.
    pub fn replay(self) -> Result<Vec<String>> {
        match undo(&self.entries) {
            Ok(done) => {
                remove(&self.path)?;
                Ok(done)
            }
            Err(failed) => bail!("{}; the journal {} is kept: run `kdelta restore` once fixed", failed.join("; "), self.path.display()),
        }
    }
}

#[cfg(test)]
#[path = "journal_tests.rs"]
mod tests;
