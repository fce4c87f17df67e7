//! The timed loop of `mem.memcpy`, `mem.memset` and `mem.strlen`: one loop
//! for the C library's routine and kdelta's, so that only the routine
//! differs between the two.
//!
//! Why one loop: a call of 64 to 512 bytes takes 8 to 20 cycles here, and a
//! loop the compiler shapes around each implementation's call (which
//! values it keeps in registers, which it reloads from the stack after the
//! call, where the loop's branches fall) moved tuned/libc at 64-128 bytes
//! warm from 0.87x to 1.4x between two builds of the *same* routines, whose
//! first instructions are glibc's (docs/mem.md). On x86-64 the loop is
//! therefore one piece of assembly, [`kdelta_time_calls`], entered with a
//! function pointer: both implementations run the same instructions at the
//! same addresses around their call. Elsewhere it is a Rust loop per
//! implementation (the old shape).
//!
//! The loop calls `f(a + k * stride, b', size, extra)` (System V registers
//! rdi, rsi, rdx, rcx) for `count` slots `k` of a [`Rotation`], where `b'` is
//! `b + k * stride` for a copy's source and the fill byte for a fill; it
//! sums what `f` returns in rax (strlen's lengths). The C library's
//! `memcpy(d, s, n)`, `memset(d, c, n)` and `strlen(p)` take fewer
//! arguments than are passed, which the calling convention allows (the
//! extra registers are caller-saved scratch); kdelta's copy and fill take
//! the non-temporal threshold as `extra`.

use super::buffers::Rotation;
use super::libc_fns::Libc;
use super::tuned::Tuned;
use std::ffi::CStr;
use std::time::{Duration, Instant};

/// The routine a timed loop calls.
#[derive(Clone, Copy)]
pub(super) enum Callee {
    /// The C library's.
    Libc(Libc),
    /// kdelta's, with the size from which copies and fills stream.
    Tuned(Tuned, usize),
}

/// Where one rotation's slots lie in a buffer: slot `k` is the `size` bytes
/// at `k * stride + off`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Slots {
    pub(crate) off: usize,
    pub(crate) size: usize,
    pub(crate) stride: usize,
    pub(crate) rot: Rotation,
}

impl Slots {
    /// Panics unless every slot the rotation visits lies inside a buffer of
    /// `len` bytes, the rotation steps by less than one lap (the loop
    /// wraps with one subtraction) and `from` is one of its slots.
    fn check(&self, len: usize, from: usize) {
        let r = self.rot;
        assert!(from < r.slots, "slot {from} of {}", r.slots);
        assert!(r.slots >= 1 && (r.step < r.slots || (r.slots == 1 && r.step == 0)), "bad rotation {r:?}");
        assert!(
            self.off.checked_add(self.size).is_some_and(|e| e <= self.stride),
            "slot of {} bytes at offset {} does not fit a stride of {}",
            self.size,
            self.off,
            self.stride
        );
        assert!(
            r.slots.checked_mul(self.stride).is_some_and(|t| t <= len),
            "{} slots of {} bytes do not fit a buffer of {len}",
            r.slots,
            self.stride
        );
    }
}

/// Time `n` copies of `slots.size` bytes from `src` to `dst`, slot by slot
/// from slot `from` (`src_off` and `slots.off` place the source and
/// destination in a slot).
pub(super) fn time_copy(
    callee: Callee,
    dst: &mut [u8],
    src: &[u8],
    src_off: usize,
    slots: Slots,
    from: usize,
    n: u64,
) -> Duration {
    slots.check(dst.len(), from);
    Slots { off: src_off, ..slots }.check(src.len(), from);
    let (d, s) = (dst.as_mut_ptr().wrapping_add(slots.off), src.as_ptr().wrapping_add(src_off));
    #[cfg(target_arch = "x86_64")]
    {
        let (f, extra) = match callee {
            Callee::Libc(l) => (l.memcpy_entry() as usize, 0),
            Callee::Tuned(t, nt_min) => (t.copy_entry() as usize, nt_min),
        };
        // SAFETY: `f` is a copy routine taking (d, s, n) and ignoring or
        // using `extra` as its threshold; every slot it is given lies in
        // `dst` and `src` (checked above), which do not overlap (`&mut`
        // and `&`).
        run(Loop {
            f,
            a: d as usize,
            b: s as usize,
            b_mask: usize::MAX,
            size: slots.size,
            extra,
            ..Loop::over(slots, from, n)
        })
        .0
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (d, s);
        let (st, off, size) = (slots.stride, slots.off, slots.size);
        match callee {
            Callee::Libc(l) => rust_loop(n, slots.rot, from, |k| {
                l.copy(&mut dst[k * st + off..k * st + off + size], &src[k * st + src_off..k * st + src_off + size])
            }),
            Callee::Tuned(t, nt) => rust_loop(n, slots.rot, from, |k| {
                t.copy(&mut dst[k * st + off..k * st + off + size], &src[k * st + src_off..k * st + src_off + size], nt)
            }),
        }
    }
}

