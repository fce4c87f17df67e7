//! Executing a run: each benchmark's points (parameter point x
//! configuration) run in interleaved rounds: round 1 takes every point once,
//! round 2 every point again in the opposite order, and so on, so that drift
//! on a shared machine hits every point alike and no point always follows
//! the same neighbour. Disturbed samples are retaken in further rounds, and
//! `--runs auto` adds rounds until each median is known to a target
//! precision. A benchmark's results are stored as soon as its rounds end.

use super::group::{item_ties, Executor, Ledger};
use super::plan::{split_rounds, wanted, Item, Plan, PlannedConfig, Request, Runs};
use super::progress::Progress;
use crate::config::Config;
use crate::model::record::{ResultRecord, RunRecord, RunStatus};
use crate::model::{RunEnvironment, RunsAsked};
use crate::stats::Warning;
use crate::store::Store;
use crate::topology::Topology;
use anyhow::{Context, Result};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

/// What executing a plan gives back: the run as closed, its results, and
/// whether it was interrupted.
pub(crate) struct RunOutput {
    pub(crate) run: RunRecord,
    pub(crate) results: Vec<ResultRecord>,
    pub(crate) interrupted: bool,
}

/// Execute a plan. Results are written to `store` as they complete.
pub(crate) fn execute(
    req: &Request,
    plan: Plan,
    topo: &Topology,
    host: serde_json::Value,
    store: &mut Store,
    interrupted: Arc<AtomicBool>,
) -> Result<RunOutput> {
    // Before the run is stored: a set-up that fails leaves nothing behind.
    // Put back when this goes, after the last worker, however the run ends.
    let _after = super::once::before_run(&plan.items)?;
    let mut run =
        RunRecord::begin(req.label.clone(), req.command.clone(), ready_configs(&plan), host, RunEnvironment::default());
    run.meta = req.meta.clone();
    run.job = req.job;
    run.id = store.begin_run(&run)?;
    execute_into(req, plan, topo, store, interrupted, Continuing { run, first_seq: 0, progress: None })
}

/// How many workers a plan will start before any retakes: what its progress
/// bar counts. A caller that shows several plans on one bar adds these up.
pub(crate) fn planned_jobs(req: &Request, plan: &Plan) -> usize {
    let ready = ready_configs(plan);
    groups(&plan.items)
        .map(|g| {
            let cfg_ties = super::group::config_ties(req, g[0].info.lockstep, &ready).len();
            split_rounds(wanted(req, &g[0].info)).len() * cfg_ties * item_ties(req, g).len()
        })
        .sum()
}

/// A plan's items cut into groups, one per benchmark: its sweep, whose
/// points are interleaved together.
fn groups(items: &[Item]) -> impl Iterator<Item = &[Item]> {
    items.chunk_by(|a, b| a.info.name == b.info.name)
}

/// The configurations of a plan that will run.
pub(crate) fn ready_configs(plan: &Plan) -> Vec<Config> {
    plan.configs.iter().filter_map(|c| if let PlannedConfig::Ready(c) = c { Some(c.clone()) } else { None }).collect()
}

/// The stored run a plan's results go into (begun by the caller, or an
/// interrupted one being continued), the sequence number its first result
/// gets, and the caller's progress bar, if the plan's workers are shown on
/// one that already counts [`planned_jobs`] for it (and that the caller
/// finishes).
pub(crate) struct Continuing<'a> {
    pub(crate) run: RunRecord,
    pub(crate) first_seq: usize,
    pub(crate) progress: Option<&'a Progress>,
}

