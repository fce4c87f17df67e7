//! Kernel settings as configuration modifiers: `preempt=`, `smt=`,
//! `governor=`, `boost=`, `thp=`, `sysctl=NAME=VALUE`, `sysfs=PATH=VALUE`.
//! Parsed here (bad input: exit 2), judged against the machine below a root
//! ([`check`]: the reason it cannot be applied, for [`Unavailable`]), turned
//! into the files to write ([`targets`]) and read back ([`read_back`]).
//! Nothing here changes the machine: the preemption model is judged, when
//! debugfs is not mounted, in a private mount namespace ([`with_debugfs`]).
//!
//! [`Unavailable`]: super::Unavailable

use crate::cpuset::CpuSet;
use crate::error::bad_input;
use crate::model::knob::{Knob, KnobSetting};
use crate::sys::knobs as k;
use crate::topology::Topology;
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(crate) const MODIFIERS: &str =
    "preempt=none|voluntary|full|lazy, smt=off|on, governor=NAME, boost=on|off, thp=always|madvise|never, sysctl=NAME=VALUE, sysfs=PATH=VALUE (PATH below /sys or /proc/sys)";

const KEYS: &[&str] = &["preempt", "smt", "governor", "boost", "thp", "sysctl", "sysfs"];

/// Why the machine below a root cannot take a kernel setting, or has no file
/// for it: one line, naming the file.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum KnobError {
    #[error("{} does not exist ({why})", .file.display())]
    Missing { file: PathBuf, why: &'static str },
    #[error("neither {} nor {} exists (no cpufreq driver with boost control)", .boost.display(), .no_turbo.display())]
    NoBoostControl { boost: PathBuf, no_turbo: PathBuf },
    #[error("{} has no policy with a scaling_governor (no CPU frequency driver)", .0.display())]
    NoGovernor(PathBuf),
    #[error("{} does not exist", .0.display())]
    Absent(PathBuf),
    #[error("{} is not below the sysfs root {}", .file.display(), .root.display())]
    NotBelowRoot { file: PathBuf, root: PathBuf },
    #[error("{} is not UTF-8", .0.display())]
    NotUtf8(PathBuf),
    /// The path itself is not allowed (`check_sysfs_path`'s message).
    #[error("{0}")]
    PathNotAllowed(String),
    #[error("{}: {source}", .file.display())]
    Io { file: PathBuf, source: Arc<std::io::Error> },
    #[error("{} leads to {}, outside /sys and /proc/sys", .file.display(), .real.display())]
    Outside { file: PathBuf, real: PathBuf },
    #[error("{} reads notsupported: this CPU has no SMT to switch", .0.display())]
    SmtNotSupported(PathBuf),
    #[error("{} reads notimplemented: this architecture cannot switch SMT", .0.display())]
    SmtNotImplemented(PathBuf),
    #[error("{} reads forceoff: SMT was forced off at boot (nosmt=force) and cannot come back", .0.display())]
    SmtForcedOff(PathBuf),
    #[error("{} reads {read:?}, not on or off", .file.display())]
    SmtUnknown { file: PathBuf, read: String },
    #[error("changing kernel settings needs root (kdelta runs as uid {0})")]
    NeedsRoot(u32),
    #[error(transparent)]
    NotWritable(#[from] k::NotWritable),
    #[error("this kernel offers {}", .0.join(", "))]
    NotOffered(Vec<String>),
    /// Why debugfs, which `preempt=` needs, is not there.
    #[error("{0}")]
    NoDebugfs(String),
    /// What `kdelta topo` shows where a setting has no one file.
    #[error("the file {0} names")]
    NamedByUser(&'static str),
    #[error("unreadable ({0})")]
    Unreadable(Arc<std::io::Error>),
    #[error("unreadable: {0:?}")]
    Unparsed(String),
    /// The setting `name` (`smt=off`) and why.
    #[error("{name}: {source}")]
    Setting { name: String, source: Box<KnobError> },
}

impl KnobError {
    fn setting(name: String) -> impl Fn(KnobError) -> KnobError {
        move |e| KnobError::Setting { name: name.clone(), source: Box::new(e) }
    }

    /// The reason without the setting's name.
    fn unnamed(self) -> KnobError {
        match self {
            KnobError::Setting { source, .. } => *source,
            e => e,
        }
    }
}

/// Is `key` (before the `=`) a kernel-setting modifier?
pub(crate) fn is_knob(key: &str) -> bool {
    KEYS.contains(&key)
}

fn one_of(key: &str, v: &str, allowed: &[&str]) -> Result<String> {
    if allowed.contains(&v) {
        Ok(v.to_string())
    } else {
        Err(bad_input(format!("unknown {key} value {v:?}: allowed: {}", allowed.join(", "))))
    }
}

/// A value a kernel file can take: one line, no NUL, at most 256 bytes.
fn plain_value(what: &str, v: &str) -> Result<String> {
    if v.is_empty() || v.len() > 256 || v.chars().any(|c| c.is_control()) {
        return Err(bad_input(format!("malformed value {v:?} for {what}: expected 1 to 256 printable characters")));
    }
    Ok(v.to_string())
}

/// Parse `key=value` (key one of [`is_knob`]'s). Syntax only: whether the
/// machine offers it is [`check`]'s question.
pub(crate) fn parse(key: &str, v: &str) -> Result<KnobSetting> {
    let (knob, value) = match key {
        "preempt" => (Knob::Preempt, one_of(key, v, &["none", "voluntary", "full", "lazy"])?),
        "smt" => (Knob::Smt, one_of(key, v, &["off", "on"])?),
        "boost" => (Knob::Boost, one_of(key, v, &["on", "off"])?),
        "thp" => (Knob::Thp, one_of(key, v, &["always", "madvise", "never"])?),
        "governor" => {
            if v.is_empty() || v.len() > 15 || !v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
                return Err(bad_input(format!("malformed governor {v:?}: expected a cpufreq governor name such as performance, powersave, schedutil")));
            }
            (Knob::Governor, v.to_string())
        }
        "sysctl" => {
            let (n, val) = v.split_once('=').ok_or_else(|| {
                bad_input(format!("malformed sysctl modifier {v:?}: expected sysctl=NAME=VALUE, e.g. sysctl=kernel.sched_autogroup_enabled=0"))
            })?;
            let ok_part = |p: &str| {
                !p.is_empty()
                    && p != "."
                    && p != ".."
                    && p.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.:".contains(&b))
            };
            let parts: Vec<&str> = n.split(['.', '/']).collect();
            if n.len() > 200 || !parts.iter().all(|p| ok_part(p)) {
                return Err(bad_input(format!(
                    "malformed sysctl name {n:?}: expected a sysctl(8) name such as kernel.sched_autogroup_enabled or vm/swappiness"
                )));
            }
            (Knob::Sysctl(parts.join(".")), plain_value(&format!("sysctl {n}"), val)?)
        }
        "sysfs" => {
            let (p, val) = v.split_once('=').ok_or_else(|| {
                bad_input(format!(
                    "malformed sysfs modifier {v:?}: expected sysfs=PATH=VALUE with PATH below /sys or /proc/sys"
                ))
            })?;
            check_sysfs_path(p)?;
            (Knob::Sysfs(p.to_string()), plain_value(&format!("sysfs {p}"), val)?)
        }
        _ => return Err(bad_input(format!("unknown modifier {key:?}: allowed: {MODIFIERS}"))),
    };
    Ok(KnobSetting { knob, value })
}

/// An absolute path below `/sys` or `/proc/sys` with no `.`, `..` or empty
/// component (links are judged against the machine in [`check`]).
fn check_sysfs_path(p: &str) -> Result<()> {
    let bad = || {
        bad_input(format!(
            "sysfs path {p:?} not allowed: expected an absolute path below /sys or /proc/sys without . or .. (e.g. /sys/kernel/mm/transparent_hugepage/defrag)"
        ))
    };
    let under = p.strip_prefix("/sys/").or_else(|| p.strip_prefix("/proc/sys/")).ok_or_else(bad)?;
    if p.len() > 400
        || under.is_empty()
        || under.split('/').any(|c| c.is_empty() || c == "." || c == "..")
        || p.chars().any(|c| c.is_control())
    {
        return Err(bad());
    }
    Ok(())
}

/// The file of a sysctl name below `root`: dots are directory separators.
fn sysctl_path(root: &Path, name: &str) -> PathBuf {
    root.join(k::PROC_SYS).join(name.replace('.', "/"))
}

/// `root` joined with an absolute path.
fn under_root(root: &Path, abs: &str) -> PathBuf {
    root.join(abs.trim_start_matches('/'))
}

/// Run `f` where debugfs is mounted: right here when it is (or in a fake
/// tree), else, as root, on a thread of its own whose private mount
/// namespace has debugfs mounted ([`k::private_debugfs`]), so the machine's
/// mounts never change. `f` is told why debugfs is missing, if it is.
fn with_debugfs<T: Send>(root: &Path, f: impl FnOnce(Option<String>) -> T + Send) -> T {
    if k::debugfs_mounted(root) {
        return f(None);
    }
    if root != Path::new("/") {
        return f(Some(format!("debugfs is not mounted at {}", root.join(k::DEBUGFS).display())));
    }
    if !k::is_root() {
        return f(Some(format!(
            "debugfs is not mounted at /sys/kernel/debug and mounting it needs root (kdelta runs as uid {})",
            k::euid()
        )));
    }
    std::thread::scope(|sc| {
        sc.spawn(|| match k::private_debugfs() {
            Ok(()) => f(None),
            Err(e) => f(Some(format!("debugfs is not mounted at /sys/kernel/debug and mounting it failed: {e}"))),
        })
        .join()
        .expect("the debugfs probe thread does not panic")
    })
}

/// The files a knob writes, for reading and checking (several for the
/// governor, one per cpufreq policy). `Err`: why the machine has none.
pub(crate) fn files(knob: &Knob, root: &Path) -> std::result::Result<Vec<PathBuf>, KnobError> {
    let one = |rel: &str, why: &'static str| {
        let p = root.join(rel);
        if p.exists() {
            Ok(vec![p])
        } else {
            Err(KnobError::Missing { file: p, why })
        }
    };
    match knob {
        Knob::Preempt => one(k::PREEMPT, "the kernel is not PREEMPT_DYNAMIC, or debugfs lacks sched/"),
        Knob::Smt => one(k::SMT_CONTROL, "the kernel has no SMT control"),
        Knob::Thp => one(k::THP, "the kernel has no transparent huge pages"),
        Knob::Boost => {
            if root.join(k::BOOST).exists() {
                Ok(vec![root.join(k::BOOST)])
            } else if root.join(k::NO_TURBO).exists() {
                Ok(vec![root.join(k::NO_TURBO)])
            } else {
                Err(KnobError::NoBoostControl { boost: root.join(k::BOOST), no_turbo: root.join(k::NO_TURBO) })
            }
        }
        Knob::Governor => {
            let v: Vec<PathBuf> = k::cpufreq_policies(root)
                .into_iter()
                .map(|p| p.join("scaling_governor"))
                .filter(|p| p.exists())
                .collect();
            if v.is_empty() {
                Err(KnobError::NoGovernor(root.join(k::CPUFREQ)))
            } else {
                Ok(v)
            }
        }
        Knob::Sysctl(n) => one(
            &sysctl_path(root, n).strip_prefix(root).unwrap_or(Path::new("")).to_string_lossy(),
            "no such sysctl on this kernel",
        ),
        Knob::Sysfs(p) => {
            let f = under_root(root, p);
            confined(root, &f)?;
            Ok(vec![f])
        }
    }
}

