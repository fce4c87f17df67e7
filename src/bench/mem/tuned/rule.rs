//! THE RULE, stated once: which path of the tuned routines runs on the CPU
//! kdelta (or `libkdelta_mem.so`) starts on. Both read the CPU here, with
//! `cpuid` and `xgetbv`, and choose with [`choose`]; the preload library
//! includes this file by path (`preload/lib.rs`), so only `core` is used.
//! The non-temporal rule (when long copies and fills stream, from the cache
//! sizes and their sharing in sysfs) is the other half, in `../ntrule.rs`.
//!
//! # The rule
//! 1. aarch64: `neon`. Any other architecture: `portable`.
//! 2. x86-64 without AVX2 (or without the OS saving the YMM state): `sse2`.
//! 3. AVX2 without AVX-512F/BW/VL (or without the OS saving the ZMM
//!    state): `avx2`, glibc 2.36's AVX2 shapes (`avx2.rs`): fills from
//!    [`REP_STOSB_MIN`] bytes up (below the fill's streaming size) one
//!    `rep stosb`, as glibc from its `rep_stosb_threshold` (2048, the same
//!    on every CPU); copies never `rep movsb` (the 32-byte loop up to the
//!    copy's streaming size): on an AMD EPYC Zen 3 (family 0x19 model 0x01,
//!    32 KiB L1d, 512 KiB L2, 32 MiB L3) the loop ran 1.49-1.74x glibc's
//!    string move at 2896 B-11.5 KiB warm (docs/mem.md). Intel
//!    AVX2 CPUs (Haswell to Alder Lake client parts) take the same path;
//!    none was measured, and with FSRM glibc's `rep movsb` from 2112 bytes
//!    may be the better copy there, as it was on the Intel Xeon of point 4.
//!    AVX2 CPUs without ERMS (where glibc avoids `rep stosb`) take it too;
//!    none was measured.
//! 4. AVX-512F/BW/VL and AVX2, Intel (`GenuineIntel`) with ERMS and FSRM:
//!    `avx512-movsb`, copies from 2112 bytes up are one `rep movsb`, the
//!    size where glibc 2.36 itself starts it on every CPU with FSRM
//!    (`dl-cacheinfo.h`: `rep_movsb_threshold = 2112`), 513-2111 bytes the
//!    64-byte vector loop. On an Intel Xeon (48 KiB L1d, 2 MiB L2, 480 MiB
//!    L3, glibc 2.36) the `avx512` path's 32-byte loop at 2-8 KiB ran
//!    0.68-0.73x the C library's string move there (docs/mem.md).
//! 5. Every other AVX-512 CPU (AMD Zen 4 and later, Hygon, Intel without
//!    FSRM or ERMS): `avx512`, copies of 2 KiB to 16 KiB in the 32-byte
//!    (AVX2) loop and `rep movsb` only from 16 KiB: on this AMD EPYC (Zen 4)
//!    the string move starts slowly, and the loop measured 1.10-1.39x
//!    glibc's `rep movsb` from 2112 bytes warm (docs/mem.md); measured
//!    again there on a Zen 4 host (family 0x19 model 0x11): 1.10-1.37x at
//!    2896 B-16 KiB, where the point-4 shape ran 1.03-1.11x.
//!
//! # What glibc 2.36 consults, and where this differs
//! glibc (`sysdeps/x86/cpu-features.c`, `dl-cacheinfo.h`,
//! `ifunc-memmove.h`) reads the same bits: vendor, family and model, ERMS,
//! FSRM, AVX2, AVX-512F/VL/BW and the XCR0 state. On Intel it sets
//! `Prefer_No_AVX512` (for every CPU without AVX512ER, i.e. every Xeon
//! since Skylake), so its memmove there is `__memmove_evex_unaligned_erms`,
//! 32-byte vectors in EVEX encoding; on AMD it keeps 64-byte vectors
//! (`__memmove_avx512_unaligned_erms`). Its `rep movsb` threshold is 2112
//! with FSRM, else a multiple of its vector width (`2048` or `4096` times
//! `VEC / 16`, by version), the same on both vendors: on AMD that is the
//! choice this rule does not follow (point 5). On AMD it also stops using
//! `rep movsb` above the L2 size (`rep_movsb_stop_threshold`, "performing
//! poorly for data above L2 cache size" from Zen 3 on), and returns to its
//! vector loop up to its non-temporal threshold. kdelta keeps 64-byte
//! vectors on Intel below 2112 bytes, where they measured 1.04x there (1 KiB
//! warm).
//!
//! Intel without FSRM (Skylake-SP, Cascade Lake) takes point 5 by analogy
//! with glibc's later string-move start there; no such host was measured.
//! The AVX2 and SSE2 paths never use `rep movsb` for copies.

