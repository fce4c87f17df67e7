//! The token ring shared by `lat.ctx` (processes) and `thread.ctx` (threads or
//! processes): LMbench's lat_ctx method.
//!
//! N members sit in a ring of N pipes; member `i` reads the token from pipe
//! `i - 1`, sums its own `size` bytes of data, and writes the token to pipe `i`.
//! Member 0 is the measuring thread itself. One round is N hops, each a context
//! switch plus one pipe write, one pipe read and one pass over a buffer. That
//! overhead is measured apart, in one thread that writes and reads N other pipes
//! and sums one (hot) buffer per hop, and subtracted, so the figure left is the
//! cost of the switch itself, including the cache misses of bringing a
//! member's working set back, as lat_ctx reports it.
//!
//! Process members are forked children that only read, write, loop over memory
//! and `_exit` (async-signal-safe, so forking from a threaded test process is
//! fine). They keep only their two pipe ends open, so a member that dies breaks
//! the ring with an end-of-file instead of a hang, and they die with the parent
//! (`crate::child::fork`). Every member is joined, or killed (SIGKILL: a
//! member holds nothing worth a clean end) and reaped on drop.

use crate::child::Child;
use anyhow::{bail, Context, Result};
use nix::fcntl::OFlag;
use nix::sys::signal::Signal;
use nix::unistd::pipe2;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Help for the `size` parameter of the ring benchmarks.
pub(crate) const SIZE_HELP: &str = "KB of private data each member sums per hop (LMbench -s)";

/// How the members of the ring run (`thread.ctx`'s `model`): the one
/// `model=threads|processes` of every family.
pub(crate) use crate::bench::Tasks as Model;

const RUN: u32 = 1;
const STOP: u32 = 0;

/// A member's private data, filled with a non-zero pattern so every page is
/// really its own (zero-filled memory would all map the one zero page).
fn member_data(size: usize, seed: usize) -> Vec<u64> {
    (0..size / 8).map(|i| (i as u64).wrapping_mul(2654435761).wrapping_add(seed as u64 + 1)).collect()
}

/// Read every word of the buffer (lat_ctx's "sum the data").
#[inline]
fn touch(data: &[u64]) -> u64 {
    let mut s = 0u64;
    for w in data {
        s = s.wrapping_add(*w);
    }
    std::hint::black_box(s)
}

fn write_token(fd: RawFd, tok: u32) -> std::io::Result<()> {
    let b = tok.to_ne_bytes();
    loop {
        // SAFETY: b is a valid 4-byte buffer for the duration of the call.
        let r = unsafe { libc::write(fd, b.as_ptr().cast(), b.len()) };
        if r == b.len() as isize {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if r < 0 && e.kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        return Err(if r < 0 { e } else { std::io::Error::new(std::io::ErrorKind::WriteZero, "short token write") });
    }
}

/// Read one token; `Ok(None)` at end of file (the ring was broken).
fn read_token(fd: RawFd) -> std::io::Result<Option<u32>> {
    let mut b = [0u8; 4];
    loop {
        // SAFETY: b is a valid, writable 4-byte buffer for the duration of the call.
        let r = unsafe { libc::read(fd, b.as_mut_ptr().cast(), b.len()) };
        if r == 4 {
            return Ok(Some(u32::from_ne_bytes(b)));
        }
        if r == 0 {
            return Ok(None);
        }
        let e = std::io::Error::last_os_error();
        if r < 0 && e.kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        // Tokens are written whole (4 bytes < PIPE_BUF), so a short read is a bug.
        return Err(if r < 0 { e } else { std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "short token read") });
    }
}

/// The loop every non-master member runs: forward tokens until STOP or EOF.
fn member_loop(rd: RawFd, wr: RawFd, data: &[u64]) {
    loop {
        match read_token(rd) {
            Ok(Some(tok)) => {
                touch(data);
                if write_token(wr, tok).is_err() || tok == STOP {
                    return;
                }
            }
            _ => return,
        }
    }
}

fn pipes(n: usize) -> Result<Vec<(OwnedFd, OwnedFd)>> {
    (0..n).map(|_| pipe2(OFlag::O_CLOEXEC).context("creating a pipe for the token ring")).collect()
}

