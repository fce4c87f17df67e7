//! Placement decisions for `kdelta place`, as pure functions of the topology
//! and of where kdelta's own loops run now.
//!
//! "Busy" means: running one of the loops kdelta launched (kdelta cannot see
//! what else the machine runs, so the decisions are about its own processes).
//! - [`naive`]: a random logical CPU (the 2002 scheduler's blindness to siblings).
//! - [`smt_aware`]: Molnar's properties for launched processes: a fully idle
//!   core first (the previous core when idle: affinity to the physical CPU),
//!   then an idle sibling (of the previous core first), then any idle logical
//!   CPU, else the least loaded logical CPU.
//! - [`rebalance`]: the monitor's active balancing: when a core runs two loops
//!   while another core runs none, move one over.
//! - [`shared_while_idle`]: the condition the report counts.

use crate::topology::Topology;
use rand::Rng;
use std::collections::BTreeMap;

/// Loops running per logical CPU (CPUs not in the map run none).
pub(crate) type Busy = BTreeMap<u32, usize>;

fn load(busy: &Busy, cpu: u32) -> usize {
    busy.get(&cpu).copied().unwrap_or(0)
}

/// Index of the core holding `cpu`.
pub(crate) fn core_of(topo: &Topology, cpu: u32) -> Option<usize> {
    topo.cpus
        .iter()
        .find(|c| c.id == cpu)
        .map(|c| c.core)
        .or_else(|| topo.cores.iter().position(|c| c.cpus.contains(cpu)))
}

fn core_load(topo: &Topology, busy: &Busy, core: usize) -> usize {
    topo.cores[core].cpus.iter().map(|c| load(busy, c)).sum()
}

/// A random online logical CPU.
pub(crate) fn naive(topo: &Topology, rng: &mut impl Rng) -> Option<u32> {
    let cpus: Vec<u32> = topo.cpus.iter().map(|c| c.id).collect();
    if cpus.is_empty() {
        return None;
    }
    Some(cpus[rng.gen_range(0..cpus.len())])
}

/// Where a new process of a loop goes under `smt-aware`; `prev` is the CPU
/// the loop's previous process ran on.
pub(crate) fn smt_aware(topo: &Topology, busy: &Busy, prev: Option<u32>) -> Option<u32> {
    if topo.cores.is_empty() {
        return None;
    }
    let prev_core = prev.and_then(|p| core_of(topo, p));
    let first_idle = |core: usize| -> Option<u32> {
        let cpus = &topo.cores[core].cpus;
        match prev {
            Some(p) if cpus.contains(p) && load(busy, p) == 0 => Some(p),
            _ => cpus.iter().find(|&c| load(busy, c) == 0),
        }
    };
    // 1. A fully idle core, the previous one first.
    let order: Vec<usize> = prev_core.into_iter().chain(0..topo.cores.len()).collect();
    if let Some(&core) = order.iter().find(|&&c| core_load(topo, busy, c) == 0) {
        return first_idle(core);
    }
    // 2. An idle sibling: on the previous core first, then on the least loaded core.
    if let Some(cpu) = prev_core.and_then(first_idle) {
        return Some(cpu);
    }
    let mut cores: Vec<usize> = (0..topo.cores.len()).collect();
    cores.sort_by_key(|&c| (core_load(topo, busy, c), c));
    if let Some(cpu) = cores.iter().find_map(|&c| first_idle(c)) {
        return Some(cpu);
    }
    // 3. Everything busy: the least loaded logical CPU, the previous one on a tie.
    let least = topo.cpus.iter().map(|c| load(busy, c.id)).min()?;
    match prev {
        Some(p) if topo.online.contains(p) && load(busy, p) == least => Some(p),
        _ => topo.cpus.iter().map(|c| c.id).find(|&c| load(busy, c) == least),
    }
}

/// True when some core runs two or more loops while another core runs none.
pub(crate) fn shared_while_idle(topo: &Topology, busy: &Busy) -> bool {
    let loads: Vec<usize> = (0..topo.cores.len()).map(|c| core_load(topo, busy, c)).collect();
    loads.iter().any(|&l| l >= 2) && loads.contains(&0)
}

