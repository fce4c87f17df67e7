//! A journal found on disk: checked before it is trusted, read, replayed or
//! discarded, and the warning every command gives while one is left.

use super::*;

/// Is the journal at `path` another user's, in a directory this user may not
/// even look into (root's `/run/kdelta`, 0700, seen by anyone else)? Such a
/// journal is not this user's to restore, and a run that switches no kernel
/// setting needs no journal: it neither adopts nor warns about it.
pub(crate) fn hidden(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied)
}

/// Create `path` for appending, failing if anything is there (no link
/// followed), mode 0600 before the umask.
pub(super) fn open_new(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .append(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Is the directory `dir` one only root (or this euid) can write?
pub(super) fn check_dir(dir: &Path) -> std::result::Result<(), String> {
    let md = std::fs::metadata(dir).map_err(|e| format!("its directory {}: {e}", shown(dir)))?;
    let me = crate::sys::knobs::euid();
    if !md.is_dir() {
        return Err(format!("{} is not a directory", shown(dir)));
    }
    if md.uid() != 0 && md.uid() != me {
        return Err(format!("its directory {} belongs to uid {}, not root or uid {me}", shown(dir), md.uid()));
    }
    if md.mode() & 0o022 != 0 {
        return Err(format!(
            "its directory {} is writable by group or others (mode {:o})",
            shown(dir),
            md.mode() & 0o7777
        ));
    }
    Ok(())
}

/// The journal's bytes, if the file is one only its owner could have
/// written (see the module's notes); `Ok(None)` when there is none.
/// Never blocks on a FIFO or reads more than [`MAX_BYTES`].
pub(super) fn load(path: &Path) -> std::result::Result<Option<Vec<u8>>, String> {
    let md = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    if !md.file_type().is_file() {
        return Err(format!("it is {}, not a regular file", crate::sys::output::file_kind(md.file_type())));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    check_dir(dir)?;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| e.to_string())?;
    let fm = f.metadata().map_err(|e| e.to_string())?;
    if !fm.is_file() || fm.ino() != md.ino() || fm.dev() != md.dev() {
        return Err("it was replaced while it was opened".into());
    }
    let me = crate::sys::knobs::euid();
    if fm.uid() != 0 && fm.uid() != me {
        return Err(format!("it belongs to uid {}, not root or uid {me}", fm.uid()));
    }
    if fm.permissions().mode() & 0o7777 != 0o600 {
        return Err(format!("its mode is {:o}, not 600", fm.permissions().mode() & 0o7777));
    }
    let mut buf = Vec::new();
    (&mut f).take(MAX_BYTES + 1).read_to_end(&mut buf).map_err(|e| e.to_string())?;
    if buf.len() as u64 > MAX_BYTES {
        return Err(format!("it is larger than {MAX_BYTES} bytes"));
    }
    Ok(Some(buf))
}

/// Read the journal at `path`; `None` when there is none. A file that is
/// not a journal kdelta wrote is bad input, one line.
pub(crate) fn read(path: &Path) -> Result<Option<Entries>> {
    let refused = |why: String| bad_input(format!("the kernel-settings journal {} is unusable: {why}", path.display()));
    match load(path).map_err(refused)? {
        None => Ok(None),
        Some(b) => Entries::parse(&b).map(Some).map_err(refused),
    }
}

/// What is said of a refused journal: left in place, how to clear it.
pub(super) fn kept(path: &Path) -> String {
    format!("it is left in place and nothing was restored (`kdelta restore --discard` removes {} without restoring anything)", path.display())
}

/// Put back what `e` lists below `root`: originals newest first, then
/// unmount. Each file is checked again ([`ck::confined`]) as it is written.
/// Returns one line per action; the failures, if any, as the error (the
/// journal is then kept).
pub(super) fn undo(e: &Entries, root: &Path) -> std::result::Result<Vec<String>, Vec<String>> {
    let mut done = Vec::new();
    let mut failed = Vec::new();
    for c in e.cgroups.iter().rev() {
        if let Err(why) = cgroup_confined(root, c) {
            failed.push(format!("{} was not removed: {why}", c.display()));
            continue;
        }
        if !c.is_dir() {
            continue;
        }
        match crate::sys::cgroup::remove(c) {
            Ok(()) => done.push(format!("cgroup {} removed", c.display())),
            Err(err) => failed.push(err.to_string()),
        }
    }
    for (p, ctrl) in e.enabled.iter().rev() {
        match crate::sys::knobs::write_text(p, &format!("-{ctrl}")) {
            Ok(()) => done.push(format!("{ctrl} disabled again in {}", p.display())),
            // Another cgroup below still uses it: left as it is, harmless.
            Err(err) => done.push(format!("{ctrl} left enabled in {}: {err}", p.display())),
        }
    }
    for (p, orig) in e.wrote.iter().rev() {
        let real = match ck::confined(root, p) {
            Ok(r) => r,
            Err(why) => {
                failed.push(format!("{} was not restored: {why}", p.display()));
                continue;
            }
        };
        let now = crate::sys::knobs::current_value(&real).ok();
        if now.as_deref() == Some(orig.as_str()) {
            done.push(format!("{} already {orig}", p.display()));
            continue;
        }
        match crate::sys::knobs::write_text(&real, orig) {
            Ok(()) => {
                crate::sys::knobs::settle(&real, orig);
                done.push(format!("{} restored to {orig}", p.display()));
            }
            Err(err) => failed.push(format!("{} could not be restored to {orig:?}: {err}", p.display())),
        }
    }
    for m in &e.mounted {
        if *m != root.join(crate::sys::knobs::DEBUGFS) {
            failed.push(format!(
                "{} was not unmounted: kdelta mounts only debugfs, at {}",
                m.display(),
                root.join(crate::sys::knobs::DEBUGFS).display()
            ));
        } else if root != Path::new("/") {
            done.push(format!("{} left alone: kdelta mounts debugfs only on the live machine", m.display()));
        } else if !crate::sys::knobs::debugfs_mounted(root) {
            done.push(format!("{} is not a debugfs mount now: nothing to unmount", m.display()));
        } else {
            match crate::sys::knobs::umount_debugfs() {
                Ok(()) => done.push(format!("{} unmounted", m.display())),
                Err(err) => failed.push(format!("{} could not be unmounted: {err}", m.display())),
            }
        }
    }
    if failed.is_empty() {
        Ok(done)
    } else {
        Err(failed)
    }
}

/// Replay and remove the journal at `path` for the settings below `root`
/// (for `kdelta restore`); `None` when there is none. Refuses (bad input,
/// the journal kept, nothing written) one that is not kdelta's or names
/// anything but kernel settings below `root`, and one whose owner still
/// runs, unless it is us.
pub(crate) fn replay(path: &Path, root: &Path) -> Result<Option<Vec<String>>> {
    let _lock = match replay_lock(path) {
        Turn::Ours(l) => l,
        Turn::Done => {
            return Ok(Some(vec![
                "restored at the same moment by another kdelta (a killed run's guard, or a restore)".to_string()
            ]))
        }
    };
    let e = match read(path) {
        Ok(Some(e)) => e,
        Ok(None) => return Ok(None),
        Err(err) => return Err(bad_input(format!("{err}; {}", kept(path)))),
    };
    if let Some(o) = e.owner {
        if o != Owner::me() && o.alive() {
            return Err(bad_input(format!(
                "kdelta {} is running and holds the kernel-settings journal {}: it restores them itself when it ends",
                o.pid,
                path.display()
            )));
        }
    }
    if let Err(why) = e.check(root) {
        return Err(bad_input(format!(
            "the kernel-settings journal {} is refused: {why}; {}",
            path.display(),
            kept(path)
        )));
    }
    match undo(&e, root) {
        Ok(done) => {
            remove(path)?;
            Ok(Some(done))
        }
        Err(failed) => {
            bail!("{}; the journal {} is kept: fix and run `kdelta restore` again", failed.join("; "), path.display())
        }
    }
}

/// Whose turn it is to replay a journal.
enum Turn {
    /// Ours: the lock (`None` when the file could not be locked, a FIFO or
    /// a link: [`read`] refuses it with its reason) is held until the
    /// journal is removed.
    Ours(Option<nix::fcntl::Flock<std::fs::File>>),
    /// Another replayer (a killed run's guard and `kdelta restore` race
    /// for it) held the lock and removed the journal meanwhile.
    Done,
}

/// Take the journal at `path` for replaying: an exclusive `flock` on the
/// file, waited for, so two replayers never write the settings or remove
/// the file at once. Nothing is read through this descriptor.
fn replay_lock(path: &Path) -> Turn {
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path);
    let Ok(f) = opened else { return Turn::Ours(None) };
    let Ok(md) = f.metadata() else { return Turn::Ours(None) };
    if !md.is_file() {
        return Turn::Ours(None);
    }
    let Ok(lock) = nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusive) else {
        return Turn::Ours(None);
    };
    match std::fs::symlink_metadata(path) {
        Ok(now) if now.ino() == md.ino() && now.dev() == md.dev() => Turn::Ours(Some(lock)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Turn::Done,
        // Replaced meanwhile: read and judge what is there now.
        _ => Turn::Ours(None),
    }
}

/// `kdelta restore --discard`: remove the journal at `path` without
/// restoring anything, whatever it holds (garbage included), unless it is
/// the journal of a kdelta still running. Never follows a link (the link is
/// removed) and never removes a directory or a device. Says what it did.
pub(crate) fn discard(path: &Path) -> Result<String> {
    let md = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(format!("nothing to discard: no journal at {}", path.display()))
        }
        Err(e) => return Err(e).with_context(|| format!("looking at the kernel-settings journal {}", path.display())),
    };
    let ft = md.file_type();
    if ft.is_dir() || ft.is_char_device() || ft.is_block_device() {
        return Err(bad_input(format!(
            "{} is {}, not a journal: not removed",
            path.display(),
            crate::sys::output::file_kind(ft)
        )));
    }
    let mut lost = String::new();
    if let Ok(Some(e)) = read(path) {
        if let Some(o) = e.owner.filter(|o| *o != Owner::me() && o.alive()) {
            return Err(bad_input(format!(
                "kdelta {} is running and holds the kernel-settings journal {}: not removed",
                o.pid,
                path.display()
            )));
        }
        if !e.is_empty() {
            lost = format!(" (not restored: {})", e.describe());
        }
    }
    remove(path)?;
    Ok(format!("{} removed without restoring anything{lost}", path.display()))
}

