//! Running a study: its plan is an ordinary harness request (benchmarks,
//! scoped parameters, the configurations its roles resolved to) executed into
//! one stored run; `--resume` continues that run with only the points it
//! does not have.

use super::{Def, Meta, Parts, Variant, META_KEY};
use crate::harness::plan::{self, Plan, Request};
use crate::harness::run::{execute_into, planned_jobs, ready_configs, Continuing, RunOutput};
use crate::model::record::{ResultRecord, RunRecord, RunStatus, Status};
use crate::model::{Params, RunEnvironment};
use crate::store::Store;
use crate::topology::Topology;
use anyhow::Result;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// What the user asked of a study.
#[derive(Debug, Clone)]
pub(crate) struct Ask {
    pub(crate) quick: bool,
    pub(crate) variant: Variant,
    pub(crate) label: Option<String>,
    pub(crate) resume: bool,
    pub(crate) command: String,
    /// Where kernel settings (`+preempt=`) are judged: `/`, or a fake tree.
    pub(crate) sysfs_root: std::path::PathBuf,
    /// For tests only (`--tiny-plan-for-tests`): the first three benchmarks
    /// of the study's first part, three samples each.
    pub(crate) tiny: bool,
    /// What the user attached to the run (`--meta`).
    pub(crate) meta: crate::model::meta::RunMeta,
}

/// A study's parts as run: the tiny test plan, or its own.
pub(crate) fn parts(d: &Def, quick: bool, tiny: bool) -> Vec<Parts> {
    let mut parts = (d.request)(quick);
    if tiny {
        parts.truncate(1);
        for p in &mut parts {
            p.selectors.truncate(3);
            p.runs = Some(plan::Runs::Fixed(3));
            // Parameters scoped to benchmarks left out would name nothing.
            let kept = p.selectors.clone();
            p.overrides.retain(|k, _| match k.split_once(':') {
                Some((sel, _)) => kept.iter().any(|b| glob::Pattern::new(sel).is_ok_and(|g| g.matches(b))),
                None => true,
            });
        }
    }
    parts
}

/// The study's meta and the harness requests its plan comes from: one per
/// part of the study, each with the configurations of the roles it runs in.
pub(crate) fn request(d: &Def, ask: &Ask, topo: &Topology, host: &serde_json::Value) -> (Meta, Vec<Request>) {
    let roles = (d.roles)(topo, ask.variant, host, &ask.sysfs_root);
    let meta = Meta { name: d.id.to_string(), quick: ask.quick, variant: ask.variant, roles, tiny: ask.tiny };
    let reqs = parts(d, ask.quick, ask.tiny)
        .into_iter()
        .map(|part| {
            let mut configs: Vec<String> = Vec::new();
            for r in meta.roles.iter().filter(|r| part.roles.is_empty() || part.roles.contains(&r.role.as_str())) {
                if let Some(c) = &r.config {
                    if !configs.contains(c) {
                        configs.push(c.clone());
                    }
                }
            }
            Request {
                selectors: part.selectors,
                configs,
                overrides: part.overrides,
                runs: part.runs.unwrap_or(plan::Runs::Default),
                ci_target_pct: crate::stats::defaults::CI_TARGET_PCT,
                threshold_pct: crate::stats::defaults::THRESHOLD_PCT,
                budget: None,
                quick: ask.quick,
                label: ask.label.clone(),
                skip_unavailable: false,
                sample_time: Duration::from_millis(10),
                warmup: Duration::from_millis(100),
                warmup_runs: None,
                warmup_settles: false,
                timeout: None,
                quiet_wait: plan::DEFAULT_QUIET_WAIT,
                counters: false,
                command: ask.command.clone(),
                // The caller (app) sets the sysfs root kernel settings are judged under.
                sysfs_root: None,
                interleave: plan::Interleave::default(),
                meta: ask.meta.clone(),
                isolate: false,
                profile: None,
                interleave_why: None,
                job: None,
                no_progress: false,
                // The caller (app) sets what an agent's job may reach.
                allowed: None,
            }
        })
        .collect();
    (meta, reqs)
}

