//! What kdelta knows about each sample besides its value: when it was taken,
//! how long it lasted, the CPU time of the tasks it measured, what else ran
//! on their CPUs, where those tasks ran, and whether the sample was disturbed.
//! Stored beside every result as `samples_meta` (one entry per sample, in the
//! order taken). The harness fills these records, statistics and reports
//! read them.

use serde::{Deserialize, Serialize};

/// How a benchmark's tasks use the CPU; it decides which rule recognises a
/// disturbed sample (see `harness::disturb`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum TaskKind {
    /// One task that never waits (system calls, memory routines, arithmetic):
    /// its wall time should equal its own CPU time.
    #[default]
    Solo,
    /// Tasks that wait for each other by design (pipes, sockets, context
    /// switches, fork and exec): judged by what *other* tasks ran on the CPUs
    /// they used.
    Waits,
    /// A whole run of many tasks (chat, dbench, a build): judged like `Waits`
    /// over every CPU the configuration allows, with a wider margin.
    WholeRun,
}

impl TaskKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskKind::Solo => "solo",
            TaskKind::Waits => "waits",
            TaskKind::WholeRun => "whole-run",
        }
    }
}

/// One sample's circumstances.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub(crate) struct SampleMeta {
    /// Start, in seconds since the Unix epoch (microsecond precision).
    pub(crate) t: f64,
    /// Wall-clock seconds from just before to just after the sample.
    pub(crate) wall_s: f64,
    /// CPU seconds the measured tasks used in that time (the measuring thread
    /// alone for `solo`; with its peers, threads and reaped children otherwise).
    pub(crate) cpu_s: f64,
    /// Involuntary context switches of the measuring thread (`solo`) or process.
    pub(crate) nivcsw: u64,
    /// Seconds the measured tasks (the measuring thread, and its peers for
    /// `waits`; for `whole-run` every task of the process group seen and the
    /// children reaped) waited runnable on a run queue (`/proc/TID/schedstat`),
    /// when the kernel reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) run_delay_s: Option<f64>,
    /// Seconds other work ran on the CPUs the measured tasks used (`waits`,
    /// `whole-run`): their busy time less the measured tasks' CPU time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) others_s: Option<f64>,
    /// Seconds the kernel's softirq threads (`ksoftirqd/N`) of those CPUs
    /// ran (`waits`): deferred kernel work, such as freeing what the
    /// measured tasks' exits left, counted as theirs and not as other work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) softirqd_s: Option<f64>,
    /// Hypervisor steal time on those CPUs, seconds (`/proc/stat`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) steal_s: Option<f64>,
    /// CPUs of the measuring thread and then each peer task, at the start and
    /// at the end of the sample.
    #[serde(default)]
    pub(crate) cpus_start: Vec<u32>,
    #[serde(default)]
    pub(crate) cpus_end: Vec<u32>,
    /// Operations timed in this sample, when the harness shortened samples on
    /// a disturbed CPU (otherwise the result's `iterations`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) iterations: Option<u64>,
    /// Which round of the run's interleaved schedule took it (1-based; 0 when unknown).
    #[serde(default)]
    pub(crate) round: u32,
    /// Position of its worker in the run's schedule (1-based; 0 when unknown).
    #[serde(default)]
    pub(crate) job: u32,
    /// Judged disturbed: kept, but left out of the summary.
    #[serde(default)]
    pub(crate) disturbed: bool,
    /// What perf counted for the measured tasks during the sample
    /// (`--counters`): event name (`context-switches`, `cycles`, ...) to count.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub(crate) counters: std::collections::BTreeMap<String, u64>,
    /// The CPU throttling of the worker's cgroup during the sample, when its
    /// configuration set a CPU limit (`+cpu.max=`): the effect under study,
    /// so it is recorded and reported, and never makes a sample disturbed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) throttling: Option<Throttling>,
    /// What judged a whole-run sample's time lost to other work (`whole-run`
    /// only; absent in samples stored before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) wait_source: Option<WaitSource>,
    /// Seconds a whole run's tasks may have lost to other work, as the rule
    /// that judged it bounds them (`measure/disturb.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) lost_s: Option<f64>,
    /// CPUs that share a core with the measured tasks' CPUs (SMT siblings,
    /// and those `kdelta doctor` measured slowing them) and are not theirs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) interfering_cpus: Vec<u32>,
    /// Seconds those CPUs were busy during the sample (`/proc/stat`, less
    /// what its clock ticks cannot resolve).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) interfering_s: Option<f64>,
}

/// Where the time a whole-run sample's tasks waited runnable was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum WaitSource {
    /// The worker's own cgroup v2 `cpu.pressure` (`some` total): the time
    /// any of its tasks, exited ones included, waited.
    CgroupPressure,
    /// The system's `/proc/pressure/cpu` (`some` total): the time any task
    /// waited, bounded by the other work on the worker's CPUs.
    Pressure,
    /// `/proc/TID/schedstat` run-queue wait of the tasks seen and of the
    /// children reaped, when they account for the run's CPU time.
    Schedstat,
    /// Idle clock ticks of `/proc/stat` alone (the old rule): no better
    /// source here.
    Ticks,
}

