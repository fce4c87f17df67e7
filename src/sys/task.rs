//! What the kernel says about one task (a process or a thread): `/proc/PID/stat`,
//! `/proc/TID/schedstat`, `/proc/PID/status` and `/proc/self/task` (all proc(5)),
//! its resource usage (getrusage(2)) and the CPU it runs on (sched_getcpu(3)).
//! Read for the harness's per-sample bookkeeping and by the benchmarks' own
//! plumbing, never inside a timed loop. Each reader returns `None` (or an
//! empty answer) where this kernel does not offer what it reads.

use super::clock::clk_tck;

/// sched_getcpu(3): the CPU the calling thread runs on.
pub(crate) fn current_cpu() -> Option<u32> {
    // SAFETY: no arguments; returns -1 on error.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as u32)
}

/// getrusage(2) figures of the calling thread (RUSAGE_THREAD), the whole
/// process (RUSAGE_SELF) or its reaped children (RUSAGE_CHILDREN).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Usage {
    /// User plus system CPU time, seconds.
    pub(crate) cpu_s: f64,
    /// Involuntary context switches (ru_nivcsw).
    pub(crate) nivcsw: u64,
}

/// getrusage(2) for `who` (one of the `RUSAGE_*` constants); zeros on failure.
pub(crate) fn usage(who: libc::c_int) -> Usage {
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
pub(crate) fn schedstat(tid: i32) -> Option<(f64, f64)> {
    let s = std::fs::read_to_string(format!("/proc/{tid}/schedstat")).ok()?;
    parse_schedstat(&s)
}

/// Run time and run-queue wait (schedstat, nanoseconds) of the children this
/// process reaped after [`note_ended_child`]: a task's own schedstat goes
/// with it, and the kernel adds it to no other task's.
static REAPED_RUN_NS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static REAPED_DELAY_NS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Before reaping child `pid`, which has ended (a zombie, found by waitid(2)
/// with `WNOWAIT` or its pidfd): keep its schedstat (proc(5)) for
/// [`reaped_schedstat`]. Its own figures only: what its children used is
/// not in them.
pub(crate) fn note_ended_child(pid: i32) {
    use std::sync::atomic::Ordering::Relaxed;
    if let Some((run, delay)) = schedstat(pid) {
        REAPED_RUN_NS.fetch_add((run * 1e9) as u64, Relaxed);
        REAPED_DELAY_NS.fetch_add((delay * 1e9) as u64, Relaxed);
    }
}

/// Seconds run and waited runnable by the children noted so far
/// ([`note_ended_child`]).
pub(crate) fn reaped_schedstat() -> (f64, f64) {
    use std::sync::atomic::Ordering::Relaxed;
    (REAPED_RUN_NS.load(Relaxed) as f64 * 1e-9, REAPED_DELAY_NS.load(Relaxed) as f64 * 1e-9)
}

/// The first two fields of a `/proc/TID/schedstat` text (proc(5)), nanoseconds, as seconds.
pub(crate) fn parse_schedstat(s: &str) -> Option<(f64, f64)> {
    let mut it = s.split_whitespace().map(|x| x.parse::<u64>().ok());
    let run = it.next()??;
    let wait = it.next()??;
    Some((run as f64 * 1e-9, wait as f64 * 1e-9))
}

/// The fields of `/proc/PID/stat` (proc(5)) kdelta uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Stat {
    /// Field 3: the state is `Z`: it has ended and waits to be reaped.
    pub(crate) zombie: bool,
    /// Field 4: the parent's process id.
    pub(crate) ppid: i32,
    /// Field 5: the process group.
    pub(crate) pgrp: i32,
    /// Fields 14 to 17: utime + stime + cutime + cstime, in clock ticks.
    pub(crate) ticks: u64,
    /// Field 22 (`starttime`): when the task started, clock ticks after boot.
    /// With the id it names one process: an id reused later starts later.
    pub(crate) start: u64,
    /// Field 39 (`processor`): the CPU the task last ran on.
    pub(crate) cpu: u32,
}

/// `/proc/PID/stat` (proc(5)) of a process or thread.
pub(crate) fn stat(pid: i32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Parse a `/proc/PID/stat` line (proc(5)). The command name (field 2) may
/// hold spaces and parentheses, so fields are counted from its last `)`.
pub(crate) fn parse_stat(s: &str) -> Option<Stat> {
    let rest = &s[s.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // f[0] is field 3 (state): field k is f[k - 3].
    let num = |k: usize| f.get(k - 3).and_then(|x| x.parse::<i64>().ok());
    let ticks = [14, 15, 16, 17].iter().map(|&k| num(k).unwrap_or(0).max(0) as u64).sum();
    Some(Stat {
        zombie: f.first() == Some(&"Z"),
        ppid: num(4)? as i32,
        pgrp: num(5)? as i32,
        ticks,
        start: num(22)?.max(0) as u64,
        cpu: num(39)? as u32,
    })
}

/// When process `pid` started (field 22 of `/proc/PID/stat`, proc(5)), clock
/// ticks after boot; `None` once it is gone. The id and this time together
/// name one process even after the id is reused.
pub(crate) fn start_time(pid: i32) -> Option<u64> {
    stat(pid).map(|s| s.start)
}

/// The thread id of the kernel's softirq thread of each CPU in `cpus`
/// (`ksoftirqd/N`, bound to CPU N), from every task's `comm` in `/proc`.
pub(crate) fn softirq_threads(cpus: &[u32]) -> Vec<Option<i32>> {
    let mut found = vec![None; cpus.len()];
    for pid in all_pids() {
        let Ok(comm) = std::fs::read_to_string(format!("/proc/{pid}/comm")) else { continue };
        let Some(n) = comm.trim_end().strip_prefix("ksoftirqd/").and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if let Some(i) = cpus.iter().position(|&c| c == n) {
            found[i] = Some(pid);
        }
    }
    found
}

/// Every process id in `/proc` (proc(5)), in directory order.
pub(crate) fn all_pids() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.flatten().filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<i32>().ok())).collect()
}

