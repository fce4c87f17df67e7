//! Knowing when a sample was disturbed. The one place the rules live.
//!
//! Around every sample the worker takes a [`Snapshot`] (outside the timed
//! loop) and turns the pair into a [`SampleMeta`]. The rule depends on the
//! benchmark's [`TaskKind`]:
//!
//! | kind | figures | disturbed when |
//! |---|---|---|
//! | `solo`: one task that never waits | wall time, the thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), steal on its CPU | wall exceeds CPU time by more than 2 % (+20 us), or steal exceeds 2 % of the wall time (+1 clock tick, its resolution) |
//! | `waits`: tasks that wait for each other (peers registered by the benchmark, threads, reaped children) | the CPUs the tasks were seen on (start and end), those CPUs' idle time from cpuidle residency (microseconds), the tasks' CPU time, the tasks' run-queue wait (`/proc/TID/schedstat`) | all tasks on one CPU: its busy time less the tasks' own CPU time and its `ksoftirqd/N`'s run time (the kernel's deferred work for them, such as freeing what their exits left) (other work) exceeds 2 % of the wall time (+20 us). Each task on a CPU of its own: their run-queue wait exceeds 5 % (they never wait for each other there). Otherwise, or without cpuidle: not judged, since the kernel's wake-up work in idle context (large when tasks wake each other across CPUs on a VM) and the tasks' waits for each other on a shared CPU both look like other work. Steal above 2 % always counts |
//! | `whole-run`: a whole run of many tasks (`Sampler::push`) | every CPU of the worker's affinity; the time its tasks waited runnable, from the first source this machine has (below); other work on those CPUs from `/proc/stat`'s idle ticks less the process group's CPU time | the time lost to other work, bounded by both (the smaller of: the wait, and the other work plus one clock tick per CPU), exceeds 3 % of the wall time (+20 us); or steal exceeds 2 %. Where no wait source exists: other work exceeds 10 % by more than what the ticks cannot resolve (one tick per CPU, at most the wall time) |
//! | every kind | the CPUs that share a core with the measured ones and are not theirs: SMT siblings, and those `kdelta doctor` measured slowing them (`interfere.rs`; no record, none) | those CPUs were busy (`/proc/stat`, less one tick each) more than 3 % of the wall time (+20 us): a busy sibling slows a shell-like loop on a VM's vCPU by 24-60 % |
//!
//! The whole run's wait sources, best first (recorded as `SampleMeta::wait_source`):
//!
//! | source | what it sees |
//! |---|---|
//! | `cgroup-pressure` | the worker's own cgroup v2 `cpu.pressure` (`some` total, microseconds), beside its `cpu.stat` under a CPU limit: the wall time any of its tasks waited, exited ones included |
//! | `pressure` | the system's `/proc/pressure/cpu` (`some`): the wall time any task waited, so also waits on CPUs the run did not use; hence the bound by other work, and by the tasks' own schedstat when they are all seen (below) |
//! | `schedstat` | `/proc/TID/schedstat` run-queue wait of every task of the process group seen at either snapshot, plus the children reaped in between (read as zombies, `sys::task::note_ended_child`: a `cmd` run's shell or command), when their run time covers 90 % of the run's CPU time; a grandchild that exited is not seen |
//! | `ticks` | the rule of old, where none of the above exists |
//!
//! Not used: taskstats (`cpu_delay_total`, exit notifications) answers only
//! a process with CAP_NET_ADMIN and, since Linux 5.14, with
//! `kernel.task_delayacct=1` (off by default). Measured on this project's
//! shared 2-vCPU Xeon VM (`scripts/run-queue-wait.py`, a shell loop pinned
//! to CPU 0 while other builds ran, with and without a hog on CPU 0): the
//! reaped shell's schedstat wait (52-84 % of the wall time) matched the
//! other work the ticks show on CPU 0 to within 1 % of the wall time, while
//! the system's pressure said 98-100 %, as it counts every task's wait:
//! hence its bound by other work. A `kdelta run cmd` there recorded
//! `wait_source: pressure` and a lost time equal to that wait. 3 % is the
//! share of its time a run may lose before the loss is several times the
//! 1 % changes a gate looks for; the machine was never quiet enough to
//! measure a quiet run's wait.
//!
//! Throttling by the worker's own cgroup under a CPU limit (`+cpu.max=`,
//! its `cpu.stat` read with each snapshot) is told apart from other work: it
//! is recorded per sample (`SampleMeta::throttling`) and its seconds are
//! taken out of the time lost (`solo`) and waited runnable (`waits`, once
//! per measured task) before the rules above are applied; the idle time
//! it leaves on the CPUs is not other tasks' time, so `others_s` is
//! unaffected. Other tasks' time on the CPUs still disturbs a sample.
//!
//! Preemption by another task, an interrupt storm and a hypervisor that
//! stole the virtual CPU all show as time the measured tasks did not run
//! while the sample's clock did. Where the kernel does not tell (no cpuidle
//! driver for `waits`), the sample is not judged: `others_s` is absent and
//! the sample counts as clean.

