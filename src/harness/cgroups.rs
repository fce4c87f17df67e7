//! The cgroups a run makes, in the parent: one per worker for its
//! configuration's limits (`+cpu.max=`, `+cpuset=`, ...), and with
//! `--isolate` the cpusets that keep every other task off the measured CPUs.
//! Each cgroup is journaled before it is made (`journal::cgroups_path`, a
//! journal of its own), so `kdelta restore` removes what a killed kdelta
//! left: what is still in a cgroup is moved to its parent, then it is removed.
//!
//! Layout, per hierarchy holding a controller the limits use (one on v2,
//! one per controller on v1), below the cgroup kdelta is in:
//! `kdelta-PID/wN` (N the worker's number). The worker joins its cgroups
//! itself (`worker::join`) before it applies its affinity, so it is measured
//! under the limits from its first instruction of benchmark code. On v2 the
//! controllers are enabled in `cgroup.subtree_control` of kdelta's own cgroup
//! when they are not (journaled, disabled again at the end) and of
//! `kdelta-PID`; on v1 a new cpuset gets its parent's CPUs and memory nodes
//! before anything can join it.
//!
//! `--isolate CPUS` (`isolate`): on v1, as `cset shield` does, a cpuset
//! `kdelta-PID-system` at the top of the cpuset hierarchy gets the other CPUs
//! and every task of the top cpuset is moved into it (kernel threads bound to
//! a CPU cannot move and are counted), and `kdelta-PID-shield` gets the
//! measured CPUs, exclusively; on v2, `kdelta-PID-shield` is made an isolated
//! partition (`cpuset.cpus.partition`), which takes its CPUs from every other
//! cgroup. Workers join the shield. At the end (or `kdelta restore`) the
//! system cpuset's tasks go back to the top, then both are removed.

use super::journal::{self, Journal};
use crate::config::cgroup::controller;
use crate::cpuset::CpuSet;
use crate::model::config::{CgroupLimit, Config};
use crate::sys::cgroup::{self as cg, Controller, Hierarchy, Layout};
use std::path::{Path, PathBuf};

