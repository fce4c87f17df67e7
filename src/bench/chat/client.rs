//! The chat client: one TCP connection per user, one sending and one
//! receiving thread per connection, started the way the original chat
//! benchmark (`chat_c`) started. Every connection says HELLO; each receiving
//! thread waits for the server's START; when all have it, the clock starts
//! and every sending thread is released at once. A sending thread sends each
//! message with one write, a receiving thread reads each with one recv(2)
//! (`MSG_WAITALL`), as `chat_c` did. Each receiving thread reads exactly
//! (users - 1) x messages messages, checking that every other user's
//! messages arrive once each and in order; the clock stops when the last
//! receiver is done. Then the client counts the calls: its own, and the
//! server's, asked for with STATS? on a connection of its own before the
//! room connections close.
//!
//! Pacing `none` lets every user send as fast as it can; `room` (VolanoMark's
//! way) lets the users of a room take turns with one message in flight per
//! room: the next user sends when every other user has received the last one.
//!
//! Any failure (the server closing a connection, a silent server, a thread
//! that cannot start) sets an abort flag, shuts every socket down, and every
//! thread is joined before the error is returned.

use super::proto::{self, Frame, Relay};
use anyhow::{anyhow, bail, Context, Result};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub(crate) const STACK: usize = 64 << 10;

crate::model::params::choice! {
    pub(crate) enum Pacing { None = "none", Room = "room" }
}

#[derive(Debug, Clone)]
pub(crate) struct ChatSpec {
    pub(crate) rooms: u32,
    pub(crate) users: u32,
    pub(crate) messages: u32,
    /// Message body size in bytes (>= 8).
    pub(crate) size: u32,
    pub(crate) pacing: Pacing,
    /// How the server relays (sent in HELLO).
    pub(crate) relay: Relay,
    /// TCP_NODELAY on both sides of every connection (sent in HELLO); the
    /// original left Nagle's algorithm on.
    pub(crate) nodelay: bool,
    /// Longest wait for a connection, for START, or between two messages.
    pub(crate) timeout: Duration,
}

#[derive(Debug, Clone)]
pub(crate) struct ChatOutcome {
    pub(crate) sent: u64,
    pub(crate) received: u64,
    pub(crate) elapsed: Duration,
    /// Write calls the client made sending messages, and recv calls reading them.
    pub(crate) client_sends: u64,
    pub(crate) client_recvs: u64,
    /// What the server said it did for this run, if it answered STATS?.
    pub(crate) server: Option<ServerCounts>,
}

/// The server's counts for one run (a STATS frame).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ServerCounts {
    /// Connections of the run the server still had seated (all of them,
    /// or the counts are not the whole run's).
    pub(crate) seats: u32,
    /// Write calls carrying the run's messages.
    pub(crate) sends: u64,
    /// Receive calls reading them.
    pub(crate) recvs: u64,
}

impl ChatOutcome {
    /// (sent + received) / elapsed, the figure the original chat computed.
    pub(crate) fn rate(&self) -> f64 {
        (self.sent + self.received) as f64 / self.elapsed.as_secs_f64()
    }
}

/// Turn-taking state of one room (pacing `room`).
#[derive(Default)]
struct Turn {
    /// Messages of the room sent so far (whose turn: `turn % users`).
    turn: u64,
    /// Receipts of the current message.
    receipts: u32,
}

struct Shared {
    abort: AtomicBool,
    error: Mutex<Option<anyhow::Error>>,
    /// Receivers that got START / finished, and the last finish time.
    state: Mutex<(usize, usize, Option<Instant>)>,
    state_cv: Condvar,
    go: Mutex<bool>,
    go_cv: Condvar,
    turns: Vec<(Mutex<Turn>, Condvar)>,
    /// Calls made by the threads, added as each ends.
    sends: AtomicU64,
    recvs: AtomicU64,
}

impl Shared {
    fn fail(&self, e: anyhow::Error) {
        let mut g = self.error.lock().unwrap_or_else(|e| e.into_inner());
        if g.is_none() {
            *g = Some(e);
        }
        drop(g);
        self.abort.store(true, Ordering::SeqCst);
        self.state_cv.notify_all();
        self.go_cv.notify_all();
        for (_, cv) in &self.turns {
            cv.notify_all();
        }
    }
    fn aborted(&self) -> bool {
        self.abort.load(Ordering::SeqCst)
    }
}

