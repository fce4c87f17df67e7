//! Planning and executing a run: select benchmarks, expand parameter sweeps,
//! resolve configurations, then for every benchmark and parameter point run
//! rounds of workers, one per configuration per round (A B A B ...), so that
//! drift on a shared machine hits every configuration alike. Every result is
//! stored as soon as it is complete.

use super::sampler::{SampleSet, SamplerSettings};
use super::worker::{run_job, Job, Outcome};
use crate::bench::{self, BenchInfo, Benchmark, Env, Params};
use crate::config::{self, Config, Unavailable};
use crate::error::bad_input;
use crate::record::{ResultRecord, RunRecord, RunStatus, Status};
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
    pub runs: Option<usize>,
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

/// Build the plan; every mistake in the request is reported here, before
/// anything runs or is stored.
pub fn plan(req: &Request, topo: &Topology) -> Result<Plan> {
    if req.selectors.is_empty() {
        return Err(bad_input("no benchmark given: name a family (lat), a benchmark (lat.syscall) or a glob; see `kdelta list`"));
    }
    let benches = select(&req.selectors, bench::registry())?;
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
        let points = bench::params::expand(&info.params, &own, req.quick, info.name).map_err(|e| bad_input(e.to_string()))?;
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
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok().flatten().unwrap_or(100) as f64;
    Some((v[0] + v[1] + v[2] + v[5] + v[6]) / hz)
}