/// CPU time, in seconds, of every process in process group `pgrp` other than
/// `except`, from `/proc/*/stat` (proc(5); their own and their reaped children's).
pub(crate) fn group_cpu_secs(pgrp: i32, except: i32) -> f64 {
    let ticks: u64 = all_pids()
        .into_iter()
        .filter(|&p| p != except)
        .filter_map(stat)
        .filter(|st| st.pgrp == pgrp)
        .map(|st| st.ticks)
        .sum();
    ticks as f64 / clk_tck()
}

/// Every thread of the processes in process group `pgrp` other than
/// process `except`, from `/proc/*/stat` and `/proc/PID/task` (proc(5)).
pub(crate) fn group_threads(pgrp: i32, except: i32) -> Vec<i32> {
    let mut v = Vec::new();
    for p in all_pids().into_iter().filter(|&p| p != except) {
        if stat(p).is_some_and(|st| st.pgrp == pgrp) {
            match std::fs::read_dir(format!("/proc/{p}/task")) {
                Ok(dir) => v.extend(dir.flatten().filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())),
                Err(_) => v.push(p),
            }
        }
    }
    v
}

/// The processes whose parent is process `pid`, from `/proc/*/stat` (proc(5)).
pub(crate) fn children_of(pid: i32) -> Vec<i32> {
    all_pids().into_iter().filter(|&p| stat(p).is_some_and(|st| st.ppid == pid)).collect()
}

/// Every live descendant of process `pid` (children, their children, ...),
/// parents before their children, from one pass over `/proc/*/stat`
/// (proc(5)); zombies, which no signal ends, are left out.
pub(crate) fn descendants(pid: i32) -> Vec<i32> {
    let stats: Vec<(i32, Stat)> = all_pids().into_iter().filter_map(|p| Some((p, stat(p)?))).collect();
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i];
        let found: Vec<i32> =
            stats.iter().filter(|(p, st)| st.ppid == parent && !out.contains(p)).map(|(p, _)| *p).collect();
        out.extend(found);
        i += 1;
    }
    out.remove(0);
    out.retain(|p| stats.iter().any(|(q, st)| q == p && !st.zombie));
    out
}

/// Whether `/proc/PID` exists (proc(5)): the process runs or is a zombie not
/// yet reaped. False once it has been reaped (unless the id was reused).
pub(crate) fn exists(pid: i32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// One `Name:` line's value from a `/proc/PID/status` text (proc(5)), trimmed.
pub(crate) fn status_field<'a>(status: &'a str, name: &str) -> Option<&'a str> {
    status.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':')).map(str::trim)
}

/// `VmHWM` of a `/proc/PID/status` text (proc(5)): peak resident set size, KB.
pub(crate) fn parse_peak_rss_kb(status: &str) -> Option<u64> {
    status_field(status, "VmHWM")?.split_whitespace().next()?.parse().ok()
}

/// Peak resident set size of process `pid` (`"self"` for this one) in KB,
/// from `VmHWM` in `/proc/PID/status` (proc(5)).
pub(crate) fn peak_rss_kb(pid: &str) -> Option<u64> {
    parse_peak_rss_kb(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
}

/// `CapEff` of a `/proc/PID/status` text (proc(5)): the effective capability
/// set as a bit mask (capabilities(7) numbers the bits).
pub(crate) fn parse_cap_eff(status: &str) -> Option<u64> {
    u64::from_str_radix(status_field(status, "CapEff")?, 16).ok()
}

/// This process's effective capabilities (capabilities(7)), from `/proc/self/status`.
pub(crate) fn own_cap_eff() -> Option<u64> {
    parse_cap_eff(&std::fs::read_to_string("/proc/self/status").ok()?)
}

/// The thread ids of this process (`/proc/self/task`, proc(5)).
pub(crate) fn own_threads() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
    dir.flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect()
}

