//! The non-temporal rule, written down once: when kdelta's tuned copy, fill
//! and page clear use non-temporal (streaming) stores. The benchmarks (through
//! [`super::cache::llc_share`]) and the preload library
//! (`preload/kdelta_mem.rs`, which includes this file) both decide by it.
//! Only `core` is used here, so the `no_std` preload library can include it.
//!
//! # The rule
//! Stream when the bytes a call *touches* exceed the part of the last-level
//! cache it can count on keeping them in:
//!
//! - a copy touches `2n` bytes (source and destination both pass through
//!   the cache) and is held against the calling CPU's *share*: the cache's
//!   size over the number of CPUs sharing it, both from sysfs
//!   (`cpuN/cache/indexI/{size,shared_cpu_list}` of the CPU the call runs
//!   on). On this VM: 32 MiB shared by CPUs 0-1, a 16 MiB share, so copies
//!   stream from 8 MiB + 1 byte;
//! - a fill touches `n` bytes and is held against *twice the whole* cache:
//!   it streams from 64 MiB + 1 byte here;
//! - a page clear (one 4 KiB page a call, as the kernel clears pages) never
//!   streams: each call's streaming stores end with a fence before the
//!   next page, and `rep stosb` of the page measured 1.09-1.27x the
//!   streaming loop from 91 to 512 MiB of pages, warm and not in cache (the
//!   kernel's `clear_page_erms` is the same `rep stosb`).
//!
//! Why the two differ is measured, not assumed (docs/mem.md): a
//! warm fill of 23 MiB that streamed ran 0.57-0.66x the C library, whose
//! temporal stores leave it in the 32 MiB cache the other CPU was not using
//! (a fill only writes, so it evicts nothing of its own until it outgrows
//! the cache); a warm page clear of 46 MiB, 1.4 times the cache, still ran
//! 0.79-0.84x streamed (part of it survives in the cache from one call to
//! the next), and one of 64 MiB 0.89, while with temporal stores both ran
//! 0.96-1.02x. A temporal copy, which reads as much as it writes, already
//! falls from 30 to 24 GB/s between 16 and 23 MiB touched, and streaming it
//! there is 1.10x. So a fill up to twice the cache keeps the C library's
//! method (`rep stosb`) and its speed, and above that streams, which
//! measured 0.98-1.35x (the gain grows when other tenants load memory).
//!
//! `nt_threshold=SIZE` (a benchmark parameter) overrides the rule with a
//! fixed size argument at or above which streaming is used.
//!
//! # Where it differs from glibc
//! glibc 2.36 (`sysdeps/x86/dl-cacheinfo.h`, `dl_init_cacheinfo`) sets
//! `__x86_shared_non_temporal_threshold` to 3/4 of its "shared" size and
//! compares it with the *size argument* of memcpy/memmove alone, for every
//! size of copy; memset never streams in 2.36. Its shared size on AMD
//! (`handle_amd`) is the L3 size divided by the threads cpuid says share the
//! package, multiplied back by the threads of a CCX (cpuid 0x8000001D); in a
//! VM those cpuid counts are what the hypervisor presents and need not match
//! the sysfs view (on this VM glibc's copies were measured temporal up to
//! 240 MiB, over seven times the whole L3). kdelta's rule differs in three
//! ways: it counts the bytes the call touches (a copy touches twice its
//! size), it takes the cache and its sharing from sysfs, as the kernel
//! describes the caches the CPU actually uses, and it applies to fills too,
//! once they are twice the whole cache (such a fill evicts itself anyway and
//! gains nothing from reading each line before writing it).

/// What a call does to memory, for its touched bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Touch {
    /// Reads `n` bytes and writes `n` others.
    Copy,
    /// Writes `n` bytes (memset).
    Set,
    /// Writes one 4 KiB page a call (a page clear): never streams.
    Page,
}

/// Bytes a call of size `n` touches.
#[cfg(test)]
pub(crate) const fn touched(kind: Touch, n: u64) -> u64 {
    match kind {
        Touch::Copy => n.saturating_mul(2),
        Touch::Set | Touch::Page => n,
    }
}

/// The calling CPU's share of a last-level cache of `llc_bytes` shared by
/// `sharing` CPUs (0 is taken as 1: an unknown sharing set is no division).
pub(crate) const fn share(llc_bytes: u64, sharing: u32) -> u64 {
    let s = if sharing == 0 { 1 } else { sharing as u64 };
    llc_bytes / s
}

/// The last-level cache as one CPU sees it: its size and how many CPUs
/// share it (`shared_cpu_list`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Llc {
    pub(crate) bytes: u64,
    pub(crate) sharing: u32,
}

impl Llc {
    /// The CPU's share: the size over the CPUs sharing it.
    pub const fn share(self) -> u64 {
        share(self.bytes, self.sharing)
    }

    /// The bytes a call of `kind` may touch before it streams.
    pub const fn bound(self, kind: Touch) -> u64 {
        match kind {
            Touch::Copy => self.share(),
            Touch::Set => self.bytes.saturating_mul(2),
            Touch::Page => u64::MAX,
        }
    }
}

/// The rule itself: stream when the touched bytes exceed the bound.
#[cfg(test)]
pub(crate) const fn streams(kind: Touch, n: u64, llc: Llc) -> bool {
    touched(kind, n) > llc.bound(kind)
}

