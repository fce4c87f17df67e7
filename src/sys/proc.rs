//! What the kernel says about tasks and CPUs, read for the harness's per-sample
//! bookkeeping (never inside a timed loop). Each reader names its source; each
//! returns `None` where this kernel does not offer it.

use std::path::Path;

/// clock_gettime(2) with CLOCK_THREAD_CPUTIME_ID: this thread's CPU time in
/// seconds, to the nanosecond on current kernels.
pub fn thread_cpu_secs() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// The wall clock in seconds since the Unix epoch (for stored start times).
pub fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// sched_getcpu(3): the CPU the calling thread runs on.
pub fn current_cpu() -> Option<u32> {
    // SAFETY: no arguments; returns -1 on error.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as u32)
}

/// getrusage(2) figures of the calling thread (RUSAGE_THREAD), the whole
/// process (RUSAGE_SELF) or its reaped children (RUSAGE_CHILDREN).
#[derive(Debug, Clone, Copy, Default)]
pub struct Usage {
    /// User plus system CPU time, seconds.
    pub cpu_s: f64,
    /// Involuntary context switches (ru_nivcsw).
    pub nivcsw: u64,
}

pub fn usage(who: libc::c_int) -> Usage {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer; `who` is one of the RUSAGE_* constants.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return Usage::default();
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Usage { cpu_s: tv(ru.ru_utime) + tv(ru.ru_stime), nivcsw: ru.ru_nivcsw as u64 }
}

/// `/proc/TID/schedstat` (proc(5), CONFIG_SCHED_INFO): seconds a task has run
/// and seconds it waited on a run queue while runnable. Works for any thread
/// id, not only process ids.
pub fn task_schedstat(tid: i32) -> Option<(f64, f64)> {
    let s = std::fs::read_to_string(format!("/proc/{tid}/schedstat")).ok()?;
    parse_schedstat(&s)
}

pub fn parse_schedstat(s: &str) -> Option<(f64, f64)> {
    let mut it = s.split_whitespace().map(|x| x.parse::<u64>().ok());
    let run = it.next()??;
    let wait = it.next()??;
    Some((run as f64 * 1e-9, wait as f64 * 1e-9))
}

/// The fields of `/proc/PID/stat` (proc(5)) the harness uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TaskStat {
    pub pgrp: i32,
    /// utime + stime + cutime + cstime, in clock ticks.
    pub ticks: u64,
    /// Field 39: the CPU the task last ran on.
    pub cpu: u32,
}

pub fn task_stat(pid: i32) -> Option<TaskStat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Parse a `/proc/PID/stat` line. The command name (field 2) may hold spaces
/// and parentheses, so fields are counted from its last `)`.
pub fn parse_stat(s: &str) -> Option<TaskStat> {
    let rest = &s[s.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // f[0] is field 3 (state): field k is f[k - 3].
    let num = |k: usize| f.get(k - 3).and_then(|x| x.parse::<i64>().ok());
    let ticks = [14, 15, 16, 17].iter().map(|&k| num(k).unwrap_or(0).max(0) as u64).sum();
    Some(TaskStat { pgrp: num(5)? as i32, ticks, cpu: num(39)? as u32 })
}

/// Clock ticks per second (sysconf(_SC_CLK_TCK)), for `/proc` tick counts.
pub fn clk_tck() -> f64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok().flatten().unwrap_or(100) as f64
}

/// CPU time, in seconds, of every process in process group `pgrp` other than
/// `except`, from `/proc/*/stat` (their own and their reaped children's).
pub fn group_cpu_secs(pgrp: i32, except: i32) -> f64 {
    let Ok(dir) = std::fs::read_dir("/proc") else { return 0.0 };
    let mut ticks = 0u64;
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
        if pid == except {
            continue;
        }
        if let Some(st) = task_stat(pid) {
            if st.pgrp == pgrp {
                ticks += st.ticks;
            }
        }
    }
    ticks as f64 / clk_tck()
}

