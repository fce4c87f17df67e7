//! Planning and executing a run: select benchmarks, expand parameter sweeps,
//! resolve configurations, then run each benchmark's points (parameter point
//! x configuration) in interleaved rounds: round 1 takes every point once,
//! round 2 every point again in the opposite order, and so on, so that drift
//! on a shared machine hits every point alike and no point always follows
//! the same neighbour. Disturbed samples are retaken in further rounds, and
//! `--runs auto` adds rounds until each median is known to a target
//! precision. A benchmark's results are stored as soon as its rounds end.

use crate::measure::sampler::{SampleSet, SamplerSettings};
use super::worker::{run_job, Job, Outcome};
use crate::measure::benchmark::{BenchInfo, Benchmark, Env};
use crate::model::{Better, Params};
use crate::config::{self, Config, Unavailable};
use crate::error::bad_input;
use crate::model::record::{Quality, ResultRecord, RunRecord, RunStatus, Status};
use crate::stats::{self, warnings, Warning};
use crate::store::Store;
use crate::topology::Topology;
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the user asked for.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub selectors: Vec<String>,
    pub configs: Vec<String>,
    pub overrides: BTreeMap<String, String>,
    pub runs: Runs,
    /// `--runs auto`: the target half-width of each median's 95 % interval, percent.
    pub ci_target_pct: f64,
    pub quick: bool,
    pub label: Option<String>,
    pub skip_unavailable: bool,
    /// Target length of one sample.
    pub sample_time: Duration,
    /// Minimum warm-up in each worker before its first sample.
    pub warmup: Duration,
    /// Overrides every benchmark's worker time limit.
    pub timeout: Option<Duration>,
    pub command: String,
}

/// How many samples each result takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Runs {
    /// Each benchmark's own count; `auto` when the run compares (two or
    /// more configurations, or a swept parameter) and is not `--quick`.
    #[default]
    Default,
    /// Exactly this many clean samples (disturbed ones are still retaken).
    Fixed(usize),
    /// At least each benchmark's own count, then more rounds until the
    /// median's interval meets the target or the cap (3x) is reached.
    Auto,
}

/// One benchmark at one parameter point.
pub struct Item {
    pub bench: Arc<dyn Benchmark>,
    pub info: BenchInfo,
    pub params: Params,
    pub unsupported: Option<String>,
}

/// A configuration this run uses, or one recorded as unavailable.
#[derive(Debug, Clone)]
pub enum PlannedConfig {
    Ready(Config),
    Unavailable { name: String, reason: String },
}

impl PlannedConfig {
    pub fn name(&self) -> &str {
        match self {
            PlannedConfig::Ready(c) => &c.name,
            PlannedConfig::Unavailable { name, .. } => name,
        }
    }
}

pub struct Plan {
    pub items: Vec<Item>,
    pub configs: Vec<PlannedConfig>,
}

/// Select benchmarks: a family (`lat`), a name (`lat.syscall`) or a glob
/// (`lat.sel*`). Unknown selectors are bad input listing what exists.
pub fn select(selectors: &[String], all: Vec<Box<dyn Benchmark>>) -> Result<Vec<Box<dyn Benchmark>>> {
    let infos: Vec<BenchInfo> = all.iter().map(|b| b.info()).collect();
    let mut chosen = vec![false; all.len()];
    for sel in selectors {
        let pat = glob::Pattern::new(sel).map_err(|e| bad_input(format!("bad selector {sel:?}: {e}")))?;
        let mut hit = false;
        for (i, info) in infos.iter().enumerate() {
            if info.name == sel || info.family == sel || pat.matches(info.name) {
                chosen[i] = true;
                hit = true;
            }
        }
        if !hit {
            let mut families: Vec<&str> = infos.iter().map(|i| i.family).collect();
            families.dedup();
            return Err(bad_input(format!("unknown benchmark {sel:?}: families: {}; names: see `kdelta list`", families.join(", "))));
        }
    }
    Ok(all.into_iter().zip(chosen).filter(|(_, c)| *c).map(|(b, _)| b).collect())
}

