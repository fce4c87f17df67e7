//! The untuned baseline: plain byte loops. Each byte is moved with a volatile
//! load or store, which the compiler may neither widen, vectorise, merge nor
//! replace with a call to the C library, and the functions are never inlined
//! so every call pays the same entry cost as the other variants.

use std::ffi::CStr;
use std::ptr::{read_volatile, write_volatile};

/// `dst.copy_from_slice(src)`, one byte at a time.
///
/// # Panics
/// When the lengths differ (a caller's bug).
#[inline(never)]
pub fn copy(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "naive copy: source and destination lengths differ");
    for (d, s) in dst.iter_mut().zip(src) {
        // SAFETY: `s` is a reference, so valid and aligned for a 1-byte read.
        *d = unsafe { read_volatile(s) };
    }
}

/// `dst.fill(byte)`, one byte at a time.
#[inline(never)]
pub fn set(dst: &mut [u8], byte: u8) {
    for d in dst.iter_mut() {
        // SAFETY: `d` is a unique reference, valid and aligned for a 1-byte write.
        unsafe { write_volatile(d, byte) };
    }
}

/// The length of `s`, one byte at a time.
#[inline(never)]
pub fn strlen(s: &CStr) -> usize {
    let bytes = s.to_bytes_with_nul();
    let mut i = 0;
    // SAFETY: `bytes[i]` is a valid reference: the loop stops at the NUL,
    // which is the slice's last byte, so `i` never passes it.
    while unsafe { read_volatile(&bytes[i]) } != 0 {
        i += 1;
    }
    i
}
