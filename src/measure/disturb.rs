//! Knowing when a sample was disturbed. The one place the rules live.
//!
//! Around every sample the worker takes a [`Snapshot`] (outside the timed
//! loop) and turns the pair into a [`SampleMeta`]. The rule depends on the
//! benchmark's [`TaskKind`]:
//!
//! | kind | figures | disturbed when |
//! |---|---|---|
//! | `solo`: one task that never waits | wall time, the thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), steal on its CPU | wall exceeds CPU time by more than 2 % (+20 us), or steal exceeds 2 % of the wall time (+1 clock tick, its resolution) |
//! | `waits`: tasks that wait for each other (peers registered by the benchmark, threads, reaped children) | the CPUs the tasks were seen on (start and end), those CPUs' idle time from cpuidle residency (microseconds), the tasks' CPU time, the tasks' run-queue wait (`/proc/TID/schedstat`) | all tasks on one CPU: its busy time less the tasks' own CPU time (other work) exceeds 2 % of the wall time (+20 us). Each task on a CPU of its own: their run-queue wait exceeds 5 % (they never wait for each other there). Otherwise, or without cpuidle: not judged, since the kernel's wake-up work in idle context (large when tasks wake each other across CPUs on a VM) and the tasks' waits for each other on a shared CPU both look like other work. Steal above 2 % always counts |
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
}

impl Probe {
    pub(crate) fn new(kind: TaskKind) -> Probe {
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
        }
        .with_sources(Path::new("/"), crate::measure::interfere::path().as_deref())
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

