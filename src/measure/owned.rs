//! Directories kdelta makes outside its own temporary directory, and the one
//! rule for removing them: a directory is removed only when the marker file
//! inside it ([`MARKER`]) names its owner, the kdelta process (pid and start
//! time) that answers for it, and either that owner removes it or the owner
//! is gone. Nothing without the marker is ever removed.
//!
//! The harness makes the run's temporary directory (`TMPDIR/kdelta-XXXXXX`)
//! and marks it. A benchmark that needs a directory elsewhere (dbench's tree
//! in `dir=`) asks the sampler (`Sampler::owned_dir`),
//! which makes it with an unpredictable name, marks it with the harness as
//! owner and lists it in its worker directory ([`LIST`]) before anything is
//! put in it. When the worker ends, however it ends (done, failed, killed at
//! a timeout or a Ctrl-C, crashed), the harness removes what the list names.
//! When kdelta itself was killed (`kill -9`), the next kdelta command finds the
//! temporary directories whose owner is dead ([`sweep`]) and removes them and
//! the directories their lists name.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The marker file in every directory kdelta owns.
pub(crate) const MARKER: &str = ".kdelta-owner";
/// The list of directories made elsewhere, one path a line, in a worker's directory.
pub(crate) const LIST: &str = ".kdelta-owned";
/// The prefix of kdelta's temporary directories, the only names [`sweep`] looks at.
pub(crate) const PREFIX: &str = "kdelta-";

/// A process, named for good: its pid and its start time (pids are reused,
/// never with the same start time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    pub pid: i32,
    pub(crate) start: u64,
}

impl Owner {
    /// This process.
    pub(crate) fn me() -> Owner {
        let pid = std::process::id() as i32;
        Owner { pid, start: crate::sys::task::start_time(pid).unwrap_or(0) }
    }
    /// Does the process still run (or wait to be reaped)? When its start
    /// time cannot be read (`/proc` mounted with `hidepid`), a process that
    /// answers kill(2) with signal 0 (or EPERM) counts as alive: doubt keeps.
    pub(crate) fn alive(&self) -> bool {
        match crate::sys::task::start_time(self.pid) {
            Some(t) => t == self.start,
            None => nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid), None) != Err(nix::errno::Errno::ESRCH),
        }
    }
    fn text(&self) -> String {
        format!("kdelta {} {}\n", self.pid, self.start)
    }
    fn parse(s: &str) -> Option<Owner> {
        let mut it = s.split_whitespace();
        if it.next()? != "kdelta" {
            return None;
        }
        Some(Owner { pid: it.next()?.parse().ok()?, start: it.next()?.parse().ok()? })
    }
    /// The owner named by `dir`'s marker; `None` when `dir` is not a
    /// directory (a link is not), or has no readable marker.
    pub(crate) fn of_dir(dir: &Path) -> Option<Owner> {
        if !std::fs::symlink_metadata(dir).ok()?.is_dir() {
            return None;
        }
        let f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(dir.join(MARKER)).ok()?;
        let mut s = String::new();
        std::io::Read::take(f, 100).read_to_string(&mut s).ok()?;
        Owner::parse(&s)
    }
}

/// Put `owner`'s marker in `dir` (a new file: never through a link).
pub(crate) fn mark(dir: &Path, owner: Owner) -> Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(dir.join(MARKER))
        .with_context(|| format!("marking {}", dir.display()))?;
    f.write_all(owner.text().as_bytes()).with_context(|| format!("marking {}", dir.display()))
}

/// Make a directory in `parent` named `prefix` and random characters
/// (mkdtemp(3): created, not found, mode 0700) and mark it as `owner`'s.
pub(crate) fn make_dir(parent: &Path, prefix: &str, owner: Owner) -> Result<PathBuf> {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir_in(parent)
        .with_context(|| format!("creating a directory in {}", parent.display()))?
        .keep();
    if let Err(e) = mark(&dir, owner) {
        let _ = std::fs::remove_dir(&dir);
        return Err(e);
    }
    Ok(dir)
}

