//! Round trips between two processes: `lat.pipe` (a token over a pair of
//! pipes, as LMbench's lat_pipe and `perf bench sched pipe`), `lat.unix`
//! (an AF_UNIX stream socketpair) and `lat.tcp` (loopback TCP with
//! TCP_NODELAY). The figure is one round trip: send, and read the echo.
//!
//! On a machine where an idle CPU halts, a round trip whose two tasks sit on
//! different CPUs pays two cross-CPU wake-ups; with both on one CPU it pays
//! two context switches. Run under `up` and a multi-CPU configuration to see
//! both; a result mixing them is flagged as two clusters.

use super::{os_err, time_n};
use crate::bench::{BenchInfo, Benchmark, Better, ParamKind, ParamSpec, Params, Sampler, Simple};
use crate::child::Child;
use anyhow::{bail, Context, Result};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The echoing child; closing our ends makes it exit, and dropping stops
/// (SIGKILL, see [`fork_child`]) and reaps it.
struct Echo {
    child: Child,
    rfd: Option<OwnedFd>,
    wfd: Option<OwnedFd>,
}

impl Drop for Echo {
    fn drop(&mut self) {
        // Our ends first; `child` is dropped after this, by the stop rule.
        self.rfd.take();
        self.wfd.take();
    }
}

/// Call `step(done)` (a read or write of the rest from byte `done`) until
/// `len` bytes have moved: `len`, or the first result of 0 or below.
fn whole(len: usize, mut step: impl FnMut(usize) -> isize) -> isize {
    let mut done = 0usize;
    while done < len {
        let r = step(done);
        if r <= 0 {
            return r;
        }
        done += r as usize;
    }
    done as isize
}

fn read_exact(fd: RawFd, buf: &mut [u8]) -> isize {
    let len = buf.len();
    // SAFETY: writes within buf's bounds.
    whole(len, |got| unsafe { libc::read(fd, buf[got..].as_mut_ptr().cast(), len - got) })
}

fn write_all(fd: RawFd, buf: &[u8]) -> isize {
    // SAFETY: reads within buf's bounds.
    whole(buf.len(), |put| unsafe { libc::write(fd, buf[put..].as_ptr().cast(), buf.len() - put) })
}

/// Fork a child that runs `serve` (given the fds it keeps) and then `_exit`s
/// (`crate::child::fork`), stopped with SIGKILL: it holds nothing worth a
/// clean end. The worker is single-threaded here, so fork is safe; the child
/// makes system calls and allocates its buffer.
fn fork_child(serve: impl FnOnce()) -> Result<Child> {
    // SAFETY: fork in a single-threaded process (see above).
    let child = unsafe {
        crate::child::fork(|| {
            serve();
            0
        })
    }?;
    Ok(child.stop_signal(nix::sys::signal::Signal::SIGKILL, crate::child::GRACE))
}

fn echo_loop(rfd: RawFd, wfd: RawFd, size: usize) {
    let mut buf = vec![0u8; size];
    while read_exact(rfd, &mut buf) == size as isize {
        if write_all(wfd, &buf) != size as isize {
            break;
        }
    }
}

fn measure_roundtrips(e: &Echo, size: usize, s: &mut Sampler) -> Result<()> {
    let (r, w) = (e.rfd.as_ref().unwrap().as_raw_fd(), e.wfd.as_ref().unwrap().as_raw_fd());
    s.peers(&[e.child.pid().as_raw()]);
    time_roundtrips(r, w, size, s, "the echo process went away")
}

/// Time round trips of `size` bytes: written to `w`, the echo read back
/// from `r`; `gone` is the error when the echo stops.
fn time_roundtrips(r: RawFd, w: RawFd, size: usize, s: &mut Sampler, gone: &str) -> Result<()> {
    let mut buf = vec![0x6bu8; size];
    s.measure_us(|n| {
        time_n(n, || {
            if write_all(w, &buf) != size as isize {
                return Err(os_err("send"));
            }
            if read_exact(r, &mut buf) != size as isize {
                bail!("{gone}");
            }
            Ok(())
        })
    })
}

fn pipe2() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: valid array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(os_err("pipe2"));
    }
    // SAFETY: both fds were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn size_param() -> ParamSpec {
    ParamSpec::new("size", ParamKind::Size, "1", "message size in bytes")
}

