//! The host snapshot every run stores: topology plus CPU model, kernel,
//! preemption model, glibc version and vulnerability mitigations.
//!
//! Everything is read below a root, like the topology. What cannot be read is
//! recorded as `unavailable: <why>`, never guessed. Facts that only the
//! running system can tell (uname, glibc) are read only when the root is `/`.

use super::Topology;
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Host {
    pub(crate) hostname: String,
    /// `model name` from `/proc/cpuinfo` (or the other architectures' field);
    /// distinct models joined with ` + `.
    pub(crate) cpu_model: String,
    /// `uname -r`.
    pub(crate) kernel_release: String,
    /// `uname -v`.
    pub(crate) kernel_version: String,
    /// The preemption model: `full`, `voluntary`, `none`, `lazy`, `rt`, or
    /// the flag `uname -v` shows when nothing finer is readable.
    pub(crate) preempt_model: String,
    /// Where [`Host::preempt_model`] came from.
    pub(crate) preempt_source: String,
    pub(crate) glibc_version: String,
    /// `sys/devices/system/cpu/vulnerabilities/*`: (name, state), sorted by name.
    pub(crate) mitigations: Vec<(String, String)>,
    /// `uname -m`.
    pub(crate) arch: String,
    /// `MemTotal` of `/proc/meminfo`, bytes.
    pub(crate) mem_total_bytes: Option<u64>,
    /// Whether `/proc/cpuinfo` shows the x86 `ht` flag (the CPU could run SMT;
    /// it says nothing about whether siblings exist). None off x86.
    pub(crate) ht_flag: Option<bool>,
    pub(crate) topology: Topology,
    /// What was missing and what was assumed instead.
    pub(crate) notes: Vec<String>,
    /// The `microcode` revisions of `/proc/cpuinfo`, distinct ones joined
    /// with ` + ` (empty where the field is absent, as off x86).
    #[serde(default)]
    pub(crate) microcode: String,
    /// `/proc/cmdline`: the kernel's command line.
    #[serde(default)]
    pub(crate) cmdline: String,
}

/// The distinct values of a `/proc/cpuinfo` field, in order, joined with ` + `.
fn cpuinfo_field(text: &str, field: &str) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for l in text.lines() {
        if let Some((k, v)) = l.split_once(':') {
            if k.trim() == field && !seen.contains(&v.trim()) {
                seen.push(v.trim());
            }
        }
    }
    seen.join(" + ")
}

fn unavailable(why: impl std::fmt::Display) -> String {
    format!("unavailable: {why}")
}

/// True when `root` is the live system's root.
fn is_live(root: &Path) -> bool {
    root.canonicalize().map(|p| p == Path::new("/")).unwrap_or(false)
}

fn collapse_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The CPU model(s) of a `/proc/cpuinfo` text.
pub(crate) fn cpu_model_of(cpuinfo: &str) -> Option<String> {
    let field = |key: &str| -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for line in cpuinfo.lines() {
            let Some((k, val)) = line.split_once(':') else {
                continue;
            };
            if k.trim() == key {
                let val = collapse_ws(val);
                if !val.is_empty() && !v.contains(&val) {
                    v.push(val);
                }
            }
        }
        v
    };
    // x86 `model name`, POWER `cpu`, old ARM `Processor`, then pieces of others.
    for key in ["model name", "cpu", "Processor", "uarch"] {
        let v = field(key);
        if !v.is_empty() {
            return Some(v.join(" + "));
        }
    }
    let (imp, part) = (field("CPU implementer"), field("CPU part"));
    if !part.is_empty() {
        let models: Vec<String> = part
            .iter()
            .map(|p| match imp.first() {
                Some(i) => format!("CPU implementer {i}, part {p}"),
                None => format!("CPU part {p}"),
            })
            .collect();
        return Some(models.join(" + "));
    }
    let (vendor, family) = (field("vendor"), field("family"));
    if let Some(f) = family.first() {
        return Some(match vendor.first() {
            Some(v) => format!("{v} {f}"),
            None => f.clone(),
        });
    }
    None
}

