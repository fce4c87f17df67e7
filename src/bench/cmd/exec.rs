//! Running one command as one timed run. It starts as hyperfine starts one
//! (fork and exec, in the worker's process group), its stdin and stdout where
//! the user asked and its stderr's tail kept. The cost comes from the
//! kernel's accounting: `wait4` returns the rusage of the command and every
//! descendant it waited for; wall time is taken around the spawn and the wait.
//!
//! Nothing of kdelta's own runs in the timed window but the spawn and one
//! `poll` loop: the pipes exist before the clock starts, and the loop both
//! drains them (stderr always, stdout with `Output::Pipe`) and waits for the
//! command's end on a pidfd, with the time limit as its timeout. The worker
//! is a child subreaper ([`crate::child::Subreaper`]) while it runs
//! commands, so whatever a run leaves behind, even a daemon in a session of
//! its own, becomes the worker's child when its parent ends and is killed
//! and counted after the run; at the time limit the command and all it
//! started are killed the same way.

use crate::child::Subreaper;
use crate::sys::ChildUsage;
use anyhow::{Context, Result};
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::{PollFd, PollFlags, PollTimeout};
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Bytes of a command's stderr kept to quote when it fails.
const TAIL: usize = 2048;

/// Where a command's stdout (and stderr, with `Inherit`) goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Output {
    /// `/dev/null` (hyperfine's default).
    Null,
    /// A pipe kdelta reads and throws away, so a command that writes
    /// differently to a pipe is measured as such; costs no memory.
    Pipe,
    /// kdelta's own stdout and stderr.
    Inherit,
    /// A file, truncated before every run.
    File(PathBuf),
}

impl Output {
    pub(crate) fn parse(v: &str) -> Output {
        match v {
            "null" => Output::Null,
            "pipe" => Output::Pipe,
            "inherit" => Output::Inherit,
            f => Output::File(PathBuf::from(f)),
        }
    }
}

/// How every run of a command is made.
#[derive(Debug, Clone)]
pub(crate) struct How {
    /// The shell run as `SHELL -c COMMAND`; `None`: the words exec'd directly.
    pub(crate) shell: Option<String>,
    pub(crate) output: Output,
    /// stdin: a file, or `/dev/null`.
    pub(crate) input: Option<PathBuf>,
    /// Killed with its group past this.
    pub(crate) timeout: Option<Duration>,
}

/// One finished run.
#[derive(Debug)]
pub(crate) struct Ran {
    pub(crate) wall: Duration,
    pub(crate) usage: ChildUsage,
    /// Killed at the time limit.
    pub(crate) timed_out: bool,
    /// The time limit it ran under.
    pub(crate) limit: Option<Duration>,
    /// Processes still in its group when it ended, killed then.
    pub(crate) left: usize,
    /// The end of what it wrote to stderr (empty with `Output::Inherit`).
    pub(crate) stderr_tail: String,
    /// The OOM killer of the worker's memory cgroup killed a task during
    /// the run (its `oom_kill` count went up): a SIGKILL was most likely it.
    pub(crate) oom_killed: bool,
}

impl Ran {
    /// Why this run failed, or `None` when it exited with 0.
    pub(crate) fn failure(&self) -> Option<String> {
        if self.timed_out {
            let limit = self.limit.map(|l| format!(" after {l:.1?}")).unwrap_or_default();
            return Some(format!("timed out{limit}: killed with its process group and all it started"));
        }
        if self.usage.status.success() {
            return None;
        }
        let how = match (self.usage.status.code(), std::os::unix::process::ExitStatusExt::signal(&self.usage.status)) {
            (Some(127), _) => "exit status 127: command not found".to_string(),
            // The shell's own child killed by SIGKILL (128 + 9).
            (Some(137), _) if self.oom_killed => {
                "exit status 137: killed by the kernel's OOM killer, at the memory limit of its cgroup".to_string()
            }
            (Some(c), _) => format!("exit status {c}"),
            (None, Some(sig)) if sig == libc::SIGKILL && self.oom_killed => {
                format!("killed by signal {sig}: the kernel's OOM killer, at the memory limit of its cgroup")
            }
            (None, Some(sig)) => format!("killed by signal {sig}"),
            _ => "an unknown status".to_string(),
        };
        // One line, every control character shown, not obeyed: what a
        // command printed (escape sequences, OSC, NULs) reaches no terminal,
        // CSV or Markdown raw.
        let lines: Vec<&str> = self.stderr_tail.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        let tail = crate::model::text::printable(&lines.join("; ")).into_owned();
        Some(if tail.is_empty() { how } else { format!("{how}; stderr ends: {tail}") })
    }
}

