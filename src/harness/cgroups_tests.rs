use super::*;
use crate::model::config::CgroupLimit;
use crate::testing::fake;

fn put(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn text(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())).trim().to_string()
}

fn cfg(limits: Vec<CgroupLimit>) -> Config {
    Config {
        name: "t".into(),
        cpus: CpuSet::parse_list("0-1").unwrap(),
        policy: None,
        env: vec![],
        knobs: vec![],
        counters: None,
        cgroup: limits,
    }
}

fn limits() -> Vec<CgroupLimit> {
    vec![
        CgroupLimit::CpuMax { quota_us: 50_000, period_us: 100_000 },
        CgroupLimit::Cpuset { cpus: CpuSet::parse_list("1").unwrap() },
        CgroupLimit::MemoryMax { bytes: 64 << 20 },
        CgroupLimit::MemoryHigh { bytes: 32 << 20 },
    ]
}

/// Every directory named `kdelta-...` below the cgroup tree.
fn ours(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![crate::sys::cgroup::cgroup_dir(root)];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                if e.file_name().to_string_lossy().starts_with("kdelta-") {
                    found.push(e.path());
                }
                stack.push(e.path());
            }
        }
    }
    found
}

/// The last worker's cgroup released and the run ended: nothing of
/// kdelta's is left in the tree below `root`.
#[track_caller]
fn end_leaves_nothing(c: &mut Cgroups, last: &Placement, root: &Path) {
    c.release(last);
    c.finish().unwrap();
    assert!(ours(root).is_empty(), "{:?}", ours(root));
}

#[test]
fn layouts_of_v1_v2_and_none() {
    let v1 = fake::machine(fake::cgroup_v1);
    let l = Layout::read(v1.path());
    let cg = v1.path().join("sys/fs/cgroup");
    assert_eq!(l.cpu.as_ref().map(|h| (h.version, h.own.clone())), Some((1, cg.join("cpu"))));
    assert_eq!(l.memory.as_ref().map(|h| h.own.clone()), Some(cg.join("memory/ctr")));
    assert_eq!(l.cpuset.as_ref().map(|h| h.version), Some(1));
    let v2 = fake::machine(fake::cgroup_v2);
    let l = Layout::read(v2.path());
    assert!([&l.cpu, &l.cpuset, &l.memory].iter().all(|h| h.as_ref().is_some_and(|h| h.version == 2)));
    let none = tempfile::tempdir().unwrap();
    let l = Layout::read(none.path());
    assert!(l.cpu.is_none() && l.describe().contains("cpu not mounted"));
    let e = crate::config::cgroup::check(&limits(), none.path()).unwrap_err();
    assert!(e.contains("cpu controller, which is not mounted"), "{e}");
}

#[test]
fn v1_limits_are_written_and_removed() {
    let d = fake::machine(fake::cgroup_v1);
    let root = d.path();
    let cg = root.join("sys/fs/cgroup");
    let mut c = Cgroups::new(root);
    let p = c.place(&cfg(limits()), 7).unwrap();
    let base = format!("kdelta-{}", std::process::id());
    let w = |h: &str| cg.join(h).join(&base).join("w7");
    assert_eq!(text(&w("cpu").join("cpu.cfs_quota_us")), "50000");
    assert_eq!(text(&w("cpu").join("cpu.cfs_period_us")), "100000");
    assert_eq!(text(&w("cpuset").join("cpuset.cpus")), "1");
    assert_eq!(text(&w("cpuset").join("cpuset.mems")), "0");
    assert_eq!(text(&cg.join("cpuset").join(&base).join("cpuset.cpus")), "0-1", "the base gets its parent's CPUs");
    // Memory is below kdelta's own cgroup, the container's.
    let mw = cg.join("memory/ctr").join(&base).join("w7");
    assert_eq!(text(&mw.join("memory.limit_in_bytes")), (64u64 << 20).to_string());
    assert_eq!(text(&mw.join("memory.soft_limit_in_bytes")), (32u64 << 20).to_string());
    assert_eq!(p.cpu_stat, Some(w("cpu").join("cpu.stat")));
    assert_eq!(p.join.len(), 3);
    c.release(&p);
    assert!(!w("cpu").exists() && !w("cpuset").exists() && !mw.exists());
    assert_eq!(ours(root).len(), 3, "the bases stay until the run ends");
    c.finish().unwrap();
    assert!(ours(root).is_empty(), "{:?}", ours(root));
    assert!(!journal::cgroups_path(root).exists());
}

#[test]
fn v2_limits_enable_controllers_and_are_written() {
    let d = fake::machine(fake::cgroup_v2);
    let root = d.path();
    let cg = root.join("sys/fs/cgroup");
    let mut c = Cgroups::new(root);
    let mut l = limits();
    l.push(CgroupLimit::CpuWeight { weight: 50 });
    let p = c.place(&cfg(l), 1).unwrap();
    let w = cg.join(format!("kdelta-{}", std::process::id())).join("w1");
    assert_eq!(p.join, vec![w.clone()], "one hierarchy: one cgroup");
    assert_eq!(text(&w.join("cpu.max")), "50000 100000");
    assert_eq!(text(&w.join("cpu.weight")), "50");
    assert_eq!(text(&w.join("cpuset.cpus")), "1");
    assert_eq!(text(&w.join("memory.max")), (64u64 << 20).to_string());
    assert_eq!(text(&w.join("memory.high")), (32u64 << 20).to_string());
    let e = journal::read(&journal::cgroups_path(root)).unwrap().unwrap();
    assert!(e.enabled.iter().any(|(f, ctl)| *f == cg.join("cgroup.subtree_control") && ctl == "cpu"), "{e:?}");
    end_leaves_nothing(&mut c, &p, root);
}

