//! Control groups, v2 and v1 alike (cgroups(7)): where each controller kdelta
//! uses is mounted, the cgroup this process is in, the files a limit is
//! written to, making and removing cgroups, moving tasks, and a cgroup's CPU
//! throttling (`cpu.stat`).
//!
//! Everything is read below a root (`/` on the live machine), so tests use
//! fake trees. A controller is found at `ROOT/sys/fs/cgroup`: in the unified
//! hierarchy (`cgroup.controllers` there, or in `unified/` of a hybrid
//! layout) when it lists the controller, else in a v1 hierarchy of its own
//! name (`cpu/`, `cpuset/`, `memory/`, links such as `cpu -> cpu,cpuacct`
//! followed). The cgroup this process is in comes from `ROOT/proc/self/cgroup`
//! (`/` when that file is missing).

use std::path::{Path, PathBuf};

/// The controllers kdelta's limits use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Controller {
    Cpu,
    Cpuset,
    Memory,
}

impl Controller {
    pub(crate) const ALL: [Controller; 3] = [Controller::Cpu, Controller::Cpuset, Controller::Memory];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Controller::Cpu => "cpu",
            Controller::Cpuset => "cpuset",
            Controller::Memory => "memory",
        }
    }

    /// A file every v1 hierarchy of this controller has.
    fn v1_marker(self) -> &'static str {
        match self {
            Controller::Cpu => "cpu.shares",
            Controller::Cpuset => "cpuset.cpus",
            Controller::Memory => "memory.limit_in_bytes",
        }
    }
}

/// One mounted hierarchy holding a controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hierarchy {
    /// 1 or 2.
    pub(crate) version: u8,
    /// Where it is mounted (below the root).
    pub(crate) mount: PathBuf,
    /// The cgroup this process is in, as a directory below `mount`.
    pub(crate) own: PathBuf,
}

/// Where each controller kdelta uses is, below one root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) cpu: Option<Hierarchy>,
    pub(crate) cpuset: Option<Hierarchy>,
    pub(crate) memory: Option<Hierarchy>,
}

/// `ROOT/sys/fs/cgroup`.
pub(crate) fn cgroup_dir(root: &Path) -> PathBuf {
    root.join("sys/fs/cgroup")
}

/// The words of a file such as `cgroup.controllers`; empty when unreadable.
fn words(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p).map(|t| t.split_whitespace().map(str::to_string).collect()).unwrap_or_default()
}

/// The cgroup of this process in the v2 hierarchy (`0::PATH`) or in the v1
/// hierarchy holding `ctrl`, from a `/proc/PID/cgroup` text (cgroups(7)).
pub(crate) fn own_path(text: &str, ctrl: Option<&str>) -> String {
    for l in text.lines() {
        let mut it = l.splitn(3, ':');
        let (_, ctrls, path) = match (it.next(), it.next(), it.next()) {
            (Some(a), Some(b), Some(c)) => (a, b, c),
            _ => continue,
        };
        let hit = match ctrl {
            None => ctrls.is_empty(),
            Some(c) => ctrls.split(',').any(|x| x == c),
        };
        if hit {
            return path.to_string();
        }
    }
    "/".to_string()
}

/// Below `mount`, the directory of cgroup `path` (`/a/b`), or the mount when
/// the path tries to leave it.
fn below(mount: &Path, path: &str) -> PathBuf {
    let rel = path.trim_start_matches('/');
    if rel.split('/').any(|c| c == ".." || c == ".") {
        return mount.to_path_buf();
    }
    if rel.is_empty() {
        mount.to_path_buf()
    } else {
        mount.join(rel)
    }
}

impl Layout {
    /// The controllers mounted below `root` (see the module's notes).
    pub(crate) fn read(root: &Path) -> Layout {
        let dir = cgroup_dir(root);
        let proc = std::fs::read_to_string(root.join("proc/self/cgroup")).unwrap_or_default();
        let v2: Option<(PathBuf, Vec<String>)> =
            [dir.clone(), dir.join("unified")].into_iter().find(|d| d.join("cgroup.controllers").is_file()).map(|d| {
                let w = words(&d.join("cgroup.controllers"));
                (d, w)
            });
        let find = |c: Controller| -> Option<Hierarchy> {
            if let Some((m, ctrls)) = &v2 {
                if ctrls.iter().any(|x| x == c.name()) {
                    return Some(Hierarchy { version: 2, mount: m.clone(), own: below(m, &own_path(&proc, None)) });
                }
            }
            let m = dir.join(c.name());
            m.join(c.v1_marker()).is_file().then(|| Hierarchy {
                version: 1,
                own: below(&m, &own_path(&proc, Some(c.name()))),
                mount: m,
            })
        };
        Layout { cpu: find(Controller::Cpu), cpuset: find(Controller::Cpuset), memory: find(Controller::Memory) }
    }

