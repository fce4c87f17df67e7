//! AIM9's IPC tests: `tcp_test`, `udp_test`, `stream_pipe`, `dgram_pipe`,
//! `pipe_cpy` (pipe_test.c) and `fifo_test` (no AIM9 source: see below).
//!
//! Like AIM9, each call builds its channel, sends messages through it and
//! closes it: the set-up and tear-down system calls are part of the work
//! (TCP: socket, bind, getsockname, setsockopt/getsockopt TCP_NODELAY,
//! listen, socket, connect, accept, getsockname; UDP: two sockets bound and
//! named, one connected to the other). One process holds both ends: each
//! message is written on one end and read back on the other, so no context
//! switch is involved; these figures measure the kernel's copy and wake-up
//! paths, not a round trip between two processes (see `lat.pipe` for that).
//! Message sizes cycle through AIM9's table [`SIZES`] (1 B to 2 KB), the
//! position kept from call to call. AIM9 asks for 90 (TCP) or 100 messages
//! but its loop (`while (--loops > 0)`) sends one fewer; kdelta sends the
//! same 89 or 99 and counts them, so AIM9's figures are 90/89 and 100/99 of
//! kdelta's for the same rate.
//!
//! fifo_test is in the study's table but in no AIM9 source we could read
//! (s9110 has no such test); kdelta runs it as pipe_cpy through a named
//! pipe: open the read end (non-blocking, then blocking), open the write
//! end, 99 messages, close both.

use super::runner::{Ctx, Work};
use anyhow::{bail, Result};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;

/// AIM9's message sizes (pipe_test.c), in order.
pub(crate) const SIZES: [usize; 31] = [
    1, 3, 5, 7, 16, 32, 64, 512, 1024, 2048, 1, 3, 5, 7, 16, 32, 64, 512, 1024, 2048, 32, 32, 32, 32, 32, 32, 512, 512,
    512, 512, 512,
];
/// Messages per tcp_test call.
pub(crate) const TCP_MSGS: usize = 89;
/// Messages per call of the other tests.
pub(crate) const MSGS: usize = 99;

fn err(what: &str) -> anyhow::Error {
    anyhow::anyhow!("{what}: {}", std::io::Error::last_os_error())
}

/// Descriptors closed on drop, in order (error paths included).
struct Fds(Vec<i32>);

impl Drop for Fds {
    fn drop(&mut self) {
        for &fd in &self.0 {
            // SAFETY: closing descriptors this call opened, once.
            unsafe { libc::close(fd) };
        }
    }
}

fn check(r: libc::c_int, what: &str) -> Result<libc::c_int> {
    if r < 0 {
        return Err(err(what));
    }
    Ok(r)
}

fn loopback(port: u16) -> libc::sockaddr_in {
    // SAFETY: sockaddr_in is plain data; zero is a valid start.
    let mut a: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    a.sin_family = libc::AF_INET as libc::sa_family_t;
    a.sin_port = port.to_be();
    a.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
    a
}

const SIN_LEN: libc::socklen_t = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;

/// socket + bind to 127.0.0.1 port 0 + getsockname; the fd goes in `fds`.
fn bound(fds: &mut Fds, ty: libc::c_int) -> Result<(i32, libc::sockaddr_in)> {
    // SAFETY: socket/bind/getsockname with valid sockaddr buffers.
    unsafe {
        let s = check(libc::socket(libc::AF_INET, ty | libc::SOCK_CLOEXEC, 0), "socket")?;
        fds.0.push(s);
        let mut a = loopback(0);
        check(libc::bind(s, (&a as *const libc::sockaddr_in).cast(), SIN_LEN), "bind")?;
        let mut len = SIN_LEN;
        check(libc::getsockname(s, (&mut a as *mut libc::sockaddr_in).cast(), &mut len), "getsockname")?;
        Ok((s, a))
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Tcp,
    Udp,
    Stream,
    Dgram,
    Pipe,
    Fifo,
}

struct Ipc {
    kind: Kind,
    fifo: CString,
    buf: Vec<u8>,
    next: usize,
}

impl Ipc {
    /// The channel of one call: its descriptors (all closed afterwards) and
    /// the read and write ends.
    fn open(&self) -> Result<(Fds, i32, i32)> {
        let mut fds = Fds(Vec::new());
        // SAFETY: socket, pipe and open calls with valid buffers and paths;
        // every descriptor goes into `fds` as soon as it exists.
        unsafe {
            let (rd, wr) = match self.kind {
                Kind::Tcp => tcp_pair(&mut fds)?,
                Kind::Udp => {
                    let (wr, _) = bound(&mut fds, libc::SOCK_DGRAM)?;
                    let (rd, ra) = bound(&mut fds, libc::SOCK_DGRAM)?;
                    check(libc::connect(wr, (&ra as *const libc::sockaddr_in).cast(), SIN_LEN), "connect")?;
                    (rd, wr)
                }
                Kind::Stream | Kind::Dgram => {
                    let ty = if self.kind == Kind::Stream { libc::SOCK_STREAM } else { libc::SOCK_DGRAM };
                    let mut p = [0; 2];
                    check(libc::socketpair(libc::AF_UNIX, ty | libc::SOCK_CLOEXEC, 0, p.as_mut_ptr()), "socketpair")?;
                    fds.0.extend(p);
                    (p[0], p[1])
                }
                Kind::Pipe => {
                    let mut p = [0; 2];
                    check(libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC), "pipe")?;
                    fds.0.extend(p);
                    (p[0], p[1])
                }
                Kind::Fifo => fifo_pair(&self.fifo, &mut fds)?,
            };
            Ok((fds, rd, wr))
        }
    }
}

