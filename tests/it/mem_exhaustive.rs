//! Exhaustive correctness of every tuned variant this CPU runs: memcpy and
//! memset at every size 0..=512 and every source/destination offset 0..=63,
//! against the standard library, with the bytes around the destination
//! checked untouched; strlen at every length 0..=1100 and start offset 0..=63,
//! and over several pages with the NUL near each page end;
//! copies and fills of every size 513..=4160 (where the loops and the
//! string stores start) at offsets on and off a vector boundary, and copies
//! around the sizes where the AVX-512 copies become one `rep movsb` (2112
//! bytes in `avx512-movsb`, 16 KiB in `avx512`). Every variant this CPU runs
//! is tested, whichever the rule picks; the others are skipped, saying so.
//! One set of buffers is reused and only the changed bytes are restored, so
//! the 2.1 million copy cases per variant stay fast in a debug build.

use kdelta::testing::mem::{choose, cpu, Tuned, Variant, Vendor};
use std::ffi::CStr;

const MAX: usize = 512;
const OFFS: usize = 64;
const GUARD: u8 = 0xFF;
/// Bytes checked on each side of the destination.
const SIDE: usize = 32;

/// A source pattern that never equals `GUARD` and does not repeat within 250
/// bytes, so a missed, shifted or stray write shows.
fn source() -> Vec<u8> {
    (0..MAX + OFFS).map(|i| ((i * 131 + 7) % 251) as u8).collect()
}

fn variants() -> Vec<Tuned> {
    let v: Vec<Tuned> = Tuned::available().into_iter().map(|v| Tuned::with_variant(v).unwrap()).collect();
    assert!(v.iter().any(|t| t.variant() == Variant::Portable));
    v
}

/// `write` into `dst[at..at + n]`: whether those bytes are then what
/// `wrote` expects and the `SIDE` bytes on each side are still `GUARD`.
/// The written bytes are `GUARD` again afterwards.
fn within_guards(
    dst: &mut [u8],
    at: usize,
    n: usize,
    write: impl FnOnce(&mut [u8]),
    wrote: impl FnOnce(&[u8]) -> bool,
) -> bool {
    write(&mut dst[at..at + n]);
    let ok =
        wrote(&dst[at..at + n]) && dst[at - SIDE..at] == [GUARD; SIDE] && dst[at + n..at + n + SIDE] == [GUARD; SIDE];
    dst[at..at + n].fill(GUARD);
    ok
}

fn check_copy(t: Tuned, nt_threshold: usize, sizes: std::ops::RangeInclusive<usize>) {
    let src = source();
    let mut dst = vec![GUARD; SIDE + OFFS + MAX + SIDE];
    for n in sizes {
        for so in 0..OFFS {
            for dof in 0..OFFS {
                let src = &src[so..so + n];
                let ok = within_guards(&mut dst, SIDE + dof, n, |d| t.copy(d, src, nt_threshold), |d| d == src);
                assert!(ok, "{:?} copy n={n} src_off={so} dst_off={dof} nt_threshold={nt_threshold}", t.variant());
            }
        }
    }
}

fn check_set(t: Tuned, nt_threshold: usize) {
    let mut dst = vec![GUARD; SIDE + OFFS + MAX + SIDE];
    let want = [0x5Au8; MAX];
    for n in 0..=MAX {
        for dof in 0..OFFS {
            let ok = within_guards(&mut dst, SIDE + dof, n, |d| t.set(d, 0x5A, nt_threshold), |d| d == &want[..n]);
            assert!(ok, "{:?} set n={n} dst_off={dof} nt_threshold={nt_threshold}", t.variant());
        }
    }
}

// One test per variant and store kind, so the harness can run them in
// parallel (about 2-3 s each in a debug build, 2.1 million cases apiece).
fn copy_variant(v: Variant, nt_threshold: usize) {
    match Tuned::with_variant(v) {
        Some(t) if nt_threshold == usize::MAX || v.has_streaming_stores() => check_copy(t, nt_threshold, 0..=MAX),
        _ => eprintln!("{} not available here (or has no streaming stores): skipped", v.name()),
    }
}

