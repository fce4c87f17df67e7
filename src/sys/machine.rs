//! What moves measurements on a machine, read below a root (`/` or a fake
//! tree) for `kdelta doctor`: the kernel command line, `/proc/interrupts`
//! and each IRQ's affinity, swap, cpuidle states, signs of a hypervisor, the
//! whole machine's and each process's CPU ticks (proc(5), sysfs(5)).
//! Parsers are separate from reading, for tests.

use crate::cpuset::CpuSet;
use std::path::Path;

fn text(root: &Path, rel: &str) -> Option<String> {
    crate::sys::knobs::read_text(&root.join(rel)).ok()
}

/// The value of `name=` on the kernel command line (`/proc/cmdline`),
/// `Some("")` for a bare `name`.
pub(crate) fn cmdline_param(cmdline: &str, name: &str) -> Option<String> {
    cmdline.split_whitespace().take_while(|w| *w != "--").find_map(|w| match w.split_once('=') {
        Some((k, v)) if k == name => Some(v.to_string()),
        None if w == name => Some(String::new()),
        _ => None,
    })
}

/// `/proc/cmdline` below `root`.
pub(crate) fn cmdline(root: &Path) -> Option<String> {
    text(root, "proc/cmdline")
}

/// One row of `/proc/interrupts`: its name (`24`, `LOC`), its count on each
/// CPU column, and its description (`IO-APIC 4-edge ttyS0`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct IrqRow {
    pub(crate) name: String,
    pub(crate) counts: Vec<(u32, u64)>,
    pub(crate) what: String,
}

/// Parse `/proc/interrupts` (proc(5)): a header of `CPUn` columns, then one
/// row per interrupt.
pub(crate) fn parse_interrupts(s: &str) -> Vec<IrqRow> {
    let mut lines = s.lines();
    let Some(head) = lines.next() else { return Vec::new() };
    let cpus: Vec<u32> = head.split_whitespace().filter_map(|c| c.strip_prefix("CPU")?.parse().ok()).collect();
    let mut out = Vec::new();
    for l in lines {
        let Some((name, rest)) = l.split_once(':') else { continue };
        let mut words = rest.split_whitespace().peekable();
        let mut counts = Vec::new();
        for &c in &cpus {
            match words.peek().and_then(|w| w.parse::<u64>().ok()) {
                Some(n) => {
                    counts.push((c, n));
                    words.next();
                }
                None => break,
            }
        }
        out.push(IrqRow { name: name.trim().to_string(), counts, what: words.collect::<Vec<_>>().join(" ") });
    }
    out
}

/// `/proc/interrupts` below `root`.
pub(crate) fn interrupts(root: &Path) -> Vec<IrqRow> {
    std::fs::read_to_string(root.join("proc/interrupts")).map(|s| parse_interrupts(&s)).unwrap_or_default()
}

/// The CPUs IRQ `irq` may be delivered to: `effective_affinity_list`, else
/// `smp_affinity_list` of `/proc/irq/N` (kernel's IRQ-affinity.rst).
pub(crate) fn irq_affinity(root: &Path, irq: &str) -> Option<CpuSet> {
    ["effective_affinity_list", "smp_affinity_list"].iter().find_map(|f| {
        let t = text(root, &format!("proc/irq/{irq}/{f}"))?;
        CpuSet::parse_list(t.trim()).ok().filter(|c| !c.is_empty())
    })
}

/// Swap devices in use (`/proc/swaps` rows past the header) and the
/// `SwapTotal`/`SwapFree` of `/proc/meminfo`, in KiB.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Swap {
    pub(crate) devices: Vec<String>,
    pub(crate) total_kib: Option<u64>,
    pub(crate) free_kib: Option<u64>,
}

pub(crate) fn parse_meminfo_kib(s: &str, key: &str) -> Option<u64> {
    s.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(':')?.split_whitespace().next()?.parse().ok())
}

pub(crate) fn swap(root: &Path) -> Swap {
    let devices = std::fs::read_to_string(root.join("proc/swaps"))
        .map(|s| s.lines().skip(1).filter_map(|l| l.split_whitespace().next().map(str::to_string)).collect())
        .unwrap_or_default();
    let mi = std::fs::read_to_string(root.join("proc/meminfo")).unwrap_or_default();
    Swap { devices, total_kib: parse_meminfo_kib(&mi, "SwapTotal"), free_kib: parse_meminfo_kib(&mi, "SwapFree") }
}

/// One cpuidle state of one CPU (`cpuN/cpuidle/stateK`, sysfs cpuidle ABI).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct IdleState {
    pub(crate) cpu: u32,
    pub(crate) state: String,
    pub(crate) name: String,
    /// Exit latency, microseconds.
    pub(crate) latency_us: Option<u64>,
    pub(crate) disabled: bool,
}

/// The cpuidle driver and governor (`cpuidle/current_driver`,
/// `current_governor_ro` or `current_governor`).
pub(crate) fn cpuidle_driver(root: &Path) -> (Option<String>, Option<String>) {
    let d = "sys/devices/system/cpu/cpuidle";
    let drv = text(root, &format!("{d}/current_driver"));
    let gov = text(root, &format!("{d}/current_governor_ro")).or_else(|| text(root, &format!("{d}/current_governor")));
    (drv, gov)
}

