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
        for (i, (lvl, kind, size)) in [(1, "Data", "48K"), (1, "Instruction", "32K"), (2, "Unified", "2048K"), (3, "Unified", "32768K")].iter().enumerate() {
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