/// Add `dir` to the list at `list`.
pub(crate) fn record(list: &Path, dir: &Path) -> Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(list)
        .with_context(|| format!("recording in {}", list.display()))?;
    use std::os::unix::ffi::OsStrExt;
    let mut line = dir.as_os_str().as_bytes().to_vec();
    line.push(b'\n');
    f.write_all(&line).with_context(|| format!("recording in {}", list.display()))
}

/// Remove `dir` if its marker names `owner`. True if removed.
pub(crate) fn remove_if_owned(dir: &Path, owner: Owner) -> bool {
    // remove_dir_all follows no link, not even `dir` itself.
    Owner::of_dir(dir) == Some(owner) && std::fs::remove_dir_all(dir).is_ok()
}

/// Remove every directory the list at `list` names whose marker names
/// `owner`. Returns how many were removed.
pub(crate) fn remove_listed(list: &Path, owner: Owner) -> usize {
    use std::os::unix::ffi::OsStrExt;
    let Ok(data) = std::fs::read(list) else { return 0 };
    data.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .filter(|l| remove_if_owned(Path::new(std::ffi::OsStr::from_bytes(l)), owner))
        .count()
}

/// Remove the `kdelta-*` directories directly in `root` (the temporary
/// directory) whose marker names a process that is gone, and first the
/// directories listed in them and in their subdirectories. Directories
/// without a marker, and those of a live kdelta, are left alone. Returns how
/// many directories were removed.
pub(crate) fn sweep(root: &Path) -> usize {
    let Ok(rd) = std::fs::read_dir(root) else { return 0 };
    let mut n = 0;
    for e in rd.flatten() {
        if !e.file_name().to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let dir = e.path();
        let Some(owner) = Owner::of_dir(&dir) else { continue };
        if owner.alive() {
            continue;
        }
        n += remove_listed(&dir.join(LIST), owner);
        if let Ok(sub) = std::fs::read_dir(&dir) {
            for s in sub.flatten() {
                if s.file_type().is_ok_and(|t| t.is_dir()) {
                    n += remove_listed(&s.path().join(LIST), owner);
                }
            }
        }
        n += usize::from(std::fs::remove_dir_all(&dir).is_ok());
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_marked_directories_of_dead_owners_go() {
        let root = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        // A dead owner: pid 1 with a start time it never had.
        let dead = Owner { pid: 1, start: u64::MAX };
        let me = Owner::me();
        assert!(me.alive() && !dead.alive());
        let stale = make_dir(root.path(), PREFIX, dead).unwrap();
        std::fs::create_dir(stale.join("w1")).unwrap();
        let tree = make_dir(elsewhere.path(), "kdelta-dbench-", dead).unwrap();
        record(&stale.join("w1").join(LIST), &tree).unwrap();
        // Listed, but not marked as the dead owner's: stays.
        let foreign = elsewhere.path().join("foreign");
        std::fs::create_dir(&foreign).unwrap();
        record(&stale.join("w1").join(LIST), &foreign).unwrap();
        let live = make_dir(root.path(), PREFIX, me).unwrap();
        let unmarked = root.path().join("kdelta-unmarked");
        std::fs::create_dir(&unmarked).unwrap();
        std::os::unix::fs::symlink(&stale, root.path().join("kdelta-link")).unwrap();
        assert_eq!(sweep(root.path()), 2);
        assert!(!stale.exists() && !tree.exists());
        assert!(foreign.exists() && live.exists() && unmarked.exists());
        assert!(remove_if_owned(&live, me));
        assert!(!remove_if_owned(&unmarked, me));
    }

    #[test]
    fn markers_parse() {
        let o = Owner { pid: 42, start: 7 };
        assert_eq!(Owner::parse(&o.text()), Some(o));
        assert_eq!(Owner::parse("someone 42 7"), None);
    }
}