/// Execute a plan into a run already stored: results get sequence numbers
/// from `into.first_seq` on, and fields the caller put in the run's
/// environment's `other` map are kept when the run is closed. Without a
/// progress bar of the caller's, the plan's workers show on one of its own.
pub(crate) fn execute_into(
    req: &Request,
    plan: Plan,
    topo: &Topology,
    store: &mut Store,
    interrupted: Arc<AtomicBool>,
    into: Continuing,
) -> Result<RunOutput> {
    let Continuing { mut run, first_seq, progress } = into;
    let ready = ready_configs(&plan);
    let tmp = scratch()?;
    // The cgroups first, so that a refusal comes before any worker runs.
    let mut cgroups =
        (req.isolate || ready.iter().any(|c| !c.cgroup.is_empty())).then(|| super::cgroups::Cgroups::new(&req.root()));
    // Whatever the run changes is put back without a person should kdelta
    // be killed outright: `--isolate` confines every other task.
    let _guard = if cgroups.is_some() || ready.iter().any(|c| !c.knobs.is_empty()) {
        Some(super::journal::start_guard()?)
    } else {
        None
    };
    let isolated = isolate(req, &ready, topo, &mut cgroups)?;
    let watch = LoadWatch::start();
    let own_progress = progress.is_none();
    let progress =
        progress.cloned().unwrap_or_else(|| Progress::new(planned_jobs(req, &plan) as u64, !req.no_progress));
    let mut ex = Executor {
        req,
        topo,
        configs: &plan.configs,
        ready: &ready,
        auto: auto_runs(req, &plan, ready.len()),
        tmp: tmp.path().to_path_buf(),
        interrupted: interrupted.clone(),
        progress,
        knobs: super::knobs::Session::start(&req.root(), ready.iter().any(|c| !c.knobs.is_empty()))?,
        cgroups,
        job_no: 0,
        was_interrupted: false,
        ledger: Ledger { order_seed: rand::random::<u64>().max(1), ..Ledger::default() },
        started: std::time::Instant::now(),
    };
    // The machine's own speed now, to compare with what a later check finds.
    let reference_before = crate::measure::reference::measure();
    // Each group's results are stored as it is done, numbered as laid out.
    let mut results: Vec<(usize, ResultRecord)> = Vec::new();
    ex.run_groups(groups(&plan.items), first_seq, |seq, records| {
        for (i, r) in records.into_iter().enumerate() {
            store.add_result(run.id, seq + i, &r)?;
            results.push((seq + i, r));
        }
        Ok(())
    })?;
    results.sort_by_key(|(seq, _)| *seq);
    let results: Vec<ResultRecord> = results.into_iter().map(|(_, r)| r).collect();
    if own_progress {
        ex.progress.finish();
    }
    put_back(&mut ex);
    let mut environment = environment(req, ex.auto, watch.finish(ex.ledger.workers_cpu, topo), &ex.ledger, &mut run);
    environment.isolated = isolated;
    environment.reference_before = reference_before;
    environment.reference_after = if ex.was_interrupted { None } else { crate::measure::reference::measure() };
    let steady_pct = crate::stats::defaults::AGAINST_LIMIT_PCT;
    if let Some((reference, pct)) = crate::stats::verdict::machine_unsteady(&environment, steady_pct) {
        environment.warnings.push(Warning::SpeedChanged { reference, pct });
    }
    run.status = if ex.was_interrupted { RunStatus::Incomplete } else { RunStatus::Complete };
    store.finish_run(run.id, run.status, &environment)?;
    run.environment = environment;
    run.finished = Some(crate::model::record::now_rfc3339());
    let was_interrupted = ex.was_interrupted;
    drop(ex);
    // The temporary directory (and anything a killed worker left) goes now.
    tmp.close().context("removing the temporary directory")?;
    Ok(RunOutput { run, results, interrupted: was_interrupted })
}

/// `--isolate`: every other task confined off the measured CPUs, in the
/// run's cgroups; how, or `None` when not asked. A refusal removes the
/// cgroups made so far before it is returned.
fn isolate(
    req: &Request,
    ready: &[Config],
    topo: &Topology,
    cgroups: &mut Option<super::cgroups::Cgroups>,
) -> Result<Option<String>> {
    let (Some(cpus), Some(c)) = (super::plan::isolated_cpus(req, ready, topo)?, cgroups.as_mut()) else {
        return Ok(None);
    };
    match c.isolate(&cpus) {
        Ok(how) => {
            eprintln!("kdelta: isolated: {how}");
            Ok(Some(how))
        }
        Err(why) => {
            *cgroups = None;
            Err(crate::error::bad_input(format!("--isolate: {why}")))
        }
    }
}

