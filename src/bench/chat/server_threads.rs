//! The `threads` server model, the 2003 design: every connection has a
//! receive thread and a send thread. The receive thread reads one message
//! per recv(2) and hands it to the send thread of the same connection; how
//! the send thread relays it is the run's [`Relay`]:
//!
//! - `each` (the original's `chat_s`): the sender's send thread writes the
//!   message to the socket of every other member of the room, one write per
//!   receiver, as it relays it. Several send threads write to one receiver's
//!   socket at once, without a lock, as in the original (see [`relay`]).
//! - `batched` (not the original's workload): the receive thread puts the
//!   message in the queue of every other member, whose send thread writes
//!   what is queued through a 16 KiB buffer, flushed when its queue runs dry.
//!
//! Queues hold at most [`QUEUE`] entries: a receive thread that finds one
//! full waits, as a blocking send would, and stops reading its socket: a
//! receiver that stops reading stops its room's senders (backpressure), and
//! one that takes nothing for the write timeout is dropped (its socket shut
//! down, counted). Sockets have the idle timeout as their read timeout; the
//! accept loop closes connections past the cap at once ([`ServerLimits`]).
//! The accept loop polls the stop flag; on stop every socket is shut down
//! and every thread joined.

use super::proto::{self, Frame, Relay};
use super::runs::{Runs, Seat, Shape};
use crate::child::{ServerGuard, Tally};
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Stack of every server thread: they hold no large locals.
pub(crate) const STACK: usize = 64 << 10;
/// Entries a connection's queue holds before its writers wait.
pub(crate) const QUEUE: usize = 64;

enum Out {
    /// Write START on this connection.
    Start,
    /// `each`: write this message to every one of these connections.
    Relay(Arc<[u8]>, Arc<[Arc<Conn>]>),
    /// `batched`: write this message on this connection, buffered.
    Frame(Arc<[u8]>),
    Close,
}

/// One connection as the other threads see it.
struct Conn {
    sock: TcpStream,
    tx: SyncSender<Out>,
    /// Write calls carrying messages made by this connection's send thread,
    /// and receive calls made reading messages by its receive thread. One
    /// writer each, so a plain load and store.
    sends: AtomicU64,
    recvs: AtomicU64,
}

fn add(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed) + n, Ordering::Relaxed);
}

struct Shared {
    runs: Mutex<Runs<Arc<Conn>>>,
    /// Live sockets, to shut down on stop.
    socks: Mutex<HashMap<u64, Arc<Conn>>>,
    guard: Arc<ServerGuard>,
}

/// A write to a receiver failed: drop the receiver (shut its socket down, so
/// its own threads end and its room goes on); counted and said if it timed
/// out rather than went away.
fn drop_receiver(sock: &TcpStream, e: &std::io::Error, guard: &ServerGuard) {
    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) {
        Tally::add(&guard.tally.slow_dropped);
        guard.log.say(format_args!("dropped a receiver that took nothing for {:?}", guard.limits.write));
    }
    let _ = sock.shutdown(Shutdown::Both);
}

