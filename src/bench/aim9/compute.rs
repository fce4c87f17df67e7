//! AIM9's computing tests of int_fcns.c and num_fcns.c: `sieve`,
//! `num_rtns_1`, `trig_rtns`, `series_1` and `new_raph` (`matrix_rtns` and
//! `array_rtns` are in `linear.rs`), each doing per call what AIM9's function
//! does with its registered argument: the same loop counts, start values,
//! value tables ([`Values`]) and libm functions, called through the C ABI
//! where AIM9's `gcc -O` build calls them (it inlines floor, ceil, fabs,
//! sqrt and labs, and so does Rust). Where AIM9 checks a result (series
//! against sin, Newton within 100 tries) kdelta fails the call as AIM9 does.
//!
//! The barrier: AIM9 stores each result in a global (`compiler_fake_out1..5`)
//! so the compiler must compute it; kdelta passes it through `black_box`,
//! which costs the same one store to memory.

use super::runner::{Ctx, Work};
use anyhow::{bail, Result};
use std::hint::black_box;
use std::os::raw::{c_double, c_int};

#[link(name = "m")]
extern "C" {
    fn modf(x: c_double, ip: *mut c_double) -> c_double;
    fn frexp(x: c_double, e: *mut c_int) -> c_double;
    fn ldexp(x: c_double, e: c_int) -> c_double;
    fn fmod(x: c_double, y: c_double) -> c_double;
    fn pow(x: c_double, y: c_double) -> c_double;
    fn exp(x: c_double) -> c_double;
    fn log(x: c_double) -> c_double;
    fn log10(x: c_double) -> c_double;
    fn sin(x: c_double) -> c_double;
    fn cos(x: c_double) -> c_double;
    fn tan(x: c_double) -> c_double;
    fn sincos(x: c_double, s: *mut c_double, c: *mut c_double);
    fn srand(seed: std::os::raw::c_uint);
    fn rand() -> c_int;
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
pub(crate) const SIEVE_N: usize = 1_000_000;
pub(crate) const SIEVE_PRIMES: usize = 78_498;
/// Sieves per call (AIM9's argument "1000000 5").
pub(crate) const SIEVES: usize = 5;

struct Sieve;

/// AIM9's sieve over `t`: every entry set, then for each n from 2 whose
/// entry is still set, the multiples from 2n up cleared (no square-root
/// shortcut, as AIM9).
pub(crate) fn sieve_pass(t: &mut [u8]) {
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
    fn call(&mut self) -> Result<f64> {
        let mut t = vec![0u8; SIEVE_N];
        for _ in 0..SIEVES {
            sieve_pass(black_box(&mut t));
        }
        let c = t.iter().filter(|&&f| f == 1).count();
        if c != SIEVE_PRIMES + 2 {
            bail!("sieve found {} primes below {SIEVE_N}, expected {SIEVE_PRIMES}", c.saturating_sub(2));
        }
        Ok(SIEVES as f64)
    }
}

pub(crate) fn sieve(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Sieve))
}

// ---------------------------------------------------------------- AIM9's value tables

/// Entries of AIM9's `vals[]` (NUMVALS) and `vals10[]` (NUM10VALS).
pub(crate) const NUMVALS: usize = 500;
pub(crate) const NUM10VALS: usize = 10_000;

/// AIM9's two value tables and their cursors (AIM9's globals `count` and
/// `count10`, which keep running from call to call; here per test).
pub(crate) struct Values {
    vals: Vec<f64>,
    vals10: Vec<f64>,
    count: usize,
    count10: usize,
}

impl Values {
    /// As num_fcns_c() builds them: `vals` = 0, 1, the smallest positive
    /// double, then running halved differences; `vals10` = that smallest
    /// double every 100th entry, else rand()/RAND_MAX x 20 - 10 from the C
    /// library's rand() seeded with 1 (its start state, as at AIM9's start).
    pub(crate) fn new() -> Values {
        let tiny = f64::from_bits(1);
        let mut vals = vec![0.0; NUMVALS];
        vals[1] = 1.0;
        vals[2] = tiny;
        for i in 3..NUMVALS {
            vals[i] = (vals[i - 2] - vals[i - 1]).abs() / 2.0;
        }
        // SAFETY: the C library's srand/rand (they lock their state).
        unsafe { srand(1) };
        let vals10 = (0..NUM10VALS)
            // SAFETY: as above.
            .map(|i| {
                if i % 100 == 0 {
                    tiny
                } else {
                    f64::from(unsafe { rand() }) / f64::from(libc::RAND_MAX) * 20.0 - 10.0
                }
            })
            .collect();
        Values { vals, vals10, count: 0, count10: 0 }
    }
    /// AIM9's `next_value()`.
    #[inline(always)]
    pub(crate) fn next_value(&mut self) -> f64 {
        let v = self.vals[self.count % NUMVALS];
        self.count += 1;
        v
    }
    /// AIM9's `ARG`: the next of vals10, in -10..10.
    #[inline(always)]
    fn arg(&mut self) -> f64 {
        let v = self.vals10[self.count10 % NUM10VALS];
        self.count10 += 1;
        v
    }
    /// AIM9's `POS` (ARG + 10.0001) and `NEG` (ARG - 10.0001).
    #[inline(always)]
    fn pos(&mut self) -> f64 {
        self.arg() + 10.0001
    }
    #[inline(always)]
    fn neg(&mut self) -> f64 {
        self.arg() - 10.0001
    }
}

