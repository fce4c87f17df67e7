//! Whether a timed command left where its configuration put it: it changed
//! its own CPU affinity (`taskset -c 0 ...` inside the command), or moved
//! itself out of the worker's cgroup (out of its `cpu.max`). Either way the
//! figure is not the configuration's, and the result says so.
//!
//! **CPUs.** Before the timed runs the worker opens one `task-clock` counter
//! per online CPU on its own thread, with `inherit`, so every process a run
//! starts is counted, on that CPU only (perf's per-task, per-CPU events; a
//! child's counts are added to the worker's counter when it exits, and the
//! worker waits for every one it started). A counter of a CPU outside the
//! worker's affinity counts only while one of those tasks runs there, which
//! the kernel allows only after the task changed its affinity. Reset and
//! enabled around each run: the CPUs with time are where it ran.
//!
//! **cgroup.** The worker's own cgroup's CPU usage (v2 `cpu.stat`
//! `usage_usec`, v1 `cpuacct.usage` where cpuacct is mounted with cpu),
//! read around each run, grows by all the CPU time the run's tasks spent
//! in it; the run's CPU time (`wait4`'s rusage of it and its descendants)
//! more than 10 % and 20 ms above that growth was spent in another cgroup.
//! Where the usage cannot be read (cgroup v1 with cpuacct apart) but the
//! cgroup has a CPU quota (`cpu.max`, v1 `cpu.cfs_quota_us`), CPU time
//! beyond what the quota allows in the run's wall time (and one period
//! more) was spent outside it.
//!
//! **Limits.** Counters are per-task events of kdelta's own children, which
//! `kernel.perf_event_paranoid` 3 (some distributions' default) forbids a
//! non-root user: then the CPUs are not watched (the cgroup check still
//! is). Time a task spends outside its cgroup is seen only when it was
//! waited for (a process left running is killed, not waited for by its
//! parent, and its time is not in the rusage).

use crate::cpuset::CpuSet;
use perf_event::events::Software;
use perf_event::{Builder, Counter};
use std::path::PathBuf;

/// What one run did that its configuration did not allow.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Left {
    /// CPUs outside the worker's affinity the run's tasks ran on, with
    /// their milliseconds there.
    pub(crate) cpus: Vec<(u32, f64)>,
    /// Milliseconds of the run's CPU time spent outside the worker's cgroup.
    pub(crate) cgroup_ms: Option<f64>,
}

/// The watch over a worker's runs.
pub(crate) struct Watch {
    /// The worker's affinity.
    allowed: CpuSet,
    /// Per online CPU, its counter.
    counters: Vec<(u32, Counter)>,
    /// The worker's cgroup, when it is in one below the root.
    cgroup: Option<CgroupCpu>,
    /// Its usage read before the run.
    usage_before: Option<f64>,
    /// Runs that left, and everything they left for.
    runs_left: usize,
    cpus_seen: CpuSet,
    cgroup_ms: f64,
}

impl Watch {
    /// A watch of this thread's children; whatever cannot be opened is not
    /// watched.
    pub(crate) fn open() -> Watch {
        let allowed = crate::sys::get_affinity().unwrap_or_default();
        let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
            .ok()
            .and_then(|t| CpuSet::parse_list(&t).ok())
            .unwrap_or_default();
        // Only when some online CPU is outside the affinity is there
        // anywhere to go.
        let mut counters = Vec::new();
        if online.iter().any(|c| !allowed.contains(c)) {
            for c in online.iter().filter(|&c| !allowed.contains(c)) {
                let mut b = Builder::new(Software::TASK_CLOCK);
                b.observe_self().one_cpu(c as usize).inherit(true).exclude_hv(true);
                match b.build() {
                    Ok(counter) => counters.push((c, counter)),
                    Err(_) => {
                        counters.clear();
                        break;
                    }
                }
            }
        }
        Watch {
            allowed,
            counters,
            cgroup: CgroupCpu::own(),
            usage_before: None,
            runs_left: 0,
            cpus_seen: CpuSet::new(),
            cgroup_ms: 0.0,
        }
    }

