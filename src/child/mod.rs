//! Child processes: made one way, stopped by one rule. Benchmarks, `place`
//! and the local servers fork or spawn through here; only the forks that are
//! themselves measured (`lat.proc.*`, aim9's process tests, `thread.create`'s
//! process model) call fork(2) directly, since there the call is the figure.
//!
//! - [`fork`] runs a closure in a child that dies with its parent and leaves
//!   with `_exit`; [`die_with_parent`] gives a `std::process::Command` the
//!   same parent-death signal, and [`spawn`] runs one as a [`Child`].
//! - A [`Child`] is waited for with or without a time limit, and stopped by
//!   **the stop rule**, the only way kdelta ends a child:
//!
//!   1. If the child has already been reaped, nothing is sent (its pid may
//!      belong to someone else by now).
//!   2. Send the stop signal (SIGTERM unless the owner chose another, see
//!      [`Child::stop_signal`]) to the child, or to its whole process group
//!      when it leads one ([`Child::leads_group`]).
//!   3. Wait up to the grace period ([`GRACE`], 5 s, unless the owner chose
//!      another) for it to end.
//!   4. If it has not, send SIGKILL (to the group likewise) and wait for it
//!      without a limit: SIGKILL cannot be caught or ignored.
//!
//!   The child is reaped on every path, so no zombie is left; [`stop_all`]
//!   applies the rule to many children at once (every signal first, then one
//!   grace period for all), and dropping a `Child` applies it too.
//! - A process that must outlive nothing it starts (the `cmd` family's
//!   worker) becomes a child subreaper ([`Subreaper`]): whatever its
//!   children leave behind, daemons that left their process group and
//!   session included, becomes its child when its parent ends, and
//!   [`Subreaper::end_orphans`] kills and reaps them. Only children are
//!   signalled, and a child's id cannot be reused before it is reaped.
//! - [`server::LocalServer`]: a loopback server for one benchmark run, in a
//!   forked child (or a thread when forking would be unsafe); [`server_limits`]:
//!   the limits every server keeps, their counts and a bounded log.
//!
//! Like stress-ng's `core-killpid.c` (one kill-and-wait for every stressor).

pub(crate) mod server;
pub(crate) mod server_limits;

pub(crate) use server::LocalServer;
pub(crate) use server_limits::{Guard as ServerGuard, Limits as ServerLimits, Tally};

use anyhow::{Context, Result};
use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::{Duration, Instant};

/// How long the stop rule waits after the stop signal before SIGKILL.
pub(crate) const GRACE: Duration = Duration::from_secs(5);
/// Exit status of a forked child whose parent was gone before it could set
/// the parent-death signal.
pub(crate) const ORPHANED: i32 = 125;
/// Exit status of a forked child whose closure panicked (Rust's own).
pub(crate) const PANICKED: i32 = 101;

/// fork(2) a child that dies with SIGKILL when its parent does
/// (prctl(2) `PR_SET_PDEATHSIG`; if the parent died before that was set,
/// the child sees another parent in getppid(2) and leaves with [`ORPHANED`]),
/// resets SIGTERM to its default action (ending the process; `body` may
/// install its own handler), runs `body`, and leaves with `_exit(2)` and the
/// status `body` returns
/// (or [`PANICKED`]). It never returns into the caller's code, so nothing of
/// the parent's (destructors, atexit handlers, buffered output, the test
/// harness) runs twice.
///
/// The parent-death signal fires when the *thread* that forked ends, not the
/// process: fork from a thread that outlives the child.
///
/// # Safety
///
/// fork(2) copies only the calling thread. If this process has other threads,
/// any lock they held (malloc's among them) stays held forever in the child,
/// so `body` must then call only async-signal-safe functions
/// (signal-safety(7)): no allocation, no locks, no stdio, no `println!`;
/// reading memory prepared before the fork and plain system calls are fine.
/// In a single-threaded process `body` may do anything.
pub(crate) unsafe fn fork(body: impl FnOnce() -> i32) -> Result<Child> {
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the caller upholds the contract above for the child's side;
    // the parent's side goes on as before.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error()).context("fork");
    }
    if pid == 0 {
        // SAFETY: prctl, getppid, signal and _exit are async-signal-safe and
        // have no memory preconditions.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0);
            if libc::getppid() != parent {
                libc::_exit(ORPHANED);
            }
            // A handler the parent installed (a stop flag) would outlive the
            // fork and make the stop rule's SIGTERM a no-op.
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
        }
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or(PANICKED);
        // SAFETY: leave the child here, whatever `body` did.
        unsafe { libc::_exit(code) }
    }
    Ok(Child::adopt(Pid::from_raw(pid)))
}

