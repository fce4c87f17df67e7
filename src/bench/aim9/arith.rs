//! AIM9's arithmetic tests: `add_*`, `mul_*`, `div_*` over double, float,
//! long (i64), int (i32) and short (i16) (add.c, mul.c, div.c).
//!
//! One call runs AIM9's loop: its iteration count (for example 5,000,000 for
//! add_int, 75,000 for div_int) of its 12 operations on three variables `x`,
//! `a`, `b`, in AIM9's order and with AIM9's starting values (add: x = 0,
//! a = 3, b = -3, or pi and -pi for double, 3.5 and -3.5 for float; mul:
//! x = 1, a = pi, b = 1/pi (double), 4 and 1/4 (float), x = 12345678 (1234
//! for short), a = b = 1 for the integers; div: x = 1, a = 4, b = 1/4 for
//! the floats, x = 1234578 (1234), a = b = 1 for the integers). The values
//! stay bounded, as AIM9's comments show.
//!
//! Each operation's result goes through [`Opaque::opaque`], an empty inline
//! `asm!` on x86-64 (no instruction, just "this value may have changed"), so
//! the optimiser can neither fold the chain (AIM9's `x*1` and `/1` integer
//! loops are folded by modern compilers) nor reassociate it: a deliberate
//! difference, kdelta times the operations AIM9 wrote down.

use super::runner::{Ctx, Work};
use anyhow::{bail, Result};
use std::hint::black_box;

/// Dependent operations per iteration.
pub(crate) const OPS_PER_ITER: u32 = 12;

/// AIM9's iteration counts per call.
pub(crate) mod iters {
    pub(crate) const ADD_DOUBLE: u32 = 1_500_000;
    pub(crate) const ADD_FLOAT: u32 = 1_000_000;
    pub(crate) const ADD_LONG: u32 = 5_000_000;
    pub(crate) const ADD_INT: u32 = 5_000_000;
    pub(crate) const ADD_SHORT: u32 = 2_000_000;
    pub(crate) const MUL_DOUBLE: u32 = 1_000_000;
    pub(crate) const MUL_FLOAT: u32 = 1_000_000;
    pub(crate) const MUL_LONG: u32 = 20_000;
    pub(crate) const MUL_INT: u32 = 20_000;
    pub(crate) const MUL_SHORT: u32 = 25_000;
    pub(crate) const DIV_DOUBLE: u32 = 250_000;
    pub(crate) const DIV_FLOAT: u32 = 250_000;
    pub(crate) const DIV_LONG: u32 = 75_000;
    pub(crate) const DIV_INT: u32 = 75_000;
    pub(crate) const DIV_SHORT: u32 = 75_000;
}

/// The factor of a test running `iters` iterations: thousands of operations.
pub(crate) const fn kops(iters: u32) -> f64 {
    (iters / 1000 * OPS_PER_ITER) as f64
}

/// A value the optimiser must treat as unknown after each operation.
pub(crate) trait Opaque: Copy {
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
pub(crate) trait Num:
    Opaque
    + PartialEq
    + std::ops::Add<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::fmt::Debug
{
    fn of(v: f64) -> Self;
    fn finite(self) -> bool;
}
macro_rules! num {
    ($($t:ty)*) => {$(
        impl Num for $t {
            fn of(v: f64) -> Self {
                v as $t
            }
            #[allow(clippy::unnecessary_cast)]
            fn finite(self) -> bool {
                (self as f64).is_finite()
            }
        }
    )*};
}
num!(i16 i32 i64 f32 f64);

/// AIM9's three loop bodies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Op {
    /// add.c, every type.
    Add,
    /// mul.c, double and float.
    MulFloat,
    /// mul.c, the integers.
    MulInt,
    /// div.c, double and float.
    DivFloat,
    /// div.c, the integers.
    DivInt,
}

/// `dst = dst <op> src`, hidden from the optimiser.
macro_rules! ops {
    ($o:tt; $($d:ident $s:ident),*) => {
        $( $d = ($d $o $s).opaque(); )*
    };
}

/// `iters` iterations of AIM9's 12 operations for `op`; returns (x, a, b).
#[inline(never)]
pub(crate) fn chain<T: Num>(op: Op, x0: T, a0: T, b0: T, iters: u32) -> (T, T, T) {
    let (mut x, mut a, mut b) = (x0, a0, b0);
    match op {
        Op::Add => {
            for _ in 0..iters {
                ops!(+; x a, a b, a b, b x, b x, x a, x a, a b, a b, b x, b x, x a);
            }
        }
        Op::MulFloat => {
            for _ in 0..iters {
                ops!(*; x a, a b, a b, b x, b x, x a, x a, a b, a b, b x, b x, x a);
            }
        }
        Op::MulInt => {
            for _ in 0..iters {
                ops!(*; x a, a b, a b, b a, b a, x b, x a, a b, a b, b a, b a, x b);
            }
        }
        Op::DivFloat => {
            for _ in 0..iters {
                ops!(/; x a, b x, a b, b a, x b, b x, x a, b x, a b, b a, x b, b x);
            }
        }
        Op::DivInt => {
            for _ in 0..iters {
                ops!(/; x a, x b, a b, b a, x a, x b, a b, b a, x a, x b, a b, b a);
            }
        }
    }
    (x, a, b)
}

