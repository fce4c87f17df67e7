//! A server on loopback for one benchmark run (chat's, tbench's): the parent
//! binds `127.0.0.1:0`, so the address is known and the port taken before
//! anything runs, then the server runs on that listener in a forked child
//! (which dies with the parent, see [`super::fork`]) and is stopped by the
//! stop rule of [`super`]: SIGTERM, which sets the server's stop flag, then
//! SIGKILL after [`super::GRACE`].
//!
//! Forking is safe only while this process has a single thread. When the
//! caller already has threads (a test harness, a threaded client), or asks
//! for it ([`LocalServer::start_in_thread`]), the server runs in a thread of
//! this process instead, stopped by its flag and joined; [`LocalServer::in_process`]
//! says so, for the caller to note it.

use super::{describe, Child};
use anyhow::{bail, Context, Result};
use nix::unistd::Pid;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

enum Run {
    Process(Child),
    Thread { stop: Arc<AtomicBool>, handle: Option<JoinHandle<Result<()>>> },
}

/// A running local server.
pub(crate) struct LocalServer {
    /// Where it listens (always a loopback address).
    pub(crate) addr: SocketAddr,
    /// For messages: "chat server", "tbench server".
    name: &'static str,
    run: Run,
    /// How it ended, once known.
    ended: Option<String>,
}

/// What serves: given the bound listener and a stop flag, serve until the
/// flag is set, then return.
pub(crate) trait Serve: FnOnce(TcpListener, Arc<AtomicBool>) -> Result<()> + Send + 'static {}
impl<F: FnOnce(TcpListener, Arc<AtomicBool>) -> Result<()> + Send + 'static> Serve for F {}

fn bind(name: &str) -> Result<(TcpListener, SocketAddr)> {
    let l = TcpListener::bind("127.0.0.1:0").with_context(|| format!("binding the {name} to 127.0.0.1"))?;
    let addr = l.local_addr()?;
    Ok((l, addr))
}

