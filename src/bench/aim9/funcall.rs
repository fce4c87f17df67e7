//! AIM9's function-call tests: `fun_cal`, `fun_cal1`, `fun_cal2`, `fun_cal15`.
//!
//! One call makes [`CALLS`] indirect calls through a function pointer the
//! optimiser cannot see through (`black_box`) to a `#[inline(never)]` callee
//! taking 0, 1, 2 or 15 `i64` arguments, like AIM9's empty functions. The
//! arguments vary with the loop index so each call really passes them.

use super::runner::{Ctx, Work};
use anyhow::Result;
use std::hint::black_box;

/// Indirect calls per test call.
pub const CALLS: u32 = 1000;

#[inline(never)]
extern "C" fn f0() {}
#[inline(never)]
extern "C" fn f1(_a: i64) {}
#[inline(never)]
extern "C" fn f2(_a: i64, _b: i64) {}
#[allow(clippy::too_many_arguments)]
#[inline(never)]
extern "C" fn f15(_a: i64, _b: i64, _c: i64, _d: i64, _e: i64, _f: i64, _g: i64, _h: i64, _i: i64, _j: i64, _k: i64, _l: i64, _m: i64, _n: i64, _o: i64) {}

type F15 = extern "C" fn(i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64);

#[derive(Clone, Copy)]
enum Arity {
    A0,
    A1,
    A2,
    A15,
}

struct FunCal {
    arity: Arity,
    done: f64,
}

/// `n` calls through the pointer; returns how many were made.
#[inline(never)]
fn calls(arity: Arity, n: u32) -> u32 {
    let mut made = 0;
    match arity {
        Arity::A0 => {
            let f = black_box(f0 as extern "C" fn());
            for _ in 0..n {
                f();
                made += 1;
            }
        }
        Arity::A1 => {
            let f = black_box(f1 as extern "C" fn(i64));
            for i in 0..n as i64 {
                f(i);
                made += 1;
            }
        }
        Arity::A2 => {
            let f = black_box(f2 as extern "C" fn(i64, i64));
            for i in 0..n as i64 {
                f(i, i + 1);
                made += 1;
            }
        }
        Arity::A15 => {
            let f = black_box(f15 as F15);
            for i in 0..n as i64 {
                f(i, i + 1, i + 2, i + 3, i + 4, i + 5, i + 6, i + 7, i + 8, i + 9, i + 10, i + 11, i + 12, i + 13, i + 14);
                made += 1;
            }
        }
    }
    made
}

impl Work for FunCal {
    fn call(&mut self) -> Result<()> {
        let made = calls(self.arity, black_box(CALLS));
        self.done = black_box(made) as f64;
        Ok(())
    }
    fn done(&self) -> f64 {
        self.done
    }
}

fn make(arity: Arity) -> Result<Box<dyn Work>> {
    Ok(Box::new(FunCal { arity, done: 0.0 }))
}

pub fn fun_cal(_c: &Ctx) -> Result<Box<dyn Work>> {
    make(Arity::A0)
}
pub fn fun_cal1(_c: &Ctx) -> Result<Box<dyn Work>> {
    make(Arity::A1)
}
pub fn fun_cal2(_c: &Ctx) -> Result<Box<dyn Work>> {
    make(Arity::A2)
}
pub fn fun_cal15(_c: &Ctx) -> Result<Box<dyn Work>> {
    make(Arity::A15)
}