/// The one check of every kernel file kdelta writes as root, where
/// `sysfs=` is planned, where a setting is switched and where `kdelta
/// restore` writes back: `file` (below `root`) must pass [`check_sysfs_path`]
/// once `root` is taken off (below `/sys` or `/proc/sys`, no `.`, `..` or
/// empty component), and, its links resolved, still lie below `root`'s
/// `sys` or `proc/sys`. Returns the resolved file, to be written with
/// `O_NOFOLLOW`; `Err` says why not, on one line.
pub(crate) fn confined(root: &Path, file: &Path) -> std::result::Result<PathBuf, KnobError> {
    let rel = file
        .strip_prefix(root)
        .map_err(|_| KnobError::NotBelowRoot { file: file.to_path_buf(), root: root.to_path_buf() })?;
    let rel = rel.to_str().ok_or_else(|| KnobError::NotUtf8(file.to_path_buf()))?;
    check_sysfs_path(&format!("/{rel}")).map_err(|e| KnobError::PathNotAllowed(e.to_string()))?;
    let real = file.canonicalize().map_err(|e| KnobError::Io { file: file.to_path_buf(), source: e.into() })?;
    let allowed = [root.join("sys"), root.join(k::PROC_SYS)];
    let allowed: Vec<PathBuf> = allowed.iter().filter_map(|a| a.canonicalize().ok()).collect();
    if !allowed.iter().any(|a| real.starts_with(a)) {
        return Err(KnobError::Outside { file: file.to_path_buf(), real });
    }
    Ok(real)
}

