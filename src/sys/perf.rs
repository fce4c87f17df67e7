//! Performance counters of chosen tasks, through perf_event_open(2) (the
//! `perf-event2` crate): opened once, read around every sample, outside the
//! timed loop.
//!
//! Every event is counted for each task named (a thread id: perf counts one
//! thread), with `inherit`, so threads and processes the task starts later
//! are counted too (the kernel adds a child's counts to its parent's counter
//! when the child exits; a child still running at the end of a sample is
//! counted in a later one). The software events exist on every kernel; the
//! hardware ones only where a PMU exists: an event that cannot be opened is
//! [`Unavailable`] with the kernel's reason, never a zero. A counter the
//! kernel multiplexed (ran for part of the time it was enabled) is scaled
//! by enabled/running, as `perf stat` does.

use perf_event::events::{Cache, CacheId, CacheOp, CacheResult, Event, Hardware, Software, Tracepoint};
use perf_event::{Builder, Counter};

/// The events counted, in the order stored: name (as `perf list` spells
/// it), and whether a hardware PMU must exist. The two tracepoints count
/// the wake-ups the measured tasks made of a task on another CPU: an IPI
/// sent to one CPU (`ipi:ipi_send_cpu`: a remote wake-up of a busy or
/// halted CPU, and the few other single-CPU calls), or a wake-up of a CPU
/// polling in idle, which needs none (`sched:sched_wake_idle_without_ipi`).
pub(crate) const EVENTS: &[(&str, bool)] = &[
    ("task-clock", false),
    ("context-switches", false),
    ("cpu-migrations", false),
    ("minor-faults", false),
    ("major-faults", false),
    ("ipi:ipi_send_cpu", false),
    ("sched:sched_wake_idle_without_ipi", false),
    ("cycles", true),
    ("instructions", true),
    ("cache-references", true),
    ("cache-misses", true),
    ("branch-misses", true),
    ("LLC-load-misses", true),
    ("dTLB-load-misses", true),
];

/// Events whose counts need the kernel side counted too: a switch, a
/// migration or a wake-up happens in the kernel, so a user-only counter
/// would read zero (and tracepoints are the kernel's alone).
const KERNEL_ONLY: &[&str] =
    &["context-switches", "cpu-migrations", "ipi:ipi_send_cpu", "sched:sched_wake_idle_without_ipi"];

/// Why an event cannot be opened before the kernel is asked: it is no
/// event kdelta knows, or its tracepoint is not there.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum EventError {
    #[error("{0} is not SYSTEM:EVENT")]
    NotSystemEvent(String),
    #[error(
        "tracefs is not mounted, so {name} cannot be opened: mount it with `mount -t tracefs nodev {at}` (as root)"
    )]
    NoTracefs { name: String, at: String },
    #[error("this kernel has no tracepoint {0} (or its id under tracefs is not readable)")]
    NoTracepoint(String),
    #[error("{0} is not an event kdelta counts")]
    Unknown(String),
}