/// Build the plan from the benchmarks kdelta has (`all`); every mistake in
/// the request is reported here, before anything runs or is stored.
pub fn plan(req: &Request, topo: &Topology, all: Vec<Box<dyn Benchmark>>) -> Result<Plan> {
    if req.selectors.is_empty() {
        return Err(bad_input("no benchmark given: name a family (lat), a benchmark (lat.syscall) or a glob; see `kdelta list`"));
    }
    let benches = select(&req.selectors, all)?;
    let infos: Vec<BenchInfo> = benches.iter().map(|b| b.info()).collect();
    // Every --param must belong to at least one selected benchmark.
    for k in req.overrides.keys() {
        if !infos.iter().any(|i| param_for(k, i).is_some()) {
            let mut names: Vec<&str> = Vec::new();
            for i in &infos {
                for p in &i.params {
                    if !names.contains(&p.name) {
                        names.push(p.name);
                    }
                }
            }
            let allowed = if names.is_empty() { "the selected benchmarks take no parameters".to_string() } else { format!("allowed: {}", names.join(", ")) };
            return Err(bad_input(format!("unknown parameter {k:?}: {allowed} (scope one to some benchmarks with SELECTOR:NAME=V)")));
        }
    }
    let env = Env { topology: topo };
    let mut items = Vec::new();
    for (b, info) in benches.into_iter().zip(infos) {
        // Scoped overrides (`bw.mem.*:size=1M`) win over plain ones (`size=1M`).
        let mut own: BTreeMap<String, String> = BTreeMap::new();
        for scoped in [false, true] {
            for (k, v) in &req.overrides {
                if k.contains(':') == scoped {
                    if let Some(name) = param_for(k, &info) {
                        own.insert(name.to_string(), v.clone());
                    }
                }
            }
        }
        let points = crate::model::params::expand(&info.params, &own, req.quick, info.name).map_err(|e| bad_input(e.to_string()))?;
        let unsupported = b.supported(&env).err();
        let b: Arc<dyn Benchmark> = Arc::from(b);
        for p in points {
            if unsupported.is_none() {
                b.check(&p)?;
            }
            items.push(Item { bench: b.clone(), info: info.clone(), params: p, unsupported: unsupported.clone() });
        }
    }
    let names: Vec<String> = if req.configs.is_empty() { vec!["all".to_string()] } else { req.configs.clone() };
    let mut configs = Vec::new();
    for n in &names {
        match config::resolve(n, topo) {
            Ok(c) => {
                if configs.iter().any(|x: &PlannedConfig| x.name() == c.name) {
                    return Err(bad_input(format!("configuration {:?} given twice", c.name)));
                }
                configs.push(PlannedConfig::Ready(c));
            }
            Err(e) => match e.downcast_ref::<Unavailable>() {
                Some(u) if req.skip_unavailable => configs.push(PlannedConfig::Unavailable { name: u.name.clone(), reason: u.reason.clone() }),
                Some(_) => return Err(e.context("add --skip-unavailable to record it as unavailable and run the rest")),
                None => return Err(e),
            },
        }
    }
    Ok(Plan { items, configs })
}

/// The parameter name an override key sets on this benchmark: `NAME`, or
/// `SELECTOR:NAME` when the selector (family, name or glob) matches it.
fn param_for<'a>(key: &'a str, info: &BenchInfo) -> Option<&'a str> {
    let (sel, name) = match key.split_once(':') {
        Some((sel, name)) => (Some(sel), name),
        None => (None, key),
    };
    if let Some(sel) = sel {
        let hit = sel == info.name || sel == info.family || glob::Pattern::new(sel).map(|p| p.matches(info.name)).unwrap_or(false);
        if !hit {
            return None;
        }
    }
    info.params.iter().any(|p| p.name == name).then_some(name)
}

/// Samples per result: the fixed count, or the benchmark's own.
fn wanted(req: &Request, info: &BenchInfo) -> usize {
    match req.runs {
        Runs::Fixed(n) => n.max(1),
        _ if req.quick => info.quick_samples.max(1),
        _ => info.samples.max(1),
    }
}