use crate::model::sample::{Placement, SampleMeta, TaskKind, Throttling, WaitSource};
use crate::sys::perf::{TaskCounters, Unavailable};
use crate::sys::{clock, cpu, task};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::Instant;

mod rules;
mod whole;
pub(crate) use rules::*;

/// Share of a sample's wall time that other work may take before the sample
/// counts as disturbed (`solo`, `waits`).
pub(crate) const MAX_LOST: f64 = 0.02;
/// The same for `whole-run` samples judged by `/proc/stat`'s clock ticks
/// alone ([`WaitSource::Ticks`], where no better source exists).
pub(crate) const MAX_LOST_WHOLE_RUN: f64 = 0.10;
/// Share of a whole-run sample's wall time its tasks may have lost to other
/// work, as a run-queue wait source bounds it, before it counts as disturbed.
pub(crate) const MAX_WAIT_WHOLE_RUN: f64 = 0.03;
/// Share of a sample's wall time the CPUs that share a core with the
/// measured ones (`interfere.rs`) may be busy before it counts as disturbed.
pub(crate) const MAX_INTERFERING: f64 = 0.03;
/// The run-queue wait of the tasks seen (and children reaped) stands for the
/// whole run's when their run time covers this share of its CPU time.
pub(crate) const SEEN_COVERS: f64 = 0.9;
/// One look at whether a worker's CPUs are quiet ([`Probe::wait_quiet`]):
/// ten clock ticks, so that `/proc/stat` resolves the rule's 10 %.
pub(crate) const QUIET_WINDOW: std::time::Duration = std::time::Duration::from_millis(100);
/// Absolute slack for the clock and accounting reads around a sample.
pub(crate) const SLACK_S: f64 = 20e-6;
/// `/proc/stat` counts steal in clock ticks: one tick of steal is below its resolution.
fn steal_floor() -> f64 {
    1.0 / clock::clk_tck()
}

fn stolen(wall: f64, steal: Option<f64>) -> bool {
    steal.is_some_and(|s| s > MAX_LOST * wall + steal_floor())
}

/// Figures read at one instant.
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    at: Instant,
    unix: f64,
    thread_cpu: f64,
    thread_nivcsw: u64,
    own_delay: Option<f64>,
    /// RUSAGE_SELF + RUSAGE_CHILDREN CPU seconds (waits, whole-run).
    process_cpu: f64,
    process_nivcsw: u64,
    /// Run time of each watched CPU's `ksoftirqd/N` (`waits`), as
    /// `Probe::softirqd`.
    softirqd_run: Vec<Option<f64>>,
    /// Peers' run time (process peers only) and run-queue wait (schedstat).
    peer_run: Vec<Option<f64>>,
    peer_delay: Vec<Option<f64>>,
    /// The whole process group's other members (whole-run).
    group_cpu: f64,
    cpus: Vec<u32>,
    /// The worker's cgroup's throttling so far: periods, seconds.
    throttle: Option<(u64, f64)>,
    idle: Vec<Option<f64>>,
    steal: Vec<f64>,
    /// Perf counts of the measured tasks (`Probe::count`): the counters'
    /// generation (a new peer reopens them) and each event's count.
    counts: Option<(u32, Vec<Option<u64>>)>,
    /// The CPU pressure source's `some` total, seconds (whole-run).
    pressure: Option<f64>,
    /// Each task of the process group: id, schedstat run and wait (whole-run).
    tasks: Vec<(i32, f64, f64)>,
    /// Run and wait of the children reaped so far (`task::note_ended_child`).
    reaped: (f64, f64),
    /// Every CPU's idle seconds from `/proc/stat` (the interfering CPUs').
    stat_idle: Vec<f64>,
}