/// A running ring of `members` members (the caller is member 0).
pub(crate) struct Ring {
    /// Pipe i carries the token from member i to member i+1 (mod N). Thread
    /// rings keep them all (the threads use them); process rings keep only
    /// the master's two ends, so a dead member shows as end-of-file.
    pipes: Vec<(Option<OwnedFd>, Option<OwnedFd>)>,
    /// The master's ends: read from pipe N-1, write to pipe 0.
    rd: RawFd,
    wr: RawFd,
    threads: Vec<JoinHandle<()>>,
    children: Vec<Child>,
    /// Thread or process ids of the other members.
    pub(crate) tids: Vec<i32>,
    master_data: Vec<u64>,
    members: usize,
}

impl Ring {
    /// Start `members` (>= 2) members, each touching `size` bytes per hop.
    pub(crate) fn new(model: Model, members: usize, size: usize) -> Result<Ring> {
        if members < 2 {
            bail!("a token ring needs at least 2 members, got {members}");
        }
        let ps: Vec<(Option<OwnedFd>, Option<OwnedFd>)> =
            pipes(members)?.into_iter().map(|(r, w)| (Some(r), Some(w))).collect();
        let rd = ps[members - 1].0.as_ref().map(|f| f.as_raw_fd()).unwrap_or(-1);
        let wr = ps[0].1.as_ref().map(|f| f.as_raw_fd()).unwrap_or(-1);
        let mut ring = Ring {
            pipes: ps,
            rd,
            wr,
            threads: Vec::new(),
            children: Vec::new(),
            tids: Vec::new(),
            master_data: member_data(size, 0),
            members,
        };
        match model {
            Model::Threads => ring.start_threads(size)?,
            Model::Processes => {
                ring.start_processes(size)?;
                for (i, (r, w)) in ring.pipes.iter_mut().enumerate() {
                    if i != members - 1 {
                        r.take();
                    }
                    if i != 0 {
                        w.take();
                    }
                }
            }
        }
        // One round to check the ring is whole (and fault in every buffer).
        ring.rounds(1)?;
        Ok(ring)
    }

    /// Member i's read and write ends (while all pipes are still held).
    fn ends(&self, i: usize) -> (RawFd, RawFd) {
        let prev = (i + self.members - 1) % self.members;
        let raw = |f: &Option<OwnedFd>| f.as_ref().map(|f| f.as_raw_fd()).unwrap_or(-1);
        (raw(&self.pipes[prev].0), raw(&self.pipes[i].1))
    }

    fn start_threads(&mut self, size: usize) -> Result<()> {
        for i in 1..self.members {
            let (rd, wr) = self.ends(i);
            let data = member_data(size, i);
            let (tx, rx) = std::sync::mpsc::channel();
            let h = std::thread::Builder::new()
                .name(format!("ring{i}"))
                .stack_size(64 << 10)
                .spawn(move || {
                    let _ = tx.send(nix::unistd::gettid().as_raw());
                    member_loop(rd, wr, &data)
                })
                .with_context(|| format!("starting ring thread {i} of {} (thread limits?)", self.members))?;
            self.threads.push(h);
            if let Ok(tid) = rx.recv() {
                self.tids.push(tid);
            }
        }
        Ok(())
    }

    fn start_processes(&mut self, size: usize) -> Result<()> {
        // Everything the children touch is prepared before the first fork.
        let datas: Vec<Vec<u64>> = (1..self.members).map(|i| member_data(size, i)).collect();
        let all: Vec<RawFd> =
            self.pipes.iter().flat_map(|(r, w)| [r, w]).filter_map(|f| f.as_ref().map(|f| f.as_raw_fd())).collect();
        for i in 1..self.members {
            let (rd, wr) = self.ends(i);
            let data = &datas[i - 1];
            // SAFETY: the child only calls async-signal-safe functions (close,
            // read, write) and reads memory prepared before the fork.
            let child = unsafe {
                crate::child::fork(|| {
                    for &fd in &all {
                        if fd != rd && fd != wr {
                            libc::close(fd);
                        }
                    }
                    member_loop(rd, wr, data);
                    0
                })
            }
            .context("fork for a ring member")?;
            self.tids.push(child.pid().as_raw());
            self.children.push(child.stop_signal(Signal::SIGKILL, crate::child::GRACE));
        }
        Ok(())
    }

