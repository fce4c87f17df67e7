//! The sysfs reader behind [`Topology::read`].
//!
//! Reads `sys/devices/system/cpu` and `sys/devices/system/node` below a root.
//! Sysfs has changed over twenty years of kernels, so every per-CPU fact has a
//! chain of fallbacks (`core_cpus_list`, `thread_siblings_list`, then the hex
//! masks) and a missing file degrades to "unknown" instead of an error. Only
//! a missing `cpu` directory or an `online` file that exists but cannot be
//! read or parsed is an error. Cores and packages are partitions of the online
//! CPUs keyed on the sibling sets sysfs reports, never on `core_id` (it
//! repeats across packages).

use super::{Cache, Core, Cpu, NumaNode, Topology};
use crate::cpuset::CpuSet;
use anyhow::{bail, Context};
use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Read a small sysfs file as text without the trailing newline and the NUL
/// padding some kernels leave. `Ok(None)` when the file does not exist.
fn read_opt(path: &Path) -> anyhow::Result<Option<String>> {
    match fs::read(path) {
        Ok(bytes) => {
            let s = String::from_utf8_lossy(&bytes);
            Ok(Some(s.trim_matches(|c: char| c.is_whitespace() || c == '\0').to_string()))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR) => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Like [`read_opt`] but any failure is "unknown": for optional facts.
fn read_soft(path: &Path) -> Option<String> {
    read_opt(path).ok().flatten()
}

fn read_int(path: &Path) -> Option<i64> {
    read_soft(path)?.parse().ok()
}

/// A CPU list file, then the hex-mask file beside it (older kernels).
fn read_set(dir: &Path, list_names: &[&str], mask_names: &[&str]) -> Option<CpuSet> {
    for name in list_names {
        if let Some(s) = read_soft(&dir.join(name)) {
            if let Ok(set) = CpuSet::parse_list(&s) {
                return Some(set);
            }
        }
    }
    for name in mask_names {
        if let Some(s) = read_soft(&dir.join(name)) {
            if let Ok(set) = CpuSet::parse_mask(&s) {
                return Some(set);
            }
        }
    }
    None
}

/// A cache size as sysfs writes it: `32K`, `32768K`, `1024M`, `2G` or plain bytes.
pub(crate) fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let digits = s.bytes().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let n: u64 = s[..digits].parse().ok()?;
    let unit = s[digits..].trim().to_ascii_uppercase();
    let mult: u64 = match unit.as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// Numbered entries `PREFIXN` of a directory, sorted by N.
fn numbered_entries(dir: &Path, prefix: &str) -> io::Result<Vec<(u32, PathBuf)>> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(num) = name.strip_prefix(prefix) else {
            continue;
        };
        if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(n) = num.parse::<u32>() {
            if n <= crate::cpuset::MAX_CPU {
                out.push((n, e.path()));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// What sysfs says about one online CPU before grouping.
struct RawCpu {
    id: u32,
    siblings: Option<CpuSet>,
    package_set: Option<CpuSet>,
    package_id: Option<i64>,
    die: Option<i64>,
    core_id: Option<i64>,
}

/// Split `cpus` (ascending) into groups: each CPU not yet placed starts a group
/// with the CPUs of its reported set that are online and not placed yet. The
/// result is a partition even when sysfs is inconsistent between CPUs.
fn partition(ids: &[u32], online: &CpuSet, set_of: impl Fn(usize) -> Option<CpuSet>) -> Vec<CpuSet> {
    let mut placed = CpuSet::new();
    let mut groups = Vec::new();
    for (i, &id) in ids.iter().enumerate() {
        if placed.contains(id) {
            continue;
        }
        let mut g = set_of(i).unwrap_or_default().intersection(online).difference(&placed);
        g.insert(id);
        placed = placed.union(&g);
        groups.push(g);
    }
    groups
}

pub(crate) fn read_topology(root: &Path) -> anyhow::Result<(Topology, Vec<String>)> {
    let mut notes = Vec::new();
    let cpu_dir = root.join("sys/devices/system/cpu");
    if !cpu_dir.is_dir() {
        bail!("{}: no such directory (is {} a system root with /sys mounted?)", cpu_dir.display(), root.display());
    }
    let dirs = numbered_entries(&cpu_dir, "cpu").with_context(|| format!("cannot list {}", cpu_dir.display()))?;
    let dir_ids = CpuSet::from_iter(dirs.iter().map(|(n, _)| *n));
    let dir_of = |n: u32| cpu_dir.join(format!("cpu{n}"));

    let present = read_list_file(&cpu_dir, "present").unwrap_or(None);
    let known = present.clone().unwrap_or_else(|| dir_ids.clone());
    let online = online_cpus(&cpu_dir, &known, &dir_of, &mut notes)?;
    let offline = match read_list_file(&cpu_dir, "offline").unwrap_or(None) {
        Some(set) => set.intersection(&known),
        None => known.clone(),
    }
    .difference(&online);

    let ids: Vec<u32> = online.to_vec();
    let raw = RawCpus::read(&ids, &dir_of, &mut notes);
    let core_sets = core_partition(&ids, &online, &raw, &mut notes);
    let pkg_sets = package_sets(&ids, &online, &raw);
    let pkg_id = package_numbers(&pkg_sets, &raw, &mut notes);
    let pkg_of_cpu: BTreeMap<u32, i64> =
        pkg_sets.iter().zip(&pkg_id).flat_map(|(s, &p)| s.iter().map(move |c| (c, p))).collect();
    let nodes = read_nodes(root, &online);
    let cores = build_cores(core_sets, &pkg_of_cpu, &raw);
    let cpus = build_cpus(&raw, &cores, &pkg_of_cpu, &nodes);
    let mut packages: Vec<i64> = pkg_id.clone();
    packages.sort();
    packages.dedup();

    let core_cpus: BTreeMap<u32, &CpuSet> =
        cores.iter().flat_map(|c| c.cpus.iter().map(move |cpu| (cpu, &c.cpus))).collect();
    let caches = read_caches(&ids, &online, &dir_of, &core_cpus, &mut notes);
    if caches.is_empty() {
        notes.push("no cache information in sysfs".into());
    }
    let (smt_control, smt_active) = read_smt(&cpu_dir);
    let restriction = super::allowed::read(root, &online);
    Ok((
        Topology { online, offline, cpus, cores, packages, caches, nodes, smt_control, smt_active, restriction },
        notes,
    ))
}

/// A CPU list file of the `cpu` directory (`present`, `online`, `offline`):
/// `Ok(None)` when it does not exist, an error when it cannot be read or parsed.
fn read_list_file(cpu_dir: &Path, name: &str) -> anyhow::Result<Option<CpuSet>> {
    let p = cpu_dir.join(name);
    match read_opt(&p)? {
        None => Ok(None),
        Some(s) => CpuSet::parse_list(&s).map(Some).with_context(|| format!("malformed {}", p.display())),
    }
}

/// The online CPUs: the `online` list, or on very old kernels without one
/// every known CPU whose own `online` file does not say 0 (CPU0 often has
/// none). An error when none is online.
fn online_cpus(
    cpu_dir: &Path,
    known: &CpuSet,
    dir_of: &dyn Fn(u32) -> PathBuf,
    notes: &mut Vec<String>,
) -> anyhow::Result<CpuSet> {
    let online = match read_list_file(cpu_dir, "online")? {
        Some(set) => set,
        None => {
            notes.push(
                "no /sys/devices/system/cpu/online (old kernel): online CPUs taken from the cpuN directories".into(),
            );
            let mut set = CpuSet::new();
            for n in known.iter() {
                if read_soft(&dir_of(n).join("online")).as_deref() != Some("0") {
                    set.insert(n);
                }
            }
            set
        }
    };
    if online.is_empty() {
        bail!("{}: no online CPU found", cpu_dir.display());
    }
    Ok(online)
}

/// What sysfs says about each online CPU, in the order of the online list,
/// and where each CPU is in that list.
struct RawCpus {
    list: Vec<RawCpu>,
    index: BTreeMap<u32, usize>,
}

impl RawCpus {
    /// Read the `topology` directory of each CPU of `ids`; a CPU without one
    /// is noted and knows nothing.
    fn read(ids: &[u32], dir_of: &dyn Fn(u32) -> PathBuf, notes: &mut Vec<String>) -> RawCpus {
        let mut list = Vec::with_capacity(ids.len());
        let mut no_topo = CpuSet::new();
        for &id in ids {
            let t = dir_of(id).join("topology");
            if !t.is_dir() {
                no_topo.insert(id);
                list.push(RawCpu { id, siblings: None, package_set: None, package_id: None, die: None, core_id: None });
                continue;
            }
            list.push(RawCpu {
                id,
                siblings: read_set(&t, &["core_cpus_list", "thread_siblings_list"], &["core_cpus", "thread_siblings"]),
                package_set: read_set(
                    &t,
                    &["package_cpus_list", "core_siblings_list"],
                    &["package_cpus", "core_siblings"],
                ),
                package_id: read_int(&t.join("physical_package_id")),
                die: read_int(&t.join("die_id")).filter(|d| *d >= 0),
                core_id: read_int(&t.join("core_id")),
            });
        }
        if !no_topo.is_empty() {
            notes.push(format!("no topology directory for CPU {no_topo}: each taken as its own core"));
        }
        let index = list.iter().enumerate().map(|(i, r)| (r.id, i)).collect();
        RawCpus { list, index }
    }

    /// The facts of online CPU `cpu`.
    fn of(&self, cpu: u32) -> &RawCpu {
        &self.list[self.index[&cpu]]
    }
}

/// Cores: a partition keyed on the sibling sets. Where the siblings of a set
/// report different core_ids (AMD Bulldozer compute units, which kernels
/// since 4.6 list as thread siblings), each core_id is its own core, as
/// hwloc reads it.
fn core_partition(ids: &[u32], online: &CpuSet, raw: &RawCpus, notes: &mut Vec<String>) -> Vec<CpuSet> {
    let mut core_sets = Vec::new();
    let mut split = CpuSet::new();
    for g in partition(ids, online, |i| raw.list[i].siblings.clone()) {
        let core_ids: Option<Vec<i64>> = g.iter().map(|c| raw.of(c).core_id).collect();
        match core_ids {
            Some(cids) if cids.iter().any(|&x| x != cids[0]) => {
                let mut by_id: BTreeMap<i64, CpuSet> = BTreeMap::new();
                for (c, id) in g.iter().zip(cids) {
                    by_id.entry(id).or_default().insert(c);
                }
                split = split.union(&g);
                core_sets.extend(by_id.into_values());
            }
            _ => core_sets.push(g),
        }
    }
    if !split.is_empty() {
        notes.push(format!("CPUs {split} are listed as thread siblings but report different core_ids (compute units): one core per core_id"));
    }
    core_sets
}

/// Packages: keyed on the package sibling sets where sysfs has them,
/// otherwise on physical_package_id.
fn package_sets(ids: &[u32], online: &CpuSet, raw: &RawCpus) -> Vec<CpuSet> {
    let raw = &raw.list;
    if raw.iter().any(|r| r.package_set.is_some()) {
        // A CPU without a package set (no topology directory) joins the others
        // without one that share its physical_package_id (or lack one too).
        partition(ids, online, |i| {
            raw[i].package_set.clone().or_else(|| {
                let id = raw[i].package_id.unwrap_or(-1);
                Some(CpuSet::from_iter(
                    raw.iter().filter(|r| r.package_set.is_none() && r.package_id.unwrap_or(-1) == id).map(|r| r.id),
                ))
            })
        })
    } else {
        let mut by_id: BTreeMap<i64, CpuSet> = BTreeMap::new();
        for r in raw {
            by_id.entry(r.package_id.unwrap_or(-1)).or_default().insert(r.id);
        }
        let mut v: Vec<CpuSet> = by_id.into_values().collect();
        v.sort_by_key(|s| s.first());
        v
    }
}

/// The number of each package of `pkg_sets`. A package keeps its
/// physical_package_id when that id is the same for all its CPUs and differs
/// from every other package's; otherwise (POWER partitions write -1
/// everywhere) packages are numbered 0.. in CPU order.
fn package_numbers(pkg_sets: &[CpuSet], raw: &RawCpus, notes: &mut Vec<String>) -> Vec<i64> {
    let ids_of_pkg: Vec<Option<i64>> = pkg_sets
        .iter()
        .map(|s| {
            let mut it = s.iter().map(|c| raw.of(c).package_id.unwrap_or(-1));
            let first = it.next()?;
            it.all(|x| x == first).then_some(first)
        })
        .collect();
    let mut distinct: Vec<i64> = ids_of_pkg.iter().flatten().copied().collect();
    distinct.sort();
    distinct.dedup();
    let physical_ok = ids_of_pkg.iter().all(|x| x.is_some()) && distinct.len() == pkg_sets.len();
    if physical_ok {
        ids_of_pkg.iter().map(|x| x.unwrap_or(-1)).collect()
    } else {
        notes.push(
            "physical_package_id does not tell the packages apart: packages numbered by their sibling sets".into(),
        );
        (0..pkg_sets.len() as i64).collect()
    }
}

/// NUMA nodes (online CPUs only; memory from meminfo).
fn read_nodes(root: &Path, online: &CpuSet) -> Vec<NumaNode> {
    let mut nodes = Vec::new();
    let node_dir = root.join("sys/devices/system/node");
    if let Ok(entries) = numbered_entries(&node_dir, "node") {
        for (n, p) in entries {
            let cpus = read_set(&p, &["cpulist"], &["cpumap"]).unwrap_or_default().intersection(online);
            let mem_bytes = read_soft(&p.join("meminfo")).and_then(|m| parse_node_memtotal(&m));
            nodes.push(NumaNode { id: n, cpus, mem_bytes });
        }
    }
    nodes
}

/// The cores, in order of their first CPU, each within one package: a core
/// never spans packages (only inconsistent sysfs would say so), so a set
/// that does is split by package.
fn build_cores(core_sets: Vec<CpuSet>, pkg_of_cpu: &BTreeMap<u32, i64>, raw: &RawCpus) -> Vec<Core> {
    let core_sets: Vec<CpuSet> = core_sets
        .into_iter()
        .flat_map(|g| {
            let mut by_pkg: BTreeMap<i64, CpuSet> = BTreeMap::new();
            for c in g.iter() {
                by_pkg.entry(pkg_of_cpu.get(&c).copied().unwrap_or(-1)).or_default().insert(c);
            }
            by_pkg.into_values()
        })
        .collect();
    let mut cores: Vec<Core> = core_sets
        .iter()
        .map(|s| {
            let first = raw.of(s.first().unwrap_or(0)).core_id;
            Core {
                package: pkg_of_cpu.get(&s.first().unwrap_or(0)).copied().unwrap_or(-1),
                core_id: first,
                cpus: s.clone(),
            }
        })
        .collect();
    cores.sort_by_key(|c| c.cpus.first());
    cores
}

/// Each online CPU with its core, package and node.
fn build_cpus(raw: &RawCpus, cores: &[Core], pkg_of_cpu: &BTreeMap<u32, i64>, nodes: &[NumaNode]) -> Vec<Cpu> {
    let node_of_cpu: BTreeMap<u32, u32> = nodes.iter().flat_map(|nd| nd.cpus.iter().map(move |c| (c, nd.id))).collect();
    let core_of_cpu: BTreeMap<u32, usize> =
        cores.iter().enumerate().flat_map(|(i, c)| c.cpus.iter().map(move |cpu| (cpu, i))).collect();
    raw.list
        .iter()
        .map(|r| {
            let core = core_of_cpu[&r.id];
            Cpu {
                id: r.id,
                core,
                package: pkg_of_cpu.get(&r.id).copied().unwrap_or(-1),
                die: r.die,
                core_id: r.core_id,
                siblings: cores[core].cpus.clone(),
                node: node_of_cpu.get(&r.id).copied(),
            }
        })
        .collect()
}

/// The SMT switch: `smt/control` (`on`, `off`, `forceoff`, `notsupported`...)
/// and whether SMT is active (`smt/active`), each unknown when absent.
fn read_smt(cpu_dir: &Path) -> (Option<String>, Option<bool>) {
    let smt_dir = cpu_dir.join("smt");
    let smt_control = read_soft(&smt_dir.join("control")).filter(|s| !s.is_empty());
    let smt_active = read_soft(&smt_dir.join("active")).and_then(|s| match s.as_str() {
        "1" => Some(true),
        "0" => Some(false),
        _ => None,
    });
    (smt_control, smt_active)
}

/// `Node 0 MemTotal:       32489480 kB` -> bytes.
fn parse_node_memtotal(meminfo: &str) -> Option<u64> {
    for line in meminfo.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        if key.trim_end().ends_with("MemTotal") {
            let mut it = rest.split_whitespace();
            let n: u64 = it.next()?.parse().ok()?;
            return match it.next().map(|u| u.to_ascii_lowercase()) {
                Some(u) if u == "kb" => n.checked_mul(1024),
                None => Some(n),
                _ => None,
            };
        }
    }
    None
}

/// Every cache instance once, keyed on (level, type, online sharing set).
///
/// The sharing set is the union of `shared_cpu_list` and `shared_cpu_map`
/// (a kernel writes both from one mask; edited captures disagree, and hwloc
/// reads the map). An empty or missing set (ia64 writes zero masks for some
/// levels) is taken as the CPU's core.
fn read_caches(
    ids: &[u32],
    online: &CpuSet,
    dir_of: &dyn Fn(u32) -> PathBuf,
    core_cpus: &BTreeMap<u32, &CpuSet>,
    notes: &mut Vec<String>,
) -> Vec<Cache> {
    let mut seen: BTreeMap<(u32, String, CpuSet), Option<u64>> = BTreeMap::new();
    let mut guessed = CpuSet::new();
    for &id in ids {
        let Ok(entries) = numbered_entries(&dir_of(id).join("cache"), "index") else {
            continue;
        };
        for (_, p) in entries {
            let Some(level) = read_int(&p.join("level")).and_then(|l| u32::try_from(l).ok()) else {
                continue;
            };
            let kind = read_soft(&p.join("type")).filter(|k| !k.is_empty()).unwrap_or_else(|| "Unknown".into());
            let size = read_soft(&p.join("size")).and_then(|s| parse_size(&s)).filter(|&s| s > 0);
            let list = read_set(&p, &["shared_cpu_list"], &[]);
            let map = read_set(&p, &[], &["shared_cpu_map"]);
            let mut shared = list.unwrap_or_default().union(&map.unwrap_or_default()).intersection(online);
            if shared.is_empty() {
                guessed.insert(id);
                shared = core_cpus.get(&id).map(|c| (*c).clone()).unwrap_or_default();
            }
            shared.insert(id);
            seen.entry((level, kind, shared)).or_insert(size);
        }
    }
    if !guessed.is_empty() {
        notes.push(format!("caches of CPU {guessed} list no sharing CPUs: taken as shared by their core"));
    }
    let mut caches: Vec<Cache> =
        seen.into_iter().map(|((level, kind, shared), size_bytes)| Cache { level, kind, size_bytes, shared }).collect();
    caches.sort_by(|a, b| (a.level, a.shared.first(), &a.kind).cmp(&(b.level, b.shared.first(), &b.kind)));
    caches
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("32K"), Some(32 << 10));
        assert_eq!(parse_size("32768K\n"), Some(32 << 20));
        assert_eq!(parse_size("1024M"), Some(1 << 30));
        assert_eq!(parse_size("2G"), Some(2 << 30));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("K"), None);
        assert_eq!(parse_size("12Q"), None);
        assert_eq!(parse_size("99999999999999999999K"), None);
    }

    #[test]
    fn memtotal() {
        assert_eq!(parse_node_memtotal("Node 0 MemTotal:       1024 kB\nNode 0 MemFree: 1 kB\n"), Some(1 << 20));
        assert_eq!(parse_node_memtotal("Node 0 MemFree: 1 kB\n"), None);
    }
}
