//! `lat.sig.install` (install a signal handler with sigaction(2)) and
//! `lat.sig.catch` (send yourself a signal with kill(2) and catch it).

use super::{os_err, time_n};
use crate::bench::{BenchInfo, Benchmark, Better, Simple};
use std::sync::atomic::{AtomicU64, Ordering};

static CAUGHT: AtomicU64 = AtomicU64::new(0);

extern "C" fn handler(_sig: libc::c_int) {
    CAUGHT.fetch_add(1, Ordering::Relaxed);
}

fn install_handler() -> anyhow::Result<()> {
    // SAFETY: a zeroed sigaction with a valid handler and empty mask is a valid argument.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut()) != 0 {
            return Err(os_err("sigaction"));
        }
    }
    Ok(())
}

pub fn install() -> Box<dyn Benchmark> {
    Simple::boxed(
        || BenchInfo::new("lat.sig.install", "install a signal handler (sigaction)", "us", Better::Lower),
        |_, s| s.measure_us(|n| time_n(n, install_handler)),
    )
}

pub fn catch() -> Box<dyn Benchmark> {
    Simple::boxed(
        || BenchInfo::new("lat.sig.catch", "send yourself a signal and catch it", "us", Better::Lower),
        |_, s| {
            install_handler()?;
            // SAFETY: getpid cannot fail.
            let me = unsafe { libc::getpid() };
            let before = CAUGHT.load(Ordering::Relaxed);
            let mut sent = 0u64;
            s.measure_us(|n| {
                sent += n;
                time_n(n, || {
                    // SAFETY: signalling ourselves with a handled signal.
                    if unsafe { libc::kill(me, libc::SIGUSR1) } != 0 {
                        return Err(os_err("kill"));
                    }
                    Ok(())
                })
            })?;
            let caught = CAUGHT.load(Ordering::Relaxed) - before;
            if caught != sent {
                anyhow::bail!("sent {sent} signals but caught {caught}");
            }
            Ok(())
        },
    )
}
