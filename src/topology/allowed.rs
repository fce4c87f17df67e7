//! The CPUs kdelta may use: its own affinity mask (`Cpus_allowed_list` in
//! `/proc/self/status`) and its cpuset, from whichever cgroup layout the
//! machine has, all read below the topology root:
//!
//! - cgroup v2: `cpuset.cpus.effective` of the process's cgroup (`0::/PATH`
//!   in `proc/self/cgroup`) below the `cgroup2` mount, or of the nearest
//!   ancestor that has one (the controller may be enabled higher up only);
//! - cgroup v1: the hierarchy mounted with the `cpuset` controller (a
//!   `cgroup` mount whose options name `cpuset`), the process's path in it
//!   from its `N:...cpuset...:/PATH` line, the file `cpuset.effective_cpus`,
//!   else `cpuset.cpus` (unprefixed `effective_cpus`/`cpus` when mounted
//!   with `noprefix`);
//! - the legacy cpuset filesystem (a `cpuset` mount, e.g. at `/dev/cpuset`,
//!   as kernels before cgroups had it): the path from `proc/self/cpuset`,
//!   the file `cpus` (old kernels) or `cpuset.cpus`.
//!
//! Mount points come from `proc/self/mounts`, else `proc/mounts`, and are
//! read below the root too, so a fake tree or a capture describes its own.
//! A root without a mount table (fake trees) is read as a cgroup v2 machine
//! with the hierarchy at `sys/fs/cgroup`.

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

/// One line of the mount table: mount point and file system type, options.
#[derive(Debug, Clone, PartialEq)]
struct Mount {
    dir: String,
    fstype: String,
    options: Vec<String>,
}

/// Undo the octal escapes the kernel writes in mount points (`\040` for a space).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            let v = (b[i + 1] - b'0') as u32 * 64 + (b[i + 2] - b'0') as u32 * 8 + (b[i + 3] - b'0') as u32;
            if let Ok(v) = u8::try_from(v) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The mount table below `root` (`proc/self/mounts`, else `proc/mounts`);
/// None when neither exists.
fn mounts(root: &Path) -> Option<Vec<Mount>> {
    let s = std::fs::read_to_string(root.join("proc/self/mounts"))
        .or_else(|_| std::fs::read_to_string(root.join("proc/mounts")))
        .ok()?;
    Some(
        s.lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let (_dev, dir, fstype, opts) = (f.next()?, f.next()?, f.next()?, f.next().unwrap_or(""));
                Some(Mount {
                    dir: unescape(dir),
                    fstype: fstype.to_string(),
                    options: opts.split(',').map(str::to_string).collect(),
                })
            })
            .collect(),
    )
}

/// `/a/b` below `root`.
fn below(root: &Path, abs: &str) -> PathBuf {
    root.join(abs.trim_start_matches('/'))
}

/// The lines of `proc/self/cgroup` as (controllers, path without the leading `/`).
fn cgroup_lines(root: &Path) -> Vec<(String, String)> {
    let s = std::fs::read_to_string(root.join("proc/self/cgroup")).unwrap_or_default();
    s.lines()
        .filter_map(|l| {
            let (_id, rest) = l.split_once(':')?;
            let (ctrl, path) = rest.split_once(':')?;
            Some((ctrl.to_string(), path.trim().trim_start_matches('/').to_string()))
        })
        .collect()
}

/// The first of `names` that holds a CPU list in the cgroup directory
/// `base/rel`, or in the nearest ancestor down to `base`.
fn nearest(base: &Path, rel: &str, names: &[&str]) -> Option<(CpuSet, PathBuf)> {
    let mut dir = base.join(rel);
    loop {
        for n in names {
            let f = dir.join(n);
            if let Some(set) = read_list(&f) {
                return Some((set, f));
            }
        }
        if dir == base || !dir.pop() || !dir.starts_with(base) {
            return None;
        }
    }
}

/// Which layout restricted the CPUs.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Layout {
    V2,
    V1,
    Legacy,
}

impl Layout {
    fn label(self) -> &'static str {
        match self {
            Layout::V2 => "cgroup v2 cpuset",
            Layout::V1 => "cgroup v1 cpuset",
            Layout::Legacy => "legacy cpuset filesystem",
        }
    }
}

