//! aarch64 Advanced SIMD (NEON) variant: 16-byte vectors, no streaming
//! stores (the non-temporal threshold does not apply). Safety contracts are
//! the module's (`super` docs). NOTE: written for aarch64 but not compiled or
//! run on it in kdelta's own CI (x86-64 only); the x86-64 and portable
//! variants are the tested ones.

use super::portable::{copy_le16, set_le16};
use core::arch::aarch64::*;
use core::arch::asm;

/// # Safety
/// `d` valid for `n` writes, `s` for `n` reads, no overlap, NEON present.
#[target_feature(enable = "neon")]
pub(super) unsafe fn copy(d: *mut u8, s: *const u8, n: usize) {
    const VW: usize = 16;
    if n <= 16 {
        return copy_le16(d, s, n);
    }
    if n <= 32 {
        let a = vld1q_u8(s);
        let b = vld1q_u8(s.add(n - VW));
        vst1q_u8(d, a);
        vst1q_u8(d.add(n - VW), b);
        return;
    }
    if n <= 64 {
        let (h0, h1) = (vld1q_u8(s), vld1q_u8(s.add(VW)));
        let (t2, t3) = (vld1q_u8(s.add(n - 2 * VW)), vld1q_u8(s.add(n - VW)));
        vst1q_u8(d, h0);
        vst1q_u8(d.add(VW), h1);
        vst1q_u8(d.add(n - 2 * VW), t2);
        vst1q_u8(d.add(n - VW), t3);
        return;
    }
    let (t0, t1) = (vld1q_u8(s.add(n - 4 * VW)), vld1q_u8(s.add(n - 3 * VW)));
    let (t2, t3) = (vld1q_u8(s.add(n - 2 * VW)), vld1q_u8(s.add(n - VW)));
    vst1q_u8(d, vld1q_u8(s));
    let mut i = VW - (d as usize & (VW - 1));
    while i + 4 * VW <= n {
        let a = vld1q_u8(s.add(i));
        let b = vld1q_u8(s.add(i + VW));
        let c = vld1q_u8(s.add(i + 2 * VW));
        let e = vld1q_u8(s.add(i + 3 * VW));
        vst1q_u8(d.add(i), a);
        vst1q_u8(d.add(i + VW), b);
        vst1q_u8(d.add(i + 2 * VW), c);
        vst1q_u8(d.add(i + 3 * VW), e);
        i += 4 * VW;
    }
    vst1q_u8(d.add(n - 4 * VW), t0);
    vst1q_u8(d.add(n - 3 * VW), t1);
    vst1q_u8(d.add(n - 2 * VW), t2);
    vst1q_u8(d.add(n - VW), t3);
}

/// # Safety
/// `d` valid for `n` writes, NEON present.
#[target_feature(enable = "neon")]
pub(super) unsafe fn set(d: *mut u8, c: u8, n: usize) {
    const VW: usize = 16;
    if n <= 16 {
        return set_le16(d, c, n);
    }
    let v = vdupq_n_u8(c);
    vst1q_u8(d, v);
    vst1q_u8(d.add(n - VW), v);
    if n <= 32 {
        return;
    }
    vst1q_u8(d.add(VW), v);
    vst1q_u8(d.add(n - 2 * VW), v);
    if n <= 64 {
        return;
    }
    let mut i = VW - (d as usize & (VW - 1));
    while i + 4 * VW <= n {
        vst1q_u8(d.add(i), v);
        vst1q_u8(d.add(i + VW), v);
        vst1q_u8(d.add(i + 2 * VW), v);
        vst1q_u8(d.add(i + 3 * VW), v);
        i += 4 * VW;
    }
    vst1q_u8(d.add(n - 4 * VW), v);
    vst1q_u8(d.add(n - 3 * VW), v);
}

/// Load the 16-byte aligned block at `addr` as a machine load.
///
/// # Safety
/// `addr` 16-aligned and the block holds a byte of mapped memory.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn load_block16(addr: usize) -> uint8x16_t {
    let v: uint8x16_t;
    asm!("ldr {v:q}, [{a}]", a = in(reg) addr, v = out(vreg) v, options(pure, readonly, nostack, preserves_flags));
    v
}

/// A 64-bit mask with 4 bits per byte of `v`, set where the byte is zero.
#[target_feature(enable = "neon")]
#[inline]
unsafe fn zero_nibbles(v: uint8x16_t) -> u64 {
    let eq = vceqq_u8(v, vdupq_n_u8(0));
    let narrowed = vshrn_n_u16::<4>(vreinterpretq_u16_u8(eq));
    vget_lane_u64::<0>(vreinterpret_u64_u8(narrowed))
}

/// # Safety
/// `p` starts a NUL-terminated string, NEON present. Loads only aligned
/// 16-byte blocks, each holding a byte not after the NUL (module docs).
#[target_feature(enable = "neon")]
pub(super) unsafe fn strlen(p: *const u8) -> usize {
    let start = p as usize;
    let mut b = start & !15;
    let m = zero_nibbles(load_block16(b)) >> (4 * (start - b));
    if m != 0 {
        return (m.trailing_zeros() / 4) as usize;
    }
    loop {
        b += 16;
        let m = zero_nibbles(load_block16(b));
        if m != 0 {
            return b - start + (m.trailing_zeros() / 4) as usize;
        }
    }
}
