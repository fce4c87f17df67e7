//! The rules that call a sample disturbed, each a pure function of what the
//! probe read: the `solo`, `waits`, `shared` and `whole-run` rules and the
//! interfering-CPU rule, with the readings they are computed from.

use super::*;

/// Busy time of the `used` CPUs (wall less idle) less the measured tasks'
/// CPU time; `None` when any of those CPUs' idle time is unknown.
pub(super) fn others(
    watch: &[u32],
    used: &[u32],
    wall: f64,
    ours: f64,
    ia: &[Option<f64>],
    ib: &[Option<f64>],
) -> Option<f64> {
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
pub(super) fn pressure_source(root: &Path, cpu_stat: Option<&Path>) -> Option<(WaitSource, PathBuf)> {
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
pub(super) fn seen(a: &Snapshot, b: &Snapshot) -> (f64, f64) {
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
pub(super) fn busy_lower(cpus: &[u32], wall: f64, ia: &[f64], ib: &[f64]) -> Option<f64> {
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