/// Time `n` fills of `slots.size` bytes of `dst` with `byte`, slot by slot
/// from slot `from`.
pub(super) fn time_set(callee: Callee, dst: &mut [u8], byte: u8, slots: Slots, from: usize, n: u64) -> Duration {
    slots.check(dst.len(), from);
    let d = dst.as_mut_ptr().wrapping_add(slots.off);
    #[cfg(target_arch = "x86_64")]
    {
        let (f, extra) = match callee {
            Callee::Libc(l) => (l.memset_entry() as usize, 0),
            Callee::Tuned(t, nt_min) => (t.set_entry() as usize, nt_min),
        };
        // SAFETY: `f` is a fill taking (d, c, n) with c in esi (the byte,
        // zero-extended: both memset's int and kdelta's u8 read it so);
        // every slot lies in `dst` (checked above).
        run(Loop {
            f,
            a: d as usize,
            b: byte as usize,
            b_mask: 0,
            size: slots.size,
            extra,
            ..Loop::over(slots, from, n)
        })
        .0
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = d;
        let (st, off, size) = (slots.stride, slots.off, slots.size);
        match callee {
            Callee::Libc(l) => {
                rust_loop(n, slots.rot, from, |k| l.set(&mut dst[k * st + off..k * st + off + size], byte))
            }
            Callee::Tuned(t, nt) => {
                rust_loop(n, slots.rot, from, |k| t.set(&mut dst[k * st + off..k * st + off + size], byte, nt))
            }
        }
    }
}

/// Strings laid out in slots, each checked once to be NUL-terminated at
/// its last byte, so the timed loop can hand out their starts unchecked.
pub(super) struct Strings<'a> {
    buf: &'a [u8],
    slots: Slots,
}

impl<'a> Strings<'a> {
    /// An error when a slot's `size` bytes are not a string ending in its only NUL.
    pub(super) fn new(buf: &'a [u8], slots: Slots) -> anyhow::Result<Strings<'a>> {
        slots.check(buf.len(), 0);
        for k in 0..slots.rot.slots {
            let at = k * slots.stride + slots.off;
            CStr::from_bytes_with_nul(&buf[at..at + slots.size])?;
        }
        Ok(Strings { buf, slots })
    }

    /// The string of slot `k`.
    pub(super) fn get(&self, k: usize) -> &'a CStr {
        let at = k * self.slots.stride + self.slots.off;
        // SAFETY: `new` checked that every slot's bytes end in their only NUL.
        unsafe { CStr::from_bytes_with_nul_unchecked(&self.buf[at..at + self.slots.size]) }
    }
}

/// Time `n` strlen calls over the strings from slot `from`; also the sum
/// of the lengths.
pub(super) fn time_strlen(callee: Callee, strings: &Strings, from: usize, n: u64) -> (Duration, usize) {
    let slots = strings.slots;
    slots.check(strings.buf.len(), from);
    #[cfg(target_arch = "x86_64")]
    {
        let f = match callee {
            Callee::Libc(l) => l.strlen_entry() as usize,
            Callee::Tuned(t, _) => t.strlen_entry() as usize,
        };
        let a = strings.buf.as_ptr().wrapping_add(slots.off) as usize;
        // SAFETY: `f` is a strlen taking (p); every slot holds a string
        // ending in its only NUL (`Strings::new`).
        run(Loop { f, a, ..Loop::over(slots, from, n) })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut sum = 0usize;
        let d = match callee {
            Callee::Libc(l) => rust_loop(n, slots.rot, from, |k| sum += l.strlen(strings.get(k))),
            Callee::Tuned(t, _) => rust_loop(n, slots.rot, from, |k| sum += t.strlen(strings.get(k))),
        };
        (d, sum)
    }
}

