//! AIM9's computing tests: `sieve`, `num_rtns_1`, `trig_rtns`,
//! `matrix_rtns`, `array_rtns`, `series_1` and `new_raph`.
//!
//! Each checks what it computes on every call (prime count, solver
//! residual, series against libm's sin, Newton roots) and fails otherwise.
//! The math routines are libm's, called through the C ABI as AIM9 did.

use super::runner::{Ctx, Work};
use anyhow::{bail, Result};
use std::hint::black_box;
use std::os::raw::{c_double, c_int};

#[link(name = "m")]
extern "C" {
    fn floor(x: c_double) -> c_double;
    fn ceil(x: c_double) -> c_double;
    fn modf(x: c_double, ip: *mut c_double) -> c_double;
    fn frexp(x: c_double, e: *mut c_int) -> c_double;
    fn ldexp(x: c_double, e: c_int) -> c_double;
    fn fmod(x: c_double, y: c_double) -> c_double;
    fn sqrt(x: c_double) -> c_double;
    fn pow(x: c_double, y: c_double) -> c_double;
    fn exp(x: c_double) -> c_double;
    fn log(x: c_double) -> c_double;
    fn log10(x: c_double) -> c_double;
    fn sin(x: c_double) -> c_double;
    fn cos(x: c_double) -> c_double;
    fn tan(x: c_double) -> c_double;
    fn asin(x: c_double) -> c_double;
    fn acos(x: c_double) -> c_double;
    fn atan(x: c_double) -> c_double;
    fn atan2(y: c_double, x: c_double) -> c_double;
    fn sinh(x: c_double) -> c_double;
    fn cosh(x: c_double) -> c_double;
    fn tanh(x: c_double) -> c_double;
}

// ---------------------------------------------------------------- sieve

/// Sieve size and the number of primes below it.
pub const SIEVE_N: usize = 1_000_000;
pub const SIEVE_PRIMES: usize = 78_498;
/// Sieves per call (AIM9's argument "1000000 5").
pub const SIEVES: usize = 5;

struct Sieve {
    done: f64,
}

/// AIM9's sieve over `t`: every entry set, then for each n from 2 whose
/// entry is still set, the multiples from 2n up cleared (no square-root
/// shortcut, as AIM9).
pub fn sieve_pass(t: &mut [u8]) {
    t.fill(1);
    let max = t.len();
    for n in 2..max {
        if t[n] != 1 {
            continue;
        }
        let mut i = n + n;
        while i < max {
            t[i] = 0;
            i += n;
        }
    }
}

impl Work for Sieve {
    /// As AIM9: a table allocated for the call, 5 sieves, one count (0 and
    /// 1 stay set, as in AIM9), the table freed.
    fn call(&mut self) -> Result<()> {
        let mut t = vec![0u8; SIEVE_N];
        for _ in 0..SIEVES {
            sieve_pass(black_box(&mut t));
        }
        let c = t.iter().filter(|&&f| f == 1).count();
        if c != SIEVE_PRIMES + 2 {
            bail!("sieve found {} primes below {SIEVE_N}, expected {SIEVE_PRIMES}", c.saturating_sub(2));
        }
        self.done = SIEVES as f64;
        Ok(())
    }
    fn done(&self) -> f64 {
        self.done
    }
}

pub fn sieve(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Sieve { done: 0.0 }))
}

// ---------------------------------------------------------------- num_rtns_1, trig_rtns

const INPUTS: usize = 20;
/// Function evaluations per call.
pub const NUM_CALLS: usize = 11 * INPUTS;
pub const TRIG_CALLS: usize = 10 * INPUTS;

fn table(lo: f64, hi: f64) -> Vec<f64> {
    (0..INPUTS).map(|i| lo + (hi - lo) * (i as f64 + 0.5) / INPUTS as f64).collect()
}

struct Num {
    xs: Vec<f64>,
    count: usize,
    trig: bool,
}

impl Work for Num {
    fn call(&mut self) -> Result<()> {
        let mut acc = 0.0;
        let mut n = 0;
        for &x in black_box(&self.xs) {
            // SAFETY: plain libm functions on finite doubles; the out-pointers
            // are valid locals.
            unsafe {
                if self.trig {
                    let s = x * 0.9; // in (-0.9, 0.9): inside asin/acos's domain
                    acc += sin(s) + cos(s) + tan(s) + asin(s) + acos(s) + atan(s) + atan2(s, 0.75) + sinh(s) + cosh(s) + tanh(s);
                    n += 10;
                } else {
                    let mut ip = 0.0;
                    let mut e: c_int = 0;
                    acc += floor(x) + ceil(x) + modf(x, &mut ip) + ip;
                    acc += frexp(x, &mut e) + ldexp(x, e & 7);
                    acc += fmod(x, 1.75) + sqrt(x) + pow(x, 1.5) + exp(x * 0.1) + log(x) + log10(x);
                    n += 11;
                }
            }
        }
        if !black_box(acc).is_finite() {
            bail!("numeric routines gave a non-finite sum");
        }
        self.count = n;
        Ok(())
    }
    fn done(&self) -> f64 {
        self.count as f64
    }
}