impl Default for Values {
    fn default() -> Self {
        Values::new()
    }
}

// ---------------------------------------------------------------- num_rtns_1

/// Loop rounds per call (AIM9's argument "100", its factor 100).
pub(crate) const NUM_ROUNDS: usize = 100;

/// One round of AIM9's num_rtns_1 loop (its `debug < 10` branch): 8 libm
/// calls (exp, log10, log, modf, frexp, ldexp, fmod, pow), floor, ceil, fabs,
/// sqrt and labs inline, srand and rand; 5 results kept.
#[inline(always)]
fn num_round(v: &mut Values, n: usize) -> [f64; 5] {
    let mut itemp1: c_int = 0;
    let mut dtemp1 = 0.0;
    // SAFETY: libm functions on finite doubles; the out-pointers are locals;
    // srand/rand are the C library's.
    unsafe {
        let o1 = exp(v.arg()).floor() + log10(v.pos()).ceil();
        let o2 = modf(log(v.pos()), &mut dtemp1) + frexp(v.neg(), &mut itemp1);
        let o3 = ldexp(v.arg(), itemp1.wrapping_neg().wrapping_abs()) + fmod(v.arg() * 5.0, v.pos()).abs();
        let o4 = pow(v.pos(), v.arg()).sqrt();
        srand(itemp1 as std::os::raw::c_uint);
        let o5 = (-(rand() as i64) + n as i64).abs() as f64;
        [o1, o2, o3, o4, o5]
    }
}

struct Num {
    v: Values,
}

impl Work for Num {
    fn call(&mut self) -> Result<f64> {
        let mut n = 0;
        while n < NUM_ROUNDS {
            for o in num_round(&mut self.v, n) {
                black_box(o);
            }
            n += 1;
        }
        Ok(n as f64)
    }
}

pub(crate) fn num_rtns_1(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Num { v: Values::new() }))
}

// ---------------------------------------------------------------- trig_rtns

/// Loop rounds per call: AIM9's argument "100" scaled by 100 (its factor).
pub(crate) const TRIG_ROUNDS: usize = 100 * 100;

/// One round of AIM9's trig_rtns loop: acos(cos(asin(sin(ARG)))),
/// tanh(atan(tan(ARG))), atan2(sinh(ARG), cosh(ARG)): 11 libm calls.
#[inline(always)]
fn trig_round(v: &mut Values) -> [f64; 3] {
    // SAFETY: libm functions on finite doubles (asin of a sine, acos of a cosine).
    unsafe {
        let o1 = acos(cos(asin(sin(v.arg()))));
        let o2 = tanh(atan(tan(v.arg())));
        let o3 = atan2(sinh(v.arg()), cosh(v.arg()));
        [o1, o2, o3]
    }
}

struct Trig {
    v: Values,
}

impl Work for Trig {
    fn call(&mut self) -> Result<f64> {
        let mut n = 0;
        while n < TRIG_ROUNDS {
            for o in trig_round(&mut self.v) {
                black_box(o);
            }
            n += 1;
        }
        Ok(n as f64)
    }
}

pub(crate) fn trig_rtns(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Trig { v: Values::new() }))
}

// ---------------------------------------------------------------- series_1

/// Series evaluated per call (AIM9's argument "100").
pub(crate) const SERIES: usize = 100;

/// AIM9's sine series of `x`: terms x/1!, -x^3/3!, ... added until the sum
/// no longer changes (the factorial kept as a double, as AIM9 does).
pub(crate) fn series_sin(x: f64) -> f64 {
    let mut d1 = x;
    let mut old = 100.0;
    let mut sine = 0.0;
    let d1_squared = d1 * d1;
    let mut fact = 1.0;
    let mut i = 1.0;
    while sine != old {
        old = sine;
        sine += d1 / fact;
        fact *= (i + 1.0) * (i + 2.0);
        i += 2.0;
        d1 *= -d1_squared;
    }
    sine
}

struct Series {
    v: Values,
}

impl Work for Series {
    fn call(&mut self) -> Result<f64> {
        let mut n = 0;
        while n < SERIES {
            let d0 = self.v.next_value();
            let s = series_sin(black_box(d0));
            // SAFETY: libm sin on a finite double.
            let want = unsafe { sin(d0) };
            if (s - want).abs() > 0.0001 {
                bail!("series_1: the series for sin({d0}) gave {s}, sin() gives {want}");
            }
            n += 1;
        }
        Ok(n as f64)
    }
}