/// Kernel settings back as found, before anything else can fail; then
/// tasks back on every CPU and kdelta's cgroups removed.
fn put_back(ex: &mut Executor) {
    if let Some(mut k) = ex.knobs.take() {
        if let Err(e) = k.finish() {
            eprintln!("kdelta: restoring kernel settings: {e}");
        }
    }
    if let Some(mut c) = ex.cgroups.take() {
        if let Err(e) = c.finish() {
            eprintln!("kdelta: removing cgroups: {e}");
        }
    }
}

/// The run's temporary directory, marked as this process's, mode 0700 (its
/// job files and workers' directories are no one else's to read); what a
/// kdelta killed outright left behind (marked, owner dead) goes first.
fn scratch() -> Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    crate::measure::owned::sweep(&std::env::temp_dir());
    let tmp = tempfile::Builder::new()
        .prefix(crate::measure::owned::PREFIX)
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .context("creating a temporary directory")?;
    crate::measure::owned::mark(tmp.path(), crate::measure::owned::Owner::me())?;
    Ok(tmp)
}

/// Whether the run refines medians (`--runs auto`): asked, or by default
/// when it compares (two configurations or more, or a benchmark at several
/// points) and is not `--quick`.
fn auto_runs(req: &Request, plan: &Plan, ready: usize) -> bool {
    let multi_point = {
        let mut names: Vec<&str> = plan.items.iter().map(|i| i.info.name).collect();
        let n = names.len();
        names.dedup();
        names.len() < n
    };
    match req.runs {
        Runs::Auto => true,
        Runs::Fixed(_) => false,
        Runs::Default => !req.quick && (ready > 1 || multi_point),
    }
}

/// The machine's load as a run starts, to tell when it ends what else ran
/// beside it.
struct LoadWatch {
    load_before: f64,
    busy_before: Option<f64>,
    /// kdelta's own CPU time and its reaped children's, seconds.
    ours_before: (f64, f64),
    t0: Instant,
}

/// CPU seconds of this process (every thread) and of the children it has
/// reaped (workers, their commands, perf, watchdogs).
fn our_cpu() -> (f64, f64) {
    use crate::sys::task::usage;
    (usage(libc::RUSAGE_SELF).cpu_s, usage(libc::RUSAGE_CHILDREN).cpu_s)
}

/// What else ran on the machine during a run, and how long the run took.
struct Load {
    load_before: f64,
    load_after: f64,
    /// CPUs' worth of time other processes took (kdelta's own and its children's left out).
    others: Option<f64>,
    elapsed: f64,
    warnings: Vec<Warning>,
}

impl LoadWatch {
    fn start() -> LoadWatch {
        let load_before = crate::sys::cpu::loadavg().map(|l| l.avg[0]).unwrap_or(f64::NAN);
        let ours_before = our_cpu();
        LoadWatch { load_before, busy_before: crate::sys::cpu::machine_busy_secs(), ours_before, t0: Instant::now() }
    }

    /// The load over the run, given the CPU time its workers took. kdelta's
    /// own time (the reference loops, the store, the progress line) and its
    /// reaped children's (at least the workers') are not other processes':
    /// on a run of a second or two the reference loops alone would read as
    /// a quarter of a CPU of other work.
    fn finish(self, workers_cpu: f64, topo: &Topology) -> Load {
        let LoadWatch { load_before, busy_before, ours_before, t0 } = self;
        let elapsed = t0.elapsed().as_secs_f64();
        let load_after = crate::sys::cpu::loadavg().map(|l| l.avg[0]).unwrap_or(f64::NAN);
        let (own, children) = our_cpu();
        let ours = (own - ours_before.0).max(0.0) + (children - ours_before.1).max(workers_cpu);
        let others = match (busy_before, crate::sys::cpu::machine_busy_secs()) {
            (Some(a), Some(b)) if elapsed > 0.5 => Some(((b - a - ours) / elapsed).max(0.0)),
            _ => None,
        };
        let mut warnings = Vec::new();
        // Other processes' CPU time is measured directly; the load average
        // counts kdelta's own runnable threads too (a benchmark may run
        // thousands), so it only decides when /proc/stat could not be read.
        let busy = match others {
            Some(o) => o > crate::stats::verdict::BUSY_CPUS,
            None => load_before > topo.online.len() as f64 / 2.0,
        };
        if busy {
            warnings.push(Warning::BusyMachine { load_before, load_after, others_cpus: others });
        }
        Load { load_before, load_after, others, elapsed, warnings }
    }
}

