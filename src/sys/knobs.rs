//! The kernel files behind kdelta's machine-wide settings, read and written
//! below a root (`/` on the live machine, a fake tree in tests), each named
//! by the documentation that defines it:
//!
//! | file (below the root) | documentation |
//! |---|---|
//! | `sys/kernel/debug/sched/preempt` | the preemption model of a `PREEMPT_DYNAMIC` kernel (kernel/sched/debug.c; `preempt=` in kernel-parameters.txt) |
//! | `sys/devices/system/cpu/smt/control`, `active` | sysfs-devices-system-cpu (ABI), "SMT control" |
//! | `sys/devices/system/cpu/cpufreq/policy*/scaling_governor`, `scaling_available_governors` | admin-guide/pm/cpufreq.rst |
//! | `sys/devices/system/cpu/cpufreq/boost`, `sys/devices/system/cpu/intel_pstate/no_turbo` | cpufreq.rst "boost", intel_pstate.rst "no_turbo" |
//! | `sys/kernel/mm/transparent_hugepage/enabled` | admin-guide/mm/transhuge.rst |
//! | `proc/sys/...` | proc_sys(5), sysctl(8) |
//!
//! debugfs is mounted with mount(2) and unmounted with umount2(2) only on
//! the live machine (root `/`); looking at it is done in a private mount
//! namespace ([`private_debugfs`]).

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(crate) const DEBUGFS: &str = "sys/kernel/debug";
pub(crate) const PREEMPT: &str = "sys/kernel/debug/sched/preempt";
pub(crate) const SMT_CONTROL: &str = "sys/devices/system/cpu/smt/control";
pub(crate) const CPUFREQ: &str = "sys/devices/system/cpu/cpufreq";
pub(crate) const BOOST: &str = "sys/devices/system/cpu/cpufreq/boost";
pub(crate) const NO_TURBO: &str = "sys/devices/system/cpu/intel_pstate/no_turbo";
pub(crate) const THP: &str = "sys/kernel/mm/transparent_hugepage/enabled";
pub(crate) const PROC_SYS: &str = "proc/sys";

/// The most of a kernel file read: sysfs(5) attributes hold one page; a
/// file longer than this is not a setting.
pub(crate) const MAX_TEXT: u64 = 64 * 1024;

/// A file's text without its trailing newline (sysfs(5): one value per file),
/// read up to [`MAX_TEXT`] bytes (longer is an error).
pub(crate) fn read_text(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut s = String::new();
    std::fs::File::open(path)?.take(MAX_TEXT + 1).read_to_string(&mut s)?;
    if s.len() as u64 > MAX_TEXT {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("longer than {MAX_TEXT} bytes: not a kernel setting"),
        ));
    }
    Ok(s.trim_end().to_string())
}

/// A choice file's values and the one in force: `always [madvise] never`
/// (transhuge.rst) or `none voluntary (full) lazy` (sched/preempt). `None`
/// when no value is marked.
pub(crate) fn parse_choices(text: &str) -> Option<(String, Vec<String>)> {
    let mut current = None;
    let mut offered = Vec::new();
    for w in text.split_whitespace() {
        let bare = w
            .strip_prefix('[')
            .and_then(|w| w.strip_suffix(']'))
            .or_else(|| w.strip_prefix('(').and_then(|w| w.strip_suffix(')')));
        match bare {
            Some(b) if !b.is_empty() => {
                current = Some(b.to_string());
                offered.push(b.to_string());
            }
            _ => offered.push(w.to_string()),
        }
    }
    Some((current?, offered))
}

/// The value in force as it would be written back: the marked choice of a
/// choice file, or the whole text (a sysctl's `4096\t16384` included).
pub(crate) fn current_value(path: &Path) -> std::io::Result<String> {
    let t = read_text(path)?;
    Ok(match parse_choices(&t) {
        Some((c, _)) => c,
        None => t.trim().to_string(),
    })
}