/// Two settings of one configuration that write the same file (links
/// resolved: `sysctl=vm.swappiness` and `sysfs=/proc/sys/vm/swappiness`,
/// `thp=` and `sysfs=` of its file) conflict, as two `thp=` do: bad input
/// naming both.
pub(crate) fn check_distinct(knobs: &[KnobSetting], root: &Path, spec: &str) -> Result<()> {
    let mut seen: Vec<(PathBuf, String)> = Vec::new();
    for s in knobs {
        for f in files(&s.knob, root).unwrap_or_default() {
            let real = f.canonicalize().unwrap_or(f);
            if let Some((_, prev)) = seen.iter().find(|(p, _)| *p == real) {
                return Err(bad_input(format!(
                    "conflicting modifiers {prev} and {} in configuration {spec:?}: both write {}: give each kernel file once",
                    s.name(),
                    real.display()
                )));
            }
            seen.push((real, s.name()));
        }
    }
    Ok(())
}

/// The file's value in the knob's own spelling: boost `on`/`off` from `1`/`0`
/// (or `no_turbo`'s inverse).
fn spelled(knob: &Knob, path: &Path, raw: &str) -> String {
    match knob {
        Knob::Boost if path.ends_with("no_turbo") => if raw == "1" { "off" } else { "on" }.to_string(),
        Knob::Boost => if raw == "0" { "off" } else { "on" }.to_string(),
        _ => raw.split_whitespace().collect::<Vec<_>>().join(" "),
    }
}