/// Plan a study (every mistake is bad input before anything runs). A study
/// whose roles resolved to no configuration at all plans nothing.
pub(crate) fn plan_study(req: &Request, topo: &Topology) -> Result<Plan> {
    if req.configs.is_empty() {
        return Ok(Plan { items: Vec::new(), configs: Vec::new() });
    }
    plan::plan(req, topo, crate::bench::registry())
}

/// A stored result that needs no rerun: measured with every planned
/// sample (an interrupted group stores fewer), or not measurable here.
pub(crate) fn is_done(r: &ResultRecord) -> bool {
    match r.status {
        Status::Ok => !matches!(&r.quality, Some(q) if r.samples.len() < q.wanted),
        Status::Unavailable => true,
        Status::Failed => false,
    }
}

/// Drop the plan's points that `stored` already has for every configuration;
/// returns how many points (item x configuration) remain and were dropped.
/// A point stored in only some configurations runs again in all of them, so
/// its sides are measured interleaved in one session; its older partial
/// result stays stored (nothing is deleted) and the tables read the newest.
pub(crate) fn drop_done(plan: &mut Plan, stored: &[ResultRecord]) -> (usize, usize) {
    let ready: Vec<String> = ready_configs(plan).into_iter().map(|c| c.name).collect();
    let has = |name: &str, p: &Params, cfg: &str| {
        stored.iter().any(|r| r.benchmark == name && &r.params == p && r.config == cfg && is_done(r))
    };
    let before = plan.items.len();
    plan.items.retain(|it| !ready.iter().all(|c| has(it.info.name, &it.params, c)));
    let dropped = before - plan.items.len();
    (plan.items.len() * ready.len(), dropped * ready.len())
}

/// The run a `--resume` continues: the newest run of this study (with this
/// label, when given) that is not complete, and only if it may be continued
/// here ([`resume_refusal`]: no live writer, this machine, these CPUs; else
/// bad input naming what differs). It is then claimed for this process
/// ([`Store::claim_run`]), so a second `--resume` started meanwhile finds a
/// live writer and measures nothing twice. `host` is this machine's snapshot.
pub(crate) fn find_resumable(store: &mut Store, d: &Def, ask: &Ask, host: &serde_json::Value) -> Result<RunRecord> {
    let runs = store.runs(10_000)?;
    let found = runs.into_iter().map(|(r, _)| r).find(|r| {
        Meta::of_run(r)
            .is_some_and(|m| m.name == d.id && m.quick == ask.quick && m.variant == ask.variant && m.tiny == ask.tiny)
            && (ask.label.is_none() || r.label == ask.label)
            && r.status != RunStatus::Complete
    });
    let which = if ask.quick { format!("{} --quick", d.id) } else { d.id.to_string() };
    let Some(run) = found else {
        let label = ask.label.as_ref().map(|l| format!(" labelled {l:?}")).unwrap_or_default();
        return Err(crate::error::bad_input(format!(
            "--resume: no incomplete run of study {which}{label} in {}: start one without --resume",
            store.path().display()
        )));
    };
    let refuse = |why: String| crate::error::bad_input(format!("--resume: run {} of study {which} {why}", run.id));
    if let Some(why) = resume_refusal(&run, host) {
        return Err(refuse(why));
    }
    if !ask.meta.is_empty() && run.meta != ask.meta {
        return Err(refuse(format!(
            "has the metadata {:?}, not {:?}: give the same --meta or none",
            run.meta.compact(),
            ask.meta.compact()
        )));
    }
    if !store.claim_run(run.id)? {
        return Err(refuse(live_writer(&run)));
    }
    Ok(run)
}