    pub(crate) fn get(&self, c: Controller) -> Option<&Hierarchy> {
        match c {
            Controller::Cpu => self.cpu.as_ref(),
            Controller::Cpuset => self.cpuset.as_ref(),
            Controller::Memory => self.memory.as_ref(),
        }
    }

    /// One line: `cpu v1 at /sys/fs/cgroup/cpu, cpuset v1 ..., memory not mounted`.
    pub(crate) fn describe(&self) -> String {
        Controller::ALL
            .iter()
            .map(|&c| match self.get(c) {
                Some(h) => format!("{} v{} at {}", c.name(), h.version, h.mount.display()),
                None => format!("{} not mounted", c.name()),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Why cgroup v2 cannot hand a controller down to kdelta's workers.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum HandDown {
    #[error("the {controller} controller does not reach kdelta's cgroup {} (not in its cgroup.controllers)", .own.display())]
    NotReaching { controller: &'static str, own: PathBuf },
    #[error(
        "kdelta's cgroup {} holds {procs} process{}, and cgroup v2 hands the {controller} controller down only from a cgroup that holds none; run kdelta from the root cgroup (echo $$ > {}/cgroup.procs) or from a cgroup with {controller} in its cgroup.subtree_control",
        .own.display(), plural_es(.procs), .mount.display()
    )]
    HoldsProcesses { controller: &'static str, own: PathBuf, procs: usize, mount: PathBuf },
}

fn plural_es(n: &usize) -> &'static str {
    if *n == 1 {
        ""
    } else {
        "es"
    }
}

impl Hierarchy {
    /// On cgroup v2, can controller `c` be handed down to cgroups made below
    /// this process's own (`own/kdelta-PID/wN`)? `Err`: why not. The root
    /// cgroup always can; another can only when `c` reaches it (its
    /// `cgroup.controllers`) and is enabled in its `cgroup.subtree_control`
    /// or can be, which the kernel refuses (EBUSY) while it holds processes:
    /// the no-internal-processes rule of cgroups(7), and it holds kdelta.
    pub(crate) fn hands_down(&self, c: Controller) -> Result<(), HandDown> {
        if self.version != 2 || self.own == self.mount {
            return Ok(());
        }
        let has = |file: &str| words(&self.own.join(file)).iter().any(|w| w == c.name());
        if !has("cgroup.controllers") {
            return Err(HandDown::NotReaching { controller: c.name(), own: self.own.clone() });
        }
        if has("cgroup.subtree_control") {
            return Ok(());
        }
        let procs = members(&self.own, false).len();
        if procs > 0 {
            return Err(HandDown::HoldsProcesses {
                controller: c.name(),
                own: self.own.clone(),
                procs,
                mount: self.mount.clone(),
            });
        }
        Ok(())
    }
}

/// Why a cgroup file could not be read or written, or a cgroup made or
/// removed: one line, naming the file or cgroup.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CgroupError {
    #[error("writing {value:?} to {}: {source}", .file.display())]
    Write { value: String, file: PathBuf, source: std::io::Error },
    #[error("reading {}: {source}", .file.display())]
    Read { file: PathBuf, source: std::io::Error },
    #[error("making cgroup {}: {source}", .dir.display())]
    Make { dir: PathBuf, source: std::io::Error },
    #[error("removing {}: {source}", .dir.display())]
    RemoveFake { dir: PathBuf, source: std::io::Error },
    #[error("removing cgroup {}: {source}", .dir.display())]
    Remove { dir: PathBuf, source: std::io::Error },
    #[error("removing cgroup {}: {} ({left} tasks would not move out)", .dir.display(), .last.as_ref().map(|e| e.to_string()).unwrap_or_default())]
    Busy { dir: PathBuf, last: Option<std::io::Error>, left: usize },
}

/// The file that lists a cgroup's processes (cgroups(7)).
pub(crate) fn procs(dir: &Path) -> PathBuf {
    dir.join("cgroup.procs")
}

/// Write one value to a cgroup file (one write(2), as cgroupfs wants).
pub(crate) fn write(dir: &Path, file: &str, value: &str) -> Result<(), CgroupError> {
    let p = dir.join(file);
    super::knobs::write_text(&p, value).map_err(|source| CgroupError::Write {
        value: value.to_string(),
        file: p,
        source,
    })
}

/// A cgroup file's text, trimmed.
pub(crate) fn read(dir: &Path, file: &str) -> Result<String, CgroupError> {
    let p = dir.join(file);
    std::fs::read_to_string(&p).map(|t| t.trim().to_string()).map_err(|source| CgroupError::Read { file: p, source })
}

/// mkdir(2) a cgroup (its parent must exist); an existing one is kept. In a
/// fake tree (not a cgroup file system) the new directory gets what the
/// kernel would give it: its parent's files, empty but for the statistics
/// (`*.stat`, copied: a fake tree's counters start where its parent's are).
pub(crate) fn make(dir: &Path) -> Result<(), CgroupError> {
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
        Err(source) => return Err(CgroupError::Make { dir: dir.to_path_buf(), source }),
    }
    if let Some(parent) = dir.parent().filter(|p| !is_cgroupfs(p)) {
        for e in std::fs::read_dir(parent).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_file()) {
                let stat = e.file_name().to_string_lossy().ends_with(".stat");
                let text = if stat { std::fs::read_to_string(e.path()).unwrap_or_default() } else { String::new() };
                let _ = std::fs::write(dir.join(e.file_name()), text);
            }
        }
    }
    Ok(())
}