/// The files to write for a setting and the value each takes.
pub(crate) fn targets(s: &KnobSetting, root: &Path) -> std::result::Result<Vec<(PathBuf, String)>, KnobError> {
    let fs = files(&s.knob, root)?;
    Ok(fs
        .into_iter()
        .map(|p| {
            let v = match (&s.knob, s.value.as_str()) {
                (Knob::Boost, on) if p.ends_with("no_turbo") => if on == "on" { "0" } else { "1" }.to_string(),
                (Knob::Boost, on) => if on == "on" { "1" } else { "0" }.to_string(),
                _ => s.value.clone(),
            };
            (p, v)
        })
        .collect())
}

/// The value in force, in the knob's spelling (`mixed: a, b` when the
/// governor differs between policies); `None` when it cannot be read.
pub(crate) fn read_back(knob: &Knob, root: &Path) -> Option<String> {
    let mut seen: Vec<String> = Vec::new();
    for p in files(knob, root).ok()? {
        let v = spelled(knob, &p, &k::current_value(&p).ok()?);
        if !seen.contains(&v) {
            seen.push(v);
        }
    }
    match seen.len() {
        0 => None,
        1 => seen.pop(),
        _ => Some(format!("mixed: {}", seen.join(", "))),
    }
}

/// The values the kernel offers for a knob, when it says (`None`: any).
fn offered(knob: &Knob, files: &[PathBuf]) -> Option<Vec<String>> {
    match knob {
        Knob::Preempt | Knob::Thp => k::read_text(&files[0]).ok().and_then(|t| k::parse_choices(&t)).map(|(_, o)| o),
        Knob::Smt => Some(vec!["on".into(), "off".into()]),
        Knob::Boost => Some(vec!["on".into(), "off".into()]),
        Knob::Governor => {
            // Every policy must offer it: the intersection.
            let mut all: Option<Vec<String>> = None;
            for f in files {
                let t = k::read_text(&f.with_file_name("scaling_available_governors")).ok()?;
                let here: Vec<String> = t.split_whitespace().map(String::from).collect();
                all = Some(match all {
                    None => here,
                    Some(a) => a.into_iter().filter(|g| here.contains(g)).collect(),
                });
            }
            all
        }
        _ => None,
    }
}

