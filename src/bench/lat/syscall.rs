//! `lat.syscall` (a null system call: getppid, as LMbench and `perf bench
//! syscall basic` use), `lat.read` (1 byte from /dev/zero), `lat.write`
//! (1 byte to /dev/null).
//!
//! All three are one thread's loop with nothing process-wide, so they take
//! turns (`BenchInfo::lockstep`): configurations that differ only in
//! counting (`+counters=on,off`) are measured in one worker.

use super::{os_err, time_n};
use crate::bench::{BenchInfo, Benchmark, Better, Params, Sampler, Simple};
use anyhow::{Context, Result};
use std::os::fd::AsRawFd;

pub(super) fn null() -> Box<dyn Benchmark> {
    Simple::boxed(
        || BenchInfo::new("lat.syscall", "a null system call (getppid)", "us", Better::Lower).lockstep(),
        |_, s| {
            s.measure_us(|n| {
                time_n(n, || {
                    // SAFETY: getppid takes no arguments and cannot fail.
                    std::hint::black_box(unsafe { libc::syscall(libc::SYS_getppid) });
                    Ok(())
                })
            })
        },
    )
}

fn one_byte(path: &str, write: bool, s: &mut Sampler) -> Result<()> {
    let f =
        std::fs::OpenOptions::new().read(!write).write(write).open(path).with_context(|| format!("opening {path}"))?;
    let fd = f.as_raw_fd();
    let mut byte = [0u8; 1];
    s.measure_us(|n| {
        time_n(n, || {
            // SAFETY: fd is open for the life of `f`; the buffer is 1 valid byte.
            let r = unsafe {
                if write {
                    libc::write(fd, byte.as_ptr().cast(), 1)
                } else {
                    libc::read(fd, byte.as_mut_ptr().cast(), 1)
                }
            };
            if r != 1 {
                return Err(os_err(if write { "write" } else { "read" }));
            }
            Ok(())
        })
    })
}

pub(super) fn read() -> Box<dyn Benchmark> {
    Simple::boxed(
        || BenchInfo::new("lat.read", "read 1 byte from /dev/zero", "us", Better::Lower).lockstep(),
        |_: &Params, s| one_byte("/dev/zero", false, s),
    )
}

pub(super) fn write() -> Box<dyn Benchmark> {
    Simple::boxed(
        || BenchInfo::new("lat.write", "write 1 byte to /dev/null", "us", Better::Lower).lockstep(),
        |_: &Params, s| one_byte("/dev/null", true, s),
    )
}
