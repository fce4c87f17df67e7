//! `lat.select.file` and `lat.select.tcp`: select(2) on N descriptors (10 by
//! default, as in the study) for writing, with a zero timeout, as LMbench's
//! lat_select does: N descriptors dup'ed from one of a regular file, or from
//! one connected loopback TCP socket (always ready for writing). As in
//! LMbench, all N refer to the one open file or socket, so select calls its
//! poll N times on one warm object.
//!
//! kdelta polls all N: nfds is one above the highest of them. LMbench's
//! `lat_select -n N` dup's its N descriptors into the lowest free numbers,
//! among those already open (standard I/O, the pipes of its benchmp
//! harness, the listening socket for tcp), but passes nfds = N, so select
//! looks only at the ones below N: on Linux with glibc, N-9 of them for file
//! and N-10 for tcp (5 of 14 at -n 14, strace shows). Its figure for N is
//! the cost of fewer descriptors; `scripts/lmbench-vs-kdelta.sh` finds the
//! -n at which it polls N and compares at that.

use super::{os_err, time_n};
use crate::bench::{BenchInfo, Benchmark, Better, ParamKind, ParamSpec, Params, Sampler, Simple};
use anyhow::{bail, Context, Result};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

const FILE_SUMMARY: &str =
    "select(2) for writing on all N descriptors, dup'ed from one of a file (LMbench's lat_select -n N polls only its descriptors numbered below N, about N-9 of them, so its figure is not the N-descriptor cost)";
const TCP_SUMMARY: &str = "select(2) for writing on all N descriptors, dup'ed from one connected loopback TCP socket (LMbench's lat_select -n N tcp polls only its descriptors numbered below N, about N-10 of them, so its figure is not the N-descriptor cost)";

fn fds_param() -> ParamSpec {
    ParamSpec::new("fds", ParamKind::Int { min: 1, max: 512 }, "10", "number of descriptors selected on")
}

fn select_loop(fds: &[RawFd], s: &mut Sampler) -> Result<()> {
    let max = *fds.iter().max().context("no descriptors")?;
    if max >= libc::FD_SETSIZE as RawFd {
        bail!("descriptor {max} is beyond select's FD_SETSIZE ({})", libc::FD_SETSIZE);
    }
    s.measure_us(|n| {
        time_n(n, || {
            // SAFETY: fd_set is plain data; FD_ZERO/FD_SET are given fds below FD_SETSIZE.
            // The write set, as LMbench's doit: select(n, 0, &set, 0, &tv).
            unsafe {
                let mut set: libc::fd_set = std::mem::zeroed();
                libc::FD_ZERO(&mut set);
                for &fd in fds {
                    libc::FD_SET(fd, &mut set);
                }
                let mut tv = libc::timeval { tv_sec: 0, tv_usec: 0 };
                if libc::select(max + 1, std::ptr::null_mut(), &mut set, std::ptr::null_mut(), &mut tv) < 0 {
                    return Err(os_err("select"));
                }
            }
            Ok(())
        })
    })
}

/// `n` descriptors dup(2)'ed from `fd`, as lat_select's initialize makes
/// them: every one refers to the same open file or socket.
fn dup_n(fd: RawFd, n: usize) -> Result<Vec<OwnedFd>> {
    (0..n)
        .map(|_| {
            // SAFETY: dup of a descriptor we hold; the new one is owned below.
            let d = unsafe { libc::dup(fd) };
            if d < 0 {
                return Err(os_err("dup"));
            }
            // SAFETY: d is a fresh descriptor nothing else owns.
            Ok(unsafe { OwnedFd::from_raw_fd(d) })
        })
        .collect()
}

pub(super) fn file() -> Box<dyn Benchmark> {
    Simple::boxed(
        || BenchInfo::new("lat.select.file", FILE_SUMMARY, "us", Better::Lower).param(fds_param()),
        |p: &Params, s| {
            let path = s.tmpdir().join("lat-select-file");
            std::fs::write(&path, b"kdelta").with_context(|| format!("creating {}", path.display()))?;
            let file = std::fs::File::open(&path).with_context(|| format!("opening {}", path.display()))?;
            let dups = dup_n(file.as_raw_fd(), p.usize("fds")?)?;
            drop(file);
            select_loop(&dups.iter().map(|d| d.as_raw_fd()).collect::<Vec<_>>(), s)
        },
    )
}

pub(super) fn tcp() -> Box<dyn Benchmark> {
    Simple::boxed(
        || BenchInfo::new("lat.select.tcp", TCP_SUMMARY, "us", Better::Lower).param(fds_param()),
        |p: &Params, s| {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").context("binding a loopback listener")?;
            let addr = listener.local_addr()?;
            let client = std::net::TcpStream::connect(addr).context("connecting over loopback")?;
            let _server = listener.accept()?.0;
            let dups = dup_n(client.as_raw_fd(), p.usize("fds")?)?;
            drop(client);
            select_loop(&dups.iter().map(|d| d.as_raw_fd()).collect::<Vec<_>>(), s)
        },
    )
}
