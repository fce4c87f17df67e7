//! The reference loops: a small fixed workload every run measures before
//! its first worker and after its last, stored with the run
//! (`RunEnvironment::reference`), so that a later `check` against it can
//! tell whether the machine itself changed speed since (a VM whose host got
//! busier, a neighbour on the other vCPU) before it calls a change in the
//! benchmark a regression.
//!
//! Two kinds, because a machine slows them differently: a chain of
//! dependent multiplies (the core's arithmetic alone; a busy sibling vCPU
//! does not slow it here) and a loop of branches, loads and stores over a
//! 16 KiB table (what a shell loop does; a busy sibling slows it by 24-60 %
//! here). Each is timed in 2 ms samples, alternating, on every CPU the
//! process may use (at most [`MAX_CPUS`]), a thread pinned to each in turn;
//! a kind's figure is the fastest CPU's median, in nanoseconds per
//! iteration: other work on one CPU does not move it, a host that slows
//! every vCPU does. About 0.1 s per CPU.

use crate::cpuset::CpuSet;
use crate::model::environment::{Reference, ReferenceKind};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// CPUs measured at most (the first ones the process may use).
pub(crate) const MAX_CPUS: usize = 8;
/// Samples of each kind on each CPU.
const SAMPLES: usize = 9;
/// Target length of one sample.
const SAMPLE: Duration = Duration::from_millis(2);

/// Iterations of a dependent multiply chain.
#[inline(never)]
fn chain(n: u64) -> u64 {
    let mut x = black_box(0x9e37_79b9_7f4a_7c15u64);
    for _ in 0..n {
        x = x.wrapping_mul(0x5851_f42d_4c95_7f2d).wrapping_add(1);
    }
    x
}

/// Iterations of branches, loads and stores over a 16 KiB table.
#[inline(never)]
fn table(n: u64, t: &mut [u32; 4096]) -> u64 {
    let (mut x, mut sum) = (black_box(88_172_645_463_325_252u64), 0u64);
    for i in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = (x & 4095) as usize;
        if x & (1 << 20) != 0 {
            t[k] = t[k].wrapping_add(i as u32);
        } else {
            sum = sum.wrapping_add(t[k] as u64);
        }
    }
    sum
}

/// Nanoseconds per iteration of `f`, calibrated to about [`SAMPLE`].
fn samples(mut f: impl FnMut(u64)) -> Vec<f64> {
    let mut n = 1000u64;
    loop {
        let t = Instant::now();
        f(n);
        let e = t.elapsed();
        if e >= SAMPLE / 4 || n > 1 << 30 {
            n = ((n as f64) * SAMPLE.as_secs_f64() / e.as_secs_f64().max(1e-9)).max(1.0) as u64;
            break;
        }
        n *= 4;
    }
    (0..SAMPLES)
        .map(|_| {
            let t = Instant::now();
            f(n);
            t.elapsed().as_nanos() as f64 / n as f64
        })
        .collect()
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// Measure both kinds on each CPU this process may use (at most
/// [`MAX_CPUS`]), on a thread of its own so the caller's affinity is never
/// changed. `None` when no CPU could be measured.
pub(crate) fn measure() -> Option<Reference> {
    let allowed = crate::sys::get_affinity().ok()?;
    let cpus: Vec<u32> = allowed.iter().take(MAX_CPUS).collect();
    let got = std::thread::spawn(move || {
        let mut t = Box::new([0u32; 4096]);
        let (mut c, mut m) = (Vec::new(), Vec::new());
        for cpu in cpus {
            if crate::sys::set_affinity(&CpuSet::from_iter([cpu])).is_err() {
                continue;
            }
            let (mut cc, mut mm) = (Vec::new(), Vec::new());
            for _ in 0..2 {
                cc.extend(samples(|n| {
                    black_box(chain(n));
                }));
                mm.extend(samples(|n| {
                    black_box(table(n, &mut t));
                }));
            }
            c.push(median(&cc));
            m.push(median(&mm));
        }
        (c, m)
    })
    .join()
    .ok()?;
    let kind = |name: &str, v: &[f64]| {
        (!v.is_empty())
            .then(|| ReferenceKind { name: name.into(), ns: v.iter().copied().fold(f64::INFINITY, f64::min) })
    };
    let kinds: Vec<ReferenceKind> =
        [kind("multiply chain", &got.0), kind("table loop", &got.1)].into_iter().flatten().collect();
    (!kinds.is_empty()).then_some(Reference { kinds })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_kinds_are_measured_and_positive() {
        let r = measure().expect("some CPU");
        assert_eq!(r.kinds.len(), 2);
        assert!(r.kinds.iter().all(|k| k.ns > 0.0 && k.ns.is_finite()), "{r:?}");
    }
}