    /// Pass the token `n` times round the ring; the time it took.
    pub(crate) fn rounds(&mut self, n: u64) -> Result<Duration> {
        let (rd, wr) = (self.rd, self.wr);
        let t = Instant::now();
        for _ in 0..n {
            write_token(wr, RUN).context("ring: writing the token")?;
            match read_token(rd).context("ring: reading the token")? {
                Some(RUN) => {}
                Some(other) => bail!("ring: unexpected token {other}"),
                None => bail!("ring broken: a member exited"),
            }
            touch(&self.master_data);
        }
        Ok(t.elapsed())
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        crate::child::stop_all(&mut self.children);
        if !self.threads.is_empty() {
            let wr = self.wr;
            // Each thread forwards STOP and returns; the last write lands in
            // the master's pipe, which nobody reads any more.
            let _ = write_token(wr, STOP);
            for h in self.threads.drain(..) {
                let _ = h.join();
            }
        }
    }
}

/// Seconds of overhead per hop that are not a context switch: one pipe write,
/// one pipe read and one pass over `size` hot bytes, done `members` at a time
/// in this thread over pipes of its own. `n` rounds of `members` hops.
pub(crate) fn overhead_rounds(members: usize, size: usize, n: u64) -> Result<Duration> {
    let ps = pipes(members)?;
    let data = member_data(size, 0);
    let t = Instant::now();
    for _ in 0..n {
        for (r, w) in &ps {
            write_token(w.as_raw_fd(), RUN)?;
            read_token(r.as_raw_fd())?;
            touch(&data);
        }
    }
    Ok(t.elapsed())
}

/// The median overhead per hop in seconds, each trial lasting about `target`.
pub(crate) fn overhead_per_hop(members: usize, size: usize, target: Duration) -> Result<f64> {
    let mut n = 1u64;
    loop {
        let d = overhead_rounds(members, size, n)?;
        if d >= target / 4 || n >= 1 << 30 {
            break;
        }
        n *= 2;
    }
    let mut v = Vec::new();
    for _ in 0..5 {
        let d = overhead_rounds(members, size, n)?;
        v.push(d.as_secs_f64() / (n as f64 * members as f64));
    }
    v.sort_by(|a, b| a.total_cmp(b));
    Ok(v[v.len() / 2])
}

/// Run a ring benchmark through the sampler: microseconds per context switch,
/// overhead subtracted. Records `overhead_us` and `hop_us` (raw median) too.
pub(crate) fn measure_ctx(s: &mut crate::bench::Sampler, model: Model, members: usize, size_kb: usize) -> Result<()> {
    let size = size_kb * 1024;
    let overhead = overhead_per_hop(members, size, s.target().max(Duration::from_millis(1)))?;
    let mut ring = Ring::new(model, members, size)?;
    s.peers(&ring.tids);
    s.net_of_overhead();
    let hops = members as f64;
    s.measure(
        |n| ring.rounds(n),
        |n, t| {
            let per_hop = t / (n as f64 * hops);
            per_hop * 1e6 - overhead * 1e6
        },
    )?;
    drop(ring);
    s.extra("overhead_us", overhead * 1e6);
    s.extra("members", members as u64);
    s.extra("model", crate::model::params::Choice::name(model));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_ring_turns_and_stops() {
        let mut r = Ring::new(Model::Threads, 4, 4096).unwrap();
        assert!(r.rounds(50).unwrap() > Duration::ZERO);
        drop(r);
    }

    #[test]
    fn process_ring_turns_and_reaps() {
        let mut r = Ring::new(Model::Processes, 3, 1024).unwrap();
        r.rounds(20).unwrap();
        let kids: Vec<_> = r.children.iter().map(|c| c.pid()).collect();
        drop(r);
        for k in kids {
            assert!(!crate::sys::task::exists(k.as_raw()), "child {k} not reaped");
        }
    }

    #[test]
    fn broken_process_ring_fails_instead_of_hanging() {
        let mut r = Ring::new(Model::Processes, 3, 0).unwrap();
        let mut first = r.children.remove(0);
        nix::sys::signal::kill(first.pid(), Signal::SIGKILL).unwrap();
        let _ = first.wait();
        assert!(r.rounds(10).is_err());
    }

    #[test]
    fn overhead_is_positive() {
        let o = overhead_per_hop(3, 2048, Duration::from_millis(1)).unwrap();
        assert!(o > 0.0 && o.is_finite());
    }
}
