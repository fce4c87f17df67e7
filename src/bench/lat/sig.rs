//! Signals, as LMbench's lat_sig measures them: `lat.sig.install`
//! (sigaction(2) installing a handler and fetching the old action) and
//! `lat.sig.catch` (the handler overhead: sending yourself a signal with
//! kill(2) and catching it, less the cost of sending, which LMbench measures
//! as `kill(me, 0)`: the same call with no signal delivered).
//!
//! LMbench measures the two loops one after the other and subtracts their
//! per-operation times; kdelta times both in every sample, back to back, so
//! the difference is taken under the same circumstances, and keeps the two
//! raw figures beside it (`catch_us`, `send_us`).

use super::{os_err, time_n};
use crate::bench::{BenchInfo, Benchmark, Better, Simple};
use std::sync::atomic::{AtomicU64, Ordering};

/// Signals caught, to check none was lost. Only the measuring thread
/// touches it (the handler runs on it, the signal blocked meanwhile), so a
/// plain load and store do: no locked instruction in the handler.
static CAUGHT: AtomicU64 = AtomicU64::new(0);

extern "C" fn handler(_sig: libc::c_int) {
    CAUGHT.store(CAUGHT.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

/// sigaction(SIGUSR1, handler) with `old` receiving the previous action, as
/// LMbench's do_install and do_catch call it.
fn install_handler(old: &mut libc::sigaction) -> anyhow::Result<()> {
    // SAFETY: a zeroed sigaction with a valid handler and empty mask is a
    // valid argument; `old` is a valid place for the kernel to write.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = 0;
        if libc::sigaction(libc::SIGUSR1, &sa, old) != 0 {
            return Err(os_err("sigaction"));
        }
    }
    Ok(())
}

pub(super) fn install() -> Box<dyn Benchmark> {
    Simple::boxed(
        || {
            BenchInfo::new(
                "lat.sig.install",
                "install a signal handler, fetching the old action (lat_sig install)",
                "us",
                Better::Lower,
            )
        },
        |_, s| {
            // SAFETY: an all-zero sigaction is a valid value of this plain C struct.
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            s.measure_us(|n| time_n(n, || install_handler(&mut old)))
        },
    )
}

/// `kill(me, sig)`, n times.
fn kill_n(me: libc::pid_t, sig: libc::c_int, n: u64) -> anyhow::Result<std::time::Duration> {
    time_n(n, || {
        // SAFETY: signalling ourselves, with a handled signal or none (0).
        if unsafe { libc::kill(me, sig) } != 0 {
            return Err(os_err("kill"));
        }
        Ok(())
    })
}

pub(super) fn catch() -> Box<dyn Benchmark> {
    Simple::boxed(
        || {
            BenchInfo::new(
                "lat.sig.catch",
                "signal handler overhead: send yourself a signal and catch it, less sending (kill(me, 0)) timed beside it (lat_sig catch)",
                "us",
                Better::Lower,
            )
        },
        |_, s| {
            // SAFETY: an all-zero sigaction is a valid value of this plain C struct.
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            install_handler(&mut old)?;
            // SAFETY: getpid cannot fail.
            let me = unsafe { libc::getpid() };
            let before = CAUGHT.load(Ordering::Relaxed);
            let mut sent = 0u64;
            s.measure_net_us(
                |n| {
                    sent += n;
                    kill_n(me, libc::SIGUSR1, n)
                },
                |n| kill_n(me, 0, n),
                ["catch_us", "send_us"],
            )?;
            let caught = CAUGHT.load(Ordering::Relaxed) - before;
            if caught != sent {
                anyhow::bail!("sent {sent} signals but caught {caught}");
            }
            Ok(())
        },
    )
}