pub fn num_rtns_1(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Num { xs: table(0.5, 100.0), count: 0, trig: false }))
}

pub fn trig_rtns(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Num { xs: table(-1.0, 1.0), count: 0, trig: true }))
}

// ---------------------------------------------------------------- matrix_rtns

/// Points transformed per call.
pub const POINTS: usize = 100;

struct Matrix {
    m: [[f64; 4]; 4],
    pts: Vec<[f64; 4]>,
    out: Vec<[f64; 4]>,
    count: usize,
}

impl Work for Matrix {
    fn call(&mut self) -> Result<()> {
        let m = black_box(&self.m);
        let mut n = 0;
        for (p, o) in black_box(&self.pts).iter().zip(self.out.iter_mut()) {
            for r in 0..4 {
                o[r] = m[r][0] * p[0] + m[r][1] * p[1] + m[r][2] * p[2] + m[r][3] * p[3];
            }
            n += 1;
        }
        black_box(&mut self.out);
        // A rotation plus translation keeps w = 1.
        if self.out.iter().any(|o| (o[3] - 1.0).abs() > 1e-12) {
            bail!("matrix transform broke the homogeneous coordinate");
        }
        self.count = n;
        Ok(())
    }
    fn done(&self) -> f64 {
        self.count as f64
    }
}

pub fn matrix_rtns(_c: &Ctx) -> Result<Box<dyn Work>> {
    let (s, c) = (0.3f64.sin(), 0.3f64.cos());
    let m = [[c, -s, 0.0, 1.0], [s, c, 0.0, 2.0], [0.0, 0.0, 1.0, 3.0], [0.0, 0.0, 0.0, 1.0]];
    let pts = (0..POINTS).map(|i| [i as f64, (i * 7 % 13) as f64, (i % 5) as f64, 1.0]).collect();
    Ok(Box::new(Matrix { m, pts, out: vec![[0.0; 4]; POINTS], count: 0 }))
}

// ---------------------------------------------------------------- array_rtns

/// Systems solved per call: sizes 5, 10, ..., 100.
pub const SYSTEMS: usize = 20;

fn sizes() -> impl Iterator<Item = usize> {
    (1..=SYSTEMS).map(|k| 5 * k)
}

/// Solve `a x = b` (a is n x n, row-major) by Gauss-Jordan elimination with
/// partial pivoting, in place: on return `b` holds x. `None` if singular.
pub fn gauss_jordan(a: &mut [f64], b: &mut [f64], n: usize) -> Option<()> {
    for col in 0..n {
        let piv = (col..n).max_by(|&i, &j| a[i * n + col].abs().total_cmp(&a[j * n + col].abs()))?;
        if a[piv * n + col].abs() < 1e-300 {
            return None;
        }
        if piv != col {
            for k in 0..n {
                a.swap(piv * n + k, col * n + k);
            }
            b.swap(piv, col);
        }
        let d = a[col * n + col];
        for k in 0..n {
            a[col * n + k] /= d;
        }
        b[col] /= d;
        for r in 0..n {
            if r != col {
                let f = a[r * n + col];
                if f != 0.0 {
                    for k in 0..n {
                        a[r * n + k] -= f * a[col * n + k];
                    }
                    b[r] -= f * b[col];
                }
            }
        }
    }
    Some(())
}

struct Array {
    systems: Vec<(usize, Vec<f64>, Vec<f64>)>,
    a: Vec<f64>,
    x: Vec<f64>,
    count: usize,
}

/// A diagonally dominant matrix and right-hand side from a small LCG.
fn system(n: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut next = || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    };
    let mut a: Vec<f64> = (0..n * n).map(|_| next()).collect();
    for i in 0..n {
        a[i * n + i] += n as f64;
    }
    let b = (0..n).map(|_| next()).collect();
    (a, b)
}

/// Largest |a x - b| relative to the largest |b|.
pub fn residual(a: &[f64], x: &[f64], b: &[f64], n: usize) -> f64 {
    let bmax = b.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300);
    (0..n).map(|i| ((0..n).map(|k| a[i * n + k] * x[k]).sum::<f64>() - b[i]).abs()).fold(0.0, f64::max) / bmax
}