    /// The CPUs not in `used` whose busy time disturbs a sample on `used`.
    fn interfering(&self, used: &[u32]) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .near
            .iter()
            .filter(|(c, _)| used.contains(c))
            .flat_map(|(_, n)| n.iter().copied())
            .filter(|c| !used.contains(c))
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
        let used: Vec<u32> = {
            let mut v: Vec<u32> = a.cpus.iter().chain(b.cpus.iter()).copied().filter(|&c| c != u32::MAX).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let steal_on = |cpus: &[u32]| -> Option<f64> {
            if a.steal.is_empty() || b.steal.is_empty() {
                return None;
            }
            Some(
                cpus.iter()
                    .map(|&c| b.steal.get(c as usize).unwrap_or(&0.0) - a.steal.get(c as usize).unwrap_or(&0.0))
                    .sum::<f64>()
                    .max(0.0),
            )
        };
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
                m.others_s = others(&self.watch, &used, wall, m.cpu_s, &a.idle, &b.idle);
                let place = match m.placement() {
                    Some(Placement::Across) if !m.tasks_on_distinct_cpus() => Some(Placement::Mixed),
                    p => p,
                };
                let tasks = 1.0 + self.peers.len() as f64;
                let waited = m.run_delay_s.map(|d| (d - throttled * tasks).max(0.0));
                m.disturbed = judge_waits(wall, place, m.others_s, waited, m.steal_s);
            }
            TaskKind::WholeRun => {
                m.cpu_s = (b.process_cpu - a.process_cpu).max(0.0) + (b.group_cpu - a.group_cpu).max(0.0);
                m.nivcsw = b.process_nivcsw.saturating_sub(a.process_nivcsw);
                m.steal_s = steal_on(&self.watch);
                m.others_s = others(&self.watch, &self.watch, wall, m.cpu_s, &a.idle, &b.idle);
                let (seen_run, seen_wait) = seen(a, b);
                let fig = WholeRun {
                    wall,
                    others: m.others_s,
                    unresolved: tick_resolution(self.watch.len(), wall),
                    pressure: match (&self.pressure, a.pressure, b.pressure) {
                        (Some((src, _)), Some(x), Some(y)) => Some((*src, (y - x).max(0.0))),
                        _ => None,
                    },
                    seen_wait: (m.cpu_s > 0.0 && seen_run + 1.0 / clock::clk_tck() >= SEEN_COVERS * m.cpu_s)
                        .then_some(seen_wait),
                    throttled,
                };
                m.run_delay_s = Some(seen_wait);
                let (source, lost, disturbed) = judge_whole_run(&fig);
                m.wait_source = Some(source);
                m.lost_s = lost;
                m.disturbed = disturbed || stolen(wall, m.steal_s);
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

    /// The counts between two snapshots, by event name: none when counting
    /// is off or the counters were reopened in between.
    fn counted(&self, a: &Snapshot, b: &Snapshot) -> std::collections::BTreeMap<String, u64> {
        let mut out = std::collections::BTreeMap::new();
        let (Some((ga, ca)), Some((gb, cb))) = (&a.counts, &b.counts) else { return out };
        if ga != gb {
            return out;
        }
        let Some((_, counters)) = &*self.counters.borrow() else { return out };
        for ((name, x), y) in counters.names().into_iter().zip(ca).zip(cb) {
            if let (Some(x), Some(y)) = (x, y) {
                out.insert(name.to_string(), y.saturating_sub(*x));
            }
        }
        out
    }
}

/// Busy time of the `used` CPUs (wall less idle) less the measured tasks'
/// CPU time; `None` when any of those CPUs' idle time is unknown.
fn others(watch: &[u32], used: &[u32], wall: f64, ours: f64, ia: &[Option<f64>], ib: &[Option<f64>]) -> Option<f64> {
    if used.is_empty() {
        return None;
    }
    let mut busy = 0.0;
    for c in used {
        let i = watch.iter().position(|w| w == c)?;
        let idle = ib.get(i).copied().flatten()? - ia.get(i).copied().flatten()?;
        busy += (wall - idle.max(0.0)).max(0.0);
    }
    Some((busy - ours).max(0.0))
}

/// The CPU pressure file a whole run's wait is read from: the worker
/// cgroup's own `cpu.pressure` (cgroup v2, beside its `cpu_stat`), else the
/// system's `ROOT/proc/pressure/cpu`; `None` without PSI.
fn pressure_source(root: &Path, cpu_stat: Option<&Path>) -> Option<(WaitSource, PathBuf)> {
    let own = cpu_stat.map(|s| s.with_file_name("cpu.pressure"));
    if let Some(p) = own.filter(|p| cpu::pressure_some_secs(p).is_some()) {
        return Some((WaitSource::CgroupPressure, p));
    }
    let sys = root.join("proc/pressure/cpu");
    cpu::pressure_some_secs(&sys).is_some().then_some((WaitSource::Pressure, sys))
}

/// Run time and run-queue wait, seconds, of the process group's tasks
/// between two snapshots (a task seen only at the end counts whole: it
/// started during the sample) and of the children reaped in between.
fn seen(a: &Snapshot, b: &Snapshot) -> (f64, f64) {
    let mut run = (b.reaped.0 - a.reaped.0).max(0.0);
    let mut wait = (b.reaped.1 - a.reaped.1).max(0.0);
    for &(tid, r, d) in &b.tasks {
        let (r0, d0) = a.tasks.iter().find(|t| t.0 == tid).map_or((0.0, 0.0), |t| (t.1, t.2));
        run += (r - r0).max(0.0);
        wait += (d - d0).max(0.0);
    }
    (run, wait)
}

/// Busy seconds of `cpus` between two `/proc/stat` idle readings, less one
/// clock tick each (what the ticks cannot resolve): a lower bound.
/// `None` when a CPU is not in the readings.
fn busy_lower(cpus: &[u32], wall: f64, ia: &[f64], ib: &[f64]) -> Option<f64> {
    if cpus.is_empty() {
        return None;
    }
    let mut busy = 0.0;
    for &c in cpus {
        let idle = ib.get(c as usize)? - ia.get(c as usize)?;
        busy += (wall - idle.max(0.0)).max(0.0);
    }
    Some((busy - tick_resolution(cpus.len(), wall)).max(0.0))
}

/// The interfering-CPU rule: busy time of CPUs that share a core with the
/// measured ones beyond [`MAX_INTERFERING`] of the wall time.
pub(crate) fn judge_interfering(wall: f64, busy: Option<f64>) -> bool {
    busy.is_some_and(|b| b > MAX_INTERFERING * wall + SLACK_S)
}

/// What a whole-run sample is judged from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct WholeRun {
    pub(crate) wall: f64,
    /// Other work on the watched CPUs by their idle ticks (busy less the
    /// run's CPU time), `None` when unknown.
    pub(crate) others: Option<f64>,
    /// What the ticks cannot resolve ([`tick_resolution`]).
    pub(crate) unresolved: f64,
    /// The pressure source and its `some` seconds over the sample.
    pub(crate) pressure: Option<(WaitSource, f64)>,
    /// The run-queue wait of the tasks seen and the children reaped, when
    /// their run time covers the run's CPU time ([`SEEN_COVERS`]).
    pub(crate) seen_wait: Option<f64>,
    /// The worker cgroup's throttled seconds (the effect a limit studies).
    pub(crate) throttled: f64,
}

