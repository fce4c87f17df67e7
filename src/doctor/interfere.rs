//! Measuring which CPUs slow which: on a VM two vCPUs may share a core's
//! caches or front end as SMT siblings do, and the topology does not say so.
//!
//! For each ordered pair of CPUs (measured, busy), a thread pinned to the
//! measured CPU times short loops of three kinds, in pairs of samples: one
//! with the busy CPU idle, one with a CPU-bound load pinned there (a thread
//! running the shell-like loop), in alternating order, so that drift falls
//! on both. Each pair gives a ratio (loaded / quiet); a kind's slowdown is
//! the median ratio less one. A sample the measuring thread did not run
//! through (wall above its CPU time by more than 2 %) is taken again. The
//! kinds, since one alone misses it:
//!
//! | kind | loop | what a busy sibling takes |
//! |---|---|---|
//! | `shell` | a small interpreter: data-dependent branches, loads and stores over a byte-code array (what `sh -c 'while ...'` does) | front end, branch predictor, L1 |
//! | `memory` | read-modify-write of a 2 MiB buffer by cache lines | L2 and the memory path |
//! | `multiply` | a chain of dependent multiplies | (the multiplier: shows no slowdown on this VM; the control) |
//!
//! A pair interferes when a kind's slowdown exceeds `interfere::LIMIT` and
//! at least three quarters of its ratios are above one. The record
//! (`measure/interfere.rs`) is what the sampler reads.

use crate::cpuset::CpuSet;
use crate::measure::interfere::{Pair, Record, LIMIT};
use crate::sys::clock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The loop kinds, in the record's order.
pub(crate) const KINDS: [&str; 3] = ["shell", "memory", "multiply"];

/// One sample's length.
const SAMPLE: Duration = Duration::from_millis(2);
/// Pairs of samples per kind and ordered pair of CPUs, at most and at least
/// (fewer on more CPUs, to keep the whole within [`BUDGET`]).
const MAX_PAIRS: u32 = 21;
const MIN_PAIRS: u32 = 9;
/// The time the measurement aims at, whatever the number of CPUs.
const BUDGET: Duration = Duration::from_secs(3);
/// Above this many CPUs the pairs are not measured (their number grows as
/// the square): SMT siblings alone count there.
pub(crate) const MAX_CPUS: usize = 8;
const MEM_BYTES: usize = 2 << 20;

/// The work of one loop kind, `n` rounds; returns something to keep.
#[inline(never)]
fn work(kind: &str, n: u64, mem: &mut [u64]) -> u64 {
    match kind {
        "shell" => shell(n),
        "memory" => memory(n, mem),
        _ => multiply(n),
    }
}

/// An interpreter's inner loop: fetch an op from a byte-code array, branch
/// on it, load and store variables.
fn shell(n: u64) -> u64 {
    const CODE: [u8; 61] = [
        0, 1, 2, 0, 3, 1, 1, 2, 4, 0, 0, 3, 2, 1, 4, 4, 0, 2, 3, 1, 0, 0, 1, 3, 2, 4, 1, 0, 2, 2, 3, 0, 4, 1, 3, 0, 2,
        1, 1, 4, 0, 3, 3, 2, 0, 1, 4, 2, 0, 1, 3, 0, 2, 4, 1, 1, 0, 3, 2, 0, 4,
    ];
    let mut vars = [1u64; 16];
    let mut acc = 0u64;
    for i in 0..n {
        for (pc, &op) in CODE.iter().enumerate() {
            let v = (pc + i as usize) & 15;
            match std::hint::black_box(op) {
                0 => vars[v] = vars[v].wrapping_add(1),
                1 => acc = acc.wrapping_add(vars[v]),
                2 => {
                    if vars[v] & 1 == 0 {
                        vars[(v + 1) & 15] ^= acc
                    }
                }
                3 => vars[v] = vars[(v + 7) & 15].rotate_left(3),
                _ => acc ^= vars[v] >> 1,
            }
        }
    }
    std::hint::black_box(vars);
    acc
}