/// Write one value with one write(2), as sysfs(5) and proc_sys(5) expect,
/// to a regular file only: a link in the last component is not followed
/// (`O_NOFOLLOW`), and a FIFO or device is refused before it is opened.
pub(crate) fn write_text(path: &Path, value: &str) -> std::io::Result<()> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let not_file = || std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file");
    let md = std::fs::symlink_metadata(path)?;
    if !md.is_file() {
        return Err(not_file());
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let fm = f.metadata()?;
    if !fm.is_file() || fm.ino() != md.ino() || fm.dev() != md.dev() {
        return Err(not_file());
    }
    f.write_all(value.as_bytes())
}

/// Why this process cannot write a kernel file ([`writable`]); each
/// message names the file, on one line.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum NotWritable {
    #[error("{}: {source}", .file.display())]
    Unreadable { file: PathBuf, source: Arc<std::io::Error> },
    #[error("{} is not a regular file", .0.display())]
    NotAFile(PathBuf),
    #[error("{} is read-only (mode {mode:o})", .file.display())]
    ReadOnly { file: PathBuf, mode: u32 },
    #[error("{} exists but cannot be opened for writing, even by root: {source}", .file.display())]
    RootRefused { file: PathBuf, source: Arc<std::io::Error> },
    #[error("{} cannot be opened for writing: {source} (kdelta runs as uid {uid}; changing kernel settings needs root)", .file.display())]
    NeedsRoot { file: PathBuf, source: Arc<std::io::Error>, uid: u32 },
}

/// Can this process write `path`? The file must give someone write
/// permission (a sysfs attribute without a store method is `0444`, and root's
/// DAC override would open a fake one) and open(2) with `O_WRONLY` must
/// succeed; nothing is written. `Err` says why, with the file's name.
pub(crate) fn writable(path: &Path) -> Result<(), NotWritable> {
    let file = || path.to_path_buf();
    let md = std::fs::metadata(path).map_err(|e| NotWritable::Unreadable { file: file(), source: e.into() })?;
    if !md.is_file() {
        return Err(NotWritable::NotAFile(file()));
    }
    if md.permissions().mode() & 0o222 == 0 {
        return Err(NotWritable::ReadOnly { file: file(), mode: md.permissions().mode() & 0o777 });
    }
    match std::fs::OpenOptions::new().write(true).open(path) {
        Ok(_) => Ok(()),
        Err(e) if is_root() => Err(NotWritable::RootRefused { file: file(), source: e.into() }),
        Err(e) => Err(NotWritable::NeedsRoot { file: file(), source: e.into(), uid: euid() }),
    }
}

/// geteuid(2).
pub(crate) fn euid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

pub(crate) fn is_root() -> bool {
    euid() == 0
}

/// The cpufreq policy directories (`policy0`, ...), in order; empty when no
/// frequency driver is loaded.
pub(crate) fn cpufreq_policies(root: &Path) -> Vec<PathBuf> {
    let mut v: Vec<(u32, PathBuf)> = std::fs::read_dir(root.join(CPUFREQ))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let n = e.file_name().to_string_lossy().strip_prefix("policy")?.parse().ok()?;
                    Some((n, e.path()))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v.into_iter().map(|(_, p)| p).collect()
}

/// Is debugfs mounted at `sys/kernel/debug`? On the live machine, as
/// `/proc/self/mountinfo` (proc(5)) says; in a fake tree, when its `sched`
/// directory exists.
pub(crate) fn debugfs_mounted(root: &Path) -> bool {
    if root != Path::new("/") {
        return root.join(DEBUGFS).join("sched").is_dir();
    }
    // The calling thread's view: a probe thread has a namespace of its own.
    std::fs::read_to_string("/proc/thread-self/mountinfo")
        .map(|t| mountinfo_has(&t, "/sys/kernel/debug", "debugfs"))
        .unwrap_or(false)
}

/// Does a mountinfo text list `fstype` mounted at `point`?
pub(crate) fn mountinfo_has(text: &str, point: &str, fstype: &str) -> bool {
    text.lines().any(|l| {
        let mut f = l.split(' ');
        let at = f.nth(4);
        let after = l.split(" - ").nth(1).and_then(|r| r.split(' ').next());
        at == Some(point) && after == Some(fstype)
    })
}

