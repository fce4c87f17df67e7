//! Resource checks before a chat run: open files (raised to the hard limit
//! when that is enough), processes/threads per user, the system's
//! threads-max, pid_max and vm.max_map_count. A shortfall fails the run with
//! exactly what to raise, before any connection is made.

use anyhow::{bail, Result};
use nix::sys::resource::{getrlimit, setrlimit, Resource, RLIM_INFINITY};

use crate::sys::limits as sys_limits;

/// Threads now on the whole system (from /proc/loadavg).
fn system_threads() -> u64 {
    crate::sys::cpu::loadavg().map(|l| l.tasks).unwrap_or(0)
}

/// Raise the open-file soft limit to the hard limit (a server takes as many
/// connections as clients bring); the new soft limit.
pub fn raise_nofile() -> Result<u64> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft != hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard)?;
    }
    Ok(hard)
}

/// Make sure this process may open `fds` descriptors and the system may run
/// `threads` more threads (client and server together). Returns remarks on
/// what was changed.
pub(crate) fn ensure(fds: u64, threads: u64) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft != RLIM_INFINITY && soft < fds {
        if hard == RLIM_INFINITY || hard >= fds {
            setrlimit(Resource::RLIMIT_NOFILE, hard, hard)?;
            notes.push(format!("raised the open-file soft limit from {soft} to {hard} (need {fds})"));
        } else {
            bail!("the chat run needs {fds} open files but the hard limit is {hard}: raise it (ulimit -Hn {fds}, or nofile in /etc/security/limits.conf)");
        }
    }
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let (psoft, phard) = getrlimit(Resource::RLIMIT_NPROC)?;
    if !root && psoft != RLIM_INFINITY && psoft < threads + 64 {
        let want = threads + 64;
        if phard == RLIM_INFINITY || phard >= want {
            setrlimit(Resource::RLIMIT_NPROC, phard, phard)?;
            notes.push(format!("raised the process/thread soft limit from {psoft} to {phard}"));
        } else {
            bail!("the chat run needs about {want} threads but RLIMIT_NPROC is {phard}: raise it (ulimit -u {want})");
        }
    }
    let running = system_threads();
    if let Some(max) = sys_limits::threads_max() {
        if running + threads + 64 > max {
            bail!(
                "the chat run needs {threads} threads, {running} run already, threads-max is {max}: raise it (sysctl kernel.threads-max={})",
                running + threads + 1024
            );
        }
    }
    if let Some(max) = sys_limits::pid_max() {
        if running + threads + 64 > max {
            bail!(
                "the chat run needs {threads} threads, {running} run already, pid_max is {max}: raise it (sysctl kernel.pid_max={})",
                running + threads + 1024
            );
        }
    }
    if let Some(max) = sys_limits::max_map_count() {
        // Two mappings per thread stack (stack and guard page) in one process.
        let need = 2 * threads + 4096;
        if need > max {
            bail!("the chat run needs about {need} memory mappings, vm.max_map_count is {max}: raise it (sysctl vm.max_map_count={need})");
        }
    }
    Ok(notes)
}

#[cfg(test)]
mod tests {
    #[test]
    fn small_needs_pass_and_absurd_ones_say_what_to_raise() {
        assert!(super::ensure(64, 16).is_ok());
        let e = super::ensure(1 << 40, 16).unwrap_err().to_string();
        assert!(e.contains("ulimit"), "{e}");
        let e = super::ensure(64, 1 << 40).unwrap_err().to_string();
        // Root is not bound by RLIMIT_NPROC, so a system-wide limit is the
        // first to say no; anyone else meets their process limit first.
        if unsafe { libc::geteuid() } == 0 {
            assert!(e.contains("sysctl"), "{e}");
        } else {
            assert!(e.contains("ulimit -u") || e.contains("sysctl"), "{e}");
        }
    }
}
