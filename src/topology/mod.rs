//! The machine's CPU topology as sysfs describes it.
//!
//! Everything is read below a configurable root (`/` on a live system, the
//! extracted folder of a capture in tests), so the reader is tested against
//! fake and recorded sysfs trees. Cores are keyed on their sibling set, never
//! on `core_id` alone (it repeats across packages).
//!
//! STUB: the reader (`Topology::read`) and host snapshot are being written; the
//! types below are the interface the rest of kdelta uses.

use crate::cpuset::CpuSet;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One online logical CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cpu {
    pub id: u32,
    /// Index into [`Topology::cores`].
    pub core: usize,
    /// `physical_package_id`; -1 where sysfs says so or lacks it.
    pub package: i64,
    pub die: Option<i64>,
    pub core_id: Option<i64>,
    /// Logical CPUs sharing this CPU's core, itself included (online ones only).
    pub siblings: CpuSet,
    pub node: Option<u32>,
}

/// One physical core: the unit SMT shares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Core {
    pub package: i64,
    pub core_id: Option<i64>,
    /// Online logical CPUs of this core, sorted.
    pub cpus: CpuSet,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cache {
    pub level: u32,
    /// `Data`, `Instruction` or `Unified`.
    pub kind: String,
    pub size_bytes: Option<u64>,
    /// CPUs sharing this cache instance.
    pub shared: CpuSet,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumaNode {
    pub id: u32,
    pub cpus: CpuSet,
    pub mem_bytes: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    /// Logical CPUs that are online, by id.
    pub online: CpuSet,
    /// CPUs present but offline.
    pub offline: CpuSet,
    /// Online CPUs, sorted by id.
    pub cpus: Vec<Cpu>,
    /// Physical cores, sorted by their lowest CPU id.
    pub cores: Vec<Core>,
    /// Distinct `physical_package_id`s, sorted.
    pub packages: Vec<i64>,
    /// Each cache instance once (level, kind, shared set), sorted by level then first CPU.
    pub caches: Vec<Cache>,
    pub nodes: Vec<NumaNode>,
    /// `smt/control` (`on`, `off`, `forceoff`, `notsupported`, `notimplemented`), if present.
    pub smt_control: Option<String>,
    /// `smt/active`, if present.
    pub smt_active: Option<bool>,
}

impl Topology {
    /// Read the topology below `root` (`/` for the live machine).
    pub fn read(_root: &Path) -> anyhow::Result<Topology> {
        anyhow::bail!("topology reader not written yet")
    }

    /// True when some core has more than one online logical CPU.
    pub fn has_smt(&self) -> bool {
        self.cores.iter().any(|c| c.cpus.len() > 1)
    }

    /// Size of the largest cache level with a known size, in bytes (the LLC).
    pub fn llc_bytes(&self) -> Option<u64> {
        let lvl = self.caches.iter().filter(|c| c.size_bytes.is_some() && c.kind != "Instruction").map(|c| c.level).max()?;
        self.caches.iter().filter(|c| c.level == lvl && c.kind != "Instruction").filter_map(|c| c.size_bytes).max()
    }
}
