//! The `events` server model, the design of today's servers: one thread, one
//! epoll loop (through mio, edge-triggered). How it relays is the run's
//! [`Relay`]:
//!
//! - `each` (the original's work, in one thread): a seated connection is read
//!   one message per read call (a read short of a whole message means the
//!   socket is drained), and each message is written to each other member's
//!   socket with a write of its own, at once if that socket has nothing
//!   waiting, else when it is writable again, still one write per message:
//!   messages are queued whole and never joined.
//! - `batched` (not the original's workload): sockets are drained in 64 KiB
//!   reads, relayed messages appended to the receiver's output buffer, and
//!   each buffer written in as few calls as the socket allows at the end of
//!   the loop's round.
//!
//! A protocol error or a vanished peer closes that connection only.
//!
//! Limits ([`ServerLimits`]): a connection past the cap is closed as soon as
//! accepted. Output waiting for a receiver is counted; while any receiver of
//! a room has more than `out_bytes` waiting, the server stops reading from
//! that room's senders (paused, resumed when the receiver has taken half of
//! it back), so a member that stops reading stops its room and costs at most
//! `out_bytes` and a message per sender, never a buffer that grows. Once a
//! second, connections are swept: a receiver that has taken no byte for the
//! write timeout is dropped (counted), and one silent for the idle timeout
//! closed (a paused sender is not silent: it is not read).

mod output;

use super::proto::{self, Frame, Relay};
use super::runs::{Runs, Seat, Shape};
use crate::child::{ServerGuard, Tally};
use anyhow::{Context, Result};
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const LISTENER: Token = Token(usize::MAX);

struct Conn {
    sock: TcpStream,
    rbuf: Vec<u8>,
    /// `batched` output: bytes, written from `wpos`.
    wbuf: Vec<u8>,
    wpos: usize,
    /// `wbuf` holds relayed messages (not only START).
    wmsgs: bool,
    /// `each` output: whole frames, the first written from `qpos`, each
    /// marked if it is a chat message (counted in `sends`).
    queue: VecDeque<(Arc<[u8]>, bool)>,
    qpos: usize,
    seat: Option<(Seat, Shape)>,
    /// Bytes waiting in `queue` and `wbuf`; since when none of them was
    /// taken (None when nothing waits).
    out: usize,
    stalled: Option<Instant>,
    /// Last byte read; not read because its room is behind.
    last_in: Instant,
    paused: bool,
    /// Write calls on this socket carrying messages, and read calls made
    /// reading messages once seated.
    sends: u64,
    recvs: u64,
}

struct Server {
    poll: Poll,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    runs: Runs<usize>,
    /// Connections with `batched` output queued since the last flush.
    dirty: Vec<usize>,
    /// Scratch: the receivers of the message being relayed, and connections
    /// whose socket failed while relaying.
    peers: Vec<usize>,
    broken: Vec<usize>,
    guard: Arc<ServerGuard>,
    open: usize,
    /// Senders not read while their room is behind; look at them again
    /// (`resume`) once some output was taken or a connection closed.
    paused: Vec<usize>,
    resume: bool,
}

/// How often connections are swept for the idle and write timeouts.
const SWEEP: Duration = Duration::from_millis(250);

pub(crate) fn serve(listener: std::net::TcpListener, guard: Arc<ServerGuard>, stop: Arc<AtomicBool>) -> Result<()> {
    listener.set_nonblocking(true).context("listener non-blocking")?;
    let mut listener = TcpListener::from_std(listener);
    let poll = Poll::new().context("creating the epoll instance")?;
    poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
    let runs = Runs::new(guard.limits.runs);
    let mut sv = Server {
        poll,
        conns: Vec::new(),
        free: Vec::new(),
        runs,
        dirty: Vec::new(),
        peers: Vec::new(),
        broken: Vec::new(),
        guard,
        open: 0,
        paused: Vec::new(),
        resume: false,
    };
    let mut swept = Instant::now();
    let mut events = Events::with_capacity(1024);
    let mut chunk = vec![0u8; 64 << 10];
    while !stop.load(Ordering::SeqCst) {
        match sv.poll.poll(&mut events, Some(Duration::from_millis(50))) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).context("epoll wait"),
        }
        for ev in events.iter() {
            if ev.token() == LISTENER {
                sv.accept_all(&listener);
                continue;
            }
            let i = ev.token().0;
            if ev.is_writable() {
                sv.flush(i);
            }
            if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                sv.read_conn(i, &mut chunk);
            }
        }
        let dirty = std::mem::take(&mut sv.dirty);
        for i in dirty {
            sv.flush(i);
        }
        while std::mem::take(&mut sv.resume) {
            sv.resume_paused(&mut chunk);
        }
        if swept.elapsed() >= SWEEP {
            swept = Instant::now();
            sv.sweep();
        }
    }
    Ok(())
}