/// Seconds CPU `cpu` has spent idle, from the cpuidle states' residency
/// (`/sys/devices/system/cpu/cpuN/cpuidle/stateK/time`, microseconds; see the
/// kernel's Documentation/admin-guide/pm/cpuidle.rst). A state's time is added
/// when the CPU leaves it, so an idle period still under way is not counted.
/// `None` when the machine has no cpuidle driver.
pub fn cpu_idle_secs(root: &Path, cpu: u32) -> Option<f64> {
    let dir = root.join(format!("sys/devices/system/cpu/cpu{cpu}/cpuidle"));
    let mut total = 0u64;
    let mut any = false;
    for e in std::fs::read_dir(&dir).ok()?.flatten() {
        if !e.file_name().to_string_lossy().starts_with("state") {
            continue;
        }
        if let Some(us) = std::fs::read_to_string(e.path().join("time")).ok().and_then(|s| s.trim().parse::<u64>().ok()) {
            total += us;
            any = true;
        }
    }
    any.then_some(total as f64 * 1e-6)
}

/// Idle (with iowait) and steal time of every CPU in seconds, indexed by CPU
/// number, from the `cpuN` lines of `/proc/stat` (proc(5): fields 4 and 5,
/// and field 8, time a hypervisor ran something else while this virtual CPU
/// wanted to run). Clock-tick resolution; idle includes a period under way.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuTimes {
    pub idle_s: f64,
    pub steal_s: f64,
}

pub fn stat_cpus() -> Vec<CpuTimes> {
    std::fs::read_to_string("/proc/stat").map(|s| parse_stat_cpus(&s, clk_tck())).unwrap_or_default()
}

pub fn parse_stat_cpus(s: &str, hz: f64) -> Vec<CpuTimes> {
    let mut out = Vec::new();
    for l in s.lines() {
        // `cpuN` lines only: the all-CPU line `cpu  USER ...` would take its
        // user ticks for a CPU number (and size the vector by them).
        let Some(rest) = l.strip_prefix("cpu").filter(|r| r.starts_with(|c: char| c.is_ascii_digit())) else { continue };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_awkward_names() {
        let line = "1234 (a (b) c) S 1 777 777 0 -1 4194560 100 0 0 0 5 7 2 1 20 0 1 0 100 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0 0 0 0 0 0 0 0 0";
        let st = parse_stat(line).unwrap();
        assert_eq!(st.pgrp, 777);
        assert_eq!(st.ticks, 5 + 7 + 2 + 1);
        assert_eq!(st.cpu, 3);
        assert!(parse_stat("garbage").is_none());
    }

    #[test]
    fn parses_schedstat_and_steal() {
        assert_eq!(parse_schedstat("2000000000 500000000 7\n"), Some((2.0, 0.5)));
        assert_eq!(parse_schedstat("x"), None);
        let stat = "cpu  1 2 3 4 5 6 7 99 0 0\ncpu0 1 0 0 40 10 0 0 10 0 0\ncpu1 1 0 0 0 0 0 0 250 0 0\nintr 5\n";
        let v = parse_stat_cpus(stat, 100.0);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0], CpuTimes { idle_s: 0.5, steal_s: 0.1 });
        assert_eq!(v[1].steal_s, 2.5);
        // A machine up for hours: the all-CPU line is not CPU 1310484.
        let v = parse_stat_cpus("cpu  1310484 44601 273056 718014 4742 0 15121 8359 0 0\ncpu0 1 0 0 40 10 0 0 10 0 0\n", 100.0);
        assert_eq!(v, vec![CpuTimes { idle_s: 0.5, steal_s: 0.1 }]);
    }

    #[test]
    fn own_figures_are_readable() {
        let a = thread_cpu_secs();
        let mut x = 0u64;
        for i in 0..1_000_000u64 {
            x = x.wrapping_add(std::hint::black_box(i));
        }
        std::hint::black_box(x);
        assert!(thread_cpu_secs() > a);
        assert!(current_cpu().is_some());
        let tid = nix::unistd::gettid().as_raw();
        // CONFIG_SCHED_INFO is near universal, but a kernel may lack it.
        if let Some((run, wait)) = task_schedstat(tid) {
            assert!(run > 0.0 && wait >= 0.0);
        }
        assert!(task_stat(std::process::id() as i32).is_some());
    }
}