/// Remove the journal at `path`; its directory too when it is kdelta's own
/// (`.../kdelta`) and nothing else is left in it, so the system is left as
/// found (a kdelta making its journal at the same moment makes the
/// directory again: `Journal::create`).
pub(super) fn remove(path: &Path) -> Result<()> {
    std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
    if let Some(d) = path.parent() {
        if let Ok(f) = std::fs::File::open(d) {
            let _ = f.sync_all();
        }
        if d.file_name().is_some_and(|n| n == "kdelta") {
            // Fails, as it should, while anything is in it.
            let _ = std::fs::remove_dir(d);
        }
    }
    Ok(())
}

/// The warning every command prints, on one line, while a journal of a
/// killed kdelta exists or the journal's path holds something unusable;
/// `None` when there is none or its owner still runs. Never blocks, never
/// reads more than [`MAX_BYTES`].
pub(crate) fn warning(root: &Path) -> Option<String> {
    paths(root).iter().find_map(|p| warning_of(p))
}

/// What stands between this machine and a run that finds it as it should:
/// a journal a killed kdelta left (kernel settings or cgroups still
/// changed, or an unusable file where a journal goes), as [`warning`] says
/// it; `None` when there is none, its owner still runs, or it is `doctor
/// --apply`'s, which the next run adopts. `kdelta agent` takes no job while
/// this is `Some`.
pub(crate) fn restore_needed(root: &Path) -> Option<String> {
    paths(root).iter().find_map(|p| match read(p) {
        Ok(None) => None,
        Ok(Some(e)) if e.tuned || e.owner.is_some_and(|o| o.alive()) => None,
        _ => warning_of(p),
    })
}

