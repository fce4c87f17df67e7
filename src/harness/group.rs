//! One benchmark's group of points (parameter point x configuration) run
//! in rounds of workers: which points share a worker, the order workers
//! run in, the extra rounds, and each worker's outcome folded into its
//! points.
//!
//! A worker usually measures one point. When the user compares values of
//! a parameter (`--param impl=libc,tuned`) of a benchmark that allows it
//! (`BenchInfo::lockstep`), the values at each other point of the sweep
//! form a *tie* (`order::ties`) and share one worker, taking turns sample
//! by sample (`measure::sampler::turns`); `--interleave workers` turns that
//! off.

use super::order::{compared, round_order, ties, visit_order, Axes};
use super::plan::{param_for, split_rounds, wanted, Interleave, Item, PlannedConfig, Request};
use super::result::{ci_met, finish, record_only};
use super::worker::{run_job, Job, JobPoint, Outcome};
use crate::config::Config;
use crate::measure::sampler::{SampleSet, SamplerSettings};
use crate::model::record::{ResultRecord, Status};
use crate::model::Params;
use crate::topology::Topology;
use anyhow::Result;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
pub(super) struct Ledger {
    /// (result seq, round) per point of each worker, in the order they ran.
    pub schedule: Vec<(usize, u32)>,
    pub retaken: usize,
    pub auto_met: usize,
    pub auto_capped: Vec<String>,
    pub noisy: usize,
}

/// Where each result of a group comes from, in storing order.
enum Slot {
    Measured(usize),
    Unavailable { item: usize, config: String, reason: String },
    Unsupported { item: usize, config: Config, reason: String },
}

/// Runs workers and keeps the run's running totals.
pub(super) struct Executor<'a> {
    pub req: &'a Request,
    pub topo: &'a Topology,
    pub tmp: std::path::PathBuf,
    pub interrupted: Arc<AtomicBool>,
    pub progress: super::progress::Progress,
    pub job_no: usize,
    pub workers_cpu: f64,
    pub peak_worker_rss: u64,
    pub was_interrupted: bool,
    pub ready: &'a [Config],
    /// Kernel settings switched between workers, when a configuration has any.
    pub knobs: Option<super::knobs::Session>,
}

/// The workers of one round of a benchmark's group, before configurations:
/// its supported items in visit order (`order.rs`), cut into ties when the
/// benchmark takes turns and the user compares a parameter's values. A tie
/// whose buffers together exceed what the machine can give
/// (`MemInfo::buffer_limit`) is split again.
pub(super) fn units(req: &Request, group: &[Item]) -> Vec<Vec<usize>> {
    let Some(info) = group.first().map(|i| &i.info) else { return Vec::new() };
    let axes = Axes {
        declared: info.params.iter().map(|p| p.name).collect(),
        given: req.overrides.keys().filter_map(|k| param_for(k, info)).collect(),
        alternatives: info.params.iter().filter(|p| p.kind.names_alternatives()).map(|p| p.name).collect(),
    };
    let params: Vec<&Params> = group.iter().map(|i| &i.params).collect();
    let order = visit_order(&params, &axes);
    let tie_on = if req.interleave == Interleave::Samples && info.lockstep { compared(&params, &axes) } else { None };
    let cut = match tie_on {
        Some(p) => ties(&params, &order, p),
        None => order.iter().map(|&i| vec![i]).collect(),
    };
    let limit = crate::sys::memory::meminfo().map(|m| m.buffer_limit());
    let mut out = Vec::new();
    for tie in cut {
        let tie: Vec<usize> = tie.into_iter().filter(|&i| group[i].unsupported.is_none()).collect();
        let total = tie.iter().filter_map(|&i| group[i].bench.memory(&group[i].params)).fold(0u64, u64::saturating_add);
        if tie.len() > 1 && limit.is_some_and(|l| total > l) {
            out.extend(tie.into_iter().map(|i| vec![i]));
        } else if !tie.is_empty() {
            out.push(tie);
        }
    }
    out
}

