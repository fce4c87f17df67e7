//! AIM9's linear-algebra tests of num_fcns.c: `matrix_rtns` (a point by a
//! 4x4 matrix, both fresh from the value table for every point) and
//! `array_rtns` (20 linear systems of 5 to 100 unknowns solved by AIM9's
//! Gauss-Jordan elimination without pivoting, each checked against the
//! saved original). The same loops, sizes, start values and layout as AIM9
//! (`m(x,y) = a[x + wide*y]` in arrays of 100 x 101 doubles, both cleared at
//! the start of every call, the whole array saved before every solution).
//! The barrier is as in `compute.rs`: `black_box` where AIM9 stores to a
//! global, one store.

use super::compute::Values;
use super::runner::{Ctx, Work};
use anyhow::{bail, Result};
use std::hint::black_box;

// ---------------------------------------------------------------- matrix_rtns

/// Points transformed per call (AIM9's argument "100").
pub(crate) const POINTS: usize = 100;

struct Matrix {
    v: Values,
}

impl Work for Matrix {
    fn call(&mut self) -> Result<f64> {
        let mut prod = 0.0;
        let mut n = 0;
        while n < POINTS {
            let mut v1 = [0.0f64; 4];
            let mut v2 = [[0.0f64; 4]; 4];
            for x in &mut v1 {
                *x = self.v.next_value();
            }
            for row in &mut v2 {
                for x in row {
                    *x = self.v.next_value();
                }
            }
            let mut v3 = [0.0f64; 4];
            for i in 0..4 {
                for j in 0..4 {
                    v3[i] += v1[j] * v2[i][j];
                }
            }
            // Screen coordinates, as AIM9 (C's double to int conversion).
            let i = (v3[0] * 1280.0) as i32;
            let j = (v3[1] * 1024.0) as i32;
            let k = (v3[2] * 8192.0) as i32;
            prod += v3[0] * v3[1] * v3[2];
            black_box(f64::from(i.wrapping_add(j).wrapping_add(k)) + prod);
            n += 1;
        }
        Ok(n as f64)
    }
}

pub(crate) fn matrix_rtns(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Matrix { v: Values::new() }))
}

// ---------------------------------------------------------------- array_rtns

/// Systems solved per call (AIM9's argument "20"): sizes 5, 10, ..., 100.
pub(crate) const SYSTEMS: usize = 20;
/// AIM9's A_HEIGHT and A_WIDTH.
pub(crate) const A_HEIGHT: usize = 100;
pub(crate) const A_WIDTH: usize = 101;
const A_SIZE: usize = A_HEIGHT * A_WIDTH;

/// AIM9's solve_array: `high` equations, `wide` = high + 1 columns (the
/// last is the right-hand side), `m(x,y) = a[x + wide*y]`. Upper triangular
/// with a unit diagonal (no pivoting), then back to the identity; the
/// solution is the last column. False if a diagonal entry is 0.
pub(crate) fn solve_array(a: &mut [f64], b: &mut [f64], wide: usize, high: usize) -> bool {
    let m = |x: usize, y: usize| x + wide * y;
    for i in 0..high {
        let t = a[m(i, i)];
        if t == 0.0 {
            return false;
        }
        for j in i..wide {
            a[m(j, i)] /= t;
        }
        for j in i + 1..high {
            let t = a[m(i, j)];
            for k in 0..wide {
                a[m(k, j)] -= t * a[m(k, i)];
            }
        }
    }
    for i in (1..high).rev() {
        for j in (0..i).rev() {
            let t = a[m(i, j)];
            for k in 0..wide {
                a[m(k, j)] -= t * a[m(k, i)];
            }
        }
    }
    for (i, x) in b.iter_mut().enumerate().take(high) {
        *x = a[m(wide - 1, i)];
    }
    true
}

/// AIM9's test(): every row of the original times the solution within 0.5
/// of its right-hand side; the first row that is not, with its error.
pub(crate) fn check(a: &[f64], b: &[f64], wide: usize, high: usize) -> Option<(usize, f64)> {
    let m = |x: usize, y: usize| x + wide * y;
    for i in 0..high {
        let mut t = 0.0;
        for (j, bj) in b.iter().enumerate().take(high) {
            t += a[m(j, i)] * bj;
        }
        let err = (a[m(wide - 1, i)] - t).abs();
        if err > 0.5 || err.is_nan() {
            return Some((i, err));
        }
    }
    None
}

struct Array {
    a: Vec<f64>,
    orig: Vec<f64>,
    results: Vec<f64>,
}

impl Work for Array {
    fn call(&mut self) -> Result<f64> {
        self.a.fill(0.0);
        self.orig.fill(0.0);
        let mut val = 1.0f64;
        let mut high = 5;
        let mut n = 0;
        while n < SYSTEMS {
            if high > A_HEIGHT {
                high = 5;
            }
            let wide = high + 1;
            for j in 0..high {
                for k in 0..wide {
                    self.a[k + wide * j] = val;
                    val = val * 1.00001 + 1.0;
                    if val > 1e20 {
                        val -= 1e19;
                    }
                }
            }
            self.orig.copy_from_slice(&self.a);
            if !solve_array(black_box(&mut self.a), &mut self.results, wide, high) {
                bail!("array_rtns: singular matrix of size {high}");
            }
            if let Some((row, err)) = check(&self.orig, &self.results, wide, high) {
                bail!("array_rtns: illegal results from the matrix of size {high} (row {row} off by {err})");
            }
            n += 1;
            high += 5;
        }
        Ok(n as f64)
    }
}

pub(crate) fn array_rtns(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Array { a: vec![0.0; A_SIZE], orig: vec![0.0; A_SIZE], results: vec![0.0; A_HEIGHT] }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solver_solves_and_the_check_catches_a_wrong_answer() {
        // 2x + y = 5, x + 3y = 10: x = 1, y = 3.
        let orig = [2.0, 1.0, 5.0, 1.0, 3.0, 10.0];
        let mut a = orig;
        let mut b = [0.0; 2];
        assert!(solve_array(&mut a, &mut b, 3, 2));
        assert!((b[0] - 1.0).abs() < 1e-12 && (b[1] - 3.0).abs() < 1e-12, "{b:?}");
        assert_eq!(check(&orig, &b, 3, 2), None);
        assert!(check(&orig, &[1.0, 4.0], 3, 2).is_some());
        let mut z = [0.0, 1.0, 1.0, 1.0, 1.0, 1.0];
        assert!(!solve_array(&mut z, &mut b, 3, 2));
    }

    #[test]
    fn each_call_solves_aim9s_twenty_systems() {
        let ctx = Ctx { dir: std::env::temp_dir(), filesize: 0, sync: false };
        for (make, want) in [(matrix_rtns as fn(&Ctx) -> Result<Box<dyn Work>>, POINTS), (array_rtns, SYSTEMS)] {
            let mut w = make(&ctx).unwrap();
            // Twice: the second call starts from the same values (val = 1, arrays cleared).
            for _ in 0..2 {
                assert_eq!(w.call().unwrap(), want as f64);
            }
        }
        assert_eq!((POINTS, SYSTEMS), (100, 20));
    }
}
