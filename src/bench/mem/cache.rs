//! The data-cache sizes of CPU 0, read from sysfs
//! (`/sys/devices/system/cpu/cpu0/cache/index*/{level,type,size}`), to mark
//! the cache regime of a size and to size non-temporal thresholds and cold
//! rotations. The sampler only knows the last-level cache; L1 and L2 come
//! from here.

use super::regimes::CacheSizes;
use std::path::Path;

/// Read the data and unified caches of CPU 0 below `root` (`/` on a live
/// system). Missing or unreadable entries are skipped: an empty result means
/// "unknown", never an error.
pub fn read_sysfs(root: &Path) -> CacheSizes {
    let dir = root.join("sys/devices/system/cpu/cpu0/cache");
    let mut levels = Vec::new();
    let Ok(entries) = std::fs::read_dir(&dir) else { return CacheSizes::default() };
    for e in entries.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with("index") {
            continue;
        }
        let p = e.path();
        let read = |f: &str| std::fs::read_to_string(p.join(f)).ok().map(|s| s.trim().to_string());
        let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size")) else { continue };
        if kind == "Instruction" {
            continue;
        }
        if let (Ok(level), Some(bytes)) = (level.parse::<u32>(), parse_sysfs_size(&size)) {
            levels.push((level, bytes));
        }
    }
    CacheSizes::new(levels)
}

/// The live machine's caches.
pub fn host() -> CacheSizes {
    read_sysfs(Path::new("/"))
}

pub use super::ntrule::Llc;

/// The highest-level data or unified cache of CPU `cpu` below `root`, with
/// its sharing count; `None` when sysfs does not describe it.
pub fn llc_share(root: &Path, cpu: u32) -> Option<Llc> {
    let dir = root.join(format!("sys/devices/system/cpu/cpu{cpu}/cache"));
    let mut best: Option<(u32, Llc)> = None;
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        if !e.file_name().to_string_lossy().starts_with("index") {
            continue;
        }
        let p = e.path();
        let read = |f: &str| std::fs::read(p.join(f)).ok();
        let (Some(level), Some(kind), Some(size), Some(list)) =
            (read("level"), read("type"), read("size"), read("shared_cpu_list"))
        else {
            continue;
        };
        if kind.trim_ascii() == b"Instruction" {
            continue;
        }
        let Some(level) = std::str::from_utf8(&level).ok().and_then(|l| l.trim().parse::<u32>().ok()) else { continue };
        let (Some(bytes), Some(sharing)) =
            (super::ntrule::parse_cache_size(&size), super::ntrule::count_cpu_list(&list))
        else {
            continue;
        };
        if best.is_none_or(|(l, _)| level > l) {
            best = Some((level, Llc { bytes, sharing }));
        }
    }
    best.map(|(_, s)| s)
}

/// sysfs writes sizes as `32K`, `1024K`, `32768K` (sometimes `M`).
pub fn parse_sysfs_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1u64 << 10),
        'M' | 'm' => (&s[..s.len() - 1], 1 << 20),
        'G' | 'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok().and_then(|n| n.checked_mul(mult)).filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_fake_tree() {
        let t = tempfile::tempdir().unwrap();
        let c = t.path().join("sys/devices/system/cpu/cpu0/cache");
        for (i, (lvl, kind, size)) in
            [(1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "2048K"), (3, "Unified", "32768K")]
                .iter()
                .enumerate()
        {
            let d = c.join(format!("index{i}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("level"), format!("{lvl}\n")).unwrap();
            std::fs::write(d.join("type"), format!("{kind}\n")).unwrap();
            std::fs::write(d.join("size"), format!("{size}\n")).unwrap();
        }
        std::fs::create_dir_all(c.join("uevent_dir_not_index")).unwrap();
        let cs = read_sysfs(t.path());
        assert_eq!(cs.levels(), &[(1, 48 << 10), (2, 2 << 20), (3, 32 << 20)]);
        assert_eq!(cs.llc(), Some(32 << 20));
        assert_eq!(read_sysfs(&t.path().join("nope")).levels(), &[]);
        // No shared_cpu_list in this tree: no share.
        assert_eq!(llc_share(t.path(), 0), None);
    }

    /// The non-temporal rule on fake cache descriptions: the share of the
    /// calling CPU, and the thresholds it gives.
    #[test]
    fn llc_share_from_fake_trees() {
        use super::super::ntrule::{auto_threshold, Touch};
        let t = tempfile::tempdir().unwrap();
        let write = |cpu: u32, i: usize, lvl: u32, kind: &str, size: &str, list: &str| {
            let d = t.path().join(format!("sys/devices/system/cpu/cpu{cpu}/cache/index{i}"));
            std::fs::create_dir_all(&d).unwrap();
            for (f, v) in [
                ("level", lvl.to_string()),
                ("type", kind.into()),
                ("size", size.into()),
                ("shared_cpu_list", list.into()),
            ] {
                std::fs::write(d.join(f), format!("{v}\n")).unwrap();
            }
        };
        // This VM: 32 MiB L3 shared by CPUs 0-1.
        write(0, 0, 1, "Data", "32K", "0");
        write(0, 1, 1, "Instruction", "32K", "0");
        write(0, 2, 2, "Unified", "1024K", "0");
        write(0, 3, 3, "Unified", "32768K", "0-1");
        let s = llc_share(t.path(), 0).unwrap();
        assert_eq!(s, Llc { bytes: 32 << 20, sharing: 2 });
        assert_eq!(s.share(), 16 << 20);
        assert_eq!(auto_threshold(Touch::Set, s), (64 << 20) + 1);
        assert_eq!(auto_threshold(Touch::Copy, s), (8 << 20) + 1);
        // A big server's CCD: 32 MiB shared by 16 threads, 2 MiB each.
        write(5, 0, 3, "Unified", "32M", "0-7,64-71");
        write(5, 1, 2, "Unified", "1M", "5,69");
        assert_eq!(llc_share(t.path(), 5).unwrap().share(), 2 << 20);
        // No L3: the L2 is the last level, private.
        write(7, 0, 2, "Unified", "2048K", "7");
        assert_eq!(llc_share(t.path(), 7).unwrap().share(), 2 << 20);
        // A malformed list is skipped, not guessed.
        write(9, 0, 3, "Unified", "32768K", "garbage");
        assert_eq!(llc_share(t.path(), 9), None);
        assert_eq!(llc_share(t.path(), 42), None);
    }

    #[test]
    fn parses_sizes() {
        assert_eq!(parse_sysfs_size("32K"), Some(32768));
        assert_eq!(parse_sysfs_size("2M"), Some(2 << 20));
        assert_eq!(parse_sysfs_size("512"), Some(512));
        assert_eq!(parse_sysfs_size("K"), None);
        assert_eq!(parse_sysfs_size("0K"), None);
    }
}