/// The monitor's move, if one is due: `(from_cpu, to_cpu)` taking one loop
/// off the most loaded doubled core onto the first CPU of a fully idle core.
pub(crate) fn rebalance(topo: &Topology, busy: &Busy) -> Option<(u32, u32)> {
    let n = topo.cores.len();
    let idle = (0..n).find(|&c| core_load(topo, busy, c) == 0)?;
    let src = (0..n)
        .filter(|&c| core_load(topo, busy, c) >= 2)
        .max_by_key(|&c| (core_load(topo, busy, c), usize::MAX - c))?;
    let from = topo.cores[src].cpus.iter().filter(|&c| load(busy, c) > 0).max_by_key(|&c| (load(busy, c), c))?;
    let to = topo.cores[idle].cpus.first()?;
    Some((from, to))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cpuset::CpuSet;
    use crate::topology::{Core, Cpu};
    use rand::SeedableRng;

    /// A topology from a list of cores, each a list of CPU ids; package = index / per_package.
    pub(crate) fn topo(cores: &[&[u32]], per_package: usize) -> Topology {
        let mut cpus = Vec::new();
        let mut cs = Vec::new();
        for (i, ids) in cores.iter().enumerate() {
            let set = CpuSet::from_iter(ids.iter().copied());
            for &id in ids.iter() {
                cpus.push(Cpu {
                    id,
                    core: i,
                    package: (i / per_package) as i64,
                    die: None,
                    core_id: Some(i as i64),
                    siblings: set.clone(),
                    node: Some(0),
                });
            }
            cs.push(Core { package: (i / per_package) as i64, core_id: Some(i as i64), cpus: set });
        }
        cpus.sort_by_key(|c| c.id);
        let online = CpuSet::from_iter(cpus.iter().map(|c| c.id));
        let packages = (0..cores.len().div_ceil(per_package) as i64).collect();
        Topology {
            online,
            offline: CpuSet::new(),
            cpus,
            cores: cs,
            packages,
            caches: vec![],
            nodes: vec![],
            smt_control: None,
            smt_active: None,
            restriction: None,
        }
    }

    /// 2 cores x 2 threads with the siblings numbered (0,2) and (1,3): "siblings (0,2)".
    pub(crate) fn two_by_two_interleaved() -> Topology {
        topo(&[&[0, 2], &[1, 3]], 1)
    }
    /// 2 cores x 2 threads, siblings (0,1) and (2,3).
    pub(crate) fn two_by_two_adjacent() -> Topology {
        topo(&[&[0, 1], &[2, 3]], 1)
    }
    /// 2 packages x 4 cores x 2 threads, siblings (n, n+8).
    pub(crate) fn two_by_four_by_two() -> Topology {
        let v: Vec<Vec<u32>> = (0..8).map(|c| vec![c, c + 8]).collect();
        let r: Vec<&[u32]> = v.iter().map(|x| x.as_slice()).collect();
        topo(&r, 4)
    }

    fn busy(cpus: &[u32]) -> Busy {
        let mut b = Busy::new();
        for &c in cpus {
            *b.entry(c).or_default() += 1;
        }
        b
    }

    #[test]
    fn idle_core_first_respecting_sibling_numbering() {
        let t = two_by_two_adjacent();
        assert_eq!(smt_aware(&t, &busy(&[0]), None), Some(2));
        let t = two_by_two_interleaved();
        assert_eq!(smt_aware(&t, &busy(&[0]), None), Some(1));
        assert_eq!(smt_aware(&t, &busy(&[1]), None), Some(0));
    }

    #[test]
    fn previous_core_is_preferred_when_idle() {
        let t = two_by_two_interleaved();
        assert_eq!(smt_aware(&t, &busy(&[]), Some(3)), Some(3));
        // Previous CPU busy (another loop), its sibling idle, the other core idle: the idle core.
        assert_eq!(smt_aware(&t, &busy(&[3]), Some(3)), Some(0));
        let t = two_by_four_by_two();
        assert_eq!(smt_aware(&t, &busy(&[0, 1]), Some(13)), Some(13));
    }

    #[test]
    fn idle_sibling_when_no_core_is_idle() {
        let t = two_by_two_interleaved();
        assert_eq!(smt_aware(&t, &busy(&[0, 1]), Some(1)), Some(3));
        assert_eq!(smt_aware(&t, &busy(&[0, 1]), None), Some(2));
        let t = two_by_four_by_two();
        let all_cores: Vec<u32> = (0..8).collect();
        assert_eq!(smt_aware(&t, &busy(&all_cores), Some(5)), Some(13));
        // Everything busy: least loaded, previous on a tie.
        let all: Vec<u32> = (0..16).collect();
        assert_eq!(smt_aware(&t, &busy(&all), Some(9)), Some(9));
        let mut b = busy(&all);
        b.insert(9, 2);
        assert_eq!(smt_aware(&t, &b, Some(9)), Some(0));
    }

    #[test]
    fn no_smt_behaves_like_idle_cpu_first() {
        let t = topo(&[&[0], &[1]], 1);
        assert_eq!(smt_aware(&t, &busy(&[0]), None), Some(1));
        // Two loops on one CPU while the other runs none: move one.
        assert_eq!(rebalance(&t, &busy(&[0, 0])), Some((0, 1)));
        assert_eq!(rebalance(&t, &busy(&[0, 1])), None);
    }

    #[test]
    fn rebalance_and_shared_detection() {
        let t = two_by_two_interleaved();
        let b = busy(&[0, 2]);
        assert!(shared_while_idle(&t, &b));
        assert_eq!(rebalance(&t, &b), Some((2, 1)));
        let b = busy(&[0, 1]);
        assert!(!shared_while_idle(&t, &b));
        assert_eq!(rebalance(&t, &b), None);
        let t = two_by_four_by_two();
        let b = busy(&[3, 11, 0, 1, 2, 4, 5, 6]);
        assert_eq!(rebalance(&t, &b), Some((11, 7)));
        assert!(shared_while_idle(&t, &b));
    }

    #[test]
    fn naive_covers_all_cpus() {
        let t = two_by_four_by_two();
        let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..400 {
            seen.insert(naive(&t, &mut r).unwrap());
        }
        assert_eq!(seen.len(), 16);
    }
}