/// One test per variant and streaming threshold (usize::MAX: never
/// streams; 0: every size that reaches the main loop streams), so a failure
/// names the routine.
macro_rules! copy_tests {
    ($($name:ident: $variant:ident, $threshold:expr;)*) => {$(
        #[test]
        fn $name() {
            copy_variant(Variant::$variant, $threshold);
        }
    )*};
}

copy_tests! {
    copy_every_size_and_offset_avx512_movsb: Avx512Movsb, usize::MAX;
    copy_every_size_and_offset_avx512_movsb_streaming: Avx512Movsb, 0;
    copy_every_size_and_offset_avx512: Avx512, usize::MAX;
    copy_every_size_and_offset_avx512_streaming: Avx512, 0;
    copy_every_size_and_offset_avx2: Avx2, usize::MAX;
    copy_every_size_and_offset_avx2_streaming: Avx2, 0;
    copy_every_size_and_offset_sse2: Sse2, usize::MAX;
    copy_every_size_and_offset_sse2_streaming: Sse2, 0;
    copy_every_size_and_offset_neon: Neon, usize::MAX;
    copy_every_size_and_offset_portable: Portable, usize::MAX;
}

#[test]
fn set_every_size_and_offset() {
    for t in variants() {
        check_set(t, usize::MAX);
        check_set(t, 0);
    }
}

#[test]
fn clear_page_zeroes_exactly_one_page() {
    let mut buf = vec![GUARD; 4 * 4096];
    let start = buf.as_ptr().align_offset(4096);
    for t in variants() {
        for nt in [false, true] {
            buf.fill(GUARD);
            t.clear_page(&mut buf[start + 4096..start + 8192], nt);
            assert!(buf[start + 4096..start + 8192].iter().all(|&b| b == 0), "{:?} nt={nt}", t.variant());
            assert!(buf[..start + 4096].iter().chain(&buf[start + 8192..]).all(|&b| b == GUARD));
        }
    }
}

/// Zeros before `start` (a wrong first-block shift would find them),
/// letters from it on, then a NUL at each of `ends` in turn: strlen from
/// `start` must be `end - start` every time. `at` names the start.
fn check_strlen_ends(t: Tuned, buf: &mut [u8], start: usize, ends: impl Iterator<Item = usize>, at: &str) {
    let letter = |i: usize| b'a' + (i % 26) as u8;
    for (i, b) in buf.iter_mut().enumerate() {
        *b = if i < start { 0 } else { letter(i) };
    }
    for end in ends {
        buf[end] = 0;
        let s = CStr::from_bytes_with_nul(&buf[start..=end]).unwrap();
        assert_eq!(t.strlen(s), end - start, "{:?} strlen len={} {at}", t.variant(), end - start);
        buf[end] = letter(end);
    }
}

/// Strings that start in the last 64 bytes of a page and go on into the
/// next, with NULs before the start: the first load there is the aligned
/// block holding the start, and whatever checks follow it must begin after
/// the start (a check from the block's own start would find the NUL before
/// it and return a length below zero: a 32-byte first window tried for
/// issue 21 did, and the guard-page tests could not see it, since there the
/// string must end inside the first block).
#[test]
fn strlen_from_a_page_end_into_the_next_page() {
    const PAGE: usize = 4096;
    let mut buf = vec![0u8; 3 * PAGE];
    let base = buf.as_ptr().align_offset(PAGE);
    for t in variants() {
        for start in base + PAGE - 64..base + PAGE {
            check_strlen_ends(t, &mut buf, start, start..start + 400, &format!("at page offset {}", start - base));
        }
    }
}

