//! The C library's character classes as AIM9's `string_rtns` uses them.
//! With glibc, ctype.h's `isalnum(c)` and friends are macros that index the
//! table `*__ctype_b_loc()` and test a bit, and `toupper`/`tolower` inline
//! functions that index `*__ctype_toupper_loc()`/`*__ctype_tolower_loc()`:
//! no call per character. kdelta reads the same tables the same way. On other
//! C libraries it calls their `is*`/`to*` functions.

use std::os::raw::c_int;

/// glibc's class bits (`_ISbit` on a little-endian machine: bits 0..7 of
/// the enum sit in the high byte of the 16-bit entry, 8..11 in the low).
const fn bit(b: u32) -> u16 {
    if b < 8 {
        (1u16 << b) << 8
    } else {
        (1u16 << b) >> 8
    }
}
pub(crate) const UPPER: u16 = bit(0);
pub(crate) const LOWER: u16 = bit(1);
pub(crate) const ALPHA: u16 = bit(2);
pub(crate) const DIGIT: u16 = bit(3);
pub(crate) const XDIGIT: u16 = bit(4);
pub(crate) const SPACE: u16 = bit(5);
pub(crate) const PRINT: u16 = bit(6);
pub(crate) const GRAPH: u16 = bit(7);
pub(crate) const CNTRL: u16 = bit(9);
pub(crate) const PUNCT: u16 = bit(10);
pub(crate) const ALNUM: u16 = bit(11);

#[cfg(all(target_env = "gnu", target_endian = "little"))]
extern "C" {
    fn __ctype_b_loc() -> *mut *const u16;
    fn __ctype_toupper_loc() -> *mut *const i32;
    fn __ctype_tolower_loc() -> *mut *const i32;
}

/// The calling thread's tables (its locale's; AIM9 runs in the C locale,
/// and so does kdelta's worker).
pub(crate) struct Tables {
    #[cfg(all(target_env = "gnu", target_endian = "little"))]
    b: *const u16,
}

#[cfg(all(target_env = "gnu", target_endian = "little"))]
impl Tables {
    pub(crate) fn get() -> Tables {
        // SAFETY: glibc's accessors return the thread's table pointers, valid
        // for indices -128..=255 while the locale stays.
        unsafe { Tables { b: *__ctype_b_loc() } }
    }
    /// `c` is a `char` value (-128..=127), as AIM9 passes `*p`.
    #[inline(always)]
    pub(crate) fn is(&self, c: c_int, class: u16) -> bool {
        // SAFETY: the tables cover -128..=255; c is a char's value.
        unsafe { *self.b.offset(c as isize) & class != 0 }
    }
    /// AIM9's build fetches the class table once (`__ctype_b_loc` is a
    /// const function, hoisted out of the loop) but calls
    /// `__ctype_toupper_loc`/`__ctype_tolower_loc` at each conversion; so do these.
    #[inline(always)]
    pub(crate) fn toupper(&self, c: c_int) -> c_int {
        // SAFETY: as `is`, on the table the accessor returns now.
        unsafe { *(*__ctype_toupper_loc()).offset(c as isize) }
    }
    #[inline(always)]
    pub(crate) fn tolower(&self, c: c_int) -> c_int {
        // SAFETY: as `is`.
        unsafe { *(*__ctype_tolower_loc()).offset(c as isize) }
    }
}

#[cfg(not(all(target_env = "gnu", target_endian = "little")))]
impl Tables {
    pub fn get() -> Tables {
        Tables {}
    }
    pub fn is(&self, c: c_int, class: u16) -> bool {
        let c = c & 0xff;
        // SAFETY: the C library's classifiers on an unsigned char value.
        unsafe {
            match class {
                UPPER => libc::isupper(c) != 0,
                LOWER => libc::islower(c) != 0,
                ALPHA => libc::isalpha(c) != 0,
                DIGIT => libc::isdigit(c) != 0,
                XDIGIT => libc::isxdigit(c) != 0,
                SPACE => libc::isspace(c) != 0,
                PRINT => libc::isprint(c) != 0,
                GRAPH => libc::isgraph(c) != 0,
                CNTRL => libc::iscntrl(c) != 0,
                PUNCT => libc::ispunct(c) != 0,
                _ => libc::isalnum(c) != 0,
            }
        }
    }
    pub fn toupper(&self, c: c_int) -> c_int {
        // SAFETY: as above.
        unsafe { libc::toupper(c & 0xff) }
    }
    pub fn tolower(&self, c: c_int) -> c_int {
        // SAFETY: as above.
        unsafe { libc::tolower(c & 0xff) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_agree_with_the_c_library() {
        let t = Tables::get();
        for c in 0..=127 {
            // SAFETY: the C library's classifiers on a char value.
            let want = unsafe {
                [
                    libc::isupper(c),
                    libc::islower(c),
                    libc::isalpha(c),
                    libc::isdigit(c),
                    libc::isxdigit(c),
                    libc::isspace(c),
                    libc::isprint(c),
                    libc::isgraph(c),
                    libc::iscntrl(c),
                    libc::ispunct(c),
                    libc::isalnum(c),
                ]
            };
            for (class, w) in
                [UPPER, LOWER, ALPHA, DIGIT, XDIGIT, SPACE, PRINT, GRAPH, CNTRL, PUNCT, ALNUM].into_iter().zip(want)
            {
                assert_eq!(t.is(c, class), w != 0, "char {c} class {class:#x}");
            }
            // SAFETY: as above.
            assert_eq!(t.toupper(c), unsafe { libc::toupper(c) });
            // SAFETY: as above.
            assert_eq!(t.tolower(c), unsafe { libc::tolower(c) });
        }
    }
}
