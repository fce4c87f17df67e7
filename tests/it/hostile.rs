//! Hostile clients against `kdelta serve`: the servers' memory, threads and
//! connections stay bounded (issue 15). Each check runs light here (tens of
//! MB, 100 connections, timeouts of a second or two); the `#[ignore]`d
//! `full_size_bars` runs the bars at full size and prints the figures:
//! `cargo test --release --test it hostile:: -- --ignored --nocapture`.
//!
//! Server memory is read from `/proc/PID/status` (VmRSS sampled while the
//! clients work, VmHWM at the end). Limits are generous: the checks are of
//! bounds, not of speed.

use kdelta::testing::chat::proto::{self, Frame, Relay};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A `kdelta serve` process, its address, and its stderr gathered.
struct Served {
    child: Child,
    addr: SocketAddr,
    err: Arc<Mutex<String>>,
}

impl Served {
    fn start(args: &[&str]) -> Served {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kdelta"))
            .arg("serve")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting kdelta serve");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut head = String::new();
        let addr = loop {
            let Some(Ok(l)) = lines.next() else { panic!("kdelta serve ended before listening: {head}") };
            head.push_str(&l);
            head.push('\n');
            if let Some(rest) = l.split(" listening on ").nth(1) {
                break rest.split_whitespace().next().unwrap().parse().unwrap();
            }
        };
        let err = Arc::new(Mutex::new(head));
        let e2 = err.clone();
        std::thread::spawn(move || {
            for l in lines.map_while(Result::ok) {
                let mut e = e2.lock().unwrap();
                e.push_str(&l);
                e.push('\n');
            }
        });
        Served { child, addr, err }
    }

    fn status(&self, field: &str) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        s.lines()
            .find(|l| l.starts_with(field))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// Stop with SIGTERM, wait, and return everything it said.
    fn stop(mut self) -> String {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
        std::thread::sleep(Duration::from_millis(100));
        let e = self.err.lock().unwrap().clone();
        e
    }
}

/// Sample a field of the server's status (`VmRSS:`, `Threads:`) every 50 ms
/// until `done`; the largest.
fn sample(pid: u32, field: &'static str, done: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let mut max = 0;
        while !done.load(Ordering::SeqCst) {
            let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            if let Some(kb) = s
                .lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
            {
                max = u64::max(max, kb);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        max
    })
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s
}

fn hello(s: &mut TcpStream, run: u64, rooms: u32, users: u32, room: u32, user: u32, size: u32) {
    s.write_all(&proto::encoded(&Frame::Hello { run, rooms, users, room, user, size, relay: Relay::Each.code() }))
        .unwrap();
}

fn read_frame(s: &mut TcpStream) -> Frame {
    let mut buf = Vec::new();
    assert!(proto::read_frame(s, &mut buf).unwrap(), "connection closed");
    proto::parse_body(&buf[4..]).unwrap()
}

fn raise_nofile() {
    let _ = kdelta::testing::chat::raise_nofile();
}