/// strlen of strings over several pages, with the NUL at every position
/// from 1.5 KiB before the end of the start's page to 200 bytes past the
/// end of the page after next, from starts all over a page: the step loop's
/// page crossings and every exit near them (`strlen_every_length_and_offset`
/// stays within 1.1 KiB of its start, wherever the allocator put it).
#[test]
fn strlen_across_pages_with_the_nul_near_page_ends() {
    const PAGE: usize = 4096;
    let mut buf = vec![0u8; 5 * PAGE];
    let base = buf.as_ptr().align_offset(PAGE);
    for t in variants() {
        for start_off in [0, 1, 31, 32, 64, 100, 2000, 2944, 3000, 3968, 4000, 4095] {
            let ends = (base + PAGE - 1536).max(base + start_off)..base + 3 * PAGE + 200;
            check_strlen_ends(t, &mut buf, base + start_off, ends, &format!("from page offset {start_off}"));
        }
    }
}

#[test]
fn strlen_every_length_and_offset() {
    // Longer than the copies' MAX: the AVX-512 strlen reaches its 128-byte
    // step loop only after 192-256 bytes, and each of a step's four 32-byte
    // vectors and later iterations need to hold the NUL at every start
    // offset.
    const MAX: usize = 1100;
    let mut buf = vec![0u8; OFFS + MAX + 64];
    for t in variants() {
        for off in 0..OFFS {
            check_strlen_ends(t, &mut buf, off, off..=off + MAX, &format!("off={off}"));
        }
    }
}

#[test]
fn dispatch_follows_the_rule() {
    let best = Tuned::detect().variant();
    assert_eq!(best, choose(cpu()));
    assert!(best.is_available());
    #[cfg(target_arch = "x86_64")]
    {
        let avx512 = std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl");
        let avx2 = std::arch::is_x86_feature_detected!("avx2");
        // The rule's cpuid reading agrees with the standard library's.
        assert_eq!(Variant::Avx512.is_available(), avx512 && avx2);
        assert_eq!(Variant::Avx512Movsb.is_available(), avx512 && avx2);
        assert_eq!(Variant::Avx2.is_available(), avx2);
        let want = if avx512 && avx2 {
            // The two AVX-512 shapes: Intel with fast short string moves
            // takes `rep movsb` from 2112 bytes.
            if cpu().vendor == Vendor::Intel && cpu().erms && cpu().fsrm {
                Variant::Avx512Movsb
            } else {
                Variant::Avx512
            }
        } else if avx2 {
            Variant::Avx2
        } else {
            Variant::Sse2
        };
        assert_eq!(best, want);
        assert!(Tuned::with_variant(Variant::Neon).is_none());
    }
    for v in Variant::ALL {
        assert_eq!(Variant::from_name(v.name()), Some(v));
        assert_eq!(Tuned::with_variant(v).is_some(), v.is_available());
    }
}

/// Copies just past the exhaustive range, where the loops start (the
/// AVX-512 variant switches to its 64-byte loop above 512 bytes and to the
/// AVX2 loop above 2 KiB): every size up to 4160 at a few offsets that put
/// each end on and off a vector boundary.
#[test]
fn copy_loop_sizes_every_variant() {
    const TOP: usize = 4160;
    const OFFSETS: [usize; 7] = [0, 1, 7, 31, 32, 33, 63];
    let src: Vec<u8> = (0..TOP + OFFS).map(|i| ((i * 131 + 7) % 251) as u8).collect();
    for t in variants() {
        for nt_threshold in [usize::MAX, 1024] {
            let mut dst = vec![GUARD; SIDE + OFFS + TOP + SIDE];
            for n in MAX + 1..=TOP {
                for so in OFFSETS {
                    for dof in OFFSETS {
                        let src = &src[so..so + n];
                        let ok = within_guards(&mut dst, SIDE + dof, n, |d| t.copy(d, src, nt_threshold), |d| d == src);
                        assert!(
                            ok,
                            "{:?} copy n={n} src_off={so} dst_off={dof} nt_threshold={nt_threshold}",
                            t.variant()
                        );
                    }
                }
            }
        }
    }
}

