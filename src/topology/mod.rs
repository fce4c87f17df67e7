//! The machine's CPU topology as sysfs describes it.
//!
//! Everything is read below a configurable root (`/` on a live system, the
//! extracted folder of a capture in tests), so the reader is tested against
//! fake and recorded sysfs trees. Cores are keyed on their sibling set, never
//! on `core_id` alone (it repeats across packages); siblings that report
//! different `core_id`s (AMD compute units) are separate cores, as hwloc has
//! them. Packages are keyed on their sibling sets too.
//!
//! Files: `read.rs` the sysfs reader, `host.rs` the host snapshot (topology
//! plus CPU model, kernel, preemption model, glibc, mitigations), `show.rs`
//! the text of `kdelta topo`, `fake.rs` a builder of fake sysfs trees for tests.

use crate::cpuset::CpuSet;
use serde::{Deserialize, Serialize};
use std::path::Path;

mod allowed;
#[cfg(test)]
mod captures;
#[cfg(test)]
pub(crate) mod fake;
pub(crate) mod host;
mod read;
pub(crate) mod show;
#[cfg(test)]
mod tests;

pub(crate) use host::Host;

/// One online logical CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Cpu {
    pub(crate) id: u32,
    /// Index into [`Topology::cores`].
    pub(crate) core: usize,
    /// `physical_package_id`; -1 where sysfs says so or lacks it. When those ids
    /// do not tell the packages apart (POWER partitions write -1 for every CPU
    /// although each core is its own package), packages are told apart by their
    /// sibling sets (`package_cpus_list`/`core_siblings`) and numbered 0.. in
    /// CPU order instead.
    pub(crate) package: i64,
    pub(crate) die: Option<i64>,
    pub(crate) core_id: Option<i64>,
    /// Logical CPUs sharing this CPU's core, itself included (online ones only).
    pub(crate) siblings: CpuSet,
    pub(crate) node: Option<u32>,
}

/// One physical core: the unit SMT shares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Core {
    pub(crate) package: i64,
    pub(crate) core_id: Option<i64>,
    /// Online logical CPUs of this core, sorted.
    pub(crate) cpus: CpuSet,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Cache {
    pub(crate) level: u32,
    /// `Data`, `Instruction` or `Unified`.
    pub(crate) kind: String,
    pub(crate) size_bytes: Option<u64>,
    /// CPUs sharing this cache instance.
    pub(crate) shared: CpuSet,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct NumaNode {
    pub(crate) id: u32,
    pub(crate) cpus: CpuSet,
    pub(crate) mem_bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    /// Logical CPUs that are online, by id.
    pub online: CpuSet,
    /// CPUs present but offline.
    pub(crate) offline: CpuSet,
    /// Online CPUs, sorted by id.
    pub(crate) cpus: Vec<Cpu>,
    /// Physical cores, sorted by their lowest CPU id.
    pub(crate) cores: Vec<Core>,
    /// Distinct `physical_package_id`s, sorted.
    pub(crate) packages: Vec<i64>,
    /// Each cache instance once (level, kind, shared set), sorted by level then first CPU.
    pub(crate) caches: Vec<Cache>,
    pub(crate) nodes: Vec<NumaNode>,
    /// `smt/control` (`on`, `off`, `forceoff`, `notsupported`, `notimplemented`), if present.
    pub(crate) smt_control: Option<String>,
    /// `smt/active`, if present.
    pub(crate) smt_active: Option<bool>,
    /// The CPUs kdelta may use, when fewer than are online (affinity mask,
    /// cgroup cpuset): configurations are derived from [`Topology::usable`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restriction: Option<Restriction>,
}

/// Online CPUs kdelta may not use: what it may use and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Restriction {
    pub cpus: CpuSet,
    /// What restricts them, e.g. `cgroup cpuset 0-1 (sys/fs/cgroup/cpuset.cpus.effective)`.
    pub source: String,
}

impl Topology {
    /// Read the topology below `root` (`/` for the live machine).
    ///
    /// Missing files degrade to unknown values (an offline CPU or a very old
    /// kernel lacks many); a missing `cpu` directory or an unreadable or
    /// malformed `online` list is an error naming the path.
    pub fn read(root: &Path) -> anyhow::Result<Topology> {
        Ok(read::read_topology(root)?.0)
    }

    /// Like [`Topology::read`], with remarks on what sysfs lacked and what was
    /// assumed instead (shown by `kdelta topo`).
    pub fn read_with_notes(root: &Path) -> anyhow::Result<(Topology, Vec<String>)> {
        read::read_topology(root)
    }