/// Why a stored, unfinished study run may not be continued by this process
/// on the machine `host` describes, or `None` when it may: its writer is
/// still alive (the store's test: process id and start time for SQLite, the
/// run's lock for PostgreSQL), or it was measured on another machine (host
/// name, the machine fingerprint or the kernel differ) or with another set
/// of usable CPUs (affinity, cgroup cpuset). Fields an older run lacks are
/// not differences.
pub(crate) fn resume_refusal(run: &RunRecord, host: &serde_json::Value) -> Option<String> {
    use crate::report::fingerprint::{differences, Fingerprint};
    if run.status == RunStatus::Running {
        return Some(live_writer(run));
    }
    let text = |h: &serde_json::Value, k: &str| {
        h.get(k).and_then(|v| v.as_str()).filter(|s| !s.is_empty()).map(str::to_string)
    };
    let mut differ = Vec::new();
    if let (Some(then), Some(now)) = (text(&run.host, "hostname"), text(host, "hostname")) {
        if then != now {
            differ.push(format!("host name: {then} vs {now}"));
        }
    }
    let (machine, kernel) = differences(&Fingerprint::of(&run.host), &Fingerprint::of(host));
    differ.extend(machine);
    differ.extend(kernel);
    if let (Some(then), Some(now)) = (usable_cpus(&run.host), usable_cpus(host)) {
        if then != now {
            differ.push(format!("usable CPUs: {then} vs {now}"));
        }
    }
    if differ.is_empty() {
        return None;
    }
    Some(format!(
        "was measured on another machine or CPU set than this one ({}, stored vs now); its points and today's would be mixed in one run: start a new run without --resume",
        differ.join("; ")
    ))
}

/// The CPUs a stored host snapshot says kdelta could use: the restriction
/// (affinity, cgroup cpuset) when there was one, else every online CPU.
fn usable_cpus(host: &serde_json::Value) -> Option<String> {
    let t = host.get("topology")?;
    let cpus = t.get("restriction").and_then(|r| r.get("cpus")).or_else(|| t.get("online"))?;
    cpus.as_str().map(str::to_string)
}

fn live_writer(run: &RunRecord) -> String {
    let pid = run.pid.map(|p| {
        format!(
            " (process {p}{})",
            run.host.get("hostname").and_then(|h| h.as_str()).map(|h| format!(" on {h}")).unwrap_or_default()
        )
    });
    format!(
        "is still being written by a live kdelta{}: wait for it to end, or stop it, then resume",
        pid.unwrap_or_default()
    )
}

/// One part of a study, planned.
pub(crate) struct Stage {
    pub(crate) req: Request,
    pub(crate) plan: Plan,
}

/// Execute the study's parts, one after the other, into its run: a new one,
/// or with `resume` the one given (only its missing points). Returns the
/// harness's output (every part's results; the run as closed) and how many
/// points were already stored.
pub(crate) fn execute(
    stages: Vec<Stage>,
    meta: &Meta,
    topo: &Topology,
    host: serde_json::Value,
    store: &mut Store,
    interrupted: Arc<AtomicBool>,
    resume: Option<RunRecord>,
) -> Result<(RunOutput, usize)> {
    let mut skipped = 0;
    // Every part's points set up before the study's run is stored; put
    // back after its last part, however it ends.
    let _after = crate::harness::once::before_run(stages.iter().flat_map(|s| &s.plan.items))?;
    let (mut run, mut envs) = match resume {
        Some(run) => {
            let env = run.environment.clone();
            (run, vec![env])
        }
        None => (begin(&stages, meta, host, store)?, Vec::new()),
    };
    let mut results = Vec::new();
    let mut was_interrupted = false;
    // One progress bar for the whole study: every part's missing points.
    let mut stages = stages;
    let stored = store.results(run.id)?;
    for st in &mut stages {
        skipped += drop_done(&mut st.plan, &stored).1;
    }
    let progress = crate::harness::progress::Progress::new(
        stages.iter().map(|st| planned_jobs(&st.req, &st.plan)).sum::<usize>() as u64,
        !stages.iter().any(|st| st.req.no_progress),
    );
    for Stage { req, plan } in stages {
        if plan.items.is_empty() {
            continue;
        }
        let stored = store.results(run.id)?;
        // Continue the run as running; the study's meta stays as it was.
        run.status = RunStatus::Running;
        store.finish_run(run.id, RunStatus::Running, &run.environment)?;
        let into = Continuing { run, first_seq: stored.len(), progress: Some(&progress) };
        let out = execute_into(&req, plan, topo, store, interrupted.clone(), into)?;
        run = out.run;
        envs.push(run.environment.clone());
        results.extend(out.results);
        if out.interrupted {
            was_interrupted = true;
            break;
        }
    }
    progress.finish();
    // One environment for the whole study: every part's schedule and counts.
    run.environment = merge(envs, std::mem::take(&mut run.environment.other));
    run.status = if was_interrupted { RunStatus::Incomplete } else { RunStatus::Complete };
    store.finish_run(run.id, run.status, &run.environment)?;
    Ok((RunOutput { run, results, interrupted: was_interrupted }, skipped))
}