impl Work for Array {
    fn call(&mut self) -> Result<()> {
        let mut solved = 0;
        for (n, a0, b0) in &self.systems {
            let n = *n;
            self.a.clear();
            self.a.extend_from_slice(a0);
            self.x.clear();
            self.x.extend_from_slice(b0);
            if gauss_jordan(black_box(&mut self.a), &mut self.x, n).is_none() {
                bail!("Gauss-Jordan found the {n}x{n} system singular");
            }
            let r = residual(a0, &self.x, b0, n);
            if r.is_nan() || r >= 1e-9 {
                bail!("Gauss-Jordan residual {r:e} too large for the {n}x{n} system");
            }
            solved += 1;
        }
        self.count = solved;
        Ok(())
    }
    fn done(&self) -> f64 {
        self.count as f64
    }
}

pub fn array_rtns(_c: &Ctx) -> Result<Box<dyn Work>> {
    let systems = sizes().map(|n| {
        let (a, b) = system(n, n as u64);
        (n, a, b)
    });
    Ok(Box::new(Array { systems: systems.collect(), a: Vec::new(), x: Vec::new(), count: 0 }))
}

// ---------------------------------------------------------------- series_1

/// Series evaluated per call (one per input in [-pi, pi]).
pub const SERIES: usize = INPUTS;

/// sin(x) by its Taylor series, summed until a term no longer changes the sum.
pub fn taylor_sin(x: f64) -> f64 {
    let mut term = x;
    let mut sum = x;
    let mut k = 1.0;
    loop {
        term *= -x * x / ((k + 1.0) * (k + 2.0));
        k += 2.0;
        let next = sum + term;
        if next == sum || k > 200.0 {
            return next;
        }
        sum = next;
    }
}

struct Series {
    xs: Vec<f64>,
    count: usize,
}

impl Work for Series {
    fn call(&mut self) -> Result<()> {
        let mut n = 0;
        for &x in black_box(&self.xs) {
            let s = taylor_sin(x);
            // SAFETY: libm sin on a finite double.
            let want = unsafe { sin(x) };
            if (s - want).abs() > 1e-12 {
                bail!("Taylor series of sin({x}) gave {s}, libm says {want}");
            }
            n += 1;
        }
        self.count = n;
        Ok(())
    }
    fn done(&self) -> f64 {
        self.count as f64
    }
}

pub fn series_1(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Series { xs: table(-std::f64::consts::PI, std::f64::consts::PI), count: 0 }))
}

// ---------------------------------------------------------------- new_raph

/// Zeros found per call: the real root of x^3 - a for 20 values of a.
pub const ZEROS: usize = INPUTS;

/// The real zero of x^3 - a by Newton-Raphson from x = max(a, 1).
pub fn newton_cbrt(a: f64) -> Option<f64> {
    let mut x = a.max(1.0);
    for _ in 0..200 {
        let f = x * x * x - a;
        let d = 3.0 * x * x;
        if d == 0.0 {
            return None;
        }
        let nx = x - f / d;
        if (nx - x).abs() <= 1e-14 * nx.abs() {
            return Some(nx);
        }
        x = nx;
    }
    None
}

struct Raph {
    a: Vec<f64>,
    count: usize,
}

impl Work for Raph {
    fn call(&mut self) -> Result<()> {
        let mut n = 0;
        for &a in black_box(&self.a) {
            let Some(x) = newton_cbrt(a) else { bail!("Newton-Raphson did not converge for x^3 - {a}") };
            if (x * x * x - a).abs() > 1e-9 * a {
                bail!("Newton-Raphson zero {x} of x^3 - {a} is off");
            }
            n += 1;
        }
        self.count = n;
        Ok(())
    }
    fn done(&self) -> f64 {
        self.count as f64
    }
}

pub fn new_raph(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Raph { a: table(1.0, 1000.0), count: 0 }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sieve_counts_primes() {
        // 0 and 1 stay set, as in AIM9.
        let mut t = vec![0u8; 100];
        sieve_pass(&mut t);
        assert_eq!(t.iter().filter(|&&f| f == 1).count(), 25 + 2);
    }

    #[test]
    fn solver_residual_is_small() {
        for n in [5, 37, 100] {
            let (a, b) = system(n, 9);
            let (mut w, mut x) = (a.clone(), b.clone());
            gauss_jordan(&mut w, &mut x, n).unwrap();
            assert!(residual(&a, &x, &b, n) < 1e-12);
        }
        // singular
        let mut a = vec![1.0, 2.0, 2.0, 4.0];
        let mut b = vec![1.0, 2.0];
        assert!(gauss_jordan(&mut a, &mut b, 2).is_none());
    }

    #[test]
    fn series_and_newton_are_right() {
        for x in table(-3.0, 3.0) {
            assert!((taylor_sin(x) - x.sin()).abs() < 1e-12);
        }
        for a in [1.0, 8.0, 27.0, 1000.0, 2.5] {
            let x = newton_cbrt(a).unwrap();
            assert!((x - a.cbrt()).abs() < 1e-12 * a, "{a} {x}");
        }
    }
}
