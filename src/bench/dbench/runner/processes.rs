//! Clients as processes: one forked child per client, each reporting its
//! result through a pipe; the parent drives the phases and reaps them all.

use super::*;
use nix::sys::signal::Signal;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};

/// The function that makes a client's backend, callable from any client.
type MakeBackend<'a> = dyn Fn(usize) -> Result<Box<dyn Backend>> + Sync + 'a;

/// One forked client: the read end of its result pipe and what it has sent.
struct Client {
    child: crate::child::Child,
    rx: std::fs::File,
    data: Vec<u8>,
    done: bool,
}

/// Killed with SIGKILL: a client holds nothing worth a clean end.
fn kill_all(kids: &mut Vec<Client>) {
    let mut cs: Vec<crate::child::Child> = kids.drain(..).map(|k| k.child).collect();
    crate::child::stop_all(&mut cs);
}

pub(super) fn run_processes(
    lf: &Loadfile,
    spec: &Spec,
    mem: &SharedMem,
    parent: Option<nix::unistd::Pid>,
    make: &MakeBackend<'_>,
) -> Result<(Vec<ClientResult>, (f64, f64))> {
    let mut kids = fork_clients(lf, spec, mem, parent, make)?;
    // A child writes to its pipe only when it ends, so any event on a pipe
    // while the others set up means that child is gone.
    let alive = || {
        let mut fds: Vec<nix::poll::PollFd> =
            kids.iter().map(|k| nix::poll::PollFd::new(k.rx.as_fd(), nix::poll::PollFlags::POLLIN)).collect();
        matches!(nix::poll::poll(&mut fds, nix::poll::PollTimeout::ZERO), Ok(0))
    };
    let secs = drive(mem.get(), spec, Some(&alive));
    let secs = match secs {
        Ok(s) => s,
        Err(e) => {
            kill_all(&mut kids);
            return Err(e);
        }
    };
    collect_reports(&mut kids, mem)?;
    Ok((reap(&mut kids), secs))
}

/// Fork one child per client, each running [`client_main`] and writing its
/// result as JSON to its pipe when it ends. A failed fork aborts the phase
/// and kills the clients already forked.
fn fork_clients(
    lf: &Loadfile,
    spec: &Spec,
    mem: &SharedMem,
    parent: Option<nix::unistd::Pid>,
    make: &MakeBackend<'_>,
) -> Result<Vec<Client>> {
    let mut kids: Vec<Client> = Vec::new();
    for n in 1..=spec.clients {
        let (rx, tx): (OwnedFd, OwnedFd) = nix::unistd::pipe().context("pipe for a client's result")?;
        let rx_fd = std::os::fd::AsRawFd::as_raw_fd(&rx);
        let mut tx = Some(tx);
        // SAFETY: the child runs the replay (no locks held by other threads
        // are needed: the harness worker is single-threaded here).
        let forked = unsafe {
            crate::child::fork(|| {
                // The child's copy of the read end (never dropped: it leaves with _exit).
                libc::close(rx_fd);
                let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    client_main(n, lf, spec, mem.get(), parent, make)
                }))
                .unwrap_or_else(|_| {
                    mem.get().phase.store(ABORT, Ordering::SeqCst);
                    ClientResult { error: Some(format!("client {n} panicked")), ..Default::default() }
                });
                let bytes = serde_json::to_vec(&res).unwrap_or_default();
                let mut f = std::fs::File::from(tx.take().expect("the write end"));
                let _ = std::io::Write::write_all(&mut f, &bytes);
                0
            })
        };
        match forked {
            Ok(child) => {
                drop(tx);
                let child = child.stop_signal(Signal::SIGKILL, crate::child::GRACE);
                kids.push(Client { child, rx: std::fs::File::from(rx), data: Vec::new(), done: false });
            }
            Err(e) => {
                mem.get().phase.store(ABORT, Ordering::SeqCst);
                kill_all(&mut kids);
                bail!("fork of client {n} failed: {e:#}");
            }
        }
    }
    Ok(kids)
}

/// Read every child's report until its pipe closes, waiting at most
/// [`FINISH_GRACE`] in all; past that the clients are aborted and killed.
fn collect_reports(kids: &mut Vec<Client>, mem: &SharedMem) -> Result<()> {
    let deadline = Instant::now() + FINISH_GRACE;
    loop {
        let pending: Vec<usize> = (0..kids.len()).filter(|&i| !kids[i].done).collect();
        if pending.is_empty() {
            return Ok(());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            mem.get().phase.store(ABORT, Ordering::SeqCst);
            kill_all(kids);
            bail!("{} client(s) did not stop within {} s after the time limit", pending.len(), FINISH_GRACE.as_secs());
        }
        let mut fds: Vec<nix::poll::PollFd> =
            pending.iter().map(|&i| nix::poll::PollFd::new(kids[i].rx.as_fd(), nix::poll::PollFlags::POLLIN)).collect();
        let ms = left.as_millis().min(1000) as u16;
        let _ = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(ms));
        let ready: Vec<bool> = fds.iter().map(|f| f.revents().map(|r| !r.is_empty()).unwrap_or(false)).collect();
        drop(fds);
        for (j, &i) in pending.iter().enumerate() {
            if !ready[j] {
                continue;
            }
            let mut chunk = [0u8; 4096];
            match kids[i].rx.read(&mut chunk) {
                Ok(0) | Err(_) => kids[i].done = true,
                Ok(k) => kids[i].data.extend_from_slice(&chunk[..k]),
            }
        }
    }
}

/// Wait for every child and decode its report; a child that sent none gets
/// an error result saying how it ended.
fn reap(kids: &mut [Client]) -> Vec<ClientResult> {
    let mut out = Vec::new();
    for (i, k) in kids.iter_mut().enumerate() {
        let how = match k.child.wait() {
            Ok(st) => crate::child::describe(st),
            Err(e) => format!("{e:#}"),
        };
        let r: ClientResult = serde_json::from_slice(&k.data).unwrap_or_else(|_| ClientResult {
            error: Some(format!("client {} ended without a report (it {how})", i + 1)),
            ..Default::default()
        });
        out.push(r);
    }
    out
}