/// The `whole-run` rule: the time the run's tasks lost to other work is at
/// most the time they waited runnable (pressure: the wall time any task
/// waited; schedstat: the tasks' summed wait) and at most the other work on
/// the watched CPUs (their busy ticks less the run's CPU time, plus what the
/// ticks cannot resolve); the smaller bound above [`MAX_WAIT_WHOLE_RUN`] of
/// the wall time is disturbed. Waits of the run's tasks for each other (a
/// build with more jobs than CPUs) are not other work, so the second bound
/// clears them once a run is long enough for its ticks. Without a wait
/// source: the ticks rule ([`MAX_LOST_WHOLE_RUN`], the resolution taken
/// off). Returns the source, the bound and the judgement.
pub(crate) fn judge_whole_run(f: &WholeRun) -> (WaitSource, Option<f64>, bool) {
    let upper = f.others.map(|o| o + f.unresolved);
    let min = |v: &[Option<f64>]| v.iter().flatten().copied().reduce(f64::min);
    let (source, lost) = match (f.pressure, f.seen_wait) {
        (Some((src, p)), seen) => (src, min(&[Some((p - f.throttled).max(0.0)), upper, seen])),
        (None, Some(w)) => (WaitSource::Schedstat, min(&[Some((w - f.throttled).max(0.0)), upper])),
        (None, None) => {
            let lost = f.others.map(|o| (o - f.unresolved).max(0.0));
            return (WaitSource::Ticks, lost, judge_shared(f.wall, lost, None, MAX_LOST_WHOLE_RUN));
        }
    };
    (source, lost, lost.is_some_and(|l| l > MAX_WAIT_WHOLE_RUN * f.wall + SLACK_S))
}

/// The `solo` rule: wall time the thread did not run, or steal.
pub(crate) fn judge_solo(wall: f64, cpu: f64, steal: Option<f64>) -> bool {
    wall - cpu > MAX_LOST * wall + SLACK_S || stolen(wall, steal)
}

/// Run-queue wait that tasks on CPUs of their own may show before a sample
/// counts as disturbed (`waits`).
pub(crate) const MAX_WAIT_ACROSS: f64 = 0.05;

/// The `waits` rule (see the table above). `placement` is `Across` only
/// when every task had a CPU of its own.
pub(crate) fn judge_waits(
    wall: f64,
    placement: Option<Placement>,
    others: Option<f64>,
    delay: Option<f64>,
    steal: Option<f64>,
) -> bool {
    stolen(wall, steal)
        || match placement {
            // One task (fork and exec: children come and go) or all on one CPU.
            None | Some(Placement::OneCpu) => others.is_some_and(|o| o > MAX_LOST * wall + SLACK_S),
            Some(Placement::Across) => delay.is_some_and(|d| d > MAX_WAIT_ACROSS * wall + SLACK_S),
            Some(Placement::Mixed) => false,
        }
}