pub(crate) fn serve(listener: TcpListener, guard: Arc<ServerGuard>, stop: Arc<AtomicBool>) -> Result<()> {
    listener.set_nonblocking(true).context("listener non-blocking")?;
    let runs = Runs::new(guard.limits.runs);
    let shared = Arc::new(Shared { runs: Mutex::new(runs), socks: Mutex::new(HashMap::new()), guard });
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    let mut next_id = 0u64;
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((s, peer)) => {
                let open = shared.socks.lock().unwrap_or_else(|e| e.into_inner()).len();
                if open >= shared.guard.limits.conns {
                    Tally::add(&shared.guard.tally.refused);
                    shared.guard.log.say(format_args!("refused {peer}: {open} connections open, the limit"));
                    drop(s);
                    continue;
                }
                Tally::add(&shared.guard.tally.accepted);
                next_id += 1;
                if let Err(e) = start_conn(&shared, s, next_id, &mut threads) {
                    shared.guard.log.say(format_args!("dropping a connection: {e:#}"));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                threads.retain(|h| !h.is_finished());
                wait_readable(listener.as_raw_fd(), 50);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                // EMFILE and friends: say so, back off, go on.
                shared.guard.log.say(format_args!("accept: {e}"));
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    for c in shared.socks.lock().unwrap_or_else(|e| e.into_inner()).values() {
        let _ = c.sock.shutdown(Shutdown::Both);
    }
    for h in threads {
        let _ = h.join();
    }
    Ok(())
}

/// poll(2) one descriptor for input, up to `ms` milliseconds.
pub(crate) fn wait_readable(fd: i32, ms: i32) {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: p is one valid pollfd for the duration of the call.
    unsafe { libc::poll(&mut p, 1, ms) };
}

fn start_conn(shared: &Arc<Shared>, s: TcpStream, id: u64, threads: &mut Vec<JoinHandle<()>>) -> Result<()> {
    s.set_nonblocking(false)?;
    s.set_read_timeout(Some(shared.guard.limits.idle))?;
    s.set_write_timeout(Some(shared.guard.limits.write))?;
    let (tx, rx) = sync_channel::<Out>(QUEUE);
    let c = Arc::new(Conn { sock: s, tx, sends: AtomicU64::new(0), recvs: AtomicU64::new(0) });
    // Listed before the reader exists, so its removal on exit cannot come first.
    let socks = || shared.socks.lock().unwrap_or_else(|e| e.into_inner());
    socks().insert(id, c.clone());
    let w = {
        let (c, g) = (c.clone(), shared.guard.clone());
        std::thread::Builder::new().stack_size(STACK).spawn(move || sender(c, rx, g))
    };
    let w = match w {
        Ok(w) => w,
        Err(e) => {
            socks().remove(&id);
            return Err(e).context("spawning a send thread");
        }
    };
    let r = {
        let (c, sh) = (c.clone(), shared.clone());
        std::thread::Builder::new().stack_size(STACK).spawn(move || receiver(c, sh, id))
    };
    let r = match r {
        Ok(r) => r,
        Err(e) => {
            let _ = c.tx.send(Out::Close);
            let _ = w.join();
            socks().remove(&id);
            return Err(e).context("spawning a receive thread");
        }
    };
    threads.push(w);
    threads.push(r);
    Ok(())
}

/// The send thread of connection `c`.
fn sender(c: Arc<Conn>, rx: Receiver<Out>, guard: Arc<ServerGuard>) {
    let counted = Counted { sock: &c.sock, conn: &c };
    let mut w = BufWriter::with_capacity(16 << 10, counted);
    'outer: while let Ok(m) = rx.recv() {
        let mut next = Some(m);
        while let Some(m) = next.take() {
            match m {
                Out::Start => {
                    // Before any message: the clients send only when every
                    // connection has its START.
                    if let Err(e) = (&c.sock).write_all(&proto::encoded(&Frame::Start)) {
                        drop_receiver(&c.sock, &e, &guard);
                        break 'outer;
                    }
                }
                Out::Relay(f, peers) => {
                    relay(&f, &peers, &c.sends, &guard);
                    continue 'outer;
                }
                Out::Frame(f) => {
                    if let Err(e) = w.write_all(&f) {
                        drop_receiver(&c.sock, &e, &guard);
                        break 'outer;
                    }
                }
                Out::Close => break 'outer,
            }
            // `batched`: write what is queued, flush when the queue runs dry.
            next = rx.try_recv().ok();
        }
        if let Err(e) = w.flush() {
            drop_receiver(&c.sock, &e, &guard);
            break;
        }
    }
    let _ = w.flush();
    let _ = c.sock.shutdown(Shutdown::Both);
}

/// `each`: write message `f` to every one of `peers`, one blocking write
/// per receiver, in room order, as `chat_s` did. No lock: the send threads
/// of a room write to the same sockets at once, and the kernel's socket lock
/// keeps each write whole; a lock here, held across the write, made every
/// send thread preempted while writing a convoy (eight futex calls per
/// message and 0.4 times the original's messages per second, measured). A
/// write cut short, which the kernel does only when a receiver's socket
/// buffer is full, can let another thread's message in before the rest: the
/// receiving client then fails the run (frames are checked), where the
/// original, whose messages carried nothing, went on. A receiver gone (its
/// socket shut down) fails at once and is skipped; one that takes nothing
/// for the write timeout is dropped ([`drop_receiver`]), so a member that
/// stops reading holds its room for that long at most.
///
/// Each write call is counted in `sends` before it is made: a client that
/// has received every message and then asks for the counts (STATS) must find
/// every relay counted.
fn relay(f: &[u8], peers: &[Arc<Conn>], sends: &AtomicU64, guard: &ServerGuard) {
    for p in peers {
        if let Err(e) = proto::send_whole_with(&p.sock, f, || add(sends, 1)) {
            drop_receiver(&p.sock, &e, guard);
        }
    }
}

/// The socket as a `batched` send thread's buffer writes it: every write
/// call counted before it is made.
struct Counted<'a> {
    sock: &'a TcpStream,
    conn: &'a Conn,
}

impl Write for Counted<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        add(&self.conn.sends, 1);
        let mut s = self.sock;
        s.write(b)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The receive thread of connection `c`.
fn receiver(c: Arc<Conn>, shared: Arc<Shared>, id: u64) {
    let seat = serve_receiver(&c, &shared);
    if let Some(seat) = seat {
        shared.runs.lock().unwrap_or_else(|e| e.into_inner()).leave(seat);
    }
    let _ = c.tx.send(Out::Close);
    let _ = c.sock.shutdown(Shutdown::Both);
    shared.socks.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
}

/// A read ended in error: count and say it if it was the idle timeout.
fn idle(e: &std::io::Error, guard: &ServerGuard) {
    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) {
        Tally::add(&guard.tally.idle_closed);
        guard.log.say(format_args!("closed a connection silent for {:?}", guard.limits.idle));
    }
}

