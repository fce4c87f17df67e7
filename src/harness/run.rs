//! Executing a run: each benchmark's points (parameter point x
//! configuration) run in interleaved rounds: round 1 takes every point once,
//! round 2 every point again in the opposite order, and so on, so that drift
//! on a shared machine hits every point alike and no point always follows
//! the same neighbour. Disturbed samples are retaken in further rounds, and
//! `--runs auto` adds rounds until each median is known to a target
//! precision. A benchmark's results are stored as soon as its rounds end.

use super::plan::{param_for, split_rounds, wanted, Item, Plan, PlannedConfig, Request, Runs};
use super::result::{ci_met, finish, record_only};
use super::worker::{run_job, Job, Outcome};
use crate::config::Config;
use crate::measure::sampler::{SampleSet, SamplerSettings};
use crate::model::record::{ResultRecord, RunRecord, RunStatus, Status};
use crate::model::{RunEnvironment, RunsAsked};
use crate::stats::Warning;
use crate::store::Store;
use crate::topology::Topology;
use anyhow::{Context, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct RunOutput {
    pub run: RunRecord,
    pub results: Vec<ResultRecord>,
    pub interrupted: bool,
}

/// The order of round `r` (0-based) over `n` points: forward on even
/// rounds, backward on odd ones (A B C, C B A, A B C, ...).
pub fn round_order(n: usize, r: usize) -> Vec<usize> {
    if r % 2 == 0 {
        (0..n).collect()
    } else {
        (0..n).rev().collect()
    }
}

/// One benchmark x parameter point x configuration, and what it has so far.
struct Point {
    item: usize,
    cfg: usize,
    set: SampleSet,
    failed: Option<String>,
    /// Samples taken in extra rounds to replace disturbed ones.
    retaken_extra: usize,
}

impl Point {
    fn clean(&self) -> usize {
        self.set.clean()
    }
    fn taken(&self) -> usize {
        self.set.samples.len()
    }
}

/// What the run tells about its rounds, stored in the run's environment.
#[derive(Default)]
struct Ledger {
    /// (result seq, round) per worker, in the order they ran.
    schedule: Vec<(usize, u32)>,
    retaken: usize,
    auto_met: usize,
    auto_capped: Vec<String>,
    noisy: usize,
}

/// Execute a plan. Results are written to `store` as they complete.
pub fn execute(req: &Request, plan: Plan, topo: &Topology, host: serde_json::Value, store: &mut Store, interrupted: Arc<AtomicBool>) -> Result<RunOutput> {
    let mut run = RunRecord::begin(req.label.clone(), req.command.clone(), ready_configs(&plan), host, RunEnvironment::default());
    run.id = store.begin_run(&run)?;
    execute_into(req, plan, topo, store, interrupted, run, 0, None)
}

/// How many workers a plan will start before any retakes: what its progress
/// bar counts. A caller that shows several plans on one bar adds these up.
pub fn planned_jobs(req: &Request, plan: &Plan) -> usize {
    let ready = ready_configs(plan).len();
    plan.items.iter().filter(|it| it.unsupported.is_none()).map(|it| split_rounds(wanted(req, &it.info)).len() * ready).sum()
}

/// The configurations of a plan that will run.
pub fn ready_configs(plan: &Plan) -> Vec<Config> {
    plan.configs.iter().filter_map(|c| if let PlannedConfig::Ready(c) = c { Some(c.clone()) } else { None }).collect()
}

/// Execute a plan into a run already stored (begun by the caller, or an
/// interrupted one being continued): results get sequence numbers from
/// `first_seq` on, and fields the caller put in the run's environment's
/// `other` map are kept when the run is closed. With `progress`, the plan's
/// workers are shown on the caller's bar, which already counts
/// [`planned_jobs`] for it and which the caller finishes; else on a bar of
/// its own.
#[allow(clippy::too_many_arguments)]
pub fn execute_into(
    req: &Request,
    plan: Plan,
    topo: &Topology,
    store: &mut Store,
    interrupted: Arc<AtomicBool>,
    mut run: RunRecord,
    first_seq: usize,
    progress: Option<&super::progress::Progress>,
) -> Result<RunOutput> {
    let ready = ready_configs(&plan);
    // What a kdelta killed outright left behind goes first (marked, owner dead).
    crate::measure::owned::sweep(&std::env::temp_dir());
    let tmp = tempfile::Builder::new().prefix(crate::measure::owned::PREFIX).tempdir().context("creating a temporary directory")?;
    crate::measure::owned::mark(tmp.path(), crate::measure::owned::Owner::me())?;
    let load_before = crate::sys::cpu::loadavg().map(|l| l.avg[0]).unwrap_or(f64::NAN);
    let busy_before = crate::sys::cpu::machine_busy_secs();
    let t0 = Instant::now();

    // Comparisons sample until the medians are known well, unless told otherwise.
    let multi_point = {
        let mut names: Vec<&str> = plan.items.iter().map(|i| i.info.name).collect();
        let n = names.len();
        names.dedup();
        names.len() < n
    };
    let auto = match req.runs {
        Runs::Auto => true,
        Runs::Fixed(_) => false,
        Runs::Default => !req.quick && (ready.len() > 1 || multi_point),
    };

    let own_progress = progress.is_none();
    let progress = progress.cloned().unwrap_or_else(|| super::progress::Progress::new(planned_jobs(req, &plan) as u64));
    let mut ex = Executor {
        req,
        topo,
        tmp: tmp.path().to_path_buf(),
        interrupted: interrupted.clone(),
        progress,
        job_no: 0,
        workers_cpu: 0.0,
        peak_worker_rss: 0,
        was_interrupted: false,
        ready: &ready,
        knobs: ready.iter().any(|c| !c.knobs.is_empty()).then(|| super::knobs::Session::new(&req.root())),
    };
    let mut results = Vec::new();
    let mut ledger = Ledger::default();

    // A benchmark's sweep is one group: its points are interleaved together.
    let mut start = 0;
    while start < plan.items.len() && !ex.was_interrupted {
        let name = plan.items[start].info.name;
        let end = start + plan.items[start..].iter().take_while(|i| i.info.name == name).count();
        let group = &plan.items[start..end];
        start = end;
        let out = ex.run_group(group, &plan.configs, auto, first_seq + results.len(), &mut ledger)?;
        for r in out {
            store.add_result(run.id, first_seq + results.len(), &r)?;
            results.push(r);
        }
    }
    if own_progress {
        ex.progress.finish();
    }
    // Kernel settings back as found, before anything else can fail.
    if let Some(mut k) = ex.knobs.take() {
        if let Err(e) = k.restore() {
            eprintln!("kdelta: restoring kernel settings: {e}");
        }
    }

    let elapsed = t0.elapsed().as_secs_f64();
    let load_after = crate::sys::cpu::loadavg().map(|l| l.avg[0]).unwrap_or(f64::NAN);
    let others = match (busy_before, crate::sys::cpu::machine_busy_secs()) {
        (Some(a), Some(b)) if elapsed > 0.5 => Some(((b - a - ex.workers_cpu) / elapsed).max(0.0)),
        _ => None,
    };
    let mut run_warnings = Vec::new();
    // Other processes' CPU time is measured directly; the load average counts
    // kdelta's own runnable threads too (a chat run has thousands), so it only
    // decides when /proc/stat could not be read.
    let busy = match others {
        Some(o) => o > 0.25,
        None => load_before > topo.online.len() as f64 / 2.0,
    };
    if busy {
        run_warnings.push(Warning::BusyMachine { load_before, load_after, others_cpus: others });
    }
    let finite = |x: f64| x.is_finite().then_some(x);
    let environment = RunEnvironment {
        load_before: finite(load_before),
        load_after: finite(load_after),
        others_cpus: others,
        elapsed_s: Some(elapsed),
        workers_cpu_s: Some(ex.workers_cpu),
        peak_worker_rss_bytes: Some(ex.peak_worker_rss),
        peak_parent_rss_bytes: Some(crate::sys::peak_rss_self()),
        warnings: run_warnings,
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
        other: std::mem::take(&mut run.environment.other),
        ..RunEnvironment::default()
    };
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

/// Where each result of a group comes from, in storing order.
enum Slot {
    Measured(usize),
    Unavailable { item: usize, config: String, reason: String },
    Unsupported { item: usize, config: Config, reason: String },
}

/// Runs workers and keeps the run's running totals.
struct Executor<'a> {
    req: &'a Request,
    topo: &'a Topology,
    tmp: std::path::PathBuf,
    interrupted: Arc<AtomicBool>,
    progress: super::progress::Progress,
    job_no: usize,
    workers_cpu: f64,
    peak_worker_rss: u64,
    was_interrupted: bool,
    ready: &'a [Config],
    /// Kernel settings switched between workers, when a configuration has any.
    knobs: Option<super::knobs::Session>,
}

impl Executor<'_> {
    /// All points of one benchmark's sweep: planned rounds, then rounds that
    /// retake disturbed samples and (with `auto`) refine imprecise medians.
    /// Returns the group's results in storing order; `first_seq` is the
    /// sequence number the first of them will get.
    fn run_group(&mut self, group: &[Item], configs: &[PlannedConfig], auto: bool, first_seq: usize, ledger: &mut Ledger) -> Result<Vec<ResultRecord>> {
        let info = &group[0].info;
        let want = wanted(self.req, info);
        let plan_rounds = split_rounds(want);
        let cap = 3 * want;
        let mut points: Vec<Point> = Vec::new();
        for (ii, item) in group.iter().enumerate() {
            if item.unsupported.is_none() {
                for ci in 0..self.ready.len() {
                    points.push(Point { item: ii, cfg: ci, set: SampleSet::default(), failed: None, retaken_extra: 0 });
                }
            }
        }
        // Storing order: per item, unavailable configurations, then the others.
        let mut order: Vec<Slot> = Vec::new();
        let mut seq_of_point = vec![0usize; points.len()];
        for (ii, item) in group.iter().enumerate() {
            for pc in configs {
                if let PlannedConfig::Unavailable { name, reason } = pc {
                    order.push(Slot::Unavailable { item: ii, config: name.clone(), reason: format!("configuration unavailable: {reason}") });
                }
            }
            match &item.unsupported {
                None => {
                    for pi in (0..points.len()).filter(|&pi| points[pi].item == ii) {
                        seq_of_point[pi] = first_seq + order.len();
                        order.push(Slot::Measured(pi));
                    }
                }
                Some(why) => {
                    for c in self.ready {
                        order.push(Slot::Unsupported { item: ii, config: c.clone(), reason: why.clone() });
                    }
                }
            }
        }

        // The running order (order.rs): the values the user compares side by
        // side, configurations innermost; rounds then alternate direction.
        let declared: Vec<&str> = info.params.iter().map(|p| p.name).collect();
        let given: Vec<&str> = self.req.overrides.keys().filter_map(|k| param_for(k, info)).collect();
        let item_params: Vec<&crate::model::params::Params> = group.iter().map(|i| &i.params).collect();
        let mut rank = vec![0usize; group.len()];
        for (r, ii) in super::order::visit_order(&item_params, &declared, &given).into_iter().enumerate() {
            rank[ii] = r;
        }
        let mut visit: Vec<usize> = (0..points.len()).collect();
        visit.sort_by_key(|&pi| (rank[points[pi].item], points[pi].cfg));

        let mut iterations: Vec<Option<u64>> = vec![None; group.len()];
        let mut round: u32 = 0;
        let planned_start = Instant::now();
        for &per in &plan_rounds {
            round += 1;
            let jobs: Vec<(usize, usize)> = round_order(points.len(), round as usize - 1).into_iter().map(|k| (visit[k], per)).collect();
            self.run_round(group, &mut points, &jobs, round, plan_rounds.len() as u32, &mut iterations, &seq_of_point, ledger)?;
            if self.was_interrupted {
                break;
            }
        }
        // Extra rounds: as long again as the planned ones at most.
        let budget = planned_start.elapsed().max(Duration::from_secs(1));
        let extra_start = Instant::now();
        while !self.was_interrupted && extra_start.elapsed() < budget {
            let mut jobs = Vec::new();
            for &pi in &visit {
                let p = &mut points[pi];
                if p.failed.is_some() || p.taken() >= cap {
                    continue;
                }
                let clean = p.clean();
                if clean < want {
                    // Samples asked for to replace disturbed ones count as retakes.
                    let n = (want - clean).min(plan_rounds[0]).min(cap - p.taken());
                    p.retaken_extra += n;
                    jobs.push((pi, n));
                } else if auto && !ci_met(&p.set, self.req.ci_target_pct) {
                    jobs.push((pi, plan_rounds[0].min(cap - p.taken())));
                }
            }
            if jobs.is_empty() {
                break;
            }
            round += 1;
            if round % 2 == 0 {
                jobs.reverse();
            }
            self.progress.add_length(jobs.len() as u64);
            self.run_round(group, &mut points, &jobs, round, 0, &mut iterations, &seq_of_point, ledger)?;
        }

        let mut out = Vec::new();
        for slot in order {
            match slot {
                // Interrupted before its first sample: nothing to store.
                Slot::Measured(pi) if self.was_interrupted && points[pi].set.samples.is_empty() && points[pi].failed.is_none() => {}
                Slot::Measured(pi) => {
                    let p = &mut points[pi];
                    let cfg = &self.ready[p.cfg];
                    let set = std::mem::take(&mut p.set);
                    let mut r = finish(&group[p.item], &cfg.name, cfg.cpus.to_string(), p.failed.clone(), set, want, p.retaken_extra, auto, self.req.ci_target_pct);
                    if let Some(k) = &self.knobs {
                        let read = k.read_back(&cfg.name);
                        if !read.is_empty() {
                            r.notes.push(format!("kernel settings read back: {}", read.join(", ")));
                            r.extras.insert("kernel_settings_read_back".into(), serde_json::json!(read));
                        }
                    }
                    if let Some(q) = &r.quality {
                        ledger.retaken += q.retaken;
                        ledger.noisy += usize::from(q.noisy);
                        if auto && r.status == Status::Ok {
                            match q.ci_target_met {
                                Some(true) => ledger.auto_met += 1,
                                _ => {
                                    let shown = r.params.display();
                                    let sep = if shown.is_empty() { "" } else { " " };
                                    ledger.auto_capped.push(format!("{}{sep}{shown} [{}]", r.benchmark, r.config));
                                }
                            }
                        }
                    }
                    out.push(r);
                }
                Slot::Unavailable { item, config, reason } => out.push(record_only(&group[item], &config, String::new(), reason)),
                Slot::Unsupported { item, config, reason } => out.push(record_only(&group[item], &config.name, config.cpus.to_string(), reason)),
            }
        }
        Ok(out)
    }

    /// One round: a worker per job `(point, samples)`, in the order given.
    #[allow(clippy::too_many_arguments)]
    fn run_round(
        &mut self,
        group: &[Item],
        points: &mut [Point],
        jobs: &[(usize, usize)],
        round: u32,
        planned_rounds: u32,
        iterations: &mut [Option<u64>],
        seq_of_point: &[usize],
        ledger: &mut Ledger,
    ) -> Result<()> {
        for &(pi, want) in jobs {
            if points[pi].failed.is_some() || want == 0 {
                continue;
            }
            if self.interrupted.load(Ordering::SeqCst) {
                self.was_interrupted = true;
                return Ok(());
            }
            let item = &group[points[pi].item];
            let cfg = &self.ready[points[pi].cfg];
            // Machine-wide settings are switched here, settled before the worker starts.
            if let Some(k) = self.knobs.as_mut() {
                if let Err(why) = k.switch(cfg) {
                    if let Err(e) = k.restore() {
                        eprintln!("kdelta: restoring kernel settings: {e}");
                    }
                    points[pi].failed = Some(format!("applying kernel settings: {why}"));
                    self.progress.inc();
                    continue;
                }
            }
            let timeout = self.req.timeout.unwrap_or(item.info.timeout);
            self.job_no += 1;
            let job_no = self.job_no;
            let wdir = self.tmp.join(format!("w{job_no}"));
            std::fs::create_dir_all(&wdir)?;
            let job = Job {
                benchmark: item.info.name.to_string(),
                params: item.params.clone(),
                config: cfg.clone(),
                settings: SamplerSettings {
                    samples: want,
                    target: self.req.sample_time,
                    warmup: self.req.warmup,
                    quick: self.req.quick,
                    iterations: iterations[points[pi].item],
                    tmpdir: wdir.clone(),
                    llc_bytes: self.topo.llc_bytes(),
                    retake: true,
                    owner: Some(crate::measure::owned::Owner::me()),
                },
                result_path: self.tmp.join(format!("r{job_no}.json")),
            };
            let which = if planned_rounds > 0 { format!("round {round}/{planned_rounds}") } else { format!("extra round {round}") };
            self.progress.set_message(format!("{} {} [{}] {which}", item.info.name, item.params.display(), cfg.name));
            let outcome = run_job(&job, &self.tmp.join(format!("j{job_no}.json")), timeout, &self.interrupted);
            // The directories the worker made elsewhere go with it, however it ended.
            crate::measure::owned::remove_listed(&wdir.join(crate::measure::owned::LIST), crate::measure::owned::Owner::me());
            let _ = std::fs::remove_dir_all(&wdir);
            let outcome = outcome?;
            self.progress.inc();
            ledger.schedule.push((seq_of_point[pi], round));
            match outcome {
                Outcome::Done { mut set, cpu_secs, max_rss } => {
                    self.workers_cpu += cpu_secs;
                    self.peak_worker_rss = self.peak_worker_rss.max(max_rss);
                    // Calibrated once per point, in its first worker; every later
                    // worker of every configuration times the same work.
                    if iterations[points[pi].item].is_none() {
                        iterations[points[pi].item] = set.iterations;
                    }
                    for m in set.meta.iter_mut() {
                        m.round = round;
                        m.job = job_no as u32;
                    }
                    points[pi].set.absorb(set);
                }
                Outcome::Failed { reason, cpu_secs } => {
                    self.workers_cpu += cpu_secs;
                    if let Some(k) = self.knobs.as_mut() {
                        if let Err(e) = k.restore() {
                            eprintln!("kdelta: restoring kernel settings: {e}");
                        }
                    }
                    points[pi].failed = Some(reason);
                }
                Outcome::Interrupted => {
                    self.was_interrupted = true;
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod order_tests {
    use super::*;

    #[test]
    fn rounds_alternate_direction() {
        assert_eq!(round_order(3, 0), vec![0, 1, 2]);
        assert_eq!(round_order(3, 1), vec![2, 1, 0]);
        assert_eq!(round_order(3, 2), vec![0, 1, 2]);
        // No point always follows the same neighbour: over two rounds each
        // point has two different predecessors (or none, once).
        let seq: Vec<usize> = (0..4).flat_map(|r| round_order(4, r)).collect();
        for p in 0..4 {
            let before: Vec<usize> = seq.windows(2).filter(|w| w[1] == p).map(|w| w[0]).collect();
            let mut distinct = before.clone();
            distinct.sort_unstable();
            distinct.dedup();
            assert!(distinct.len() >= 2 || before.len() < 2, "point {p} follows only {distinct:?}");
        }
    }
}
