//! AIM9's arithmetic tests: `add_*`, `mul_*`, `div_*` over double, float,
//! long (i64), int (i32) and short (i16).
//!
//! One call runs [`ITERS`] iterations of 12 dependent operations on three
//! variables: the accumulator `x` and two operands `p`, `q` the compiler
//! cannot see (read through `black_box`). The values stay bounded:
//! - add: `x += p; x += q` with `q = -p`, so `x` oscillates between x0 and x0+p;
//! - mul: `x *= p; x *= q` with `p = q = -1`, so `x` oscillates between x0 and -x0;
//! - div: `x /= p; x /= q` with `p = q = -1`, the same.
//!
//! Each operation's result goes through [`Opaque::opaque`], an empty inline
//! `asm!` on x86-64 (no instruction, just "this value may have changed"), so
//! the optimiser can neither fold the chain (AIM9's `x*1` and `/1` loops are
//! folded by modern compilers) nor reassociate `x*p*q` into `x*(p*q)`. After
//! the 12 operations `x` is back at x0, which each call checks.

use super::runner::{Ctx, Work};
use anyhow::{bail, Result};
use std::hint::black_box;
use std::ops::{Add, Div, Mul};

/// Loop iterations per call.
pub const ITERS: u32 = 2000;
/// Dependent operations per iteration.
pub const OPS_PER_ITER: u32 = 12;
/// The factor: thousands of operations per call.
pub const KOPS: f64 = (ITERS * OPS_PER_ITER) as f64 / 1000.0;

/// A value the optimiser must treat as unknown after each operation.
pub trait Opaque: Copy {
    fn opaque(self) -> Self;
}

macro_rules! opaque_int {
    ($t:ty, $tmpl:literal) => {
        impl Opaque for $t {
            #[inline(always)]
            fn opaque(self) -> Self {
                #[cfg(target_arch = "x86_64")]
                {
                    let mut v = self;
                    // SAFETY: an empty template (only a comment naming the
                    // register): no instruction runs, no memory or flags are
                    // touched; it only hides the value from the optimiser.
                    unsafe { std::arch::asm!($tmpl, inout(reg) v, options(nomem, nostack, preserves_flags)) };
                    v
                }
                #[cfg(not(target_arch = "x86_64"))]
                {
                    black_box(self)
                }
            }
        }
    };
}
opaque_int!(i16, "/* {0:x} */");
opaque_int!(i32, "/* {0:e} */");
opaque_int!(i64, "/* {0:r} */");

macro_rules! opaque_float {
    ($t:ty) => {
        impl Opaque for $t {
            #[inline(always)]
            fn opaque(self) -> Self {
                #[cfg(target_arch = "x86_64")]
                {
                    let mut v = self;
                    // SAFETY: as for the integers: an empty template on an
                    // SSE register, no instruction, memory or flag effect.
                    unsafe { std::arch::asm!("/* {0} */", inout(xmm_reg) v, options(nomem, nostack, preserves_flags)) };
                    v
                }
                #[cfg(not(target_arch = "x86_64"))]
                {
                    black_box(self)
                }
            }
        }
    };
}
opaque_float!(f32);
opaque_float!(f64);

/// The types the arithmetic tests run on.
pub trait Num: Opaque + PartialEq + Add<Output = Self> + Mul<Output = Self> + Div<Output = Self> + std::fmt::Debug {
    fn from_i16(v: i16) -> Self;
}
macro_rules! num {
    ($($t:ty)*) => {$(
        impl Num for $t {
            fn from_i16(v: i16) -> Self {
                <$t>::from(v)
            }
        }
    )*};
}
num!(i16 i32 i64 f32 f64);

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    Add,
    Mul,
    Div,
}

macro_rules! step {
    ($op:expr, $x:ident, $v:ident) => {
        $x = match $op {
            Op::Add => $x + $v,
            Op::Mul => $x * $v,
            Op::Div => $x / $v,
        }
        .opaque()
    };
}

