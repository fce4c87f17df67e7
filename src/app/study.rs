//! `kdelta study`: list the studies, or run one into one stored run and
//! print its tables (the published figures beside today's).

use super::*;
use crate::cli::{StudyArg, StudyArgs};
use crate::study::run::{self as srun, Ask};
use crate::study::{estimate, Meta, STUDIES};

pub(super) fn cmd_study(db: &Option<PathBuf>, a: StudyArgs) -> Result<u8> {
    // Refused before the study runs, not after.
    if matches!(a.format, Format::Asciidoc | Format::Orgmode) {
        return Err(crate::report::history::unsupported(a.format));
    }
    let command = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>().join(" ");
    let ask = ask(&a, command)?;
    let host = host_snapshot()?;
    let topo = host.topology.clone();
    let host_json = serde_json::to_value(&host)?;
    match a.name {
        StudyArg::List => {
            out(&list(&topo, &host_json, &ask));
            Ok(exit::OK)
        }
        StudyArg::One(name) => run_one(db, crate::study::def(name), &ask, &topo, host_json, a.format),
    }
}

/// What `kdelta study` is asked, from its arguments and command line.
fn ask(a: &StudyArgs, command: String) -> Result<Ask> {
    Ok(Ask {
        quick: a.quick,
        variant: a.variant,
        label: a.label.clone(),
        resume: a.resume,
        command,
        sysfs_root: super::sysfs_root(),
        tiny: a.tiny_plan_for_tests,
        meta: crate::cli::run_meta(&a.meta)?,
    })
}

/// What study `a` needs an agent to allow (`agent --allow`), as its plan on
/// this machine finds it: each class once, with its first example.
pub(super) fn reach_needed(a: &StudyArgs) -> Vec<(crate::model::reach::Reach, String)> {
    let StudyArg::One(name) = a.name else { return Vec::new() };
    let (Ok(host), Ok(ask)) = (host_snapshot(), ask(a, String::new())) else { return Vec::new() };
    let Ok(host_json) = serde_json::to_value(&host) else { return Vec::new() };
    let (_, reqs) = srun::request(crate::study::def(name), &ask, &host.topology, &host_json);
    let mut found: Vec<(crate::model::reach::Reach, String)> = Vec::new();
    for mut req in reqs {
        req.sysfs_root = Some(super::sysfs_root());
        for (r, example) in crate::harness::plan::reach_needed(&req, &host.topology, crate::bench::registry) {
            if !found.iter().any(|(f, _)| *f == r) {
                found.push((r, example));
            }
        }
    }
    found
}

/// Every study: what it measures, what it needs, what this machine gives
/// (and the substitute), and how long `--quick` and the full plan take here.
fn list(topo: &Topology, host: &serde_json::Value, ask: &Ask) -> String {
    let mut s = String::new();
    for d in &STUDIES {
        s.push_str(&format!("{}\n  measures: {}\n  needs:    {}\n", d.id, d.what, d.needs));
        let (meta, _) = srun::request(d, ask, topo, host);
        let mut said: Vec<&str> = Vec::new();
        for r in &meta.roles {
            let got = match (&r.config, &r.substitute, &r.unavailable) {
                (Some(_), Some(_), _) => format!("{} (substitute)", r.describe()),
                (Some(_), None, _) => r.describe(),
                (None, _, why) => format!("unavailable: {}", why.as_deref().unwrap_or("")),
            };
            s.push_str(&format!("  {:<11} {} -> {got}\n", r.role, r.wanted));
        }
        for r in &meta.roles {
            if let Some(sub) = r.substitute.as_deref().filter(|s| !said.contains(s)) {
                s.push_str(&format!("  substitute: {sub}\n"));
                said.push(sub);
            }
        }
        for quick in [true, false] {
            let ask = Ask { quick, ..ask.clone() };
            let (_, reqs) = srun::request(d, &ask, topo, host);
            let line = match planned(&reqs, topo) {
                Ok(stages) => format!(
                    "{} points, {} (estimated from the plan)",
                    points(&stages),
                    estimate::describe(estimate::study(&stages))
                ),
                Err(e) => format!("cannot be planned here: {}", one_line(&e)),
            };
            s.push_str(&format!("  {:<11} {line}\n", if quick { "--quick" } else { "full" }));
        }
        s.push('\n');
    }
    s
}

/// Every part of a study planned (all before anything runs).
fn planned(reqs: &[crate::harness::plan::Request], topo: &Topology) -> Result<Vec<srun::Stage>> {
    reqs.iter().map(|req| Ok(srun::Stage { req: req.clone(), plan: srun::plan_study(req, topo)? })).collect()
}

