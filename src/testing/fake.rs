//! The fake machines of every test, unit and integration alike: `/sys` and
//! `/proc` trees below a root (`KDELTA_SYSFS_ROOT`), written as the kernel
//! shows them. One copy of each machine, so a test in `src/` and one in
//! `tests/` check kdelta against the same machine; a test that needs one
//! value otherwise writes it over the machine with [`write`].
//!
//! Test data only: nothing here is read by kdelta itself.

use std::path::{Path, PathBuf};

/// Write `text` to `root/rel`, making the directories on the way.
pub fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("a relative path below root")).expect("mkdir in a fake root");
    std::fs::write(p, text).expect("write in a fake root");
}

/// Every file below `root` but the kernel-settings journal, with its bytes, sorted.
pub fn snapshot(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read a fake root") {
            let p = e.expect("read a fake root").path();
            if p.is_dir() {
                stack.push(p);
            } else if !p.ends_with("knobs.journal") {
                let bytes = std::fs::read(&p).expect("read a fake root's file");
                v.push((p, bytes));
            }
        }
    }
    v.sort();
    v
}

/// The CPU topology: `cores` lists each core's logical CPUs (one package),
/// every CPU online.
pub fn sysfs(root: &Path, cores: &[&[u32]]) {
    let cpu = "sys/devices/system/cpu";
    let mut all: Vec<u32> = cores.iter().flat_map(|c| c.iter().copied()).collect();
    all.sort();
    let list = |v: &[u32]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",");
    for f in ["online", "possible", "present"] {
        write(root, &format!("{cpu}/{f}"), &format!("{}\n", list(&all)));
    }
    for (i, core) in cores.iter().enumerate() {
        for &c in *core {
            let t = format!("{cpu}/cpu{c}/topology");
            write(root, &format!("{t}/core_cpus_list"), &format!("{}\n", list(core)));
            write(root, &format!("{t}/thread_siblings_list"), &format!("{}\n", list(core)));
            write(root, &format!("{t}/core_id"), &format!("{i}\n"));
            write(root, &format!("{t}/physical_package_id"), "0\n");
        }
    }
}

/// Two CPUs, one core each, as this VM is.
pub fn two_cpus(root: &Path) {
    sysfs(root, &[&[0], &[1]]);
}

/// Every kernel setting kdelta switches, present and writable: preemption
/// `full`, SMT `on` (no `smt/active`: the fake kernel takes no CPU offline),
/// two cpufreq policies on `schedutil`, boost on, THP `madvise` (defrag
/// `madvise`), autogroup on, one multi-value sysctl (`tcp_rmem`).
pub fn knobs(root: &Path) {
    write(root, "sys/kernel/debug/sched/preempt", "none voluntary (full) lazy\n");
    write(root, "sys/devices/system/cpu/smt/control", "on\n");
    for p in ["policy0", "policy1"] {
        let d = format!("sys/devices/system/cpu/cpufreq/{p}");
        write(root, &format!("{d}/scaling_governor"), "schedutil\n");
        write(root, &format!("{d}/scaling_available_governors"), "performance powersave schedutil\n");
    }
    write(root, "sys/devices/system/cpu/cpufreq/boost", "1\n");
    write(root, "sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n");
    write(root, "sys/kernel/mm/transparent_hugepage/defrag", "always defer defer+madvise [madvise] never\n");
    write(root, "proc/sys/kernel/sched_autogroup_enabled", "1\n");
    write(root, "proc/sys/net/ipv4/tcp_rmem", "4096\t131072\t6291456\n");
}

/// One setting of each kind the [`knobs`] tree can take, as `--config`
/// modifiers (`NAME=VALUE`): each differs from the tree's value.
pub const KNOB_SETTINGS: &[(&str, &str)] = &[
    ("preempt", "none"),
    ("smt", "off"),
    ("governor", "performance"),
    ("boost", "off"),
    ("thp", "never"),
    ("sysctl", "kernel.sched_autogroup_enabled=0"),
    ("sysfs", "/sys/kernel/mm/transparent_hugepage/defrag=never"),
];

/// A choice file's value in force (`always [madvise] never` reads `madvise`,
/// `none (full)` reads `full`), or the file's text.
pub fn knob_value(root: &Path, rel: &str) -> String {
    let t = std::fs::read_to_string(root.join(rel)).expect("read a fake root's file");
    t.split_whitespace()
        .find_map(|w| {
            w.strip_prefix('[')
                .and_then(|w| w.strip_suffix(']'))
                .or_else(|| w.strip_prefix('(').and_then(|w| w.strip_suffix(')')))
        })
        .map(String::from)
        .unwrap_or_else(|| t.trim().to_string())
}

/// Where the guest's halt-polling time lives (`guest_halt_poll_ns`).
pub const HALT_POLL: &str = "sys/module/haltpoll/parameters/guest_halt_poll_ns";