    /// Just before a run.
    pub(crate) fn start(&mut self) {
        for (_, c) in &mut self.counters {
            let _ = c.reset();
            let _ = c.enable();
        }
        self.usage_before = self.cgroup.as_ref().and_then(CgroupCpu::usage_s);
    }

    /// Just after a run whose tasks used `cpu_s` seconds of CPU (rusage)
    /// in `wall_s` seconds.
    pub(crate) fn stop(&mut self, cpu_s: f64, wall_s: f64) -> Left {
        let mut left = Left::default();
        for (cpu, c) in &mut self.counters {
            let _ = c.disable();
            let ns = c.read().unwrap_or(0);
            if ns > 0 {
                left.cpus.push((*cpu, ns as f64 * 1e-6));
            }
        }
        if let Some(cg) = &self.cgroup {
            let before = self.usage_before.take();
            left.cgroup_ms = match (before, cg.usage_s()) {
                (Some(b), Some(a)) => outside_ms(cpu_s, (a - b).max(0.0)),
                _ => cg.quota().and_then(|q| outside_ms(cpu_s, quota_allows(q, wall_s))),
            };
        }
        if !left.cpus.is_empty() || left.cgroup_ms.is_some() {
            self.runs_left += 1;
        }
        for (c, _) in &left.cpus {
            self.cpus_seen.insert(*c);
        }
        self.cgroup_ms += left.cgroup_ms.unwrap_or(0.0);
        left
    }

    /// The result's note, when any run left.
    pub(crate) fn note(&self) -> Option<String> {
        if self.runs_left == 0 {
            return None;
        }
        let mut what = Vec::new();
        if !self.cpus_seen.is_empty() {
            let on = self.allowed.union(&self.cpus_seen);
            what.push(format!(
                "the command changed its own CPU affinity: measured on CPUs {on}, configured {}",
                self.allowed
            ));
        }
        if self.cgroup_ms > 0.0 {
            what.push(
                "the command left the worker's cgroup (its cpu.max and other limits): part of its CPU time ran \
                 outside it"
                    .to_string(),
            );
        }
        // The same words from every worker, so the result keeps one note.
        Some(format!("{}; its figures are not the configuration's", what.join("; ")))
    }
}

/// Milliseconds of `cpu_s` seconds of a run's CPU time not in `grown_s`, the
/// growth of its cgroup's usage meanwhile, when that is more than noise
/// (20 ms and 10 % of the run's time).
pub(crate) fn outside_ms(cpu_s: f64, grown_s: f64) -> Option<f64> {
    let out = cpu_s - grown_s;
    (out > 0.020 && out > 0.1 * cpu_s).then_some(out * 1e3)
}

/// The CPU accounting of the worker's cgroup: its directory, and how its
/// usage and quota are read there.
struct CgroupCpu {
    dir: PathBuf,
    v2: bool,
}

impl CgroupCpu {
    /// This process's cgroup holding the cpu controller (v2, else v1), when
    /// it is not the root.
    fn own() -> Option<CgroupCpu> {
        let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let root = crate::sys::cgroup::cgroup_dir(std::path::Path::new("/"));
        let v2 = crate::sys::cgroup::own_path(&text, None);
        let v1 = crate::sys::cgroup::own_path(&text, Some("cpu"));
        let below = |mount: PathBuf, path: &str| -> Option<PathBuf> {
            let rel = path.trim_start_matches('/');
            if rel.is_empty() || rel.split('/').any(|c| c == ".." || c == ".") {
                return None;
            }
            Some(mount.join(rel)).filter(|d| d.is_dir())
        };
        if let Some(dir) = below(root.clone(), &v2).filter(|d| d.join("cpu.stat").is_file()) {
            return Some(CgroupCpu { dir, v2: true });
        }
        ["cpu", "cpu,cpuacct", "cpuacct,cpu"]
            .iter()
            .find_map(|m| below(root.join(m), &v1))
            .map(|dir| CgroupCpu { dir, v2: false })
    }

