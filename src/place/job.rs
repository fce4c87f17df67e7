//! The built-in job: a deterministic CPU-bound loop standing in for "compile
//! floppy.c", so `kdelta place` needs no compiler.
//!
//! The work is a fixed number of rounds of an integer mixing function (no
//! memory traffic beyond registers, no system calls). The number of rounds for
//! a wanted length is calibrated once per `kdelta place` run on the machine as
//! it is; every iteration then does exactly the same work, so differences in
//! wall time come from placement and sharing only.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// Do `rounds` rounds of work; returns a value so the work cannot be elided.
#[inline(never)]
pub(crate) fn spin(rounds: u64) -> u64 {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..rounds {
        // xorshift64* step mixed with the counter.
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        x = x.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ i;
    }
    black_box(x)
}

/// Rounds that take about `target` on this machine now (at least 1).
pub(crate) fn calibrate(target: Duration) -> u64 {
    let mut n: u64 = 1 << 12;
    loop {
        let t0 = Instant::now();
        black_box(spin(black_box(n)));
        let el = t0.elapsed();
        if el >= Duration::from_millis(20) || n >= 1 << 40 {
            let per = el.as_secs_f64() / n as f64;
            return ((target.as_secs_f64() / per.max(1e-12)) as u64).max(1);
        }
        n *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spin_is_deterministic_and_calibration_positive() {
        assert_eq!(spin(1000), spin(1000));
        assert_ne!(spin(1000), spin(1001));
        assert!(calibrate(Duration::from_millis(5)) >= 1);
    }
}
