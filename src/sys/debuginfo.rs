//! Where a distribution keeps the DWARF it strips from its binaries: the
//! separate debug files under `/usr/lib/debug` (Debian's `-dbg`/`-dbgsym`,
//! Fedora's `-debuginfo` packages), as gdb and perf look for them.

use std::path::{Path, PathBuf};

/// The root of the separate debug files.
pub(crate) const ROOT: &str = "/usr/lib/debug";

/// The debug file of the binary whose GNU build-id is `id`, below `root`:
/// `root/.build-id/xx/rest.debug`.
pub(crate) fn by_build_id(root: &Path, id: &[u8]) -> PathBuf {
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let (dir, rest) = hex.split_at(2.min(hex.len()));
    root.join(".build-id").join(dir).join(format!("{rest}.debug"))
}

/// The places gdb looks for the debug file a `.gnu_debuglink` names, for a
/// binary in `dir`: beside it, in its `.debug` directory, and below `root`
/// at the binary's own path.
pub(crate) fn by_debuglink(root: &Path, dir: &Path, name: &Path) -> [PathBuf; 3] {
    [dir.join(name), dir.join(".debug").join(name), root.join(dir.strip_prefix("/").unwrap_or(dir)).join(name)]
}

/// The separate debug file of `file` (the binary at `path`, stripped of
/// its DWARF or its symbol table): by its build-id under `root`, else by
/// its `.gnu_debuglink` name beside it, in its `.debug` directory or under
/// `root` (where gdb looks); the first that exists.
pub(crate) fn find(path: &Path, file: &object::File, root: &Path) -> Option<PathBuf> {
    use object::Object;
    let mut candidates = Vec::new();
    if let Ok(Some(id)) = file.build_id() {
        candidates.push(by_build_id(root, id));
    }
    if let (Ok(Some((name, _))), Some(dir)) = (file.gnu_debuglink(), path.parent()) {
        candidates.extend(by_debuglink(root, dir, Path::new(std::str::from_utf8(name).ok()?)));
    }
    candidates.into_iter().find(|c| c.is_file() && c != path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_files_are_where_gdb_looks() {
        let root = Path::new("/usr/lib/debug");
        assert_eq!(by_build_id(root, &[0xab, 0x01, 0xff]), Path::new("/usr/lib/debug/.build-id/ab/01ff.debug"));
        let [beside, dot, below] = by_debuglink(root, Path::new("/usr/bin"), Path::new("x.debug"));
        assert_eq!(beside, Path::new("/usr/bin/x.debug"));
        assert_eq!(dot, Path::new("/usr/bin/.debug/x.debug"));
        assert_eq!(below, Path::new("/usr/lib/debug/usr/bin/x.debug"));
    }
}
