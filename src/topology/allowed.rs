//! The CPUs kdelta may use: its own affinity mask (`Cpus_allowed_list` in
//! `/proc/self/status`) and its cgroup's `cpuset.cpus.effective`, both read
//! below the topology root. A container or a cpuset gives fewer CPUs than
//! are online; configurations are derived from these. Under a fake root the
//! cpuset is the one the root describes (`proc/self/cgroup`, else the root
//! cgroup's `sys/fs/cgroup/cpuset.cpus.effective`).

use super::Restriction;
use crate::cpuset::CpuSet;
use std::path::{Path, PathBuf};

fn read_list(p: &Path) -> Option<CpuSet> {
    let s = std::fs::read_to_string(p).ok()?;
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    CpuSet::parse_list(s).ok().filter(|c| !c.is_empty())
}

/// `Cpus_allowed_list:` of `proc/self/status` below `root`.
fn affinity(root: &Path) -> Option<CpuSet> {
    let s = std::fs::read_to_string(root.join("proc/self/status")).ok()?;
    let v = s.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    CpuSet::parse_list(v.trim()).ok().filter(|c| !c.is_empty())
}

/// The cgroup v2 path of this process (`0::/PATH` in `proc/self/cgroup`).
fn cgroup_path(root: &Path) -> Option<String> {
    let s = std::fs::read_to_string(root.join("proc/self/cgroup")).ok()?;
    s.lines().find_map(|l| l.strip_prefix("0::")).map(|p| p.trim().trim_start_matches('/').to_string())
}

/// `cpuset.cpus.effective` of this process's cgroup, or of the nearest
/// ancestor that has one (the controller may be enabled higher up only).
fn cpuset(root: &Path) -> Option<(CpuSet, PathBuf)> {
    let base = root.join("sys/fs/cgroup");
    let mut dir = base.join(cgroup_path(root).unwrap_or_default());
    loop {
        let f = dir.join("cpuset.cpus.effective");
        if let Some(set) = read_list(&f) {
            return Some((set, f));
        }
        if dir == base || !dir.pop() || !dir.starts_with(&base) {
            return None;
        }
    }
}

/// The restriction, when kdelta may use fewer CPUs than are online.
pub(super) fn read(root: &Path, online: &CpuSet) -> Option<Restriction> {
    let mut cpus = online.clone();
    let mut sources = Vec::new();
    if let Some(a) = affinity(root) {
        if !online.difference(&a).is_empty() {
            cpus = cpus.intersection(&a);
            sources.push(format!("affinity mask {a}"));
        }
    }
    if let Some((c, file)) = cpuset(root) {
        if !online.difference(&c).is_empty() {
            cpus = cpus.intersection(&c);
            sources.push(format!("cgroup cpuset {c} ({})", file.strip_prefix(root).unwrap_or(&file).display()));
        }
    }
    // An empty intersection cannot be true of a running process: ignore it
    // rather than leave no CPU at all.
    if sources.is_empty() || cpus.is_empty() {
        return None;
    }
    Some(Restriction { cpus, source: sources.join(", ") })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn reads_affinity_and_nested_cpuset() {
        let d = tempfile::tempdir().unwrap();
        let online = CpuSet::parse_list("0-7").unwrap();
        assert_eq!(read(d.path(), &online), None);
        write(d.path(), "proc/self/status", "Name:\tkdelta\nCpus_allowed_list:\t0-5\n");
        write(d.path(), "proc/self/cgroup", "0::/box/inner\n");
        write(d.path(), "sys/fs/cgroup/box/cpuset.cpus.effective", "2-7\n");
        let r = read(d.path(), &online).unwrap();
        assert_eq!(r.cpus.to_string(), "2-5");
        assert!(
            r.source.contains("affinity mask 0-5") && r.source.contains("box/cpuset.cpus.effective"),
            "{}",
            r.source
        );
    }

    #[test]
    fn root_cpuset_without_proc_and_no_restriction_when_all_allowed() {
        let d = tempfile::tempdir().unwrap();
        let online = CpuSet::parse_list("0-3").unwrap();
        write(d.path(), "sys/fs/cgroup/cpuset.cpus.effective", "0-3\n");
        assert_eq!(read(d.path(), &online), None);
        write(d.path(), "sys/fs/cgroup/cpuset.cpus.effective", "1,3\n");
        assert_eq!(read(d.path(), &online).unwrap().cpus.to_string(), "1,3");
        write(d.path(), "sys/fs/cgroup/cpuset.cpus.effective", "9\n");
        assert_eq!(read(d.path(), &online), None);
    }
}