impl Server {
    fn accept_all(&mut self, l: &TcpListener) {
        loop {
            match l.accept() {
                Ok((mut s, peer)) => {
                    if self.open >= self.guard.limits.conns {
                        Tally::add(&self.guard.tally.refused);
                        self.guard.log.say(format_args!("refused {peer}: {} connections open, the limit", self.open));
                        continue;
                    }
                    let i = self.free.pop().unwrap_or_else(|| {
                        self.conns.push(None);
                        self.conns.len() - 1
                    });
                    if self.poll.registry().register(&mut s, Token(i), Interest::READABLE | Interest::WRITABLE).is_err()
                    {
                        self.free.push(i);
                        continue;
                    }
                    self.conns[i] = Some(Conn {
                        sock: s,
                        rbuf: Vec::new(),
                        wbuf: Vec::new(),
                        wpos: 0,
                        wmsgs: false,
                        queue: VecDeque::new(),
                        qpos: 0,
                        seat: None,
                        out: 0,
                        stalled: None,
                        last_in: Instant::now(),
                        paused: false,
                        sends: 0,
                        recvs: 0,
                    });
                    self.open += 1;
                    Tally::add(&self.guard.tally.accepted);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    self.guard.log.say(format_args!("accept: {e}"));
                    return;
                }
            }
        }
    }

    fn close(&mut self, i: usize) {
        if let Some(mut c) = self.conns.get_mut(i).and_then(|c| c.take()) {
            let _ = self.poll.registry().deregister(&mut c.sock);
            if let Some((seat, _)) = c.seat {
                self.runs.leave(seat);
            }
            self.free.push(i);
            self.open -= 1;
            // Its room's senders may have waited for it.
            self.resume |= !self.paused.is_empty();
        }
    }

    /// Any other member of `seat`'s room with more than the limit waiting.
    fn room_behind(&self, seat: Seat) -> bool {
        let (conns, limit) = (&self.conns, self.guard.limits.out_bytes);
        let mut behind = false;
        self.runs.for_peers(seat, |&t| behind |= conns[t].as_ref().is_some_and(|c| c.out > limit));
        behind
    }

    /// Read the paused senders whose rooms have caught up.
    fn resume_paused(&mut self, chunk: &mut [u8]) {
        let paused = std::mem::take(&mut self.paused);
        for i in paused {
            let seat = match self.conns.get(i).and_then(|c| c.as_ref()) {
                Some(c) if c.paused => c.seat,
                _ => continue,
            };
            if seat.is_some_and(|(st, _)| self.room_behind(st)) {
                self.paused.push(i);
                continue;
            }
            if let Some(c) = self.conns[i].as_mut() {
                c.paused = false;
                c.last_in = Instant::now();
            }
            self.read_conn(i, chunk);
        }
    }

    /// Close receivers that took nothing for the write timeout and
    /// connections silent for the idle timeout.
    fn sweep(&mut self) {
        let (write, idle) = (self.guard.limits.write, self.guard.limits.idle);
        for i in 0..self.conns.len() {
            let Some(c) = self.conns[i].as_ref() else { continue };
            if c.stalled.is_some_and(|t| t.elapsed() >= write) {
                Tally::add(&self.guard.tally.slow_dropped);
                self.guard
                    .log
                    .say(format_args!("dropped a receiver that took nothing for {write:?} ({} bytes waiting)", c.out));
                self.close(i);
            } else if !c.paused && c.last_in.elapsed() >= idle {
                Tally::add(&self.guard.tally.idle_closed);
                self.guard.log.say(format_args!("closed a connection silent for {idle:?}"));
                self.close(i);
            }
        }
    }