/// One path of the tuned routines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// x86-64 with AVX-512F/BW/VL and AVX2, the Intel shape: copies from
    /// [`MOVSB_FSRM`] bytes up one `rep movsb`, below that 64-byte vectors.
    Avx512Movsb,
    /// x86-64 with AVX-512F/BW/VL (and AVX2), the AMD shape: 64-byte
    /// vectors for short copies and strlen, the AVX2 loop for copies of
    /// 2-16 KiB, `rep movsb` above.
    Avx512,
    /// x86-64 with AVX2: 32-byte vectors, `vmovntdq` streaming stores.
    Avx2,
    /// x86-64 baseline SSE2: 16-byte vectors, `movntdq` streaming stores.
    Sse2,
    /// aarch64 Advanced SIMD: 16-byte vectors, no streaming stores.
    Neon,
    /// Any CPU: 8-byte words, no streaming stores.
    Portable,
}

/// Fills from this size up, when not streaming, are one `rep stosb` on
/// every x86-64 variant but SSE2 (point 3 and the AVX-512 fill): glibc 2.36
/// takes it above its `rep_stosb_threshold`, 2048 on every CPU.
pub(crate) const REP_STOSB_MIN: usize = 2049;

/// The size from which the `avx512-movsb` copy is one `rep movsb` (glibc
/// 2.36's threshold on CPUs with fast short string moves, FSRM).
pub(crate) const MOVSB_FSRM: usize = 2112;

impl Variant {
    pub const ALL: [Variant; 6] =
        [Variant::Avx512Movsb, Variant::Avx512, Variant::Avx2, Variant::Sse2, Variant::Neon, Variant::Portable];

    pub const fn name(self) -> &'static str {
        match self {
            Variant::Avx512Movsb => "avx512-movsb",
            Variant::Avx512 => "avx512",
            Variant::Avx2 => "avx2",
            Variant::Sse2 => "sse2",
            Variant::Neon => "neon",
            Variant::Portable => "portable",
        }
    }

    pub fn from_name(s: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == s)
    }

    /// Whether the variant has non-temporal stores (else the threshold is ignored).
    pub const fn has_streaming_stores(self) -> bool {
        matches!(self, Variant::Avx512Movsb | Variant::Avx512 | Variant::Avx2 | Variant::Sse2)
    }
}

/// The CPU's maker, from the `cpuid` leaf 0 string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vendor {
    Intel,
    Amd,
    Hygon,
    Other,
}

impl Vendor {
    pub const fn name(self) -> &'static str {
        match self {
            Vendor::Intel => "intel",
            Vendor::Amd => "amd",
            Vendor::Hygon => "hygon",
            Vendor::Other => "other",
        }
    }
}

/// The instruction set the code was built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    X86_64,
    Aarch64,
    Other,
}

/// What the rule reads of a CPU. The vector flags already include the OS
/// saving the registers' state (`xgetbv`), as glibc's "usable" bits do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cpu {
    pub arch: Arch,
    pub vendor: Vendor,
    /// Family and model as glibc computes them (extended fields added for
    /// families 6 and 15).
    pub family: u32,
    pub model: u32,
    /// Enhanced `rep movsb`/`stosb` (leaf 7 EBX bit 9).
    pub erms: bool,
    /// Fast short `rep movsb` (leaf 7 EDX bit 4).
    pub fsrm: bool,
    pub avx2: bool,
    /// AVX-512 F, BW and VL.
    pub avx512: bool,
}

/// The raw `cpuid`/`xgetbv` words the rule reads, so it can be tested with
/// any CPU's values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Regs {
    /// Leaf 0: EAX (highest leaf), and the vendor string in EBX, EDX, ECX.
    pub max_leaf: u32,
    pub vendor: [u32; 3],
    /// Leaf 1: EAX (signature) and ECX (OSXSAVE, AVX).
    pub l1_eax: u32,
    pub l1_ecx: u32,
    /// Leaf 7 subleaf 0: EBX and EDX.
    pub l7_ebx: u32,
    pub l7_edx: u32,
    /// XCR0 (0 when OSXSAVE is clear).
    pub xcr0: u64,
}

const fn bit(word: u32, b: u32) -> bool {
    word & (1 << b) != 0
}

