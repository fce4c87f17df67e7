//! Running a study: its plan is an ordinary harness request (benchmarks,
//! scoped parameters, the configurations its roles resolved to) executed into
//! one stored run; `--resume` continues that run with only the points it
//! does not have.

use super::{Def, Meta, Variant, META_KEY};
use crate::harness::plan::{self, Plan, Request};
use crate::harness::run::{execute_into, ready_configs, RunOutput};
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
pub struct Ask {
    pub quick: bool,
    pub variant: Variant,
    pub label: Option<String>,
    pub resume: bool,
    pub command: String,
    /// Where kernel settings (`+preempt=`) are judged: `/`, or a fake tree.
    pub sysfs_root: std::path::PathBuf,
}

/// The study's meta and the harness request its plan comes from.
pub fn request(d: &Def, ask: &Ask, topo: &Topology, host: &serde_json::Value) -> (Meta, Request) {
    let roles = (d.roles)(topo, ask.variant, host, &ask.sysfs_root);
    let mut configs: Vec<String> = Vec::new();
    for r in &roles {
        if let Some(c) = &r.config {
            if !configs.contains(c) {
                configs.push(c.clone());
            }
        }
    }
    let parts = (d.request)(ask.quick);
    let meta = Meta { name: d.id.to_string(), quick: ask.quick, variant: ask.variant, roles };
    let req = Request {
        selectors: parts.selectors,
        configs,
        overrides: parts.overrides,
        runs: plan::Runs::Default,
        ci_target_pct: 1.0,
        quick: ask.quick,
        label: ask.label.clone(),
        skip_unavailable: false,
        sample_time: Duration::from_millis(10),
        warmup: Duration::from_millis(100),
        timeout: None,
        command: ask.command.clone(),
        // The caller (app) sets the sysfs root kernel settings are judged under.
        sysfs_root: None,
    };
    (meta, req)
}

/// Plan a study (every mistake is bad input before anything runs). A study
/// whose roles resolved to no configuration at all plans nothing.
pub fn plan_study(req: &Request, topo: &Topology) -> Result<Plan> {
    if req.configs.is_empty() {
        return Ok(Plan { items: Vec::new(), configs: Vec::new() });
    }
    plan::plan(req, topo, crate::bench::registry())
}

/// A stored result that needs no rerun: measured with every planned
/// sample (an interrupted group stores fewer), or not measurable here.
pub fn is_done(r: &ResultRecord) -> bool {
    match r.status {
        Status::Ok => !matches!(&r.quality, Some(q) if r.samples.len() < q.wanted),
        Status::Unavailable => true,
        Status::Failed => false,
    }
}

/// Drop the plan's points that `stored` already has for every configuration;
/// returns how many points (item x configuration) remain and were dropped.
pub fn drop_done(plan: &mut Plan, stored: &[ResultRecord]) -> (usize, usize) {
    let ready: Vec<String> = ready_configs(plan).into_iter().map(|c| c.name).collect();
    let has = |name: &str, p: &Params, cfg: &str| stored.iter().any(|r| r.benchmark == name && &r.params == p && r.config == cfg && is_done(r));
    let before = plan.items.len();
    plan.items.retain(|it| !ready.iter().all(|c| has(it.info.name, &it.params, c)));
    let dropped = before - plan.items.len();
    (plan.items.len() * ready.len(), dropped * ready.len())
}

/// The run a `--resume` continues: the newest run of this study (with this
/// label, when given) that is not complete.
pub fn find_resumable(store: &Store, d: &Def, ask: &Ask) -> Result<RunRecord> {
    let runs = store.runs(10_000)?;
    let found = runs.into_iter().map(|(r, _)| r).find(|r| {
        Meta::of_run(r).is_some_and(|m| m.name == d.id && m.quick == ask.quick && m.variant == ask.variant)
            && (ask.label.is_none() || r.label == ask.label)
            && r.status != RunStatus::Complete
    });
    found.ok_or_else(|| {
        let which = if ask.quick { format!("{} --quick", d.id) } else { d.id.to_string() };
        let label = ask.label.as_ref().map(|l| format!(" labelled {l:?}")).unwrap_or_default();
        crate::error::bad_input(format!("--resume: no incomplete run of study {which}{label} in {}: start one without --resume", store.path().display()))
    })
}

/// Execute the study's plan into its run: a new one, or with `resume` the
/// one given (only its missing points). Returns the harness's output and
/// how many points were already stored.
#[allow(clippy::too_many_arguments)]
pub fn execute(req: &Request, mut plan: Plan, meta: &Meta, topo: &Topology, host: serde_json::Value, store: &mut Store, interrupted: Arc<AtomicBool>, resume: Option<RunRecord>) -> Result<(RunOutput, usize)> {
    match resume {
        Some(mut run) => {
            let stored = store.results(run.id)?;
            let (_, skipped) = drop_done(&mut plan, &stored);
            // Continue the run as running; the study's meta stays as it was.
            run.status = RunStatus::Running;
            store.finish_run(run.id, RunStatus::Running, &run.environment)?;
            let first = stored.len();
            Ok((execute_into(req, plan, topo, store, interrupted, run, first)?, skipped))
        }
        None => {
            let mut env = RunEnvironment::default();
            env.other.insert(META_KEY.into(), serde_json::to_value(meta)?);
            let mut run = RunRecord::begin(req.label.clone(), req.command.clone(), ready_configs(&plan), host, env);
            run.id = store.begin_run(&run)?;
            Ok((execute_into(req, plan, topo, store, interrupted, run, 0)?, 0))
        }
    }
}
