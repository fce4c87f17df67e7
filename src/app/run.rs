//! `kdelta run`: plan, measure, store, print.

use super::*;
use crate::harness::run;

pub(super) fn cmd_run(db: &Option<PathBuf>, a: RunArgs) -> Result<u8> {
    let req = request(&a)?;
    let output = measure(db, &req, host_snapshot()?)?;
    let failed = output.results.iter().any(|r| r.status == crate::model::record::Status::Failed);
    let opt = CompareOptions { threshold_pct: a.threshold, ..Default::default() };
    let interrupted = output.interrupted;
    let mut results = output.results;
    shown_in_unit(&mut results, &a);
    let mut rep = run_report(output.run, results, &opt);
    if let Some(order) = a.sort {
        bench::cmd::summary::reorder(&mut rep.summaries, &rep.results, order);
    }
    rep.verbose = a.verbose;
    if a.counters {
        rep.add_counters(&opt);
    }
    out(&report::render(&rep, a.format, a.style.color().unwrap_or_else(color))?);
    if interrupted {
        eprintln!("kdelta: interrupted; run {} is marked incomplete", rep.runs[0].id);
        return Ok(exit::INTERRUPTED);
    }
    Ok(if failed { exit::FAILED } else { exit::OK })
}

/// `--time-unit`: `cmd`'s times shown in that unit, as hyperfine shows
/// them, in the text and markdown a person reads; JSON and CSV keep the
/// stored milliseconds (hyperfine's keep seconds whatever `-u` says).
pub(super) fn shown_in_unit(results: &mut [crate::model::ResultRecord], a: &RunArgs) {
    if let (Some(unit), true) = (a.time_unit, a.format.for_people()) {
        bench::cmd::summary::in_unit(results, unit);
    }
}

/// The warm-up when `--warmup` is not given: up to 100 ms, ending early
/// once the loop settles (`Request::warmup_settles`).
const DEFAULT_WARMUP: Warmup = Warmup::Time(std::time::Duration::from_millis(100));

/// The harness request `kdelta run` (and `check`) makes of its options.
pub(super) fn request(a: &RunArgs) -> Result<Request> {
    let interleave = match a.interleave {
        Some(i) => (i.into(), None),
        None => default_interleave(),
    };
    Ok(Request {
        selectors: a.selectors.clone(),
        configs: a.config.iter().flat_map(|c| crate::config::split_list(c)).collect(),
        overrides: overrides(&a.param)?,
        runs: a.runs.unwrap_or_default(),
        ci_target_pct: a.ci_target,
        threshold_pct: a.threshold,
        budget: a.budget,
        quick: a.quick,
        label: a.label.clone(),
        skip_unavailable: a.skip_unavailable,
        sample_time: a.sample_time,
        warmup: match a.warmup.unwrap_or(DEFAULT_WARMUP) {
            Warmup::Time(d) => d,
            Warmup::Runs(n) => (a.sample_time * n.min(10_000) as u32).min(std::time::Duration::from_secs(60)),
        },
        warmup_settles: a.warmup.is_none(),
        warmup_runs: match a.warmup.unwrap_or(DEFAULT_WARMUP) {
            Warmup::Runs(n) => Some(n),
            Warmup::Time(_) => None,
        },
        timeout: a.timeout,
        quiet_wait: a.quiet_wait,
        counters: a.counters,
        command: command_line(),
        sysfs_root: Some(sysfs_root()),
        interleave: interleave.0,
        interleave_why: interleave.1,
        meta: crate::cli::run_meta(&a.meta)?,
        isolate: a.isolate,
        profile: if a.profile { Some(profile_settings()?) } else { None },
        job: agent_job(),
        no_progress: !a.style.progress(),
        allowed: agent_allowed(),
    })
}

/// The interleave of a run that does not say: the one `kdelta doctor`
/// found gives tighter pairs on this machine (its record, when made here),
/// with its figures; otherwise taking turns sample by sample.
fn default_interleave() -> (plan::Interleave, Option<String>) {
    use crate::measure::interfere as mi;
    let record = mi::path().and_then(|p| mi::load_for(&p, &mi::MachineId::read(std::path::Path::new("/"))));
    match record.and_then(|r| r.pairing) {
        Some(p) => {
            let mode = match p.best {
                mi::PairingMode::Alternate => plan::Interleave::Samples,
                mi::PairingMode::Duet => plan::Interleave::Duet,
            };
            (mode, Some(format!("chosen by kdelta doctor: {}", p.describe())))
        }
        None => (plan::Interleave::Samples, None),
    }
}

/// `--profile`: refused before the run when perf(1) is missing or this
/// process may not sample kernel stacks, with the reason (exit 2).
fn profile_settings() -> Result<crate::measure::profile::ProfileSettings> {
    use crate::measure::profile;
    crate::sys::perf_access::check().map_err(|why| bad_input(format!("--profile: {why}")))?;
    let path = std::env::var("PATH").unwrap_or_default();
    let perf = crate::sys::find_in_path("perf", &path)
        .ok_or_else(|| bad_input("--profile: perf(1) is not installed (install linux-perf or linux-tools)"))?;
    let event = crate::sys::perf_access::sampling_event(std::path::Path::new("/"));
    Ok(profile::ProfileSettings::new(perf, event))
}

/// Plan, then measure and store the run on this host; a bad request is
/// refused before the store is opened.
pub(super) fn measure(db: &Option<PathBuf>, req: &Request, host: crate::topology::Host) -> Result<run::RunOutput> {
    let plan = plan::plan(req, &host.topology, bench::registry())?;
    measure_planned(db, req, plan, host)
}

/// [`measure`] of a plan already made (and judged) from `req`.
pub(super) fn measure_planned(
    db: &Option<PathBuf>,
    req: &Request,
    plan: plan::Plan,
    host: crate::topology::Host,
) -> Result<run::RunOutput> {
    let topo = host.topology.clone();
    for item in &plan.items {
        if let Some(line) = item.bench.preamble(&item.params) {
            eprintln!("{}: {line}", item.info.name);
        }
    }
    // The store is opened only once the request is known to be good, and a
    // bad file is refused before anything runs.
    let mut store = open_store(db)?;
    let interrupted = Arc::new(AtomicBool::new(false));
    crate::harness::watch::watch_signals(&interrupted)?;
    run::execute(req, plan, &topo, serde_json::to_value(&host)?, &mut store, interrupted)
}