    /// Keep only `allowed` CPUs (and the cores that still have one).
    pub fn restricted(&self, allowed: &CpuSet) -> Topology {
        let mut cores = Vec::new();
        let mut remap = vec![usize::MAX; self.cores.len()];
        for (i, c) in self.cores.iter().enumerate() {
            let cpus = c.cpus.intersection(allowed);
            if !cpus.is_empty() {
                remap[i] = cores.len();
                cores.push(Core { package: c.package, core_id: c.core_id, cpus });
            }
        }
        let cpus = self
            .cpus
            .iter()
            .filter(|c| allowed.contains(c.id) && remap.get(c.core).is_some_and(|&r| r != usize::MAX))
            .map(|c| Cpu { core: remap[c.core], siblings: c.siblings.intersection(allowed), ..c.clone() })
            .collect::<Vec<_>>();
        Topology { online: self.online.intersection(allowed), cpus, cores, ..self.clone() }
    }

    /// The topology of the CPUs kdelta may use: itself, or restricted to
    /// [`Topology::restriction`].
    pub fn usable(&self) -> std::borrow::Cow<'_, Topology> {
        match &self.restriction {
            Some(r) => std::borrow::Cow::Owned(self.restricted(&r.cpus)),
            None => std::borrow::Cow::Borrowed(self),
        }
    }

    /// The core holding online CPU `cpu`.
    pub fn core_of(&self, cpu: u32) -> Option<&Core> {
        self.cores.iter().find(|c| c.cpus.contains(cpu))
    }

    /// Up to `n` CPUs of `cpus` for members that run at the same moment (a
    /// duet): one per core first, in core order, then the cores' other
    /// CPUs; fewer when `cpus` has fewer.
    pub fn spread(&self, cpus: &CpuSet, n: usize) -> Vec<u32> {
        let mut firsts = Vec::new();
        let mut rest = Vec::new();
        for c in &self.cores {
            let mine: Vec<u32> = c.cpus.iter().filter(|&x| cpus.contains(x)).collect();
            if let Some((f, r)) = mine.split_first() {
                firsts.push(*f);
                rest.extend_from_slice(r);
            }
        }
        // CPUs the topology does not list (a fake or partial one) come last.
        let listed: Vec<u32> = firsts.iter().chain(&rest).copied().collect();
        rest.extend(cpus.iter().filter(|x| !listed.contains(x)));
        firsts.into_iter().chain(rest).take(n).collect()
    }

    /// The lowest-numbered CPU of every core: SMT off by affinity.
    pub fn first_cpu_per_core(&self) -> CpuSet {
        CpuSet::from_iter(self.cores.iter().filter_map(|c| c.cpus.first()))
    }

    /// Cores with more than one online logical CPU.
    pub fn smt_cores(&self) -> impl Iterator<Item = &Core> {
        self.cores.iter().filter(|c| c.cpus.len() > 1)
    }

    /// Online CPUs of package `pkg` (as numbered in [`Topology::packages`]).
    pub fn package_cpus(&self, pkg: i64) -> CpuSet {
        CpuSet::from_iter(self.cpus.iter().filter(|c| c.package == pkg).map(|c| c.id))
    }

    /// True when some core has more than one online logical CPU.
    pub fn has_smt(&self) -> bool {
        self.cores.iter().any(|c| c.cpus.len() > 1)
    }

    /// Size of the largest cache level with a known size, in bytes (the LLC).
    pub fn llc_bytes(&self) -> Option<u64> {
        let lvl =
            self.caches.iter().filter(|c| c.size_bytes.is_some() && c.kind != "Instruction").map(|c| c.level).max()?;
        self.caches.iter().filter(|c| c.level == lvl && c.kind != "Instruction").filter_map(|c| c.size_bytes).max()
    }
}

/// A topology where every CPU is its own core (no SMT).
pub fn flat(cpus: &CpuSet) -> Topology {
    let list: Vec<u32> = cpus.iter().collect();
    Topology {
        online: cpus.clone(),
        offline: CpuSet::new(),
        cpus: list
            .iter()
            .enumerate()
            .map(|(i, &id)| Cpu {
                id,
                core: i,
                package: -1,
                die: None,
                core_id: None,
                siblings: CpuSet::from_iter([id]),
                node: None,
            })
            .collect(),
        cores: list.iter().map(|&id| Core { package: -1, core_id: None, cpus: CpuSet::from_iter([id]) }).collect(),
        packages: vec![-1],
        caches: vec![],
        nodes: vec![],
        smt_control: None,
        smt_active: None,
        restriction: None,
    }
}