struct Arith<T: Num> {
    op: Op,
    init: (T, T, T),
    iters: u32,
}

impl<T: Num> Work for Arith<T> {
    fn call(&mut self) -> Result<f64> {
        let (x0, a0, b0) = self.init;
        let (x, a, b) = chain(self.op, black_box(x0), black_box(a0), black_box(b0), black_box(self.iters));
        if !(x.finite() && a.finite() && b.finite()) {
            bail!("arithmetic loop ended at {x:?} {a:?} {b:?}");
        }
        Ok(kops(self.iters))
    }
}

fn make<T: Num + 'static>(op: Op, init: (f64, f64, f64), iters: u32) -> Result<Box<dyn Work>> {
    Ok(Box::new(Arith::<T> { op, init: (T::of(init.0), T::of(init.1), T::of(init.2)), iters }))
}

use std::f64::consts::PI;

macro_rules! ctor {
    ($name:ident, $t:ty, $op:expr, $init:expr, $iters:expr) => {
        pub(crate) fn $name(_c: &Ctx) -> Result<Box<dyn Work>> {
            make::<$t>($op, $init, $iters)
        }
    };
}
ctor!(add_double, f64, Op::Add, (0.0, PI, -PI), iters::ADD_DOUBLE);
ctor!(add_float, f32, Op::Add, (0.0, 3.5, -3.5), iters::ADD_FLOAT);
ctor!(add_long, i64, Op::Add, (0.0, 3.0, -3.0), iters::ADD_LONG);
ctor!(add_int, i32, Op::Add, (0.0, 3.0, -3.0), iters::ADD_INT);
ctor!(add_short, i16, Op::Add, (0.0, 3.0, -3.0), iters::ADD_SHORT);
ctor!(mul_double, f64, Op::MulFloat, (1.0, PI, 1.0 / PI), iters::MUL_DOUBLE);
ctor!(mul_float, f32, Op::MulFloat, (1.0, 4.0, 0.25), iters::MUL_FLOAT);
ctor!(mul_long, i64, Op::MulInt, (12345678.0, 1.0, 1.0), iters::MUL_LONG);
ctor!(mul_int, i32, Op::MulInt, (12345678.0, 1.0, 1.0), iters::MUL_INT);
ctor!(mul_short, i16, Op::MulInt, (1234.0, 1.0, 1.0), iters::MUL_SHORT);
ctor!(div_double, f64, Op::DivFloat, (1.0, 4.0, 0.25), iters::DIV_DOUBLE);
ctor!(div_float, f32, Op::DivFloat, (1.0, 4.0, 0.25), iters::DIV_FLOAT);
ctor!(div_long, i64, Op::DivInt, (1234578.0, 1.0, 1.0), iters::DIV_LONG);
ctor!(div_int, i32, Op::DivInt, (1234578.0, 1.0, 1.0), iters::DIV_INT);
ctor!(div_short, i16, Op::DivInt, (1234.0, 1.0, 1.0), iters::DIV_SHORT);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loops_keep_aim9s_values() {
        // add: back to (0, 3, -3) after every iteration.
        assert_eq!(chain(Op::Add, 0i16, 3, -3, 5), (0, 3, -3));
        assert_eq!(chain(Op::Add, 0i64, 3, -3, 1), (0, 3, -3));
        // The integer mul and div loops keep x with a = b = 1.
        assert_eq!(chain(Op::MulInt, 12345678i32, 1, 1, 3), (12345678, 1, 1));
        assert_eq!(chain(Op::DivInt, 1234578i64, 1, 1, 3), (1234578, 1, 1));
        let (x, a, b) = chain(Op::MulFloat, 1.0f64, PI, 1.0 / PI, 1000);
        assert!(x.is_finite() && a.is_finite() && b.is_finite() && x.abs() < 1e3);
        let (x, a, b) = chain(Op::DivFloat, 1.0f32, 4.0, 0.25, 1000);
        assert!(x.is_finite() && a.is_finite() && b.is_finite());
        assert_eq!(kops(iters::ADD_INT), 60_000.0);
        assert_eq!(kops(iters::DIV_INT), 900.0);
    }
}
