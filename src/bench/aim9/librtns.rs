//! AIM9's library-routine tests of num_fcns.c: `string_rtns`, `mem_rtns_1`,
//! `mem_rtns_2`, `sort_rtns_1`. Each does per call what AIM9's function does
//! with its registered argument, calling the C library's functions where
//! AIM9 calls them (sprintf, atof, strtod, atol, atoi, strtol, strcmp,
//! strcat, strncat, ctime, strcoll, str*; malloc, calloc, free; mem*; qsort,
//! bsearch). The ctype tests are the C library's table lookups, as glibc's
//! ctype.h macros compile them in AIM9's build (`ctype.rs`).

use super::ctype;
use super::runner::{Ctx, Work};
use anyhow::{bail, Result};
use std::hint::black_box;
use std::os::raw::{c_char, c_double, c_int, c_long, c_void};

extern "C" {
    fn sprintf(s: *mut c_char, format: *const c_char, ...) -> c_int;
    fn atof(s: *const c_char) -> c_double;
    fn strtod(s: *const c_char, end: *mut *mut c_char) -> c_double;
    fn atol(s: *const c_char) -> c_long;
    fn atoi(s: *const c_char) -> c_int;
    fn strtol(s: *const c_char, end: *mut *mut c_char, base: c_int) -> c_long;
    fn ctime(t: *const libc::time_t) -> *mut c_char;
}

// ---------------------------------------------------------------- string_rtns

/// Loop rounds per call (AIM9's argument "100", its factor).
pub(crate) const STRING_ROUNDS: usize = 100;
const BUF: usize = 1024;
const CLASSES: &[u8] = b" \t\n\r\x080123456789 abcde fghij klmno pqrst uvwxy z ABCDE FGHIJ KLMNO PQRST UVWXY Z .,;:!@#$%%^&*()_-+=|\\\"'`[]}{\0";

struct Strings {
    buffer: [u8; BUF],
    catbuf: [u8; 32],
}

/// AIM9's ctype scan of the whole buffer but its last byte: 11 tests a
/// byte, lower and upper case letters converted there and back.
fn ctype_scan(buf: &mut [u8; BUF], mut itemp1: i64) -> i64 {
    let t = ctype::Tables::get();
    for p in buf[..BUF - 1].iter_mut() {
        let c = *p as c_char as c_int;
        if t.is(c, ctype::ALNUM) {
            itemp1 += 1;
        }
        if t.is(c, ctype::ALPHA) {
            itemp1 += 1;
        }
        if t.is(c, ctype::CNTRL) {
            itemp1 += 1;
        }
        if t.is(c, ctype::DIGIT) {
            itemp1 += 1;
        }
        if t.is(c, ctype::GRAPH) {
            itemp1 += 1;
        }
        if t.is(c, ctype::LOWER) {
            itemp1 += 1;
            *p = t.toupper(*p as c_char as c_int) as u8;
            *p = t.tolower(*p as c_char as c_int) as u8;
        }
        let c = *p as c_char as c_int;
        if t.is(c, ctype::PRINT) {
            itemp1 += 1;
        }
        if t.is(c, ctype::PUNCT) {
            itemp1 += 1;
        }
        if t.is(c, ctype::SPACE) {
            itemp1 += 1;
        }
        if t.is(c, ctype::UPPER) {
            itemp1 += 1;
            *p = t.tolower(c) as u8;
            *p = t.toupper(*p as c_char as c_int) as u8;
        }
        if t.is(*p as c_char as c_int, ctype::XDIGIT) {
            itemp1 += 1;
        }
    }
    itemp1
}

/// One round's number conversions, as AIM9's: `itemp1 / 1000` printed with
/// `%g` and read back (atof, strtod), times 1000 printed with `%ld` and read
/// back (atol, atoi, strtol); then the character classes written into the
/// buffer for [`ctype_scan`]. Returns the new `itemp1` (the atoi).
///
/// # Safety
/// `b` is the 1024-byte buffer.
#[inline(always)]
unsafe fn conversions(b: *mut c_char, p: &mut *mut c_char, itemp1: i64) -> i64 {
    let dtemp1 = itemp1 as i32 as f64 / 1000.0;
    sprintf(b, c"%g".as_ptr(), dtemp1);
    let dtemp2 = atof(b);
    let dtemp3 = strtod(b, p);
    let ltemp1 = (1000.0 * dtemp2) as c_long;
    sprintf(b, c"%ld".as_ptr(), ltemp1);
    let ltemp2 = atol(b);
    let itemp1 = i64::from(atoi(b));
    let ltemp3 = strtol(b, p, 10);
    black_box((dtemp3, ltemp2, ltemp3));
    sprintf(b, CLASSES.as_ptr().cast());
    itemp1
}