impl Executor<'_> {
    /// All points of one benchmark's sweep: planned rounds, then rounds that
    /// retake disturbed samples and (with `auto`) refine imprecise medians.
    /// Returns the group's results in storing order; `first_seq` is the
    /// sequence number the first of them will get.
    pub(super) fn run_group(
        &mut self,
        group: &[Item],
        configs: &[PlannedConfig],
        auto: bool,
        first_seq: usize,
        ledger: &mut Ledger,
    ) -> Result<Vec<ResultRecord>> {
        let info = &group[0].info;
        let want = wanted(self.req, info);
        let plan_rounds = split_rounds(want);
        let cap = 3 * want;
        let mut points: Vec<Point> = Vec::new();
        // The point of each (item, configuration).
        let mut point_at: Vec<Vec<usize>> = vec![Vec::new(); group.len()];
        for (ii, item) in group.iter().enumerate() {
            if item.unsupported.is_none() {
                for ci in 0..self.ready.len() {
                    point_at[ii].push(points.len());
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
                    order.push(Slot::Unavailable {
                        item: ii,
                        config: name.clone(),
                        reason: format!("configuration unavailable: {reason}"),
                    });
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

        // The running order: each round's workers, a tie of items (or one)
        // per configuration, configurations innermost; rounds alternate
        // direction, and so does the order a tie's points take turns in.
        let mut workers: Vec<Vec<usize>> = Vec::new();
        for tie in units(self.req, group) {
            workers.extend((0..self.ready.len()).map(|ci| tie.iter().map(|&ii| point_at[ii][ci]).collect()));
        }

        let mut iterations: Vec<Option<u64>> = vec![None; group.len()];
        let mut round: u32 = 0;
        let planned_start = Instant::now();
        for &per in &plan_rounds {
            round += 1;
            let jobs: Vec<Vec<(usize, usize)>> = round_order(workers.len(), round as usize - 1)
                .into_iter()
                .map(|k| {
                    round_order(workers[k].len(), round as usize - 1)
                        .into_iter()
                        .map(|m| (workers[k][m], per))
                        .collect()
                })
                .collect();
            self.run_round(
                group,
                &mut points,
                &jobs,
                round,
                plan_rounds.len() as u32,
                &mut iterations,
                &seq_of_point,
                ledger,
            )?;
            if self.was_interrupted {
                break;
            }
        }
        // Extra rounds: as long again as the planned ones at most.
        let budget = planned_start.elapsed().max(Duration::from_secs(1));
        let extra_start = Instant::now();
        while !self.was_interrupted && extra_start.elapsed() < budget {
            let mut jobs = Vec::new();
            // A point refined for `auto` takes its configurations along: a
            // comparison is judged on rounds both sides took (stats::rounds).
            let refine =
                |p: &Point| p.failed.is_none() && p.taken() < cap && auto && !ci_met(&p.set, self.req.ci_target_pct);
            let refined: Vec<usize> = points.iter().filter(|p| refine(p)).map(|p| p.item).collect();
            for w in &workers {
                let need: Vec<usize> = w
                    .iter()
                    .map(|&pi| {
                        let p = &points[pi];
                        if p.failed.is_some() || p.taken() >= cap {
                            0
                        } else if p.clean() < want {
                            (want - p.clean()).min(plan_rounds[0]).min(cap - p.taken())
                        } else if auto && refined.contains(&p.item) {
                            plan_rounds[0].min(cap - p.taken())
                        } else {
                            0
                        }
                    })
                    .collect();
                let most = need.iter().copied().max().unwrap_or(0);
                if most == 0 {
                    continue;
                }
                let mut job = Vec::new();
                for (&pi, &n) in w.iter().zip(&need) {
                    let p = &mut points[pi];
                    if p.failed.is_some() {
                        continue;
                    }
                    // Samples asked for to replace disturbed ones count as retakes.
                    if p.clean() < want {
                        p.retaken_extra += n;
                    }
                    // A tie keeps taking turns: a point that needs nothing
                    // more takes as many samples as the other, within its cap.
                    let n = n.max(most.min(cap.saturating_sub(p.taken())));
                    if n > 0 {
                        job.push((pi, n));
                    }
                }
                jobs.push(job);
            }
            if jobs.is_empty() {
                break;
            }
            round += 1;
            if round % 2 == 0 {
                jobs.reverse();
                jobs.iter_mut().for_each(|j| j.reverse());
            }
            self.progress.add_length(jobs.len() as u64);
            self.run_round(group, &mut points, &jobs, round, 0, &mut iterations, &seq_of_point, ledger)?;
        }

        let mut out = Vec::new();
        for slot in order {
            match slot {
                // Interrupted before its first sample: nothing to store.
                Slot::Measured(pi)
                    if self.was_interrupted && points[pi].set.samples.is_empty() && points[pi].failed.is_none() => {}
                Slot::Measured(pi) => {
                    let p = &mut points[pi];
                    let cfg = &self.ready[p.cfg];
                    let set = std::mem::take(&mut p.set);
                    let mut r = finish(
                        &group[p.item],
                        &cfg.name,
                        cfg.cpus.to_string(),
                        p.failed.clone(),
                        set,
                        want,
                        p.retaken_extra,
                        auto,
                        self.req.ci_target_pct,
                    );
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
                Slot::Unavailable { item, config, reason } => {
                    out.push(record_only(&group[item], &config, String::new(), reason))
                }
                Slot::Unsupported { item, config, reason } => {
                    out.push(record_only(&group[item], &config.name, config.cpus.to_string(), reason))
                }
            }
        }
        Ok(out)
    }

    /// One round: a worker per job, in the order given; a job is the points
    /// it measures (one, or a tie taking turns in this order) with the
    /// samples each takes.
    #[allow(clippy::too_many_arguments)]
    fn run_round(
        &mut self,
        group: &[Item],
        points: &mut [Point],
        jobs: &[Vec<(usize, usize)>],
        round: u32,
        planned_rounds: u32,
        iterations: &mut [Option<u64>],
        seq_of_point: &[usize],
        ledger: &mut Ledger,
    ) -> Result<()> {
        for job in jobs {
            let job: Vec<(usize, usize)> =
                job.iter().copied().filter(|&(pi, n)| points[pi].failed.is_none() && n > 0).collect();
            let Some(&(first, _)) = job.first() else { continue };
            if self.interrupted.load(Ordering::SeqCst) {
                self.was_interrupted = true;
                return Ok(());
            }
            let item = &group[points[first].item];
            let cfg = &self.ready[points[first].cfg];
            // Machine-wide settings are switched here, settled before the worker starts.
            if let Some(k) = self.knobs.as_mut() {
                if let Err(why) = k.switch(cfg) {
                    if let Err(e) = k.restore() {
                        eprintln!("kdelta: restoring kernel settings: {e}");
                    }
                    for &(pi, _) in &job {
                        points[pi].failed = Some(format!("applying kernel settings: {why}"));
                    }
                    self.progress.inc();
                    continue;
                }
            }
            // The limit is per point: a tie's worker measures each in turn.
            let timeout = self.req.timeout.unwrap_or(item.info.timeout) * job.len() as u32;
            self.job_no += 1;
            let job_no = self.job_no;
            let wdir = self.tmp.join(format!("w{job_no}"));
            std::fs::create_dir_all(&wdir)?;
            let spec = Job {
                benchmark: item.info.name.to_string(),
                points: job
                    .iter()
                    .map(|&(pi, n)| JobPoint {
                        params: group[points[pi].item].params.clone(),
                        samples: n,
                        iterations: iterations[points[pi].item],
                    })
                    .collect(),
                config: cfg.clone(),
                settings: SamplerSettings {
                    samples: 0,
                    target: self.req.sample_time,
                    warmup: self.req.warmup,
                    quick: self.req.quick,
                    iterations: None,
                    tmpdir: wdir.clone(),
                    llc_bytes: self.topo.llc_bytes(),
                    retake: true,
                    owner: Some(crate::measure::owned::Owner::me()),
                },
                result_path: self.tmp.join(format!("r{job_no}.json")),
            };
            let which = if planned_rounds > 0 {
                format!("round {round}/{planned_rounds}")
            } else {
                format!("extra round {round}")
            };
            let turns = if job.len() > 1 { format!(" (+{} in turn)", job.len() - 1) } else { String::new() };
            self.progress.set_message(format!(
                "{} {}{turns} [{}] {which}",
                item.info.name,
                item.params.display(),
                cfg.name
            ));
            let outcome = run_job(&spec, &self.tmp.join(format!("j{job_no}.json")), timeout, &self.interrupted);
            // The directories the worker made elsewhere go with it, however it ended.
            crate::measure::owned::remove_listed(
                &wdir.join(crate::measure::owned::LIST),
                crate::measure::owned::Owner::me(),
            );
            let _ = std::fs::remove_dir_all(&wdir);
            let outcome = outcome?;
            self.progress.inc();
            for &(pi, _) in &job {
                ledger.schedule.push((seq_of_point[pi], round));
            }
            match outcome {
                Outcome::Done { sets, cpu_secs, max_rss } => {
                    self.workers_cpu += cpu_secs;
                    self.peak_worker_rss = self.peak_worker_rss.max(max_rss);
                    for (&(pi, _), got) in job.iter().zip(sets) {
                        match got {
                            Ok(mut set) => {
                                // Calibrated once per point, in its first worker; every later
                                // worker of every configuration times the same work.
                                let it = &mut iterations[points[pi].item];
                                if it.is_none() {
                                    *it = set.iterations;
                                }
                                for m in set.meta.iter_mut() {
                                    m.round = round;
                                    m.job = job_no as u32;
                                }
                                points[pi].set.absorb(set);
                            }
                            Err(reason) => points[pi].failed = Some(reason),
                        }
                    }
                }
                Outcome::Failed { reason, cpu_secs } => {
                    self.workers_cpu += cpu_secs;
                    if let Some(k) = self.knobs.as_mut() {
                        if let Err(e) = k.restore() {
                            eprintln!("kdelta: restoring kernel settings: {e}");
                        }
                    }
                    for &(pi, _) in &job {
                        points[pi].failed = Some(reason.clone());
                    }
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