/// The process ids in a cgroup (`cgroup.procs`; `tasks`, every thread, for
/// a v1 hierarchy when `threads`).
pub(crate) fn members(dir: &Path, threads: bool) -> Vec<i32> {
    let f = if threads { dir.join("tasks") } else { procs(dir) };
    std::fs::read_to_string(f)
        .map(|t| t.split_whitespace().filter_map(|w| w.parse().ok()).collect())
        .unwrap_or_default()
}

/// Move every process of cgroup `dir` into `to` (each written to `to`'s
/// `cgroup.procs`, threads to `tasks` on v1 where a process cannot move
/// whole; `tasks` is only in v1). Those that cannot move (kernel threads bound to a CPU, a task
/// that just ended) are counted, not fatal.
pub(crate) fn move_all(dir: &Path, to: &Path) -> (usize, usize) {
    let (mut moved, mut stuck) = (0, 0);
    let v1 = dir.join("tasks").is_file() && to.join("tasks").is_file();
    let (list, file) = if v1 { (members(dir, true), "tasks") } else { (members(dir, false), "cgroup.procs") };
    for id in list {
        match super::knobs::write_text(&to.join(file), &id.to_string()) {
            Ok(()) => moved += 1,
            Err(_) => stuck += 1,
        }
    }
    (moved, stuck)
}

/// Remove cgroup `dir` (rmdir(2)) after moving what is left in it into its
/// parent; a cgroup already gone is fine. Tasks forked while others move
/// (a busy `kdelta-PID-system` holds the whole machine's) are moved on the
/// next pass: up to [`REMOVE_TRIES`] passes, 10 ms apart. A fake tree's
/// regular files are removed first (cgroupfs has none to remove).
pub(crate) fn remove(dir: &Path) -> Result<(), CgroupError> {
    let mut last = None;
    for _ in 0..REMOVE_TRIES {
        if !dir.is_dir() {
            return Ok(());
        }
        if let Some(parent) = dir.parent() {
            move_all(dir, parent);
        }
        let e = match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) => e,
        };
        // Not a cgroupfs directory (a fake tree in tests): its files are real.
        if e.raw_os_error() == Some(libc::ENOTEMPTY) && !is_cgroupfs(dir) {
            return std::fs::remove_dir_all(dir)
                .map_err(|source| CgroupError::RemoveFake { dir: dir.to_path_buf(), source });
        }
        if e.raw_os_error() != Some(libc::EBUSY) {
            return Err(CgroupError::Remove { dir: dir.to_path_buf(), source: e });
        }
        last = Some(e);
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let left = members(dir, dir.join("tasks").is_file()).len();
    Err(CgroupError::Busy { dir: dir.to_path_buf(), last, left })
}

/// Passes [`remove`] makes before it gives up.
const REMOVE_TRIES: usize = 100;

