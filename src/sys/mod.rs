//! Thin wrappers over the system calls and kernel files kdelta needs outside
//! its timed loops, one file per kernel area, each function naming its man
//! page (as rustix does). Benchmarks make their own raw calls where they
//! measure them; everything else lives here. This module (scheduling,
//! affinity, wait4) plus:
//!
//! | file | kernel area |
//! |---|---|
//! | `cgroup.rs` | control groups, v2 and v1: where controllers are mounted, own cgroup, limits' files, `cpu.stat` throttling |
//! | `clock.rs` | clocks: thread CPU clock, wall clock, clock ticks |
//! | `task.rs` | one task: `/proc/PID/{stat,schedstat,status}`, `/proc/self/task`, getrusage, sched_getcpu |
//! | `cpu.rs` | CPUs and load: `/proc/stat`, `/proc/loadavg`, cpuidle residency |
//! | `debuginfo.rs` | where separate debug files are: by build-id or `.gnu_debuglink` under `/usr/lib/debug` |
//! | `limits.rs` | system-wide limits in `/proc/sys` |
//! | `machine.rs` | what moves measurements, below a root: cmdline, interrupts and IRQ affinity, swap, cpuidle, hypervisor signs, steal and per-process ticks |
//! | `memory.rs` | a process's memory: `/proc/PID/statm` sizes, `/proc/PID/maps` mapping count |
//! | `net.rs` | `HOST:PORT` to socket addresses |
//! | `output.rs` | files written at a path the user named: a regular file only, never a FIFO or device |
//! | `perf.rs` | performance counters of chosen tasks: perf_event_open(2) |
//!
//! Child processes (fork, the stop rule, local servers) are in `child/`, which
//! builds on this module.

pub(crate) mod cgroup;
pub(crate) mod clock;
pub(crate) mod cpu;
pub(crate) mod debuginfo;
pub(crate) mod knobs;
pub(crate) mod limits;
pub(crate) mod machine;
pub(crate) mod memory;
pub(crate) mod net;
pub(crate) mod output;
pub(crate) mod perf;
pub(crate) mod perf_access;
pub(crate) mod task;

use crate::cpuset::CpuSet;
use anyhow::{Context, Result};
use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet as NixCpuSet};
use nix::unistd::Pid;

/// sched_setaffinity(2) for the calling thread (inherited by children).
pub fn set_affinity(cpus: &CpuSet) -> Result<()> {
    let mut set = NixCpuSet::new();
    for c in cpus.iter() {
        set.set(c as usize).with_context(|| format!("CPU {c} is beyond the affinity mask size"))?;
    }
    sched_setaffinity(Pid::from_raw(0), &set).with_context(|| format!("sched_setaffinity to CPUs {cpus}"))
}

/// sched_getaffinity(2) for the calling thread.
pub(crate) fn get_affinity() -> Result<CpuSet> {
    let set = sched_getaffinity(Pid::from_raw(0)).context("sched_getaffinity")?;
    Ok(CpuSet::from_iter((0..NixCpuSet::count() as u32).filter(|&c| set.is_set(c as usize).unwrap_or(false))))
}

pub(crate) use crate::model::config::Policy;

/// The policy as sched_setscheduler(2) takes it.
fn raw(p: Policy) -> libc::c_int {
    match p {
        Policy::Other => libc::SCHED_OTHER,
        Policy::Batch => libc::SCHED_BATCH,
        Policy::Idle => libc::SCHED_IDLE,
        Policy::Fifo => libc::SCHED_FIFO,
        Policy::Rr => libc::SCHED_RR,
    }
}

/// sched_setscheduler(2) for the calling process. Real-time policies get a
/// low priority (1) so they cannot starve the rest of the machine for long.
pub(crate) fn set_policy(p: Policy) -> Result<()> {
    let param = libc::sched_param { sched_priority: if p.is_realtime() { 1 } else { 0 } };
    // SAFETY: plain system call with a valid pointer to an initialised sched_param.
    let r = unsafe { libc::sched_setscheduler(0, raw(p), &param) };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EPERM) {
            anyhow::bail!(
                "sched_setscheduler({}) not permitted: it needs CAP_SYS_NICE (run as root or grant the capability)",
                p.name()
            );
        }
        return Err(e).with_context(|| format!("sched_setscheduler({})", p.name()));
    }
    Ok(())
}