/// A cgroup's CPU throttling over one sample (`cpu.stat`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub(crate) struct Throttling {
    /// Periods in which the cgroup ran out of quota (`nr_throttled`).
    pub(crate) periods: u64,
    /// Seconds its tasks were held off the CPU for it (`throttled_usec`, v1
    /// `throttled_time`), as `cpu.stat` grew during the sample: the kernel
    /// adds a stretch when it ends, so this may include time before the
    /// sample began (and exceed its wall time).
    pub(crate) secs: f64,
}

/// Which of `n` samples a result's figure uses: the ones not judged
/// disturbed; all of them when there are no per-sample records (results
/// stored before kdelta kept them) or when every sample was disturbed (the
/// result is then noisy and says so). The one rule for summaries,
/// comparisons and `--runs auto`.
pub(crate) fn used(meta: &[SampleMeta], n: usize) -> Vec<bool> {
    if meta.len() != n || meta.iter().all(|m| m.disturbed) {
        return vec![true; n];
    }
    meta.iter().map(|m| !m.disturbed).collect()
}

/// Where the measured tasks ran during a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Placement {
    /// Every task on one CPU, at the start and at the end.
    OneCpu,
    /// The tasks on more than one CPU, at the start and at the end.
    Across,
    /// Moved between the two during the sample.
    Mixed,
}

impl Placement {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Placement::OneCpu => "on one CPU",
            Placement::Across => "across CPUs",
            Placement::Mixed => "moving between CPUs",
        }
    }
}

impl SampleMeta {
    /// Every task on a CPU of its own, at the start and at the end.
    pub(crate) fn tasks_on_distinct_cpus(&self) -> bool {
        let distinct = |v: &[u32]| {
            let mut s = v.to_vec();
            s.sort_unstable();
            s.dedup();
            s.len() == v.len()
        };
        self.cpus_start.len() >= 2 && distinct(&self.cpus_start) && distinct(&self.cpus_end)
    }

    /// The placement of a sample of two or more tasks; `None` for one task.
    pub(crate) fn placement(&self) -> Option<Placement> {
        if self.cpus_start.len() < 2 || self.cpus_end.len() != self.cpus_start.len() {
            return None;
        }
        let one = |v: &[u32]| v.iter().all(|&c| c == v[0]);
        match (one(&self.cpus_start), one(&self.cpus_end)) {
            (true, true) if self.cpus_start[0] == self.cpus_end[0] => Some(Placement::OneCpu),
            (false, false) => Some(Placement::Across),
            _ => Some(Placement::Mixed),
        }
    }
}

/// One part of a result split by placement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct PlacementGroup {
    pub(crate) placement: Placement,
    pub(crate) median: f64,
    pub(crate) n: usize,
    /// Share of the result's samples, 0..1.
    pub(crate) share: f64,
}

/// How a result's samples were obtained: how many were wanted, how many
/// were clean, how many were disturbed and retaken.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub(crate) struct Quality {
    pub(crate) kind: TaskKind,
    /// Clean samples asked for (the benchmark's count, `--runs N`, or the
    /// minimum of `--runs auto`).
    pub(crate) wanted: usize,
    /// Clean samples obtained (the ones the summary uses).
    pub(crate) clean: usize,
    /// Samples judged disturbed (kept, not used).
    pub(crate) disturbed: usize,
    /// Samples taken again because one was disturbed.
    pub(crate) retaken: usize,
    /// Fewer clean samples than wanted, even after retakes: the figure is not
    /// to be trusted and is never marked significant.
    pub(crate) noisy: bool,
    /// More samples were disturbed than came out clean: the machine was busy
    /// on these CPUs while this result was measured.
    pub(crate) busy: bool,
    /// With `--runs auto`: the relative half-width of the median's 95 %
    /// confidence interval reached, in percent, and whether it met the target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ci_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ci_target_met: Option<bool>,
    /// With `--runs auto`: a comparison of this result was still unknown
    /// when sampling stopped early because the most samples the cap and
    /// `--budget` allowed could not settle it (the futility stop), rather
    /// than because the budget or the cap was spent.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) futile: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(a: &[u32], b: &[u32]) -> SampleMeta {
        SampleMeta { cpus_start: a.to_vec(), cpus_end: b.to_vec(), ..Default::default() }
    }

    #[test]
    fn the_figure_uses_clean_samples_or_all_of_them() {
        let d = |disturbed| SampleMeta { disturbed, ..Default::default() };
        assert_eq!(used(&[d(false), d(true), d(false)], 3), [true, false, true]);
        assert_eq!(used(&[d(true), d(true)], 2), [true, true], "all disturbed: noisy, summarised anyway");
        assert_eq!(used(&[], 2), [true, true], "stored before per-sample records");
    }

    #[test]
    fn placements() {
        assert_eq!(m(&[0], &[0]).placement(), None);
        assert_eq!(m(&[1, 1], &[1, 1]).placement(), Some(Placement::OneCpu));
        assert_eq!(m(&[0, 1], &[1, 0]).placement(), Some(Placement::Across));
        assert_eq!(m(&[0, 0], &[0, 1]).placement(), Some(Placement::Mixed));
        assert_eq!(m(&[0, 0], &[1, 1]).placement(), Some(Placement::Mixed));
    }
}