pub(super) fn pipe() -> Box<dyn Benchmark> {
    Simple::boxed(
        || {
            BenchInfo::new(
                "lat.pipe",
                "pass a token between two processes over pipes (one round trip)",
                "us",
                Better::Lower,
            )
        },
        |_, s| {
            let (to_child_r, to_child_w) = pipe2()?;
            let (to_parent_r, to_parent_w) = pipe2()?;
            let (cr, cw) = (to_child_r.as_raw_fd(), to_parent_w.as_raw_fd());
            let child = fork_child(|| echo_loop(cr, cw, 1))?;
            drop((to_child_r, to_parent_w));
            let e = Echo { child, rfd: Some(to_parent_r), wfd: Some(to_child_w) };
            measure_roundtrips(&e, 1, s)
        },
    )
}

pub(super) fn unix() -> Box<dyn Benchmark> {
    Simple::boxed(
        || {
            BenchInfo::new("lat.unix", "AF_UNIX stream socket round trip between two processes", "us", Better::Lower)
                .param(size_param())
        },
        |p: &Params, s| {
            let size = p.size("size")?.max(1) as usize;
            let mut sv = [0; 2];
            // SAFETY: valid array of two ints.
            if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0, sv.as_mut_ptr()) }
                != 0
            {
                return Err(os_err("socketpair"));
            }
            // SAFETY: fresh fds owned by nobody else.
            let (mine, theirs) = unsafe { (OwnedFd::from_raw_fd(sv[0]), OwnedFd::from_raw_fd(sv[1])) };
            let t = theirs.as_raw_fd();
            let child = fork_child(|| echo_loop(t, t, size))?;
            drop(theirs);
            let dup = mine.try_clone()?;
            let e = Echo { child, rfd: Some(mine), wfd: Some(dup) };
            measure_roundtrips(&e, size, s)
        },
    )
}

/// Round trips to a remote echo server (`kdelta serve lat.tcp`): no peer
/// process here to name, the figure includes the network.
fn remote_tcp(server: &str, size: usize, s: &mut Sampler) -> Result<()> {
    let addr = crate::sys::net::resolve("server", server)?;
    let stream =
        std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(10)).with_context(|| {
            format!("connecting to the lat.tcp echo server at {addr} (is `kdelta serve lat.tcp` running there?)")
        })?;
    stream.set_nodelay(true)?;
    let fd = stream.as_raw_fd();
    time_roundtrips(fd, fd, size, s, "the echo server closed the connection")
}

pub(super) fn tcp() -> Box<dyn Benchmark> {
    Simple::boxed(
        || {
            BenchInfo::new("lat.tcp", "TCP round trip (TCP_NODELAY): to a child over loopback, or to `kdelta serve lat.tcp` at server=HOST:PORT", "us", Better::Lower)
                .param(size_param())
                .param(crate::bench::server_param("local: an echo child over loopback; HOST:PORT: a `kdelta serve lat.tcp` there"))
        },
        |p: &Params, s| {
            let size = p.size("size")?.max(1) as usize;
            if let Some(server) = crate::bench::remote_server(p)? {
                return remote_tcp(server, size, s);
            }
            let listener = std::net::TcpListener::bind("127.0.0.1:0").context("binding a loopback listener")?;
            let addr = listener.local_addr()?;
            let lfd = listener.as_raw_fd();
            let child = fork_child(|| {
                // SAFETY: accept on our listening socket; the child only makes system calls.
                let c = unsafe { libc::accept(lfd, std::ptr::null_mut(), std::ptr::null_mut()) };
                if c >= 0 {
                    let one: libc::c_int = 1;
                    // SAFETY: valid option pointer and length.
                    unsafe {
                        libc::setsockopt(
                            c,
                            libc::IPPROTO_TCP,
                            libc::TCP_NODELAY,
                            (&one as *const libc::c_int).cast(),
                            4,
                        )
                    };
                    echo_loop(c, c, size);
                }
            })?;
            drop(listener);
            let stream = std::net::TcpStream::connect(addr).context("connecting over loopback")?;
            stream.set_nodelay(true)?;
            let fd: OwnedFd = stream.into();
            let dup = fd.try_clone()?;
            let e = Echo { child, rfd: Some(fd), wfd: Some(dup) };
            measure_roundtrips(&e, size, s)
        },
    )
}