/// The smallest size argument that streams under the rule: the threshold
/// a routine compares its size with (`n >= threshold`).
pub(crate) const fn auto_threshold(kind: Touch, llc: Llc) -> u64 {
    let bound = llc.bound(kind);
    match kind {
        Touch::Copy => bound / 2 + 1,
        Touch::Set | Touch::Page => bound.saturating_add(1),
    }
}

/// The number of CPUs in a sysfs CPU list (`0-3,8`, trailing newline
/// allowed); `None` when malformed. (No indexing here or below: the preload
/// library has no panic machinery to link.)
pub(crate) fn count_cpu_list(s: &[u8]) -> Option<u32> {
    let s = trim(s);
    if s.is_empty() {
        return None;
    }
    let mut count: u32 = 0;
    for part in s.split(|&b| b == b',') {
        let mut ends = part.split(|&b| b == b'-');
        let lo = parse_u64(ends.next()?)?;
        let hi = match ends.next() {
            Some(h) => parse_u64(h)?,
            None => lo,
        };
        if ends.next().is_some() || hi < lo || hi - lo >= 1 << 20 {
            return None;
        }
        count = count.checked_add((hi - lo + 1) as u32)?;
    }
    Some(count)
}

/// A sysfs cache size (`32768K`, `2M`, `512`); `None` when malformed or 0.
pub(crate) fn parse_cache_size(s: &[u8]) -> Option<u64> {
    let s = trim(s);
    let (&last, rest) = s.split_last()?;
    let (num, mult) = match last {
        b'K' | b'k' => (rest, 1u64 << 10),
        b'M' | b'm' => (rest, 1 << 20),
        b'G' | b'g' => (rest, 1 << 30),
        _ => (s, 1),
    };
    parse_u64(num)?.checked_mul(mult).filter(|&n| n > 0)
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let Some((first, rest)) = s.split_first() {
        if !first.is_ascii_whitespace() {
            break;
        }
        s = rest;
    }
    while let Some((last, rest)) = s.split_last() {
        if !last.is_ascii_whitespace() {
            break;
        }
        s = rest;
    }
    s
}

fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in s {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v * 10 + (b - b'0') as u64;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_on_this_vms_cache() {
        // 32 MiB shared by two CPUs: a 16 MiB share.
        let llc = Llc { bytes: 32 << 20, sharing: 2 };
        assert_eq!(llc.share(), 16 << 20);
        // A fill streams only above twice the whole cache (a measured 0.36x
        // point was a 16 MiB fill; 23 MiB warm was 0.57-0.66x streamed, a
        // 46 MiB page clear 0.79-0.84x).
        assert!(!streams(Touch::Set, 16 << 20, llc));
        assert!(!streams(Touch::Set, 64 << 20, llc));
        assert!(streams(Touch::Set, (64 << 20) + 1, llc));
        // A copy of n touches 2n and is held against the share.
        assert!(streams(Touch::Copy, 16 << 20, llc));
        assert!(!streams(Touch::Copy, 8 << 20, llc));
        assert!(streams(Touch::Copy, (8 << 20) + 1, llc));
        assert_eq!(auto_threshold(Touch::Copy, llc), (8 << 20) + 1);
        assert_eq!(auto_threshold(Touch::Set, llc), (64 << 20) + 1);
        // A page clear never streams.
        assert!(!streams(Touch::Page, 16 << 30, llc));
        assert_eq!(auto_threshold(Touch::Page, llc), u64::MAX);
        for kind in [Touch::Copy, Touch::Set] {
            let t = auto_threshold(kind, llc);
            assert!(streams(kind, t, llc) && !streams(kind, t - 1, llc), "{kind:?}");
        }
        assert_eq!(share(1 << 20, 0), 1 << 20);
        // A big server's CCD: 32 MiB shared by 16 threads; copies stream
        // from 1 MiB, fills still from 64 MiB.
        let ccd = Llc { bytes: 32 << 20, sharing: 16 };
        assert_eq!(auto_threshold(Touch::Copy, ccd), (1 << 20) + 1);
        assert_eq!(auto_threshold(Touch::Set, ccd), (64 << 20) + 1);
    }

    #[test]
    fn cpu_lists_and_sizes() {
        assert_eq!(count_cpu_list(b"0-1\n"), Some(2));
        assert_eq!(count_cpu_list(b"0-3,8,10-11"), Some(7));
        assert_eq!(count_cpu_list(b"5"), Some(1));
        for bad in [&b""[..], b"3-1", b"a", b"1,,2", b"-", b"0-"] {
            assert_eq!(count_cpu_list(bad), None, "{:?}", core::str::from_utf8(bad));
        }
        assert_eq!(parse_cache_size(b"32768K\n"), Some(32 << 20));
        assert_eq!(parse_cache_size(b"2M"), Some(2 << 20));
        assert_eq!(parse_cache_size(b"512"), Some(512));
        assert_eq!(parse_cache_size(b"0K"), None);
        assert_eq!(parse_cache_size(b"K"), None);
    }

    proptest::proptest! {
        #[test]
        fn parsers_never_panic(s in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40)) {
            let _ = count_cpu_list(&s);
            let _ = parse_cache_size(&s);
        }

        #[test]
        fn threshold_is_the_rules_edge(bytes in 1u64..(1 << 40), sharing in 0u32..512) {
            let llc = Llc { bytes, sharing };
            for kind in [Touch::Copy, Touch::Set] {
                let t = auto_threshold(kind, llc);
                proptest::prop_assert!(streams(kind, t, llc));
                proptest::prop_assert!(t == 0 || !streams(kind, t - 1, llc));
            }
        }
    }
}