    /// Read what the socket has (edge-triggered: until it is drained) and
    /// handle every whole frame. A seated `each` connection is read one
    /// message per call; any other in 64 KiB reads.
    fn read_conn(&mut self, i: usize, chunk: &mut [u8]) {
        loop {
            // Frames already whole first (a client may send HELLO and more
            // in one go).
            if !self.handle_buffered(i) {
                return self.close(i);
            }
            let Some(c) = self.conns.get_mut(i).and_then(|c| c.as_mut()) else {
                return;
            };
            if let Some((st, _)) = c.seat {
                if self.room_behind(st) {
                    // Backpressure: leave its bytes in the socket until
                    // the room has caught up.
                    let c = self.conns[i].as_mut().expect("checked above");
                    if !c.paused {
                        c.paused = true;
                        self.paused.push(i);
                    }
                    return;
                }
            }
            let Some(c) = self.conns.get_mut(i).and_then(|c| c.as_mut()) else {
                return;
            };
            let one = match c.seat {
                Some((_, sh)) if sh.relay == Relay::Each => Some(proto::msg_frame_len(sh.size)),
                _ => None,
            };
            let want = match one {
                Some(len) => len.saturating_sub(c.rbuf.len()).max(1).min(chunk.len()),
                None => chunk.len(),
            };
            c.recvs += c.seat.is_some() as u64;
            match c.sock.read(&mut chunk[..want]) {
                Ok(0) => {
                    // A peer gone (mid-frame or not) is closed like any other.
                    return self.close(i);
                }
                Ok(n) => {
                    c.last_in = Instant::now();
                    c.rbuf.extend_from_slice(&chunk[..n]);
                    if n < want {
                        // Drained: the next bytes bring a new edge.
                        if !self.handle_buffered(i) {
                            self.close(i);
                        }
                        return;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return self.close(i),
            }
        }
    }

    /// Handle every whole frame in connection `i`'s input; false to close it.
    fn handle_buffered(&mut self, i: usize) -> bool {
        let Some(c) = self.conns.get_mut(i).and_then(|c| c.as_mut()) else {
            return true;
        };
        let mut rbuf = std::mem::take(&mut c.rbuf);
        let mut at = 0;
        let ok = loop {
            match proto::decode(&rbuf[at..]) {
                Ok(Some((f, n))) => {
                    if !self.handle(i, f, &rbuf[at..at + n]) {
                        break false;
                    }
                    at += n;
                }
                Ok(None) => break true,
                Err(_) => break false,
            }
        };
        if !ok {
            return false;
        }
        rbuf.drain(..at);
        match self.conns[i].as_mut() {
            Some(c) => {
                // A seated `each` connection reads at most one message at a
                // time: anything longer is not a message of the run's size.
                if let Some((_, sh)) = c.seat {
                    if rbuf.len() >= proto::msg_frame_len(sh.size) {
                        return false;
                    }
                }
                c.rbuf = rbuf;
                true
            }
            None => true,
        }
    }

    /// One frame (`bytes`, prefix included) from connection `i`; false to close it.
    fn handle(&mut self, i: usize, f: Frame, bytes: &[u8]) -> bool {
        let seat = self.conns[i].as_ref().and_then(|c| c.seat);
        match (f, seat) {
            (Frame::Hello { run, rooms, users, room, user, size, relay }, None) => {
                let Some((relay, nodelay)) = proto::parse_relay_field(relay) else { return false };
                // Nagle's algorithm stays on unless the run asked (as the original's server).
                if let Some(c) = self.conns[i].as_ref() {
                    let _ = c.sock.set_nodelay(nodelay);
                }
                let shape = Shape { rooms, users, size, relay, nodelay };
                match self.runs.hello(run, shape, room, user, i) {
                    Ok(all) => {
                        if let Some(c) = self.conns[i].as_mut() {
                            c.seat = Some((Seat { run, room, user }, shape));
                        }
                        let start: Arc<[u8]> = proto::encoded(&Frame::Start).into();
                        for t in all.into_iter().flatten() {
                            match relay {
                                Relay::Each => self.write_each(t, &start, false),
                                Relay::Batched => self.queue_batched(t, &start, false),
                            }
                        }
                        self.close_broken();
                        true
                    }
                    Err(why) => {
                        Tally::add(&self.guard.tally.hellos_refused);
                        self.guard.log.say(format_args!("refused a HELLO: {why}"));
                        false
                    }
                }
            }
            (Frame::StatsRequest { run }, None) => {
                let (mut sends, mut recvs) = (0, 0);
                let conns = &self.conns;
                let seats = self.runs.for_run(run, |&t| {
                    if let Some(c) = conns[t].as_ref() {
                        sends += c.sends;
                        recvs += c.recvs;
                    }
                });
                let reply: Arc<[u8]> = proto::encoded(&Frame::Stats { seats, sends, recvs }).into();
                self.write_each(i, &reply, false);
                self.close_broken();
                true
            }
            (Frame::Msg { from, size, .. }, Some((st, shape))) if from == st.user && size == shape.size => {
                let mut peers = std::mem::take(&mut self.peers);
                peers.clear();
                if !self.runs.for_peers(st, |&t| peers.push(t)) {
                    return false; // MSG before START
                }
                match shape.relay {
                    Relay::Each => {
                        let mut shared: Option<Arc<[u8]>> = None;
                        for &t in &peers {
                            self.write_each_bytes(t, bytes, &mut shared);
                        }
                    }
                    Relay::Batched => {
                        for &t in &peers {
                            self.queue_batched(t, bytes, true);
                        }
                    }
                }
                self.peers = peers;
                self.close_broken();
                self.conns[i].is_some()
            }
            _ => false,
        }
    }

    fn close_broken(&mut self) {
        while let Some(t) = self.broken.pop() {
            self.close(t);
        }
    }
}