/// A member that never reads while another sends `total` bytes (more than
/// `max_kb`, so a server that buffered it would fail): the server
/// stays under `max_kb`, a pair in another run keeps exchanging, the sender
/// gets through (the silent member is dropped after the write timeout).
fn silent_member(model: &str, total: u64, max_kb: u64) -> (u64, u64, String) {
    let sv = Served::start(&["chat", "--param", &format!("server_model={model}"), "--write-timeout", "2s"]);
    let size = 60_000u32;
    let (mut sender, mut silent) = (connect(sv.addr), connect(sv.addr));
    hello(&mut sender, 1, 1, 2, 0, 0, size);
    hello(&mut silent, 1, 1, 2, 0, 1, size);
    assert_eq!(read_frame(&mut sender), Frame::Start);
    let (mut g0, mut g1) = (connect(sv.addr), connect(sv.addr));
    hello(&mut g0, 2, 1, 2, 0, 0, 100);
    hello(&mut g1, 2, 1, 2, 0, 1, 100);
    assert_eq!(read_frame(&mut g0), Frame::Start);
    assert_eq!(read_frame(&mut g1), Frame::Start);
    let done = Arc::new(AtomicBool::new(false));
    let rss = sample(sv.child.id(), "VmRSS:", done.clone());
    let sent = Arc::new(AtomicU64::new(0));
    let push = {
        let sent = sent.clone();
        std::thread::spawn(move || {
            let msg = proto::encoded(&Frame::Msg { from: 0, seq: 0, size });
            while sent.load(Ordering::Relaxed) < total {
                if sender.write_all(&msg).is_err() {
                    break;
                }
                sent.fetch_add(msg.len() as u64, Ordering::Relaxed);
            }
        })
    };
    // The other run is served all along.
    let t0 = Instant::now();
    let mut rounds = 0u32;
    while !push.is_finished() || rounds < 20 {
        assert!(t0.elapsed() < Duration::from_secs(600), "the sender did not get through");
        g0.write_all(&proto::encoded(&Frame::Msg { from: 0, seq: rounds, size: 100 })).unwrap();
        match read_frame(&mut g1) {
            Frame::Msg { from: 0, seq, .. } => assert_eq!(seq, rounds),
            f => panic!("unexpected {f:?}"),
        }
        rounds += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    push.join().unwrap();
    done.store(true, Ordering::SeqCst);
    let rss_kb = rss.join().unwrap();
    let hwm_kb = sv.status("VmHWM:");
    drop(silent);
    let said = sv.stop();
    assert!(sent.load(Ordering::Relaxed) >= total, "sent {} of {total}", sent.load(Ordering::Relaxed));
    assert!(
        rss_kb < max_kb && hwm_kb < max_kb,
        "{model}: server RSS {rss_kb} KB, peak {hwm_kb} KB (limit {max_kb} KB)\n{said}"
    );
    assert!(said.contains("dropped 1 slow receivers"), "{said}");
    println!("chat {model}: silent member, {} MB sent, other run served {rounds} times: server VmRSS max {rss_kb} KB, VmHWM {hwm_kb} KB", total >> 20);
    (rss_kb, hwm_kb, said)
}

/// `n` HELLOs, each for its own run of 256 x 256 seats: the server stays
/// under `max_kb`, runs past the cap are refused, a small run still works.
fn large_hellos(model: &str, n: u32, max_kb: u64) -> (u64, String) {
    raise_nofile();
    let sv = Served::start(&["chat", "--param", &format!("server_model={model}")]);
    let mut conns = Vec::new();
    for i in 0..n {
        let mut c = connect(sv.addr);
        hello(&mut c, 1000 + i as u64, 256, 256, 255, 255, 65_000);
        conns.push(c);
    }
    // A small run is still served.
    let (mut a, mut b) = (connect(sv.addr), connect(sv.addr));
    // Wait until the server has seen every HELLO (refusals close at once).
    std::thread::sleep(Duration::from_millis(500));
    let hwm_kb = sv.status("VmHWM:");
    drop(conns);
    std::thread::sleep(Duration::from_millis(500));
    hello(&mut a, 7, 1, 2, 0, 0, 100);
    hello(&mut b, 7, 1, 2, 0, 1, 100);
    assert_eq!(read_frame(&mut a), Frame::Start);
    let said = sv.stop();
    assert!(hwm_kb < max_kb, "{model}: peak RSS {hwm_kb} KB after {n} large HELLOs (limit {max_kb} KB)\n{said}");
    if n > 64 {
        assert!(said.contains(&format!("refused {} HELLOs", n - 64)), "{said}");
    }
    println!("chat {model}: {n} HELLOs announcing 256 x 256 seats: server VmHWM {hwm_kb} KB");
    (hwm_kb, said)
}

/// `n` connections to the tbench server that send nothing, with a cap of
/// `cap` and an idle timeout of `idle`: the server's threads stay under the
/// cap, the rest are refused, the idle ones closed.
fn idle_tbench(n: usize, cap: usize, idle: &str) -> (u64, u64, String) {
    raise_nofile();
    let sv = Served::start(&["tbench", "--idle-timeout", idle, "--max-conns", &cap.to_string()]);
    let done = Arc::new(AtomicBool::new(false));
    let most = sample(sv.child.id(), "Threads:", done.clone());
    let conns: Vec<TcpStream> = (0..n).map(|_| connect(sv.addr)).collect();
    std::thread::sleep(Duration::from_millis(300));
    let hwm_kb = sv.status("VmHWM:");
    // Every one is closed by the server: refused at once or idle later.
    for mut c in conns {
        let mut b = [0u8; 1];
        match c.read(&mut b) {
            Ok(0) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            r => panic!("connection not closed by the server: {r:?}"),
        }
    }
    // Threads gone again (give the workers their tick to end).
    std::thread::sleep(Duration::from_millis(500));
    done.store(true, Ordering::SeqCst);
    let threads = most.join().unwrap();
    let after = sv.status("Threads:");
    let said = sv.stop();
    assert!(threads <= cap as u64 + 8, "{threads} threads for {n} connections with a cap of {cap}\n{said}");
    assert!(after <= 8, "{after} threads left after the idle timeout\n{said}");
    // Connecting many takes longer than the idle timeout: some accepted
    // ones are closed idle before the last connects, making room. Every one
    // is refused or closed idle.
    let count = |before: &str| -> usize {
        let at = said.find(before).unwrap_or_else(|| panic!("no {before:?} in {said}"));
        said[..at]
            .rsplit(' ')
            .nth(1)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no count before {before:?} in {said}"))
    };
    let (refused, idle) = (count("(connection cap)"), count("idle,"));
    assert_eq!(refused + idle, n, "{said}");
    assert!(idle >= cap.min(n), "{said}");
    println!("tbench: {n} idle connections, cap {cap}: {refused} refused, {idle} closed idle, {threads} server threads at most, {after} after the idle timeout, VmHWM {hwm_kb} KB");
    (threads, hwm_kb, said)
}

#[test]
fn a_silent_member_costs_bounded_memory_threads() {
    silent_member("threads", 50 << 20, 40 << 10);
}

#[test]
fn a_silent_member_costs_bounded_memory_events() {
    silent_member("events", 50 << 20, 40 << 10);
}

#[test]
fn large_hellos_cost_what_arrives() {
    for model in ["threads", "events"] {
        large_hellos(model, 100, 64 << 10);
    }
}

#[test]
fn idle_tbench_connections_are_capped_and_closed() {
    idle_tbench(100, 50, "1s");
}

#[test]
fn public_addresses_need_public() {
    let out =
        Command::new(env!("CARGO_BIN_EXE_kdelta")).args(["serve", "chat", "--listen", "0.0.0.0:0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--public") && err.contains("no authentication"), "{err}");
    let sv = Served::start(&["tbench", "--listen", "0.0.0.0:0", "--public"]);
    let said = sv.stop();
    assert!(said.contains("warning") && said.contains("no authentication"), "{said}");
    let help = Command::new(env!("CARGO_BIN_EXE_kdelta")).args(["serve", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for flag in ["--max-conns", "--max-runs", "--idle-timeout", "--write-timeout", "--public", "256 KiB"] {
        assert!(help.contains(flag), "serve --help lacks {flag}");
    }
}

/// The bars of issue 15 at full size; the helpers print the figures.
#[test]
#[ignore]
fn full_size_bars() {
    for model in ["threads", "events"] {
        silent_member(model, 1 << 30, 100 << 10);
        large_hellos(model, 500, 64 << 10);
    }
    idle_tbench(2000, 1000, "10s");
}