/// A task that takes part in the measurement besides the measuring thread.
#[derive(Debug, Clone, Copy)]
struct Peer {
    tid: i32,
    /// A separate process (its CPU time is read from schedstat); a thread of
    /// this process is already in RUSAGE_SELF.
    process: bool,
}

/// Takes snapshots for one worker and judges samples.
pub(crate) struct Probe {
    kind: TaskKind,
    peers: Vec<Peer>,
    /// CPUs whose idle time is read: the affinity set (up to 64 CPUs).
    watch: Vec<u32>,
    root: PathBuf,
    pgid: i32,
    pid: i32,
    tid: i32,
    /// Count perf events for the measured tasks around every sample.
    counting: bool,
    /// Opened at the first snapshot after the tasks are known, reopened when
    /// a peer joins (its generation counts up).
    counters: RefCell<Option<(u32, TaskCounters)>>,
    /// The worker cgroup's `cpu.stat`, under a CPU limit.
    cpu_stat: Option<PathBuf>,
    /// Where a whole run's tasks' wait is read: the worker cgroup's
    /// `cpu.pressure` or the system's `/proc/pressure/cpu`.
    pressure: Option<(WaitSource, PathBuf)>,
    /// Each watched CPU's interfering CPUs (`interfere::interfering`).
    near: Vec<(u32, Vec<u32>)>,
    /// CPUs whose business never counts as interference: a duet's other
    /// members', busy by design ([`Probe::focus`]).
    exempt: Vec<u32>,
    /// Each watched CPU's `ksoftirqd/N` (`waits`): its run time is deferred
    /// kernel work of the measured tasks, not other work.
    softirqd: Vec<(u32, i32)>,
}

impl Probe {
    pub(crate) fn new(kind: TaskKind) -> Probe {
        let mut p = Probe::unsourced(kind).with_sources(Path::new("/"), crate::measure::interfere::path().as_deref());
        p.find_softirqd();
        p
    }

    /// A probe of this process on its affinity, before its sources are read.
    fn unsourced(kind: TaskKind) -> Probe {
        let watch = crate::sys::get_affinity().map(|s| s.iter().collect::<Vec<u32>>()).unwrap_or_default();
        let watch = if watch.len() <= 64 { watch } else { Vec::new() };
        Probe {
            kind,
            peers: Vec::new(),
            watch,
            root: PathBuf::from("/"),
            pgid: nix::unistd::getpgrp().as_raw(),
            pid: std::process::id() as i32,
            tid: nix::unistd::gettid().as_raw(),
            counting: false,
            counters: RefCell::new(None),
            cpu_stat: None,
            pressure: None,
            near: Vec::new(),
            exempt: Vec::new(),
            softirqd: Vec::new(),
        }
    }

    /// Read a cgroup's throttling around each sample (and, in cgroup v2,
    /// its CPU pressure).
    pub(crate) fn with_cpu_stat(mut self, cpu_stat: Option<PathBuf>) -> Probe {
        self.cpu_stat = cpu_stat;
        self.pressure = pressure_source(&self.root, self.cpu_stat.as_deref());
        self
    }

    /// The machine's sources below `root`: CPU pressure, and each watched
    /// CPU's interfering CPUs from the topology and the doctor's record at
    /// `record` (when it was made on this machine).
    pub(crate) fn with_sources(mut self, root: &Path, record: Option<&Path>) -> Probe {
        use crate::measure::interfere;
        self.root = root.to_path_buf();
        self.pressure = pressure_source(root, self.cpu_stat.as_deref());
        let rec = record.and_then(|p| interfere::load_for(p, &interfere::MachineId::read(root)));
        self.near = self.watch.iter().map(|&c| (c, interfere::interfering(root, &[c], rec.as_ref()))).collect();
        self
    }

