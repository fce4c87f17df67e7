//! The system C library's routines, called through function pointers laundered
//! by `std::hint::black_box`: the compiler cannot see which function it calls,
//! so it can neither inline nor substitute its own code, and the routine run
//! is the one the C library's loader picked (glibc's IFUNC choice, which the
//! worker's `GLIBC_TUNABLES` influence).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::hint::black_box;

type CopyFn = unsafe extern "C" fn(*mut c_void, *const c_void, usize) -> *mut c_void;
type SetFn = unsafe extern "C" fn(*mut c_void, c_int, usize) -> *mut c_void;
type LenFn = unsafe extern "C" fn(*const c_char) -> usize;

/// Opaque pointers to the C library's memcpy, memset and strlen.
#[derive(Clone, Copy)]
pub struct Libc {
    memcpy: CopyFn,
    memset: SetFn,
    strlen: LenFn,
}

impl Default for Libc {
    fn default() -> Self {
        Self::new()
    }
}

impl Libc {
    pub fn new() -> Libc {
        Libc {
            memcpy: black_box(libc::memcpy as CopyFn),
            memset: black_box(libc::memset as SetFn),
            strlen: black_box(libc::strlen as LenFn),
        }
    }

    /// The entry points, for the timed loop that calls them from assembly
    /// (`calls.rs`).
    pub fn memcpy_entry(&self) -> *const () {
        self.memcpy as *const ()
    }
    pub fn memset_entry(&self) -> *const () {
        self.memset as *const ()
    }
    pub fn strlen_entry(&self) -> *const () {
        self.strlen as *const ()
    }

    /// `memcpy(dst, src, len)`.
    ///
    /// # Panics
    /// When the lengths differ (a caller's bug).
    #[inline]
    pub fn copy(&self, dst: &mut [u8], src: &[u8]) {
        assert_eq!(dst.len(), src.len(), "libc copy: source and destination lengths differ");
        // SAFETY: the pointer is the C library's memcpy; `dst` is valid for
        // `len` writes, `src` for `len` reads, and they do not overlap.
        unsafe { (self.memcpy)(dst.as_mut_ptr().cast(), src.as_ptr().cast(), dst.len()) };
    }

    /// `memset(dst, byte, len)`.
    #[inline]
    pub fn set(&self, dst: &mut [u8], byte: u8) {
        // SAFETY: the pointer is the C library's memset; `dst` is valid for `len` writes.
        unsafe { (self.memset)(dst.as_mut_ptr().cast(), byte as c_int, dst.len()) };
    }

    /// `strlen(s)`.
    #[inline]
    pub fn strlen(&self, s: &CStr) -> usize {
        // SAFETY: the pointer is the C library's strlen; `s` is NUL-terminated.
        unsafe { (self.strlen)(s.as_ptr()) }
    }
}

/// The C library's name and version (`glibc 2.36`), or a reason it is unknown.
pub(crate) fn version() -> String {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: glibc returns a pointer to a static NUL-terminated string.
        let v = unsafe { CStr::from_ptr(libc::gnu_get_libc_version()) };
        format!("glibc {}", v.to_string_lossy())
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        "unknown (not glibc)".to_string()
    }
}
