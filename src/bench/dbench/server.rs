//! The tbench server: answers length-prefixed request frames with reply frames
//! of the size each request asks for, one worker thread per connection.
//!
//! # Wire protocol (dbench's socket backend, which Debian's `tbench_srv` speaks)
//!
//! All integers are 32-bit big-endian.
//!
//! ```text
//! request:  [len][reply_len][len - 4 bytes of padding]      (4 + len bytes)
//! reply:    [reply_len][reply_len bytes of zeros]           (4 + reply_len bytes)
//! ```
//!
//! `len` counts the bytes after the first word, so it is at least 4 (it holds
//! `reply_len`). A frame whose `len` is below 4 or above [`MAX_LEN`], or that
//! asks for a `reply_len` above [`MAX_LEN`], is a bad frame: the server closes
//! that connection and goes on serving the others. A client that vanishes
//! mid-frame only ends its own worker. The frame sizes per operation are
//! tabled in [`super::backend_sock`].
//!
//! Limits ([`ServerLimits`]): at most `conns` connections (workers) at once,
//! one more is closed as soon as accepted (counted); a connection that sends
//! nothing for the idle timeout is closed, one that takes no reply bytes for
//! the write timeout too; what the server says goes through a bounded log.

use crate::child::{ServerGuard, ServerLimits, Tally};
use anyhow::{bail, Context, Result};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Largest `len` or `reply_len` accepted (16 MiB; the largest real frame is
/// an 8 MiB ReadX reply, see [`super::loadfile::MAX_IO`]).
pub(crate) const MAX_LEN: u32 = 16 << 20;
/// How often blocked workers look at the stop flag.
const TICK: Duration = Duration::from_millis(100);

/// Why a connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum End {
    /// The client closed between frames.
    Closed,
    /// The client went away in the middle of a frame.
    Vanished,
    /// A bad length word (the value).
    BadHeader(u32),
    /// A reply longer than allowed was asked for (the value).
    BadReply(u32),
    /// The server is stopping.
    Stopped,
    /// Nothing came for the idle timeout.
    Idle,
    /// Another socket error.
    Error(String),
}

/// A bound, not yet running, server.
pub(crate) struct Server {
    listener: TcpListener,
    addr: SocketAddr,
    verbose: bool,
    guard: Arc<ServerGuard>,
}

impl Server {
    /// Bind to `listen` (`HOST:PORT`; port 0 picks a free one).
    pub(crate) fn bind(listen: &str) -> Result<Server> {
        let mut last = None;
        for a in crate::sys::net::resolve_all("listen", listen)? {
            match TcpListener::bind(a) {
                Ok(l) => return Server::on(l),
                Err(e) => last = Some(e),
            }
        }
        match last {
            Some(e) => Err(e).with_context(|| format!("cannot listen on {listen}")),
            None => bail!("listen address {listen:?} resolves to nothing"),
        }
    }

    /// Serve on a listener bound elsewhere.
    pub(crate) fn on(listener: TcpListener) -> Result<Server> {
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        Ok(Server { listener, addr, verbose: false, guard: ServerGuard::new("tbench server", ServerLimits::LOCAL) })
    }

    /// Keep these limits (a local server keeps [`ServerLimits::LOCAL`]).
    pub(crate) fn limits(mut self, limits: ServerLimits) -> Self {
        self.guard = ServerGuard::new("tbench server", limits);
        self
    }

    /// What the limits counted so far.
    pub(crate) fn tally(&self) -> Arc<ServerGuard> {
        self.guard.clone()
    }

    /// Report closed bad connections on stderr (for `kdelta serve`).
    pub(crate) fn verbose(mut self, v: bool) -> Self {
        self.verbose = v;
        self
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serve until `stop` is set; returns once every worker has ended.
    pub(crate) fn run(self, stop: &AtomicBool) -> Result<()> {
        let verbose = self.verbose;
        let (guard, open) = (&*self.guard, &AtomicUsize::new(0));
        let limits = guard.limits;
        std::thread::scope(|scope| {
            while !stop.load(Ordering::SeqCst) {
                match self.listener.accept() {
                    Ok((s, peer)) => {
                        let now = open.load(Ordering::SeqCst);
                        if now >= limits.conns {
                            Tally::add(&guard.tally.refused);
                            guard.log.say(format_args!("refused {peer}: {now} connections open, the limit"));
                            drop(s);
                            continue;
                        }
                        open.fetch_add(1, Ordering::SeqCst);
                        Tally::add(&guard.tally.accepted);
                        let spawned = std::thread::Builder::new()
                            .name("tbench-conn".into())
                            .stack_size(256 << 10)
                            .spawn_scoped(scope, move || {
                                let end = serve_connection(s, &limits, stop);
                                open.fetch_sub(1, Ordering::SeqCst);
                                if end == End::Idle {
                                    Tally::add(&guard.tally.idle_closed);
                                }
                                if verbose && !matches!(end, End::Closed | End::Stopped | End::Idle) {
                                    guard.log.say(format_args!("connection from {peer} ended: {end:?}"));
                                }
                            });
                        if let Err(e) = spawned {
                            open.fetch_sub(1, Ordering::SeqCst);
                            guard.log.say(format_args!("cannot start a worker for {peer}: {e}"));
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        let mut fds = [nix::poll::PollFd::new(self.listener.as_fd(), nix::poll::PollFlags::POLLIN)];
                        let _ = nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(TICK.as_millis() as u16));
                    }
                    Err(e) => {
                        // Out of descriptors and the like: wait and go on.
                        if verbose {
                            guard.log.say(format_args!("accept: {e}"));
                        }
                        std::thread::sleep(TICK);
                    }
                }
            }
        });
        Ok(())
    }
}

/// A connection's input, buffered so that a small frame takes one `read`.
struct Input<'a> {
    s: &'a mut TcpStream,
    buf: Vec<u8>,
    lo: usize,
    hi: usize,
    stop: &'a AtomicBool,
    /// When the last byte came, and how long the connection may stay silent.
    last: Instant,
    idle: Duration,
}

