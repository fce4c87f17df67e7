//! Running a chat server: the model switch, `serve` for `kdelta serve chat`,
//! and [`LocalServer`], the benchmark's own server in a forked child process
//! (or, when the caller already has threads and forking would be unsafe, in a
//! thread of this process), through [`crate::child::LocalServer`]: the child
//! dies with its parent, stops on SIGTERM/SIGINT, and is always reaped.

use super::{server_events, server_threads};
use crate::child::{ServerGuard, ServerLimits};
use anyhow::Result;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

crate::model::params::choice! {
    /// The server's concurrency model (`server_model`).
    pub(crate) enum ServerModel { Threads = "threads", Events = "events" }
}

/// Serve on a bound listener until `stop` is set, within `guard`'s limits.
pub(crate) fn serve_on(
    listener: TcpListener,
    model: ServerModel,
    guard: Arc<ServerGuard>,
    stop: Arc<AtomicBool>,
) -> Result<()> {
    match model {
        ServerModel::Threads => server_threads::serve(listener, guard, stop),
        ServerModel::Events => server_events::serve(listener, guard, stop),
    }
}

/// Peak resident memory of a process in KB (VmHWM), if readable.
pub(crate) fn peak_kb(pid: &str) -> Option<u64> {
    crate::sys::task::peak_rss_kb(pid)
}

/// The benchmark's own server on loopback (a [`crate::child::LocalServer`]).
pub(crate) struct LocalServer {
    pub(crate) addr: SocketAddr,
    inner: crate::child::LocalServer,
}

impl LocalServer {
    /// Start a server on 127.0.0.1 on a free port: in a forked child when
    /// this process is single-threaded (a worker), else in a thread.
    /// Its limits are [`ServerLimits::LOCAL`].
    pub(crate) fn start(model: ServerModel) -> Result<LocalServer> {
        let inner = crate::child::LocalServer::start("chat server", move |l, stop| {
            serve_on(l, model, ServerGuard::new("chat server", ServerLimits::LOCAL), stop)
        })?;
        Ok(LocalServer { addr: inner.addr, inner })
    }

    pub(crate) fn in_process(&self) -> bool {
        self.inner.in_process()
    }

    #[cfg(test)]
    pub(crate) fn pid(&self) -> Option<nix::unistd::Pid> {
        self.inner.pid()
    }

    /// `Some(how it ended)` if the server is no longer running.
    pub(crate) fn died(&mut self) -> Option<String> {
        self.inner.died()
    }

    /// Peak memory of the server process (KB), if it runs apart.
    pub(crate) fn peak_kb(&self) -> Option<u64> {
        self.inner.peak_kb()
    }

    /// Stop the server and wait for it (the stop rule of [`crate::child`]:
    /// SIGTERM, then SIGKILL after 5 s).
    pub(crate) fn stop(self) -> Result<()> {
        self.inner.stop()
    }
}
