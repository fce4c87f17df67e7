//! `kdelta serve lat.tcp`: the echo side of `lat.tcp --param server=HOST:PORT`
//! for a client on another machine, as LMbench's `lat_tcp -s`. Each
//! connection (TCP_NODELAY) gets a thread that writes back every byte it
//! reads; the connection cap and the idle timeout of `kdelta serve` hold.

use crate::child::ServerLimits;
use anyhow::{Context, Result};
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Echo until the peer closes, goes idle past `idle`, or `stop` is set.
fn echo(mut c: TcpStream, idle: Duration, stop: &AtomicBool) {
    let _ = c.set_nodelay(true);
    // Short reads so a stop is seen; idleness is summed over them.
    let tick = idle.min(Duration::from_millis(200));
    let _ = c.set_read_timeout(Some(tick));
    let mut buf = vec![0u8; 64 << 10];
    let mut quiet = Duration::ZERO;
    while !stop.load(Ordering::Relaxed) {
        match c.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                quiet = Duration::ZERO;
                if c.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                quiet += tick;
                if quiet >= idle {
                    return;
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

pub(super) fn serve(
    listen: &str,
    _params: &crate::bench::Params,
    limits: ServerLimits,
    stop: Arc<AtomicBool>,
) -> Result<()> {
    let addr = crate::sys::net::resolve("--listen", listen)?;
    let l = TcpListener::bind(addr).with_context(|| format!("binding {addr}"))?;
    l.set_nonblocking(true)?;
    eprintln!(
        "lat.tcp echo server listening on {} (at most {} connections; stop with Ctrl-C)",
        l.local_addr()?,
        limits.conns
    );
    let open = Arc::new(AtomicUsize::new(0));
    let (mut served, mut refused) = (0u64, 0u64);
    while !stop.load(Ordering::Relaxed) {
        match l.accept() {
            Ok((c, _)) => {
                if open.load(Ordering::Relaxed) >= limits.conns {
                    refused += 1;
                    continue;
                }
                let _ = c.set_nonblocking(false);
                served += 1;
                open.fetch_add(1, Ordering::Relaxed);
                let (open, stop) = (open.clone(), stop.clone());
                std::thread::spawn(move || {
                    echo(c, limits.idle, &stop);
                    open.fetch_sub(1, Ordering::Relaxed);
                });
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(Duration::from_millis(20)),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e).context("accepting a connection"),
        }
    }
    eprintln!("lat.tcp echo server stopped: {served} connection(s) served, {refused} refused over the cap");
    Ok(())
}
