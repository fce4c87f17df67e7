//! Switching kernel settings between workers, in the parent: before a
//! configuration's worker the settings it names are set (each change
//! journaled first) and every other setting kdelta changed is put back; the
//! settle time is paid here, before the worker starts, outside any timed
//! work. What each configuration read back is kept for its results. The
//! journal is replayed when the session ends, a worker fails, or it is
//! dropped (an error on the way out).
//!
//! A run that finds the journal `kdelta doctor --apply` left adopts it
//! ([`Session::start`]): the doctor's settings are its baseline, kept while
//! it runs (a configuration without settings, or a failed switch, puts back
//! that baseline, not the originals), and its end replays the whole journal,
//! the doctor's settings included.

use super::journal::{self, Journal};
use crate::config::knobs as ck;
use crate::config::Config;
use crate::model::knob::Knob;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why the kernel settings could not be switched or put back: one line,
/// naming the setting or file.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SwitchError {
    /// The settings journal could not be written or replayed.
    #[error("{0:#}")]
    Journal(anyhow::Error),
    #[error("mounting debugfs at {}: {source}", .at.display())]
    MountDebugfs { at: PathBuf, source: std::io::Error },
    /// A setting (`smt=off`) this machine cannot take.
    #[error("{name}: {source}")]
    Setting { name: String, source: ck::KnobError },
    #[error("reading {}: {source}", .file.display())]
    Read { file: PathBuf, source: std::io::Error },
    #[error("not writing {value:?}: {source}")]
    NotConfined { value: String, source: ck::KnobError },
    #[error("writing {value:?} to {}: {source}", .file.display())]
    Write { value: String, file: PathBuf, source: std::io::Error },
    /// Several files could not be put back.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    PutBack(Vec<SwitchError>),
}

pub(crate) struct Session {
    root: PathBuf,
    journal: Option<Journal>,
    /// The journal was `doctor --apply`'s: mid-run, put back to `mine`,
    /// replay only at the end.
    adopted: bool,
    /// Each file this session changed and its value before that change
    /// (the baseline a configuration without that setting gets back).
    mine: Vec<(PathBuf, String)>,
    /// Per configuration name: every distinct read-back, `thp=never`.
    read: BTreeMap<String, Vec<String>>,
}

impl Session {
    pub(crate) fn new(root: &Path) -> Session {
        Session { root: root.to_path_buf(), journal: None, adopted: false, mine: Vec::new(), read: BTreeMap::new() }
    }

    /// The session of a run: one adopting the journal `kdelta doctor
    /// --apply` left, if there is one, else a new one when the run switches
    /// settings (`switches`), else none.
    ///
    /// A journal this user may not look at (root's, seen by another user)
    /// is not adopted by a run that switches nothing: such a run needs no
    /// journal and no privilege.
    pub(crate) fn start(root: &Path, switches: bool) -> anyhow::Result<Option<Session>> {
        if !switches && journal::hidden(&journal::path(root)) {
            return Ok(None);
        }
        let adopted = Journal::adopt(&journal::path(root), root)?;
        if adopted.is_none() && !switches {
            return Ok(None);
        }
        let mut s = Session::new(root);
        s.adopted = adopted.is_some();
        s.journal = adopted;
        Ok(Some(s))
    }

    fn journal(&mut self) -> Result<&mut Journal, SwitchError> {
        if self.journal.is_none() {
            self.journal = Some(Journal::create(&journal::path(&self.root), &self.root).map_err(SwitchError::Journal)?);
        }
        Ok(self.journal.as_mut().expect("just made"))
    }

