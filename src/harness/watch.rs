//! Waiting on a worker without waking on the CPUs it measures.
//!
//! While a worker samples, kdelta's own processes sleep until something
//! happens: the parent blocks in poll(2) on a pipe its waiter thread closes
//! when the worker ends and on the run's signal pipe ([`watch_signals`]),
//! with the time limit as the timeout; the worker's watchdog blocks on a
//! pipe from the parent, which reads end-of-file when the parent is gone,
//! with the watchdog's limit as the timeout. Neither polls on a clock: a
//! timer that woke the harness every 100 ms and the watchdog every 150 ms
//! could land on the measured CPU (a configuration of one CPU leaves the
//! scheduler nowhere else to put it) and was a cost one configuration paid
//! and the other, free to use an idle CPU, did not.

use anyhow::{Context, Result};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, OnceLock};
use std::time::{Duration, Instant};

/// How long after its time limit the watchdog kills a worker the harness
/// has not (a harness stuck or stopped).
pub(crate) const WATCHDOG_GRACE: Duration = Duration::from_secs(10);

/// Without a signal pipe (a caller that did not call [`watch_signals`]):
/// how often the wait looks at the interrupt flag.
const FLAG_POLL: Duration = Duration::from_millis(100);

/// The read end of the pipe a byte is written to on SIGINT, SIGTERM or
/// SIGHUP (non-blocking, close-on-exec), once [`watch_signals`] made it;
/// `None` where it could not be made (the wait then looks at the flag
/// every [`FLAG_POLL`]).
static SIGNAL_PIPE: OnceLock<Option<OwnedFd>> = OnceLock::new();

/// Raise `flag` on SIGINT, SIGTERM and SIGHUP, and wake every wait on a
/// worker when one arrives.
pub(crate) fn watch_signals(flag: &std::sync::Arc<AtomicBool>) -> Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        signal_hook::flag::register(sig, flag.clone()).context("installing signal handlers")?;
    }
    SIGNAL_PIPE.get_or_init(|| {
        let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC | nix::fcntl::OFlag::O_NONBLOCK).ok()?;
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            signal_hook::low_level::pipe::register(sig, w.try_clone().ok()?).ok()?;
        }
        Some(r)
    });
    Ok(())
}

/// Why the harness killed a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Killed {
    Interrupted,
    Timeout,
}

/// What wait4(2) told of a worker: its status, CPU seconds and peak memory.
pub(crate) type Waited = (std::process::ExitStatus, f64, u64);

/// Wait for the worker `pid`, killing its tree once if `interrupted` is
/// raised or `timeout` passes: what wait4 said, and whether (and why) it
/// was killed. Sleeps until one of those happens.
pub(crate) fn wait(pid: libc::pid_t, timeout: Duration, interrupted: &AtomicBool) -> (Result<Waited>, Option<Killed>) {
    let (tx, rx) = mpsc::channel();
    let (done_r, done_w) = match nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC) {
        Ok(p) => p,
        Err(e) => return (Err(anyhow::Error::from(e).context("a pipe to wait on the worker")), None),
    };
    std::thread::spawn(move || {
        let _ = tx.send(crate::sys::wait4(pid).map(|u| (u.status, u.user_s + u.sys_s, u.max_rss)));
        drop(done_w);
    });
    let start = Instant::now();
    let mut killed: Option<Killed> = None;
    let signals = SIGNAL_PIPE.get().and_then(Option::as_ref);
    loop {
        let limit = if killed.is_some() { None } else { Some(timeout.saturating_sub(start.elapsed())) };
        let limit = if signals.is_none() && killed.is_none() { limit.map(|l| l.min(FLAG_POLL)) } else { limit };
        let (done, signalled) =
            sleep_on(done_r.as_fd(), signals.filter(|_| killed.is_none()).map(|s| s.as_fd()), limit);
        if done {
            break;
        }
        if signalled && !interrupted.load(Ordering::SeqCst) {
            // Another run's signal, or one this caller does not watch for.
            drain(signals);
        }
        if killed.is_none() && interrupted.load(Ordering::SeqCst) {
            crate::child::kill_tree(pid);
            killed = Some(Killed::Interrupted);
        } else if killed.is_none() && start.elapsed() > timeout {
            crate::child::kill_tree(pid);
            killed = Some(Killed::Timeout);
        }
    }
    let waited = rx.recv().unwrap_or_else(|_| Err(anyhow::anyhow!("lost the worker's waiter thread")));
    (waited, killed)
}

/// Block until `done` is readable or closed (true in the first place),
/// `signals` is readable (true in the second), or `limit` passes (`None`:
/// no limit).
fn sleep_on(done: BorrowedFd, signals: Option<BorrowedFd>, limit: Option<Duration>) -> (bool, bool) {
    let mut fds = vec![PollFd::new(done, PollFlags::POLLIN)];
    fds.extend(signals.map(|s| PollFd::new(s, PollFlags::POLLIN)));
    let ms = limit.map_or(PollTimeout::NONE, |l| {
        PollTimeout::try_from(l.as_millis().saturating_add(1).min(i32::MAX as u128) as i32).unwrap_or(PollTimeout::MAX)
    });
    match poll(&mut fds, ms) {
        Ok(_) => {
            let ready = |f: &PollFd| f.revents().is_some_and(|r| !r.is_empty());
            (ready(&fds[0]), fds.get(1).is_some_and(ready))
        }
        // EINTR (a signal handler ran): look at the flag again.
        Err(_) => (false, false),
    }
}