impl Cpu {
    /// The CPU as `cpuid` and `xgetbv` describe it.
    pub const fn from_regs(r: Regs) -> Cpu {
        let [b, d, c] = r.vendor;
        let vendor = if b == u32::from_le_bytes(*b"Genu")
            && d == u32::from_le_bytes(*b"ineI")
            && c == u32::from_le_bytes(*b"ntel")
        {
            Vendor::Intel
        } else if b == u32::from_le_bytes(*b"Auth")
            && d == u32::from_le_bytes(*b"enti")
            && c == u32::from_le_bytes(*b"cAMD")
        {
            Vendor::Amd
        } else if b == u32::from_le_bytes(*b"Hygo")
            && d == u32::from_le_bytes(*b"nGen")
            && c == u32::from_le_bytes(*b"uine")
        {
            Vendor::Hygon
        } else {
            Vendor::Other
        };
        let mut family = (r.l1_eax >> 8) & 0xf;
        let mut model = (r.l1_eax >> 4) & 0xf;
        if family == 0xf {
            family += (r.l1_eax >> 20) & 0xff;
        }
        if family == 6 || family >= 0xf {
            model += (r.l1_eax >> 12) & 0xf0;
        }
        let osxsave = bit(r.l1_ecx, 27) && bit(r.l1_ecx, 28);
        let xcr0 = if osxsave { r.xcr0 } else { 0 };
        let leaf7 = r.max_leaf >= 7;
        let (ebx, edx) = if leaf7 { (r.l7_ebx, r.l7_edx) } else { (0, 0) };
        let ymm = xcr0 & 0x6 == 0x6;
        let zmm = xcr0 & 0xe6 == 0xe6;
        Cpu {
            arch: Arch::X86_64,
            vendor,
            family,
            model,
            erms: bit(ebx, 9),
            fsrm: bit(edx, 4),
            avx2: ymm && bit(ebx, 5),
            avx512: zmm && bit(ebx, 16) && bit(ebx, 30) && bit(ebx, 31),
        }
    }

    /// This CPU.
    #[cfg(target_arch = "x86_64")]
    pub fn current() -> Cpu {
        use core::arch::x86_64::{__cpuid, __cpuid_count};
        #[allow(unused_unsafe)]
        // SAFETY: cpuid exists on every x86-64 CPU; leaf 7 is read only when
        // leaf 0 says it exists.
        let (l0, l1) = unsafe { (__cpuid(0), __cpuid(1)) };
        #[allow(unused_unsafe)]
        let l7 = if l0.eax >= 7 { unsafe { __cpuid_count(7, 0) } } else { unsafe { __cpuid(0) } };
        let xcr0 = if bit(l1.ecx, 27) {
            let (lo, hi): (u32, u32);
            // SAFETY: xgetbv exists when the OS has enabled XSAVE (OSXSAVE, checked).
            unsafe {
                core::arch::asm!("xgetbv", in("ecx") 0u32, out("eax") lo, out("edx") hi, options(nomem, nostack, preserves_flags))
            };
            (hi as u64) << 32 | lo as u64
        } else {
            0
        };
        let (l7_ebx, l7_edx) = if l0.eax >= 7 { (l7.ebx, l7.edx) } else { (0, 0) };
        Cpu::from_regs(Regs {
            max_leaf: l0.eax,
            vendor: [l0.ebx, l0.edx, l0.ecx],
            l1_eax: l1.eax,
            l1_ecx: l1.ecx,
            l7_ebx,
            l7_edx,
            xcr0,
        })
    }

    /// This CPU (Advanced SIMD is part of aarch64 Linux's base).
    #[cfg(not(target_arch = "x86_64"))]
    pub fn current() -> Cpu {
        Cpu {
            arch: if cfg!(target_arch = "aarch64") { Arch::Aarch64 } else { Arch::Other },
            vendor: Vendor::Other,
            family: 0,
            model: 0,
            erms: false,
            fsrm: false,
            avx2: false,
            avx512: false,
        }
    }

    /// Whether this CPU runs `v`'s instructions.
    pub const fn runs(self, v: Variant) -> bool {
        match v {
            Variant::Avx512Movsb | Variant::Avx512 => self.arch as u8 == Arch::X86_64 as u8 && self.avx512 && self.avx2,
            Variant::Avx2 => self.arch as u8 == Arch::X86_64 as u8 && self.avx2,
            Variant::Sse2 => self.arch as u8 == Arch::X86_64 as u8,
            Variant::Neon => self.arch as u8 == Arch::Aarch64 as u8,
            Variant::Portable => true,
        }
    }
}

