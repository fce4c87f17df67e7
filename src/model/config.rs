//! A configuration as recorded: its name, CPU set, scheduling policy and
//! environment. Resolving one against a machine and applying it live in
//! `config/`.

use crate::cpuset::CpuSet;
use serde::{Deserialize, Serialize};

/// A configuration resolved against this machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// The name as written canonically (`noht+sched=batch`).
    pub name: String,
    pub cpus: CpuSet,
    pub policy: Option<Policy>,
    /// Environment variables set in the worker before the benchmark starts.
    pub env: Vec<(String, String)>,
    /// Kernel settings the parent switches before this configuration's
    /// workers (`+thp=never`); machine-wide, never applied by the worker.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) knobs: Vec<super::knob::KnobSetting>,
    /// `+counters=on|off`: count perf events in this configuration's workers
    /// whatever `--counters` says (what counting costs, measured interleaved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) counters: Option<bool>,
    /// Control-group limits (`+cpu.max=`, `+cpuset=`, `+memory.max=`, ...):
    /// the worker runs in a cgroup of its own with these written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) cgroup: Vec<CgroupLimit>,
}

/// One control-group limit, as written in a configuration. Each names its
/// cgroup v2 file; `sys::cgroup` and `harness::cgroups` map it to v1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "limit", rename_all = "snake_case")]
pub(crate) enum CgroupLimit {
    /// `cpu.max`: at most `quota_us` of CPU time every `period_us` (v1
    /// `cpu.cfs_quota_us`, `cpu.cfs_period_us`).
    CpuMax { quota_us: u64, period_us: u64 },
    /// `cpu.weight`, 1..=10000 (v1 `cpu.shares` = weight * 1024 / 100).
    CpuWeight { weight: u64 },
    /// `cpuset.cpus` (and the parent's memory nodes in `cpuset.mems`).
    Cpuset { cpus: CpuSet },
    /// `memory.max` in bytes (v1 `memory.limit_in_bytes`).
    MemoryMax { bytes: u64 },
    /// `memory.high` in bytes (v1 has no throttling threshold: its
    /// `memory.soft_limit_in_bytes` acts only under machine-wide pressure).
    MemoryHigh { bytes: u64 },
}

impl CgroupLimit {
    /// The canonical modifier, `cpu.max=50000/100000`.
    pub(crate) fn name(&self) -> String {
        match self {
            CgroupLimit::CpuMax { quota_us, period_us } => format!("cpu.max={quota_us}/{period_us}"),
            CgroupLimit::CpuWeight { weight } => format!("cpu.weight={weight}"),
            CgroupLimit::Cpuset { cpus } => format!("cpuset={cpus}"),
            CgroupLimit::MemoryMax { bytes } => format!("memory.max={bytes}"),
            CgroupLimit::MemoryHigh { bytes } => format!("memory.high={bytes}"),
        }
    }
}

impl Config {
    /// Whether one worker can measure both: the two differ at most in what
    /// a worker switches point by point (`counters`), so a benchmark that
    /// takes turns (`BenchInfo::lockstep`) measures them side by side, and
    /// what counting costs is read between samples a few milliseconds apart
    /// in one process rather than between workers.
    pub(crate) fn shares_worker_with(&self, other: &Config) -> bool {
        let bare = |c: &Config| Config { name: String::new(), counters: None, ..c.clone() };
        bare(self) == bare(other)
    }

    /// The placement a configuration is named for: the part of its name
    /// before the first modifier (`noht` of `noht+sched=batch`).
    fn placement_name(&self) -> &str {
        self.name.split('+').next().unwrap_or_default()
    }

    /// `noht [cpus 0-1]`, `up [cpu 0, sched=fifo]`.
    pub fn describe(&self) -> String {
        let mut s = format!("{} [cpu{} {}", self.name, if self.cpus.len() == 1 { "" } else { "s" }, self.cpus);
        if let Some(p) = self.policy {
            s.push_str(&format!(", sched={}", p.name()));
        }
        for (k, v) in &self.env {
            s.push_str(&format!(", {k}={v}"));
        }
        for k in &self.knobs {
            s.push_str(&format!(", {}", k.name()));
        }
        if let Some(c) = self.counters {
            s.push_str(if c { ", counters=on" } else { ", counters=off" });
        }
        for l in &self.cgroup {
            s.push_str(&format!(", {}", l.name()));
        }
        s.push(']');
        s
    }
}