/// Why a run's cgroups could not be made, isolated or put back: one line.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CgroupsError {
    #[error(transparent)]
    Cgroup(#[from] cg::CgroupError),
    /// The cgroups journal could not be written or replayed.
    #[error("{0:#}")]
    Journal(anyhow::Error),
    #[error("{0} (on cgroup v2 a cgroup holding processes other than the root cannot hand controllers down)")]
    HandDown(cg::CgroupError),
    #[error("{limit}: the {controller} controller is not mounted")]
    NotMounted { limit: String, controller: &'static str },
    #[error("--isolate needs the cgroup cpuset controller ({0})")]
    NoCpuset(String),
    #[error("the kernel refused CPUs {cpus} as an isolated partition: {state}")]
    Refused { cpus: CpuSet, state: String },
    #[error("--isolate moves every task of the top cpuset, and kdelta is in cpuset {} (a container's): run it in the top one", .0.display())]
    NotTop(PathBuf),
    #[error(transparent)]
    CpuList(#[from] crate::cpuset::CpuListError),
    #[error("--isolate needs a CPU left for other tasks: the machine's cpuset is {0}")]
    NoCpuLeft(CpuSet),
}

/// Where one worker runs: the cgroups it joins, and the `cpu.stat` whose
/// throttling its samples record.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Placement {
    pub(crate) join: Vec<PathBuf>,
    pub(crate) cpu_stat: Option<PathBuf>,
    /// The cgroups made for this worker alone, removed after it.
    made: Vec<PathBuf>,
}

/// The cpuset the measured CPUs are isolated in, which workers join.
#[derive(Debug, Clone)]
pub(crate) struct Shield {
    dir: PathBuf,
}

pub(crate) struct Cgroups {
    root: PathBuf,
    pub(crate) layout: Layout,
    journal: Option<Journal>,
    pid: u32,
    pub(crate) shield: Option<Shield>,
}

impl Cgroups {
    pub(crate) fn new(root: &Path) -> Cgroups {
        Cgroups {
            root: root.to_path_buf(),
            layout: Layout::read(root),
            journal: None,
            pid: std::process::id(),
            shield: None,
        }
    }

    fn journal(&mut self) -> Result<&mut Journal, CgroupsError> {
        if self.journal.is_none() {
            let j = Journal::create(&journal::cgroups_path(&self.root), &self.root).map_err(CgroupsError::Journal)?;
            self.journal = Some(j);
        }
        Ok(self.journal.as_mut().expect("just made"))
    }

    /// Journal, then make, cgroup `dir`.
    fn make(&mut self, dir: &Path) -> Result<(), CgroupsError> {
        self.journal()?.will_make(dir).map_err(CgroupsError::Journal)?;
        Ok(cg::make(dir)?)
    }

    /// Enable `ctrls` in the v2 cgroup `dir`'s `subtree_control`, each one
    /// missing journaled first when `journaled` (a cgroup not kdelta's own).
    fn enable(&mut self, dir: &Path, ctrls: &[Controller], journaled: bool) -> Result<(), CgroupsError> {
        let file = dir.join("cgroup.subtree_control");
        let now = std::fs::read_to_string(&file).unwrap_or_default();
        for c in ctrls {
            if now.split_whitespace().any(|w| w == c.name()) {
                continue;
            }
            if journaled {
                self.journal()?.will_enable(&file, c.name()).map_err(CgroupsError::Journal)?;
            }
            cg::write(dir, "cgroup.subtree_control", &format!("+{}", c.name())).map_err(CgroupsError::HandDown)?;
        }
        Ok(())
    }

    /// A new v1 cpuset gets its parent's CPUs and memory nodes: it is empty,
    /// and nothing can join an empty cpuset.
    fn fill_cpuset_v1(dir: &Path, cpus: Option<&CpuSet>) -> Result<(), CgroupsError> {
        let parent = dir.parent().unwrap_or(dir);
        let c = match cpus {
            Some(c) => c.to_string(),
            None => cg::read(parent, "cpuset.cpus")?,
        };
        cg::write(dir, "cpuset.cpus", &c)?;
        Ok(cg::write(dir, "cpuset.mems", &cg::read(parent, "cpuset.mems")?)?)
    }

    /// The hierarchies `limits` need, one each, with the controllers each holds.
    fn hierarchies(&self, limits: &[CgroupLimit]) -> Result<Vec<(Hierarchy, Vec<Controller>)>, CgroupsError> {
        let mut out: Vec<(Hierarchy, Vec<Controller>)> = Vec::new();
        for l in limits {
            let c = controller(l);
            let h =
                self.layout.get(c).ok_or_else(|| CgroupsError::NotMounted { limit: l.name(), controller: c.name() })?;
            match out.iter_mut().find(|(x, _)| x.mount == h.mount) {
                Some((_, cs)) if !cs.contains(&c) => cs.push(c),
                Some(_) => {}
                None => out.push((h.clone(), vec![c])),
            }
        }
        Ok(out)
    }

    /// The directory kdelta's workers' cgroups go below in hierarchy `h`:
    /// the shield when isolating and `h` holds cpuset (or is v2), else
    /// `kdelta-PID` below kdelta's own cgroup (made on first use).
    fn base(&mut self, h: &Hierarchy, ctrls: &[Controller]) -> Result<PathBuf, CgroupsError> {
        if let Some(s) = &self.shield {
            if s.dir.starts_with(&h.mount) {
                let dir = s.dir.clone();
                if h.version == 2 {
                    self.enable(&dir, ctrls, false)?;
                }
                return Ok(dir);
            }
        }
        let base = h.own.join(format!("kdelta-{}", self.pid));
        if !base.is_dir() {
            if h.version == 2 {
                let own = h.own.clone();
                self.enable(&own, ctrls, true)?;
            }
            self.make(&base)?;
            if h.version == 1 && ctrls.contains(&Controller::Cpuset) {
                Self::fill_cpuset_v1(&base, None)?;
            }
        }
        if h.version == 2 {
            self.enable(&base, ctrls, false)?;
        }
        Ok(base)
    }

    /// Make worker `job_no`'s cgroups for `cfg`'s limits (and join the
    /// shield when isolating). `Err`: why not (the caller fails the point).
    /// What was made of it is removed again on failure.
    pub(crate) fn place(&mut self, cfg: &Config, job_no: usize) -> Result<Placement, CgroupsError> {
        let mut p = Placement::default();
        match self.place_into(cfg, job_no, &mut p) {
            Ok(()) => Ok(p),
            Err(e) => {
                self.release(&p);
                Err(e)
            }
        }
    }

    fn place_into(&mut self, cfg: &Config, job_no: usize, p: &mut Placement) -> Result<(), CgroupsError> {
        for (h, ctrls) in self.hierarchies(&cfg.cgroup)? {
            let base = self.base(&h, &ctrls)?;
            let dir = base.join(format!("w{job_no}"));
            p.made.push(dir.clone());
            self.make(&dir)?;
            for l in cfg.cgroup.iter().filter(|l| ctrls.contains(&controller(l))) {
                write_limit(&dir, h.version, l)?;
            }
            if h.version == 1
                && ctrls.contains(&Controller::Cpuset)
                && !cfg.cgroup.iter().any(|l| matches!(l, CgroupLimit::Cpuset { .. }))
            {
                Self::fill_cpuset_v1(&dir, None)?;
            }
            if ctrls.contains(&Controller::Cpu) {
                p.cpu_stat = Some(dir.join("cpu.stat"));
            }
            p.join.push(dir);
        }
        if let Some(s) = &self.shield {
            if !p.join.iter().any(|d| d.starts_with(&s.dir)) {
                p.join.push(s.dir.clone());
            }
        }
        Ok(())
    }

    /// Remove a worker's own cgroups (it has ended; anything left in them
    /// goes to their parent first).
    pub(crate) fn release(&mut self, p: &Placement) {
        for d in p.made.iter().rev() {
            if let Err(e) = cg::remove(d) {
                eprintln!("kdelta: {e}");
            }
        }
    }

    /// Keep every other task off `cpus` for the run (see the module's
    /// notes); says how. `Err`: why not, one line.
    pub(crate) fn isolate(&mut self, cpus: &CpuSet) -> Result<String, CgroupsError> {
        let h = self.layout.cpuset.clone().ok_or_else(|| CgroupsError::NoCpuset(self.layout.describe()))?;
        let shield = h.mount.join(format!("kdelta-{}-shield", self.pid));
        let describe = if h.version == 2 {
            self.enable(&h.mount.clone(), &[Controller::Cpuset], true)?;
            self.make(&shield)?;
            cg::write(&shield, "cpuset.cpus", &cpus.to_string())?;
            cg::write(&shield, "cpuset.cpus.partition", "isolated")?;
            let state = cg::read(&shield, "cpuset.cpus.partition").unwrap_or_default();
            if state.starts_with("isolated invalid") || state.contains("invalid") {
                return Err(CgroupsError::Refused { cpus: cpus.clone(), state });
            }
            format!("CPUs {cpus} an isolated cpuset partition (cgroup v2)")
        } else {
            if h.own != h.mount {
                return Err(CgroupsError::NotTop(h.own.strip_prefix(&h.mount).unwrap_or(&h.own).to_path_buf()));
            }
            let all = CpuSet::parse_list(&cg::read(&h.mount, "cpuset.cpus")?)?;
            let rest = all.difference(cpus);
            if rest.is_empty() {
                return Err(CgroupsError::NoCpuLeft(all));
            }
            let system = h.mount.join(format!("kdelta-{}-system", self.pid));
            self.make(&system)?;
            Self::fill_cpuset_v1(&system, Some(&rest))?;
            self.make(&shield)?;
            Self::fill_cpuset_v1(&shield, Some(cpus))?;
            let exclusive = cg::write(&shield, "cpuset.cpu_exclusive", "1").is_ok();
            let (moved, stuck) = cg::move_all(&h.mount, &system);
            format!(
                "CPUs {cpus} a cpuset of their own{} (cgroup v1): {moved} tasks moved to CPUs {rest}, {stuck} that cannot move (kernel threads bound to a CPU) left",
                if exclusive { ", exclusive" } else { "" }
            )
        };
        self.shield = Some(Shield { dir: shield });
        Ok(describe)
    }

    /// Put everything back: tasks to the top cpuset, every cgroup kdelta
    /// made removed, controllers disabled again; the journal removed.
    pub(crate) fn finish(&mut self) -> Result<(), CgroupsError> {
        self.shield = None;
        match self.journal.take() {
            Some(j) => j.replay().map(|_| ()).map_err(CgroupsError::Journal),
            None => Ok(()),
        }
    }
}

impl Drop for Cgroups {
    fn drop(&mut self) {
        if let Err(e) = self.finish() {
            eprintln!("kdelta: removing cgroups: {e}");
        }
    }
}

/// Write one limit into cgroup `dir` of a v1 or v2 hierarchy.
pub(crate) fn write_limit(dir: &Path, version: u8, l: &CgroupLimit) -> Result<(), cg::CgroupError> {
    let parent = dir.parent().unwrap_or(dir);
    match (l, version) {
        (CgroupLimit::CpuMax { quota_us, period_us }, 2) => {
            cg::write(dir, "cpu.max", &format!("{quota_us} {period_us}"))
        }
        (CgroupLimit::CpuMax { quota_us, period_us }, _) => {
            cg::write(dir, "cpu.cfs_period_us", &period_us.to_string())?;
            cg::write(dir, "cpu.cfs_quota_us", &quota_us.to_string())
        }
        (CgroupLimit::CpuWeight { weight }, 2) => cg::write(dir, "cpu.weight", &weight.to_string()),
        (CgroupLimit::CpuWeight { weight }, _) => {
            cg::write(dir, "cpu.shares", &(weight * 1024 / 100).max(2).to_string())
        }
        (CgroupLimit::Cpuset { cpus }, 2) => {
            cg::write(dir, "cpuset.cpus", &cpus.to_string())?;
            match cg::read(parent, "cpuset.mems.effective") {
                Ok(m) if !m.is_empty() => cg::write(dir, "cpuset.mems", &m),
                _ => Ok(()),
            }
        }
        (CgroupLimit::Cpuset { cpus }, _) => {
            cg::write(dir, "cpuset.cpus", &cpus.to_string())?;
            cg::write(dir, "cpuset.mems", &cg::read(parent, "cpuset.mems")?)
        }
        (CgroupLimit::MemoryMax { bytes }, 2) => cg::write(dir, "memory.max", &bytes.to_string()),
        (CgroupLimit::MemoryMax { bytes }, _) => cg::write(dir, "memory.limit_in_bytes", &bytes.to_string()),
        (CgroupLimit::MemoryHigh { bytes }, 2) => cg::write(dir, "memory.high", &bytes.to_string()),
        (CgroupLimit::MemoryHigh { bytes }, _) => cg::write(dir, "memory.soft_limit_in_bytes", &bytes.to_string()),
    }
}

#[cfg(test)]
#[path = "cgroups_tests.rs"]
mod tests;