/// The loop's arguments; field offsets are the assembly's.
#[cfg(target_arch = "x86_64")]
#[repr(C)]
struct Loop {
    f: usize,      // 0
    a: usize,      // 8
    b: usize,      // 16
    b_mask: usize, // 24
    size: usize,   // 32
    extra: usize,  // 40
    step: usize,   // 48: bytes advanced per call, below `limit`
    limit: usize,  // 56: slots * stride
    count: u64,    // 64
    start: usize,  // 72: the first call's offset, below `limit`
}

#[cfg(target_arch = "x86_64")]
impl Loop {
    /// `n` calls over `slots` from slot `from`, calling nothing yet: the
    /// caller sets the routine and its arguments.
    fn over(slots: Slots, from: usize, n: u64) -> Loop {
        Loop {
            f: 0,
            a: 0,
            b: 0,
            b_mask: 0,
            size: 0,
            extra: 0,
            step: slots.rot.step * slots.stride,
            limit: slots.rot.slots * slots.stride,
            count: n,
            start: from * slots.stride,
        }
    }
}

/// Run the loop and time it: the elapsed time and the sum of the returns.
///
/// # Safety (upheld by the callers above)
/// `f` is a routine with the C calling convention that is sound to call
/// with rdi = `a + off`, rsi = `b + (off & b_mask)`, rdx = `size`, rcx =
/// `extra` for every `off` the rotation reaches (`start`, then `+ step`,
/// wrapped below `limit`).
#[cfg(target_arch = "x86_64")]
fn run(l: Loop) -> (Duration, usize) {
    let t0 = Instant::now();
    // SAFETY: the caller's contract above; the loop touches nothing but
    // its own stack frame and the registers the convention lets it.
    let sum = unsafe { kdelta_time_calls(&l) };
    (t0.elapsed(), sum)
}

#[cfg(target_arch = "x86_64")]
extern "C" {
    /// The loop below.
    fn kdelta_time_calls(l: *const Loop) -> usize;
}

// Callee-saved registers hold a (rbx), b (rbp), the slot offset (r12), the
// calls left (r13), size (r14) and the sum (r15); f, extra, step, limit and
// b_mask sit in the frame and are read as memory operands, so the loop has
// no loop-carried memory dependency. rsp is 16-aligned at the call (6
// pushes and 40 bytes below an 8-mod-16 entry).
#[cfg(target_arch = "x86_64")]
core::arch::global_asm!(
    ".pushsection .text.kdelta_time_calls,\"ax\",@progbits",
    ".p2align 6",
    ".globl kdelta_time_calls",
    ".hidden kdelta_time_calls",
    ".type kdelta_time_calls,@function",
    "kdelta_time_calls:",
    "push rbp",
    "push rbx",
    "push r12",
    "push r13",
    "push r14",
    "push r15",
    "sub rsp, 40",
    "mov rax, qword ptr [rdi]",
    "mov qword ptr [rsp], rax",
    "mov rax, qword ptr [rdi + 40]",
    "mov qword ptr [rsp + 8], rax",
    "mov rax, qword ptr [rdi + 48]",
    "mov qword ptr [rsp + 16], rax",
    "mov rax, qword ptr [rdi + 56]",
    "mov qword ptr [rsp + 24], rax",
    "mov rax, qword ptr [rdi + 24]",
    "mov qword ptr [rsp + 32], rax",
    "mov rbx, qword ptr [rdi + 8]",
    "mov rbp, qword ptr [rdi + 16]",
    "mov r14, qword ptr [rdi + 32]",
    "mov r13, qword ptr [rdi + 64]",
    "mov r12, qword ptr [rdi + 72]",
    "xor r15d, r15d",
    "test r13, r13",
    "jz .Lktc_done",
    ".p2align 5",
    ".Lktc_loop:",
    "lea rdi, [rbx + r12]",
    "mov rsi, r12",
    "and rsi, qword ptr [rsp + 32]",
    "add rsi, rbp",
    "mov rdx, r14",
    "mov rcx, qword ptr [rsp + 8]",
    "call qword ptr [rsp]",
    "add r15, rax",
    "add r12, qword ptr [rsp + 16]",
    "mov rax, r12",
    "sub rax, qword ptr [rsp + 24]",
    "cmovae r12, rax",
    "dec r13",
    "jnz .Lktc_loop",
    ".Lktc_done:",
    "mov rax, r15",
    "add rsp, 40",
    "pop r15",
    "pop r14",
    "pop r13",
    "pop r12",
    "pop rbx",
    "pop rbp",
    "ret",
    ".size kdelta_time_calls, . - kdelta_time_calls",
    ".popsection",
);