/// Whether this process may use real-time policies: root, CAP_SYS_NICE, or an
/// RLIMIT_RTPRIO above zero.
pub(crate) fn can_use_realtime() -> bool {
    if nix::unistd::geteuid().is_root() {
        return true;
    }
    if let Ok((soft, _)) = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_RTPRIO) {
        if soft > 0 {
            return true;
        }
    }
    // CapEff bit 23 is CAP_SYS_NICE.
    task::own_cap_eff().map(|caps| caps & (1 << 23) != 0).unwrap_or(false)
}

/// Peak resident set size of this process (getrusage(2) ru_maxrss), in bytes.
pub(crate) fn peak_rss_self() -> u64 {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF)
        .map(|u| u.max_rss() as u64 * 1024)
        .unwrap_or(0)
}

/// What wait4(2) tells about a finished child.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChildUsage {
    pub(crate) status: std::process::ExitStatus,
    /// User and system CPU time of the child and its waited-for descendants, seconds.
    pub(crate) user_s: f64,
    pub(crate) sys_s: f64,
    /// Peak resident set size, bytes.
    pub(crate) max_rss: u64,
    /// Page faults served without I/O (minor) and with it (major).
    pub(crate) minor_faults: u64,
    pub(crate) major_faults: u64,
    /// Context switches: voluntary (it waited) and involuntary (preempted).
    pub(crate) voluntary_switches: u64,
    pub(crate) involuntary_switches: u64,
}

/// Whether this process may write `path`: access(2) with `W_OK` (a
/// read-only mount, an immutable file, permission bits), and then the mode
/// itself, since access(2) lets root write whatever the bits say: a file or
/// directory with no write bit at all (`0444`, `0555`) was made read-only on
/// purpose and is refused for root too (`EACCES`, naming the mode).
pub(crate) fn can_write(path: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    nix::unistd::access(path, nix::unistd::AccessFlags::W_OK).map_err(std::io::Error::from)?;
    let mode = std::fs::metadata(path)?.permissions().mode();
    if mode & 0o222 == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("mode {:04o} lets no one write it, root included", mode & 0o7777),
        ));
    }
    Ok(())
}

/// statvfs(3): bytes an unprivileged process may still write on the
/// filesystem holding `path`.
pub(crate) fn free_bytes(path: &std::path::Path) -> Option<u64> {
    let v = nix::sys::statvfs::statvfs(path).ok()?;
    Some(v.blocks_available() as u64 * v.fragment_size() as u64)
}

/// The first executable regular file named `prog` in the `:`-separated
/// `path` (an empty entry means the current directory, as for the shell).
pub(crate) fn find_in_path(prog: &str, path: &str) -> Option<std::path::PathBuf> {
    path.split(':')
        .map(|d| std::path::Path::new(if d.is_empty() { "." } else { d }).join(prog))
        .find(|p| is_executable(p))
}

fn is_executable(p: &std::path::Path) -> bool {
    std::fs::metadata(p)
        .map(|m| m.is_file() && std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o111 != 0)
        .unwrap_or(false)
}

/// pidfd_open(2) (Linux 5.3): a descriptor for process `pid` that poll(2)
/// reports readable once the process has ended, before it is reaped.
pub(crate) fn pidfd_open(pid: libc::pid_t) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: the system call takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a descriptor the kernel just gave us and nobody else owns.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) })
}

/// wait4(2): wait for child `pid` (retrying on EINTR) and return its status and rusage.
/// The caller must own `pid` and not have reaped it (std's `Child` never reaps on drop).
pub(crate) fn wait4(pid: libc::pid_t) -> Result<ChildUsage> {
    use std::os::unix::process::ExitStatusExt;
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `status` and `ru` are valid for writes; `pid` is the caller's unreaped child.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e).with_context(|| format!("wait4 on process {pid}"));
        }
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok(ChildUsage {
        status: std::process::ExitStatus::from_raw(status),
        user_s: tv(ru.ru_utime),
        sys_s: tv(ru.ru_stime),
        max_rss: ru.ru_maxrss as u64 * 1024,
        minor_faults: ru.ru_minflt as u64,
        major_faults: ru.ru_majflt as u64,
        voluntary_switches: ru.ru_nvcsw as u64,
        involuntary_switches: ru.ru_nivcsw as u64,
    })
}