/// Why this machine cannot apply `s` (`Ok`: it can). Needs root on the live
/// machine; in a fake tree only the files' permissions count.
/// The reason is a `String` because it becomes the stored
/// `Unavailable::reason` (`harness::plan`); [`judge`] is the typed check.
pub(crate) fn check(s: &KnobSetting, root: &Path) -> std::result::Result<(), String> {
    judge(s, root).map_err(|e| e.to_string())
}

/// [`check`], typed: the error names the setting ([`KnobError::Setting`]).
pub(crate) fn judge(s: &KnobSetting, root: &Path) -> std::result::Result<(), KnobError> {
    let named = KnobError::setting(s.name());
    if s.knob == Knob::Preempt {
        return with_debugfs(root, |missing| match missing {
            Some(why) => Err(KnobError::NoDebugfs(why)),
            None => check_files(s, root),
        })
        .map_err(named);
    }
    check_files(s, root).map_err(named)
}

fn check_files(s: &KnobSetting, root: &Path) -> std::result::Result<(), KnobError> {
    let fs = files(&s.knob, root)?;
    if s.knob == Knob::Smt {
        let f = fs[0].clone();
        let ctl = k::read_text(&f).map_err(|e| KnobError::Io { file: f.clone(), source: e.into() })?;
        match ctl.as_str() {
            "on" | "off" => {}
            "notsupported" => return Err(KnobError::SmtNotSupported(f)),
            "notimplemented" => return Err(KnobError::SmtNotImplemented(f)),
            "forceoff" => return Err(KnobError::SmtForcedOff(f)),
            other => return Err(KnobError::SmtUnknown { file: f, read: other.to_string() }),
        }
    }
    if root == Path::new("/") && !k::is_root() {
        return Err(KnobError::NeedsRoot(k::euid()));
    }
    for f in &fs {
        k::writable(f)?;
    }
    if let Some(o) = offered(&s.knob, &fs) {
        if !o.contains(&s.value) {
            return Err(KnobError::NotOffered(o));
        }
    }
    Ok(())
}

/// A configuration with `smt=off` may use only CPUs that stay online: the
/// first sibling of each core. Bad input naming the others.
pub(crate) fn check_smt_off(spec: &str, cpus: &CpuSet, topo: &Topology) -> Result<()> {
    let first: CpuSet = CpuSet::from_iter(topo.cores.iter().filter_map(|c| c.cpus.first()));
    let gone = cpus.difference(&first);
    if gone.is_empty() {
        Ok(())
    } else {
        Err(bad_input(format!(
            "configuration {spec:?} uses CPUs {gone}, which smt=off takes offline: use noht, up or noht1 with smt=off"
        )))
    }
}

/// One knob as `kdelta topo` shows it.
pub(crate) struct State {
    pub(crate) key: &'static str,
    pub(crate) file: String,
    /// The value in force, or why it cannot be read.
    pub(crate) current: std::result::Result<String, KnobError>,
    pub(crate) offered: Option<Vec<String>>,
    /// Whether kdelta could change it here, or why not.
    pub(crate) change: std::result::Result<(), KnobError>,
}

