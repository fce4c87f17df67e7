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

pub(super) fn stat() -> Box<dyn Benchmark> {
    Simple::boxed(
        || BenchInfo::new("lat.stat", "stat(2) of a file", "us", Better::Lower),
        |_, s| {
            let path = target(s)?;
            // SAFETY: zeroed stat is a valid plain C struct.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            s.measure_us(|n| {
                time_n(n, || {
                    // SAFETY: valid NUL-terminated path and stat buffer.
                    if unsafe { libc::stat(path.as_ptr(), &mut st) } != 0 {
                        return Err(os_err("stat"));
                    }
                    Ok(())
                })
            })
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
            // SAFETY: zeroed stat is a valid plain C struct.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            s.measure_us(|n| {
                time_n(n, || {
                    // SAFETY: fd is open while `f` lives; valid stat buffer.
                    if unsafe { libc::fstat(fd, &mut st) } != 0 {
                        return Err(os_err("fstat"));
                    }
                    Ok(())
                })
            })
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