    /// CPU seconds used in the cgroup so far.
    fn usage_s(&self) -> Option<f64> {
        if self.v2 {
            let t = std::fs::read_to_string(self.dir.join("cpu.stat")).ok()?;
            let us: u64 = t.lines().find_map(|l| l.strip_prefix("usage_usec ")?.trim().parse().ok())?;
            Some(us as f64 * 1e-6)
        } else {
            let ns: u64 = std::fs::read_to_string(self.dir.join("cpuacct.usage")).ok()?.trim().parse().ok()?;
            Some(ns as f64 * 1e-9)
        }
    }

    /// The quota: CPU seconds per period, and the period in seconds.
    fn quota(&self) -> Option<(f64, f64)> {
        let read = |f: &str| std::fs::read_to_string(self.dir.join(f)).ok();
        let (q, p) = if self.v2 {
            let t = read("cpu.max")?;
            let mut it = t.split_whitespace();
            (it.next()?.parse::<f64>().ok()?, it.next()?.parse::<f64>().ok()?)
        } else {
            (
                read("cpu.cfs_quota_us")?.trim().parse::<f64>().ok()?,
                read("cpu.cfs_period_us")?.trim().parse::<f64>().ok()?,
            )
        };
        (q > 0.0 && p > 0.0).then_some((q * 1e-6, p * 1e-6))
    }
}

/// CPU seconds a cgroup with `quota` (seconds per period, period) allows in
/// `wall_s` seconds, one period's quota of slack included.
pub(crate) fn quota_allows(quota: (f64, f64), wall_s: f64) -> f64 {
    let (q, p) = quota;
    q / p * wall_s + q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_outside_the_cgroup_counts_past_the_noise() {
        // Half a CPU for 1 s of wall time allows 0.5 s and a period's 0.05 s.
        let allows = quota_allows((0.05, 0.1), 1.0);
        assert!((allows - 0.55).abs() < 1e-9);
        assert_eq!(outside_ms(0.58, allows), None);
        assert!(outside_ms(0.95, allows).is_some());
        assert_eq!(outside_ms(1.0, 0.99), None);
        assert_eq!(outside_ms(0.01, 0.0), None);
        assert!(outside_ms(1.0, 0.1).is_some_and(|m| (m - 900.0).abs() < 1e-6));
    }

    /// A child that moves itself to a CPU outside this thread's affinity is
    /// seen there (where perf counters may be opened and there are 2 CPUs).
    #[test]
    fn a_child_that_changes_its_affinity_is_seen() {
        let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
        let online = CpuSet::parse_list(&online).unwrap_or_default();
        if online.len() < 2 || std::process::Command::new("taskset").arg("-V").output().is_err() {
            eprintln!("SKIPPED: needs 2 CPUs and taskset");
            return;
        }
        let first = online.iter().next().unwrap();
        let other = online.iter().nth(1).unwrap();
        // A thread of its own, so this test's affinity is its alone.
        std::thread::spawn(move || {
            crate::sys::set_affinity(&[first].into_iter().collect()).unwrap();
            let mut w = Watch::open();
            if w.counters.is_empty() {
                eprintln!("SKIPPED: perf counters of own tasks cannot be opened here");
                return;
            }
            let spin = "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done";
            w.start();
            let st = std::process::Command::new("sh").args(["-c", spin]).status().unwrap();
            assert!(st.success());
            assert_eq!(w.stop(0.0, 0.0).cpus, vec![]);
            assert_eq!(w.note(), None);
            w.start();
            let st = std::process::Command::new("taskset")
                .args(["-c", &other.to_string(), "sh", "-c", spin])
                .status()
                .unwrap();
            assert!(st.success());
            let left = w.stop(0.0, 0.0);
            assert_eq!(left.cpus.iter().map(|c| c.0).collect::<Vec<_>>(), vec![other], "{left:?}");
            let note = w.note().unwrap();
            assert!(note.contains(&format!("configured {first}")), "{note}");
        })
        .join()
        .unwrap();
    }
}