/// Busy time `/proc/stat` may show on `cpus` CPUs over `wall` seconds when
/// none was done: each CPU's idle time is read in whole clock ticks, so its
/// busy time can be off by a tick, and by no more than the wall time. A
/// whole run shorter than a tick could look busy on every CPU it did not use.
pub(crate) fn tick_resolution(cpus: usize, wall: f64) -> f64 {
    cpus as f64 * wall.min(1.0 / clock::clk_tck())
}

/// The `whole-run` rule: other work on the tasks' CPUs, or steal.
pub(crate) fn judge_shared(wall: f64, others: Option<f64>, steal: Option<f64>, max_lost: f64) -> bool {
    others.is_some_and(|o| o > max_lost * wall + SLACK_S) || stolen(wall, steal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solo_rule() {
        // 10 ms of wall time, 9.9 ms on the CPU: 1 % lost, clean.
        assert!(!judge_solo(0.010, 0.0099, Some(0.0)));
        // 3 ms lost to a preempting task.
        assert!(judge_solo(0.010, 0.007, None));
        // Steal counts even when the guest's CPU clock did not see it, once
        // it is more than the one clock tick /proc/stat resolves.
        assert!(judge_solo(0.100, 0.100, Some(0.03)));
        assert!(!judge_solo(0.010, 0.010, Some(0.01)));
        // Tiny samples get the absolute slack.
        assert!(!judge_solo(0.0005, 0.00048, None));
    }

    #[test]
    fn waits_rule() {
        // Ping-pong on one CPU: idle 0, the two tasks used all 10 ms; their
        // waits for each other (2.5 ms) do not count.
        assert!(!judge_waits(0.010, Some(Placement::OneCpu), Some(0.0), Some(0.0025), Some(0.0)));
        // A hog took 4.5 ms of that CPU.
        assert!(judge_waits(0.010, Some(Placement::OneCpu), Some(0.0045), Some(0.006), None));
        // Across CPUs: wake-up work in idle context inflates `others`; the
        // tasks barely waited, so the sample is clean; a long wait is not.
        assert!(!judge_waits(0.100, Some(Placement::Across), Some(0.030), Some(0.0015), None));
        assert!(judge_waits(0.100, Some(Placement::Across), Some(0.030), Some(0.012), None));
        // Moving between the two: not judged, unless steal says so.
        assert!(!judge_waits(0.100, Some(Placement::Mixed), Some(0.030), Some(0.030), None));
        assert!(judge_waits(0.100, Some(Placement::Mixed), None, None, Some(0.03)));
        // fork: one task seen, its children reaped; no cpuidle: not judged.
        assert!(!judge_waits(0.010, None, None, Some(0.003), None));
    }

    #[test]
    fn shared_rule() {
        assert!(!judge_shared(0.010, Some(0.0001), Some(0.0), MAX_LOST));
        assert!(judge_shared(0.010, Some(0.004), None, MAX_LOST));
        assert!(!judge_shared(0.010, None, None, MAX_LOST), "unknown is not disturbed");
        assert!(!judge_shared(1.0, Some(0.05), None, MAX_LOST_WHOLE_RUN));
        assert!(judge_shared(1.0, Some(0.2), None, MAX_LOST_WHOLE_RUN));
    }

    #[test]
    fn a_whole_run_shorter_than_a_tick_is_not_judged_by_idle_ticks() {
        let tick = 1.0 / clock::clk_tck();
        // 0.3 ms on two CPUs, neither idle counter moved: 0.6 ms busy, of
        // which the run used 0.2 ms. Below the resolution: clean.
        let wall = 0.0003;
        let o = others(&[0, 1], &[0, 1], wall, 0.0002, &[Some(1.0), Some(1.0)], &[Some(1.0), Some(1.0)]).unwrap();
        assert!(o > MAX_LOST_WHOLE_RUN * wall + SLACK_S, "without the resolution it looks disturbed");
        assert!((tick_resolution(2, wall) - 2.0 * wall).abs() < 1e-12);
        assert!(!judge_shared(wall, Some((o - tick_resolution(2, wall)).max(0.0)), None, MAX_LOST_WHOLE_RUN));
        // A hog on the other CPU through a 100 ms run is still seen.
        let wall = 0.1;
        let o = others(&[0, 1], &[0, 1], wall, 0.1, &[Some(1.0), Some(1.0)], &[Some(1.0), Some(1.0)]).unwrap();
        assert!((tick_resolution(2, wall) - 2.0 * tick).abs() < 1e-12);
        assert!(judge_shared(wall, Some(o - tick_resolution(2, wall)), None, MAX_LOST_WHOLE_RUN));
    }

    #[test]
    fn others_from_idle() {
        // Two CPUs watched, tasks seen on both; 10 ms of wall time; CPU 0
        // idle 4 ms, CPU 1 idle 5 ms; the tasks used 11 ms: nothing else ran.
        let ia = [Some(1.0), Some(2.0)];
        let ib = [Some(1.004), Some(2.005)];
        let o = others(&[0, 1], &[0, 1], 0.010, 0.011, &ia, &ib).unwrap();
        assert!(o.abs() < 1e-9, "{o}");
        // A hog took 5 ms of CPU 0 while the tasks used 6 ms.
        let o = others(&[0, 1], &[0], 0.010, 0.005, &[Some(0.0), None], &[Some(0.0), None]).unwrap();
        assert!((o - 0.005).abs() < 1e-9);
        // Idle unknown on a used CPU: no judgement.
        assert!(others(&[0, 1], &[1], 0.010, 0.005, &ia, &[Some(1.0), None]).is_none());
    }

    fn fig(wall: f64, others: f64, unresolved: f64) -> WholeRun {
        WholeRun { wall, others: Some(others), unresolved, pressure: None, seen_wait: None, throttled: 0.0 }
    }

    #[test]
    fn a_whole_run_that_lost_a_tenth_to_a_hog_is_disturbed_by_its_wait() {
        // 1 s on one CPU, a hog took 100 ms of it: the ticks alone allow it.
        let ticks = fig(1.0, 0.10, 0.01);
        let (src, lost, disturbed) = judge_whole_run(&ticks);
        assert!(src == WaitSource::Ticks && (lost.unwrap() - 0.09).abs() < 1e-9 && !disturbed);
        // The run's tasks and the hog waited for each other: pressure says
        // 200 ms, the other work bounds the loss at 110 ms.
        let psi = WholeRun { pressure: Some((WaitSource::Pressure, 0.2)), ..ticks };
        let (src, lost, disturbed) = judge_whole_run(&psi);
        assert_eq!(src, WaitSource::Pressure);
        assert!((lost.unwrap() - 0.11).abs() < 1e-9 && disturbed);
        // The shell loop reaped as a zombie waited 95 ms: schedstat alone
        // says so where there is no PSI.
        let sched = WholeRun { seen_wait: Some(0.095), ..ticks };
        assert_eq!(judge_whole_run(&sched).0, WaitSource::Schedstat);
        assert!(judge_whole_run(&sched).2);
        // Its own cgroup's pressure, as exact.
        let cg = WholeRun { pressure: Some((WaitSource::CgroupPressure, 0.1)), ..ticks };
        assert_eq!(judge_whole_run(&cg).0, WaitSource::CgroupPressure);
        assert!(judge_whole_run(&cg).2);
    }

    #[test]
    fn a_quiet_whole_run_is_clean_by_every_source() {
        let quiet = fig(0.2, 0.001, 0.01);
        for w in [
            WholeRun { pressure: Some((WaitSource::Pressure, 0.001)), ..quiet },
            WholeRun { pressure: Some((WaitSource::CgroupPressure, 0.0)), ..quiet },
            WholeRun { seen_wait: Some(0.0004), ..quiet },
            quiet,
        ] {
            assert!(!judge_whole_run(&w).2, "{w:?}");
        }
    }

    #[test]
    fn waits_a_run_did_not_lose_to_others_do_not_disturb_it() {
        // A build with more jobs than CPUs waits for itself: pressure 2 s
        // over a 2 s run on two CPUs, but the other work on them is 10 ms.
        let build = WholeRun { pressure: Some((WaitSource::Pressure, 2.0)), ..fig(2.0, 0.01, 0.02) };
        assert!(!judge_whole_run(&build).2);
        // Other tasks waited on a CPU the run did not use: the system's
        // pressure says 100 ms, the run's own tasks (all seen) waited 1 ms.
        let elsewhere =
            WholeRun { pressure: Some((WaitSource::Pressure, 0.1)), seen_wait: Some(0.001), ..fig(0.1, 0.0, 0.01) };
        assert_eq!(judge_whole_run(&elsewhere), (WaitSource::Pressure, Some(0.001), false));
        // Throttling by its own cgroup's quota is the effect studied.
        let limited =
            WholeRun { pressure: Some((WaitSource::CgroupPressure, 0.5)), throttled: 0.5, ..fig(1.0, 0.5, 0.01) };
        assert!(!judge_whole_run(&limited).2);
        // Idle unknown and nothing else: not judged.
        let unknown = WholeRun { others: None, ..fig(1.0, 0.0, 0.01) };
        assert_eq!(judge_whole_run(&unknown), (WaitSource::Ticks, None, false));
    }

    /// A probe on a fake machine: `watch` CPUs, each one's interfering CPUs.
    fn fake_probe(kind: TaskKind, watch: &[u32], near: &[(u32, &[u32])]) -> Probe {
        Probe {
            kind,
            peers: Vec::new(),
            watch: watch.to_vec(),
            root: PathBuf::from("/nonexistent"),
            pgid: 0,
            pid: 0,
            tid: 0,
            counting: false,
            counters: RefCell::new(None),
            cpu_stat: None,
            pressure: None,
            near: near.iter().map(|(c, n)| (*c, n.to_vec())).collect(),
        }
    }

    /// A snapshot at `t` seconds after `base`, CPU `cpu`, every CPU's idle
    /// seconds `idle` (cpuidle and `/proc/stat` alike), `cpu_s` of ours.
    fn snap(base: Instant, t: f64, cpu: u32, idle: &[f64], cpu_s: f64) -> Snapshot {
        Snapshot {
            at: base + std::time::Duration::from_secs_f64(t),
            unix: t,
            thread_cpu: cpu_s,
            thread_nivcsw: 0,
            own_delay: Some(0.0),
            process_cpu: cpu_s,
            process_nivcsw: 0,
            peer_run: Vec::new(),
            peer_delay: Vec::new(),
            group_cpu: 0.0,
            cpus: vec![cpu],
            throttle: None,
            idle: idle.iter().map(|&i| Some(i)).collect(),
            steal: vec![0.0; idle.len()],
            counts: None,
            pressure: None,
            tasks: Vec::new(),
            reaped: (0.0, 0.0),
            stat_idle: idle.to_vec(),
        }
    }

    #[test]
    fn a_busy_cpu_that_shares_the_core_disturbs_a_solo_sample() {
        let base = Instant::now();
        // 1 s on CPU 0, all of it on the CPU; CPU 1 busy 200 ms of it.
        let a = snap(base, 0.0, 0, &[5.0, 5.0], 1.0);
        let b = snap(base, 1.0, 0, &[5.0, 5.8], 2.0);
        // No SMT, no doctor's record: CPU 1 is none of the sample's business.
        let m = fake_probe(TaskKind::Solo, &[0, 1], &[]).meta(&a, &b);
        assert!(!m.disturbed && m.interfering_cpus.is_empty() && m.interfering_s.is_none());
        // CPU 1 slows CPU 0 (a sibling, or the doctor measured so).
        let p = fake_probe(TaskKind::Solo, &[0, 1], &[(0, &[1]), (1, &[0])]);
        let m = p.meta(&a, &b);
        assert_eq!(m.interfering_cpus, vec![1]);
        assert!(m.disturbed && m.interfering_s.unwrap() > 0.15, "{m:?}");
        // CPU 1 idle but for 10 ms (a clock tick): clean.
        let b = snap(base, 1.0, 0, &[5.0, 5.99], 2.0);
        assert!(!p.meta(&a, &b).disturbed);
    }

    #[test]
    fn a_whole_run_records_its_source_and_its_interfering_cpus() {
        let base = Instant::now();
        // A whole run on CPU 0 (its affinity), 1 s, 0.9 s of CPU; CPU 1
        // slows CPU 0 and was busy 400 ms; nothing else ran on CPU 0.
        let a = snap(base, 0.0, 0, &[5.0, 5.0], 0.0);
        let mut b = snap(base, 1.0, 0, &[5.1, 5.6], 0.9);
        b.reaped = (0.9, 0.0);
        let p = fake_probe(TaskKind::WholeRun, &[0], &[(0, &[1])]);
        let m = p.meta(&a, &b);
        assert_eq!(m.wait_source, Some(WaitSource::Schedstat));
        assert_eq!(m.lost_s, Some(0.0));
        assert_eq!(m.interfering_cpus, vec![1]);
        assert!(m.disturbed, "{m:?}");
        // Without the doctor's record: clean, judged as before it.
        let m = fake_probe(TaskKind::WholeRun, &[0], &[]).meta(&a, &b);
        assert!(!m.disturbed && m.interfering_cpus.is_empty(), "{m:?}");
        // The reaped child waited 100 ms while a hog ran: disturbed.
        let mut c = b.clone();
        c.reaped = (0.9, 0.1);
        c.stat_idle = vec![5.0, 6.0];
        c.idle = vec![Some(5.0), Some(6.0)];
        let m = fake_probe(TaskKind::WholeRun, &[0], &[]).meta(&a, &c);
        assert!(m.disturbed && m.run_delay_s == Some(0.1), "{m:?}");
    }

    #[test]
    fn the_wait_of_tasks_seen_and_children_reaped_adds_up() {
        let base = Instant::now();
        let mut a = snap(base, 0.0, 0, &[0.0], 0.0);
        let mut b = snap(base, 1.0, 0, &[0.0], 0.0);
        a.tasks = vec![(10, 1.0, 0.5), (11, 2.0, 0.1)];
        a.reaped = (3.0, 0.2);
        // Task 10 ran 0.5 s more and waited 0.05 s; 11 is gone (its time
        // lost with it); 12 started during the sample; a child was reaped.
        b.tasks = vec![(10, 1.5, 0.55), (12, 0.2, 0.01)];
        b.reaped = (3.3, 0.23);
        let (run, wait) = seen(&a, &b);
        assert!((run - (0.5 + 0.2 + 0.3)).abs() < 1e-9, "{run}");
        assert!((wait - (0.05 + 0.01 + 0.03)).abs() < 1e-9, "{wait}");
    }

    #[test]
    fn a_busy_loop_is_clean_and_a_sleep_is_not() {
        let p = Probe::new(TaskKind::Solo);
        let a = p.snapshot();
        let t = Instant::now();
        while t.elapsed().as_millis() < 5 {
            std::hint::black_box(0);
        }
        let b = p.snapshot_end();
        let m = p.meta(&a, &b);
        assert!(m.wall_s >= 0.005 && m.cpu_s > 0.0);
        // Not asserted clean: the test machine may preempt us. A sleep is
        // time not on the CPU, which the rule must see.
        let a = p.snapshot();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let b = p.snapshot_end();
        assert!(p.meta(&a, &b).disturbed);
    }
}