/// Is `dir` on a cgroup file system (statfs(2))?
fn is_cgroupfs(dir: &Path) -> bool {
    const CGROUP_SUPER_MAGIC: i64 = 0x27e0eb;
    const CGROUP2_SUPER_MAGIC: i64 = 0x63677270;
    match nix::sys::statfs::statfs(dir) {
        Ok(s) => {
            // f_type's width differs between architectures.
            #[allow(clippy::unnecessary_cast)]
            let t = s.filesystem_type().0 as i64;
            t == CGROUP_SUPER_MAGIC || t == CGROUP2_SUPER_MAGIC
        }
        Err(_) => false,
    }
}

/// A cgroup's CPU throttling so far (`cpu.stat`): periods throttled and
/// seconds throttled (v2 `throttled_usec`, v1 `throttled_time` in ns).
pub(crate) fn throttling(cpu_stat: &Path) -> Option<(u64, f64)> {
    let t = std::fs::read_to_string(cpu_stat).ok()?;
    parse_throttling(&t)
}

/// [`throttling`] of a `cpu.stat` text.
pub(crate) fn parse_throttling(t: &str) -> Option<(u64, f64)> {
    let mut n = None;
    let mut s = None;
    for l in t.lines() {
        let mut it = l.split_whitespace();
        let (Some(k), Some(v)) = (it.next(), it.next()) else { continue };
        let Ok(v) = v.parse::<u64>() else { continue };
        match k {
            "nr_throttled" => n = Some(v),
            "throttled_usec" => s = Some(v as f64 * 1e-6),
            "throttled_time" => s = Some(v as f64 * 1e-9),
            _ => {}
        }
    }
    Some((n?, s?))
}

/// How many tasks the kernel's OOM killer has killed in cgroup `dir` for
/// reaching its memory limit: `oom_kill` of v2's `memory.events` or v1's
/// `memory.oom_control` (cgroups(7)); `None` where neither says.
pub(crate) fn oom_kills(dir: &Path) -> Option<u64> {
    ["memory.events", "memory.oom_control"]
        .iter()
        .find_map(|f| std::fs::read_to_string(dir.join(f)).ok())
        .and_then(|t| parse_oom_kills(&t))
}

/// [`oom_kills`] of this process's own memory cgroup (v2, else the v1
/// hierarchy holding `memory`, from `/proc/self/cgroup`): compared before
/// and after a child's run, whether the OOM killer struck meanwhile.
pub(crate) fn own_oom_kills() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let root = cgroup_dir(Path::new("/"));
    [below(&root, &own_path(&text, None)), below(&root.join("memory"), &own_path(&text, Some("memory")))]
        .iter()
        .find_map(|d| oom_kills(d))
}

/// [`oom_kills`] of a `memory.events` or `memory.oom_control` text.
pub(crate) fn parse_oom_kills(t: &str) -> Option<u64> {
    t.lines().find_map(|l| l.strip_prefix("oom_kill ")?.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oom_kills_are_read_from_v2_and_v1_files() {
        let v2 = "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n";
        assert_eq!(parse_oom_kills(v2), Some(1));
        assert_eq!(parse_oom_kills("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"), Some(3));
        assert_eq!(parse_oom_kills("low 0\n"), None);
        let d = tempfile::tempdir().unwrap();
        assert_eq!(oom_kills(d.path()), None);
        std::fs::write(d.path().join("memory.events"), v2).unwrap();
        assert_eq!(oom_kills(d.path()), Some(1));
    }

    #[test]
    fn own_cgroups_from_proc_self_cgroup() {
        let t = "9:name=systemd:/\n4:memory:/process_api/abc\n3:cpuset:/\n1:cpu,cpuacct:/x\n0::/user.slice\n";
        assert_eq!(own_path(t, Some("memory")), "/process_api/abc");
        assert_eq!(own_path(t, Some("cpu")), "/x");
        assert_eq!(own_path(t, Some("cpuacct")), "/x");
        assert_eq!(own_path(t, None), "/user.slice");
        assert_eq!(own_path("", Some("cpu")), "/");
        assert_eq!(below(Path::new("/m"), "/../etc"), Path::new("/m"));
    }

    #[test]
    fn throttling_of_v1_and_v2() {
        assert_eq!(parse_throttling("nr_periods 10\nnr_throttled 3\nthrottled_time 2000000000\n"), Some((3, 2.0)));
        assert_eq!(
            parse_throttling("usage_usec 5\nnr_periods 9\nnr_throttled 4\nthrottled_usec 1500000\n"),
            Some((4, 1.5))
        );
        assert_eq!(parse_throttling("usage_usec 5\n"), None);
    }
}