/// Empty the signal pipe (non-blocking).
fn drain(signals: Option<&OwnedFd>) {
    if let Some(s) = signals {
        let mut buf = [0u8; 64];
        while matches!(nix::unistd::read(std::os::fd::AsRawFd::as_raw_fd(s), &mut buf), Ok(n) if n > 0) {}
    }
}

/// A helper process that must act when the harness is gone (a worker's
/// watchdog, the journals' guard), and the pipe on its stdin whose end of
/// file tells it so ([`sleep_until_parent_gone`]). Dropping it stops the
/// helper (SIGKILL), then closes the pipe.
pub(crate) struct Sentinel {
    _child: crate::child::Child,
    _alive: std::process::ChildStdin,
}

/// Start `cmd` as a [`Sentinel`]: in a process group of its own (a
/// terminal's Ctrl-C is the harness's to handle), without a parent-death
/// signal, its stdin a pipe whose other end only the harness holds
/// (close-on-exec), its stdout and stderr discarded.
pub(crate) fn spawn_sentinel(mut cmd: Command, what: &str) -> Result<Sentinel> {
    let mut c = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .with_context(|| format!("starting {what}"))?;
    let alive = c.stdin.take().with_context(|| format!("the stdin of {what}"))?;
    let child = crate::child::Child::adopt(nix::unistd::Pid::from_raw(c.id() as i32))
        .stop_signal(nix::sys::signal::Signal::SIGKILL, Duration::ZERO);
    Ok(Sentinel { _child: child, _alive: alive })
}

/// In a [`Sentinel`]: sleep until the harness `parent` is gone (end of file
/// on stdin, or another parent) or `limit` has passed; true when it is gone.
pub(crate) fn sleep_until_parent_gone(parent: i32, limit: Option<Duration>) -> bool {
    let start = Instant::now();
    // SAFETY: fd 0 is this process's stdin, open for its whole life.
    let stdin = unsafe { BorrowedFd::borrow_raw(0) };
    loop {
        if nix::unistd::getppid().as_raw() != parent {
            return true;
        }
        let left = limit.map(|l| l.saturating_sub(start.elapsed()));
        if left.is_some_and(|l| l.is_zero()) {
            return false;
        }
        if let (true, _) = sleep_on(stdin, None, left) {
            let mut b = [0u8; 1];
            // End of file or an error: the harness is gone. A byte (none is
            // ever sent) is not.
            if !matches!(nix::unistd::read(0, &mut b), Ok(1)) {
                return true;
            }
        }
    }
}

/// Start the watchdog of worker `pid` (which leads its process group):
/// `kdelta __watchdog`, a child of the harness (not of the worker, whose
/// benchmarks may count or wait for their children), a [`Sentinel`] that
/// outlives the harness just long enough to do its work ([`watchdog_main`]).
pub(crate) fn watchdog(pid: libc::pid_t, limit: Duration) -> Result<Sentinel> {
    let exe = std::env::current_exe().context("finding kdelta's own executable")?;
    let mut c = Command::new(exe);
    c.arg("__watchdog")
        .arg(pid.to_string())
        .arg(std::process::id().to_string())
        .arg(limit.as_millis().min(u64::MAX as u128).to_string());
    spawn_sentinel(c, "the worker's watchdog")
}

/// `kdelta __watchdog WORKER PARENT LIMIT_MS`: sleeps until the harness
/// `parent` is gone (kill -9 of kdelta, or a measured command that killed
/// it) or `limit` has passed, then SIGKILLs the worker's whole tree
/// (`child::kill_tree`: its descendants, `setsid` ones included, which the
/// worker, a child subreaper that no parent-death signal ends, holds until
/// then; then its group and itself). The harness stops it (SIGKILL) once
/// the worker is gone.
pub(crate) fn watchdog_main(worker: i32, parent: i32, limit: Duration) -> u8 {
    sleep_until_parent_gone(parent, Some(limit));
    crate::child::kill_tree(worker);
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sleep SECS` in a group of its own, waited on with `limit` and `flag`.
    fn wait_on_sleep(secs: &str, limit: Duration, flag: bool) -> (Result<Waited>, Option<Killed>, Duration) {
        let mut c = Command::new("sleep").arg(secs).process_group(0).spawn().unwrap();
        let t = Instant::now();
        let (waited, killed) = wait(c.id() as libc::pid_t, limit, &AtomicBool::new(flag));
        let _ = c.try_wait();
        (waited, killed, t.elapsed())
    }

    #[test]
    fn a_wait_sleeps_until_the_worker_ends() {
        let (waited, killed, took) = wait_on_sleep("0.3", Duration::from_secs(30), false);
        assert!(waited.unwrap().0.success());
        assert_eq!(killed, None);
        assert!(took >= Duration::from_millis(250));
    }

    #[test]
    fn a_wait_kills_at_the_limit() {
        let (waited, killed, _) = wait_on_sleep("30", Duration::from_millis(200), false);
        assert_eq!(killed, Some(Killed::Timeout));
        assert!(!waited.unwrap().0.success());
    }

    #[test]
    fn a_raised_flag_kills() {
        let (waited, killed, _) = wait_on_sleep("30", Duration::from_secs(30), true);
        assert_eq!(killed, Some(Killed::Interrupted));
        assert!(!waited.unwrap().0.success());
    }
}