/// How many threads this process has (`/proc/self/task`, proc(5));
/// `usize::MAX` when it cannot be read, so a caller that needs to be alone
/// (before a fork) does not believe it is.
pub(crate) fn own_thread_count() -> usize {
    std::fs::read_dir("/proc/self/task").map(|d| d.count()).unwrap_or(usize::MAX)
}

/// Whether `tid` is a thread of this process (`/proc/self/task/TID`, proc(5)).
pub(crate) fn is_own_thread(tid: i32) -> bool {
    std::path::Path::new(&format!("/proc/self/task/{tid}")).exists()
}

/// Run time and run-queue wait (schedstat, seconds) of every thread of this
/// process and of the other processes of process group `pgrp`, by thread id.
pub(crate) fn group_schedstat(pgrp: i32, pid: i32) -> Vec<(i32, f64, f64)> {
    let mut tids = own_threads();
    tids.extend(group_threads(pgrp, pid));
    tids.sort_unstable();
    tids.dedup();
    tids.into_iter().filter_map(|t| schedstat(t).map(|(r, d)| (t, r, d))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_awkward_names() {
        let line = "1234 (a (b) c) S 1 777 777 0 -1 4194560 100 0 0 0 5 7 2 1 20 0 1 0 100 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0 0 0 0 0 0 0 0 0";
        let st = parse_stat(line).unwrap();
        assert_eq!(st.ppid, 1);
        assert_eq!(st.pgrp, 777);
        assert_eq!(st.ticks, 5 + 7 + 2 + 1);
        assert_eq!(st.cpu, 3);
        assert_eq!(st.start, 100);
        assert!(parse_stat("garbage").is_none());
        assert!(parse_stat("1 (x) S 1 2").is_none());
    }

    #[test]
    // The child is reaped by `sys::wait4`, not through `Child::wait`.
    #[allow(clippy::zombie_processes)]
    fn an_ended_childs_schedstat_is_kept_before_it_is_reaped() {
        let before = reaped_schedstat();
        let child = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 2000 ]; do i=$((i+1)); done"])
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        // SAFETY: an all-zero siginfo_t is a valid value of this plain C struct.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is valid for writes; WNOWAIT leaves the child unreaped.
        let r = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT) };
        assert_eq!(r, 0);
        note_ended_child(pid);
        crate::sys::wait4(pid).unwrap();
        let after = reaped_schedstat();
        // A zombie's schedstat is still there: it ran (the wait may be 0).
        assert!(after.0 > before.0 && after.1 >= before.1, "{before:?} {after:?}");
    }

    #[test]
    fn parses_schedstat() {
        assert_eq!(parse_schedstat("2000000000 500000000 7\n"), Some((2.0, 0.5)));
        assert_eq!(parse_schedstat("x"), None);
    }

    #[test]
    fn parses_status() {
        let s = "Name:\tkdelta\nVmPeak:\t  10000 kB\nVmHWM:\t    4242 kB\nCapEff:\t0000000000800000\nThreads:\t1\n";
        assert_eq!(status_field(s, "Name"), Some("kdelta"));
        assert_eq!(status_field(s, "Vm"), None);
        assert_eq!(parse_peak_rss_kb(s), Some(4242));
        assert_eq!(parse_cap_eff(s), Some(1 << 23));
        assert_eq!(parse_peak_rss_kb("Name: x\n"), None);
    }

    #[test]
    fn own_figures_are_readable() {
        assert!(current_cpu().is_some());
        let mut x = 0u64;
        for i in 0..1_000_000u64 {
            x = x.wrapping_add(std::hint::black_box(i));
        }
        std::hint::black_box(x);
        // The kernel adds run time to schedstat when the task is switched out.
        std::thread::sleep(std::time::Duration::from_millis(2));
        let tid = nix::unistd::gettid().as_raw();
        // CONFIG_SCHED_INFO is near universal, but a kernel may lack it.
        if let Some((run, wait)) = schedstat(tid) {
            assert!(run > 0.0 && wait >= 0.0);
        }
        let me = std::process::id() as i32;
        assert!(stat(me).is_some());
        assert!(exists(me));
        let start = start_time(me).unwrap();
        assert!(start > 0 && start_time(me) == Some(start));
        assert!(start_time(1).unwrap() <= start, "init started before this test");
        assert!(is_own_thread(tid));
        assert!(own_threads().contains(&tid));
        assert!(own_thread_count() >= 1);
        assert!(peak_rss_kb("self").unwrap_or(1) > 0);
        assert!(all_pids().contains(&me));
    }
}
