//! Word-at-a-time routines for any CPU, and the scalar small-size moves the
//! vector variants share. Safety contracts are the module's (`super` docs):
//! callers pass pointers valid for `n` bytes, non-overlapping for copies.

use core::ptr::{read_unaligned as rdu, write_unaligned as wru};
use core::sync::atomic::{compiler_fence, Ordering};

const W: usize = 8;
const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Copy `n <= 16` bytes: two overlapping moves of the widest width that fits.
///
/// # Safety
/// `d` valid for `n` writes, `s` for `n` reads, no overlap. Every access is at
/// `[0, w)` or `[n - w, n)` with `w <= n`.
#[inline(always)]
pub(super) unsafe fn copy_le16(d: *mut u8, s: *const u8, n: usize) {
    if n >= 8 {
        let (a, b) = (rdu(s as *const u64), rdu(s.add(n - 8) as *const u64));
        wru(d as *mut u64, a);
        wru(d.add(n - 8) as *mut u64, b);
    } else if n >= 4 {
        let (a, b) = (rdu(s as *const u32), rdu(s.add(n - 4) as *const u32));
        wru(d as *mut u32, a);
        wru(d.add(n - 4) as *mut u32, b);
    } else if n >= 2 {
        let (a, b) = (rdu(s as *const u16), rdu(s.add(n - 2) as *const u16));
        wru(d as *mut u16, a);
        wru(d.add(n - 2) as *mut u16, b);
    } else if n == 1 {
        *d = *s;
    }
}

/// Fill `n <= 16` bytes with two overlapping stores.
///
/// # Safety
/// `d` valid for `n` writes.
#[inline(always)]
pub(super) unsafe fn set_le16(d: *mut u8, c: u8, n: usize) {
    let v = ONES.wrapping_mul(c as u64);
    if n >= 8 {
        wru(d as *mut u64, v);
        wru(d.add(n - 8) as *mut u64, v);
    } else if n >= 4 {
        wru(d as *mut u32, v as u32);
        wru(d.add(n - 4) as *mut u32, v as u32);
    } else if n >= 2 {
        wru(d as *mut u16, v as u16);
        wru(d.add(n - 2) as *mut u16, v as u16);
    } else if n == 1 {
        *d = c;
    }
}

/// Word-at-a-time copy: unaligned head word, aligned word stores, overlapping tail.
///
/// # Safety
/// `d` valid for `n` writes, `s` for `n` reads, no overlap.
pub(super) unsafe fn copy(d: *mut u8, s: *const u8, n: usize) {
    if n <= 16 {
        return copy_le16(d, s, n);
    }
    let head = rdu(s as *const u64);
    let tail = rdu(s.add(n - W) as *const u64);
    wru(d as *mut u64, head);
    // First aligned destination word after the head: 1..=8 bytes in, < n - 8.
    let mut i = W - (d as usize & (W - 1));
    while i + 4 * W <= n {
        let a = rdu(s.add(i) as *const u64);
        let b = rdu(s.add(i + W) as *const u64);
        let c = rdu(s.add(i + 2 * W) as *const u64);
        let e = rdu(s.add(i + 3 * W) as *const u64);
        (d.add(i) as *mut u64).write(a);
        (d.add(i + W) as *mut u64).write(b);
        (d.add(i + 2 * W) as *mut u64).write(c);
        (d.add(i + 3 * W) as *mut u64).write(e);
        // Keeps LLVM from recognising the loop as a memcpy call: this variant
        // must stay kdelta's own code.
        compiler_fence(Ordering::SeqCst);
        i += 4 * W;
    }
    while i + W <= n {
        (d.add(i) as *mut u64).write(rdu(s.add(i) as *const u64));
        compiler_fence(Ordering::SeqCst);
        i += W;
    }
    wru(d.add(n - W) as *mut u64, tail);
}

/// Word-at-a-time fill.
///
/// # Safety
/// `d` valid for `n` writes.
pub(super) unsafe fn set(d: *mut u8, c: u8, n: usize) {
    if n <= 16 {
        return set_le16(d, c, n);
    }
    let v = ONES.wrapping_mul(c as u64);
    wru(d as *mut u64, v);
    let mut i = W - (d as usize & (W - 1));
    while i + 4 * W <= n {
        (d.add(i) as *mut u64).write(v);
        (d.add(i + W) as *mut u64).write(v);
        (d.add(i + 2 * W) as *mut u64).write(v);
        (d.add(i + 3 * W) as *mut u64).write(v);
        compiler_fence(Ordering::SeqCst); // no memset idiom: see `copy`
        i += 4 * W;
    }
    while i + W <= n {
        (d.add(i) as *mut u64).write(v);
        compiler_fence(Ordering::SeqCst);
        i += W;
    }
    wru(d.add(n - W) as *mut u64, v);
}

/// Index of the first zero byte in the little-endian view of `w`, if any.
/// The classic `(w - 0x01..) & !w & 0x80..` may also flag bytes *above* the
/// first zero (a borrow), never below, so the lowest flag is exact.
#[inline(always)]
pub(super) fn first_zero(w: u64) -> Option<usize> {
    let z = w.wrapping_sub(ONES) & !w & HIGHS;
    (z != 0).then(|| (z.trailing_zeros() / 8) as usize)
}

/// strlen: bytes one at a time up to a word boundary, then aligned words.
///
/// # Safety
/// `p` starts a NUL-terminated string. Each word read is 8-aligned and starts
/// at a byte not after the NUL (no NUL was found before it), so it holds a
/// byte that must be read and lies in that byte's page (module docs). Reading
/// the bytes after the NUL through a pointer is outside Rust's object model:
/// see the module docs for why this fallback accepts that.
pub(super) unsafe fn strlen(p: *const u8) -> usize {
    let mut q = p;
    while q as usize & (W - 1) != 0 {
        if *q == 0 {
            return q as usize - p as usize;
        }
        q = q.add(1);
    }
    loop {
        let w = u64::from_le((q as *const u64).read());
        if let Some(i) = first_zero(w) {
            return q as usize - p as usize + i;
        }
        q = q.add(W);
    }
}

#[cfg(test)]
mod tests {
    use super::first_zero;

    #[test]
    fn first_zero_is_exact() {
        assert_eq!(first_zero(u64::from_le_bytes(*b"abcdefgh")), None);
        assert_eq!(first_zero(u64::from_le_bytes(*b"abc\0efgh")), Some(3));
        // A borrow past the first zero must not hide it: 0x00 then 0x01.
        assert_eq!(first_zero(u64::from_le_bytes([7, 0, 1, 1, 0, 0, 0, 0])), Some(1));
        assert_eq!(first_zero(0), Some(0));
    }
}