/// mount(2) debugfs at `/sys/kernel/debug` (live machine only).
pub(crate) fn mount_debugfs() -> std::io::Result<()> {
    let c = |s: &str| std::ffi::CString::new(s).expect("no NUL");
    let (src, at, fs) = (c("debugfs"), c("/sys/kernel/debug"), c("debugfs"));
    // SAFETY: every pointer is a live NUL-terminated string; no data argument.
    let r = unsafe {
        libc::mount(
            src.as_ptr(),
            at.as_ptr(),
            fs.as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Give the calling thread a mount namespace of its own (unshare(2)
/// `CLONE_NEWNS`), make every mount in it private (mount(2) `MS_REC |
/// MS_PRIVATE`, so nothing propagates back) and mount debugfs there: the
/// machine's mount table never changes, and the namespace goes with the
/// thread. For looking at debugfs without mounting it for everyone.
pub(crate) fn private_debugfs() -> std::io::Result<()> {
    // SAFETY: plain system calls on this thread; the strings are live.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let slash = std::ffi::CString::new("/").expect("no NUL");
        if libc::mount(
            std::ptr::null(),
            slash.as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    mount_debugfs()
}

/// umount2(2) `/sys/kernel/debug`.
pub(crate) fn umount_debugfs() -> std::io::Result<()> {
    let at = std::ffi::CString::new("/sys/kernel/debug").expect("no NUL");
    // SAFETY: a live NUL-terminated string.
    if unsafe { libc::umount2(at.as_ptr(), 0) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// After writing `value` to `path`, wait for what the kernel does in the
/// background: SMT control takes CPUs off- or online one by one (wait until
/// `smt/active` agrees, at most 10 s), a new governor takes over at its next
/// sampling period (100 ms). Other files take effect when written.
pub(crate) fn settle(path: &Path, value: &str) {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let parent = path.parent().unwrap_or(Path::new("/"));
    if name == "control" && parent.ends_with("smt") {
        let want = if value == "off" { "0" } else { "1" };
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::time::Instant::now() < until {
            match read_text(&parent.join("active")) {
                Ok(a) if a == want => break,
                Err(_) => break,
                _ => std::thread::sleep(std::time::Duration::from_millis(20)),
            }
        }
    } else if name == "scaling_governor" {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices() {
        assert_eq!(
            parse_choices("always [madvise] never\n"),
            Some(("madvise".into(), vec!["always".into(), "madvise".into(), "never".into()]))
        );
        assert_eq!(
            parse_choices("none voluntary (full) lazy"),
            Some(("full".into(), vec!["none".into(), "voluntary".into(), "full".into(), "lazy".into()]))
        );
        assert_eq!(parse_choices("performance"), None);
        assert_eq!(parse_choices("[]"), None);
    }

    #[test]
    fn mountinfo() {
        let t = "36 25 0:7 / /sys/kernel/debug rw,nosuid,nodev,noexec,relatime shared:15 - debugfs debugfs rw\n\
                 22 1 0:21 / /sys rw shared:2 - sysfs sysfs rw\n";
        assert!(mountinfo_has(t, "/sys/kernel/debug", "debugfs"));
        assert!(!mountinfo_has(t, "/sys/kernel/tracing", "tracefs"));
        assert!(!mountinfo_has("", "/sys/kernel/debug", "debugfs"));
    }

    #[test]
    fn fake_files() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("enabled");
        std::fs::write(&f, "always [madvise] never\n").unwrap();
        assert_eq!(current_value(&f).unwrap(), "madvise");
        assert!(writable(&f).is_ok());
        write_text(&f, "never").unwrap();
        assert_eq!(read_text(&f).unwrap(), "never");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o444)).unwrap();
        assert!(writable(&f).unwrap_err().to_string().contains("read-only"), "{:?}", writable(&f));
        assert!(writable(&d.path().join("absent")).is_err());
        let p = d.path().join(CPUFREQ);
        for n in [10, 2, 0] {
            std::fs::create_dir_all(p.join(format!("policy{n}"))).unwrap();
        }
        let names: Vec<String> =
            cpufreq_policies(d.path()).iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["policy0", "policy2", "policy10"]);
    }
}