/// Every knob's state below `root`. `sysctl=` and `sysfs=` are judged on
/// `/proc/sys` and `/sys` as a whole: their files are named by the user.
pub(crate) fn states(root: &Path) -> Vec<State> {
    let mut out = vec![with_debugfs(root, |missing| state("preempt", Knob::Preempt, root, missing))];
    for (key, knob) in [("smt", Knob::Smt), ("governor", Knob::Governor), ("boost", Knob::Boost), ("thp", Knob::Thp)] {
        out.push(state(key, knob, root, None));
    }
    for (key, dir) in [("sysctl", root.join(k::PROC_SYS)), ("sysfs", root.join("sys"))] {
        let change = if !dir.is_dir() {
            Err(KnobError::Absent(dir.clone()))
        } else if root == Path::new("/") && !k::is_root() {
            Err(KnobError::NeedsRoot(k::euid()))
        } else {
            Ok(())
        };
        let current = Err(KnobError::NamedByUser(if key == "sysctl" { "NAME" } else { "PATH" }));
        out.push(State { key, file: dir.display().to_string(), current, offered: None, change });
    }
    out
}

/// One knob's state; `missing`: why debugfs is not there (for `preempt`).
fn state(key: &'static str, knob: Knob, root: &Path, missing: Option<String>) -> State {
    let fs = files(&knob, root);
    let (file, current, offered_v, change) = match (&fs, missing) {
        (_, Some(why)) => (String::new(), Err(KnobError::NoDebugfs(why.clone())), None, Err(KnobError::NoDebugfs(why))),
        (Err(why), None) => (String::new(), Err(why.clone()), None, Err(why.clone())),
        (Ok(fs), None) => {
            let shown = if fs.len() == 1 {
                fs[0].display().to_string()
            } else {
                format!("{} ({} policies)", fs[0].display(), fs.len())
            };
            let cur = read_back(&knob, root).ok_or_else(|| match k::read_text(&fs[0]) {
                Err(e) => KnobError::Unreadable(e.into()),
                Ok(t) => KnobError::Unparsed(t),
            });
            let off = offered(&knob, fs);
            // Judged with a value the kernel offers, so only the machine counts.
            let probe_value = off.as_ref().and_then(|o| o.first().cloned()).unwrap_or_else(|| "on".into());
            let chk = judge(&KnobSetting { knob: knob.clone(), value: probe_value }, root).map_err(KnobError::unnamed);
            (shown, cur, off, chk)
        }
    };
    State { key, file, current, offered: offered_v, change }
}

/// The `kernel settings` section of `kdelta topo`.
pub(crate) fn states_text(root: &Path) -> String {
    let mut s = String::from(
        "\nkernel settings (configuration modifiers; switched by the parent between rounds and restored):\n",
    );
    for st in states(root) {
        let off = |v: &str| {
            st.offered
                .as_ref()
                .filter(|o| o.iter().any(|x| x == v))
                .map(|o| format!(" (offers {})", o.join(", ")))
                .unwrap_or_default()
        };
        let cur = match &st.current {
            Ok(v) => format!("{v}{}", off(v)),
            Err(w) if st.change.as_ref().err().map(ToString::to_string) == Some(w.to_string()) => String::new(),
            Err(w) => w.to_string(),
        };
        let change = match &st.change {
            Ok(()) => "can change".to_string(),
            Err(w) if cur.is_empty() => format!("unavailable: {w}"),
            Err(w) => format!("cannot change: {w}"),
        };
        let sep = if cur.is_empty() { "" } else { "; " };
        let file = if st.file.is_empty() || st.change.is_err() { String::new() } else { format!(" [{}]", st.file) };
        s.push_str(&format!("  {:<9} {cur}{sep}{change}{file}\n", st.key));
    }
    s
}

#[cfg(test)]
#[path = "knobs_tests.rs"]
pub(crate) mod tests;
