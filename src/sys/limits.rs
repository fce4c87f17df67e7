//! System-wide limits on tasks and mappings, from `/proc/sys` (proc(5), the
//! sysctl(8) names in brackets). Per-process limits are getrlimit(2), called
//! through `nix::sys::resource` where they are needed.

/// One number from a `/proc/sys` file (proc(5)).
fn read_num(path: &str) -> Option<u64> {
    parse_num(&std::fs::read_to_string(path).ok()?)
}

/// The number a `/proc/sys` file holds.
pub(crate) fn parse_num(s: &str) -> Option<u64> {
    s.trim().parse().ok()
}

/// `/proc/sys/kernel/threads-max` (proc(5), `kernel.threads-max`): most threads the system may have.
pub(crate) fn threads_max() -> Option<u64> {
    read_num("/proc/sys/kernel/threads-max")
}

/// `/proc/sys/kernel/pid_max` (proc(5), `kernel.pid_max`): one above the largest process or thread id.
pub(crate) fn pid_max() -> Option<u64> {
    read_num("/proc/sys/kernel/pid_max")
}

/// `/proc/sys/vm/max_map_count` (proc(5), `vm.max_map_count`): most memory mappings one process may have.
pub(crate) fn max_map_count() -> Option<u64> {
    read_num("/proc/sys/vm/max_map_count")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_reads() {
        assert_eq!(parse_num("4194304\n"), Some(4194304));
        assert_eq!(parse_num("x"), None);
        assert!(pid_max().unwrap_or(1) > 0);
    }
}