/// write (or read) all of `len` bytes, retrying short transfers and EINTR,
/// as AIM9's writen/readn do.
fn xfer(fd: i32, buf: *mut u8, len: usize, write: bool) -> Result<()> {
    let mut done = 0;
    while done < len {
        // SAFETY: buf has at least len bytes.
        let r = unsafe {
            if write {
                libc::write(fd, buf.add(done).cast(), len - done)
            } else {
                libc::read(fd, buf.add(done).cast(), len - done)
            }
        };
        if r < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err(if write { "write" } else { "read" }));
        }
        if r == 0 {
            bail!("end of file after {done} of {len} bytes");
        }
        done += r as usize;
    }
    Ok(())
}

impl Work for Ipc {
    fn call(&mut self) -> Result<f64> {
        let (fds, rd, wr) = self.open()?;
        let msgs = if self.kind == Kind::Tcp { TCP_MSGS } else { MSGS };
        let mut n = 0;
        for _ in 0..msgs {
            let sz = SIZES[self.next % SIZES.len()];
            self.next += 1;
            self.buf[0] = sz as u8;
            xfer(wr, self.buf.as_mut_ptr(), sz, true)?;
            self.buf[0] = 0;
            xfer(rd, self.buf.as_mut_ptr(), sz, false)?;
            if self.buf[0] != sz as u8 {
                bail!("a {sz}-byte message came back changed");
            }
            n += 1;
        }
        drop(fds);
        Ok(n as f64)
    }
}

fn ipc(kind: Kind, fifo: CString) -> Result<Box<dyn Work>> {
    Ok(Box::new(Ipc { kind, fifo, buf: vec![0x33; SIZES.iter().copied().max().unwrap_or(1)], next: 0 }))
}

pub(crate) fn tcp_test(_c: &Ctx) -> Result<Box<dyn Work>> {
    ipc(Kind::Tcp, CString::default())
}
pub(crate) fn udp_test(_c: &Ctx) -> Result<Box<dyn Work>> {
    ipc(Kind::Udp, CString::default())
}
pub(crate) fn stream_pipe(_c: &Ctx) -> Result<Box<dyn Work>> {
    ipc(Kind::Stream, CString::default())
}
pub(crate) fn dgram_pipe(_c: &Ctx) -> Result<Box<dyn Work>> {
    ipc(Kind::Dgram, CString::default())
}
pub(crate) fn pipe_cpy(_c: &Ctx) -> Result<Box<dyn Work>> {
    ipc(Kind::Pipe, CString::default())
}

pub(crate) fn fifo_test(c: &Ctx) -> Result<Box<dyn Work>> {
    let p = c.dir.join("fifo");
    let cp = CString::new(p.as_os_str().as_bytes())?;
    // SAFETY: mkfifo on a valid C path in our own directory.
    if unsafe { libc::mkfifo(cp.as_ptr(), 0o600) } != 0 {
        bail!("mkfifo {}: {}", p.display(), std::io::Error::last_os_error());
    }
    ipc(Kind::Fifo, cp)
}

/// A TCP connection over loopback: a listener bound to a free port with
/// TCP_NODELAY set and read back, a client socket connected to it and the
/// accepted end; the client's name read back. Returns (client, accepted).
///
/// # Safety
/// Plain socket calls; every descriptor goes into `fds` as soon as it exists.
#[inline]
unsafe fn tcp_pair(fds: &mut Fds) -> Result<(i32, i32)> {
    let (l, a) = bound(fds, libc::SOCK_STREAM)?;
    let one: libc::c_int = 1;
    let isz = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    check(
        libc::setsockopt(l, libc::IPPROTO_TCP, libc::TCP_NODELAY, (&one as *const libc::c_int).cast(), isz),
        "setsockopt TCP_NODELAY",
    )?;
    let (mut got, mut len) = (0 as libc::c_int, isz);
    check(
        libc::getsockopt(l, libc::IPPROTO_TCP, libc::TCP_NODELAY, (&mut got as *mut libc::c_int).cast(), &mut len),
        "getsockopt TCP_NODELAY",
    )?;
    check(libc::listen(l, 5), "listen")?;
    let rd = check(libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0), "socket")?;
    fds.0.push(rd);
    check(libc::connect(rd, (&a as *const libc::sockaddr_in).cast(), SIN_LEN), "connect")?;
    let new = loop {
        let r = libc::accept(l, std::ptr::null_mut(), std::ptr::null_mut());
        if r >= 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break check(r, "accept")?;
        }
    };
    fds.0.push(new);
    let mut ra = loopback(0);
    let mut len = SIN_LEN;
    check(libc::getsockname(rd, (&mut ra as *mut libc::sockaddr_in).cast(), &mut len), "getsockname")?;
    Ok((rd, new))
}

/// The FIFO opened for reading (non-blocking, so that the open does not wait
/// for a writer, then made blocking) and for writing. Returns (read, write).
///
/// # Safety
/// `fifo` names an existing FIFO; both descriptors go into `fds`.
#[inline]
unsafe fn fifo_pair(fifo: &std::ffi::CStr, fds: &mut Fds) -> Result<(i32, i32)> {
    let rd =
        check(libc::open(fifo.as_ptr(), libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC), "open fifo for reading")?;
    fds.0.push(rd);
    let wr = check(libc::open(fifo.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC), "open fifo for writing")?;
    fds.0.push(wr);
    let fl = libc::fcntl(rd, libc::F_GETFL);
    check(libc::fcntl(rd, libc::F_SETFL, fl & !libc::O_NONBLOCK), "fcntl")?;
    Ok((rd, wr))
}