/// One round's copies and comparisons, as AIM9's: a question written into
/// `cat`, copied into the buffer, then appended (strcat, then strncat of 10
/// bytes) until the buffer would overflow, comparing after each. Returns
/// AIM9's `itemp2`: the question's length plus the comparisons that matched.
///
/// # Safety
/// `b` is the 1024-byte buffer, `cat` the 32-byte one.
#[inline(always)]
unsafe fn copies(b: *mut c_char, cat: *mut c_char) -> i64 {
    sprintf(cat, c"What is your name?".as_ptr());
    let mut itemp2 = libc::strlen(cat) as i64;
    sprintf(b, c"%s".as_ptr(), cat);
    if libc::strcmp(b, cat) == 0 {
        itemp2 += 1;
    }
    while BUF - libc::strlen(b) > libc::strlen(cat) {
        libc::strcat(b, cat);
        if libc::strcmp(b, cat) == 0 {
            itemp2 += 1;
        }
    }
    libc::strcpy(b, cat);
    while BUF - libc::strlen(b) > libc::strlen(cat) {
        libc::strncat(b, cat, 10);
        if libc::strncmp(b, cat, 10) == 0 {
            itemp2 += 1;
        }
    }
    itemp2
}

impl Work for Strings {
    fn call(&mut self) -> Result<f64> {
        let b = self.buffer.as_mut_ptr() as *mut c_char;
        let cat = self.catbuf.as_mut_ptr() as *mut c_char;
        let mut p: *mut c_char = std::ptr::null_mut();
        self.buffer.fill(0);
        // As AIM9: the time read once per call, 1 s added a round for ctime.
        let mut itemp1: i64 = 0;
        let mut itemp2: i64;
        // SAFETY: time(NULL) only returns the time.
        let mut ttemp1: libc::time_t = unsafe { libc::time(std::ptr::null_mut()) };
        let mut n = 0;
        while n < STRING_ROUNDS {
            // SAFETY: every C string routine works on the 1024-byte buffer or
            // the 32-byte catbuf, NUL-terminated where AIM9's are; the lengths
            // are AIM9's, which keep every write inside (its while loops stop
            // before a string could outgrow the buffer); `p` is a local.
            itemp1 = unsafe { conversions(b, &mut p, itemp1) };
            itemp1 = ctype_scan(&mut self.buffer, itemp1);
            // SAFETY: as above; ctime's result is checked before use.
            unsafe {
                itemp2 = copies(b, cat);
                let t = ctime(&ttemp1);
                if t.is_null() {
                    bail!("string_rtns: ctime failed");
                }
                ttemp1 += 1;
                libc::strncpy(b, t, libc::strlen(t));
                if libc::strcoll(b, cat) == 0 {
                    itemp1 += 1;
                }
                if libc::strcspn(b, c"jfamsond".as_ptr()) > 4 {
                    itemp1 += 1;
                }
                if libc::strpbrk(b, c" ;\n".as_ptr()).is_null() {
                    itemp1 += 1;
                }
                if libc::strrchr(b, b'\n' as c_int).is_null() {
                    itemp1 += 1;
                }
                if libc::strspn(b, c"abcdefghijklmnopqrstuvwxyz".as_ptr()) > 5 {
                    itemp1 += 1;
                }
                // black_box: LLVM folds strstr(x, x) to x; gcc -O calls it.
                if libc::strstr(b, black_box(b)) != b {
                    itemp1 += 1;
                }
            }
            if itemp2 > 100 {
                itemp1 += 1;
            }
            n += 1;
        }
        black_box(itemp1);
        Ok(n as f64)
    }
}

pub(crate) fn string_rtns(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Strings { buffer: [0; BUF], catbuf: [0; 32] }))
}

// ---------------------------------------------------------------- mem_rtns_1

/// AIM9's MAXSTRINGS: rounds of (malloc + strcpy, malloc, calloc) a loop.
const MAXSTRINGS: usize = 100;
/// Loops per call (AIM9's argument "100").
pub(crate) const ALLOC_LOOPS: usize = 100;
/// Counted operations per call: AIM9 counts each free, 300 a loop (factor 30000).
pub(crate) const ALLOC_OPS: usize = ALLOC_LOOPS * 3 * MAXSTRINGS;
/// AIM9's malloc_size / op_size table.
const SIZES: [usize; 40] = [
    1, 3, 5, 7, 9, 11, 33, 65, 129, 1024, 1025, 1023, 8192, 4096, 4095, 11, 33, 65, 129, 1024, 1, 3, 5, 7, 9, 11, 33,
    65, 129, 1024, 1025, 1023, 8192, 4096, 4095, 11, 33, 65, 129, 1024,
];
const STR: &std::ffi::CStr = c"Hello, this is an average length string 1234";