const V2_FILES: &[&str] = &["cpuset.cpus.effective"];
/// cgroup v1 names, then the unprefixed names of a `noprefix` mount.
const V1_FILES: &[&str] = &["cpuset.effective_cpus", "cpuset.cpus", "effective_cpus", "cpus"];
/// The legacy filesystem: `cpus` on the kernels that had it, `cpuset.cpus` where it is emulated.
const LEGACY_FILES: &[&str] = &["cpus", "cpuset.cpus", "effective_cpus", "cpuset.effective_cpus"];

/// Every cpuset that applies to this process, from each layout the root has.
fn cpusets(root: &Path) -> Vec<(Layout, CpuSet, PathBuf)> {
    let lines = cgroup_lines(root);
    let v2_path = lines.iter().find(|(c, _)| c.is_empty()).map(|(_, p)| p.clone());
    let v1_path = lines.iter().find(|(c, _)| c.split(',').any(|x| x == "cpuset")).map(|(_, p)| p.clone());
    let legacy_path = std::fs::read_to_string(root.join("proc/self/cpuset"))
        .ok()
        .map(|s| s.trim().trim_start_matches('/').to_string());
    let mut found = Vec::new();
    let Some(table) = mounts(root) else {
        // No mount table: a fake tree, read as cgroup v2 at the usual place.
        if let Some((set, f)) = nearest(&root.join("sys/fs/cgroup"), &v2_path.unwrap_or_default(), V2_FILES) {
            found.push((Layout::V2, set, f));
        }
        return found;
    };
    let mut push = |layout: Layout, hit: Option<(CpuSet, PathBuf)>| {
        if let Some((set, f)) = hit {
            if !found.iter().any(|(l, _, _)| *l == layout) {
                found.push((layout, set, f));
            }
        }
    };
    for m in &table {
        let base = below(root, &m.dir);
        match m.fstype.as_str() {
            "cgroup2" => push(Layout::V2, nearest(&base, v2_path.as_deref().unwrap_or(""), V2_FILES)),
            "cgroup" if m.options.iter().any(|o| o == "cpuset") => {
                let rel = v1_path.as_deref().or(legacy_path.as_deref()).unwrap_or("");
                push(Layout::V1, nearest(&base, rel, V1_FILES))
            }
            "cpuset" => push(Layout::Legacy, nearest(&base, legacy_path.as_deref().unwrap_or(""), LEGACY_FILES)),
            _ => {}
        }
    }
    found
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
    for (layout, c, file) in cpusets(root) {
        if !online.difference(&c).is_empty() {
            cpus = cpus.intersection(&c);
            sources.push(format!("{} {c} ({})", layout.label(), file.strip_prefix(root).unwrap_or(&file).display()));
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
            r.source.contains("affinity mask 0-5")
                && r.source.contains("cgroup v2 cpuset 2-7 (sys/fs/cgroup/box/cpuset.cpus.effective)"),
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

    #[test]
    fn v2_below_its_mount_point() {
        let d = tempfile::tempdir().unwrap();
        let online = CpuSet::parse_list("0-7").unwrap();
        write(d.path(), "proc/self/mounts", "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nosuid 0 0\n");
        write(d.path(), "proc/self/cgroup", "1:name=systemd:/a\n0::/a/b\n");
        // The usual place is not where this machine mounts it: ignored.
        write(d.path(), "sys/fs/cgroup/a/cpuset.cpus.effective", "0\n");
        write(d.path(), "sys/fs/cgroup/unified/a/cpuset.cpus.effective", "4-7\n");
        let r = read(d.path(), &online).unwrap();
        assert_eq!(r.cpus.to_string(), "4-7");
        assert_eq!(r.source, "cgroup v2 cpuset 4-7 (sys/fs/cgroup/unified/a/cpuset.cpus.effective)");
    }

    #[test]
    fn v1_cpuset_controller() {
        let d = tempfile::tempdir().unwrap();
        let online = CpuSet::parse_list("0-3").unwrap();
        write(
            d.path(),
            "proc/mounts",
            "tmpfs /sys/fs/cgroup tmpfs rw 0 0\n\
             cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,cpu,cpuacct 0 0\n\
             cgroup /sys/fs/cgroup/cpuset cgroup rw,nosuid,nodev,noexec,relatime,cpuset 0 0\n\
             cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n",
        );
        write(d.path(), "proc/self/cgroup", "4:cpu,cpuacct:/other\n3:cpuset:/jobs/42\n0::/\n");
        write(d.path(), "sys/fs/cgroup/cpuset/cpuset.cpus", "0-3\n");
        write(d.path(), "sys/fs/cgroup/cpuset/cpuset.effective_cpus", "0-3\n");
        write(d.path(), "sys/fs/cgroup/cpuset/jobs/42/cpuset.cpus", "1-3\n");
        write(d.path(), "sys/fs/cgroup/cpuset/jobs/42/cpuset.effective_cpus", "1-2\n");
        let r = read(d.path(), &online).unwrap();
        assert_eq!(r.cpus.to_string(), "1-2", "effective_cpus wins over cpus");
        assert_eq!(r.source, "cgroup v1 cpuset 1-2 (sys/fs/cgroup/cpuset/jobs/42/cpuset.effective_cpus)");
        // An older v1 kernel without effective_cpus: cpuset.cpus.
        std::fs::remove_file(d.path().join("sys/fs/cgroup/cpuset/jobs/42/cpuset.effective_cpus")).unwrap();
        assert_eq!(read(d.path(), &online).unwrap().cpus.to_string(), "1-3");
        // The process in the root cpuset: nothing restricts it.
        write(d.path(), "proc/self/cgroup", "3:cpuset:/\n0::/\n");
        assert_eq!(read(d.path(), &online), None);
    }

    #[test]
    fn legacy_cpuset_filesystem_with_old_names() {
        // As the 16-CPU Opteron capture: mounted at /dev/cpuset, the process in
        // the child cpuset /dummy allowed 11 of 16 CPUs, one of them offline.
        let d = tempfile::tempdir().unwrap();
        let online = CpuSet::parse_list("0-3,5-15").unwrap();
        write(d.path(), "proc/mounts", "none /dev/cpuset cpuset rw 0 0\n");
        write(d.path(), "proc/self/cpuset", "/dummy\n");
        write(d.path(), "dev/cpuset/cpus", "0-15\n");
        write(d.path(), "dev/cpuset/dummy/cpus", "0-6,12-15\n");
        write(d.path(), "dev/cpuset/dummy/mems", "1-4\n");
        let r = read(d.path(), &online).unwrap();
        assert_eq!(r.cpus.to_string(), "0-3,5-6,12-15");
        assert_eq!(r.source, "legacy cpuset filesystem 0-6,12-15 (dev/cpuset/dummy/cpus)");
        // Newer kernels emulate it with prefixed names.
        std::fs::remove_file(d.path().join("dev/cpuset/dummy/cpus")).unwrap();
        write(d.path(), "dev/cpuset/dummy/cpuset.cpus", "12-15\n");
        assert_eq!(read(d.path(), &online).unwrap().cpus.to_string(), "12-15");
    }

    #[test]
    fn noprefix_cgroup_mount_and_escaped_mount_points() {
        let d = tempfile::tempdir().unwrap();
        let online = CpuSet::parse_list("0-7").unwrap();
        write(d.path(), "proc/mounts", "cpuset /dev/my\\040cpus cgroup rw,cpuset,noprefix,release_agent=/x 0 0\n");
        write(d.path(), "proc/self/cpuset", "/a\n");
        write(d.path(), "dev/my cpus/a/cpus", "3\n");
        let r = read(d.path(), &online).unwrap();
        assert_eq!(r.cpus.to_string(), "3");
        assert!(r.source.starts_with("cgroup v1 cpuset 3 (dev/my cpus/a/cpus)"), "{}", r.source);
    }

    #[test]
    fn every_layout_at_once_intersects() {
        let d = tempfile::tempdir().unwrap();
        let online = CpuSet::parse_list("0-7").unwrap();
        write(
            d.path(),
            "proc/self/mounts",
            "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\ncgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\n",
        );
        write(d.path(), "proc/self/cgroup", "3:cpuset:/v1\n0::/v2\n");
        write(d.path(), "sys/fs/cgroup/unified/cpuset.cpus.effective", "0-5\n");
        write(d.path(), "sys/fs/cgroup/cpuset/v1/cpuset.effective_cpus", "2-7\n");
        let r = read(d.path(), &online).unwrap();
        assert_eq!(r.cpus.to_string(), "2-5");
        assert!(r.source.contains("cgroup v2 cpuset 0-5") && r.source.contains("cgroup v1 cpuset 2-7"), "{}", r.source);
    }

    #[test]
    fn unescape_mount_points() {
        assert_eq!(unescape("/a\\040b\\011c"), "/a b\tc");
        assert_eq!(unescape("/plain"), "/plain");
        assert_eq!(unescape("/odd\\04"), "/odd\\04");
        assert_eq!(unescape("/high\\777"), "/high\\777");
    }
}
