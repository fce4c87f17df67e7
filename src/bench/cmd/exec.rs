//! Running one command as one timed run: in a process group of its own, its
//! stdin and stdout where the user asked, its stderr's tail kept, killed with
//! its group at a time limit, and whatever it leaves in its group killed after
//! it. The cost comes from the kernel's accounting: `wait4` returns the
//! rusage of the command and every descendant it waited for; wall time is
//! taken around the spawn and the wait.

use crate::sys::ChildUsage;
use anyhow::{Context, Result};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
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
    /// Processes still in its group when it ended, killed then.
    pub(crate) left: usize,
    /// The end of what it wrote to stderr (empty with `Output::Inherit`).
    pub(crate) stderr_tail: String,
}

impl Ran {
    /// Why this run failed, or `None` when it exited with 0.
    pub(crate) fn failure(&self) -> Option<String> {
        if self.timed_out {
            return Some("timed out: killed with its process group".to_string());
        }
        if self.usage.status.success() {
            return None;
        }
        let how = match (self.usage.status.code(), std::os::unix::process::ExitStatusExt::signal(&self.usage.status)) {
            (Some(127), _) => "exit status 127: command not found".to_string(),
            (Some(c), _) => format!("exit status {c}"),
            (None, Some(sig)) => format!("killed by signal {sig}"),
            _ => "an unknown status".to_string(),
        };
        let tail = self.stderr_tail.trim();
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
        Output::Null => Stdio::null(),
        Output::Pipe => Stdio::piped(),
        Output::Inherit => Stdio::inherit(),
        Output::File(f) => Stdio::from(std::fs::File::create(f).with_context(|| format!("creating {}", f.display()))?),
    };
    let stderr = if how.output == Output::Inherit { Stdio::inherit() } else { Stdio::piped() };
    c.stdin(stdin).stdout(stdout).stderr(stderr).process_group(0);
    crate::child::die_with_parent(&mut c);
    Ok(c)
}

/// Read `r` to its end on a thread, keeping only the last `keep` bytes.
fn drain(r: Option<impl Read + Send + 'static>, keep: usize) -> Option<std::thread::JoinHandle<Vec<u8>>> {
    let mut r = r?;
    Some(std::thread::spawn(move || {
        let (mut tail, mut buf) = (Vec::new(), [0u8; 8192]);
        while let Ok(n @ 1..) = r.read(&mut buf) {
            tail.extend_from_slice(&buf[..n]);
            if tail.len() > keep {
                tail.drain(..tail.len() - keep);
            }
        }
        tail
    }))
}

/// A thread that kills process group `pgid` when `limit` passes before
/// anything is sent on (or the dropping of) the returned channel; it
/// answers whether it killed.
fn watchdog(pgid: i32, limit: Option<Duration>) -> Option<(mpsc::Sender<()>, std::thread::JoinHandle<bool>)> {
    let limit = limit?;
    let (tx, rx) = mpsc::channel::<()>();
    let h = std::thread::spawn(move || {
        if rx.recv_timeout(limit) == Err(mpsc::RecvTimeoutError::Timeout) {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), nix::sys::signal::Signal::SIGKILL);
            return true;
        }
        false
    });
    Some((tx, h))
}

/// Run `text` once as `how` says and wait for it.
pub(crate) fn run(text: &str, how: &How) -> Result<Ran> {
    let mut c = command(text, how)?;
    let t0 = Instant::now();
    let mut child = c.spawn().with_context(|| format!("starting `{text}`"))?;
    let pid = child.id() as i32;
    let dog = watchdog(pid, how.timeout);
    let out = drain(child.stdout.take(), 0);
    let err = drain(child.stderr.take(), TAIL);
    let usage = crate::sys::wait4(pid).context("waiting for the command")?;
    let wall = t0.elapsed();
    let timed_out = match dog {
        Some((tx, h)) => {
            drop(tx);
            h.join().unwrap_or(false)
        }
        None => false,
    };
    // What it left running in its group (daemons, background jobs) goes now,
    // before the pipes are read to their end: they may hold them open.
    let left = crate::sys::task::group_members(pid).len();
    if left > 0 {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
    drop(child);
    if let Some(h) = out {
        let _ = h.join();
    }
    let tail = err.and_then(|h| h.join().ok()).unwrap_or_default();
    let stderr_tail = String::from_utf8_lossy(&tail).into_owned();
    Ok(Ran { wall, usage, timed_out, left, stderr_tail })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh() -> How {
        How { shell: Some("sh".into()), output: Output::Null, input: None, timeout: None }
    }

    #[test]
    fn a_run_is_timed_and_its_failure_quotes_stderr() {
        let r = run("i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done", &sh()).unwrap();
        assert!(r.failure().is_none() && r.wall > Duration::ZERO && r.usage.user_s + r.usage.sys_s > 0.0);
        let r = run("echo first >&2; echo oops >&2; exit 3", &sh()).unwrap();
        let f = r.failure().unwrap();
        assert!(f.contains("exit status 3") && f.contains("oops"), "{f}");
        let r = run("nonesuch-kdelta-cmd", &sh()).unwrap();
        assert!(r.failure().unwrap().contains("127"), "{:?}", r.failure());
    }

    #[test]
    fn a_hang_is_killed_and_leftovers_are_counted() {
        let how = How { timeout: Some(Duration::from_millis(200)), ..sh() };
        let r = run("sleep 30", &how).unwrap();
        assert!(r.timed_out && r.wall < Duration::from_secs(5), "{r:?}");
        let r = run("sleep 30 & sleep 30 & true", &sh()).unwrap();
        assert!(r.failure().is_none());
        assert_eq!(r.left, 2);
    }

    #[test]
    fn without_a_shell_the_words_are_exec_d() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("out");
        let how = How { shell: None, output: Output::File(f.clone()), ..sh() };
        run("printf '%s|' 'a b' c", &how).unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "a b|c|");
        let how = How { output: Output::Pipe, input: Some(f.clone()), ..sh() };
        assert!(run("cat; yes | head -c 5000000", &how).unwrap().failure().is_none());
    }
}