/// The first byte of a block, read as AIM9's `*p` reads it (a load the
/// compiler cannot drop). malloc's bytes are not initialised, which Rust
/// may not read as a value, so the load is made in assembly.
#[inline(always)]
fn first_byte(p: *const u8) -> i64 {
    #[cfg(target_arch = "x86_64")]
    {
        let v: u32;
        // SAFETY: p points at a live block of at least 1 byte; the asm only loads it.
        unsafe {
            std::arch::asm!("movsx {v:e}, byte ptr [{p}]", p = in(reg) p, v = out(reg) v, options(nostack, readonly, preserves_flags))
        };
        i64::from(v as i32)
    }
    #[cfg(target_arch = "aarch64")]
    {
        let v: u32;
        // SAFETY: as above.
        unsafe {
            std::arch::asm!("ldrb {v:w}, [{p}]", p = in(reg) p, v = out(reg) v, options(nostack, readonly, preserves_flags))
        };
        i64::from(v as u8)
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        // SAFETY: p is live; the volatile read of a byte has no validity
        // requirement beyond initialisation, which other targets are not
        // built for here (kdelta runs on x86-64 and arm64).
        i64::from(unsafe { std::ptr::read_volatile(p) })
    }
}

struct Alloc {
    array: Vec<*mut c_void>,
}

impl Work for Alloc {
    fn call(&mut self) -> Result<f64> {
        let mut count: i64 = 0;
        let mut freed = 0;
        let mut failed = false;
        for _ in 0..ALLOC_LOOPS {
            let mut j = 0;
            for i in 0..MAXSTRINGS {
                // SAFETY: malloc/calloc of non-zero sizes; strcpy into a block
                // of strlen + 1 bytes; a null result is noted and never used.
                unsafe {
                    let s = libc::malloc(libc::strlen(black_box(STR.as_ptr())) + 1);
                    failed |= s.is_null();
                    if !s.is_null() {
                        libc::strcpy(s.cast(), STR.as_ptr());
                        count += libc::strlen(s.cast()) as i64 + 1;
                    }
                    self.array[j] = s;
                    let sz = SIZES[i % SIZES.len()];
                    self.array[j + 1] = libc::malloc(sz);
                    count += sz as i64;
                    let sz = SIZES[(i + 1) % SIZES.len()];
                    self.array[j + 2] = libc::calloc(sz, 1);
                    count += sz as i64;
                    failed |= self.array[j + 1].is_null() || self.array[j + 2].is_null();
                }
                j += 3;
            }
            if !failed {
                for &p in &self.array {
                    count += first_byte(p.cast());
                }
            }
            let mut i = 3 * MAXSTRINGS - 3;
            loop {
                // SAFETY: each pointer came from malloc/calloc above (or is
                // null) and is freed once, in AIM9's order.
                unsafe {
                    libc::free(self.array[i]);
                    libc::free(self.array[i + 2]);
                    libc::free(self.array[i + 1]);
                }
                freed += 3;
                if i == 0 {
                    break;
                }
                i -= 3;
            }
            if failed {
                bail!("mem_rtns_1: malloc or calloc returned null");
            }
            black_box(count);
        }
        Ok(freed as f64)
    }
}

pub(crate) fn mem_rtns_1(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Alloc { array: vec![std::ptr::null_mut(); 3 * MAXSTRINGS] }))
}

// ---------------------------------------------------------------- mem_rtns_2

/// Rounds per call (AIM9's argument "100", its factor).
pub(crate) const BLOCK_ROUNDS: usize = 100;
/// AIM9's SIZBUF.
const SIZBUF: usize = 8192;

struct Block {
    buff1: Vec<u8>,
    buff2: Vec<u8>,
}

impl Work for Block {
    fn call(&mut self) -> Result<f64> {
        let (bp1, bp2) = (self.buff1.as_mut_ptr(), self.buff2.as_mut_ptr());
        let mut n = 0;
        while n < BLOCK_ROUNDS {
            let off1 = n % 8;
            let off2 = (n / 8) % 8;
            let size = SIZES[n % SIZES.len()];
            // SAFETY: both buffers are SIZBUF + 8 bytes and every range is an
            // offset below 8 plus a size of at most SIZBUF; memmove may overlap.
            unsafe {
                libc::memset(bp1.add(off1).cast(), b'A' as c_int, size);
                libc::memset(bp2.add(off2).cast(), b'A' as c_int, size);
                *bp1.add(off1 + n % size) = b'Z';
                let p = libc::memchr(bp1.add(off1).cast(), b'Z' as c_int, size) as *mut u8;
                if p.is_null() {
                    bail!("mem_rtns_2: memchr missed the Z it was given");
                }
                let i = libc::memcmp(bp1.add(off1).cast(), bp2.add(off2).cast(), size);
                if i > 0 {
                    *p = b'A';
                }
                libc::memcpy(bp1.add(off1).cast(), bp2.add(off2).cast(), size);
                libc::memmove(bp2.add(off1).cast(), bp1.add(off2).cast(), size);
            }
            n += 1;
        }
        black_box(&mut self.buff2);
        Ok(n as f64)
    }
}