/// Read-modify-write of `mem`, a cache line at a time, `n` passes.
fn memory(n: u64, mem: &mut [u64]) -> u64 {
    let mut acc = 0u64;
    for _ in 0..n {
        for i in (0..mem.len()).step_by(8) {
            mem[i] = mem[i].wrapping_add(acc | 1);
            acc = acc.wrapping_add(mem[i]);
        }
        std::hint::black_box(&mut *mem);
    }
    acc
}

/// A chain of dependent multiplies.
fn multiply(n: u64) -> u64 {
    let mut x = std::hint::black_box(3u64);
    for _ in 0..n * 4096 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
    }
    x
}

/// A CPU-bound load pinned to one CPU, switched on and off.
struct Load {
    on: Arc<AtomicBool>,
    running: Arc<AtomicBool>,
    quit: Arc<AtomicBool>,
    spins: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<f64>>,
}

impl Load {
    fn new(cpu: u32) -> Load {
        let on = Arc::new(AtomicBool::new(false));
        let running = Arc::new(AtomicBool::new(false));
        let quit = Arc::new(AtomicBool::new(false));
        let spins = Arc::new(AtomicU64::new(0));
        let (o, r, q, s) = (on.clone(), running.clone(), quit.clone(), spins.clone());
        let thread = std::thread::spawn(move || {
            let _ = crate::sys::set_affinity(&CpuSet::from_iter([cpu]));
            while !q.load(Ordering::Acquire) {
                if o.load(Ordering::Acquire) {
                    r.store(true, Ordering::Release);
                    s.fetch_add(shell(8), Ordering::Relaxed);
                } else {
                    r.store(false, Ordering::Release);
                    std::thread::park();
                }
            }
            clock::thread_cpu_secs()
        });
        Load { on, running, quit, spins, thread: Some(thread) }
    }

    /// Stop the load for good: the CPU seconds it used.
    fn end(mut self) -> f64 {
        self.quit.store(true, Ordering::Release);
        self.on.store(false, Ordering::Release);
        let t = self.thread.take().expect("ended once");
        t.thread().unpark();
        t.join().unwrap_or(0.0)
    }

    fn set(&self, on: bool) {
        self.on.store(on, Ordering::Release);
        if let Some(t) = &self.thread {
            t.thread().unpark();
        }
        let t = Instant::now();
        while self.running.load(Ordering::Acquire) != on && t.elapsed() < Duration::from_millis(50) {
            std::hint::spin_loop();
        }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.quit.store(true, Ordering::Release);
        self.on.store(false, Ordering::Release);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
        std::hint::black_box(self.spins.load(Ordering::Relaxed));
    }
}

/// One timed sample of `n` rounds of `kind`: wall seconds, or `None` when
/// the thread did not run through it.
pub(super) fn sample(kind: &str, n: u64, mem: &mut [u64]) -> Option<f64> {
    let c0 = clock::thread_cpu_secs();
    let t = Instant::now();
    std::hint::black_box(work(kind, n, mem));
    let wall = t.elapsed().as_secs_f64();
    let cpu = clock::thread_cpu_secs() - c0;
    (wall - cpu <= 0.02 * wall + 20e-6).then_some(wall)
}

/// Rounds of `kind` that take about [`SAMPLE`] here.
pub(super) fn calibrate(kind: &str, mem: &mut [u64]) -> u64 {
    let mut n = 1u64;
    loop {
        let t = Instant::now();
        std::hint::black_box(work(kind, n, mem));
        let e = t.elapsed();
        if e >= SAMPLE / 4 || n >= 1 << 30 {
            return (n as f64 * SAMPLE.as_secs_f64() / e.as_secs_f64().max(1e-9)).ceil().max(1.0) as u64;
        }
        n *= 2;
    }
}

/// The median of `v` (sorted in place); `None` when empty.
pub(crate) fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 })
}

/// A kind's ratios judged: its slowdown (median less one) and whether it
/// shows interference (above [`LIMIT`], three quarters of the ratios above one).
pub(crate) fn judge(ratios: &[f64]) -> (Option<f64>, bool) {
    let mut v = ratios.to_vec();
    let Some(m) = median(&mut v) else { return (None, false) };
    let above = v.iter().filter(|&&r| r > 1.0).count();
    (Some(m - 1.0), m - 1.0 > LIMIT && above * 4 >= v.len() * 3)
}