impl Input<'_> {
    fn avail(&self) -> usize {
        self.hi - self.lo
    }

    /// Read more (whatever is there, at least one byte). `Ok(false)` on EOF.
    fn fill(&mut self) -> Result<bool, End> {
        if self.lo == self.hi {
            self.lo = 0;
            self.hi = 0;
        } else if self.hi == self.buf.len() {
            self.buf.copy_within(self.lo..self.hi, 0);
            self.hi -= self.lo;
            self.lo = 0;
        }
        loop {
            match self.s.read(&mut self.buf[self.hi..]) {
                Ok(0) => return Ok(false),
                Ok(k) => {
                    self.hi += k;
                    self.last = Instant::now();
                    return Ok(true);
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
                    ) =>
                {
                    if self.stop.load(Ordering::SeqCst) {
                        return Err(End::Stopped);
                    }
                    if self.last.elapsed() >= self.idle {
                        return Err(End::Idle);
                    }
                }
                Err(e) if matches!(e.kind(), io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe) => {
                    return Err(End::Vanished)
                }
                Err(e) => return Err(End::Error(e.to_string())),
            }
        }
    }

    /// Have at least `n` (at most the buffer size) bytes buffered.
    /// `at_start`: an EOF before any byte is a clean close.
    fn need(&mut self, n: usize, at_start: bool) -> Result<(), End> {
        while self.avail() < n {
            if !self.fill()? {
                return Err(if at_start && self.avail() == 0 { End::Closed } else { End::Vanished });
            }
        }
        Ok(())
    }

    fn word(&mut self) -> u32 {
        let w = u32::from_be_bytes(self.buf[self.lo..self.lo + 4].try_into().unwrap());
        self.lo += 4;
        w
    }

    /// Drop `n` bytes of frame body.
    fn skip(&mut self, mut n: usize) -> Result<(), End> {
        loop {
            let k = n.min(self.avail());
            self.lo += k;
            n -= k;
            if n == 0 {
                return Ok(());
            }
            if !self.fill()? {
                return Err(End::Vanished);
            }
        }
    }
}

/// One connection's worker: frame in, frame out, until the end.
pub(crate) fn serve_connection(mut s: TcpStream, limits: &ServerLimits, stop: &AtomicBool) -> End {
    let _ = s.set_nodelay(true);
    if s.set_read_timeout(Some(TICK.min(limits.idle))).is_err() || s.set_write_timeout(Some(limits.write)).is_err() {
        return End::Error("cannot set socket timeouts".into());
    }
    let mut out = vec![0u8; 64 << 10];
    let mut w = s.try_clone();
    let Ok(writer) = w.as_mut() else {
        return End::Error("cannot clone the socket".into());
    };
    let mut inp =
        Input { s: &mut s, buf: vec![0u8; 64 << 10], lo: 0, hi: 0, stop, last: Instant::now(), idle: limits.idle };
    loop {
        if stop.load(Ordering::Relaxed) {
            return End::Stopped;
        }
        if let Err(e) = inp.need(4, true) {
            return e;
        }
        let len = inp.word();
        if !(4..=MAX_LEN).contains(&len) {
            return End::BadHeader(len);
        }
        if let Err(e) = inp.need(4, false) {
            return e;
        }
        let reply = inp.word();
        if reply > MAX_LEN {
            return End::BadReply(reply);
        }
        if let Err(e) = inp.skip((len - 4) as usize) {
            return e;
        }
        // The reply: the length word, then zeros (the buffer past the word
        // is never written, so it stays zero).
        out[..4].copy_from_slice(&reply.to_be_bytes());
        let total = 4 + reply as usize;
        let first = total.min(out.len());
        if let Err(e) = writer.write_all(&out[..first]) {
            return End::Error(e.to_string());
        }
        let mut left = total - first;
        while left > 0 {
            let k = left.min(out.len() - 4);
            if let Err(e) = writer.write_all(&out[4..4 + k]) {
                return End::Error(e.to_string());
            }
            left -= k;
        }
    }
}