/// Give the child of `cmd` the parent-death signal SIGKILL (prctl(2)
/// `PR_SET_PDEATHSIG`), set between fork and exec; if the parent is already
/// gone by then, the spawn fails instead. As with [`fork`], the signal comes
/// when the thread that spawned ends.
pub(crate) fn die_with_parent(cmd: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the forked child before exec and calls only
    // prctl and getppid, which are async-signal-safe; it allocates nothing
    // (an io::Error from a raw errno does not allocate).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        })
    }
}

/// In a process spawned with [`die_with_parent`] and a pipe on its stdin
/// (a worker): wait for the parent's go-ahead, one byte on stdin, sent once
/// something else will end this process and all it starts should the
/// parent die (the worker's watchdog, which kills the whole tree, setsid
/// children included, while this process lives to hold them); then drop
/// the parent-death signal, which would end this process first and hand
/// its orphans to init, and put `/dev/null` on stdin. `Err` when the parent
/// died first (end of file, or another parent): the caller leaves.
pub(crate) fn await_watchdog() -> std::result::Result<(), NoGoAhead> {
    let parent = nix::unistd::getppid();
    let mut go = [0u8; 1];
    loop {
        match nix::unistd::read(0, &mut go) {
            Ok(1) => break,
            Ok(_) => return Err(NoGoAhead::EndedFirst),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(NoGoAhead::Read(e)),
        }
    }
    // SAFETY: prctl with integer arguments; no memory is passed.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, 0 as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(NoGoAhead::ParentDeathSignal(std::io::Error::last_os_error()));
    }
    if nix::unistd::getppid() != parent {
        return Err(NoGoAhead::Ended);
    }
    let null = std::fs::File::open("/dev/null").map_err(NoGoAhead::DevNull)?;
    nix::unistd::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), 0).map_err(NoGoAhead::Stdin)?;
    Ok(())
}

/// Why a worker did not get, or could not take, its go-ahead
/// ([`await_watchdog`]): it then leaves.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NoGoAhead {
    #[error("the harness ended before its watchdog started")]
    EndedFirst,
    #[error("reading the go-ahead on stdin: {0}")]
    Read(nix::errno::Errno),
    #[error("clearing the parent-death signal: {0}")]
    ParentDeathSignal(std::io::Error),
    #[error("the harness ended")]
    Ended,
    #[error("opening /dev/null: {0}")]
    DevNull(std::io::Error),
    #[error("stdin from /dev/null: {0}")]
    Stdin(nix::errno::Errno),
}

/// Spawn `cmd` with [`die_with_parent`] as a [`Child`] (std's own handle is
/// dropped: it neither waits nor kills).
pub(crate) fn spawn(cmd: &mut std::process::Command) -> std::io::Result<Child> {
    let c = die_with_parent(cmd).spawn()?;
    Ok(Child::adopt(Pid::from_raw(c.id() as i32)))
}

/// A child process of this one, reaped by whoever holds this (and by nobody
/// else). Dropping it applies the stop rule (see the module's doc).
#[derive(Debug)]
pub(crate) struct Child {
    pid: Pid,
    group: bool,
    signal: Signal,
    grace: Duration,
    status: Option<ExitStatus>,
}

/// How [`Child::stop`] ended a child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stopped {
    pub(crate) status: ExitStatus,
    /// It outlived the grace period and was killed with SIGKILL.
    pub(crate) killed: bool,
}

impl Child {
    /// Take charge of child `pid`, started some other way and not yet reaped.
    pub(crate) fn adopt(pid: Pid) -> Child {
        held_children().push(pid.as_raw());
        Child { pid, group: false, signal: Signal::SIGTERM, grace: GRACE, status: None }
    }

    /// The stop rule's first signal and grace period (SIGTERM and [`GRACE`]
    /// unless set). A child that holds nothing worth a clean end (a ring
    /// member, a spinning job) is stopped with SIGKILL at once.
    pub(crate) fn stop_signal(mut self, signal: Signal, grace: Duration) -> Child {
        self.signal = signal;
        self.grace = grace;
        self
    }

    pub(crate) fn pid(&self) -> Pid {
        self.pid
    }

    /// How it ended, once reaped.
    #[cfg(test)]
    pub(crate) fn status(&self) -> Option<ExitStatus> {
        self.status
    }

    /// waitpid(2) with `WNOHANG`: how it ended, or `None` while it runs.
    pub(crate) fn try_wait(&mut self) -> Result<Option<ExitStatus>> {
        self.reap(false)
    }

    /// waitpid(2): wait for it to end.
    pub(crate) fn wait(&mut self) -> Result<ExitStatus> {
        Ok(self.reap(true)?.expect("a blocking wait returns a status"))
    }