/// The environment a run is closed with: the load over it, its workers'
/// totals, what was asked of `--runs`, and the ledger's counts and schedule;
/// the `other` fields the caller put in `run`'s environment are kept.
fn environment(req: &Request, auto: bool, load: Load, ledger: &Ledger, run: &mut RunRecord) -> RunEnvironment {
    let finite = |x: f64| x.is_finite().then_some(x);
    RunEnvironment {
        load_before: finite(load.load_before),
        load_after: finite(load.load_after),
        others_cpus: load.others,
        elapsed_s: Some(load.elapsed),
        workers_cpu_s: Some(ledger.workers_cpu),
        peak_worker_rss_bytes: Some(ledger.peak_worker_rss),
        peak_parent_rss_bytes: Some(crate::sys::peak_rss_self()),
        warnings: load.warnings,
        runs: Some(match (req.runs, auto) {
            (Runs::Fixed(n), _) => RunsAsked::Fixed(n as u64),
            (_, true) => RunsAsked::Auto,
            _ => RunsAsked::Default,
        }),
        ci_target_pct: auto.then_some(req.ci_target_pct),
        auto_met: auto.then_some(ledger.auto_met as u64),
        auto_capped: auto.then(|| ledger.auto_capped.clone()),
        retaken: Some(ledger.retaken as u64),
        noisy: Some(ledger.noisy as u64),
        schedule: ledger.schedule.iter().map(|(seq, round)| [*seq as u64, *round as u64]).collect(),
        order_seed: Some(ledger.order_seed),
        interleave: (req.interleave != super::plan::Interleave::Samples || req.interleave_why.is_some())
            .then(|| req.interleave.as_str().to_string()),
        interleave_why: req.interleave_why.clone(),
        duet: ledger.duet.clone(),
        duet_fell_back: ledger.duet_fell_back.clone(),
        budget_s: req.budget.map(|b| b.as_secs_f64()),
        other: std::mem::take(&mut run.environment.other),
        ..RunEnvironment::default()
    }
}

#[cfg(test)]
mod scratch_tests {
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_runs_temporary_directories_are_its_own() {
        let t = super::scratch().unwrap();
        assert_eq!(std::fs::metadata(t.path()).unwrap().permissions().mode() & 0o777, 0o700);
        let parent = tempfile::tempdir().unwrap();
        let made =
            crate::measure::owned::make_dir(parent.path(), "kdelta-x-", crate::measure::owned::Owner::me()).unwrap();
        assert_eq!(std::fs::metadata(&made).unwrap().permissions().mode() & 0o777, 0o700);
    }
}

#[cfg(test)]
mod load_tests {
    /// What `LoadWatch` leaves out of other processes' time grows with the
    /// work kdelta's own threads do and with its reaped children's: spun
    /// CPU time in this process and a counting shell both show in it.
    #[test]
    fn kdelta_s_own_and_its_children_s_cpu_time_is_ours() {
        let before = super::our_cpu();
        let t = std::time::Instant::now();
        while super::our_cpu().0 - before.0 < 0.05 && t.elapsed().as_secs() < 20 {
            std::hint::black_box((0..10_000u64).sum::<u64>());
        }
        let status = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done"])
            .status()
            .unwrap();
        assert!(status.success());
        let after = super::our_cpu();
        assert!(after.0 - before.0 >= 0.05, "own: {before:?} -> {after:?}");
        assert!(after.1 > before.1, "children: {before:?} -> {after:?}");
    }
}
