//! The `threads` server model, the 2003 design: for every connection one
//! thread reads frames and relays each message into the outgoing queues of
//! the other users of its room, and one thread drains its own queue into the
//! socket. The accept loop polls the stop flag; on stop every socket is shut
//! down and every thread joined.

use super::proto::{self, Frame};
use super::runs::{Runs, Seat};
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Stack of every server thread: they hold no large locals.
pub const STACK: usize = 64 << 10;
/// A connection silent this long (mid-frame or not) is dropped.
pub const IDLE: Duration = Duration::from_secs(300);

#[derive(Clone)]
enum Out {
    Frame(Arc<[u8]>),
    Close,
}

struct Shared {
    runs: Mutex<Runs<Sender<Out>>>,
    /// Live sockets, to shut down on stop.
    socks: Mutex<HashMap<u64, Arc<TcpStream>>>,
}

pub fn serve(listener: TcpListener, stop: Arc<AtomicBool>) -> Result<()> {
    listener.set_nonblocking(true).context("listener non-blocking")?;
    let shared = Arc::new(Shared { runs: Mutex::new(Runs::default()), socks: Mutex::new(HashMap::new()) });
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    let mut next_id = 0u64;
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((s, _)) => {
                next_id += 1;
                if let Err(e) = start_conn(&shared, s, next_id, &mut threads) {
                    eprintln!("chat server: dropping a connection: {e:#}");
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                threads.retain(|h| !h.is_finished());
                wait_readable(listener.as_raw_fd(), 50);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                // EMFILE and friends: say so, back off, go on.
                eprintln!("chat server: accept: {e}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    for s in shared.socks.lock().unwrap_or_else(|e| e.into_inner()).values() {
        let _ = s.shutdown(Shutdown::Both);
    }
    for h in threads {
        let _ = h.join();
    }
    Ok(())
}

/// poll(2) one descriptor for input, up to `ms` milliseconds.
pub fn wait_readable(fd: i32, ms: i32) {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: p is one valid pollfd for the duration of the call.
    unsafe { libc::poll(&mut p, 1, ms) };
}

fn start_conn(shared: &Arc<Shared>, s: TcpStream, id: u64, threads: &mut Vec<JoinHandle<()>>) -> Result<()> {
    s.set_nonblocking(false)?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(IDLE))?;
    s.set_write_timeout(Some(IDLE))?;
    let s = Arc::new(s);
    // Listed before the reader exists, so its removal on exit cannot come first.
    let socks = || shared.socks.lock().unwrap_or_else(|e| e.into_inner());
    socks().insert(id, s.clone());
    let (tx, rx) = channel::<Out>();
    let w = {
        let s = s.clone();
        std::thread::Builder::new().stack_size(STACK).spawn(move || writer(s, rx))
    };
    let w = match w {
        Ok(w) => w,
        Err(e) => {
            socks().remove(&id);
            return Err(e).context("spawning a writer thread");
        }
    };
    let r = {
        let (s, sh, tx2) = (s.clone(), shared.clone(), tx.clone());
        std::thread::Builder::new().stack_size(STACK).spawn(move || reader(s, sh, tx2, id))
    };
    let r = match r {
        Ok(r) => r,
        Err(e) => {
            let _ = tx.send(Out::Close);
            let _ = w.join();
            socks().remove(&id);
            return Err(e).context("spawning a reader thread");
        }
    };
    threads.push(w);
    threads.push(r);
    Ok(())
}

fn writer(s: Arc<TcpStream>, rx: Receiver<Out>) {
    let mut w = BufWriter::with_capacity(16 << 10, &*s);
    'outer: while let Ok(m) = rx.recv() {
        let mut next = Some(m);
        // Write what is queued, flush when the queue runs dry.
        while let Some(m) = next.take() {
            match m {
                Out::Frame(f) => {
                    if w.write_all(&f).is_err() {
                        break 'outer;
                    }
                }
                Out::Close => break 'outer,
            }
            next = rx.try_recv().ok();
        }
        if w.flush().is_err() {
            break;
        }
    }
    let _ = w.flush();
    let _ = s.shutdown(Shutdown::Both);
}

fn reader(s: Arc<TcpStream>, shared: Arc<Shared>, me: Sender<Out>, id: u64) {
    let seat = serve_reader(&s, &shared, &me);
    if let Some(seat) = seat {
        shared.runs.lock().unwrap_or_else(|e| e.into_inner()).leave(seat);
    }
    let _ = me.send(Out::Close);
    let _ = s.shutdown(Shutdown::Both);
    shared.socks.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
}

/// Read and relay until the connection ends or breaks the protocol; the
/// seat it held, if any.
fn serve_reader(s: &TcpStream, shared: &Shared, me: &Sender<Out>) -> Option<Seat> {
    let mut buf = Vec::with_capacity(256);
    let mut r = s;
    let mut seat: Option<Seat> = None;
    let mut peers: Option<Vec<Sender<Out>>> = None;
    loop {
        match proto::read_frame(&mut r, &mut buf) {
            Ok(true) => {}
            _ => return seat,
        }
        let frame = match proto::parse_body(&buf[4..]) {
            Ok(f) => f,
            Err(_) => return seat,
        };
        match (frame, seat) {
            (Frame::Hello { run, rooms, users, room, user }, None) => {
                let got = shared.runs.lock().unwrap_or_else(|e| e.into_inner()).hello(run, rooms, users, room, user, me.clone());
                match got {
                    Ok(all) => {
                        seat = Some(Seat { run, room, user });
                        if let Some(all) = all {
                            let start: Arc<[u8]> = proto::encoded(&Frame::Start).into();
                            for t in all {
                                let _ = t.send(Out::Frame(start.clone()));
                            }
                        }
                    }
                    Err(_) => return None,
                }
            }
            (Frame::Msg { from, .. }, Some(st)) if from == st.user => {
                if peers.is_none() {
                    peers = shared.runs.lock().unwrap_or_else(|e| e.into_inner()).peers(st);
                }
                let Some(ps) = &peers else { return seat }; // MSG before START
                let f: Arc<[u8]> = buf.as_slice().into();
                for p in ps {
                    let _ = p.send(Out::Frame(f.clone()));
                }
            }
            _ => return seat,
        }
    }
}
