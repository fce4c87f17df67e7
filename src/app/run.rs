//! `kdelta run`: plan, measure, store, print.

use super::*;
use crate::harness::run;

pub(super) fn cmd_run(db: &Option<PathBuf>, a: RunArgs) -> Result<u8> {
    check_label(&a.label)?;
    let sample_time =
        bench::params::parse_duration(&a.sample_time).map_err(|e| bad_input(format!("--sample-time: {e}")))?;
    if sample_time.as_secs_f64() < 1e-4 || sample_time.as_secs_f64() > 60.0 {
        return Err(bad_input(format!("--sample-time {} is out of range: allowed 100us .. 60s", a.sample_time)));
    }
    let warmup = bench::params::parse_duration(&a.warmup).map_err(|e| bad_input(format!("--warmup: {e}")))?;
    if warmup.as_secs_f64() > 60.0 {
        return Err(bad_input(format!("--warmup {} is out of range: allowed 0 .. 60s", a.warmup)));
    }
    let timeout = match &a.timeout {
        Some(t) => Some(bench::params::parse_duration(t).map_err(|e| bad_input(format!("--timeout: {e}")))?),
        None => None,
    };
    if timeout.is_some_and(|t| t < std::time::Duration::from_millis(1)) {
        return Err(bad_input(format!(
            "--timeout {} is out of range: allowed 1ms and above",
            a.timeout.as_deref().unwrap_or("")
        )));
    }
    if !(a.threshold >= 0.0 && a.threshold < 1000.0) {
        return Err(bad_input(format!("--threshold {} is out of range: allowed 0 .. 1000 (percent)", a.threshold)));
    }
    if !(a.ci_target > 0.0 && a.ci_target <= 100.0) {
        return Err(bad_input(format!(
            "--ci-target {} is out of range: allowed above 0 up to 100 (percent)",
            a.ci_target
        )));
    }
    let req = Request {
        selectors: a.selectors.clone(),
        configs: a.config.iter().flat_map(|c| crate::config::split_list(c)).collect(),
        overrides: parse_overrides(&a.param)?,
        runs: match a.runs {
            None => plan::Runs::Default,
            Some(crate::cli::RunsArg::Auto) => plan::Runs::Auto,
            Some(crate::cli::RunsArg::Fixed(n)) => plan::Runs::Fixed(n as usize),
        },
        ci_target_pct: a.ci_target,
        quick: a.quick,
        label: a.label.clone(),
        skip_unavailable: a.skip_unavailable,
        sample_time,
        warmup,
        timeout,
        command: command_line(),
        sysfs_root: Some(sysfs_root()),
        interleave: match a.interleave {
            crate::cli::InterleaveArg::Samples => plan::Interleave::Samples,
            crate::cli::InterleaveArg::Workers => plan::Interleave::Workers,
        },
    };
    let host = host_snapshot()?;
    let topo = host.topology.clone();
    let plan = plan::plan(&req, &topo, bench::registry())?;
    for item in &plan.items {
        if let Some(line) = item.bench.preamble(&item.params) {
            eprintln!("{}: {line}", item.info.name);
        }
    }
    // The store is opened only once the request is known to be good, and a
    // bad file is refused before anything runs.
    let mut store = open_store(db)?;
    let interrupted = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(sig, interrupted.clone()).context("installing signal handlers")?;
    }
    let output = run::execute(&req, plan, &topo, serde_json::to_value(&host)?, &mut store, interrupted)?;
    let failed = output.results.iter().any(|r| r.status == crate::model::record::Status::Failed);
    let opt = CompareOptions { threshold_pct: a.threshold, ..Default::default() };
    let interrupted = output.interrupted;
    let mut rep = run_report(output.run, output.results, &opt);
    rep.verbose = a.verbose;
    out(&report::render(&rep, a.format, color())?);
    if interrupted {
        eprintln!("kdelta: interrupted; run {} is marked incomplete", rep.runs[0].id);
        return Ok(exit::INTERRUPTED);
    }
    Ok(if failed { exit::FAILED } else { exit::OK })
}