/// Fills past the exhaustive range, where the AVX-512 fill's aligned loop
/// (513-2047 bytes) and its `rep stosb` (2048 up) run: every size up to
/// 4160 at offsets on and off a vector boundary, streaming or not.
#[test]
fn set_loop_sizes_every_variant() {
    const TOP: usize = 4160;
    for t in variants() {
        for nt_threshold in [usize::MAX, 1024] {
            let mut dst = vec![GUARD; SIDE + OFFS + TOP + SIDE];
            for n in MAX + 1..=TOP {
                for dof in [0, 1, 7, 31, 32, 33, 63] {
                    let c = (n % 200) as u8 + 1;
                    let set = |d: &mut [u8]| t.set(d, c, nt_threshold);
                    let ok = within_guards(&mut dst, SIDE + dof, n, set, |d| d.iter().all(|&b| b == c));
                    assert!(ok, "{:?} set n={n} dst_off={dof} nt_threshold={nt_threshold}", t.variant());
                }
            }
        }
    }
}

/// Copies on both sides of the size from which the `avx512` copy is one
/// `rep movsb` (16 KiB), and a few well above it (the `avx512-movsb`
/// copy's 2112 bytes lie in `copy_loop_sizes_every_variant`'s range).
#[test]
fn copy_string_move_sizes_every_variant() {
    const TOP: usize = 70_000;
    let src: Vec<u8> = (0..TOP + OFFS).map(|i| ((i * 131 + 7) % 251) as u8).collect();
    let sizes = (16_384 - 70..=16_384 + 70).chain([20_000, 32_768, 65_537, TOP]);
    let mut dst = vec![GUARD; SIDE + OFFS + TOP + SIDE];
    for t in variants() {
        for n in sizes.clone() {
            for (so, dof) in [(0, 0), (1, 0), (0, 33), (63, 7)] {
                let src = &src[so..so + n];
                let ok = within_guards(&mut dst, SIDE + dof, n, |d| t.copy(d, src, usize::MAX), |d| d == src);
                assert!(ok, "{:?} copy n={n} src_off={so} dst_off={dof}", t.variant());
            }
        }
    }
}

/// The AVX-512 copy picks its loop's direction from the page offsets of the
/// source and destination (backward when `(s - d) mod 4096 < 512`, against
/// 4K aliasing): place them at chosen distances on both sides of that rule,
/// for every size where the loop runs.
#[test]
fn copy_loop_both_directions() {
    const TOP: usize = 2200;
    let mut buf = vec![0u8; 4 * 4096 + 2 * TOP + 8192];
    let base = buf.as_ptr().align_offset(4096);
    for t in variants() {
        for dist in [0usize, 1, 63, 64, 448, 511, 512, 513, 1000, 2048, 4095] {
            for so in [0usize, 17, 64] {
                let s0 = base + so;
                let d0 = base + 4096 * 2 + ((so + 4096 - dist) % 4096);
                for n in MAX + 1..=TOP {
                    for (i, b) in buf[s0..s0 + n].iter_mut().enumerate() {
                        *b = ((i * 131 + n) % 251) as u8;
                    }
                    buf[d0 - SIDE..d0 + n + SIDE].fill(GUARD);
                    let (head, tail) = buf.split_at_mut(d0);
                    t.copy(&mut tail[..n], &head[s0..s0 + n], usize::MAX);
                    let ok = (0..n).all(|i| buf[d0 + i] == ((i * 131 + n) % 251) as u8)
                        && buf[d0 - SIDE..d0].iter().all(|&b| b == GUARD)
                        && buf[d0 + n..d0 + n + SIDE].iter().all(|&b| b == GUARD);
                    assert!(ok, "{:?} copy n={n} (s - d) mod 4096 = {dist} src_off={so}", t.variant());
                }
            }
        }
    }
}