#[test]
fn a_killed_kdelta_s_cgroups_are_removed_by_restore() {
    let d = fake::machine(fake::cgroup_v1);
    let root = d.path();
    let mut c = Cgroups::new(root);
    c.place(&cfg(limits()), 3).unwrap();
    c.isolate(&CpuSet::parse_list("1").unwrap()).unwrap();
    // Killed: nothing of it runs its end.
    std::mem::forget(c);
    assert_eq!(ours(root).len(), 5, "3 bases, the system cpuset and the shield");
    let jp = journal::cgroups_path(root);
    assert!(crate::harness::journal::warning(root).is_none(), "its owner (this process) still runs");
    let done = journal::replay(&jp, root).unwrap().unwrap();
    assert!(done.iter().any(|l| l.contains("-system removed")), "{done:?}");
    assert!(ours(root).is_empty(), "{:?}", ours(root));
    assert!(!jp.exists());
}

#[test]
fn v1_isolation_moves_the_tasks_to_a_system_cpuset_and_back() {
    let d = fake::machine(fake::cgroup_v1);
    let root = d.path();
    let cs = root.join("sys/fs/cgroup/cpuset");
    let mut c = Cgroups::new(root);
    let how = c.isolate(&CpuSet::parse_list("1").unwrap()).unwrap();
    assert!(how.contains("CPUs 1") && how.contains("3 tasks moved to CPUs 0"), "{how}");
    let pid = std::process::id();
    let system = cs.join(format!("kdelta-{pid}-system"));
    let shield = cs.join(format!("kdelta-{pid}-shield"));
    assert_eq!(text(&system.join("cpuset.cpus")), "0");
    assert_eq!(text(&shield.join("cpuset.cpus")), "1");
    assert_eq!(text(&shield.join("cpuset.cpu_exclusive")), "1");
    // A worker with a cpuset limit goes below the shield; without, joins it.
    let p = c.place(&cfg(vec![]), 1).unwrap();
    assert_eq!(p.join, vec![shield.clone()]);
    let p = c.place(&cfg(vec![CgroupLimit::Cpuset { cpus: CpuSet::parse_list("1").unwrap() }]), 2).unwrap();
    assert_eq!(p.join, vec![shield.join("w2")]);
    end_leaves_nothing(&mut c, &p, root);
    let e = Cgroups::new(root).isolate(&CpuSet::parse_list("0-1").unwrap()).unwrap_err();
    assert!(e.to_string().contains("a CPU left"), "{e}");
}

#[test]
fn v2_isolation_is_an_isolated_partition() {
    let d = fake::machine(fake::cgroup_v2);
    let root = d.path();
    let mut c = Cgroups::new(root);
    let how = c.isolate(&CpuSet::parse_list("1").unwrap()).unwrap();
    assert!(how.contains("isolated cpuset partition"), "{how}");
    let shield = root.join(format!("sys/fs/cgroup/kdelta-{}-shield", std::process::id()));
    assert_eq!(text(&shield.join("cpuset.cpus.partition")), "isolated");
    let p = c.place(&cfg(vec![CgroupLimit::CpuMax { quota_us: 50_000, period_us: 100_000 }]), 4).unwrap();
    assert_eq!(p.join, vec![shield.join("w4")], "on v2 a limited worker's cgroup is below the shield");
    end_leaves_nothing(&mut c, &p, root);
}

#[test]
fn journal_refuses_cgroups_kdelta_does_not_make() {
    let d = fake::machine(fake::cgroup_v1);
    let root = d.path();
    for bad in ["/etc", "sys/fs/cgroup/cpu/user.slice"] {
        let p = if bad.starts_with('/') { PathBuf::from(bad) } else { root.join(bad) };
        assert!(journal::cgroup_confined(root, &p).is_err(), "{bad}");
    }
    assert!(journal::cgroup_confined(root, &root.join("sys/fs/cgroup/cpu/kdelta-1/w2")).is_ok());
}

#[test]
fn v2_limits_are_refused_before_the_run_where_the_controller_cannot_be_handed_down() {
    let d = fake::machine(fake::cgroup_v2);
    let root = d.path();
    let cg = root.join("sys/fs/cgroup");
    // kdelta in `/user`, which holds processes and has not enabled cpu for its children.
    put(&root.join("proc/self/cgroup"), "0::/user\n");
    put(&cg.join("user/cgroup.controllers"), "cpu memory\n");
    put(&cg.join("user/cgroup.subtree_control"), "");
    put(&cg.join("user/cgroup.procs"), "4242\n4243\n");
    let cpu = vec![CgroupLimit::CpuMax { quota_us: 50_000, period_us: 100_000 }];
    let e = crate::config::cgroup::check(&cpu, root).unwrap_err();
    assert!(e.contains("holds 2 processes") && e.contains("cpu controller") && e.contains("/user"), "{e}");
    // A controller that does not reach kdelta's cgroup at all.
    let cpuset = vec![CgroupLimit::Cpuset { cpus: CpuSet::parse_list("1").unwrap() }];
    let e = crate::config::cgroup::check(&cpuset, root).unwrap_err();
    assert!(e.contains("cpuset controller does not reach"), "{e}");
    // Already handed down, or a cgroup that holds no process: it can be.
    put(&cg.join("user/cgroup.subtree_control"), "cpu\n");
    crate::config::cgroup::check(&cpu, root).unwrap();
    put(&cg.join("user/cgroup.subtree_control"), "");
    put(&cg.join("user/cgroup.procs"), "");
    crate::config::cgroup::check(&cpu, root).unwrap();
    // The root cgroup always can.
    put(&root.join("proc/self/cgroup"), "0::/\n");
    put(&cg.join("cgroup.procs"), "1\n");
    crate::config::cgroup::check(&cpu, root).unwrap();
}