    /// Wait at most `limit` for it to end: how it ended, or `None` if it still runs.
    pub(crate) fn wait_timeout(&mut self, limit: Duration) -> Result<Option<ExitStatus>> {
        let deadline = Instant::now() + limit;
        let mut nap = Duration::from_micros(500);
        loop {
            if let Some(st) = self.try_wait()? {
                return Ok(Some(st));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            std::thread::sleep(nap.min(left));
            nap = (nap * 2).min(Duration::from_millis(20));
        }
    }

    /// Apply the stop rule (see the module's doc) and say how it ended.
    pub(crate) fn stop(&mut self) -> Result<Stopped> {
        stop_all(std::slice::from_mut(self)).pop().expect("one child, one answer")
    }

    fn reap(&mut self, block: bool) -> Result<Option<ExitStatus>> {
        if self.status.is_some() {
            return Ok(self.status);
        }
        let mut raw: libc::c_int = 0;
        loop {
            // SAFETY: `raw` is valid for writes; `pid` is our unreaped child.
            let r = unsafe { libc::waitpid(self.pid.as_raw(), &mut raw, if block { 0 } else { libc::WNOHANG }) };
            if r == self.pid.as_raw() {
                self.status = Some(ExitStatus::from_raw(raw));
                held_children().retain(|&p| p != r);
                return Ok(self.status);
            }
            if r == 0 {
                return Ok(None);
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e).with_context(|| format!("waiting for process {}", self.pid));
            }
        }
    }

    fn send(&self, sig: Signal) {
        // An error can only be ESRCH (a group whose members all ended; an
        // unreaped child still takes signals): then there is nothing to stop.
        let _ = if self.group { killpg(self.pid, sig) } else { kill(self.pid, sig) };
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// The stop rule (see the module's doc) for many children at once: the stop
/// signal to each, one grace period (the longest asked) for all, SIGKILL to
/// those left, and every one reaped. One answer per child, in order.
pub(crate) fn stop_all(children: &mut [Child]) -> Vec<Result<Stopped>> {
    let mut out: Vec<Option<Result<Stopped>>> = children.iter().map(|_| None).collect();
    for (c, o) in children.iter_mut().zip(out.iter_mut()) {
        match c.try_wait() {
            Ok(Some(status)) => *o = Some(Ok(Stopped { status, killed: false })),
            Ok(None) => c.send(c.signal),
            Err(e) => *o = Some(Err(e)),
        }
    }
    let grace = children.iter().map(|c| c.grace).max().unwrap_or(Duration::ZERO);
    let deadline = Instant::now() + grace;
    for (c, o) in children.iter_mut().zip(out.iter_mut()) {
        if o.is_some() {
            continue;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match c.wait_timeout(left) {
            Ok(Some(status)) => *o = Some(Ok(Stopped { status, killed: false })),
            Ok(None) => {}
            Err(e) => *o = Some(Err(e)),
        }
    }
    for (c, o) in children.iter_mut().zip(out.iter_mut()) {
        if o.is_none() {
            c.send(Signal::SIGKILL);
        }
    }
    for (c, o) in children.iter_mut().zip(out.iter_mut()) {
        if o.is_none() {
            *o = Some(c.wait().map(|status| Stopped { status, killed: true }));
        }
    }
    out.into_iter().map(|o| o.expect("every child answered")).collect()
}

/// The children a [`Child`] holds and has not reaped: [`Subreaper::end_orphans`]
/// leaves them alone (a profiler started before the measured command,
/// reaped by its own holder).
static HELD: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

fn held_children() -> std::sync::MutexGuard<'static, Vec<i32>> {
    HELD.lock().unwrap_or_else(|e| e.into_inner())
}

/// This process as a child subreaper (prctl(2) `PR_SET_CHILD_SUBREAPER`)
/// for as long as any such value lives: orphaned descendants become its
/// children instead of init's. Dropping the last one clears the attribute
/// (points taking turns in one worker each hold one, and one may end first).
#[derive(Debug)]
pub(crate) struct Subreaper(());

/// How many [`Subreaper`]s this process holds.
static SUBREAPERS: std::sync::Mutex<usize> = std::sync::Mutex::new(0);

/// Children started through [`Subreaper::spawn`] and not yet reaped by the
/// thread that started them: commands of points that run at the same moment
/// (a duet), which another point's [`Subreaper::end_orphans`] must leave be.
static IN_FLIGHT: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

fn in_flight() -> std::sync::MutexGuard<'static, Vec<i32>> {
    IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner())
}