fn command(text: &str, how: &How) -> Result<Command> {
    let mut c = match &how.shell {
        Some(sh) => {
            let mut c = Command::new(sh);
            c.arg("-c").arg(text);
            c
        }
        None => {
            let words = super::spec::split_words(text)?;
            let (prog, args) = words.split_first().context("empty command")?;
            let mut c = Command::new(prog);
            c.args(args);
            c
        }
    };
    let stdin = match &how.input {
        Some(f) => Stdio::from(std::fs::File::open(f).with_context(|| format!("opening {}", f.display()))?),
        None => Stdio::null(),
    };
    let stdout = match &how.output {
        Output::Null | Output::Pipe => Stdio::null(),
        Output::Inherit => Stdio::inherit(),
        Output::File(f) => Stdio::from(std::fs::File::create(f).with_context(|| format!("creating {}", f.display()))?),
    };
    let stderr = if how.output == Output::Inherit { Stdio::inherit() } else { Stdio::null() };
    // No pre-exec step (not even a parent-death signal): std then starts
    // the command with posix_spawn, a vfork that copies nothing of the
    // worker, as hyperfine does; a fork costs a copy of the worker's page
    // tables and copy-on-write faults after it, half a millisecond here.
    // The command is in the worker's process group, which the harness (or
    // its watchdog, when kdelta itself is killed) kills with the worker.
    c.stdin(stdin).stdout(stdout).stderr(stderr);
    Ok(c)
}

/// The read end of a pipe from the command, drained as it fills; only the
/// last `keep` bytes are kept, so endless output costs no memory.
struct Tap {
    fd: OwnedFd,
    keep: usize,
    tail: Vec<u8>,
    open: bool,
}

impl Tap {
    /// A pipe: the tap and the write end to give the command.
    fn new(keep: usize) -> Result<(Tap, OwnedFd)> {
        let (r, w) = nix::unistd::pipe2(OFlag::O_CLOEXEC).context("making a pipe for the command")?;
        // Only our end must not block: the command's writes wait as usual.
        fcntl(std::os::fd::AsRawFd::as_raw_fd(&r), FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
        Ok((Tap { fd: r, keep, tail: Vec::new(), open: true }, w))
    }

    /// Read what is there (a bounded amount, so a flood cannot hold the
    /// loop past a time limit); at end of file the tap closes.
    fn read(&mut self) {
        let mut buf = [0u8; 16384];
        for _ in 0..16 {
            match nix::unistd::read(std::os::fd::AsRawFd::as_raw_fd(&self.fd), &mut buf) {
                Ok(0) => {
                    self.open = false;
                    return;
                }
                Ok(n) => {
                    self.tail.extend_from_slice(&buf[..n]);
                    if self.tail.len() > self.keep {
                        self.tail.drain(..self.tail.len() - self.keep);
                    }
                }
                Err(nix::errno::Errno::EINTR) => {}
                Err(_) => return, // EAGAIN: drained for now.
            }
        }
    }
}

/// Drain `taps` until process `pid` has ended (true) or `deadline` passed
/// (false). The process is not reaped. Without pidfds (before Linux 5.3),
/// its end is looked for every millisecond.
fn wait_draining(pid: i32, taps: &mut [Tap], deadline: Option<Instant>) -> Result<bool> {
    let pidfd = crate::sys::pidfd_open(pid).ok();
    loop {
        let mut fds: Vec<PollFd> = pidfd.iter().map(|p| PollFd::new(p.as_fd(), PollFlags::POLLIN)).collect();
        let watched: Vec<usize> = (0..taps.len()).filter(|&i| taps[i].open).collect();
        fds.extend(watched.iter().map(|&i| PollFd::new(taps[i].fd.as_fd(), PollFlags::POLLIN)));
        let mut wait_ms = deadline.map_or(-1, |d| d.saturating_duration_since(Instant::now()).as_millis() as i64 + 1);
        if pidfd.is_none() {
            wait_ms = if wait_ms < 0 { 1 } else { wait_ms.min(1) };
        }
        let timeout = PollTimeout::try_from(wait_ms.min(i32::MAX as i64) as i32).unwrap_or(PollTimeout::MAX);
        match nix::poll::poll(&mut fds, timeout) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(e) => return Err(e).context("waiting for the command"),
        }
        let ready = |f: &PollFd| f.revents().is_some_and(|r| !r.is_empty());
        let ended = match pidfd {
            Some(_) => ready(&fds[0]),
            None => has_ended(pid),
        };
        let first_tap = usize::from(pidfd.is_some());
        let readable: Vec<bool> = fds[first_tap..].iter().map(ready).collect();
        drop(fds);
        for (&i, r) in watched.iter().zip(readable) {
            if r {
                taps[i].read();
            }
        }
        if ended {
            return Ok(true);
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(false);
        }
    }
}

