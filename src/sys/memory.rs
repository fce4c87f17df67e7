//! The calling process's memory as the kernel counts it: what fork(2) has to
//! copy. fork duplicates every mapping (one `vm_area_struct` each) and the
//! page tables of the private pages in use, so its cost grows with the
//! number of mappings and the resident size; `lat.proc.*` records both.

/// `/proc/self/statm` (proc(5)) in bytes, and the number of mappings
/// (lines of `/proc/self/maps`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Footprint {
    /// Total program size (statm field 1, `size`).
    pub(crate) virt_bytes: u64,
    /// Resident set size (statm field 2, `resident`).
    pub(crate) rss_bytes: u64,
    /// The resident pages that are not file-backed or shared (statm
    /// `resident` less `shared`): mostly the private pages whose page-table
    /// entries fork copies; file-backed ones it leaves to fault in again.
    pub(crate) anon_bytes: u64,
    /// Mappings (`/proc/self/maps` lines).
    pub(crate) maps: u64,
}

/// The calling process's footprint, or `None` without `/proc`.
pub(crate) fn footprint() -> Option<Footprint> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    parse(&statm, &maps, page_size())
}

/// sysconf(_SC_PAGESIZE): statm counts pages.
pub(crate) fn page_size() -> u64 {
    // SAFETY: sysconf takes no pointers.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// Parse the texts of `/proc/PID/statm` and `/proc/PID/maps`.
pub(crate) fn parse(statm: &str, maps: &str, page: u64) -> Option<Footprint> {
    parse_statm(statm, maps.lines().filter(|l| !l.trim().is_empty()).count() as u64, page)
}

/// A `/proc/PID/statm` line (proc(5): size, resident, shared, ... in pages)
/// and a count of mappings.
pub(crate) fn parse_statm(statm: &str, maps: u64, page: u64) -> Option<Footprint> {
    let mut f = statm.split_whitespace().map(|x| x.parse::<u64>().ok());
    let size = f.next()??;
    let resident = f.next()??;
    let shared = f.next()??;
    Some(Footprint {
        virt_bytes: size * page,
        rss_bytes: resident * page,
        anon_bytes: resident.saturating_sub(shared) * page,
        maps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_and_its_limit() {
        let m = parse_meminfo("MemTotal:        8000 kB\nMemFree:  1 kB\nMemAvailable:    3000 kB\n").unwrap();
        assert_eq!(m, MemInfo { total: 8_192_000, available: Some(3_072_000) });
        assert_eq!(m.buffer_limit(), 3_072_000);
        let old = parse_meminfo("MemTotal:        8000 kB\n").unwrap();
        assert_eq!(old.buffer_limit(), 4_096_000);
        assert_eq!(parse_meminfo("MemFree: 1 kB\n"), None);
    }

    #[test]
    fn parses_statm_and_counts_maps() {
        let statm = "2431 412 370 101 0 94 0\n";
        let maps = "\
5581c0a00000-5581c0a01000 r--p 00000000 08:01 1048602                    /tmp/lat_proc
5581c0a01000-5581c0a02000 r-xp 00001000 08:01 1048602                    /tmp/lat_proc
7ffd6f3a1000-7ffd6f3c2000 rw-p 00000000 00:00 0                          [stack]
";
        let f = parse(statm, maps, 4096).unwrap();
        assert_eq!(f, Footprint { virt_bytes: 2431 * 4096, rss_bytes: 412 * 4096, anon_bytes: 42 * 4096, maps: 3 });
        assert_eq!(parse("", maps, 4096), None);
        assert_eq!(parse("12 10", maps, 4096), None);
        assert_eq!(parse("12 x", maps, 4096), None);
    }

    #[test]
    fn reads_this_process() {
        let f = footprint().unwrap();
        assert!(f.rss_bytes > 0 && f.maps > 3 && f.virt_bytes >= f.rss_bytes, "{f:?}");
    }
}

/// `MemTotal` and `MemAvailable` of `/proc/meminfo` (proc(5)), bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemInfo {
    pub(crate) total: u64,
    /// `None` before Linux 3.14.
    pub(crate) available: Option<u64>,
}

/// The machine's memory, or `None` without `/proc/meminfo`.
pub(crate) fn meminfo() -> Option<MemInfo> {
    parse_meminfo(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

/// Parse the text of `/proc/meminfo`.
pub(crate) fn parse_meminfo(text: &str) -> Option<MemInfo> {
    let field = |name: &str| {
        let v = text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))?;
        let kb: u64 = v.trim().strip_suffix("kB")?.trim().parse().ok()?;
        Some(kb * 1024)
    };
    Some(MemInfo { total: field("MemTotal")?, available: field("MemAvailable") })
}

impl MemInfo {
    /// The most a benchmark's buffers may take: half of `MemTotal`, and no
    /// more than `MemAvailable`.
    pub(crate) fn buffer_limit(&self) -> u64 {
        let half = self.total / 2;
        self.available.map_or(half, |a| a.min(half))
    }
}