/// The preemption flag in a `uname -v` string.
pub(crate) fn preempt_from_uname(v: &str) -> String {
    let toks: Vec<&str> = v.split_whitespace().collect();
    for flag in ["PREEMPT_RT", "PREEMPT_DYNAMIC", "PREEMPT"] {
        if toks.contains(&flag) {
            return flag.to_string();
        }
    }
    // Some kernels write the model itself: `PREEMPT(full)`, `PREEMPT_{RT,DYNAMIC}`.
    if let Some(t) = toks.iter().find(|t| t.starts_with("PREEMPT")) {
        return t.to_string();
    }
    "none or voluntary (uname -v names no PREEMPT)".to_string()
}

/// The active model in `sys/kernel/debug/sched/preempt`: `none voluntary (full) lazy`.
pub(crate) fn preempt_from_debugfs(s: &str) -> Option<String> {
    s.split_whitespace().find_map(|t| t.strip_prefix('(')?.strip_suffix(')').map(str::to_string))
}

/// `preempt=` on the kernel command line.
fn preempt_from_cmdline(s: &str) -> Option<String> {
    s.split_whitespace().find_map(|t| t.strip_prefix("preempt=").map(str::to_string))
}

fn meminfo_total(s: &str) -> Option<u64> {
    let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kb.checked_mul(1024)
}