/// A new stored run for a study: its meta in the environment, every
/// part's ready configurations once, the first part's label and command.
fn begin(stages: &[Stage], meta: &Meta, host: serde_json::Value, store: &mut Store) -> Result<RunRecord> {
    let mut env = RunEnvironment::default();
    env.other.insert(META_KEY.into(), serde_json::to_value(meta)?);
    let mut configs = Vec::new();
    for st in stages {
        for c in ready_configs(&st.plan) {
            if !configs.iter().any(|x: &crate::config::Config| x.name == c.name) {
                configs.push(c);
            }
        }
    }
    let mut run = RunRecord::begin(
        stages.first().and_then(|s| s.req.label.clone()),
        stages.first().map(|s| s.req.command.clone()).unwrap_or_default(),
        configs,
        host,
        env,
    );
    run.meta = stages.first().map(|s| s.req.meta.clone()).unwrap_or_default();
    run.job = stages.first().and_then(|s| s.req.job);
    run.id = store.begin_run(&run)?;
    Ok(run)
}

/// The environments of a study's parts (and of the sessions a resumed run
/// had) as one: times and counts added, schedules joined, the first load
/// before and the last load after.
fn merge(envs: Vec<RunEnvironment>, other: serde_json::Map<String, serde_json::Value>) -> RunEnvironment {
    let Some(mut out) = envs.first().cloned() else {
        return RunEnvironment { other, ..RunEnvironment::default() };
    };
    let add = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    };
    let addn = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    };
    for e in envs.into_iter().skip(1) {
        out.load_after = e.load_after.or(out.load_after);
        out.others_cpus = match (out.others_cpus, e.others_cpus) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        out.elapsed_s = add(out.elapsed_s, e.elapsed_s);
        out.workers_cpu_s = add(out.workers_cpu_s, e.workers_cpu_s);
        out.peak_worker_rss_bytes = out.peak_worker_rss_bytes.max(e.peak_worker_rss_bytes);
        out.peak_parent_rss_bytes = out.peak_parent_rss_bytes.max(e.peak_parent_rss_bytes);
        out.warnings.extend(e.warnings);
        out.retaken = addn(out.retaken, e.retaken);
        out.noisy = addn(out.noisy, e.noisy);
        out.auto_met = addn(out.auto_met, e.auto_met);
        if let Some(c) = e.auto_capped {
            out.auto_capped.get_or_insert_with(Vec::new).extend(c);
        }
        out.schedule.extend(e.schedule);
        out.runs = out.runs.take().or(e.runs);
        out.ci_target_pct = out.ci_target_pct.or(e.ci_target_pct);
    }
    out.other = other;
    out
}