/// One chat run against the server at `addr`.
pub(crate) fn run_chat(addr: SocketAddr, spec: &ChatSpec) -> Result<ChatOutcome> {
    if spec.users < 2 || spec.rooms < 1 || spec.messages < 1 {
        bail!("a chat needs at least 1 room of 2 users sending 1 message");
    }
    let conns = (spec.rooms * spec.users) as usize;
    let run_id: u64 = rand::random();
    let shared = Arc::new(Shared {
        abort: AtomicBool::new(false),
        error: Mutex::new(None),
        state: Mutex::new((0, 0, None)),
        state_cv: Condvar::new(),
        go: Mutex::new(false),
        go_cv: Condvar::new(),
        turns: (0..spec.rooms).map(|_| (Mutex::new(Turn::default()), Condvar::new())).collect(),
        sends: AtomicU64::new(0),
        recvs: AtomicU64::new(0),
    });
    let mut socks: Vec<Arc<TcpStream>> = Vec::with_capacity(conns);
    let mut threads: Vec<JoinHandle<()>> = Vec::with_capacity(2 * conns);
    let r = drive(addr, spec, run_id, &shared, &mut socks, &mut threads);
    if r.is_err() || shared.aborted() {
        shared.abort.store(true, Ordering::SeqCst);
        for s in &socks {
            let _ = s.shutdown(Shutdown::Both);
        }
        shared.go_cv.notify_all();
        for (_, cv) in &shared.turns {
            cv.notify_all();
        }
    }
    for t in threads {
        let _ = t.join();
    }
    let thread_err = shared.error.lock().unwrap_or_else(|e| e.into_inner()).take();
    match (r, thread_err) {
        (Ok(mut out), None) => {
            out.client_sends = shared.sends.load(Ordering::SeqCst);
            out.client_recvs = shared.recvs.load(Ordering::SeqCst);
            Ok(out)
        }
        (Ok(_), Some(e)) => Err(e),
        (Err(e), Some(t)) => Err(t.context(format!("{e:#}"))),
        (Err(e), None) => Err(e),
    }
}

fn drive(
    addr: SocketAddr,
    spec: &ChatSpec,
    run_id: u64,
    shared: &Arc<Shared>,
    socks: &mut Vec<Arc<TcpStream>>,
    threads: &mut Vec<JoinHandle<()>>,
) -> Result<ChatOutcome> {
    let conns = (spec.rooms * spec.users) as usize;
    for room in 0..spec.rooms {
        for user in 0..spec.users {
            let s = Arc::new(connect_user(addr, spec, run_id, room, user, socks.len())?);
            socks.push(s.clone());
            spawn_user(s, shared, spec, room, user, threads)?;
            if shared.aborted() {
                bail!("the chat run failed while connecting");
            }
        }
    }
    wait_started(shared, spec, conns)?;
    let start = Instant::now();
    *shared.go.lock().unwrap_or_else(|e| e.into_inner()) = true;
    shared.go_cv.notify_all();
    let end = wait_finished(shared, spec, conns)?;
    // Every message has arrived, so the server has made (and counted) every
    // call for the run; ask before the room connections close.
    let server = server_counts(addr, run_id, spec.timeout);
    let sent = conns as u64 * spec.messages as u64;
    Ok(ChatOutcome {
        sent,
        received: sent * (spec.users as u64 - 1),
        elapsed: end.saturating_duration_since(start),
        client_sends: 0,
        client_recvs: 0,
        server,
    })
}

/// Connect user `user` of room `room` (after `made` connections) and send
/// its HELLO.
fn connect_user(
    addr: SocketAddr,
    spec: &ChatSpec,
    run_id: u64,
    room: u32,
    user: u32,
    made: usize,
) -> Result<TcpStream> {
    let conns = (spec.rooms * spec.users) as usize;
    let s = TcpStream::connect_timeout(&addr, spec.timeout)
        .with_context(|| format!("connecting to the chat server at {addr} (connection {} of {conns})", made + 1))?;
    s.set_nodelay(spec.nodelay)?;
    s.set_read_timeout(Some(spec.timeout))?;
    s.set_write_timeout(Some(spec.timeout))?;
    let hello = proto::encoded(&Frame::Hello {
        run: run_id,
        rooms: spec.rooms,
        users: spec.users,
        room,
        user,
        size: spec.size.max(proto::MIN_MSG as u32),
        relay: proto::relay_field(spec.relay, spec.nodelay),
    });
    (&s).write_all_ctx(&hello)?;
    Ok(s)
}