pub(crate) fn series_1(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Series { v: Values::new() }))
}

// ---------------------------------------------------------------- new_raph

/// Zeros found per call (AIM9's argument "200").
pub(crate) const ZEROS: usize = 200;
/// AIM9's MAXTRIES.
const MAXTRIES: u32 = 100;

/// AIM9's f(x) = 1000 sin x cos x and f'(x) = 1000 (cos^2 x - sin^2 x), at
/// one x. AIM9's `gcc -O` build inlines both functions and makes one libm
/// `sincos` call for the four sin and cos (checked in its object code), so
/// kdelta calls sincos once a step too.
#[inline(always)]
fn f_and_prime(x: f64) -> (f64, f64) {
    let (mut s, mut c) = (0.0, 0.0);
    // SAFETY: libm's sincos on a finite double into two locals.
    unsafe { sincos(x, &mut s, &mut c) };
    (1000.0 * s * c, -(s * s * 1000.0) + (c * c * 1000.0))
}

/// AIM9's Newton-Raphson from `start`: p = p0 - f(p0)/f'(p0) until p == p0,
/// at most 99 steps. The zero and the steps, or None if it did not settle.
pub(crate) fn newton(start: f64) -> Option<(f64, u32)> {
    let mut p0 = start;
    let mut i = 1;
    while i < MAXTRIES {
        let (f, f_prime) = f_and_prime(p0);
        let p = p0 - f / f_prime;
        if (p - p0).abs() == 0.0 {
            return Some((p, i));
        }
        i += 1;
        p0 = p;
    }
    None
}

struct Raph;

impl Work for Raph {
    fn call(&mut self) -> Result<f64> {
        let mut n = 0;
        while n < ZEROS {
            let start = 0.05 * n as f64;
            match newton(black_box(start)) {
                Some((p, _)) => {
                    black_box(p);
                }
                None => bail!("new_raph: no zero of 1000 sin x cos x from {start} in {MAXTRIES} tries"),
            }
            n += 1;
        }
        Ok(n as f64)
    }
}

pub(crate) fn new_raph(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Raph))
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
    fn value_tables_are_aim9s() {
        let mut v = Values::new();
        assert_eq!((v.vals.len(), v.vals10.len()), (NUMVALS, NUM10VALS));
        assert_eq!(&v.vals[..2], &[0.0, 1.0]);
        assert_eq!(v.vals[2], f64::from_bits(1));
        assert_eq!(v.vals[3], (1.0 - f64::from_bits(1)) / 2.0);
        assert!(v.vals.iter().all(|x| (0.0..=1.0).contains(x)));
        assert!(v.vals10.iter().all(|x| (-10.0..=10.0).contains(x)));
        assert_eq!(v.vals10[100], f64::from_bits(1));
        // The cursors run on past the end and wrap, as AIM9's `count % NUMVALS`.
        for _ in 0..NUMVALS {
            v.next_value();
        }
        assert_eq!(v.next_value(), 0.0);
    }

    #[test]
    fn each_call_does_aim9s_rounds() {
        let ctx = Ctx { dir: std::env::temp_dir(), filesize: 0, sync: false };
        for (make, want) in [
            (num_rtns_1 as fn(&Ctx) -> Result<Box<dyn Work>>, NUM_ROUNDS),
            (trig_rtns, TRIG_ROUNDS),
            (series_1, SERIES),
            (new_raph, ZEROS),
        ] {
            let mut w = make(&ctx).unwrap();
            assert_eq!(w.call().unwrap(), want as f64);
        }
        assert_eq!((NUM_ROUNDS, TRIG_ROUNDS, SERIES, ZEROS), (100, 10_000, 100, 200));
        // Each num_rtns_1 round takes 9 values of vals10 (ARG, POS, NEG), each trig round 4.
        let mut v = Values::new();
        num_round(&mut v, 0);
        assert_eq!(v.count10, 9);
        let mut v = Values::new();
        trig_round(&mut v);
        assert_eq!(v.count10, 4);
    }

    #[test]
    fn series_and_newton_are_right() {
        for x in [0.0, 0.3, 1.0, -2.5, f64::from_bits(1)] {
            assert!((series_sin(x) - x.sin()).abs() < 1e-12, "{x}");
        }
        // Every start AIM9 uses settles on a zero of sin x cos x (a multiple of pi/2).
        for n in 0..ZEROS {
            let (p, steps) = newton(0.05 * n as f64).unwrap_or_else(|| panic!("start {n}"));
            let k = p / std::f64::consts::FRAC_PI_2;
            assert!((k - k.round()).abs() < 1e-9, "start {n}: {p}");
            assert!(steps < MAXTRIES);
        }
    }
}
