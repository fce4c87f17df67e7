//! Running one shell command and taking its cost from the kernel's accounting:
//! `wait4` returns the rusage of the finished child together with all of its
//! descendants it waited for (make, the compilers, the assembler, the linker),
//! which is what `/usr/bin/time` reports; wall time is measured around it.

use anyhow::{bail, Context, Result};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What one finished command cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Usage {
    pub wall: Duration,
    pub user: Duration,
    pub sys: Duration,
}

fn tv(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
}

/// Run `sh -c cmd` in `dir` with `JOBS=jobs` in its environment, output to
/// `log`, and wait for it with `wait4`. A non-zero exit is an error quoting
/// the end of the log.
pub fn run(cmd: &str, dir: &Path, jobs: u32, log: &Path) -> Result<Usage> {
    let out = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let err = out.try_clone()?;
    let mut c = Command::new("sh");
    c.arg("-c").arg(cmd).current_dir(dir).env("JOBS", jobs.to_string()).stdin(Stdio::null()).stdout(out).stderr(err);
    // Its own process group, so a build can be told apart (and killed as one).
    c.process_group(0);
    // SAFETY: the closure runs in the forked child before exec and only calls
    // prctl, which is async-signal-safe; it allocates nothing.
    unsafe {
        c.pre_exec(|| {
            // If the worker dies (killed at its time limit), the shell gets
            // SIGKILL instead of running on unattended.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let t0 = Instant::now();
    let child = c.spawn().with_context(|| format!("starting `sh -c {cmd}` in {}", dir.display()))?;
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `status` and `ru` are valid for writes; `pid` is our child,
        // not yet reaped (std's `Child` is never waited on: dropping it does not wait).
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e).context("wait4 on the build");
        }
    }
    let wall = t0.elapsed();
    drop(child);
    let usage = Usage { wall, user: tv(ru.ru_utime), sys: tv(ru.ru_stime) };
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        return Ok(usage);
    }
    let how = if libc::WIFEXITED(status) { format!("exit status {}", libc::WEXITSTATUS(status)) } else { format!("signal {}", libc::WTERMSIG(status)) };
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let tail: Vec<&str> = text.lines().rev().take(8).collect::<Vec<_>>().into_iter().rev().collect();
    bail!("`{cmd}` in {} failed ({how}); last output:\n{}", dir.display(), tail.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_children_and_reports_failure() {
        let t = tempfile::tempdir().unwrap();
        let log = t.path().join("log");
        // Busy user time in a grandchild (the shell waits for it).
        let u = run("i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; echo $JOBS", t.path(), 3, &log).unwrap();
        assert!(u.wall > Duration::ZERO);
        assert!(u.user + u.sys > Duration::ZERO, "{u:?}");
        assert_eq!(std::fs::read_to_string(&log).unwrap().trim(), "3");
        let e = run("echo oops; exit 3", t.path(), 1, &log).unwrap_err().to_string();
        assert!(e.contains("exit status 3") && e.contains("oops"), "{e}");
    }
}