    /// Watch only `cpu` from the next snapshot on, and never count the
    /// `partners`' CPUs as interfering: a duet member's sample, pinned to
    /// `cpu` while the other members sample on theirs. Take it before a
    /// sample's first snapshot, never between its two.
    pub(crate) fn focus(&mut self, cpu: u32, partners: Vec<u32>) {
        // `near` keeps every CPU first watched (the configuration's).
        if self.near.iter().any(|(c, _)| *c == cpu) {
            self.watch = vec![cpu];
        }
        self.exempt = partners;
    }

    /// The CPUs not in `used` whose busy time disturbs a sample on `used`.
    fn interfering(&self, used: &[u32]) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .near
            .iter()
            .filter(|(c, _)| used.contains(c))
            .flat_map(|(_, n)| n.iter().copied())
            .filter(|c| !used.contains(c) && !self.exempt.contains(c))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Count perf events (`sys::perf::EVENTS`) of the measured tasks in
    /// every sample from now on.
    pub(crate) fn count(&mut self) {
        self.counting = true;
    }

    /// The events that could not be counted, and why (empty before the
    /// first sample or when not counting).
    pub(crate) fn uncounted(&self) -> Vec<Unavailable> {
        self.counters.borrow().as_ref().map(|(_, c)| c.unavailable().to_vec()).unwrap_or_default()
    }

    /// The tasks a sample's counters cover: the measuring thread, its
    /// peers, and for a whole run every other thread of this process and of
    /// its process group as they are when counting starts (the tasks they
    /// start later are counted through `inherit`).
    fn counted_tasks(&self) -> Vec<i32> {
        let mut v = vec![self.tid];
        v.extend(self.peers.iter().map(|p| p.tid));
        if self.kind == TaskKind::WholeRun {
            v.extend(task::own_threads());
            v.extend(task::group_threads(self.pgid, self.pid));
        }
        let mut seen = std::collections::HashSet::new();
        v.retain(|t| seen.insert(*t));
        v
    }

    /// Each event's count now, opening the counters first when the tasks
    /// they cover changed.
    fn read_counts(&self) -> Option<(u32, Vec<Option<u64>>)> {
        if !self.counting {
            return None;
        }
        let mut slot = self.counters.borrow_mut();
        let stale = match slot.as_ref() {
            None => true,
            Some((_, c)) => {
                let want = self.peers.iter().map(|p| p.tid);
                c.tasks()[0] != self.tid || !want.clone().all(|t| c.tasks().contains(&t))
            }
        };
        if stale {
            let generation = slot.as_ref().map_or(0, |(g, _)| g + 1);
            *slot = Some((generation, TaskCounters::open(&self.counted_tasks())));
        }
        let (g, c) = slot.as_mut().expect("opened above");
        Some((*g, c.read()))
    }

    pub(crate) fn kind(&self) -> TaskKind {
        self.kind
    }

    pub(crate) fn set_kind(&mut self, kind: TaskKind) {
        self.kind = kind;
        self.find_softirqd();
    }

    /// Find the watched CPUs' `ksoftirqd/N` once the kind is `waits`.
    fn find_softirqd(&mut self) {
        if self.kind == TaskKind::Waits && self.softirqd.is_empty() {
            let found = crate::sys::task::softirq_threads(&self.watch);
            self.softirqd = self.watch.iter().zip(found).filter_map(|(&c, t)| Some((c, t?))).collect();
        }
    }

    /// Tasks (thread or process ids) that take part in each sample.
    pub(crate) fn add_peers(&mut self, tids: &[i32]) {
        for &tid in tids {
            let process = !task::is_own_thread(tid);
            self.peers.push(Peer { tid, process });
        }
        if self.kind == TaskKind::Solo && !tids.is_empty() {
            self.kind = TaskKind::Waits;
        }
    }