    /// Make the machine's settings those of `cfg`: its own set, every other
    /// one kdelta changed back to its original. `Err`: why not (the caller
    /// fails the point and restores).
    pub(crate) fn switch(&mut self, cfg: &Config) -> Result<(), SwitchError> {
        if cfg.knobs.is_empty() {
            return self.restore();
        }
        let mut want: Vec<(PathBuf, String)> = Vec::new();
        for s in &cfg.knobs {
            if s.knob == Knob::Preempt && self.root == Path::new("/") && !crate::sys::knobs::debugfs_mounted(&self.root)
            {
                let at = self.root.join(crate::sys::knobs::DEBUGFS);
                self.journal()?.will_mount(&at).map_err(SwitchError::Journal)?;
                crate::sys::knobs::mount_debugfs().map_err(|source| SwitchError::MountDebugfs { at, source })?;
            }
            want.extend(ck::targets(s, &self.root).map_err(|source| SwitchError::Setting { name: s.name(), source })?);
        }
        // Others back first (smt=on before a governor of CPUs it brings back).
        let others: Vec<(PathBuf, String)> =
            self.mine.iter().filter(|(p, _)| !want.iter().any(|(w, _)| w == p)).cloned().collect();
        for (p, v) in others.iter().chain(want.iter()) {
            let now =
                crate::sys::knobs::current_value(p).map_err(|source| SwitchError::Read { file: p.clone(), source })?;
            if &now == v {
                continue;
            }
            // Checked again where it is written, as `kdelta restore` does.
            let real =
                ck::confined(&self.root, p).map_err(|source| SwitchError::NotConfined { value: v.clone(), source })?;
            self.journal()?.will_write(p, &now).map_err(SwitchError::Journal)?;
            if !self.mine.iter().any(|(m, _)| m == p) {
                self.mine.push((p.clone(), now.clone()));
            }
            crate::sys::knobs::write_text(&real, v).map_err(|source| SwitchError::Write {
                value: v.clone(),
                file: p.clone(),
                source,
            })?;
            crate::sys::knobs::settle(&real, v);
        }
        let seen = self.read.entry(cfg.name.clone()).or_default();
        for s in &cfg.knobs {
            let got = format!(
                "{}={}",
                s.knob.label(),
                ck::read_back(&s.knob, &self.root).unwrap_or_else(|| "unreadable".into())
            );
            if !seen.contains(&got) {
                seen.push(got);
            }
        }
        Ok(())
    }

    /// Put the settings back as the run found them: the originals (the
    /// journal replayed and removed), or, in a session that adopted `doctor
    /// --apply`'s journal, the doctor's settings (the journal kept for
    /// [`Session::finish`]).
    pub(crate) fn restore(&mut self) -> Result<(), SwitchError> {
        if self.adopted {
            return self.put_back();
        }
        self.finish()
    }

    /// Every file this session changed back to its value before, newest first.
    fn put_back(&mut self) -> Result<(), SwitchError> {
        let mut failed = Vec::new();
        for (p, v) in self.mine.iter().rev() {
            if crate::sys::knobs::current_value(p).ok().as_deref() == Some(v.as_str()) {
                continue;
            }
            match ck::confined(&self.root, p) {
                Ok(real) => match crate::sys::knobs::write_text(&real, v) {
                    Ok(()) => crate::sys::knobs::settle(&real, v),
                    Err(source) => failed.push(SwitchError::Write { value: v.clone(), file: p.clone(), source }),
                },
                Err(source) => failed.push(SwitchError::NotConfined { value: v.clone(), source }),
            }
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(SwitchError::PutBack(failed))
        }
    }

    /// The end: everything the journal holds put back to its original and
    /// the journal removed (nothing to do without one).
    pub(crate) fn finish(&mut self) -> Result<(), SwitchError> {
        self.mine.clear();
        self.adopted = false;
        match self.journal.take() {
            Some(j) => j.replay().map(|_| ()).map_err(SwitchError::Journal),
            None => Ok(()),
        }
    }

    /// What a configuration read back, `thp=never`, in the order first seen.
    pub(crate) fn read_back(&self, config: &str) -> &[String] {
        self.read.get(config).map(Vec::as_slice).unwrap_or(&[])
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Err(e) = self.finish() {
            eprintln!("kdelta: restoring kernel settings: {e}");
        }
    }
}

#[cfg(test)]
#[path = "knobs_tests.rs"]
mod tests;
