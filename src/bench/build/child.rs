//! Running one shell command and taking its cost from the kernel's accounting:
//! `wait4` returns the rusage of the finished child together with all of its
//! descendants it waited for (make, the compilers, the assembler, the linker),
//! which is what `/usr/bin/time` reports; wall time is measured around it.

use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What one finished command cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Usage {
    pub(crate) wall: Duration,
    pub(crate) user: Duration,
    pub(crate) sys: Duration,
}

/// Run `sh -c cmd` in `dir` with `JOBS=jobs` in its environment, output to
/// `log`, and wait for it with `wait4`. A non-zero exit is an error quoting
/// the end of the log.
pub(crate) fn run(cmd: &str, dir: &Path, jobs: u32, log: &Path) -> Result<Usage> {
    let out = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let err = out.try_clone()?;
    let mut c = Command::new("sh");
    c.arg("-c").arg(cmd).current_dir(dir).env("JOBS", jobs.to_string()).stdin(Stdio::null()).stdout(out).stderr(err);
    // The build stays in the worker's process group, so the harness's kill of
    // that group at a time limit or Ctrl-C ends make and every compiler too;
    // if the worker dies (killed at its time limit), the shell gets SIGKILL
    // instead of running on unattended. wait4 (not `crate::child::Child`)
    // reaps it, for the rusage.
    crate::child::die_with_parent(&mut c);
    let t0 = Instant::now();
    let child = c.spawn().with_context(|| format!("starting `sh -c {cmd}` in {}", dir.display()))?;
    let pid = child.id() as libc::pid_t;
    let u = crate::sys::wait4(pid).context("waiting for the build")?;
    let wall = t0.elapsed();
    drop(child);
    let usage = Usage { wall, user: Duration::from_secs_f64(u.user_s), sys: Duration::from_secs_f64(u.sys_s) };
    if u.status.success() {
        return Ok(usage);
    }
    let how = match (u.status.code(), std::os::unix::process::ExitStatusExt::signal(&u.status)) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("signal {sig}"),
        _ => "an unknown status".to_string(),
    };
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