/// Time `n` calls of `call(slot)`, walking the rotation from slot `from`
/// (the loop of the naive implementation, and of every implementation off
/// x86-64).
#[inline(always)]
pub(super) fn rust_loop(n: u64, rot: Rotation, from: usize, mut call: impl FnMut(usize)) -> Duration {
    let mut cur = from;
    let t0 = Instant::now();
    for _ in 0..n {
        call(cur);
        cur = rot.next(cur);
    }
    t0.elapsed()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn callees() -> Vec<Callee> {
        vec![Callee::Libc(Libc::new()), Callee::Tuned(Tuned::detect(), usize::MAX), Callee::Tuned(Tuned::detect(), 0)]
    }

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 251) as u8 + 1).collect()
    }

    #[test]
    fn copies_reach_every_slot_and_nothing_else() {
        let rot = Rotation::new(true, 2 * 256, 2048); // 8 slots
        assert!(rot.slots > 1 && rot.step > 0);
        let slots = Slots { off: 3, size: 200, stride: 256, rot };
        for c in callees() {
            let src = pattern(rot.slots * 256);
            let mut dst = vec![0u8; rot.slots * 256];
            // One call from slot 3 writes slot 3 alone.
            time_copy(c, &mut dst, &src, 5, slots, 3, 1);
            assert_eq!(dst[3 * 256 + 3..3 * 256 + 203], src[3 * 256 + 5..3 * 256 + 205]);
            assert!(dst[..3 * 256].iter().chain(&dst[4 * 256..]).all(|&b| b == 0));
            time_copy(c, &mut dst, &src, 5, slots, rot.slots - 1, rot.slots as u64);
            for k in 0..rot.slots {
                let (d, s) = (k * 256 + 3, k * 256 + 5);
                assert_eq!(dst[d..d + 200], src[s..s + 200], "slot {k}");
                assert!(
                    dst[k * 256..d].iter().chain(&dst[d + 200..(k + 1) * 256]).all(|&b| b == 0),
                    "slot {k} outside"
                );
            }
        }
    }

    #[test]
    fn fills_write_the_byte_in_every_slot() {
        let rot = Rotation::new(true, 128, 512);
        let slots = Slots { off: 1, size: 100, stride: 128, rot };
        for c in callees() {
            let mut dst = vec![0u8; rot.slots * 128];
            time_set(c, &mut dst, 0xA7, slots, 1, 2 * rot.slots as u64);
            for k in 0..rot.slots {
                let s = &dst[k * 128..(k + 1) * 128];
                assert!(
                    s[1..101].iter().all(|&b| b == 0xA7) && s[0] == 0 && s[101..].iter().all(|&b| b == 0),
                    "slot {k}"
                );
            }
        }
    }

    #[test]
    fn strlen_sums_the_lengths_of_the_calls() {
        let rot = Rotation::new(true, 64, 320);
        let mut buf = vec![b'x'; rot.slots * 64];
        for k in 0..rot.slots {
            buf[k * 64 + 2 + 39] = 0;
        }
        let strings = Strings::new(&buf, Slots { off: 2, size: 40, stride: 64, rot }).unwrap();
        assert_eq!(strings.get(1).to_bytes().len(), 39);
        for c in callees() {
            assert_eq!(time_strlen(c, &strings, 0, 7).1, 7 * 39);
            assert_eq!(time_strlen(c, &strings, rot.slots - 1, 0).1, 0);
        }
        buf[5] = 0;
        assert!(Strings::new(&buf, Slots { off: 2, size: 40, stride: 64, rot }).is_err());
    }

    #[test]
    #[should_panic(expected = "do not fit")]
    fn a_rotation_beyond_the_buffer_is_refused() {
        let rot = Rotation::new(true, 64, 1024);
        let slots = Slots { off: 0, size: 64, stride: 64, rot };
        time_set(Callee::Libc(Libc::new()), &mut [0u8; 64], 1, slots, 0, 1);
    }

    #[test]
    #[should_panic(expected = "slot 8 of 8")]
    fn a_start_beyond_the_rotation_is_refused() {
        let rot = Rotation::new(true, 64, 256);
        let slots = Slots { off: 0, size: 64, stride: 64, rot };
        time_set(Callee::Libc(Libc::new()), &mut vec![0u8; 64 * rot.slots], 1, slots, rot.slots, 1);
    }
}