pub(crate) fn mem_rtns_2(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Block { buff1: vec![0; SIZBUF + 8], buff2: vec![0; SIZBUF + 8] }))
}

// ---------------------------------------------------------------- sort_rtns_1

/// AIM9's MAXSORTSIZE.
pub(crate) const SORT_N: usize = 10_000;
/// AIM9's argument "10", its factor: the loop counter steps by 5 a pass.
pub(crate) const SORT_UNITS: usize = 10;
/// Passes per call: 10 / 5.
pub(crate) const SORT_PASSES: usize = SORT_UNITS / 5;
/// bsearch calls a pass: 0, 10, ..., 19990 (half of them absent).
pub(crate) const SEARCHES: usize = 2 * SORT_N / 10;

extern "C" fn compar1(a: *const c_void, b: *const c_void) -> c_int {
    // SAFETY: qsort and bsearch hand pointers to ints of the table (or the key).
    unsafe { *(a as *const c_int) - *(b as *const c_int) }
}
extern "C" fn compar2(a: *const c_void, b: *const c_void) -> c_int {
    // SAFETY: as compar1.
    unsafe { *(b as *const c_int) - *(a as *const c_int) }
}

struct Sort {
    /// AIM9's global table, 0..9999 at start, kept from call to call.
    table: Vec<c_int>,
    passes: usize,
    missing: usize,
}

impl Sort {
    fn qsort(&mut self, cmp: extern "C" fn(*const c_void, *const c_void) -> c_int) {
        // SAFETY: qsort over our table of SORT_N ints with a comparator of ints.
        unsafe { libc::qsort(self.table.as_mut_ptr().cast(), SORT_N, std::mem::size_of::<c_int>(), Some(cmp)) };
    }
}

impl Work for Sort {
    fn call(&mut self) -> Result<f64> {
        let mut n = 0;
        self.passes = 0;
        self.missing = 0;
        while n < SORT_UNITS {
            self.qsort(compar1);
            self.qsort(compar2);
            self.qsort(compar1);
            let mut i: c_int = 0;
            while (i as usize) < SORT_N * 2 {
                // SAFETY: bsearch over the sorted table for a local key.
                let p = unsafe {
                    libc::bsearch(
                        (&i as *const c_int).cast(),
                        self.table.as_ptr().cast(),
                        SORT_N,
                        std::mem::size_of::<c_int>(),
                        Some(compar1),
                    )
                };
                if p.is_null() {
                    self.missing += 1;
                }
                i += 10;
            }
            self.passes += 1;
            n += 5;
        }
        if self.missing != SORT_PASSES * SEARCHES / 2 || self.table.windows(2).any(|w| w[0] > w[1]) {
            bail!("sort_rtns_1: qsort left the table out of order or bsearch missed ({} absent)", self.missing);
        }
        Ok(n as f64)
    }
}

pub(crate) fn sort_rtns_1(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Sort { table: (0..SORT_N as c_int).collect(), passes: 0, missing: 0 }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Ctx {
        Ctx { dir: std::env::temp_dir(), filesize: 0, sync: false }
    }

    #[test]
    fn sort_makes_two_passes_of_three_sorts_and_2000_searches() {
        let mut s = Sort { table: (0..SORT_N as c_int).collect(), passes: 0, missing: 0 };
        let done = s.call().unwrap();
        assert_eq!(s.passes, 2);
        assert_eq!(s.missing, 2 * 1000);
        assert_eq!(done, 10.0);
        assert_eq!((SORT_PASSES, SEARCHES), (2, 2000));
    }

    #[test]
    fn each_call_does_aim9s_rounds() {
        for (make, want) in
            [(string_rtns as fn(&Ctx) -> Result<Box<dyn Work>>, 100.0), (mem_rtns_1, 30_000.0), (mem_rtns_2, 100.0)]
        {
            let mut w = make(&ctx()).unwrap();
            w.call().unwrap();
            assert_eq!(w.call().unwrap(), want);
        }
    }

    #[test]
    fn the_ctype_scan_counts_as_glibc() {
        let mut b = [0u8; BUF];
        b[..5].copy_from_slice(b"aZ3 \n");
        // a: alnum alpha graph lower print xdigit = 6; Z: alnum alpha graph print upper = 5;
        // 3: alnum digit graph print xdigit = 5; ' ': print space = 2; '\n': cntrl space = 2;
        // the NULs: cntrl each.
        assert_eq!(ctype_scan(&mut b, 0), 6 + 5 + 5 + 2 + 2 + (BUF - 1 - 5) as i64);
        assert_eq!(&b[..5], b"aZ3 \n");
    }
}