/// The idle states of each CPU in `cpus`.
pub(crate) fn idle_states(root: &Path, cpus: &CpuSet) -> Vec<IdleState> {
    let mut out = Vec::new();
    for cpu in cpus.iter() {
        let dir = root.join(format!("sys/devices/system/cpu/cpu{cpu}/cpuidle"));
        let Ok(rd) = std::fs::read_dir(&dir) else { continue };
        let mut states: Vec<String> = rd
            .flatten()
            .filter_map(|e| e.file_name().to_str().filter(|n| n.starts_with("state")).map(str::to_string))
            .collect();
        states.sort_by_key(|s| s[5..].parse::<u32>().unwrap_or(u32::MAX));
        for st in states {
            let f = |n: &str| crate::sys::knobs::read_text(&dir.join(&st).join(n)).ok();
            out.push(IdleState {
                cpu,
                name: f("name").unwrap_or_else(|| st.clone()),
                latency_us: f("latency").and_then(|v| v.parse().ok()),
                disabled: f("disable").is_some_and(|v| v != "0"),
                state: st,
            });
        }
    }
    out
}

/// The parameters of the `haltpoll` cpuidle governor/driver module
/// (`/sys/module/haltpoll/parameters/*`), name and value.
pub(crate) fn haltpoll_params(root: &Path) -> Vec<(String, String)> {
    let dir = root.join("sys/module/haltpoll/parameters");
    let mut v: Vec<(String, String)> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let n = e.file_name().to_str()?.to_string();
                    Some((n.clone(), crate::sys::knobs::read_text(&dir.join(&n)).ok()?))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Signs that this is a virtual machine: the `hypervisor` CPU flag, the
/// hypervisor sysfs type, the DMI vendor and product. Empty: none seen.
pub(crate) fn hypervisor_signs(root: &Path) -> Vec<String> {
    let mut v = Vec::new();
    if let Ok(ci) = std::fs::read_to_string(root.join("proc/cpuinfo")) {
        let flagged = ci.lines().any(|l| {
            (l.starts_with("flags") || l.starts_with("Features"))
                && l.split_once(':').is_some_and(|(_, f)| f.split_whitespace().any(|x| x == "hypervisor"))
        });
        if flagged {
            v.push("the hypervisor CPU flag (/proc/cpuinfo)".to_string());
        }
    }
    if let Some(t) = text(root, "sys/hypervisor/type").filter(|t| !t.is_empty()) {
        v.push(format!("hypervisor type {t} (/sys/hypervisor/type)"));
    }
    const VMS: &[&str] =
        &["QEMU", "KVM", "VMware", "VirtualBox", "Xen", "Microsoft Corporation", "Amazon EC2", "Google", "Firecracker"];
    for f in ["sys_vendor", "product_name"] {
        if let Some(t) = text(root, &format!("sys/class/dmi/id/{f}")) {
            if VMS.iter().any(|m| t.contains(m)) {
                v.push(format!("DMI {f} {t:?}"));
            }
        }
    }
    v
}

/// The all-CPU line of `/proc/stat` (proc(5)): total ticks and steal ticks.
pub(crate) fn parse_stat_total(s: &str) -> Option<(u64, u64)> {
    let l = s.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = l.split_whitespace().skip(1).map(|x| x.parse().unwrap_or(0)).collect();
    // user nice system idle iowait irq softirq steal (guest time is in user already)
    let total = v.iter().take(8).sum();
    Some((total, v.get(7).copied().unwrap_or(0)))
}

pub(crate) fn stat_total(root: &Path) -> Option<(u64, u64)> {
    parse_stat_total(&std::fs::read_to_string(root.join("proc/stat")).ok()?)
}

/// Every process below `root`'s `/proc` with its command name and CPU
/// ticks (utime + stime, fields 14 and 15 of `/proc/PID/stat`).
pub(crate) fn process_ticks(root: &Path) -> Vec<(i32, String, u64)> {
    let Ok(rd) = std::fs::read_dir(root.join("proc")) else { return Vec::new() };
    rd.flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let s = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let name = s[s.find('(')? + 1..s.rfind(')')?].to_string();
            let rest: Vec<&str> = s[s.rfind(')')? + 1..].split_whitespace().collect();
            let n = |k: usize| rest.get(k - 3).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
            Some((pid, name, n(14) + n(15)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmdline_params() {
        let c = "ro quiet isolcpus=managed_irq,2-3 nohz_full=2-3 nosmt -- init=isolcpus=9";
        assert_eq!(cmdline_param(c, "isolcpus").as_deref(), Some("managed_irq,2-3"));
        assert_eq!(cmdline_param(c, "nosmt").as_deref(), Some(""));
        assert_eq!(cmdline_param(c, "rcu_nocbs"), None);
        assert_eq!(cmdline_param(c, "init"), None, "after -- belongs to init");
    }

    #[test]
    fn interrupts_rows() {
        let s = "           CPU0       CPU1       \n  0:         44          0   IO-APIC   2-edge      timer\n  4:        100        900   IO-APIC   4-edge      ttyS0\nLOC:      12345      23456   Local timer interrupts\nERR:          0\n";
        let r = parse_interrupts(s);
        assert_eq!(r.len(), 4);
        assert_eq!(r[1].name, "4");
        assert_eq!(r[1].counts, vec![(0, 100), (1, 900)]);
        assert_eq!(r[1].what, "IO-APIC 4-edge ttyS0");
        assert_eq!(r[2].what, "Local timer interrupts");
        assert_eq!(r[3].counts, vec![(0, 0)]);
        assert!(parse_interrupts("").is_empty());
    }

    #[test]
    fn stat_total_and_meminfo() {
        assert_eq!(parse_stat_total("cpu  10 0 5 100 1 0 0 4 0 0\ncpu0 1 2\n"), Some((120, 4)));
        assert_eq!(parse_stat_total("cpu0 1 2\n"), None);
        assert_eq!(parse_meminfo_kib("MemTotal: 10 kB\nSwapTotal:   2048 kB\n", "SwapTotal"), Some(2048));
        assert_eq!(parse_meminfo_kib("SwapTotalX: 1 kB\n", "SwapTotal"), None);
    }
}