/// Start a user's receiving thread, then its sending thread, on socket `s`.
/// A thread's error fails the run unless the run was already aborted (then
/// it is only the echo of the shutdown).
fn spawn_user(
    s: Arc<TcpStream>,
    shared: &Arc<Shared>,
    spec: &ChatSpec,
    room: u32,
    user: u32,
    threads: &mut Vec<JoinHandle<()>>,
) -> Result<()> {
    type Side = fn(&TcpStream, &Shared, &ChatSpec, u32, u32) -> Result<()>;
    for (who, doing, run) in [("receiver", "receiving", receiver as Side), ("sender", "sending", sender)] {
        let (s, sh, sp) = (s.clone(), shared.clone(), spec.clone());
        threads.push(
            std::thread::Builder::new()
                .stack_size(STACK)
                .spawn(move || {
                    if let Err(e) = run(&s, &sh, &sp, room, user) {
                        if !sh.aborted() {
                            sh.fail(e.context(format!("{who} of room {room} user {user}")));
                        }
                    }
                })
                .with_context(|| format!("starting a {doing} thread (thread limits?)"))?,
        );
    }
    Ok(())
}

/// Every connection set up: wait for every START, at most the run's timeout.
fn wait_started(shared: &Shared, spec: &ChatSpec, conns: usize) -> Result<()> {
    let deadline = Instant::now() + spec.timeout;
    {
        let mut st = shared.state.lock().unwrap_or_else(|e| e.into_inner());
        while st.0 < conns && !shared.aborted() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!("only {} of {conns} connections got START from the server within {:?}", st.0, spec.timeout);
            }
            st = shared.state_cv.wait_timeout(st, left).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
    if shared.aborted() {
        bail!("the chat run failed before the start");
    }
    Ok(())
}

/// Wait for every receiver and return when the last message arrived. The
/// silence timeout applies to the whole run's progress (twice the socket
/// timeout without a receiver finishing); each receiver also has its socket
/// timeout.
fn wait_finished(shared: &Shared, spec: &ChatSpec, conns: usize) -> Result<Instant> {
    let mut st = shared.state.lock().unwrap_or_else(|e| e.into_inner());
    let mut last_done = st.1;
    let mut progress = Instant::now();
    while st.1 < conns && !shared.aborted() {
        st = shared.state_cv.wait_timeout(st, Duration::from_millis(200)).unwrap_or_else(|e| e.into_inner()).0;
        if st.1 != last_done {
            last_done = st.1;
            progress = Instant::now();
        } else if progress.elapsed() > spec.timeout * 2 {
            bail!("{} of {conns} receivers finished, none for {:?}", st.1, progress.elapsed());
        }
    }
    if shared.aborted() {
        bail!("the chat run failed after {} of {conns} receivers had finished", st.1);
    }
    Ok(st.2.unwrap_or_else(Instant::now))
}

/// Ask the server for its counts of run `run` (STATS?) on a connection of
/// its own; `None` if it does not answer with STATS (a server that does not
/// know the frame closes the connection).
pub(crate) fn server_counts(addr: SocketAddr, run: u64, timeout: Duration) -> Option<ServerCounts> {
    let s = TcpStream::connect_timeout(&addr, timeout).ok()?;
    s.set_read_timeout(Some(timeout)).ok()?;
    s.set_write_timeout(Some(timeout)).ok()?;
    (&s).write_all_ctx(&proto::encoded(&Frame::StatsRequest { run })).ok()?;
    let mut buf = Vec::new();
    let mut r = &s;
    match proto::read_frame(&mut r, &mut buf) {
        Ok(true) => match proto::parse_body(&buf[4..]) {
            Ok(Frame::Stats { seats, sends, recvs }) => Some(ServerCounts { seats, sends, recvs }),
            _ => None,
        },
        _ => None,
    }
}

trait WriteCtx {
    fn write_all_ctx(self, b: &[u8]) -> Result<()>;
}

impl WriteCtx for &TcpStream {
    fn write_all_ctx(mut self, b: &[u8]) -> Result<()> {
        use std::io::Write;
        self.write_all(b).map_err(|e| anyhow!("writing to the chat server: {e} (did the server die?)"))
    }
}

/// A thread's count of calls, added to the run's total when the thread
/// is done, however it ends.
struct Tally<'a>(&'a AtomicU64, u64);

impl Drop for Tally<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(self.1, Ordering::SeqCst);
    }
}

fn sender(s: &TcpStream, sh: &Shared, spec: &ChatSpec, room: u32, user: u32) -> Result<()> {
    {
        let mut go = sh.go.lock().unwrap_or_else(|e| e.into_inner());
        while !*go {
            if sh.aborted() {
                return Ok(());
            }
            go = sh.go_cv.wait_timeout(go, Duration::from_millis(100)).unwrap_or_else(|e| e.into_inner()).0;
        }
    }
    let mut buf = Vec::with_capacity(spec.size as usize + 8);
    let (lock, cv) = &sh.turns[room as usize];
    let mut calls = Tally(&sh.sends, 0);
    for seq in 0..spec.messages {
        if sh.aborted() {
            return Ok(());
        }
        if spec.pacing == Pacing::Room {
            let mine = seq as u64 * spec.users as u64 + user as u64;
            let mut t = lock.lock().unwrap_or_else(|e| e.into_inner());
            while t.turn != mine {
                if sh.aborted() {
                    return Ok(());
                }
                t = cv.wait_timeout(t, Duration::from_millis(100)).unwrap_or_else(|e| e.into_inner()).0;
            }
        }
        buf.clear();
        proto::encode(&Frame::Msg { from: user, seq, size: spec.size }, &mut buf);
        proto::send_whole(s, &buf, &mut calls.1)
            .map_err(|e| anyhow!("writing to the chat server: {e} (did the server die?)"))?;
    }
    Ok(())
}