/// The rule (module docs): the path this CPU runs.
pub const fn choose(cpu: Cpu) -> Variant {
    match cpu.arch {
        Arch::Aarch64 => Variant::Neon,
        Arch::Other => Variant::Portable,
        Arch::X86_64 => {
            if cpu.avx512 && cpu.avx2 {
                if matches!(cpu.vendor, Vendor::Intel) && cpu.erms && cpu.fsrm {
                    Variant::Avx512Movsb
                } else {
                    Variant::Avx512
                }
            } else if cpu.avx2 {
                Variant::Avx2
            } else {
                Variant::Sse2
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vendor(s: &[u8; 12]) -> [u32; 3] {
        let w = |i: usize| u32::from_le_bytes([s[i], s[i + 1], s[i + 2], s[i + 3]]);
        [w(0), w(4), w(8)]
    }

    /// AVX2 (ebx 5), ERMS (9), AVX-512 F (16), BW (30), VL (31).
    const AVX512_EBX: u32 = 1 << 5 | 1 << 9 | 1 << 16 | 1 << 30 | 1 << 31;
    const FSRM_EDX: u32 = 1 << 4;
    const OS_ECX: u32 = 1 << 27 | 1 << 28;

    fn regs(v: &[u8; 12], l1_eax: u32, ebx: u32, edx: u32, xcr0: u64) -> Regs {
        Regs { max_leaf: 0x20, vendor: vendor(v), l1_eax, l1_ecx: OS_ECX, l7_ebx: ebx, l7_edx: edx, xcr0 }
    }

    #[test]
    fn the_rule_on_known_cpus() {
        // AMD EPYC Zen 4 (family 0x19, model 0x11): 0x00a10f11.
        let zen4 = Cpu::from_regs(regs(b"AuthenticAMD", 0x00a1_0f11, AVX512_EBX, FSRM_EDX, 0xe7));
        assert_eq!((zen4.vendor, zen4.family, zen4.model), (Vendor::Amd, 0x19, 0x11));
        assert!(zen4.erms && zen4.fsrm && zen4.avx2 && zen4.avx512);
        assert_eq!(choose(zen4), Variant::Avx512);
        // An Intel Xeon with FSRM (Sapphire Rapids, family 6 model 0x8f: 0x000806f8).
        let spr = Cpu::from_regs(regs(b"GenuineIntel", 0x0008_06f8, AVX512_EBX, FSRM_EDX, 0xe7));
        assert_eq!((spr.vendor, spr.family, spr.model), (Vendor::Intel, 6, 0x8f));
        assert_eq!(choose(spr), Variant::Avx512Movsb);
        // Skylake-SP: no FSRM, so the AMD shape.
        let skx = Cpu::from_regs(regs(b"GenuineIntel", 0x0005_0654, AVX512_EBX, 0, 0xe7));
        assert_eq!(choose(skx), Variant::Avx512);
        // The OS not saving the ZMM state: AVX2 only; nor the YMM state: SSE2.
        assert_eq!(
            choose(Cpu::from_regs(regs(b"GenuineIntel", 0x0008_06f8, AVX512_EBX, FSRM_EDX, 0x7))),
            Variant::Avx2
        );
        assert_eq!(choose(Cpu::from_regs(regs(b"AuthenticAMD", 0x00a1_0f11, AVX512_EBX, 0, 0x3))), Variant::Sse2);
        // No OSXSAVE: XCR0 is not read.
        let mut r = regs(b"AuthenticAMD", 0x00a1_0f11, AVX512_EBX, 0, 0xe7);
        r.l1_ecx = 0;
        assert_eq!(choose(Cpu::from_regs(r)), Variant::Sse2);
        // Leaf 7 absent: no AVX2 whatever its registers held.
        let mut r = regs(b"GenuineIntel", 0x0008_06f8, AVX512_EBX, FSRM_EDX, 0xe7);
        r.max_leaf = 6;
        assert_eq!(choose(Cpu::from_regs(r)), Variant::Sse2);
        // Hygon and unknown makers take the AMD shape.
        assert_eq!(
            choose(Cpu::from_regs(regs(b"HygonGenuine", 0x0090_0f01, AVX512_EBX, FSRM_EDX, 0xe7))),
            Variant::Avx512
        );
        assert_eq!(
            choose(Cpu::from_regs(regs(b"SomeoneElse!", 0x0090_0f01, AVX512_EBX, FSRM_EDX, 0xe7))),
            Variant::Avx512
        );
    }

    #[test]
    fn the_chosen_variant_runs_here_and_names_round_trip() {
        let cpu = Cpu::current();
        assert!(cpu.runs(choose(cpu)));
        for v in Variant::ALL {
            assert_eq!(Variant::from_name(v.name()), Some(v));
        }
        assert_eq!(Variant::from_name("avx1024"), None);
    }

    proptest::proptest! {
        #[test]
        fn the_choice_always_runs(eax: u32, ecx: u32, ebx: u32, edx: u32, xcr0: u64, max_leaf: u32, v: [u32; 3]) {
            let cpu = Cpu::from_regs(Regs { max_leaf, vendor: v, l1_eax: eax, l1_ecx: ecx, l7_ebx: ebx, l7_edx: edx, xcr0 });
            proptest::prop_assert!(cpu.runs(choose(cpu)));
        }
    }
}
