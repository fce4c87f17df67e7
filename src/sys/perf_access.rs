//! Whether this process may sample stacks with perf events, kernel frames
//! included (perf_event_open(2), "perf_event related configuration files"),
//! and which event to sample: the `cycles` of a hardware PMU when the kernel
//! exposes one, the CPU clock otherwise.

use std::path::Path;

/// `CAP_PERFMON` and `CAP_SYS_ADMIN` (capabilities(7)): either lets a process
/// open perf events on kernel code whatever `perf_event_paranoid` says.
const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;

/// The sysctl that lets unprivileged users sample kernel stacks.
pub(crate) const PARANOID: &str = "/proc/sys/kernel/perf_event_paranoid";

/// Why this process may not sample kernel stacks.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum NoSampling {
    #[error("this kernel has no perf events ({} is missing)", PARANOID)]
    NoPerfEvents,
    #[error(
        "kernel.perf_event_paranoid is {0}: a user without CAP_PERFMON may not sample kernel stacks; \
         run as root or allow it with `sysctl -w kernel.perf_event_paranoid=1`"
    )]
    Paranoid(i32),
}

/// The decision, from what the kernel says: the effective user id, the
/// effective capabilities (`CapEff` of /proc/self/status) and
/// `perf_event_paranoid` (absent: the kernel has no perf events). Kernel
/// stacks need root, CAP_PERFMON or CAP_SYS_ADMIN, or a paranoid level of 1
/// or less.
pub(crate) fn decide(euid: u32, cap_eff: Option<u64>, paranoid: Option<i32>) -> Result<(), NoSampling> {
    let Some(level) = paranoid else {
        return Err(NoSampling::NoPerfEvents);
    };
    let capable = cap_eff.is_some_and(|c| c & (1 << CAP_PERFMON) != 0 || c & (1 << CAP_SYS_ADMIN) != 0);
    if euid == 0 || capable || level <= 1 {
        return Ok(());
    }
    Err(NoSampling::Paranoid(level))
}

/// [`decide`] for this process.
pub(crate) fn check() -> Result<(), NoSampling> {
    let paranoid = std::fs::read_to_string(PARANOID).ok().and_then(|s| s.trim().parse().ok());
    let cap_eff = std::fs::read_to_string("/proc/self/status").ok().and_then(|s| cap_eff(&s));
    decide(nix::unistd::geteuid().as_raw(), cap_eff, paranoid)
}

/// `CapEff` of a /proc/PID/status text.
fn cap_eff(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(line.trim(), 16).ok()
}

/// The event stacks are sampled on: `cycles` where a PMU below
/// `/sys/bus/event_source/devices` (under `root`) counts CPU cycles, the
/// kernel's CPU clock (`cpu-clock`) otherwise.
pub(crate) fn sampling_event(root: &Path) -> &'static str {
    let devices = root.join("sys/bus/event_source/devices");
    let has_cycles = std::fs::read_dir(devices)
        .map(|d| d.flatten().any(|e| e.path().join("events/cpu-cycles").exists()))
        .unwrap_or(false);
    if has_cycles {
        "cycles"
    } else {
        "cpu-clock"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn who_may_sample_kernel_stacks() {
        assert!(decide(0, Some(0), Some(2)).is_ok(), "root");
        assert!(decide(1000, Some(1 << CAP_PERFMON), Some(3)).is_ok(), "CAP_PERFMON");
        assert!(decide(1000, Some(1 << CAP_SYS_ADMIN), Some(2)).is_ok(), "CAP_SYS_ADMIN");
        assert!(decide(1000, Some(0), Some(1)).is_ok(), "paranoid 1");
        assert!(decide(1000, None, Some(-1)).is_ok());
        let e = decide(1000, Some(0), Some(2)).unwrap_err().to_string();
        assert!(e.contains("perf_event_paranoid is 2") && e.contains("sysctl -w kernel.perf_event_paranoid=1"), "{e}");
        assert!(decide(1000, Some(0), Some(4)).is_err());
        assert!(decide(0, None, None).unwrap_err().to_string().contains("no perf events"));
    }

    #[test]
    fn capabilities_from_status() {
        let s = "Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
        assert_eq!(cap_eff(s), Some(0x1ff_ffff_ffff));
        assert_eq!(cap_eff("Name: x\n"), None);
    }

    #[test]
    fn cycles_only_where_a_pmu_counts_them() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("sys/bus/event_source/devices/software")).unwrap();
        assert_eq!(sampling_event(d.path()), "cpu-clock");
        std::fs::create_dir_all(d.path().join("sys/bus/event_source/devices/cpu/events")).unwrap();
        std::fs::write(d.path().join("sys/bus/event_source/devices/cpu/events/cpu-cycles"), "event=0x3c\n").unwrap();
        assert_eq!(sampling_event(d.path()), "cycles");
        assert_eq!(sampling_event(Path::new("/nonexistent")), "cpu-clock");
    }
}