/// A 2-CPU KVM guest as this VM is: haltpoll cpuidle (polling 0 ns), no
/// cpufreq driver, THP always, ASLR off, a deep idle state on CPU 1, a
/// device IRQ on both, one other process (pid 42). Kernel values are
/// written as a kernel reads them back (no newline), so a file restored
/// holds the same bytes.
pub fn vm(root: &Path) {
    two_cpus(root);
    let w = |rel: &str, text: &str| write(root, rel, text);
    w("proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu sse2 hypervisor\n");
    let idle = "sys/devices/system/cpu/cpuidle";
    w(&format!("{idle}/current_driver"), "haltpoll");
    w(&format!("{idle}/current_governor_ro"), "haltpoll");
    for cpu in 0..2 {
        let d = format!("sys/devices/system/cpu/cpu{cpu}/cpuidle");
        for (st, name, lat) in [("state0", "POLL", "0"), ("state1", "haltpoll idle", "1")] {
            w(&format!("{d}/{st}/name"), name);
            w(&format!("{d}/{st}/latency"), lat);
            w(&format!("{d}/{st}/disable"), "0");
        }
    }
    w("sys/devices/system/cpu/cpu1/cpuidle/state2/name", "C6");
    w("sys/devices/system/cpu/cpu1/cpuidle/state2/latency", "120");
    w("sys/devices/system/cpu/cpu1/cpuidle/state2/disable", "0");
    w(HALT_POLL, "0");
    w("sys/kernel/mm/transparent_hugepage/enabled", "always");
    w("sys/kernel/mm/transparent_hugepage/defrag", "always");
    w("proc/sys/kernel/randomize_va_space", "0");
    w("proc/sys/kernel/perf_event_max_sample_rate", "100000");
    w("proc/sys/vm/swappiness", "60");
    w("proc/stat", "cpu  100 0 50 1000 0 0 0 30 0 0\ncpu0 50 0 25 500 0 0 0 15 0 0\n");
    w("proc/swaps", "Filename\tType\tSize\tUsed\tPriority\n");
    w("proc/meminfo", "MemTotal: 1000 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n");
    w(
        "proc/interrupts",
        "           CPU0       CPU1\n  4:         10         20   IO-APIC   4-edge      ttyS0\nLOC:       100        200   Local timer interrupts\n",
    );
    w("proc/irq/4/smp_affinity_list", "0-1");
    w("proc/cmdline", "quiet cpuidle_haltpoll.force=1");
    w("proc/42/stat", "42 (some daemon) S 1 42 42 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 100 0 0");
}

/// The machine's name and CPU model as a doctor's record names it
/// (`proc/sys/kernel/hostname`, `proc/cpuinfo`, two possible CPUs), and each
/// listed CPU's SMT siblings (`thread_siblings_list`, as `"0,2\n"`).
pub fn identity(root: &Path, host: &str, model: &str, siblings: &[(u32, &str)]) {
    write(root, "proc/sys/kernel/hostname", &format!("{host}\n"));
    write(root, "proc/cpuinfo", &format!("processor\t: 0\nmodel name\t: {model}\n"));
    write(root, "sys/devices/system/cpu/possible", "0-1\n");
    for (c, l) in siblings {
        write(root, &format!("sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list"), l);
    }
}

/// Cgroup v1 as this VM has it: cpu, cpuset and memory hierarchies (and an
/// empty v2 one in `unified/`); kdelta in the top cgroup of each but
/// memory's, which is a container's (`/ctr`); three tasks in the top cpuset.
/// No CPU topology: add [`two_cpus`] for a whole machine.
pub fn cgroup_v1(root: &Path) {
    let cg = |rel: &str, text: &str| write(root, &format!("sys/fs/cgroup/{rel}"), text);
    cg("unified/cgroup.controllers", "");
    for f in ["cgroup.procs", "tasks", "cpu.shares", "cpu.cfs_quota_us", "cpu.cfs_period_us"] {
        cg(&format!("cpu/{f}"), "");
    }
    cg("cpu/cpu.stat", "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n");
    for f in ["cgroup.procs", "cpuset.cpu_exclusive"] {
        cg(&format!("cpuset/{f}"), "");
    }
    cg("cpuset/cpuset.cpus", "0-1\n");
    cg("cpuset/cpuset.mems", "0\n");
    cg("cpuset/tasks", "1\n2\n3\n");
    for f in ["cgroup.procs", "tasks", "memory.limit_in_bytes", "memory.soft_limit_in_bytes"] {
        cg(&format!("memory/ctr/{f}"), "");
    }
    cg("memory/memory.limit_in_bytes", "");
    write(root, "proc/self/cgroup", "4:memory:/ctr\n3:cpuset:/\n1:cpu,cpuacct:/\n0::/\n");
}

/// One cgroup v2 hierarchy, kdelta in the root cgroup, every controller
/// kdelta uses available. No CPU topology: add [`two_cpus`] for a whole machine.
pub fn cgroup_v2(root: &Path) {
    let cg = |rel: &str, text: &str| write(root, &format!("sys/fs/cgroup/{rel}"), text);
    cg("cgroup.controllers", "cpuset cpu io memory pids\n");
    for f in [
        "cgroup.subtree_control",
        "cgroup.procs",
        "cpu.max",
        "cpu.weight",
        "cpuset.cpus",
        "cpuset.cpus.partition",
        "cpuset.mems",
        "memory.max",
        "memory.high",
    ] {
        cg(f, "");
    }
    cg("cpu.stat", "usage_usec 0\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n");
    cg("cpuset.mems.effective", "0\n");
    write(root, "proc/self/cgroup", "0::/\n");
}

/// A temporary directory holding `machine`, removed on drop.
pub fn machine(machine: fn(&Path)) -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("a temporary directory");
    machine(d.path());
    d
}