impl LocalServer {
    /// Start `serve` on 127.0.0.1 on a free port: in a forked child when this
    /// process is single-threaded, else in a thread (see the module's doc).
    /// The child stops on SIGTERM or SIGINT (its stop flag), reports an error
    /// on stderr and exits 1, or exits 0.
    pub(crate) fn start(name: &'static str, serve: impl Serve) -> Result<LocalServer> {
        if crate::sys::task::own_thread_count() != 1 {
            return Self::start_in_thread(name, serve);
        }
        let (listener, addr) = bind(name)?;
        // SAFETY: this process is single-threaded (checked above), so the
        // child may do anything.
        let child = unsafe {
            super::fork(move || {
                let stop = Arc::new(AtomicBool::new(false));
                let r = (|| -> Result<()> {
                    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
                        signal_hook::flag::register(sig, stop.clone())?;
                    }
                    serve(listener, stop)
                })();
                match r {
                    Ok(()) => 0,
                    Err(e) => {
                        eprintln!("{name}: {e:#}");
                        1
                    }
                }
            })
        }
        .with_context(|| format!("starting the {name}"))?;
        // The parent's copy of the listener was moved into the closure and
        // dropped with it: only the child holds the socket now.
        Ok(LocalServer { addr, name, run: Run::Process(child), ended: None })
    }

    /// Start `serve` on 127.0.0.1 on a free port in a thread of this process.
    pub(crate) fn start_in_thread(name: &'static str, serve: impl Serve) -> Result<LocalServer> {
        let (listener, addr) = bind(name)?;
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let handle = std::thread::Builder::new()
            .name(name.split(' ').next().unwrap_or(name).to_string() + "-server")
            .spawn(move || serve(listener, s2))
            .with_context(|| format!("starting a thread for the {name}"))?;
        Ok(LocalServer { addr, name, run: Run::Thread { stop, handle: Some(handle) }, ended: None })
    }

    /// It runs in a thread of this process, not a child.
    pub(crate) fn in_process(&self) -> bool {
        matches!(self.run, Run::Thread { .. })
    }

    /// The child's pid when it runs apart.
    pub(crate) fn pid(&self) -> Option<Pid> {
        match &self.run {
            Run::Process(c) => Some(c.pid()),
            Run::Thread { .. } => None,
        }
    }

    /// Peak resident memory of the server process (KB), when it runs apart.
    pub(crate) fn peak_kb(&self) -> Option<u64> {
        self.pid().and_then(|p| crate::sys::task::peak_rss_kb(&p.to_string()))
    }

    /// `Some(how it ended)` if the server is no longer running.
    pub(crate) fn died(&mut self) -> Option<String> {
        if self.ended.is_some() {
            return self.ended.clone();
        }
        match &mut self.run {
            Run::Process(c) => {
                let p = c.pid();
                match c.try_wait() {
                    Ok(None) => None,
                    Ok(Some(st)) => {
                        self.ended = Some(format!("the server process {p} {}", describe(st)));
                        self.ended.clone()
                    }
                    Err(e) => Some(format!("the server process {p} cannot be waited for: {e:#}")),
                }
            }
            Run::Thread { handle, .. } => match handle {
                Some(h) if h.is_finished() => Some("the in-process server thread ended".into()),
                _ => None,
            },
        }
    }

    /// Stop the server by the stop rule (a thread: raise its flag and join
    /// it). An error if it had to be killed or did not end cleanly.
    pub(crate) fn stop(mut self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<()> {
        let name = self.name;
        match &mut self.run {
            Run::Process(c) => {
                if self.ended.is_some() {
                    return Ok(());
                }
                let s = c.stop();
                self.ended = Some(match &s {
                    Ok(s) => describe(s.status),
                    Err(e) => format!("{e:#}"),
                });
                let s = s.with_context(|| format!("stopping the {name}"))?;
                if s.killed {
                    bail!("the {name} did not stop within {} s of SIGTERM and was killed", super::GRACE.as_secs());
                }
                // Killed by the SIGTERM itself (before it set up its handler) is stopped as asked.
                if s.status.code() != Some(0)
                    && std::os::unix::process::ExitStatusExt::signal(&s.status) != Some(libc::SIGTERM)
                {
                    bail!("the {name} ended badly: it {}", describe(s.status));
                }
                Ok(())
            }
            Run::Thread { stop, handle } => {
                stop.store(true, Ordering::SeqCst);
                match handle.take().map(|h| h.join()) {
                    Some(Ok(r)) => r,
                    Some(Err(_)) => bail!("the {name} thread panicked"),
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::time::Duration;

    /// Echo one byte per connection until stopped.
    fn echo(l: TcpListener, stop: Arc<AtomicBool>) -> Result<()> {
        l.set_nonblocking(true)?;
        while !stop.load(Ordering::SeqCst) {
            match l.accept() {
                Ok((mut s, _)) => {
                    s.set_nonblocking(false)?;
                    let mut b = [0u8; 1];
                    s.read_exact(&mut b)?;
                    s.write_all(&b)?;
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        Ok(())
    }

    fn ask(addr: SocketAddr) {
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        c.write_all(b"k").unwrap();
        let mut b = [0u8; 1];
        c.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"k");
    }

    #[test]
    fn serves_on_loopback_and_stops() {
        // The test harness has threads, so `start` falls back to a thread.
        let s = LocalServer::start("test server", echo).unwrap();
        assert!(s.addr.ip().is_loopback() && s.addr.port() != 0);
        assert!(s.in_process() && s.pid().is_none());
        ask(s.addr);
        s.stop().unwrap();
    }

    #[test]
    fn a_forked_server_is_gone_after_drop() {
        // The server forks only from a single-threaded process, and this test
        // process has threads: run the check in a forked child, which has one.
        // That child allocates (glibc keeps malloc usable across fork) and
        // prints nothing, as the former tbench test did; its exit status
        // says which check failed.
        // SAFETY: see above; the child leaves with _exit.
        let mut c = unsafe {
            crate::child::fork(|| {
                let Ok(s) = LocalServer::start("test server", echo) else { return 2 };
                if s.in_process() || !s.addr.ip().is_loopback() {
                    return 3;
                }
                let Some(pid) = s.pid().map(|p| p.as_raw()) else { return 4 };
                ask(s.addr);
                if !crate::sys::task::exists(pid) {
                    return 5;
                }
                drop(s);
                if crate::sys::task::exists(pid) {
                    return 6;
                }
                // A stop() that finds it running stops it cleanly (SIGTERM, exit 0).
                let Ok(s) = LocalServer::start("test server", echo) else { return 7 };
                ask(s.addr);
                match s.stop() {
                    Ok(()) => 0,
                    Err(_) => 8,
                }
            })
        }
        .unwrap();
        let st = c.wait_timeout(Duration::from_secs(60)).unwrap().expect("the check ends");
        assert_eq!(st.code(), Some(0), "{}", crate::child::describe(st));
    }
}