/// Scheduling policies of sched(7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    Other,
    Batch,
    Idle,
    Fifo,
    Rr,
}

impl Policy {
    pub(crate) const NAMES: &'static [&'static str] = &["other", "batch", "idle", "fifo", "rr"];
    pub(crate) fn parse(s: &str) -> Option<Policy> {
        Some(match s {
            "other" | "normal" => Policy::Other,
            "batch" => Policy::Batch,
            "idle" => Policy::Idle,
            "fifo" => Policy::Fifo,
            "rr" => Policy::Rr,
            _ => return None,
        })
    }
    pub(crate) fn name(self) -> &'static str {
        match self {
            Policy::Other => "other",
            Policy::Batch => "batch",
            Policy::Idle => "idle",
            Policy::Fifo => "fifo",
            Policy::Rr => "rr",
        }
    }
    pub(crate) fn is_realtime(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr)
    }
}

/// A line for each group of configurations named for different placements
/// that resolved to the same CPUs on this machine (`up` and `cpus=0` where
/// `up` is CPU 0; `up` and `noht` under a one-CPU affinity), so a difference
/// between them is not read as an effect of placement: `same placement: up
/// and cpus=0 both run on CPU 0 here (nothing else differs: a difference
/// between them is noise)`.
pub(crate) fn same_placement(configs: &[Config]) -> Vec<String> {
    let mut groups: Vec<Vec<&Config>> = Vec::new();
    for c in configs.iter().filter(|c| !c.cpus.is_empty()) {
        match groups.iter_mut().find(|g| g[0].cpus == c.cpus) {
            Some(g) => g.push(c),
            None => groups.push(vec![c]),
        }
    }
    let mut out = Vec::new();
    for g in groups {
        let mut placements: Vec<&str> = g.iter().map(|c| c.placement_name()).collect();
        placements.sort_unstable();
        placements.dedup();
        if placements.len() < 2 {
            continue;
        }
        let names: Vec<&str> = g.iter().map(|c| c.name.as_str()).collect();
        let bare = |c: &Config| Config { name: String::new(), ..c.clone() };
        let alike = g.iter().all(|c| bare(c) == bare(g[0]));
        let plural = if g[0].cpus.len() == 1 { "" } else { "s" };
        let names = match names.split_last() {
            Some((last, rest)) if rest.len() == 1 => format!("{} and {last} both", rest[0]),
            _ => format!("{} all", names.join(", ")),
        };
        out.push(format!(
            "same placement: {names} run on CPU{plural} {} here, so a difference between them is not a placement effect{}",
            g[0].cpus,
            if alike { " (nothing else differs: it is noise)" } else { "" }
        ));
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A configuration named `name` over `cpus`, nothing else set (tests).
    pub(crate) fn cfg(name: &str, cpus: &str, policy: Option<Policy>) -> Config {
        Config {
            name: name.into(),
            cpus: cpus.parse().unwrap(),
            policy,
            env: Vec::new(),
            knobs: Vec::new(),
            counters: None,
            cgroup: Vec::new(),
        }
    }

    #[test]
    fn configurations_on_the_same_cpus_are_said_to_share_a_placement() {
        let up = cfg("up", "0", None);
        let lines = same_placement(&[up.clone(), cfg("cpus=0", "0", None), cfg("all", "0-1", None)]);
        assert_eq!(
            lines,
            ["same placement: up and cpus=0 both run on CPU 0 here, so a difference between them is not a placement \
              effect (nothing else differs: it is noise)"]
        );
        // Another policy on the same CPUs: still the same placement, not noise.
        let l = same_placement(&[up.clone(), cfg("noht+sched=batch", "0", Some(Policy::Batch))]);
        assert!(l.len() == 1 && l[0].contains("CPU 0") && !l[0].contains("noise"), "{l:?}");
        // One placement with modifiers, or different CPUs: nothing to say.
        assert!(same_placement(&[up.clone(), cfg("up+sched=batch", "0", Some(Policy::Batch))]).is_empty());
        assert!(same_placement(&[up, cfg("noht", "0-1", None)]).is_empty());
    }
}