/// Read and relay until the connection ends or breaks the protocol; the
/// seat it held, if any.
fn serve_receiver(c: &Arc<Conn>, shared: &Shared) -> Option<Seat> {
    let mut buf = Vec::with_capacity(256);
    let mut seat: Option<(Seat, Shape)> = None;
    let mut peers: Option<Arc<[Arc<Conn>]>> = None;
    loop {
        let frame = match seat {
            // Seated: every frame is a message of the run's size, read whole
            // with one call.
            Some((st, shape)) => match read_msg(c, shared, &mut buf, shape.size) {
                Some(f) => f,
                None => return Some(st),
            },
            None => read_unseated(c, shared, &mut buf)?,
        };
        match (frame, seat) {
            (Frame::Hello { run, rooms, users, room, user, size, relay }, None) => {
                let (relay, nodelay) = proto::parse_relay_field(relay)?;
                // Nagle's algorithm stays on unless the run asked (as the original's server).
                c.sock.set_nodelay(nodelay).ok()?;
                let shape = Shape { rooms, users, size, relay, nodelay };
                seat = Some((take_seat(c, shared, run, shape, room, user)?, shape));
            }
            (Frame::StatsRequest { run }, None) => {
                if !send_stats(c, shared, run) {
                    return None;
                }
            }
            (Frame::Msg { from, .. }, Some((st, shape))) if from == st.user => {
                if peers.is_none() {
                    peers = lock_runs(shared).peers(st).map(Arc::from);
                }
                let Some(ps) = &peers else { return Some(st) }; // MSG before START
                if !hand_to_writers(c, ps, shape.relay, &buf) {
                    return Some(st);
                }
            }
            _ => return seat.map(|s| s.0),
        }
    }
}

fn lock_runs(shared: &Shared) -> std::sync::MutexGuard<'_, Runs<Arc<Conn>>> {
    shared.runs.lock().unwrap_or_else(|e| e.into_inner())
}

/// Read a seated connection's next message of `size` bytes whole into
/// `buf`, counting the receive calls; `None` when the connection ends, is
/// idle too long or sends anything else.
#[inline]
fn read_msg(c: &Conn, shared: &Shared, buf: &mut Vec<u8>, size: u32) -> Option<Frame> {
    buf.resize(proto::msg_frame_len(size), 0);
    let mut calls = 0;
    let got = proto::recv_whole(&c.sock, buf, &mut calls);
    add(&c.recvs, calls);
    match got {
        Ok(true) => {}
        Err(e) => {
            idle(&e, &shared.guard);
            return None;
        }
        Ok(false) => return None,
    }
    proto::parse_msg(buf, size).ok()
}

/// Read the next frame of a connection not seated yet (HELLO or STATS?);
/// `None` when the connection ends, is idle too long or sends garbage.
fn read_unseated(c: &Conn, shared: &Shared, buf: &mut Vec<u8>) -> Option<Frame> {
    let mut r = &c.sock;
    match proto::read_frame(&mut r, buf) {
        Ok(true) => {}
        Err(e) => {
            idle(&e, &shared.guard);
            return None;
        }
        Ok(false) => return None,
    }
    proto::parse_body(&buf[4..]).ok()
}

/// Seat a connection's HELLO in its run; when the room is complete, send
/// START to every member. A refused HELLO is counted and logged (`None`).
fn take_seat(c: &Arc<Conn>, shared: &Shared, run: u64, shape: Shape, room: u32, user: u32) -> Option<Seat> {
    let got = lock_runs(shared).hello(run, shape, room, user, c.clone());
    match got {
        Ok(all) => {
            for t in all.into_iter().flatten() {
                let _ = t.tx.send(Out::Start);
            }
            Some(Seat { run, room, user })
        }
        Err(why) => {
            Tally::add(&shared.guard.tally.hellos_refused);
            shared.guard.log.say(format_args!("refused a HELLO: {why}"));
            None
        }
    }
}

/// Answer STATS? with the run's seats and call counts; false when the reply
/// cannot be written.
fn send_stats(c: &Conn, shared: &Shared, run: u64) -> bool {
    let (mut sends, mut recvs) = (0, 0);
    let seats = lock_runs(shared).for_run(run, |t| {
        sends += t.sends.load(Ordering::Relaxed);
        recvs += t.recvs.load(Ordering::Relaxed);
    });
    let reply = proto::encoded(&Frame::Stats { seats, sends, recvs });
    (&c.sock).write_all(&reply).is_ok()
}

/// Hand a message frame to the writers: with `Relay::Each` to the sender's
/// own writer, which writes it to each peer; batched, to each peer's writer.
/// False when the sender's writer is gone.
#[inline]
fn hand_to_writers(c: &Conn, peers: &Arc<[Arc<Conn>]>, how: Relay, frame: &[u8]) -> bool {
    let f: Arc<[u8]> = frame.into();
    match how {
        Relay::Each => c.tx.send(Out::Relay(f, peers.clone())).is_ok(),
        Relay::Batched => {
            for p in peers.iter() {
                let _ = p.tx.send(Out::Frame(f.clone()));
            }
            true
        }
    }
}