/// `kdelta serve tbench --listen ADDR:PORT`: serve until `stop` is set.
/// The parameters are the tbench benchmark's (none changes the server today).
pub(crate) fn serve(
    listen: &str,
    _params: &crate::bench::Params,
    limits: ServerLimits,
    stop: Arc<AtomicBool>,
) -> Result<()> {
    let server = Server::bind(listen)?.verbose(true).limits(limits);
    eprintln!(
        "tbench server listening on {} (one worker per connection, {}; stop with Ctrl-C)",
        server.local_addr(),
        limits.describe()
    );
    let guard = server.tally();
    let r = server.run(&stop);
    eprintln!("tbench server stopped: {}", guard.tally.summary());
    r
}

/// A server started for one benchmark run on loopback, stopped when dropped
/// (a [`crate::child::LocalServer`]): threads in this process for the threads
/// model, else a child process (so that the worker stays single-threaded
/// while it forks the clients), or a thread when this process already has
/// threads ([`LocalServer::in_process`] says so). The child stops by the stop
/// rule of [`crate::child`]: SIGTERM raises its stop flag, SIGKILL after 5 s.
pub(crate) struct LocalServer(crate::child::LocalServer);

impl LocalServer {
    pub(crate) fn start(threads: bool) -> Result<LocalServer> {
        let serve = |l: TcpListener, stop: std::sync::Arc<AtomicBool>| Server::on(l)?.run(&stop);
        Ok(LocalServer(if threads {
            crate::child::LocalServer::start_in_thread("tbench server", serve)?
        } else {
            crate::child::LocalServer::start("tbench server", serve)?
        }))
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.0.addr
    }

    /// The server runs in a thread of this process.
    pub(crate) fn in_process(&self) -> bool {
        self.0.in_process()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn start() -> (SocketAddr, Arc<AtomicBool>, std::thread::JoinHandle<Result<()>>) {
        let server = Server::bind("127.0.0.1:0").unwrap();
        let addr = server.local_addr();
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        (addr, stop, std::thread::spawn(move || server.run(&s2)))
    }

    fn exchange(c: &mut TcpStream, send: u32, recv: u32) -> io::Result<()> {
        let mut req = vec![0u8; send as usize];
        req[..4].copy_from_slice(&(send - 4).to_be_bytes());
        req[4..8].copy_from_slice(&(recv - 4).to_be_bytes());
        c.write_all(&req)?;
        let mut rep = vec![0u8; recv as usize];
        c.read_exact(&mut rep)?;
        assert_eq!(u32::from_be_bytes(rep[..4].try_into().unwrap()), recv - 4);
        Ok(())
    }

    fn connect(addr: SocketAddr) -> TcpStream {
        let c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c
    }

    /// The connection gets closed by the server: reads end with EOF or reset.
    fn closed_by_server(c: &mut TcpStream) -> bool {
        let mut b = [0u8; 16];
        matches!(c.read(&mut b), Ok(0))
            || matches!(c.read(&mut b), Err(e) if e.kind() == io::ErrorKind::ConnectionReset)
    }

    #[test]
    fn bad_frames_close_only_that_connection() {
        let (addr, stop, h) = start();
        let mut good = connect(addr);
        exchange(&mut good, 8, 8).unwrap();
        exchange(&mut good, 59, 59 + 65536).unwrap();
        exchange(&mut good, 59 + 70000, 55).unwrap();
        // Bad header: a length word below 4.
        let mut bad = connect(addr);
        bad.write_all(&2u32.to_be_bytes()).unwrap();
        assert!(closed_by_server(&mut bad));
        // Oversized length.
        let mut big = connect(addr);
        big.write_all(&(MAX_LEN + 1).to_be_bytes()).unwrap();
        assert!(closed_by_server(&mut big));
        // Oversized reply asked for.
        let mut greedy = connect(addr);
        greedy.write_all(&[0, 0, 0, 4]).unwrap();
        greedy.write_all(&(MAX_LEN + 1).to_be_bytes()).unwrap();
        assert!(closed_by_server(&mut greedy));
        // A client that vanishes mid-frame.
        let mut gone = connect(addr);
        gone.write_all(&[0, 0, 1, 0, 0, 0]).unwrap();
        drop(gone);
        // The server goes on.
        exchange(&mut good, 47, 39).unwrap();
        let mut late = connect(addr);
        exchange(&mut late, 8, 8).unwrap();
        // Stop with a connection still open: run() returns, all workers joined.
        stop.store(true, Ordering::SeqCst);
        h.join().unwrap().unwrap();
        assert!(closed_by_server(&mut good));
    }

    #[test]
    fn local_server_starts_and_stops() {
        for threads in [true, false] {
            let s = LocalServer::start(threads).unwrap();
            let mut c = connect(s.addr());
            exchange(&mut c, 8, 8).unwrap();
            drop(s);
            // Gone: the connection ends.
            assert!(closed_by_server(&mut c));
        }
    }

    #[test]
    fn bind_errors() {
        assert!(crate::error::is_bad_input(&Server::bind("nonsense").err().unwrap()));
    }
}
