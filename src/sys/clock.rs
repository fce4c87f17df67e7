//! Clocks (time(7)): the calling thread's CPU clock, the wall clock, and the
//! tick rate `/proc` counts in.

/// clock_gettime(2) with CLOCK_THREAD_CPUTIME_ID: this thread's CPU time in
/// seconds, to the nanosecond on current kernels.
pub(crate) fn thread_cpu_secs() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// The wall clock in seconds since the Unix epoch (for stored start times;
/// clock_gettime(2) CLOCK_REALTIME through std).
pub(crate) fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// Clock ticks per second (sysconf(3) `_SC_CLK_TCK`), the unit of the tick
/// counts in `/proc/PID/stat` and `/proc/stat` (proc(5)).
pub(crate) fn clk_tck() -> f64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok().flatten().unwrap_or(100) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_move() {
        let a = thread_cpu_secs();
        let mut x = 0u64;
        for i in 0..1_000_000u64 {
            x = x.wrapping_add(std::hint::black_box(i));
        }
        std::hint::black_box(x);
        assert!(thread_cpu_secs() > a);
        assert!(unix_now() > 1.0e9);
        assert!(clk_tck() > 0.0);
    }
}