/// `iters` iterations of 12 dependent operations on `x`, alternating
/// operands `p` and `q`, with `op` a constant in each expansion.
macro_rules! rounds {
    ($op:expr, $x:ident, $p:ident, $q:ident, $iters:expr) => {
        for _ in 0..$iters {
            step!($op, $x, $p);
            step!($op, $x, $q);
            step!($op, $x, $p);
            step!($op, $x, $q);
            step!($op, $x, $p);
            step!($op, $x, $q);
            step!($op, $x, $p);
            step!($op, $x, $q);
            step!($op, $x, $p);
            step!($op, $x, $q);
            step!($op, $x, $p);
            step!($op, $x, $q);
        }
    };
}

/// `iters` iterations of 12 dependent operations; returns the final `x`.
#[inline(never)]
pub fn chain<T: Num>(op: Op, x0: T, p: T, q: T, iters: u32) -> T {
    let (mut x, p, q) = (x0, p, q);
    // `op` is a constant per monomorphised call site after inlining of the
    // caller's match, but even where it is not, the branch is perfectly
    // predicted; the loop body below is straight-line code.
    match op {
        Op::Add => rounds!(Op::Add, x, p, q, iters),
        Op::Mul => rounds!(Op::Mul, x, p, q, iters),
        Op::Div => rounds!(Op::Div, x, p, q, iters),
    }
    x
}

struct Arith<T: Num> {
    op: Op,
    x0: T,
    p: T,
    q: T,
    done: f64,
}

impl<T: Num> Work for Arith<T> {
    fn call(&mut self) -> Result<()> {
        let x = chain(self.op, black_box(self.x0), black_box(self.p), black_box(self.q), black_box(ITERS));
        if x != self.x0 {
            bail!("arithmetic chain ended at {x:?}, expected {:?}", self.x0);
        }
        self.done = (ITERS * OPS_PER_ITER) as f64 / 1000.0;
        Ok(())
    }
    fn done(&self) -> f64 {
        self.done
    }
}

fn make<T: Num + 'static>(op: Op) -> Result<Box<dyn Work>> {
    let (p, q) = match op {
        Op::Add => (T::from_i16(3), T::from_i16(-3)),
        Op::Mul | Op::Div => (T::from_i16(-1), T::from_i16(-1)),
    };
    Ok(Box::new(Arith::<T> { op, x0: T::from_i16(7), p, q, done: 0.0 }))
}

macro_rules! ctor {
    ($name:ident, $t:ty, $op:expr) => {
        pub fn $name(_c: &Ctx) -> Result<Box<dyn Work>> {
            make::<$t>($op)
        }
    };
}
ctor!(add_double, f64, Op::Add);
ctor!(add_float, f32, Op::Add);
ctor!(add_long, i64, Op::Add);
ctor!(add_int, i32, Op::Add);
ctor!(add_short, i16, Op::Add);
ctor!(mul_double, f64, Op::Mul);
ctor!(mul_float, f32, Op::Mul);
ctor!(mul_long, i64, Op::Mul);
ctor!(mul_int, i32, Op::Mul);
ctor!(mul_short, i16, Op::Mul);
ctor!(div_double, f64, Op::Div);
ctor!(div_float, f32, Op::Div);
ctor!(div_long, i64, Op::Div);
ctor!(div_int, i32, Op::Div);
ctor!(div_short, i16, Op::Div);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_return_to_start() {
        assert_eq!(chain(Op::Add, 7i16, 3, -3, 5), 7);
        assert_eq!(chain(Op::Mul, 7i64, -1, -1, 5), 7);
        assert_eq!(chain(Op::Div, 7.0f64, -1.0, -1.0, 5), 7.0);
        assert_eq!(chain(Op::Add, 7.0f32, 3.0, -3.0, 1), 7.0);
        assert!((KOPS - 24.0).abs() < 1e-12);
    }
}
