//! The text of `kdelta topo`: the machine as kdelta sees it, in the spirit of
//! the 2003 study's Listing 1 (`/proc/cpuinfo` showing two siblings) but for
//! today's machines: CPU, kernel and preemption, packages, cores and their
//! sibling CPUs, SMT state, caches with their sharing, NUMA nodes, mitigations.

use super::{Cache, Host, Topology};
use crate::cpuset::CpuSet;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Up to this many cores, one line per core; above, packed lines per package.
const CORE_LINES_MAX: usize = 32;
/// Width at which packed lists wrap.
const WIDTH: usize = 100;

/// `32 KiB`, `1280 KiB`, `32 MiB`, `2 GiB`: exact, in the largest unit that divides.
pub(crate) fn size_text(bytes: u64) -> String {
    const K: u64 = 1 << 10;
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= K && b % K == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Pushes `items` separated by spaces onto lines starting with `indent`,
/// wrapping at [`WIDTH`].
fn wrap(out: &mut String, indent: &str, items: impl IntoIterator<Item = String>) {
    let mut line = String::from(indent);
    for it in items {
        if line.len() > indent.len() && line.len() + 1 + it.len() > WIDTH {
            let _ = writeln!(out, "{}", line.trim_end());
            line = String::from(indent);
        }
        if line.len() > indent.len() {
            line.push(' ');
        }
        line.push_str(&it);
    }
    if line.len() > indent.len() {
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

fn pkg_label(p: i64) -> String {
    if p < 0 {
        "pkg ?".into()
    } else {
        format!("pkg {p}")
    }
}

/// Render the snapshot as aligned text for a terminal.
pub(crate) fn render(host: &Host) -> String {
    let t = &host.topology;
    let mut o = String::new();
    render_system(&mut o, host);
    o.push('\n');
    render_cpus(&mut o, t);
    render_smt(&mut o, host);
    o.push('\n');
    render_caches(&mut o, t);
    o.push('\n');
    render_nodes(&mut o, t);
    o.push('\n');
    render_mitigations(&mut o, host);
    if !host.notes.is_empty() {
        o.push('\n');
        let _ = writeln!(o, "notes:");
        for n in &host.notes {
            let _ = writeln!(o, "  {n}");
        }
    }
    o
}

/// One `key        value` line.
fn kv(o: &mut String, k: &str, v: &str) {
    let _ = writeln!(o, "{k:<12}{v}");
}

/// Host, CPU model, architecture, kernel, preemption, glibc and memory.
fn render_system(o: &mut String, host: &Host) {
    kv(o, "host", &host.hostname);
    kv(o, "CPU model", &host.cpu_model);
    kv(o, "arch", &host.arch);
    if host.kernel_release == host.kernel_version || host.kernel_version.starts_with("unavailable") {
        kv(o, "kernel", &host.kernel_release);
    } else {
        kv(o, "kernel", &format!("{} {}", host.kernel_release, host.kernel_version));
    }
    if host.preempt_model.starts_with("unavailable") {
        kv(o, "preemption", &host.preempt_model);
    } else {
        kv(o, "preemption", &format!("{}  [from {}]", host.preempt_model, host.preempt_source));
    }
    kv(o, "glibc", &host.glibc_version);
    if let Some(m) = host.mem_total_bytes {
        kv(o, "memory", &gib(m));
    }
}

/// The SMT switch and how many cores have siblings online; the cpuinfo
/// `ht` flag when known.
fn render_smt(o: &mut String, host: &Host) {
    let t = &host.topology;
    let smt = format!(
        "control {}, active {}; {}",
        t.smt_control.as_deref().unwrap_or("unknown (no smt/control)"),
        match t.smt_active {
            Some(true) => "yes",
            Some(false) => "no",
            None => "unknown",
        },
        match t.smt_cores().count() {
            0 => "no core has SMT siblings online".to_string(),
            n => format!("{} with SMT siblings online", plural(n, "core", "cores")),
        }
    );
    kv(o, "SMT", &smt);
    if let Some(ht) = host.ht_flag {
        kv(o, "ht flag", if ht { "yes in /proc/cpuinfo (the CPU can do SMT; says nothing of siblings)" } else { "no" });
    }
}

fn render_nodes(o: &mut String, t: &Topology) {
    if t.nodes.is_empty() {
        let _ = writeln!(o, "NUMA nodes: none listed in sysfs");
        return;
    }
    let _ = writeln!(o, "NUMA nodes: {}", t.nodes.len());
    for n in &t.nodes {
        let cpus = if n.cpus.is_empty() { "no online CPU".to_string() } else { format!("cpus {}", n.cpus) };
        let mem = n.mem_bytes.map(gib).unwrap_or_else(|| "memory unknown".into());
        let _ = writeln!(o, "  node {}: {cpus}, {mem}", n.id);
    }
}

fn render_mitigations(o: &mut String, host: &Host) {
    if host.mitigations.is_empty() {
        let _ = writeln!(o, "mitigations: none listed");
        return;
    }
    let _ = writeln!(o, "mitigations:");
    let w = host.mitigations.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (k, v) in &host.mitigations {
        let _ = writeln!(o, "  {k:<w$}  {v}");
    }
}

fn render_cpus(o: &mut String, t: &Topology) {
    let _ = writeln!(
        o,
        "{:<12}{}, {}, {} online ({})",
        "CPUs",
        plural(t.packages.len(), "package", "packages"),
        plural(t.cores.len(), "core", "cores"),
        plural(t.cpus.len(), "logical CPU", "logical CPUs"),
        t.online
    );
    if !t.offline.is_empty() {
        let _ = writeln!(o, "{:<12}{}", "offline", t.offline);
    }
    if let Some(r) = &t.restriction {
        let _ =
            writeln!(o, "{:<12}CPUs {} only, by {}: configurations are derived from these", "usable", r.cpus, r.source);
    }
    // Cores by package, in package order.
    let mut by_pkg: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    for (i, c) in t.cores.iter().enumerate() {
        by_pkg.entry(c.package).or_default().push(i);
    }
    if t.cores.len() <= CORE_LINES_MAX {
        for cores in by_pkg.values() {
            for &i in cores {
                let c = &t.cores[i];
                let list: Vec<String> = c.cpus.iter().map(|x| x.to_string()).collect();
                let _ = writeln!(o, "  core {i} ({}): cpus {}", pkg_label(c.package), list.join(","));
            }
        }
    } else {
        // Big machines: packages summarised, then every core's CPUs packed.
        let shape = |cores: &[usize]| -> String {
            let threads: Vec<usize> = cores.iter().map(|&i| t.cores[i].cpus.len()).collect();
            let (lo, hi) = (threads.iter().min().copied().unwrap_or(0), threads.iter().max().copied().unwrap_or(0));
            let th = if lo == hi { plural(lo, "thread", "threads") } else { format!("{lo}-{hi} threads") };
            format!("{} of {th}", plural(cores.len(), "core", "cores"))
        };
        if by_pkg.len() <= 8 {
            for (p, cores) in &by_pkg {
                let cpus = cores.iter().fold(CpuSet::new(), |acc, &i| acc.union(&t.cores[i].cpus));
                let _ = writeln!(o, "  {}: {}, cpus {cpus}", pkg_label(*p), shape(cores));
            }
        } else {
            let mut shapes: BTreeMap<String, usize> = BTreeMap::new();
            for cores in by_pkg.values() {
                *shapes.entry(shape(cores)).or_default() += 1;
            }
            for (sh, n) in shapes {
                let _ = writeln!(o, "  {} of {sh} each", plural(n, "package", "packages"));
            }
        }
        if t.has_smt() {
            let items = t.cores.iter().enumerate().map(|(i, c)| format!("{i}:{}", c.cpus));
            wrap(o, "  core:cpus ", items);
        } else {
            let _ = writeln!(o, "  one logical CPU per core");
        }
    }
}

/// `2 CPUs` or `8-9 CPUs`: the sizes of the sharing sets of a group.
fn sharers(group: &[&Cache]) -> String {
    let lo = group.iter().map(|c| c.shared.len()).min().unwrap_or(0);
    let hi = group.iter().map(|c| c.shared.len()).max().unwrap_or(0);
    if lo == hi {
        plural(lo, "CPU", "CPUs")
    } else {
        format!("{lo}-{hi} CPUs")
    }
}

/// How the instances of one cache group (same level, type and size) relate
/// to the topology, and whether their sets are worth listing.
fn sharing(t: &Topology, pkg_sets: &[CpuSet], group: &[&Cache]) -> (String, bool) {
    let each = sharers(group);
    let all_cpus = group.iter().fold(CpuSet::new(), |a, c| a.union(&c.shared));
    let is_core = |s: &CpuSet| t.core_of(s.first().unwrap_or(0)).is_some_and(|c| &c.cpus == s);
    if group.iter().all(|c| is_core(&c.shared)) {
        if group.len() == t.cores.len() {
            return (format!("one per core ({each} each)"), false);
        }
        return (
            format!("one per core on {} of {} cores ({each} each): cpus {all_cpus}", group.len(), t.cores.len()),
            false,
        );
    }
    if group.iter().all(|c| c.shared.len() == 1) {
        return (format!("one per CPU on cpus {all_cpus}"), false);
    }
    if group.iter().all(|c| pkg_sets.contains(&c.shared)) {
        if group.len() == pkg_sets.len() {
            return (format!("one per package ({each} each)"), pkg_sets.len() > 1);
        }
        return (format!("one per package on {} of {} packages ({each} each)", group.len(), pkg_sets.len()), true);
    }
    if group.len() == 1 && group[0].shared == t.online {
        return (format!("one for all {each}"), false);
    }
    (format!("each shared by {each}"), true)
}

fn render_caches(o: &mut String, t: &Topology) {
    if t.caches.is_empty() {
        let _ = writeln!(o, "caches: none listed in sysfs");
        return;
    }
    let _ = writeln!(o, "caches:");
    // Group instances with the same level, type and size.
    let mut groups: BTreeMap<(u32, String, Option<u64>), Vec<&Cache>> = BTreeMap::new();
    for c in &t.caches {
        groups.entry((c.level, c.kind.clone(), c.size_bytes)).or_default().push(c);
    }
    let pkg_sets: Vec<CpuSet> = t.packages.iter().map(|&p| t.package_cpus(p)).collect();
    for ((level, kind, size), group) in &groups {
        let name = match kind.as_str() {
            "Data" => format!("L{level}d"),
            "Instruction" => format!("L{level}i"),
            "Unified" => format!("L{level}"),
            other => format!("L{level} {other}"),
        };
        let size = size.map(size_text).unwrap_or_else(|| "size ?".into());
        let (how, list) = sharing(t, &pkg_sets, group);
        let kind = kind.to_lowercase();
        let _ = writeln!(o, "  {name:<5} {size:>9}  {kind:<11}  x{:<4} {how}", group.len());
        if list {
            if group.len() <= 16 {
                wrap(o, "          ", group.iter().map(|c| format!("[{}]", c.shared)));
            } else {
                let first: Vec<String> = group.iter().take(6).map(|c| format!("[{}]", c.shared)).collect();
                let _ = writeln!(o, "          {} ... ({} more)", first.join(" "), group.len() - 6);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::fake::FakeSys;

    fn host_of(f: &FakeSys) -> Host {
        Host::read(f.root()).expect("fake tree reads")
    }

    /// The rendered topology of a fake `FakeSys::grid` machine.
    fn grid_text(packages: u32, cores: u32, threads: u32, linux_numbering: bool) -> String {
        render(&host_of(&FakeSys::grid(packages, cores, threads, linux_numbering).unwrap()))
    }

    /// Every one of `lines` stands in `text`.
    fn shows(text: &str, lines: &[&str]) {
        for l in lines {
            assert!(text.contains(l), "{l:?} missing from:\n{text}");
        }
    }

    #[test]
    fn sizes_are_exact() {
        assert_eq!(size_text(32 << 10), "32 KiB");
        assert_eq!(size_text(1280 << 10), "1280 KiB");
        assert_eq!(size_text(32 << 20), "32 MiB");
        assert_eq!(size_text(2 << 30), "2 GiB");
        assert_eq!(size_text(100), "100 B");
    }

    #[test]
    fn small_smt_machine_one_line_per_core() {
        let text = grid_text(1, 2, 2, true);
        shows(
            &text,
            &[
                "1 package, 2 cores, 4 logical CPUs online (0-3)",
                "core 0 (pkg 0): cpus 0,2",
                "core 1 (pkg 0): cpus 1,3",
                "control on, active yes; 2 cores with SMT siblings online",
                "L1d      32 KiB  data         x2    one per core (2 CPUs each)",
                "L3       16 MiB  unified      x1    one per package (4 CPUs each)",
                "node 0: cpus 0-3, 1.0 GiB",
            ],
        );
    }

    #[test]
    fn big_machine_packs_cores() {
        let text = grid_text(2, 24, 2, true);
        shows(
            &text,
            &[
                "2 packages, 48 cores, 96 logical CPUs online (0-95)",
                "pkg 0: 24 cores of 2 threads, cpus 0-23,48-71",
                "core:cpus 0:0,48 1:1,49",
                " 47:47,95\n",
            ],
        );
        assert!(text.lines().filter(|l| l.contains("core:cpus")).all(|l| l.len() <= WIDTH), "{text}");
        assert!(text.lines().count() < 60, "{text}");
    }

    #[test]
    fn many_packages_are_summarised() {
        let text = grid_text(12, 4, 1, false);
        shows(&text, &["12 packages of 4 cores of 1 thread each", "one logical CPU per core"]);
    }

    #[test]
    fn no_smt_says_so() {
        let text = grid_text(1, 2, 1, false);
        shows(
            &text,
            &["no core has SMT siblings online", "L1d      32 KiB  data         x2    one per core (1 CPU each)"],
        );
    }
}
