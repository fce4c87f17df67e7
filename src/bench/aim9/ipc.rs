//! AIM9's IPC tests: `tcp_test`, `udp_test`, `fifo_test`, `stream_pipe`,
//! `dgram_pipe`, `pipe_cpy`.
//!
//! Like AIM9, one process holds both ends: each message is written on one
//! end and read back on the other, so no context switch is involved; these
//! figures measure the kernel's copy and wake-up paths, not a round trip
//! between two processes (see `lat.pipe` for that). One call sends the
//! twelve sizes of [`SIZES`] once each (1 B to 2 KB, all within PIPE_BUF and
//! the socket buffers) and checks every message arrived whole.

use super::runner::{Ctx, Work};
use anyhow::{bail, Context, Result};
use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::{UnixDatagram, UnixStream};

/// Message sizes of one call.
pub const SIZES: [usize; 12] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048];
/// Messages per call.
pub const MSGS: usize = SIZES.len();

/// The two ends of one channel.
enum Chan {
    Stream(Box<dyn Write>, Box<dyn Read>),
    Udp(UdpSocket, UdpSocket),
    Unix(UnixDatagram, UnixDatagram),
}

struct Ipc {
    chan: Chan,
    out: Vec<u8>,
    inb: Vec<u8>,
    count: usize,
}

impl Work for Ipc {
    fn call(&mut self) -> Result<()> {
        let mut n = 0;
        for &sz in &SIZES {
            self.out[0] = sz as u8;
            let got = match &mut self.chan {
                Chan::Stream(w, r) => {
                    w.write_all(&self.out[..sz])?;
                    r.read_exact(&mut self.inb[..sz])?;
                    sz
                }
                Chan::Udp(a, b) => {
                    a.send(&self.out[..sz])?;
                    b.recv(&mut self.inb)?
                }
                Chan::Unix(a, b) => {
                    a.send(&self.out[..sz])?;
                    b.recv(&mut self.inb)?
                }
            };
            if got != sz || self.inb[0] != sz as u8 {
                bail!("sent a {sz}-byte message, received {got} bytes");
            }
            n += 1;
        }
        self.count = n;
        Ok(())
    }
    fn done(&self) -> f64 {
        self.count as f64
    }
}

fn ipc(chan: Chan) -> Result<Box<dyn Work>> {
    let max = SIZES[SIZES.len() - 1];
    Ok(Box::new(Ipc { chan, out: vec![0x33; max], inb: vec![0; max + 1], count: 0 }))
}

pub fn tcp_test(_c: &Ctx) -> Result<Box<dyn Work>> {
    let l = TcpListener::bind("127.0.0.1:0").context("binding a loopback TCP listener")?;
    let a = TcpStream::connect(l.local_addr()?).context("connecting over loopback")?;
    let (b, _) = l.accept().context("accepting the loopback connection")?;
    a.set_nodelay(true)?;
    b.set_nodelay(true)?;
    ipc(Chan::Stream(Box::new(a), Box::new(b)))
}

pub fn udp_test(_c: &Ctx) -> Result<Box<dyn Work>> {
    let a = UdpSocket::bind("127.0.0.1:0").context("binding a loopback UDP socket")?;
    let b = UdpSocket::bind("127.0.0.1:0").context("binding a loopback UDP socket")?;
    a.connect(b.local_addr()?)?;
    b.connect(a.local_addr()?)?;
    ipc(Chan::Udp(a, b))
}

pub fn fifo_test(c: &Ctx) -> Result<Box<dyn Work>> {
    let p = c.dir.join("fifo");
    let cp = CString::new(p.as_os_str().as_bytes())?;
    // SAFETY: mkfifo on a valid C path in our own directory.
    if unsafe { libc::mkfifo(cp.as_ptr(), 0o600) } != 0 {
        bail!("mkfifo {}: {}", p.display(), std::io::Error::last_os_error());
    }
    // Open the read end without blocking (no writer yet), then the write end,
    // then make the read end blocking again.
    let r: File = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(&p).with_context(|| format!("opening {} for reading", p.display()))?;
    let w: File = OpenOptions::new().write(true).open(&p).with_context(|| format!("opening {} for writing", p.display()))?;
    let fd = std::os::fd::AsRawFd::as_raw_fd(&r);
    // SAFETY: fcntl flag change on our own descriptor.
    unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, fl & !libc::O_NONBLOCK);
    }
    ipc(Chan::Stream(Box::new(w), Box::new(r)))
}

pub fn stream_pipe(_c: &Ctx) -> Result<Box<dyn Work>> {
    let (a, b) = UnixStream::pair().context("socketpair(AF_UNIX, SOCK_STREAM)")?;
    ipc(Chan::Stream(Box::new(a), Box::new(b)))
}

pub fn dgram_pipe(_c: &Ctx) -> Result<Box<dyn Work>> {
    let (a, b) = UnixDatagram::pair().context("socketpair(AF_UNIX, SOCK_DGRAM)")?;
    ipc(Chan::Unix(a, b))
}

pub fn pipe_cpy(_c: &Ctx) -> Result<Box<dyn Work>> {
    let (r, w) = nix::unistd::pipe().context("pipe")?;
    ipc(Chan::Stream(Box::new(File::from(w)), Box::new(File::from(r))))
}