/// An I/O error without the `(os error N)` tail.
fn short_io(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// A file of the host that could not be read, named as the live system
/// would name it (`/proc/cpuinfo`).
#[derive(Debug, thiserror::Error)]
#[error("/{rel}: {}", short_io(.source))]
struct Unreadable {
    rel: String,
    source: std::io::Error,
}

/// The text of `rel` below `root`, trimmed.
fn read_rel(root: &Path, rel: &str) -> Result<String, Unreadable> {
    fs::read(root.join(rel))
        .map(|b| String::from_utf8_lossy(&b).trim_matches(|c: char| c.is_whitespace() || c == '\0').to_string())
        .map_err(|source| Unreadable { rel: rel.to_string(), source })
}

#[cfg(target_env = "gnu")]
fn glibc_version() -> String {
    // SAFETY: gnu_get_libc_version takes no arguments and returns a pointer to
    // a static NUL-terminated string owned by glibc, valid for the process.
    let p = unsafe { libc::gnu_get_libc_version() };
    if p.is_null() {
        return unavailable("gnu_get_libc_version returned NULL");
    }
    // SAFETY: p is non-null and points to glibc's static NUL-terminated string.
    unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

#[cfg(not(target_env = "gnu"))]
fn glibc_version() -> String {
    unavailable("kdelta was not built against glibc")
}

impl Host {
    /// Snapshot the machine below `root` (`/` for this one).
    pub(crate) fn read(root: &Path) -> anyhow::Result<Host> {
        let (topology, mut notes) = Topology::read_with_notes(root)?;
        let live = is_live(root);
        if !live {
            notes.insert(0, format!("read below {}, not the live system: uname and glibc not read", root.display()));
        }
        let (hostname, kernel_release, kernel_version, arch) = uname_fields(root, live);

        let cpuinfo = read_rel(root, "proc/cpuinfo");
        let cpu_model = match &cpuinfo {
            Ok(text) => cpu_model_of(text).unwrap_or_else(|| unavailable("no model field in /proc/cpuinfo")),
            Err(e) => unavailable(e),
        };
        let ht_flag = cpuinfo.as_ref().ok().and_then(|text| {
            let flags = text.lines().find(|l| l.split(':').next().map(str::trim) == Some("flags"))?;
            Some(flags.split(':').nth(1)?.split_whitespace().any(|f| f == "ht"))
        });
        let microcode = cpuinfo.as_ref().map(|t| cpuinfo_field(t, "microcode")).unwrap_or_default();
        let cmdline = read_rel(root, "proc/cmdline").unwrap_or_else(unavailable);
        let mem_total_bytes = read_rel(root, "proc/meminfo").ok().and_then(|m| meminfo_total(&m));
        let (preempt_model, preempt_source) = preemption(root, &kernel_version);
        let glibc_version = if live { glibc_version() } else { unavailable("not the live system") };
        let mitigations = read_mitigations(root, &mut notes);

        Ok(Host {
            microcode,
            cmdline,
            hostname,
            cpu_model,
            kernel_release,
            kernel_version,
            preempt_model,
            preempt_source,
            glibc_version,
            mitigations,
            arch,
            mem_total_bytes,
            ht_flag,
            topology,
            notes,
        })
    }
}

/// Host name, kernel release, kernel version and machine: from uname on the
/// live system; below another root from the capture's `proc/sys/kernel`
/// files where it has them (uname would describe this machine instead), the
/// machine unavailable.
fn uname_fields(root: &Path, live: bool) -> (String, String, String, String) {
    if live {
        match nix::sys::utsname::uname() {
            Ok(u) => (
                u.nodename().to_string_lossy().into_owned(),
                u.release().to_string_lossy().into_owned(),
                u.version().to_string_lossy().into_owned(),
                u.machine().to_string_lossy().into_owned(),
            ),
            Err(e) => {
                let s = unavailable(format!("uname: {e}"));
                (s.clone(), s.clone(), s.clone(), s)
            }
        }
    } else {
        let kernel = |name: &str| read_rel(root, &format!("proc/sys/kernel/{name}")).unwrap_or_else(unavailable);
        (kernel("hostname"), kernel("osrelease"), kernel("version"), unavailable("not the live system"))
    }
}

/// The preemption model and where it was read: the active model debugfs
/// shows, else the uname flag, refined for a dynamic kernel by `preempt=` on
/// the command line.
fn preemption(root: &Path, kernel_version: &str) -> (String, String) {
    let uname_flag =
        if kernel_version.starts_with("unavailable") { None } else { Some(preempt_from_uname(kernel_version)) };
    let debugfs = "sys/kernel/debug/sched/preempt";
    let why = match read_rel(root, debugfs).map(|s| preempt_from_debugfs(&s)) {
        Ok(Some(active)) => {
            let flag = uname_flag.map(|f| format!(" ({f})")).unwrap_or_default();
            return (format!("{active}{flag}"), format!("/{debugfs}"));
        }
        Err(e) => e.to_string(),
        Ok(None) => format!("/{debugfs}: no active model in parentheses"),
    };
    let Some(flag) = uname_flag else {
        return (unavailable(format!("no uname -v; {why}")), "none".into());
    };
    let cmdline = if flag.contains("DYNAMIC") {
        read_rel(root, "proc/cmdline").ok().and_then(|c| preempt_from_cmdline(&c))
    } else {
        None
    };
    match cmdline {
        Some(m) => (format!("{m} ({flag})"), format!("uname -v and preempt= in /proc/cmdline ({why})")),
        None => (flag, format!("uname -v ({why})")),
    }
}

/// Each file of the `vulnerabilities` directory with its text, sorted; a
/// note when the directory cannot be read.
fn read_mitigations(root: &Path, notes: &mut Vec<String>) -> Vec<(String, String)> {
    let vuln = "sys/devices/system/cpu/vulnerabilities";
    let mut mitigations = Vec::new();
    match fs::read_dir(root.join(vuln)) {
        Ok(entries) => {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let state = read_rel(root, &format!("{vuln}/{name}")).unwrap_or_else(unavailable);
                mitigations.push((name, state));
            }
            mitigations.sort();
        }
        Err(e) => notes.push(format!("mitigations unavailable: /{vuln}: {}", short_io(&e))),
    }
    mitigations
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::fake::FakeSys;

    #[test]
    fn cpu_models_of_several_arches() {
        for (cpuinfo, want) in [
            ("processor\t: 0\nmodel name\t: Intel(R)  Xeon(R)   E5345\n", Some("Intel(R) Xeon(R) E5345")),
            ("processor\t: 0\ncpu\t\t: POWER7 (architected)\n", Some("POWER7 (architected)")),
            ("Processor\t: ARMv7 Processor rev 1 (v7l)\nprocessor\t: 0\n", Some("ARMv7 Processor rev 1 (v7l)")),
            ("processor\t: 0\nCPU implementer\t: 0x48\nCPU part\t: 0xd01\n", Some("CPU implementer 0x48, part 0xd01")),
            ("vendor     : GenuineIntel\nfamily     : Itanium 2\n", Some("GenuineIntel Itanium 2")),
            ("model name: A\nmodel name: B\nmodel name: A\n", Some("A + B")),
            ("processor: 0\n", None),
        ] {
            assert_eq!(cpu_model_of(cpuinfo).as_deref(), want, "{cpuinfo:?}");
        }
    }

    #[test]
    fn preemption_flags() {
        assert_eq!(preempt_from_uname("#1 SMP PREEMPT_DYNAMIC Thu Jan 1"), "PREEMPT_DYNAMIC");
        assert_eq!(preempt_from_uname("#1 SMP PREEMPT_RT Thu"), "PREEMPT_RT");
        assert_eq!(preempt_from_uname("#1 SMP PREEMPT Thu"), "PREEMPT");
        assert_eq!(preempt_from_uname("#1 SMP PREEMPT(full) Thu"), "PREEMPT(full)");
        assert!(preempt_from_uname("#1 SMP Thu").starts_with("none or voluntary"));
        assert_eq!(preempt_from_debugfs("none voluntary (full) lazy\n").as_deref(), Some("full"));
        assert_eq!(preempt_from_debugfs("none voluntary full"), None);
        assert_eq!(preempt_from_cmdline("ro quiet preempt=voluntary").as_deref(), Some("voluntary"));
    }

    #[test]
    fn snapshot_of_a_fake_root() -> anyhow::Result<()> {
        let f = FakeSys::grid(1, 2, 1, false)?;
        f.write("proc/cpuinfo", "processor\t: 0\nmodel name\t: Fake CPU\nflags\t\t: fpu ht sse\n")?;
        f.write("proc/meminfo", "MemTotal:        1024 kB\n")?;
        f.write("proc/sys/kernel/version", "#1 SMP PREEMPT_DYNAMIC Mon")?;
        f.write("proc/sys/kernel/osrelease", "9.9.9")?;
        f.write("sys/kernel/debug/sched/preempt", "none (voluntary) full")?;
        f.cpu_file("vulnerabilities/spectre_v2", "Mitigation: Retpolines")?;
        f.cpu_file("vulnerabilities/meltdown", "Not affected")?;
        let h = Host::read(f.root())?;
        assert_eq!(h.cpu_model, "Fake CPU");
        assert_eq!(h.kernel_release, "9.9.9");
        assert_eq!(h.preempt_model, "voluntary (PREEMPT_DYNAMIC)");
        assert_eq!(h.preempt_source, "/sys/kernel/debug/sched/preempt");
        assert!(h.glibc_version.starts_with("unavailable: "));
        assert!(h.arch.starts_with("unavailable: "));
        assert!(h.hostname.starts_with("unavailable: "));
        assert_eq!(h.mem_total_bytes, Some(1 << 20));
        assert_eq!(h.ht_flag, Some(true));
        assert_eq!(
            h.mitigations,
            vec![("meltdown".into(), "Not affected".into()), ("spectre_v2".into(), "Mitigation: Retpolines".into())]
        );
        let json = serde_json::to_string(&h)?;
        let back: Host = serde_json::from_str(&json)?;
        assert_eq!(back, h);
        Ok(())
    }

    #[test]
    fn missing_everything_but_cpus_is_unavailable_not_invented() -> anyhow::Result<()> {
        let f = FakeSys::grid(1, 1, 1, false)?;
        let h = Host::read(f.root())?;
        assert!(h.cpu_model.starts_with("unavailable: "), "{}", h.cpu_model);
        assert!(h.kernel_version.starts_with("unavailable: "));
        assert!(h.preempt_model.starts_with("unavailable: "), "{}", h.preempt_model);
        assert!(h.mitigations.is_empty());
        assert!(h.notes.iter().any(|n| n.contains("mitigations unavailable")));
        assert_eq!(h.mem_total_bytes, None);
        Ok(())
    }

    #[test]
    fn live_host_has_sane_structure() -> anyhow::Result<()> {
        if !Path::new("/sys/devices/system/cpu").is_dir() {
            eprintln!("skipped: no /sys/devices/system/cpu here");
            return Ok(());
        }
        let h = Host::read(Path::new("/"))?;
        let t = &h.topology;
        assert!(!t.online.is_empty());
        assert_eq!(t.cpus.len(), t.online.len());
        assert_eq!(t.cores.iter().map(|c| c.cpus.len()).sum::<usize>(), t.cpus.len());
        assert!(!t.packages.is_empty());
        assert!(!h.kernel_release.is_empty() && !h.kernel_release.starts_with("unavailable"));
        assert!(!h.arch.starts_with("unavailable"));
        assert!(!h.preempt_model.is_empty());
        #[cfg(target_env = "gnu")]
        assert!(h.glibc_version.chars().next().is_some_and(|c| c.is_ascii_digit()), "{}", h.glibc_version);
        Ok(())
    }
}