pub(super) fn warning_of(p: &Path) -> Option<String> {
    if hidden(p) {
        return None;
    }
    let p = p.to_path_buf();
    let e = match read(&p) {
        Ok(e) => e?,
        Err(err) => {
            return Some(format!(
                "kdelta: warning: {}: `kdelta restore --discard` removes it",
                err.to_string().replace(['\n', '\r'], " ")
            ))
        }
    };
    if e.owner.is_some_and(|o| o.alive()) {
        return None;
    }
    if e.tuned {
        return Some(format!(
            "kdelta: note: kernel settings tuned by `kdelta doctor --apply` ({}; journal {}): restored at the end of the next run, by `kdelta doctor --reset` or `kdelta restore`",
            e.describe(),
            p.display()
        ));
    }
    Some(format!(
        "kdelta: warning: a kdelta that was killed left {} changed ({}; journal {}): run `kdelta restore`",
        if e.cgroups.is_empty() && e.enabled.is_empty() { "kernel settings" } else { "cgroups" },
        if e.is_empty() { "nothing changed yet".to_string() } else { e.describe() },
        p.display()
    ))
}

/// Refuse to change kernel settings while another journal exists (its
/// originals would be lost) or the journal's path holds something unusable.
pub(crate) fn preflight(root: &Path) -> Result<()> {
    preflight_at(&path(root))
}

/// The same for the cgroups' journal: one a killed kdelta left is restored
/// first (an isolating cpuset of its own would still hold the machine).
pub(crate) fn preflight_cgroups(root: &Path) -> Result<()> {
    preflight_at(&cgroups_path(root))
}

pub(super) fn preflight_at(p: &Path) -> Result<()> {
    let p = p.to_path_buf();
    let e = read(&p).map_err(|err| bad_input(format!("{err}: `kdelta restore --discard` removes it")))?;
    if let Some(e) = e {
        if e.tuned && !e.owner.is_some_and(|o| o.alive()) {
            // `doctor --apply`'s: the run adopts it.
            return Ok(());
        }
        let who = match e.owner {
            Some(o) if o.alive() => format!("kdelta {} is changing kernel settings now", o.pid),
            _ => "a kdelta that was killed left kernel settings changed: run `kdelta restore` first".to_string(),
        };
        return Err(bad_input(format!("{who} (journal {})", p.display())));
    }
    Ok(())
}
