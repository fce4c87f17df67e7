//! The `events` server model, the design of today's servers: one thread, one
//! epoll loop (through mio, edge-triggered). Each connection has an input
//! buffer, parsed into frames as bytes arrive, and an output buffer that
//! relayed messages are appended to and flushed whenever the socket takes
//! them. A protocol error or a vanished peer closes that connection only.

use super::proto::{self, Frame};
use super::runs::{Runs, Seat};
use anyhow::{Context, Result};
use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};
use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const LISTENER: Token = Token(usize::MAX);

struct Conn {
    sock: TcpStream,
    rbuf: Vec<u8>,
    wbuf: Vec<u8>,
    wpos: usize,
    seat: Option<Seat>,
}

struct Server {
    poll: Poll,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    runs: Runs<usize>,
    /// Connections with output queued since the last flush.
    dirty: Vec<usize>,
}

pub fn serve(listener: std::net::TcpListener, stop: Arc<AtomicBool>) -> Result<()> {
    listener.set_nonblocking(true).context("listener non-blocking")?;
    let mut listener = TcpListener::from_std(listener);
    let poll = Poll::new().context("creating the epoll instance")?;
    poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
    let mut sv = Server { poll, conns: Vec::new(), free: Vec::new(), runs: Runs::default(), dirty: Vec::new() };
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
            if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                sv.read_conn(i, &mut chunk);
            }
            if ev.is_writable() {
                sv.flush(i);
            }
        }
        let dirty = std::mem::take(&mut sv.dirty);
        for i in dirty {
            sv.flush(i);
        }
    }
    Ok(())
}

impl Server {
    fn accept_all(&mut self, l: &TcpListener) {
        loop {
            match l.accept() {
                Ok((mut s, _)) => {
                    let _ = s.set_nodelay(true);
                    let i = self.free.pop().unwrap_or_else(|| {
                        self.conns.push(None);
                        self.conns.len() - 1
                    });
                    if self.poll.registry().register(&mut s, Token(i), Interest::READABLE | Interest::WRITABLE).is_err() {
                        self.free.push(i);
                        continue;
                    }
                    self.conns[i] = Some(Conn { sock: s, rbuf: Vec::new(), wbuf: Vec::new(), wpos: 0, seat: None });
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    eprintln!("chat server: accept: {e}");
                    return;
                }
            }
        }
    }

    fn close(&mut self, i: usize) {
        if let Some(mut c) = self.conns.get_mut(i).and_then(|c| c.take()) {
            let _ = self.poll.registry().deregister(&mut c.sock);
            if let Some(seat) = c.seat {
                self.runs.leave(seat);
            }
            self.free.push(i);
        }
    }

    /// Drain the socket (edge-triggered), then handle every whole frame.
    fn read_conn(&mut self, i: usize, chunk: &mut [u8]) {
        let Some(c) = self.conns.get_mut(i).and_then(|c| c.as_mut()) else {
            return;
        };
        let mut eof = false;
        loop {
            match c.sock.read(chunk) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => c.rbuf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    eof = true;
                    break;
                }
            }
        }
        let mut rbuf = std::mem::take(&mut c.rbuf);
        let mut at = 0;
        let ok = loop {
            match proto::decode(&rbuf[at..]) {
                Ok(Some((f, n))) => {
                    if !self.handle(i, f, at, n, &rbuf) {
                        break false;
                    }
                    at += n;
                }
                Ok(None) => break true,
                Err(_) => break false,
            }
        };
        // A peer gone mid-frame (eof with bytes left) is closed like any other.
        if !ok || eof {
            self.close(i);
            return;
        }
        rbuf.drain(..at);
        if let Some(c) = self.conns[i].as_mut() {
            c.rbuf = rbuf;
        }
    }

    /// One frame from connection `i` (bytes `rbuf[at..at+n]`); false to close it.
    fn handle(&mut self, i: usize, f: Frame, at: usize, n: usize, rbuf: &[u8]) -> bool {
        let seat = self.conns[i].as_ref().and_then(|c| c.seat);
        match (f, seat) {
            (Frame::Hello { run, rooms, users, room, user }, None) => match self.runs.hello(run, rooms, users, room, user, i) {
                Ok(all) => {
                    if let Some(c) = self.conns[i].as_mut() {
                        c.seat = Some(Seat { run, room, user });
                    }
                    if let Some(all) = all {
                        let start = proto::encoded(&Frame::Start);
                        for t in all {
                            self.queue(t, &start);
                        }
                    }
                    true
                }
                Err(_) => false,
            },
            (Frame::Msg { from, .. }, Some(st)) if from == st.user => {
                let frame = &rbuf[at..at + n];
                let Server { runs, conns, dirty, .. } = self;
                runs.for_peers(st, |&t| {
                    if let Some(c) = conns[t].as_mut() {
                        if c.wbuf.len() == c.wpos {
                            dirty.push(t);
                        }
                        c.wbuf.extend_from_slice(frame);
                    }
                })
            }
            _ => false,
        }
    }

    fn queue(&mut self, t: usize, bytes: &[u8]) {
        if let Some(c) = self.conns.get_mut(t).and_then(|c| c.as_mut()) {
            if c.wbuf.len() == c.wpos {
                self.dirty.push(t);
            }
            c.wbuf.extend_from_slice(bytes);
        }
    }

    /// Write queued output until done or the socket is full.
    fn flush(&mut self, i: usize) {
        let Some(c) = self.conns.get_mut(i).and_then(|c| c.as_mut()) else {
            return;
        };
        while c.wpos < c.wbuf.len() {
            match c.sock.write(&c.wbuf[c.wpos..]) {
                Ok(0) => return self.close(i),
                Ok(n) => c.wpos += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return self.close(i),
            }
        }
        if c.wpos == c.wbuf.len() {
            c.wbuf.clear();
            c.wpos = 0;
            if c.wbuf.capacity() > (256 << 10) {
                c.wbuf.shrink_to(16 << 10);
            }
        } else if c.wpos > (1 << 20) {
            c.wbuf.drain(..c.wpos);
            c.wpos = 0;
        }
    }
}
