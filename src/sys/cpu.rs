//! What the kernel says about the CPUs and the machine's load: `/proc/stat`,
//! `/proc/loadavg` (both proc(5)), CPU pressure (PSI), the cpuidle residency
//! counters and SMT siblings in sysfs.

use super::clock::clk_tck;
use std::path::Path;

/// Seconds CPU `cpu` has spent idle, from the cpuidle states' residency
/// (`/sys/devices/system/cpu/cpuN/cpuidle/stateK/time`, microseconds; see the
/// kernel's Documentation/admin-guide/pm/cpuidle.rst and sysfs(5)). A state's
/// time is added when the CPU leaves it, so an idle period still under way is
/// not counted. `None` when the machine has no cpuidle driver.
pub(crate) fn idle_secs(root: &Path, cpu: u32) -> Option<f64> {
    let dir = root.join(format!("sys/devices/system/cpu/cpu{cpu}/cpuidle"));
    let mut total = 0u64;
    let mut any = false;
    for e in std::fs::read_dir(&dir).ok()?.flatten() {
        if !e.file_name().to_string_lossy().starts_with("state") {
            continue;
        }
        if let Some(us) = std::fs::read_to_string(e.path().join("time")).ok().and_then(|s| s.trim().parse::<u64>().ok())
        {
            total += us;
            any = true;
        }
    }
    any.then_some(total as f64 * 1e-6)
}

/// Idle (with iowait) and steal time of one CPU in seconds, from a `cpuN`
/// line of `/proc/stat` (proc(5): fields 4 and 5, and field 8, time a
/// hypervisor ran something else while this virtual CPU wanted to run).
/// Clock-tick resolution; idle includes a period under way.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct CpuTimes {
    pub(crate) idle_s: f64,
    pub(crate) steal_s: f64,
}

/// [`CpuTimes`] of every CPU, indexed by CPU number, from `/proc/stat` (proc(5)).
pub(crate) fn stat_cpus() -> Vec<CpuTimes> {
    std::fs::read_to_string("/proc/stat").map(|s| parse_stat_cpus(&s, clk_tck())).unwrap_or_default()
}

/// The `cpuN` lines of a `/proc/stat` text (proc(5)), `hz` ticks per second.
pub(crate) fn parse_stat_cpus(s: &str, hz: f64) -> Vec<CpuTimes> {
    let mut out = Vec::new();
    for l in s.lines() {
        // `cpuN` lines only: the all-CPU line `cpu  USER ...` would take its
        // user ticks for a CPU number (and size the vector by them).
        let Some(rest) = l.strip_prefix("cpu").filter(|r| r.starts_with(|c: char| c.is_ascii_digit())) else {
            continue;
        };
        let mut f = rest.split_whitespace();
        let Some(Ok(cpu)) = f.next().map(|c| c.parse::<usize>()) else { continue };
        let v: Vec<u64> = f.map(|x| x.parse::<u64>().unwrap_or(0)).collect();
        let at = |i: usize| v.get(i).copied().unwrap_or(0) as f64 / hz;
        if out.len() <= cpu {
            out.resize(cpu + 1, CpuTimes::default());
        }
        out[cpu] = CpuTimes { idle_s: at(3) + at(4), steal_s: at(7) };
    }
    out
}

/// CPU time used by the whole machine (not idle, not iowait, not steal), in
/// seconds, from the first (`cpu`) line of `/proc/stat` (proc(5)).
pub(crate) fn machine_busy_secs() -> Option<f64> {
    parse_machine_busy(&std::fs::read_to_string("/proc/stat").ok()?, clk_tck())
}

/// The busy seconds of a `/proc/stat` text's first line: user, nice, system,
/// irq and softirq (proc(5) fields 1, 2, 3, 6 and 7), `hz` ticks per second.
pub(crate) fn parse_machine_busy(s: &str, hz: f64) -> Option<f64> {
    let line = s.lines().next()?;
    let v: Vec<f64> = line.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    if v.len() < 7 {
        return None;
    }
    // user nice system idle iowait irq softirq [steal ...]
    Some((v[0] + v[1] + v[2] + v[5] + v[6]) / hz)
}

/// The `some` total of a CPU pressure file (`/proc/pressure/cpu`, or a
/// cgroup v2 `cpu.pressure`; the kernel's Documentation/accounting/psi.rst):
/// seconds during which at least one task of the system (or of the cgroup)
/// waited runnable for a CPU. Kept in microseconds by the kernel; `None`
/// without PSI (`CONFIG_PSI`, `psi=0`).
pub(crate) fn pressure_some_secs(path: &Path) -> Option<f64> {
    parse_pressure_some(&std::fs::read_to_string(path).ok()?)
}

