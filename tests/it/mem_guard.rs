//! The bound on strlen's read-ahead, checked against real page protection:
//! strings end on the last byte before a `PROT_NONE` page (or start on the
//! first byte after one) at every alignment; a read past the permitted
//! aligned block would kill the test with SIGSEGV. Copies and fills that end
//! at such a page check that they neither read nor write past their buffers.

use kdelta::testing::mem::naive;
use kdelta::testing::mem::Libc;
use kdelta::testing::mem::Tuned;
use std::ffi::CStr;

/// Two anonymous pages, one of them inaccessible; unmapped on drop.
struct Guarded {
    base: *mut u8,
    page: usize,
}

impl Guarded {
    /// `guard_first`: the inaccessible page comes first (else second).
    fn new(guard_first: bool) -> Guarded {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        // SAFETY: a fresh private anonymous mapping; the result is checked.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                2 * page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED);
        let base = base as *mut u8;
        let guard = if guard_first { base } else { base.wrapping_add(page) };
        // SAFETY: `guard` is one page inside the mapping just made.
        assert_eq!(unsafe { libc::mprotect(guard.cast(), page, libc::PROT_NONE) }, 0);
        Guarded { base, page }
    }

    /// The accessible page.
    fn open_page(&mut self, guard_first: bool) -> &mut [u8] {
        let p = if guard_first { self.base.wrapping_add(self.page) } else { self.base };
        // SAFETY: `p` is the readable, writable page of our mapping, which
        // lives as long as `self`, borrowed mutably here.
        unsafe { std::slice::from_raw_parts_mut(p, self.page) }
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `new`.
        unsafe { libc::munmap(self.base.cast(), 2 * self.page) };
    }
}

fn tuned_all() -> Vec<Tuned> {
    Tuned::available().into_iter().filter_map(Tuned::with_variant).collect()
}

/// Every tuned variant measures `s`, which starts at `start` of its page,
/// as `len` bytes long.
#[track_caller]
fn tuned_strlen_is(s: &CStr, start: usize, len: usize) {
    for t in tuned_all() {
        assert_eq!(t.strlen(s), len, "{:?} start={start} len={len}", t.variant());
    }
}

#[test]
fn strlen_stops_before_a_guard_page() {
    let mut g = Guarded::new(false);
    let page = g.open_page(false);
    let n = page.len();
    page.fill(b'x');
    page[n - 1] = 0;
    let libc = Libc::new();
    // Every length 0..=2100 ending on the page's last byte covers every start
    // alignment modulo 256 several times over, with the NUL reached by each
    // stage of the AVX-512 routine (first load, unrolled blocks, 128- and
    // 256-byte loops).
    for len in 0..=2100usize {
        let s = CStr::from_bytes_with_nul(&page[n - 1 - len..]).unwrap();
        tuned_strlen_is(s, n - 1 - len, len);
        assert_eq!(libc.strlen(s), len);
        assert_eq!(naive::strlen(s), len);
    }
}

#[test]
fn strlen_does_not_read_before_its_page() {
    let mut g = Guarded::new(true);
    let page = g.open_page(true);
    page.fill(b'y');
    for start in 0..128usize {
        for len in [0usize, 1, 15, 16, 31, 32, 63, 64, 200] {
            page[start + len] = 0;
            let s = CStr::from_bytes_with_nul(&page[start..=start + len]).unwrap();
            tuned_strlen_is(s, start, len);
            page[start + len] = b'y';
        }
    }
}

/// The x86-64 variants load the first vector unaligned at the start unless
/// that window would cross a 4096-byte boundary. Strings starting in the last
/// 256 bytes of the page before a `PROT_NONE` page, at every start and every
/// length that fits, exercise both sides of that test: a wrong bound would
/// read into the guard page and kill the test, a wrong shift would find a
/// NUL before the start.
#[test]
fn strlen_first_load_near_a_page_end() {
    let mut g = Guarded::new(false);
    let page = g.open_page(false);
    let n = page.len();
    let libc = Libc::new();
    for start in n - 256..n {
        // NULs before the start: the aligned fallback must shift them out.
        page[..start].fill(0);
        page[start..].fill(b'z');
        for len in 0..n - start {
            page[start + len] = 0;
            let s = CStr::from_bytes_with_nul(&page[start..=start + len]).unwrap();
            tuned_strlen_is(s, start, len);
            assert_eq!(libc.strlen(s), len);
            page[start + len] = b'z';
        }
    }
}

#[test]
fn copy_and_set_stay_inside_buffers_at_a_guard_page() {
    let mut g = Guarded::new(false);
    let page = g.open_page(false);
    let n = page.len();
    for t in tuned_all() {
        for nt in [0usize, usize::MAX] {
            for len in 0..=600usize {
                // First the source ends at the guard page, then the
                // destination of a copy and of a fill does.
                let (lo, hi) = page.split_at_mut(n / 2);
                hi[n / 2 - len..].fill(3);
                t.copy(&mut lo[..len], &hi[n / 2 - len..], nt);
                assert!(lo[..len].iter().all(|&b| b == 3));
                t.copy(&mut hi[n / 2 - len..], &lo[..len], nt);
                t.set(&mut hi[n / 2 - len..], 9, nt);
                assert!(hi[n / 2 - len..].iter().all(|&b| b == 9));
            }
        }
    }
}