/// waitid(2) with `WNOWAIT`: whether child `pid` has ended, leaving it unreaped.
fn has_ended(pid: i32) -> bool {
    // SAFETY: an all-zero siginfo_t is a valid value of this plain C struct.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is valid for writes; the flags leave the child as it is.
    let r = unsafe {
        libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT)
    };
    // SAFETY: waitid filled `info` (or left it zeroed: si_pid 0, not ended).
    r == 0 && unsafe { info.si_pid() } != 0
}

/// Run `text` once as `how` says and wait for it. `reaper` is this process
/// as a subreaper: what the command leaves behind is killed through it.
pub(crate) fn run(text: &str, how: &How, reaper: &Subreaper) -> Result<Ran> {
    let mut c = command(text, how)?;
    let mut taps = Vec::new();
    if how.output != Output::Inherit {
        let (tap, w) = Tap::new(TAIL)?;
        c.stderr(Stdio::from(w));
        taps.push(tap);
    }
    if how.output == Output::Pipe {
        let (tap, w) = Tap::new(0)?;
        c.stdout(Stdio::from(w));
        taps.push(tap);
    }
    let oom_before = crate::sys::cgroup::own_oom_kills();
    let t0 = Instant::now();
    let child = reaper.spawn(&mut c).with_context(|| format!("starting `{text}`"))?;
    // The command's copies of the write ends go with it: the pipes end
    // when the command and what it started have closed theirs.
    drop(c);
    let pid = child.id() as i32;
    let ended = match wait_draining(pid, &mut taps, how.timeout.map(|l| t0 + l)) {
        Ok(ended) => ended,
        Err(e) => {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
            let _ = crate::sys::wait4(pid);
            reaper.reaped(pid);
            return Err(e);
        }
    };
    let (usage, wall) = if ended {
        // Its run-queue wait, read while it is a zombie, for the sample's
        // disturbance rule (`measure/disturb.rs`): the kernel adds it to
        // no other task's.
        crate::sys::task::note_ended_child(pid);
        let u = crate::sys::wait4(pid);
        reaper.reaped(pid);
        (u.context("waiting for the command")?, t0.elapsed())
    } else {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        let u = crate::sys::wait4(pid);
        reaper.reaped(pid);
        (u.context("waiting for the killed command")?, t0.elapsed())
    };
    // What it left running (daemons, background jobs) goes now, before the
    // pipes are read to their end: they may hold them open.
    let left = reaper.end_orphans();
    for t in taps.iter_mut() {
        while t.open {
            t.read();
            if t.open && !matches!(poll_one(&t.fd), Ok(true)) {
                break;
            }
        }
    }
    let tail = taps.first().filter(|_| how.output != Output::Inherit).map(|t| t.tail.clone()).unwrap_or_default();
    let stderr_tail = String::from_utf8_lossy(&tail).into_owned();
    let oom_killed = matches!((oom_before, crate::sys::cgroup::own_oom_kills()), (Some(a), Some(b)) if b > a);
    Ok(Ran { wall, usage, timed_out: !ended, limit: how.timeout, left, stderr_tail, oom_killed })
}

/// Run `text` once, untimed, in this process's working directory and
/// environment, with the shell `how` names, stdin from `/dev/null` and
/// stdout to `/dev/null` (kdelta's own with `Output::Inherit`), and wait
/// for it: `--setup-once` and `--cleanup-once`, in the parent. What it
/// leaves running (a server a set-up starts) is left running. `Ok(None)`
/// when it exits 0, else why it failed, quoting the end of its stderr.
pub(crate) fn run_untimed(text: &str, how: &How) -> Result<Option<String>> {
    let output = if how.output == Output::Inherit { Output::Inherit } else { Output::Null };
    let how = How { output, input: None, timeout: None, shell: how.shell.clone() };
    let mut c = command(text, &how)?;
    if how.output != Output::Inherit {
        c.stderr(Stdio::piped());
    }
    let out = c.output().with_context(|| format!("starting `{text}`"))?;
    if out.status.success() {
        return Ok(None);
    }
    let how = match (out.status.code(), std::os::unix::process::ExitStatusExt::signal(&out.status)) {
        (Some(127), _) => "exit status 127: command not found".to_string(),
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => "an unknown status".to_string(),
    };
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(3)..].join("; ");
    let tail = crate::model::text::printable(&tail).into_owned();
    Ok(Some(if tail.is_empty() { how } else { format!("{how}; stderr ends: {tail}") }))
}