    /// The tasks a profile samples: the measuring thread and the peers; for
    /// a whole-run benchmark every thread of every process of the worker's
    /// process group too (its local servers and clients). Their children
    /// and later threads are followed by the profiler.
    pub(crate) fn tasks(&self) -> Vec<i32> {
        let mut t = vec![self.tid];
        if self.kind == TaskKind::WholeRun {
            let threads = |pid: i32| -> Vec<i32> {
                std::fs::read_dir(format!("/proc/{pid}/task"))
                    .map(|d| d.flatten().filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()).collect())
                    .unwrap_or_default()
            };
            t.extend(threads(self.pid));
            if let Ok(d) = std::fs::read_dir("/proc") {
                for pid in d.flatten().filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()) {
                    // A zombie has no threads left to watch or profile.
                    if pid != self.pid && task::stat(pid).is_some_and(|s| s.pgrp == self.pgid && !s.zombie) {
                        t.extend(threads(pid));
                    }
                }
            }
        }
        t.extend(self.peers.iter().map(|p| p.tid));
        t.sort_unstable();
        t.dedup();
        t
    }

    /// For a whole-run benchmark, its processes (this one and the others
    /// of its process group, zombies left out); `None` for other kinds.
    pub(crate) fn processes(&self) -> Option<Vec<i32>> {
        if self.kind != TaskKind::WholeRun {
            return None;
        }
        let mut p = vec![self.pid];
        if let Ok(d) = std::fs::read_dir("/proc") {
            for pid in d.flatten().filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok()) {
                if pid != self.pid && task::stat(pid).is_some_and(|s| s.pgrp == self.pgid && !s.zombie) {
                    p.push(pid);
                }
            }
        }
        Some(p)
    }

    /// A snapshot before a sample: the clocks read last, next to the sample.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let mut s = self.read_kernel();
        s.counts = self.read_counts();
        s.thread_cpu = clock::thread_cpu_secs();
        s.at = Instant::now();
        s
    }

    /// A snapshot after a sample: the clocks read first, so the interval
    /// between the two covers the sample tightly.
    pub(crate) fn snapshot_end(&self) -> Snapshot {
        let at = Instant::now();
        let thread_cpu = clock::thread_cpu_secs();
        let counts = self.read_counts();
        Snapshot { at, thread_cpu, counts, ..self.read_kernel() }
    }

    /// Everything but the two clocks (`at` and `thread_cpu` are filled by the caller).
    fn read_kernel(&self) -> Snapshot {
        let waits = self.kind != TaskKind::Solo;
        let stat = cpu::stat_cpus();
        let (process_cpu, process_nivcsw) = if waits {
            let s = task::usage(libc::RUSAGE_SELF);
            let c = task::usage(libc::RUSAGE_CHILDREN);
            (s.cpu_s + c.cpu_s, s.nivcsw)
        } else {
            (0.0, 0)
        };
        let mut cpus = vec![task::current_cpu().unwrap_or(u32::MAX)];
        let mut peer_run = Vec::with_capacity(self.peers.len());
        let mut peer_delay = Vec::with_capacity(self.peers.len());
        if self.kind == TaskKind::Waits {
            for p in &self.peers {
                cpus.push(task::stat(p.tid).map(|s| s.cpu).unwrap_or(u32::MAX));
                let ss = task::schedstat(p.tid);
                peer_run.push(if p.process { ss.map(|s| s.0) } else { None });
                peer_delay.push(ss.map(|s| s.1));
            }
        }
        let whole = self.kind == TaskKind::WholeRun;
        let group_cpu = if whole { task::group_cpu_secs(self.pgid, self.pid) } else { 0.0 };
        let tasks = if whole { task::group_schedstat(self.pgid, self.pid) } else { Vec::new() };
        let pressure = self.pressure.as_ref().filter(|_| whole).and_then(|(_, p)| cpu::pressure_some_secs(p));
        let idle = match self.kind {
            TaskKind::Solo => Vec::new(),
            TaskKind::Waits => self.watch.iter().map(|&c| cpu::idle_secs(&self.root, c)).collect(),
            TaskKind::WholeRun => self.watch.iter().map(|&c| stat.get(c as usize).map(|t| t.idle_s)).collect(),
        };
        let softirqd_run = if self.kind == TaskKind::Waits {
            self.softirqd.iter().map(|&(_, t)| task::schedstat(t).map(|s| s.0)).collect()
        } else {
            Vec::new()
        };
        let own_delay = task::schedstat(self.tid).map(|s| s.1);
        let steal: Vec<f64> = stat.iter().map(|t| t.steal_s).collect();
        let stat_idle: Vec<f64> = stat.iter().map(|t| t.idle_s).collect();
        let thread_nivcsw = task::usage(libc::RUSAGE_THREAD).nivcsw;
        let throttle = self.cpu_stat.as_deref().and_then(crate::sys::cgroup::throttling);
        let unix = clock::unix_now();
        Snapshot {
            at: Instant::now(),
            unix,
            thread_cpu: 0.0,
            thread_nivcsw,
            own_delay,
            process_cpu,
            process_nivcsw,
            softirqd_run,
            peer_run,
            peer_delay,
            group_cpu,
            cpus,
            idle,
            steal,
            counts: None,
            throttle,
            pressure,
            tasks,
            reaped: task::reaped_schedstat(),
            stat_idle,
        }
    }

    /// Wait, in windows of [`QUIET_WINDOW`], until one passes that a
    /// whole-run sample of nothing would not be disturbed in (other work on
    /// the watched CPUs within the whole-run rule), or `max` has passed: how
    /// long it waited, and whether the CPUs were quiet.
    pub(crate) fn wait_quiet(&self, max: std::time::Duration) -> (std::time::Duration, bool) {
        let start = Instant::now();
        loop {
            let a = self.snapshot();
            std::thread::sleep(QUIET_WINDOW);
            let b = self.snapshot_end();
            if self.quiet(&a, &b) {
                return (start.elapsed(), true);
            }
            if start.elapsed() >= max {
                return (start.elapsed(), false);
            }
        }
    }

    /// Whether the watched CPUs were quiet between two snapshots that took
    /// no sample ([`wait_quiet`](Self::wait_quiet)): other work on them
    /// within what the ticks rule allows, and their interfering CPUs idle.
    /// (No task waited in such a window, so the wait sources cannot tell.)
    fn quiet(&self, a: &Snapshot, b: &Snapshot) -> bool {
        let wall = b.at.duration_since(a.at).as_secs_f64();
        let others = others(&self.watch, &self.watch, wall, 0.0, &a.idle, &b.idle);
        let unresolved = tick_resolution(self.watch.len(), wall);
        let near = self.interfering(&self.watch);
        !judge_shared(wall, others.map(|o| (o - unresolved).max(0.0)), None, MAX_LOST_WHOLE_RUN)
            && !judge_interfering(wall, busy_lower(&near, wall, &a.stat_idle, &b.stat_idle))
    }

    /// The sample between two snapshots, judged.
    pub(crate) fn meta(&self, a: &Snapshot, b: &Snapshot) -> SampleMeta {
        let wall = b.at.duration_since(a.at).as_secs_f64();
        let used = used_cpus(a, b);
        let steal_on = |cpus: &[u32]| steal(a, b, cpus);
        let mut m = SampleMeta {
            t: a.unix,
            wall_s: wall,
            cpus_start: a.cpus.clone(),
            cpus_end: b.cpus.clone(),
            run_delay_s: match (a.own_delay, b.own_delay) {
                (Some(x), Some(y)) => Some((y - x).max(0.0)),
                _ => None,
            },
            counters: self.counted(a, b),
            throttling: match (a.throttle, b.throttle) {
                (Some((n0, s0)), Some((n1, s1))) => {
                    Some(Throttling { periods: n1.saturating_sub(n0), secs: (s1 - s0).max(0.0) })
                }
                _ => None,
            },
            ..Default::default()
        };
        // Time the cgroup's quota held the tasks off the CPU is the effect a
        // `+cpu.max=` configuration studies, not other work: it is taken out
        // of the time the tasks lost (and waited runnable) before judging.
        // The kernel adds a throttled stretch to `cpu.stat` when it ends, so a
        // sample may be credited with one that began before it: at most its
        // wall time is taken out.
        let throttled = m.throttling.map_or(0.0, |t| t.secs.min(wall));
        match self.kind {
            TaskKind::Solo => {
                m.cpu_s = b.thread_cpu - a.thread_cpu;
                m.nivcsw = b.thread_nivcsw.saturating_sub(a.thread_nivcsw);
                m.steal_s = steal_on(&used);
                m.disturbed = judge_solo(wall, m.cpu_s + throttled, m.steal_s);
            }
            TaskKind::Waits => {
                let delta = |x: &[Option<f64>], y: &[Option<f64>]| -> f64 {
                    x.iter()
                        .zip(y)
                        .map(|(x, y)| if let (Some(x), Some(y)) = (x, y) { (y - x).max(0.0) } else { 0.0 })
                        .sum()
                };
                m.cpu_s = (b.process_cpu - a.process_cpu).max(0.0) + delta(&a.peer_run, &b.peer_run);
                m.nivcsw = b.process_nivcsw.saturating_sub(a.process_nivcsw);
                m.run_delay_s = m.run_delay_s.map(|own| own + delta(&a.peer_delay, &b.peer_delay));
                m.steal_s = steal_on(&used);
                m.softirqd_s = self.softirqd_on(&used, a, b);
                let kernel_own = m.softirqd_s.unwrap_or(0.0);
                m.others_s = others(&self.watch, &used, wall, m.cpu_s + kernel_own, &a.idle, &b.idle);
                let place = match m.placement() {
                    Some(Placement::Across) if !m.tasks_on_distinct_cpus() => Some(Placement::Mixed),
                    p => p,
                };
                let tasks = 1.0 + self.peers.len() as f64;
                let waited = m.run_delay_s.map(|d| (d - throttled * tasks).max(0.0));
                m.disturbed = judge_waits(wall, place, m.others_s, waited, m.steal_s);
            }
            TaskKind::WholeRun => {
                m.steal_s = steal_on(&self.watch);
                self.whole_run(&mut m, a, b, throttled);
            }
        }
        // Busy CPUs that share a core with the measured ones slow them
        // without taking their time: judged for every kind.
        let measured: &[u32] = if self.kind == TaskKind::WholeRun { &self.watch } else { &used };
        m.interfering_cpus = self.interfering(measured);
        if !m.interfering_cpus.is_empty() {
            m.interfering_s = busy_lower(&m.interfering_cpus, wall, &a.stat_idle, &b.stat_idle);
            m.disturbed |= judge_interfering(wall, m.interfering_s);
        }
        m
    }

    /// Seconds the `ksoftirqd/N` of the CPUs in `used` ran between two
    /// snapshots; `None` where none of them is known.
    fn softirqd_on(&self, used: &[u32], a: &Snapshot, b: &Snapshot) -> Option<f64> {
        let mut any = false;
        let mut sum = 0.0;
        for (i, (c, _)) in self.softirqd.iter().enumerate() {
            if let (true, Some(Some(x)), Some(Some(y))) =
                (used.contains(c), a.softirqd_run.get(i), b.softirqd_run.get(i))
            {
                any = true;
                sum += (y - x).max(0.0);
            }
        }
        any.then_some(sum)
    }
}

/// Seconds the hypervisor ran something else on `cpus` between two
/// snapshots; `None` where steal time is not read.
fn steal(a: &Snapshot, b: &Snapshot, cpus: &[u32]) -> Option<f64> {
    if a.steal.is_empty() || b.steal.is_empty() {
        return None;
    }
    let on = |s: &[f64], c: u32| *s.get(c as usize).unwrap_or(&0.0);
    Some(cpus.iter().map(|&c| on(&b.steal, c) - on(&a.steal, c)).sum::<f64>().max(0.0))
}

/// The CPUs a sample's tasks were on at its start or end, once each.
fn used_cpus(a: &Snapshot, b: &Snapshot) -> Vec<u32> {
    let mut v: Vec<u32> = a.cpus.iter().chain(b.cpus.iter()).copied().filter(|&c| c != u32::MAX).collect();
    v.sort_unstable();
    v.dedup();
    v
}

#[cfg(test)]
#[path = "disturb_tests.rs"]
mod tests;