/// CPU `cpu`'s idle seconds (`/proc/stat`).
fn idle_of(cpu: u32) -> Option<f64> {
    crate::sys::cpu::stat_cpus().get(cpu as usize).map(|t| t.idle_s)
}

/// Measure how a load on `busy` slows loops on `cpu`, `pairs` pairs of
/// samples per kind, in a thread pinned to `cpu`.
fn measure_pair(cpu: u32, busy: u32, pairs: u32) -> Pair {
    let slow = std::thread::spawn(move || {
        let _ = crate::sys::set_affinity(&CpuSet::from_iter([cpu]));
        let mut mem = vec![1u64; MEM_BYTES / 8];
        let load = Load::new(busy);
        let idle0 = idle_of(busy);
        let t0 = Instant::now();
        let mut out = std::collections::BTreeMap::new();
        let mut any = false;
        for kind in KINDS {
            let n = calibrate(kind, &mut mem);
            let mut ratios = Vec::new();
            let mut tries = 0;
            while ratios.len() < pairs as usize && tries < 2 * pairs {
                tries += 1;
                let loaded_first = tries % 2 == 0;
                let mut take = |on: bool| {
                    load.set(on);
                    sample(kind, n, &mut mem)
                };
                let (q, l) = if loaded_first {
                    let l = take(true);
                    (take(false), l)
                } else {
                    let q = take(false);
                    (q, take(true))
                };
                if let (Some(q), Some(l)) = (q, l) {
                    ratios.push(l / q);
                }
            }
            load.set(false);
            let (s, hit) = judge(&ratios);
            any |= hit;
            if let Some(s) = s {
                out.insert(kind.to_string(), s);
            }
        }
        let loaded = load.end();
        let wall = t0.elapsed().as_secs_f64();
        // Other tasks' share of the busy CPU while it was measured: the
        // "quiet" side was not quiet when it is large.
        let other_work = match (idle0, idle_of(busy)) {
            (Some(a), Some(b)) if wall > 0.0 => Some(((wall - (b - a)).max(0.0) - loaded).max(0.0) / wall),
            _ => None,
        };
        (out, any, other_work)
    });
    let (slowdown, interferes, other_work) = slow.join().unwrap_or_default();
    Pair { cpu, busy, slowdown, pairs, interferes, other_work }
}

/// Measure every ordered pair of `cpus` (none above [`MAX_CPUS`]).
pub(crate) fn measure(machine: crate::measure::interfere::MachineId, cpus: &CpuSet) -> Option<Record> {
    let v: Vec<u32> = cpus.iter().collect();
    if v.len() < 2 || v.len() > MAX_CPUS {
        return None;
    }
    let ordered = (v.len() * (v.len() - 1)) as f64;
    let per = BUDGET.as_secs_f64() / (ordered * KINDS.len() as f64 * 2.0 * SAMPLE.as_secs_f64());
    let pairs = (per as u32).clamp(MIN_PAIRS, MAX_PAIRS);
    let mut out = Vec::new();
    for &c in &v {
        for &b in v.iter().filter(|&&b| b != c) {
            out.push(measure_pair(c, b, pairs));
        }
    }
    Some(Record { machine, measured_at: clock::unix_now(), limit: LIMIT, pairs: out, pairing: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_are_judged_by_their_median_and_how_many_are_above_one() {
        // A busy CPU 1 slowed the shell loop on CPU 0 by about a quarter.
        let (s, hit) = judge(&[1.2, 1.3, 1.24, 1.1, 1.4, 0.99, 1.25]);
        assert!((s.unwrap() - 0.24).abs() < 1e-9 && hit);
        // The multiply chain: no slowdown.
        let (s, hit) = judge(&[1.0, 1.01, 0.99, 1.02, 0.98]);
        assert!(s.unwrap().abs() < 0.011 && !hit);
        // A median above the limit but half the pairs faster: noise, not interference.
        assert!(!judge(&[0.9, 0.95, 1.2, 1.3, 0.8, 1.25, 1.1, 0.97]).1);
        assert_eq!(judge(&[]), (None, false));
    }

    #[test]
    fn the_loops_do_their_work() {
        let mut mem = vec![1u64; 64];
        for k in KINDS {
            assert_ne!(work(k, 3, &mut mem), work(k, 4, &mut mem), "{k}");
        }
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }
}
