//! `lat.stat`, `lat.fstat` and `lat.open` (open and close) on a small file in
//! the worker's temporary directory.

use super::{os_err, time_n};
use crate::bench::{BenchInfo, Benchmark, Better, Sampler, Simple};
use anyhow::{Context, Result};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;

fn target(s: &Sampler) -> Result<CString> {
    let p = s.tmpdir().join("lat-fs-target");
    std::fs::write(&p, b"kdelta").with_context(|| format!("creating {}", p.display()))?;
    Ok(CString::new(p.as_os_str().as_bytes())?)
}

/// Time `call`, which fills the stat buffer it is given; a non-zero return
/// fails with `what` and the OS error.
fn time_stat(s: &mut Sampler, what: &str, mut call: impl FnMut(&mut libc::stat) -> libc::c_int) -> Result<()> {
    // SAFETY: zeroed stat is a valid plain C struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    s.measure_us(|n| {
        time_n(n, || {
            if call(&mut st) != 0 {
                return Err(os_err(what));
            }
            Ok(())
        })
    })
}

pub(super) fn stat() -> Box<dyn Benchmark> {
    Simple::boxed(
        || BenchInfo::new("lat.stat", "stat(2) of a file", "us", Better::Lower),
        |_, s| {
            let path = target(s)?;
            // SAFETY: valid NUL-terminated path and stat buffer.
            time_stat(s, "stat", |st| unsafe { libc::stat(path.as_ptr(), st) })
        },
    )
}

pub(super) fn fstat() -> Box<dyn Benchmark> {
    Simple::boxed(
        || BenchInfo::new("lat.fstat", "fstat(2) of an open file", "us", Better::Lower),
        |_, s| {
            let path = target(s)?;
            let f = std::fs::File::open(std::ffi::OsStr::from_bytes(path.as_bytes()))?;
            let fd = std::os::fd::AsRawFd::as_raw_fd(&f);
            // SAFETY: fd is open while `f` lives; valid stat buffer.
            time_stat(s, "fstat", |st| unsafe { libc::fstat(fd, st) })
        },
    )
}

pub(super) fn open() -> Box<dyn Benchmark> {
    Simple::boxed(
        || BenchInfo::new("lat.open", "open(2) and close(2) of a file", "us", Better::Lower),
        |_, s| {
            let path = target(s)?;
            s.measure_us(|n| {
                time_n(n, || {
                    // SAFETY: valid NUL-terminated path; the fd is closed at once.
                    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY) };
                    if fd < 0 {
                        return Err(os_err("open"));
                    }
                    // SAFETY: fd was just opened by us.
                    unsafe { libc::close(fd) };
                    Ok(())
                })
            })
        },
    )
}