/// The `some ... total=US` figure of a pressure file's text, in seconds.
pub(crate) fn parse_pressure_some(s: &str) -> Option<f64> {
    let line = s.lines().find(|l| l.starts_with("some "))?;
    let us = line.split_whitespace().find_map(|f| f.strip_prefix("total="))?.parse::<u64>().ok()?;
    Some(us as f64 * 1e-6)
}

/// The other CPUs that share a core with `cpu` (SMT siblings), from
/// `ROOT/sys/devices/system/cpu/cpuN/topology/thread_siblings_list` (sysfs(5),
/// the kernel's Documentation/admin-guide/cputopology.rst); empty where the
/// kernel does not say.
pub(crate) fn smt_siblings(root: &Path, cpu: u32) -> Vec<u32> {
    let p = root.join(format!("sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"));
    std::fs::read_to_string(p)
        .ok()
        .and_then(|t| t.trim().parse::<crate::cpuset::CpuSet>().ok())
        .map(|s| s.iter().filter(|&c| c != cpu).collect())
        .unwrap_or_default()
}

/// What `/proc/loadavg` (proc(5)) says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LoadAvg {
    /// The 1-, 5- and 15-minute load averages.
    pub(crate) avg: [f64; 3],
    /// Tasks (threads) that exist on the whole system (after the `/`).
    pub(crate) tasks: u64,
}

/// `/proc/loadavg` (proc(5)).
pub(crate) fn loadavg() -> Option<LoadAvg> {
    parse_loadavg(&std::fs::read_to_string("/proc/loadavg").ok()?)
}

/// Parse a `/proc/loadavg` text (proc(5)): `0.50 0.40 0.30 2/345 6789`.
pub(crate) fn parse_loadavg(s: &str) -> Option<LoadAvg> {
    let mut it = s.split_whitespace();
    let mut avg = [0.0; 3];
    for a in &mut avg {
        *a = it.next()?.parse().ok()?;
    }
    let tasks = it.next()?.split('/').nth(1)?.parse().ok()?;
    Some(LoadAvg { avg, tasks })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_idle_and_steal() {
        let stat = "cpu  1 2 3 4 5 6 7 99 0 0\ncpu0 1 0 0 40 10 0 0 10 0 0\ncpu1 1 0 0 0 0 0 0 250 0 0\nintr 5\n";
        let v = parse_stat_cpus(stat, 100.0);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0], CpuTimes { idle_s: 0.5, steal_s: 0.1 });
        assert_eq!(v[1].steal_s, 2.5);
        assert_eq!(parse_machine_busy(stat, 100.0), Some((1.0 + 2.0 + 3.0 + 6.0 + 7.0) / 100.0));
        assert_eq!(parse_machine_busy("cpu 1 2 3\n", 100.0), None);
    }

    #[test]
    fn parses_loadavg() {
        assert_eq!(parse_loadavg("0.50 0.40 0.30 2/345 6789\n"), Some(LoadAvg { avg: [0.5, 0.4, 0.3], tasks: 345 }));
        assert_eq!(parse_loadavg("0.50 0.40"), None);
    }

    #[test]
    fn live_figures_are_readable() {
        assert!(!stat_cpus().is_empty());
        assert!(machine_busy_secs().is_some());
        assert!(loadavg().unwrap().tasks >= 1);
        assert!(idle_secs(Path::new("/nonexistent"), 0).is_none());
        assert!(pressure_some_secs(Path::new("/nonexistent/cpu")).is_none());
    }

    #[test]
    fn parses_cpu_pressure() {
        let t =
            "some avg10=1.00 avg60=0.50 avg300=0.10 total=2500000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=7\n";
        assert_eq!(parse_pressure_some(t), Some(2.5));
        assert_eq!(parse_pressure_some("full avg10=0.00 total=7\n"), None);
        assert_eq!(parse_pressure_some("some avg10=0.00\n"), None);
    }

    #[test]
    fn reads_smt_siblings_below_a_root() {
        let d = tempfile::tempdir().unwrap();
        for (cpu, list) in [(0, "0,2"), (1, "1"), (2, "0,2")] {
            let t = d.path().join(format!("sys/devices/system/cpu/cpu{cpu}/topology"));
            std::fs::create_dir_all(&t).unwrap();
            std::fs::write(t.join("thread_siblings_list"), format!("{list}\n")).unwrap();
        }
        assert_eq!(smt_siblings(d.path(), 0), vec![2]);
        assert_eq!(smt_siblings(d.path(), 2), vec![0]);
        assert!(smt_siblings(d.path(), 1).is_empty());
        assert!(smt_siblings(d.path(), 7).is_empty(), "not said: none");
    }
}