/// Points (benchmark point x configuration) the parts will run.
fn points(stages: &[srun::Stage]) -> usize {
    stages
        .iter()
        .map(|s| {
            s.plan.items.iter().filter(|i| i.unsupported.is_none()).count()
                * crate::harness::run::ready_configs(&s.plan).len()
        })
        .sum()
}

fn run_one(
    db: &Option<PathBuf>,
    d: &crate::study::Def,
    ask: &Ask,
    topo: &Topology,
    host: serde_json::Value,
    format: Format,
) -> Result<u8> {
    let (meta, mut reqs) = srun::request(d, ask, topo, &host);
    for req in &mut reqs {
        req.sysfs_root = Some(super::sysfs_root());
        req.job = agent_job();
        req.allowed = agent_allowed();
    }
    let mut stages = planned(&reqs, topo)?;
    for item in stages.iter().flat_map(|s| &s.plan.items) {
        if let Some(line) = item.bench.preamble(&item.params) {
            eprintln!("{}: {line}", item.info.name);
        }
    }
    let mut store = open_store(db)?;
    let resume = if ask.resume { Some(srun::find_resumable(&mut store, d, ask, &host)?) } else { None };
    if let Some(run) = &resume {
        say_resuming(run, &mut stages, &store)?;
    }
    say_plan(d, ask, &meta, &stages);
    let interrupted = Arc::new(AtomicBool::new(false));
    crate::harness::watch::watch_signals(&interrupted)?;
    let t0 = std::time::Instant::now();
    let resumed = resume.as_ref().map(|r| r.id);
    let (output, _) = srun::execute(stages, &meta, topo, host, &mut store, interrupted, resume)?;
    let id = output.run.id;
    if let Some(id) = resumed {
        eprintln!("kdelta: resumed run {id}: {} points ran now", output.results.len());
    }
    let run = store.find_run(&id.to_string())?;
    let meta = Meta::of_run(&run).unwrap_or(meta);
    let mut results = store.results(id)?;
    bench::canonical_results(&mut results);
    let tables = crate::study::tables::build(d, &meta, &results)?;
    out(&report::extra_render::render(&tables, format)?);
    eprintln!(
        "kdelta: study {} stored as run {id}{} in {:.0} s",
        d.id,
        run.label.as_ref().map(|l| format!(" ({l})")).unwrap_or_default(),
        t0.elapsed().as_secs_f64()
    );
    if output.interrupted {
        eprintln!(
            "kdelta: interrupted; run {id} is marked incomplete: `{}` runs only the missing points",
            resume_command(d, ask)
        );
        return Ok(exit::INTERRUPTED);
    }
    let failed = output.results.iter().any(|r| r.status == crate::model::record::Status::Failed);
    Ok(if failed { exit::FAILED } else { exit::OK })
}

/// Drop the points a resumed run has stored from `stages`, and say how many are left.
fn say_resuming(run: &crate::model::record::RunRecord, stages: &mut [srun::Stage], store: &Store) -> Result<()> {
    let stored = store.results(run.id)?;
    let (mut left, mut done) = (0, 0);
    for st in stages {
        let (l, s) = srun::drop_done(&mut st.plan, &stored);
        left += l;
        done += s;
    }
    eprintln!("kdelta: resuming run {}: {done} points are stored, {left} missing ones run now", run.id);
    Ok(())
}

/// What is about to run: the points, the estimated time, and each substitute role once.
fn say_plan(d: &crate::study::Def, ask: &Ask, meta: &Meta, stages: &[srun::Stage]) {
    eprintln!(
        "kdelta: study {}{}: {} points, {} (estimated)",
        d.id,
        if ask.quick { " --quick" } else { "" },
        points(stages),
        estimate::describe(estimate::study(stages))
    );
    let mut said: Vec<&str> = Vec::new();
    for r in &meta.roles {
        if let Some(s) = r.substitute.as_deref().filter(|s| !said.contains(s)) {
            eprintln!("kdelta: {s}");
            said.push(s);
        }
    }
}

/// The command that resumes an interrupted study run.
fn resume_command(d: &crate::study::Def, ask: &Ask) -> String {
    format!(
        "kdelta study {}{}{}{} --resume",
        d.id,
        if ask.quick { " --quick" } else { "" },
        if ask.tiny { " --tiny-plan-for-tests" } else { "" },
        ask.label.as_ref().map(|l| format!(" --label {l}")).unwrap_or_default()
    )
}