/// Execute a plan. Results are written to `store` as they complete.
pub fn execute(req: &Request, plan: Plan, topo: &Topology, host: serde_json::Value, store: &mut Store, interrupted: Arc<AtomicBool>) -> Result<RunOutput> {
    let ready: Vec<Config> = plan.configs.iter().filter_map(|c| if let PlannedConfig::Ready(c) = c { Some(c.clone()) } else { None }).collect();
    let mut run = RunRecord {
        id: 0,
        label: req.label.clone(),
        started: crate::record::now_rfc3339(),
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
    let mut workers_cpu = 0.0;
    let mut peak_worker_rss = 0u64;

    let total_jobs: usize = plan
        .items
        .iter()
        .map(|it| {
            if it.unsupported.is_some() {
                0
            } else {
                split_rounds(req.runs.unwrap_or(if req.quick { it.info.quick_samples } else { it.info.samples })).len() * ready.len()
            }
        })
        .sum();
    let progress = super::progress::Progress::new(total_jobs as u64);
    let mut results = Vec::new();
    let mut seq = 0usize;
    let mut job_no = 0usize;
    let mut was_interrupted = false;

    'items: for item in &plan.items {
        let mk = |cfg_name: &str, cpus: String, status: Status, reason: Option<String>, set: Option<SampleSet>| {
            let set = set.unwrap_or_default();
            let rate = item.info.better == bench::Better::Higher;
            let summary = stats::summarize(&set.samples, rate);
            let mut warns: Vec<Warning> = if status == Status::Ok { warnings::for_samples(&set.samples, &set.sample_secs) } else { Vec::new() };
            warns.dedup();
            ResultRecord {
                benchmark: item.info.name.to_string(),
                family: item.info.family.to_string(),
                params: item.params.clone(),
                config: cfg_name.to_string(),
                cpus,
                unit: item.info.unit.to_string(),
                better: item.info.better,
                status,
                reason,
                samples: set.samples,
                summary,
                iterations: set.iterations,
                extras: set.extras,
                notes: set.notes,
                warnings: warns,
                simulated: false,
            }
        };
        // Unsupported benchmarks and unavailable configurations are recorded, not run.
        let mut pending: Vec<ResultRecord> = Vec::new();
        for pc in &plan.configs {
            if let PlannedConfig::Unavailable { name, reason } = pc {
                pending.push(mk(name, String::new(), Status::Unavailable, Some(format!("configuration unavailable: {reason}")), None));
            }
        }
        if let Some(why) = &item.unsupported {
            for c in &ready {
                pending.push(mk(&c.name, c.cpus.to_string(), Status::Unavailable, Some(why.clone()), None));
            }
        } else if !ready.is_empty() {
            let total = req.runs.unwrap_or(if req.quick { item.info.quick_samples } else { item.info.samples });
            let plan_rounds = split_rounds(total);
            let nrounds = plan_rounds.len();
            let timeout = req.timeout.unwrap_or(item.info.timeout);
            let mut sets: Vec<SampleSet> = vec![SampleSet::default(); ready.len()];
            let mut failed: Vec<Option<String>> = vec![None; ready.len()];
            let mut iterations: Option<u64> = None;
            for (round, &want) in plan_rounds.iter().enumerate() {
                for (ci, cfg) in ready.iter().enumerate() {
                    if failed[ci].is_some() {
                        continue;
                    }
                    if interrupted.load(Ordering::SeqCst) {
                        was_interrupted = true;
                        break 'items;
                    }
                    job_no += 1;
                    let wdir = tmp.path().join(format!("w{job_no}"));
                    std::fs::create_dir_all(&wdir)?;
                    let job = Job {
                        benchmark: item.info.name.to_string(),
                        params: item.params.clone(),
                        config: cfg.clone(),
                        settings: SamplerSettings {
                            samples: want,
                            target: req.sample_time,
                            warmup: req.warmup,
                            quick: req.quick,
                            iterations,
                            tmpdir: wdir.clone(),
                            llc_bytes: topo.llc_bytes(),
                        },
                        result_path: tmp.path().join(format!("r{job_no}.json")),
                    };
                    progress.set_message(format!("{} {} [{}] round {}/{}", item.info.name, item.params.display(), cfg.name, round + 1, nrounds));
                    let outcome = run_job(&job, &tmp.path().join(format!("j{job_no}.json")), timeout, &interrupted)?;
                    let _ = std::fs::remove_dir_all(&wdir);
                    progress.inc();
                    match outcome {
                        Outcome::Done { set, cpu_secs, max_rss } => {
                            workers_cpu += cpu_secs;
                            peak_worker_rss = peak_worker_rss.max(max_rss);
                            if iterations.is_none() {
                                iterations = set.iterations;
                            }
                            let acc = &mut sets[ci];
                            acc.samples.extend(set.samples);
                            acc.sample_secs.extend(set.sample_secs);
                            acc.iterations = set.iterations.or(acc.iterations);
                            for (k, v) in set.extras {
                                acc.extras.insert(k, v);
                            }
                            for n in set.notes {
                                if !acc.notes.contains(&n) {
                                    acc.notes.push(n);
                                }
                            }
                        }
                        Outcome::Failed { reason, cpu_secs } => {
                            workers_cpu += cpu_secs;
                            failed[ci] = Some(reason);
                        }
                        Outcome::Interrupted => {
                            was_interrupted = true;
                            break 'items;
                        }
                    }
                }
            }
            for (ci, cfg) in ready.iter().enumerate() {
                let set = std::mem::take(&mut sets[ci]);
                let r = match failed[ci].take() {
                    Some(reason) => mk(&cfg.name, cfg.cpus.to_string(), Status::Failed, Some(reason), Some(set)),
                    None => mk(&cfg.name, cfg.cpus.to_string(), Status::Ok, None, Some(set)),
                };
                pending.push(r);
            }
        }
        for r in pending {
            store.add_result(run.id, seq, &r)?;
            seq += 1;
            results.push(r);
        }
    }
    progress.finish();

    let elapsed = t0.elapsed().as_secs_f64();
    let load_after = crate::sys::loadavg().map(|l| l[0]).unwrap_or(f64::NAN);
    let others = match (busy_before, machine_busy_secs()) {
        (Some(a), Some(b)) if elapsed > 0.5 => Some(((b - a - workers_cpu) / elapsed).max(0.0)),
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
        "workers_cpu_s": workers_cpu,
        "peak_worker_rss_bytes": peak_worker_rss,
        "peak_parent_rss_bytes": crate::sys::peak_rss_self(),
        "warnings": run_warnings,
    });
    run.status = if was_interrupted { RunStatus::Incomplete } else { RunStatus::Complete };
    store.finish_run(run.id, run.status, &environment)?;
    run.environment = environment;
    run.finished = Some(crate::record::now_rfc3339());
    // The temporary directory (and anything a killed worker left) goes now.
    tmp.close().context("removing the temporary directory")?;
    Ok(RunOutput { run, results, interrupted: was_interrupted })
}