/// Whether `fd` has something to read (or its end) right now.
fn poll_one(fd: &OwnedFd) -> nix::Result<bool> {
    let mut f = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
    Ok(nix::poll::poll(&mut f, PollTimeout::ZERO)? > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reaper() -> Subreaper {
        Subreaper::new().unwrap()
    }

    /// Run test `name` (this module's) alone in a process of its own: a
    /// subreaper ends every child of its process, and other tests' children
    /// in this one are not its to end. Returns whether the caller is that
    /// process (and should run the test's body).
    fn alone(name: &str) -> bool {
        const ENV: &str = "KDELTA_EXEC_TEST";
        if std::env::var(ENV).as_deref() == Ok(name) {
            return true;
        }
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new(exe)
            .args([&format!("bench::cmd::exec::tests::{name}"), "--exact", "--test-threads=1"])
            .env(ENV, name)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && text.contains("1 passed"), "{text}{}", String::from_utf8_lossy(&out.stderr));
        false
    }

    fn sh() -> How {
        How { shell: Some("sh".into()), output: Output::Null, input: None, timeout: None }
    }

    #[test]
    fn a_run_is_timed_and_its_failure_quotes_stderr() {
        if !alone("a_run_is_timed_and_its_failure_quotes_stderr") {
            return;
        }
        let r = run("i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done", &sh(), &reaper()).unwrap();
        assert!(r.failure().is_none() && r.wall > Duration::ZERO && r.usage.user_s + r.usage.sys_s > 0.0);
        let r = run("echo first >&2; echo oops >&2; exit 3", &sh(), &reaper()).unwrap();
        let f = r.failure().unwrap();
        assert!(f.contains("exit status 3") && f.contains("oops"), "{f}");
        let r = run("printf 'a\\033]0;pwned\\007\\033[2J\\000b\\rc\\nd\\n' >&2; exit 1", &sh(), &reaper()).unwrap();
        let f = r.failure().unwrap();
        assert!(f.ends_with("stderr ends: a\\x1b]0;pwned\\x07\\x1b[2J\\x00b\\x0dc; d"), "{f}");
        assert!(!f.chars().any(|c| c.is_control()), "{f:?}");
        // A SIGKILL while its cgroup's OOM killer struck is named so.
        let mut r = run("kill -9 $$", &sh(), &reaper()).unwrap();
        assert_eq!(r.failure().unwrap(), "killed by signal 9");
        r.oom_killed = true;
        assert!(r.failure().unwrap().contains("the kernel's OOM killer"), "{:?}", r.failure());
        let mut r = run("sh -c 'kill -9 $$'", &sh(), &reaper()).unwrap();
        assert!(r.failure().unwrap().starts_with("exit status 137"), "{:?}", r.failure());
        r.oom_killed = true;
        assert!(r.failure().unwrap().contains("the kernel's OOM killer"), "{:?}", r.failure());
        let r = run("nonesuch-kdelta-cmd", &sh(), &reaper()).unwrap();
        assert!(r.failure().unwrap().contains("127"), "{:?}", r.failure());
    }

    #[test]
    fn a_hang_is_killed_and_leftovers_are_counted() {
        if !alone("a_hang_is_killed_and_leftovers_are_counted") {
            return;
        }
        let how = How { timeout: Some(Duration::from_millis(200)), ..sh() };
        let r = run("sleep 30", &how, &reaper()).unwrap();
        assert!(r.timed_out && r.wall < Duration::from_secs(5), "{r:?}");
        let r = run("sleep 30 & sleep 30 & true", &sh(), &reaper()).unwrap();
        assert!(r.failure().is_none());
        assert_eq!(r.left, 2);
    }

    #[test]
    fn runs_at_the_same_moment_leave_each_other_running() {
        if !alone("runs_at_the_same_moment_leave_each_other_running") {
            return;
        }
        // A duet: one thread's command ends (and its leftovers go) while the
        // other's still runs; the other's must end on its own, uncounted.
        let reaper = reaper();
        let (slow, quick) = std::thread::scope(|sc| {
            let slow = sc.spawn(|| run("sleep 0.4; exit 7", &sh(), &reaper).unwrap());
            std::thread::sleep(Duration::from_millis(100));
            let quick = sc.spawn(|| run("sleep 30 & true", &sh(), &reaper).unwrap());
            (slow.join().unwrap(), quick.join().unwrap())
        });
        assert_eq!(quick.left, 1, "{quick:?}");
        assert!(slow.failure().unwrap().contains("exit status 7"), "{slow:?}");
        assert!(slow.wall >= Duration::from_millis(400) && slow.left == 0, "{slow:?}");
    }

    #[test]
    fn without_a_shell_the_words_are_exec_d() {
        if !alone("without_a_shell_the_words_are_exec_d") {
            return;
        }
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("out");
        let how = How { shell: None, output: Output::File(f.clone()), ..sh() };
        run("printf '%s|' 'a b' c", &how, &reaper()).unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "a b|c|");
        let how = How { output: Output::Pipe, input: Some(f.clone()), ..sh() };
        assert!(run("cat; yes | head -c 5000000", &how, &reaper()).unwrap().failure().is_none());
    }
}