/// A tracepoint's id from tracefs (`/sys/kernel/tracing`, or under debugfs).
fn tracepoint(name: &str) -> Result<Tracepoint, EventError> {
    tracepoint_id(name, &["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]).map(Tracepoint::with_id)
}

/// A tracepoint's id under the first of `bases` that has it; when none
/// has tracefs's `events` directory, the reason says how to mount it.
fn tracepoint_id(name: &str, bases: &[&str]) -> Result<u64, EventError> {
    let (sys, ev) = name.split_once(':').ok_or_else(|| EventError::NotSystemEvent(name.into()))?;
    for base in bases {
        if let Ok(s) = std::fs::read_to_string(format!("{base}/events/{sys}/{ev}/id")) {
            if let Ok(id) = s.trim().parse() {
                return Ok(id);
            }
        }
    }
    if !bases.iter().any(|b| std::path::Path::new(b).join("events").is_dir()) {
        let at = bases.first().copied().unwrap_or("/sys/kernel/tracing");
        return Err(EventError::NoTracefs { name: name.into(), at: at.into() });
    }
    Err(EventError::NoTracepoint(name.into()))
}

fn builder(name: &str) -> Result<Builder<'static>, EventError> {
    fn b(e: impl Event + 'static) -> Builder<'static> {
        Builder::new(e)
    }
    let miss = |which| Cache { which, operation: CacheOp::READ, result: CacheResult::MISS };
    Ok(match name {
        _ if name.contains(':') => b(tracepoint(name)?),
        "task-clock" => b(Software::TASK_CLOCK),
        "context-switches" => b(Software::CONTEXT_SWITCHES),
        "cpu-migrations" => b(Software::CPU_MIGRATIONS),
        "minor-faults" => b(Software::PAGE_FAULTS_MIN),
        "major-faults" => b(Software::PAGE_FAULTS_MAJ),
        "cycles" => b(Hardware::CPU_CYCLES),
        "instructions" => b(Hardware::INSTRUCTIONS),
        "cache-references" => b(Hardware::CACHE_REFERENCES),
        "cache-misses" => b(Hardware::CACHE_MISSES),
        "branch-misses" => b(Hardware::BRANCH_MISSES),
        "LLC-load-misses" => b(miss(CacheId::LL)),
        "dTLB-load-misses" => b(miss(CacheId::DTLB)),
        _ => return Err(EventError::Unknown(name.into())),
    })
}

/// An event that could not be counted here, and why.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Unavailable {
    pub(crate) event: &'static str,
    pub(crate) reason: String,
}

/// Whether this process may count the kernel side of its own tasks: root,
/// CAP_PERFMON/CAP_SYS_ADMIN, or `kernel.perf_event_paranoid` at 1 or below.
fn kernel_countable() -> bool {
    if nix::unistd::geteuid().is_root() {
        return true;
    }
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
        .is_some_and(|p| p <= 1)
}

/// Why a counter could not be opened, in words a user can act on.
fn reason(hardware: bool, e: &std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) if hardware => {
            format!("this machine has no hardware PMU that counts them (perf_event_open: {e}; a VM often has none)")
        }
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "not permitted (perf_event_open: {e}); root, CAP_PERFMON, or sysctl kernel.perf_event_paranoid=1 allows it"
        ),
        _ => format!("perf_event_open: {e}"),
    }
}

/// One event counted over a set of tasks.
struct Opened {
    name: &'static str,
    counters: Vec<Counter>,
}

/// The counters of a set of tasks.
pub(crate) struct TaskCounters {
    tasks: Vec<i32>,
    opened: Vec<Opened>,
    unavailable: Vec<Unavailable>,
}

impl TaskCounters {
    /// Open and enable every event for every task in `tids` (the first is
    /// the one that must exist; others that ended meanwhile are skipped).
    pub(crate) fn open(tids: &[i32]) -> TaskCounters {
        let kernel = kernel_countable();
        let mut opened = Vec::new();
        let mut unavailable = Vec::new();
        'event: for &(name, hardware) in EVENTS {
            if !kernel && KERNEL_ONLY.contains(&name) {
                unavailable.push(Unavailable {
                    event: name,
                    reason: "counted in the kernel, which kernel.perf_event_paranoid=2 or above hides from a non-root user; root, CAP_PERFMON, or sysctl kernel.perf_event_paranoid=1 allows it".into(),
                });
                continue;
            }
            let mut counters = Vec::with_capacity(tids.len());
            for (i, &tid) in tids.iter().enumerate() {
                let mut b = match builder(name) {
                    Ok(b) => b,
                    Err(e) => {
                        unavailable.push(Unavailable { event: name, reason: e.to_string() });
                        continue 'event;
                    }
                };
                b.observe_pid(tid).any_cpu().inherit(true).exclude_hv(true);
                if kernel {
                    b.include_kernel();
                }
                match b.build().and_then(|mut c| c.enable().map(|_| c)) {
                    Ok(c) => counters.push(c),
                    Err(e) if i == 0 => {
                        unavailable.push(Unavailable { event: name, reason: reason(hardware, &e) });
                        continue 'event;
                    }
                    // A peer that ended already: nothing of it to count.
                    Err(_) => {}
                }
            }
            opened.push(Opened { name, counters });
        }
        TaskCounters { tasks: tids.to_vec(), opened, unavailable }
    }

    /// The tasks these counters were opened for.
    pub(crate) fn tasks(&self) -> &[i32] {
        &self.tasks
    }

    /// The events counted, in the order [`read`](Self::read) gives them.
    pub(crate) fn names(&self) -> Vec<&'static str> {
        self.opened.iter().map(|o| o.name).collect()
    }

    pub(crate) fn unavailable(&self) -> &[Unavailable] {
        &self.unavailable
    }

    /// Each event's count so far, summed over the tasks and scaled for
    /// multiplexing; `None` where a read failed.
    pub(crate) fn read(&mut self) -> Vec<Option<u64>> {
        self.opened
            .iter_mut()
            .map(|o| {
                let mut sum = 0u64;
                for c in &mut o.counters {
                    let d = c.read_full().ok()?;
                    sum = sum.saturating_add(scaled(d.count(), d.time_enabled(), d.time_running()));
                }
                Some(sum)
            })
            .collect()
    }
}

