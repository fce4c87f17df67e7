//! AIM9's function-call tests: `fun_cal`, `fun_cal1`, `fun_cal2`,
//! `fun_cal15` (fun.c and funcal.c).
//!
//! One call makes [`CALLS`] indirect calls (AIM9: 1000 x 512) through a
//! function pointer the optimiser cannot see through (`black_box`) to a
//! `#[inline(never)]` callee taking 0, 1, 2 or 15 `i32` arguments. Like
//! AIM9's callees, each adds to a global counter: fcal0 adds a global input
//! value, fcal1 its argument, fcal2 the sum of its two, fcal15 the sum of
//! its 8th and 15th. The counter is an atomic read and written with relaxed
//! loads and stores (plain moves, no locked instruction), as AIM9's
//! `*p_fcount += ...` is a plain read-modify-write.
//!
//! The callees are `extern "C"` because AIM9's are C functions: their
//! arguments travel by the C calling convention (on x86-64 six in registers,
//! fcal15's other nine on the stack), and that calling convention, not a Rust
//! API, is what the 15-argument signature stands for.

use super::runner::{Ctx, Work};
use anyhow::Result;
use std::hint::black_box;
use std::sync::atomic::{AtomicI32, Ordering};

/// Indirect calls per test call (AIM9's factor 512000).
pub(crate) const CALLS: u32 = 512_000;

static FCOUNT: AtomicI32 = AtomicI32::new(0);
static INPUT: AtomicI32 = AtomicI32::new(1);

#[inline(always)]
fn bump(v: i32) -> i32 {
    let c = FCOUNT.load(Ordering::Relaxed).wrapping_add(v);
    FCOUNT.store(c, Ordering::Relaxed);
    c
}

#[inline(never)]
extern "C" fn f0() -> i32 {
    bump(INPUT.load(Ordering::Relaxed))
}
#[inline(never)]
extern "C" fn f1(a: i32) -> i32 {
    bump(a)
}
#[inline(never)]
extern "C" fn f2(a: i32, b: i32) -> i32 {
    bump(a.wrapping_add(b))
}
#[inline(never)]
extern "C" fn f15(
    _a: i32,
    _b: i32,
    _c: i32,
    _d: i32,
    _e: i32,
    _f: i32,
    _g: i32,
    h: i32,
    _i: i32,
    _j: i32,
    _k: i32,
    _l: i32,
    _m: i32,
    _n: i32,
    o: i32,
) -> i32 {
    bump(h.wrapping_add(o))
}

type F15 = extern "C" fn(i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32) -> i32;

#[derive(Clone, Copy)]
enum Arity {
    A0,
    A1,
    A2,
    A15,
}

struct FunCal {
    arity: Arity,
}

/// AIM9's loops: 1000 x 32 x 16 calls (0, 1, 2 arguments; the arguments
/// are the loop counters) or 1000 x 512 calls (15 arguments, all the inner
/// counter); returns how many were made.
#[inline(never)]
fn calls(arity: Arity) -> u32 {
    let mut made = 0;
    let outer = black_box(1000i32);
    macro_rules! sixteen {
        ($e:expr) => {{
            $e;
            $e;
            $e;
            $e;
            $e;
            $e;
            $e;
            $e;
            $e;
            $e;
            $e;
            $e;
            $e;
            $e;
            $e;
            $e;
            made += 16;
        }};
    }
    match arity {
        Arity::A0 => {
            let f = black_box(f0 as extern "C" fn() -> i32);
            for _ in 0..outer {
                for _ in 0..32 {
                    sixteen!(f());
                }
            }
        }
        Arity::A1 => {
            let f = black_box(f1 as extern "C" fn(i32) -> i32);
            for n in (0..outer).rev() {
                for _ in 0..32 {
                    sixteen!(f(n));
                }
            }
        }
        Arity::A2 => {
            let f = black_box(f2 as extern "C" fn(i32, i32) -> i32);
            for n in (0..outer).rev() {
                for i in (0..32).rev() {
                    sixteen!(f(n, i));
                }
            }
        }
        Arity::A15 => {
            let f = black_box(f15 as F15);
            for _ in 0..outer {
                for i in (0..512).rev() {
                    f(i, i, i, i, i, i, i, i, i, i, i, i, i, i, i);
                    made += 1;
                }
            }
        }
    }
    made
}

impl Work for FunCal {
    fn call(&mut self) -> Result<f64> {
        let made = calls(self.arity);
        Ok(black_box(made) as f64)
    }
}

fn make(arity: Arity) -> Result<Box<dyn Work>> {
    Ok(Box::new(FunCal { arity }))
}

pub(crate) fn fun_cal(_c: &Ctx) -> Result<Box<dyn Work>> {
    make(Arity::A0)
}
pub(crate) fn fun_cal1(_c: &Ctx) -> Result<Box<dyn Work>> {
    make(Arity::A1)
}
pub(crate) fn fun_cal2(_c: &Ctx) -> Result<Box<dyn Work>> {
    make(Arity::A2)
}
pub(crate) fn fun_cal15(_c: &Ctx) -> Result<Box<dyn Work>> {
    make(Arity::A15)
}
