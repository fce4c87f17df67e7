//! Running a chat server: the model switch, `serve` for `kdelta serve chat`,
//! and [`LocalServer`], the benchmark's own server in a forked child process
//! (or, when the caller already has threads and forking would be unsafe, in a
//! thread of this process). The child dies with its parent, stops on
//! SIGTERM/SIGINT, and is always killed and reaped.

use super::{server_events, server_threads};
use anyhow::{bail, Context, Result};
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

crate::choice! {
    /// The server's concurrency model (`server_model`).
    pub enum ServerModel { Threads = "threads", Events = "events" }
}

/// Serve on a bound listener until `stop` is set.
pub fn serve_on(listener: TcpListener, model: ServerModel, stop: Arc<AtomicBool>) -> Result<()> {
    match model {
        ServerModel::Threads => server_threads::serve(listener, stop),
        ServerModel::Events => server_events::serve(listener, stop),
    }
}

/// Peak resident memory of a process in KB (VmHWM), if readable.
pub fn peak_kb(pid: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let l = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    l.split_whitespace().nth(1)?.parse().ok()
}

fn threads_of_self() -> usize {
    std::fs::read_dir("/proc/self/task").map(|d| d.count()).unwrap_or(usize::MAX)
}

enum Kind {
    Child(Pid),
    Thread { stop: Arc<AtomicBool>, handle: Option<std::thread::JoinHandle<Result<()>>> },
}

/// The benchmark's own server on loopback.
pub struct LocalServer {
    pub addr: SocketAddr,
    kind: Kind,
    /// How the child ended, once reaped.
    ended: Option<String>,
}

impl LocalServer {
    /// Start a server on 127.0.0.1 on a free port: in a forked child when
    /// this process is single-threaded (a worker), else in a thread.
    pub fn start(model: ServerModel) -> Result<LocalServer> {
        let listener = TcpListener::bind("127.0.0.1:0").context("binding the chat server to 127.0.0.1")?;
        let addr = listener.local_addr()?;
        if threads_of_self() != 1 {
            let stop = Arc::new(AtomicBool::new(false));
            let s2 = stop.clone();
            let handle = std::thread::Builder::new().name("chat-server".into()).spawn(move || serve_on(listener, model, s2))?;
            return Ok(LocalServer { addr, kind: Kind::Thread { stop, handle: Some(handle) }, ended: None });
        }
        let parent = nix::unistd::getpid();
        // SAFETY: this process is single-threaded (checked above), so the
        // child may do anything; it never returns from this block.
        match unsafe { nix::unistd::fork() }.context("fork for the chat server")? {
            nix::unistd::ForkResult::Child => {
                // SAFETY: prctl and getppid have no memory preconditions.
                unsafe {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    if libc::getppid() != parent.as_raw() {
                        libc::_exit(1);
                    }
                }
                let stop = Arc::new(AtomicBool::new(false));
                let code = (|| -> Result<()> {
                    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
                        signal_hook::flag::register(sig, stop.clone())?;
                    }
                    serve_on(listener, model, stop)
                })();
                if let Err(e) = &code {
                    eprintln!("chat server: {e:#}");
                }
                // SAFETY: _exit ends the child without running the parent's
                // destructors or atexit handlers twice.
                unsafe { libc::_exit(if code.is_ok() { 0 } else { 1 }) }
            }
            nix::unistd::ForkResult::Parent { child } => {
                drop(listener);
                Ok(LocalServer { addr, kind: Kind::Child(child), ended: None })
            }
        }
    }

    pub fn in_process(&self) -> bool {
        matches!(self.kind, Kind::Thread { .. })
    }

    pub fn pid(&self) -> Option<Pid> {
        match self.kind {
            Kind::Child(p) => Some(p),
            _ => None,
        }
    }

    /// `Some(how it ended)` if the server is no longer running.
    pub fn died(&mut self) -> Option<String> {
        if self.ended.is_some() {
            return self.ended.clone();
        }
        match &self.kind {
            Kind::Child(p) => match waitpid(*p, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => None,
                Ok(WaitStatus::Exited(_, c)) => {
                    self.ended = Some(format!("the server process {p} exited with status {c}"));
                    self.ended.clone()
                }
                Ok(WaitStatus::Signaled(_, s, _)) => {
                    self.ended = Some(format!("the server process {p} was killed by {s}"));
                    self.ended.clone()
                }
                Ok(_) => None,
                Err(e) => Some(format!("the server process {p} cannot be waited for: {e}")),
            },
            Kind::Thread { handle, .. } => match handle {
                Some(h) if h.is_finished() => Some("the in-process server thread ended".into()),
                _ => None,
            },
        }
    }

    /// Peak memory of the server process (KB), if it runs apart.
    pub fn peak_kb(&self) -> Option<u64> {
        self.pid().and_then(|p| peak_kb(&p.to_string()))
    }

    /// Stop the server and wait for it (SIGTERM, then SIGKILL after 5 s).
    pub fn stop(mut self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<()> {
        match &mut self.kind {
            Kind::Child(p) => {
                let p = *p;
                if self.ended.is_some() {
                    return Ok(());
                }
                let _ = kill(p, Signal::SIGTERM);
                let t = Instant::now();
                loop {
                    match waitpid(p, Some(WaitPidFlag::WNOHANG)) {
                        Ok(WaitStatus::StillAlive) if t.elapsed() < Duration::from_secs(5) => std::thread::sleep(Duration::from_millis(5)),
                        Ok(WaitStatus::StillAlive) => {
                            let _ = kill(p, Signal::SIGKILL);
                            let _ = waitpid(p, None);
                            self.ended = Some("killed".into());
                            bail!("the chat server did not stop within 5 s of SIGTERM and was killed");
                        }
                        Ok(WaitStatus::Exited(_, 0)) => {
                            self.ended = Some("stopped".into());
                            return Ok(());
                        }
                        Ok(st) => {
                            self.ended = Some(format!("{st:?}"));
                            bail!("the chat server ended badly: {st:?}");
                        }
                        Err(e) => {
                            self.ended = Some(format!("{e}"));
                            return Err(e).context("waiting for the chat server");
                        }
                    }
                }
            }
            Kind::Thread { stop, handle } => {
                stop.store(true, Ordering::SeqCst);
                match handle.take().map(|h| h.join()) {
                    Some(Ok(r)) => r,
                    Some(Err(_)) => bail!("the chat server thread panicked"),
                    None => Ok(()),
                }
            }
        }
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}
