//! Overlapping moves for `memmove` (and `memcpy` on overlap): 16-byte
//! unaligned words (`u128`, one vector load or store on x86-64 and aarch64),
//! four per step. No streaming stores.
//!
//! The order argument: `forward` (destination below the source) stores each
//! step's bytes only after loading them, and a step's stores end at or below
//! the next step's first load (`d + i + 64 <= s + i + 64`); `backward`
//! (destination above the source) is its mirror. The one word each keeps for
//! the end (the last 16 bytes forward, the first 16 backward) is loaded
//! before any store, so it holds the original bytes when stored last.

use core::ptr::{read_unaligned as rdu, write_unaligned as wru};

const W: usize = 16;

/// # Safety
/// `d` valid for `n` writes, `s` for `n` reads, `d < s`.
pub unsafe fn forward(d: *mut u8, s: *const u8, n: usize) {
    unsafe {
        if n <= 2 * W {
            return small(d, s, n);
        }
        let tail = rdu(s.add(n - W) as *const u128);
        let mut i = 0;
        while i + 4 * W <= n {
            let a = rdu(s.add(i) as *const u128);
            let b = rdu(s.add(i + W) as *const u128);
            let c = rdu(s.add(i + 2 * W) as *const u128);
            let e = rdu(s.add(i + 3 * W) as *const u128);
            wru(d.add(i) as *mut u128, a);
            wru(d.add(i + W) as *mut u128, b);
            wru(d.add(i + 2 * W) as *mut u128, c);
            wru(d.add(i + 3 * W) as *mut u128, e);
            i += 4 * W;
        }
        while i + W <= n {
            let a = rdu(s.add(i) as *const u128);
            wru(d.add(i) as *mut u128, a);
            i += W;
        }
        wru(d.add(n - W) as *mut u128, tail);
    }
}

/// # Safety
/// `d` valid for `n` writes, `s` for `n` reads, `s < d`.
pub unsafe fn backward(d: *mut u8, s: *const u8, n: usize) {
    unsafe {
        if n <= 2 * W {
            return small(d, s, n);
        }
        let head = rdu(s as *const u128);
        let mut j = n;
        while j >= 4 * W {
            let a = rdu(s.add(j - W) as *const u128);
            let b = rdu(s.add(j - 2 * W) as *const u128);
            let c = rdu(s.add(j - 3 * W) as *const u128);
            let e = rdu(s.add(j - 4 * W) as *const u128);
            wru(d.add(j - W) as *mut u128, a);
            wru(d.add(j - 2 * W) as *mut u128, b);
            wru(d.add(j - 3 * W) as *mut u128, c);
            wru(d.add(j - 4 * W) as *mut u128, e);
            j -= 4 * W;
        }
        while j >= W {
            let a = rdu(s.add(j - W) as *const u128);
            wru(d.add(j - W) as *mut u128, a);
            j -= W;
        }
        // j < 16: the head covers [0, j).
        wru(d as *mut u128, head);
    }
}

/// Up to 32 bytes, overlapping or not: every load before any store.
///
/// # Safety
/// `d` valid for `n <= 32` writes, `s` for `n` reads.
unsafe fn small(d: *mut u8, s: *const u8, n: usize) {
    unsafe {
        if n > W {
            let (a, b) = (rdu(s as *const u128), rdu(s.add(n - W) as *const u128));
            wru(d as *mut u128, a);
            wru(d.add(n - W) as *mut u128, b);
        } else {
            // Loads both words before storing (portable.rs).
            crate::portable::copy_le16(d, s, n);
        }
    }
}