/// Start `c` known as in flight until [`landed`]: in a process that is or
/// may become a subreaper (a `cmd` worker), no thread's
/// [`Subreaper::end_orphans`] takes it for something a command left, kills
/// it or reaps it. For a helper whose output is read through std's handle
/// (`perf script`); [`spawn`] is for the others.
pub(crate) fn spawn_in_flight(c: &mut std::process::Command) -> std::io::Result<std::process::Child> {
    // Held across the fork, so that no scan sees the child untracked.
    let mut flying = in_flight();
    let child = c.spawn()?;
    flying.push(child.id() as i32);
    Ok(child)
}

/// Child `pid` from [`spawn_in_flight`] has been reaped by its thread.
pub(crate) fn landed(pid: i32) {
    in_flight().retain(|&p| p != pid);
}

impl Subreaper {
    pub(crate) fn new() -> Result<Subreaper> {
        let mut held = SUBREAPERS.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: prctl with an integer argument; no memory is passed.
        if *held == 0 && unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) } != 0 {
            return Err(std::io::Error::last_os_error()).context("becoming a child subreaper");
        }
        *held += 1;
        Ok(Subreaper(()))
    }

    /// Start `c`, known as in flight until [`Subreaper::reaped`]: no other
    /// thread's [`Subreaper::end_orphans`] kills or reaps it meanwhile.
    pub(crate) fn spawn(&self, c: &mut std::process::Command) -> std::io::Result<std::process::Child> {
        spawn_in_flight(c)
    }

    /// Child `pid` from [`Subreaper::spawn`] has been reaped by its thread.
    pub(crate) fn reaped(&self, pid: i32) {
        landed(pid);
    }

    /// SIGKILL every child of this process that no [`Child`] holds and that
    /// is not in flight ([`Subreaper::spawn`]), and reap it, again until none
    /// is left (a dying child's own children become ours): how many there
    /// were. Call it when every child this process still means to keep has
    /// been reaped, is held by a [`Child`] or is in flight; waitid(2) first
    /// tells, in one system call, whether any child is left.
    pub(crate) fn end_orphans(&self) -> usize {
        // SAFETY: getpid has no preconditions.
        let me = unsafe { libc::getpid() };
        let mut ended = 0;
        loop {
            if !any_child() {
                return ended;
            }
            let held = held_children().clone();
            // Held while the orphans are told apart and killed, so that no
            // command another thread starts meanwhile is taken for one.
            let flying = in_flight();
            let orphans: Vec<i32> = crate::sys::task::children_of(me)
                .into_iter()
                .filter(|p| !held.contains(p) && !flying.contains(p))
                .collect();
            if orphans.is_empty() {
                return ended;
            }
            for &pid in &orphans {
                // Our unreaped child: the id is still its own.
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
            for pid in orphans {
                let mut raw = 0;
                // SAFETY: `raw` is valid for writes; `pid` is our child, killed.
                while unsafe { libc::waitpid(pid, &mut raw, 0) } < 0
                    && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
                {}
                ended += 1;
            }
        }
    }
}

/// Whether this process has any child, running or ended, without reaping
/// one (waitid(2) with `WNOWAIT`).
fn any_child() -> bool {
    // SAFETY: an all-zero siginfo_t is a valid value of this plain C struct.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `info` is valid for writes; the flags leave every child as it is.
        let r = unsafe { libc::waitid(libc::P_ALL, 0, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT) };
        if r == 0 {
            return true;
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return false; // ECHILD: none.
        }
    }
}

impl Drop for Subreaper {
    fn drop(&mut self) {
        let mut held = SUBREAPERS.lock().unwrap_or_else(|e| e.into_inner());
        *held -= 1;
        if *held == 0 {
            // SAFETY: as in `new`.
            unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 0 as libc::c_ulong, 0, 0, 0) };
        }
    }
}

/// SIGKILL process `pid` with everything it started, wherever that went
/// (its own process group or session: `setsid`): its live descendants
/// first, again until none is left, while `pid` lives to adopt the orphans
/// of those killed (it must be a child subreaper, as a worker is, or the
/// orphans go to init and out of reach), then its process group and itself.
/// How many descendants were killed.
pub(crate) fn kill_tree(pid: i32) -> usize {
    let mut killed = 0;
    // Bounded: a tree forking faster than it is killed is not chased forever.
    for _ in 0..200 {
        let left = crate::sys::task::descendants(pid);
        if left.is_empty() {
            break;
        }
        for p in left {
            killed += usize::from(kill(Pid::from_raw(p), Signal::SIGKILL).is_ok());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
    let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    killed
}

/// How a child ended, for messages: `exited with status 3`, `was killed by SIGKILL`.
pub(crate) fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(s)) => match Signal::try_from(s) {
            Ok(sig) => format!("was killed by {sig}"),
            Err(_) => format!("was killed by signal {s}"),
        },
        _ => format!("ended with wait status {:#x}", status.into_raw()),
    }
}

#[cfg(test)]
mod tests;
