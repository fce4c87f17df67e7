//! The machine `kdelta place` (and the `place.loops` benchmark) places on:
//! the live topology restricted to the CPUs this process may use.

use crate::cpuset::CpuSet;
use crate::topology::{flat, Topology};
use std::path::Path;

/// The live topology restricted to the CPUs this process may use, and a note
/// when it had to be guessed.
pub(crate) fn live_topology() -> (Topology, Option<String>) {
    let allowed: Option<CpuSet> = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).ok().map(|m| {
        CpuSet::from_iter((0..nix::sched::CpuSet::count() as u32).filter(|&c| m.is_set(c as usize).unwrap_or(false)))
    });
    match Topology::read(Path::new("/")) {
        Ok(t) => {
            let t = match &allowed {
                Some(a) => restrict(&t, a),
                None => t,
            };
            (t, None)
        }
        Err(e) => {
            let cpus = allowed.unwrap_or_else(|| {
                CpuSet::from_iter(0..std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1))
            });
            let mut t = flat(&cpus);
            // The kernel's own summary, readable without the topology reader.
            let active = std::fs::read_to_string("/sys/devices/system/cpu/smt/active").ok().map(|s| s.trim() == "1");
            t.smt_active = active;
            t.smt_control =
                std::fs::read_to_string("/sys/devices/system/cpu/smt/control").ok().map(|s| s.trim().to_string());
            let smt = match active {
                Some(false) => "smt/active is 0, so SMT is absent",
                Some(true) => "smt/active is 1: SMT is present but its siblings are unknown here",
                None => "SMT siblings are unknown",
            };
            (t, Some(format!("topology unavailable ({e:#}); treating each allowed CPU as its own core; {smt}")))
        }
    }
}

/// Whether SMT is known to be absent, known present, or unknown (None).
pub(crate) fn smt_known(t: &Topology, guessed: bool) -> Option<bool> {
    if t.has_smt() {
        Some(true)
    } else if !guessed || t.smt_active == Some(false) {
        Some(false)
    } else {
        None
    }
}

/// Keep only `allowed` CPUs (and cores that still have one).
pub(crate) fn restrict(t: &Topology, allowed: &CpuSet) -> Topology {
    t.restricted(allowed)
}