/// Samples per result split into rounds of workers: at most 5 rounds, the
/// samples spread as evenly as possible. Returns the samples of each round.
pub fn split_rounds(total: usize) -> Vec<usize> {
    let total = total.max(1);
    let r = total.min(5);
    (0..r).map(|i| total / r + usize::from(i < total % r)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_cover_every_sample() {
        for total in 0..200 {
            let v = split_rounds(total);
            assert_eq!(v.iter().sum::<usize>(), total.max(1), "{total}");
            assert!(v.len() <= 5 && v.iter().all(|&x| x >= 1));
            assert!(v.iter().max().unwrap() - v.iter().min().unwrap() <= 1);
        }
    }
}

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

/// CPU time used by the whole machine (not idle, not iowait, not steal), in
/// seconds, from /proc/stat.
fn machine_busy_secs() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    let line = s.lines().next()?;
    let v: Vec<f64> = line.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    if v.len() < 7 {
        return None;
    }
    // user nice system idle iowait irq softirq [steal ...]
    Some((v[0] + v[1] + v[2] + v[5] + v[6]) / crate::sys::proc::clk_tck())
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
    let ready: Vec<Config> = plan.configs.iter().filter_map(|c| if let PlannedConfig::Ready(c) = c { Some(c.clone()) } else { None }).collect();
    let mut run = RunRecord {
        id: 0,
        label: req.label.clone(),
        started: crate::model::record::now_rfc3339(),
        finished: None,
        status: RunStatus::Running,
        kdelta_version: env!("CARGO_PKG_VERSION").to_string(),
        command: req.command.clone(),
        pid: Some(std::process::id()),
        configs: ready.clone(),
        host,
        environment: serde_json::Value::Null,
    };
    run.id = store.begin_run(&run)?;
    let tmp = tempfile::Builder::new().prefix("kdelta-").tempdir().context("creating a temporary directory")?;
    let load_before = crate::sys::loadavg().map(|l| l[0]).unwrap_or(f64::NAN);
    let busy_before = machine_busy_secs();
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

    let total_jobs: usize =
        plan.items.iter().filter(|it| it.unsupported.is_none()).map(|it| split_rounds(wanted(req, &it.info)).len() * ready.len()).sum();
    let mut ex = Executor {
        req,
        topo,
        tmp: tmp.path().to_path_buf(),
        interrupted: interrupted.clone(),
        progress: super::progress::Progress::new(total_jobs as u64),
        job_no: 0,
        workers_cpu: 0.0,
        peak_worker_rss: 0,
        was_interrupted: false,
        ready: &ready,
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
        let out = ex.run_group(group, &plan.configs, auto, results.len(), &mut ledger)?;
        for r in out {
            store.add_result(run.id, results.len(), &r)?;
            results.push(r);
        }
    }
    ex.progress.finish();

    let elapsed = t0.elapsed().as_secs_f64();
    let load_after = crate::sys::loadavg().map(|l| l[0]).unwrap_or(f64::NAN);
    let others = match (busy_before, machine_busy_secs()) {
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
    let environment = serde_json::json!({
        "load_before": load_before,
        "load_after": load_after,
        "others_cpus": others,
        "elapsed_s": elapsed,
        "workers_cpu_s": ex.workers_cpu,
        "peak_worker_rss_bytes": ex.peak_worker_rss,
        "peak_parent_rss_bytes": crate::sys::peak_rss_self(),
        "warnings": run_warnings,
        "runs": match (req.runs, auto) {
            (Runs::Fixed(n), _) => serde_json::json!(n),
            (_, true) => serde_json::json!("auto"),
            _ => serde_json::json!("default"),
        },
        "ci_target_pct": auto.then_some(req.ci_target_pct),
        "auto_met": auto.then_some(ledger.auto_met),
        "auto_capped": if auto { serde_json::json!(ledger.auto_capped) } else { serde_json::Value::Null },
        "retaken": ledger.retaken,
        "noisy": ledger.noisy,
        "schedule": ledger.schedule.iter().map(|(seq, round)| [*seq as u64, *round as u64]).collect::<Vec<_>>(),
    });
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

        let mut iterations: Vec<Option<u64>> = vec![None; group.len()];
        let mut round: u32 = 0;
        let planned_start = Instant::now();
        for &per in &plan_rounds {
            round += 1;
            let jobs: Vec<(usize, usize)> = round_order(points.len(), round as usize - 1).into_iter().map(|pi| (pi, per)).collect();
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
            for (pi, p) in points.iter().enumerate() {
                if p.failed.is_some() || p.taken() >= cap {
                    continue;
                }
                let clean = p.clean();
                if clean < want {
                    jobs.push((pi, (want - clean).min(plan_rounds[0]).min(cap - p.taken())));
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
            // Samples asked for to replace disturbed ones count as retakes.
            for (pi, n) in &jobs {
                if points[*pi].clean() < want {
                    points[*pi].retaken_extra += n;
                }
            }
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
                    let r = finish(&group[p.item], &cfg.name, cfg.cpus.to_string(), p.failed.clone(), set, want, p.retaken_extra, auto, self.req.ci_target_pct);
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
                },
                result_path: self.tmp.join(format!("r{job_no}.json")),
            };
            let which = if planned_rounds > 0 { format!("round {round}/{planned_rounds}") } else { format!("extra round {round}") };
            self.progress.set_message(format!("{} {} [{}] {which}", item.info.name, item.params.display(), cfg.name));
            let outcome = run_job(&job, &self.tmp.join(format!("j{job_no}.json")), timeout, &self.interrupted)?;
            let _ = std::fs::remove_dir_all(&wdir);
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

/// Whether a point's median is known to the target precision.
fn ci_met(set: &SampleSet, target_pct: f64) -> bool {
    let clean: Vec<f64> = clean_values(set);
    stats::trust::ci_half_width_pct(&clean).is_some_and(|h| h <= target_pct)
}

fn clean_values(set: &SampleSet) -> Vec<f64> {
    if set.meta.len() != set.samples.len() {
        return set.samples.clone();
    }
    set.samples.iter().zip(&set.meta).filter(|(_, m)| !m.disturbed).map(|(v, _)| *v).collect()
}

/// A result that was not measured: an unavailable configuration or benchmark.
fn record_only(item: &Item, config: &str, cpus: String, reason: String) -> ResultRecord {
    blank(item, config, cpus, Status::Unavailable, Some(reason))
}

/// A result of `item` under `config` with no samples yet.
fn blank(item: &Item, config: &str, cpus: String, status: Status, reason: Option<String>) -> ResultRecord {
    ResultRecord {
        benchmark: item.info.name.to_string(),
        family: item.info.family.to_string(),
        params: item.params.clone(),
        config: config.to_string(),
        cpus,
        unit: item.info.unit.to_string(),
        better: item.info.better,
        status,
        reason,
        samples: Vec::new(),
        samples_meta: Vec::new(),
        quality: None,
        placement: Vec::new(),
        below_resolution: None,
        summary: None,
        iterations: None,
        extras: Default::default(),
        notes: Vec::new(),
        warnings: Vec::new(),
        simulated: false,
    }
}

/// The stored result of one point: summary and warnings of the clean
/// samples, quality counts, the placement split, below-resolution.
#[allow(clippy::too_many_arguments)]
fn finish(
    item: &Item,
    config: &str,
    cpus: String,
    failed: Option<String>,
    set: SampleSet,
    want: usize,
    retaken_extra: usize,
    auto: bool,
    ci_target: f64,
) -> ResultRecord {
    let rate = item.info.better == Better::Higher;
    let status = if failed.is_some() { Status::Failed } else { Status::Ok };
    // With no clean sample at all, the disturbed ones are summarised rather
    // than nothing: the result is noisy, and says so.
    let has_meta = set.meta.len() == set.samples.len() && set.meta.iter().any(|m| !m.disturbed);
    let clean: Vec<f64> = if has_meta { clean_values(&set) } else { set.samples.clone() };
    let clean_secs: Vec<f64> = if has_meta {
        set.sample_secs.iter().zip(&set.meta).filter(|(_, m)| !m.disturbed).map(|(s, _)| *s).collect()
    } else {
        set.sample_secs.clone()
    };
    let clean_meta: Vec<crate::model::sample::SampleMeta> = if has_meta { set.meta.iter().filter(|m| !m.disturbed).cloned().collect() } else { Vec::new() };
    let summary = stats::summarize(&clean, rate);
    let placement = stats::trust::placement_split(&clean, &clean_meta).unwrap_or_default();
    let mut warns: Vec<Warning> = if status == Status::Ok { warnings::for_samples(&clean, &clean_secs) } else { Vec::new() };
    if !placement.is_empty() {
        // The split says it better than two anonymous clusters.
        warns.retain(|w| !matches!(w, Warning::TwoClusters { .. }));
    }
    warns.dedup();
    let disturbed = set.meta.iter().filter(|m| m.disturbed).count();
    let keep_meta = set.meta.len() == set.samples.len();
    let ci_pct = stats::trust::ci_half_width_pct(&clean);
    let quality = (status == Status::Ok || !set.samples.is_empty()).then(|| Quality {
        kind: set.kind,
        wanted: want,
        clean: set.samples.len() - disturbed,
        disturbed,
        retaken: set.retaken + retaken_extra.min(disturbed),
        noisy: set.samples.len() - disturbed < want,
        busy: disturbed > set.samples.len() - disturbed,
        ci_pct: if auto { ci_pct } else { None },
        ci_target_met: auto.then(|| ci_pct.is_some_and(|h| h <= ci_target)),
    });
    let below_resolution = if set.net_of_overhead && status == Status::Ok { stats::trust::below_resolution(&clean) } else { None };
    ResultRecord {
        samples: set.samples,
        samples_meta: if keep_meta { set.meta } else { Vec::new() },
        quality,
        placement,
        below_resolution,
        summary,
        iterations: set.iterations,
        extras: set.extras,
        notes: set.notes,
        warnings: warns,
        ..blank(item, config, cpus, status, failed)
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