fn receiver(s: &TcpStream, sh: &Shared, spec: &ChatSpec, room: u32, user: u32) -> Result<()> {
    let mut buf = Vec::with_capacity(spec.size as usize + 8);
    let closed = closed_after;
    let io = |e: std::io::Error, got: u64| read_failed(e, got, spec.timeout);
    read_start(s, &mut buf, spec.timeout)?;
    {
        let mut st = sh.state.lock().unwrap_or_else(|e| e.into_inner());
        st.0 += 1;
        sh.state_cv.notify_all();
    }
    let want = (spec.users as u64 - 1) * spec.messages as u64;
    let mut next = vec![0u32; spec.users as usize];
    let (lock, cv) = &sh.turns[room as usize];
    let size = spec.size.max(proto::MIN_MSG as u32);
    buf.resize(proto::msg_frame_len(size), 0);
    let mut calls = Tally(&sh.recvs, 0);
    for got in 0..want {
        match proto::recv_whole(s, &mut buf, &mut calls.1) {
            Ok(true) => {}
            Ok(false) => {
                if sh.aborted() {
                    return Ok(());
                }
                return Err(closed(got, want));
            }
            Err(e) => {
                if sh.aborted() {
                    return Ok(());
                }
                return Err(io(e, got));
            }
        }
        let (from, seq) = match proto::parse_msg(&buf, size) {
            Ok(Frame::Msg { from, seq, .. }) => (from, seq),
            other => bail!(
                "expected a message of {} bytes, got {other:?} (with relay=each, messages from two senders can interleave when a receiver's socket buffer fills)",
                spec.size
            ),
        };
        if from >= spec.users || from == user || next[from as usize] != seq || seq >= spec.messages {
            bail!("got message {seq} from user {from}; expected from another user of {} the next in order", spec.users);
        }
        next[from as usize] += 1;
        if spec.pacing == Pacing::Room {
            room_receipt(lock, cv, spec.users);
        }
    }
    for (u, &n) in next.iter().enumerate() {
        if u as u32 != user && n != spec.messages {
            bail!("got {n} messages from user {u}, expected {}", spec.messages);
        }
    }
    let mut st = sh.state.lock().unwrap_or_else(|e| e.into_inner());
    st.1 += 1;
    let now = Instant::now();
    st.2 = Some(st.2.map_or(now, |t| t.max(now)));
    sh.state_cv.notify_all();
    Ok(())
}

/// The server closed a room connection after `got` of `want` messages.
fn closed_after(got: u64, want: u64) -> anyhow::Error {
    anyhow!("the server closed the connection after {got} of {want} messages (did the server die?)")
}

/// A read from the server failed after `got` messages: the socket timeout
/// (`timeout`) or another error.
fn read_failed(e: std::io::Error, got: u64, timeout: Duration) -> anyhow::Error {
    if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) {
        anyhow!("no message from the server for {timeout:?} after {got} messages")
    } else {
        anyhow!("reading from the chat server after {got} messages: {e} (did the server die?)")
    }
}

/// Read the server's START, the first frame on a room connection.
fn read_start(s: &TcpStream, buf: &mut Vec<u8>, timeout: Duration) -> Result<()> {
    let mut r = s;
    match proto::read_frame(&mut r, buf) {
        Ok(true) => match proto::parse_body(&buf[4..]) {
            Ok(Frame::Start) => Ok(()),
            other => bail!("expected START from the server, got {other:?}"),
        },
        Ok(false) => Err(closed_after(0, 0).context("the server refused or dropped the connection before START")),
        Err(e) => Err(read_failed(e, 0, timeout)),
    }
}

/// With room pacing, count one receipt of the room's current turn; the last
/// of its `users - 1` receivers starts the next turn.
#[inline]
fn room_receipt(lock: &Mutex<Turn>, cv: &Condvar, users: u32) {
    let mut t = lock.lock().unwrap_or_else(|e| e.into_inner());
    t.receipts += 1;
    if t.receipts == users - 1 {
        t.receipts = 0;
        t.turn += 1;
        cv.notify_all();
    }
}