/// A count scaled for the share of its enabled time the counter ran.
fn scaled(count: u64, enabled: Option<std::time::Duration>, running: Option<std::time::Duration>) -> u64 {
    match (enabled, running) {
        (Some(e), Some(r)) if !r.is_zero() && r < e => {
            (count as f64 * e.as_secs_f64() / r.as_secs_f64()).round() as u64
        }
        _ => count,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_multiplexed_count_is_scaled_and_a_full_one_is_not() {
        let ms = Duration::from_millis;
        assert_eq!(scaled(100, Some(ms(10)), Some(ms(5))), 200);
        assert_eq!(scaled(100, Some(ms(10)), Some(ms(10))), 100);
        assert_eq!(scaled(100, None, None), 100);
        assert_eq!(scaled(0, Some(ms(10)), Some(ms(0))), 0);
    }

    #[test]
    fn every_event_has_a_builder() {
        for (name, _) in EVENTS.iter().filter(|(n, _)| !n.contains(':')) {
            assert!(builder(name).is_ok(), "{name}");
        }
        assert!(builder("bogus").is_err());
        assert!(builder("nosuch:tracepoint").is_err());
    }

    #[test]
    fn a_missing_tracefs_is_named_with_how_to_mount_it() {
        let dir = std::env::temp_dir().join(format!("kdelta-tracefs-{}", std::process::id()));
        let base = dir.display().to_string();
        let why = tracepoint_id("sched:sched_switch", &[&base]).unwrap_err().to_string();
        assert!(why.contains(&format!("mount -t tracefs nodev {base}")), "{why}");
        std::fs::create_dir_all(dir.join("events/sched/sched_switch")).unwrap();
        let why = tracepoint_id("sched:nosuch", &[&base]).unwrap_err().to_string();
        assert!(why.contains("this kernel has no tracepoint sched:nosuch") && !why.contains("mount"), "{why}");
        std::fs::write(dir.join("events/sched/sched_switch/id"), "316\n").unwrap();
        assert_eq!(tracepoint_id("sched:sched_switch", &[&base]), Ok(316));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The software events count this thread's own work where perf events
    /// can be opened at all (skipped, saying why, where they cannot).
    #[test]
    fn software_events_count_this_threads_faults_and_time() {
        let tid = nix::unistd::gettid().as_raw();
        let mut c = TaskCounters::open(&[tid]);
        let names = c.names();
        let Some(clock) = names.iter().position(|n| *n == "task-clock") else {
            eprintln!("skipped: perf events cannot be opened here: {:?}", c.unavailable());
            return;
        };
        let faults = names.iter().position(|n| *n == "minor-faults").unwrap();
        let a = c.read();
        // Touch fresh pages: each first touch is a minor fault.
        let mut v = vec![0u8; 64 << 20];
        for i in (0..v.len()).step_by(4096) {
            v[i] = 1;
        }
        std::hint::black_box(&v);
        let b = c.read();
        assert!(b[clock].unwrap() > a[clock].unwrap());
        assert!(b[faults].unwrap() - a[faults].unwrap() >= 1000, "{a:?} {b:?}");
        // Hardware events are counted or said unavailable, never both.
        for (name, hw) in EVENTS.iter().filter(|(_, hw)| *hw) {
            let _ = hw;
            assert!(names.contains(name) != c.unavailable().iter().any(|u| u.event == *name), "{name}");
        }
    }
}
